"""Reach: bring the end-effector to a goal pose and hold it there."""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from hik_sim.envs.base import RobotGoalEnv
from hik_sim.errors import EnvError
from hik_sim.robots import RobotSpec

__all__ = ["ReachEnv"]


class ReachEnv(RobotGoalEnv):
    """Reach a goal pose with a robot's IK chain, in the robot's MuJoCo scene.

    ## Description
    Each episode draws a goal pose for the end-effector. Goals are reachable by construction: the
    forward kinematics of a configuration drawn uniformly inside the joint limits (no rejection
    loop); ``goal_spread`` < 1 draws it nearer home: ``home + goal_spread · (u − home)`` for that
    uniform draw u. For robustness tests, ``unreachable_probability`` makes some goals unreachable: their
    position is pushed to 1.2 × the robot's largest reach from the chain's base. The robot is any
    URDF robot; joints outside the IK chain are held at home by the scene's servos.

    ## Action Space
    ``action_type="joint"`` (default): ``Box(lower, upper, (n,), float64)``, position targets [rad,
    or m for prismatic joints] for the chain's n joints, in chain order, bounded by the joint limits.
    ``action_type="joint_normalized"``: the same targets in ``Box(-1, 1, (n,))`` (-1 a joint's lower
    limit, +1 its upper). ``action_type="ee_delta"``: ``Box(-1, 1, (6,))``, an end-effector increment
    of at most 2 cm per position axis and 0.1 rad per rotation-vector component (base frame), added
    to the pose the last joint targets reach; IK (``ik=``, the robot's shipped ``hybrid`` by default)
    turns it into joint targets (:mod:`hik_sim.envs.actions`). Values outside the space are clipped
    into it; NaN/inf, a wrong shape or anything but real numbers raise :class:`~hik_sim.errors.HikError`.
    Joint targets never leave the joint limits.

    ## Observation Space
    ``Dict`` of float64 arrays, all in the chain's base frame:
    ``joint_pos`` (n,) [rad], ``joint_vel`` (n,) [rad/s], ``ee_pos`` (3,) [m], ``ee_quat`` (4,) wxyz,
    ``goal_pos`` (3,) [m], ``goal_quat`` (4,) wxyz. Every entry is a finite ``Box``: the quaternions
    in [-1, 1], the joints within their limits ± 0.5 rad, velocities within ±50 rad/s, positions
    within ±1.5 × the chain's largest reach per axis; values are clipped into them
    (:mod:`hik_sim.envs.base`).

    ## Rewards
    ``−(position error [m] + rotation_weight · rotation error [rad])`` (``rotation_weight`` 0.1 m/rad
    by default); ``info`` holds each term (``reward_pos``, ``reward_rot``), the errors
    (``pos_err`` [m], ``rot_err`` [rad]), ``success`` (both within tolerance now), ``is_success``
    (success held long enough), ``reachable``, ``steps_in_tolerance``, and the IK's ``ik_time`` [s]
    and ``ik_failed`` (0.0 and False without ``ee_delta``).

    ## Starting State
    The robot's ``home`` keyframe (velocities zero; joints outside the chain stay there), with
    uniform noise of ±``start_noise`` rad on the chain joints (0 by default), clipped to the limits.
    ``info["is_success"]`` is False after a reset.

    ## Episode End
    Terminated when the errors stay within (``position_tolerance``, ``rotation_tolerance``),
    5 mm and 2° by default, for ``hold_steps`` consecutive steps (5 = 0.1 s). Truncated by the time
    limit of the registration (250 steps = 5 s at the default 50 Hz).

    ## Arguments
    ``gymnasium.make("hik_sim/Reach-irb120-v0")`` for a registered robot, or
    ``gymnasium.make("hik_sim/Reach-v0", robot="panda")`` /
    ``gymnasium.make("hik_sim/Reach-v0", urdf="arm.urdf", base="base_link", ee="tool0")``.
    Further keywords, with their defaults: ``frame_skip`` (10 physics steps of 2 ms per action:
    50 Hz), ``position_tolerance`` (0.005 m), ``rotation_tolerance`` (2° in rad),
    ``rotation_weight`` (0.1 m/rad), ``hold_steps`` (5), ``unreachable_probability`` (0),
    ``start_noise`` (0 rad), ``goal_spread`` (1), ``action_type`` (``joint``), ``ik`` (None),
    ``render_mode`` (``rgb_array`` or None; ``human`` raises :class:`~hik_sim.errors.HikError`:
    use ``python -m hik_sim.viewer``), ``width`` (480) and
    ``height`` (360) [px], ``camera`` (``workspace`` or ``overview``), ``max_joint_speed`` (4 rad/s:
    the servos' targets move towards the action at no more than this speed, as a robot's joint
    controller moves its setpoint; None passes an action to the servos at once). An unknown keyword raises
    :class:`~hik_sim.errors.HikError` listing the valid ones. The time limit counts steps, so another
    ``frame_skip`` changes the episode's duration in seconds.

    ## Version History
    - v0: first release. Since 2026-11-30 the servos' targets move at ``max_joint_speed`` (4 rad/s)
      instead of jumping to each action, which threw light joints up to 0.35 rad past their limits;
      ``max_joint_speed=None`` gives the first behaviour. Since 2026-12-03: ``action_type`` and
      ``ik``, finite observation bounds, ``goal_spread``; ``render_mode="human"`` raises.
    """

    def __init__(self, robot: str | RobotSpec | None = None, urdf: str | None = None, base: str | None = None,
                 ee: str | None = None, hold_steps: int = 5, unreachable_probability: float = 0.0,
                 start_noise: float = 0.0, goal_spread: float = 1.0, **kwargs: Any) -> None:
        super().__init__(robot, urdf, base, ee, **kwargs)
        if hold_steps < 1 or not 0 <= unreachable_probability <= 1 or not 0 <= start_noise < math.inf:  # inf failed at reset
            raise EnvError("hold_steps must be >= 1, unreachable_probability in [0, 1] and start_noise finite and >= 0, got "
                           f"{hold_steps}, {unreachable_probability} and {start_noise}")
        if not 0 < goal_spread <= 1:
            raise EnvError(f"goal_spread must be in (0, 1] (1: goals from the whole joint range), got {goal_spread!r}")
        self.goal_spread = float(goal_spread)
        self.hold_steps, self.unreachable_probability, self.start_noise = hold_steps, unreachable_probability, start_noise
        self.reachable, self.steps_in_tolerance = True, 0

    def _draw_goal(self) -> None:
        rng = self.np_random
        self.goal_q = rng.uniform(self.lower, self.upper)
        if self.goal_spread < 1:
            home = np.asarray(self.robot.home, dtype=np.float64)
            self.goal_q = np.clip(home + self.goal_spread * (self.goal_q - home), self.lower, self.upper)
        self.goal_pos, self.goal_quat = self.fk(self.goal_q)
        self.reachable = bool(rng.uniform() >= self.unreachable_probability)
        if not self.reachable:
            direction = self.goal_pos / max(float(np.linalg.norm(self.goal_pos)), 1e-9)
            self.goal_pos = 1.2 * self.max_reach * direction

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[dict[str, np.ndarray], dict[str, Any]]:
        """Start at home (± ``start_noise``) with a new goal."""
        super().reset(seed=seed)
        home = np.asarray(self.robot.home, dtype=np.float64)
        noise = self.np_random.uniform(-self.start_noise, self.start_noise, size=home.shape) if self.start_noise else 0.0
        self._reset_robot(np.clip(home + noise, self.lower, self.upper))
        self._draw_goal()
        self.steps_in_tolerance = 0
        self._show_goal()
        observation = self._observation()
        info = self._info(observation) | {"reachable": self.reachable, "steps_in_tolerance": 0, "ik_time": 0.0, "ik_failed": False}
        info["is_success"] = False
        return observation, info

    def step(self, action: np.ndarray) -> tuple[dict[str, np.ndarray], float, bool, bool, dict[str, Any]]:
        """Apply an action (of ``action_type``) for one control period."""
        ik = self._act(action)
        observation = self._observation()
        info = self._info(observation) | ik
        self.steps_in_tolerance = self.steps_in_tolerance + 1 if info["success"] else 0
        terminated = self.steps_in_tolerance >= self.hold_steps
        info |= {"is_success": terminated, "reachable": self.reachable, "steps_in_tolerance": self.steps_in_tolerance}
        reward = info["reward_pos"] + info["reward_rot"]
        return observation, float(reward), terminated, False, info
