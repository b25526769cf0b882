"""ReachGoal: Reach as a goal-conditioned environment, in the layout of Gymnasium-Robotics' ``GoalEnv``.

For hindsight experience replay (Stable-Baselines3's ``HerReplayBuffer``) and other goal-conditioned
learners: a ``Dict`` observation of ``observation``, ``achieved_goal`` and ``desired_goal``, and a
:meth:`ReachGoalEnv.compute_reward` that recomputes rewards for any batch of goals.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

from hik_sim.envs.actions import rotation_angles
from hik_sim.envs.reach import ReachEnv
from hik_sim.errors import EnvError
from hik_sim.robots import RobotSpec

__all__ = ["ReachGoalEnv", "REWARD_TYPES", "GOAL_SIZE", "hemisphere_quaternion"]

REWARD_TYPES: tuple[str, ...] = ("sparse", "dense")
"""``reward_type`` values: ``sparse`` (0 within tolerance, else -1) or ``dense`` (minus the weighted errors)."""
GOAL_SIZE = 7
"""A goal: position (3,) [m] and unit quaternion (4,) wxyz, signed towards the home orientation, in the chain's base frame."""


def hemisphere_quaternion(quat: np.ndarray, reference: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) wxyz signed so that their dot product with ``reference`` (4,) is >= 0.

    q and -q are one orientation; this picks the one nearer ``reference``, so orientations near it
    have nearby quaternions. (``w >= 0`` is the same rule about the identity, and it jumps from q to
    -q where w crosses 0: at every rotation of 180°, such as a tool pointing down.)
    """
    quat = np.asarray(quat, dtype=np.float64)
    return np.where((quat @ np.asarray(reference, dtype=np.float64))[..., None] < 0, -quat, quat)


class ReachGoalEnv(ReachEnv):
    """Reach a goal pose, goal-conditioned (Gymnasium-Robotics' ``GoalEnv`` layout).

    ## Description
    Reach's task (:class:`~hik_sim.envs.reach.ReachEnv`: goals are forward kinematics of random
    configurations, ``goal_spread`` draws them nearer home) with the observation split into the
    agent's state and two goals, so that a learner can relabel goals in hindsight.

    ## Action Space
    ``Box(-1, 1)`` in every action type but ``joint``: ``joint_normalized`` (default; n joint
    targets, -1 the lower limit, +1 the upper) or ``ee_delta`` (6: at most 2 cm and 0.1 rad a step,
    turned into joint targets by IK, ``ik=``); ``joint`` (targets in rad) works too but is not normalised.

    ## Observation Space
    ``Dict`` of finite float64 ``Box`` spaces, base frame: ``observation`` (2n + 7,): joint positions
    [rad] (limits ± 0.5 rad), joint velocities [rad/s] (±50), end-effector position [m] (±1.5 × the
    chain's largest reach) and quaternion (wxyz); ``achieved_goal`` (7,): the end-effector's
    position and quaternion; ``desired_goal`` (7,): the goal's. A quaternion's sign is the one whose
    dot product with the home pose's quaternion (:attr:`home_quat`) is >= 0
    (:func:`hemisphere_quaternion`), so that one orientation is one goal (q and -q are the same) and
    orientations near home have nearby quaternions: ``w >= 0`` would flip the sign wherever w crosses
    0, and a tool pointing down, as the IRB120's at home, sits on that line (w = 0), so a rotation of
    a few degrees would jump the goal by up to 2. The representation is discontinuous only 180° from
    home. :meth:`compute_reward` does not depend on the sign.

    ## Rewards
    ``compute_reward(achieved_goal, desired_goal, info)`` for one goal (7,) or a batch (B, 7):
    ``sparse`` (default): 0 where the position error is below ``position_tolerance`` and the
    rotation error below ``rotation_tolerance`` (5 mm and 2°: :data:`hik_sim.kinematics.tolerances.SUCCESS`),
    else -1; ``dense``: ``-(position error [m] + rotation_weight · rotation error [rad])``.
    ``info["is_success"]`` is that success now; ``info`` also holds Reach's errors and the IK's
    ``ik_time`` [s] and ``ik_failed``.

    ## Starting State
    As in Reach: the ``home`` keyframe, ± ``start_noise``.

    ## Episode End
    ``compute_terminated`` is False (the goal is not a terminal state, as in Gymnasium-Robotics'
    Fetch tasks) unless ``terminate_on_success=True``, which ends an episode at the first step
    within tolerance; ``compute_truncated`` is False: the registration's time limit truncates
    (50 steps = 1 s at 50 Hz).

    ## Arguments
    ``gymnasium.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta")``, or
    ``gymnasium.make("hik_sim/ReachGoal-v0", robot=...)`` / ``(urdf=..., base=..., ee=...)``.
    ``reward_type`` (``sparse``), ``terminate_on_success`` (False), ``action_type``
    (``joint_normalized``), and Reach's keywords (``hold_steps`` is not used).

    ## Version History
    - v0: first release.
    """

    def __init__(self, robot: str | RobotSpec | None = None, urdf: str | None = None, base: str | None = None,
                 ee: str | None = None, reward_type: str = "sparse", terminate_on_success: bool = False,
                 action_type: str = "joint_normalized", **kwargs: Any) -> None:
        if reward_type not in REWARD_TYPES:
            raise EnvError(f"unknown reward_type {reward_type!r}; reward types are: {', '.join(REWARD_TYPES)}")
        super().__init__(robot, urdf, base, ee, action_type=action_type, **kwargs)
        self.reward_type, self.terminate_on_success = reward_type, bool(terminate_on_success)
        self.home_quat = self.fk(np.asarray(self.robot.home, dtype=np.float64))[1]  # (4,) wxyz: the sign's reference
        b = self._bounds
        state = [b["joint_pos"], b["joint_vel"], b["ee_pos"], b["ee_quat"]]
        goal = spaces.Box(np.concatenate([b["ee_pos"].low, b["ee_quat"].low]), np.concatenate([b["ee_pos"].high, b["ee_quat"].high]),
                          dtype=np.float64)
        self.observation_space = spaces.Dict({
            "observation": spaces.Box(np.concatenate([s.low for s in state]), np.concatenate([s.high for s in state]), dtype=np.float64),
            "achieved_goal": goal, "desired_goal": goal,
        })

    def _goal_observation(self, state: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
        ee_quat, goal_quat = hemisphere_quaternion(state["ee_quat"], self.home_quat), hemisphere_quaternion(state["goal_quat"], self.home_quat)
        return {"observation": np.concatenate([state["joint_pos"], state["joint_vel"], state["ee_pos"], ee_quat]),
                "achieved_goal": np.concatenate([state["ee_pos"], ee_quat]),
                "desired_goal": np.concatenate([state["goal_pos"], goal_quat])}

    def _errors(self, achieved_goal: Any, desired_goal: Any) -> tuple[np.ndarray, np.ndarray]:
        """Position [m] and rotation [rad] errors (...,) of goals (..., 7)."""
        achieved, desired = np.asarray(achieved_goal, dtype=np.float64), np.asarray(desired_goal, dtype=np.float64)
        if achieved.shape[-1:] != (GOAL_SIZE,) or desired.shape[-1:] != (GOAL_SIZE,):
            raise EnvError(f"goals are (..., {GOAL_SIZE}): position (3) and quaternion wxyz (4); got shapes {achieved.shape} "
                           f"and {desired.shape}")
        return np.linalg.norm(achieved[..., :3] - desired[..., :3], axis=-1), rotation_angles(achieved[..., 3:], desired[..., 3:])

    def compute_reward(self, achieved_goal: Any, desired_goal: Any, info: Any) -> np.ndarray:
        """Rewards (...,) of achieved goals (..., 7) against desired goals (..., 7); ``info`` is not used.

        Returns:
            float64 array, 0-d for one goal: ``sparse`` 0 or -1; ``dense`` minus the weighted errors.

        Raises:
            EnvError: goals whose last axis is not 7.
        """
        pos_err, rot_err = self._errors(achieved_goal, desired_goal)
        if self.reward_type == "dense":
            return np.asarray(-(pos_err + self.rotation_weight * rot_err))
        success = (pos_err < self.position_tolerance) & (rot_err < self.rotation_tolerance)
        return np.where(success, 0.0, -1.0)

    def compute_terminated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> Any:
        """False; with ``terminate_on_success``, whether the goals (..., 7) are within tolerance."""
        if not self.terminate_on_success:
            return False
        pos_err, rot_err = self._errors(achieved_goal, desired_goal)
        return (pos_err < self.position_tolerance) & (rot_err < self.rotation_tolerance)

    def compute_truncated(self, achieved_goal: Any, desired_goal: Any, info: Any) -> bool:
        """False: the registration's time limit truncates an episode."""
        return False

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start at home (± ``start_noise``) with a new goal."""
        state, info = super().reset(seed=seed, options=options)
        info["is_success"] = info["success"]
        return self._goal_observation(state), info

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply an action (of ``action_type``) for one control period."""
        state, _, _, _, info = super().step(action)
        observation = self._goal_observation(state)
        info["is_success"] = info["success"]
        achieved, desired = observation["achieved_goal"], observation["desired_goal"]
        reward = float(self.compute_reward(achieved, desired, info))
        terminated = bool(self.compute_terminated(achieved, desired, info))
        return observation, reward, terminated, bool(self.compute_truncated(achieved, desired, info)), info
