"""`IKController`: an IK solver turned into a reaching policy for the hik_sim environments.

The policy is a plain callable, observation → action. Each call solves IK for the goal pose,
warm-started from the current joints (so tracking stays on one solution branch), and commands the
answer as joint position targets. When a solve fails (outside the solver's tolerance) its answer
is still commanded if it brings the end-effector closer to the goal than it is now (a network's
best guess, the closest approach to an unreachable goal); otherwise the controller holds the last
safe command (initially the joints it starts from) instead of sending a poor answer. An optional joint-velocity limit caps
how far a command may move from the current joints in one control period, and a lead time lets
it aim at where a moving goal will be when the servos catch up. Batched observations (vector
environments: a leading batch axis) give batched actions; the policy keeps one state per env.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics import Chain
from hik_sim.robots import RobotSpec
from hik_sim.solvers import CLOSED_LOOP_CORRECTIONS, DmControlIK, IKResult, LMRefiner, MultistartIK, NeuralIK, SingleTargetIK
from hik_sim.tolerances import rotation_angle

__all__ = ["IKController", "CONTROLLER_KINDS"]

CONTROLLER_KINDS: tuple[str, ...] = ("hybrid", "closed_loop", "harmoatt", "mlp", "cycleik", "regression", "multistart", "lm",
                                     "dm_control")
OBSERVATION_KEYS: tuple[str, ...] = ("joint_pos", "ee_pos", "ee_quat", "goal_pos", "goal_quat")
"""What a controller reads from an observation (``goal_vel`` too, where there is one)."""
NETWORK_KINDS: tuple[str, ...] = ("hybrid", "closed_loop", "harmoatt", "mlp", "cycleik", "regression")
"""The kinds that need a network shipped for the robot."""


class IKController:
    """Observation → joint targets, through an IK solver.

    Args:
        solver: a :class:`~hik_sim.solvers.SingleTargetIK` (the fast path), or any solver with
            ``solve(pos (B, 3), quat (B, 4), q_init (B, n)) → IKResult``.
        joint_velocity_limit: largest joint speed a command may ask for [rad/s], or ``None``.
        dt: the environment's control period [s] (needed with ``joint_velocity_limit``).
        lead_time: aim at ``goal_pos + goal_vel · lead_time`` when the observation has a goal
            velocity [s] (about 2/ω for a servo of natural frequency ω; 0: off).
        rotation_weight: weight of the rotation error when comparing a failed answer with the
            current pose [m/rad].
    """

    def __init__(self, solver: Any, joint_velocity_limit: float | None = None, dt: float | None = None,
                 lead_time: float = 0.0, rotation_weight: float = 0.2) -> None:
        if joint_velocity_limit is not None and (joint_velocity_limit <= 0 or dt is None or dt <= 0):
            raise SolverError("joint_velocity_limit must be positive and comes with dt, the control period [s]")
        if lead_time < 0:
            raise SolverError(f"lead_time must be >= 0, got {lead_time}")
        self.solver, self.joint_velocity_limit, self.dt, self.lead_time = solver, joint_velocity_limit, dt, lead_time
        self.rotation_weight = rotation_weight
        self.last_command: dict[int, np.ndarray] = {}
        self.last_result: dict[int, IKResult] = {}
        self.failures = 0

    @classmethod
    def pretrained(cls, robot: str | RobotSpec, kind: str = "hybrid", **kwargs: Any) -> "IKController":
        """A controller of one of :data:`CONTROLLER_KINDS` for a robot, on its shipped network where the kind needs one.

        Args:
            robot: registered robot name, or any :class:`~hik_sim.robots.RobotSpec` (a URDF robot
                too: ``lm``, ``multistart`` and ``dm_control`` need no network).
            kind: ``hybrid`` (network seed + LM, single-target path), ``closed_loop`` (the
                hybrid's seed network closed on its own error by
                :data:`~hik_sim.solvers.CLOSED_LOOP_CORRECTIONS` goal-shift corrections, no
                least-squares solver), ``harmoatt``, ``mlp``, ``cycleik`` or ``regression`` (that shipped network alone, open loop;
                ``regression`` is shipped for the IRB120 only), ``multistart`` (LM from the current joints, then random seeds,
                10 in all), ``lm`` (LM from the current joints, then up to 49 random restarts,
                single-target path), ``dm_control``. The first three need a network shipped for
                the robot; for a robot without one, build ``IKController(SingleTargetIK(chain,
                network))`` on your own trained network.
            **kwargs: :class:`IKController` arguments; ``lead_time`` defaults to the scenes' servo
                lag, 2/ω for the default 20 Hz servos (≈ 16 ms).

        Raises:
            HikError: unknown kind or robot, or a kind that needs a network no one ships for the robot.
        """
        from hik_sim.policies import hybrid_seed_name, load_pretrained, pretrained_names
        from hik_sim.robots import get_robot
        from hik_sim.scene import SceneOptions

        if kind not in CONTROLLER_KINDS:
            raise SolverError(f"unknown controller kind {kind!r}; kinds are: {', '.join(CONTROLLER_KINDS)}")
        if not isinstance(robot, (str, RobotSpec)):  # None was a raw AttributeError deep in Chain
            raise SolverError(f"robot must be a registered robot's name or a RobotSpec, got {robot!r}")
        spec = get_robot(robot) if isinstance(robot, str) else robot
        chain = Chain(spec)
        if kind in NETWORK_KINDS and not any(n.startswith(f"{spec.name}/") for n in pretrained_names()):
            raise SolverError(f"controller kind {kind!r} needs a network, and none is shipped for robot {spec.name!r}; kinds without "
                           f"a network: {', '.join(k for k in CONTROLLER_KINDS if k not in NETWORK_KINDS)}; or build "
                           "IKController(SingleTargetIK(chain, network)) on a network trained for it")
        if kind == "hybrid":
            solver: Any = SingleTargetIK(chain, load_pretrained(spec.name, hybrid_seed_name(spec.name)))
        elif kind == "closed_loop":
            solver = NeuralIK(load_pretrained(spec.name, hybrid_seed_name(spec.name)), chain, corrections=CLOSED_LOOP_CORRECTIONS)
        elif kind in ("harmoatt", "mlp", "cycleik", "regression"):
            solver = NeuralIK(load_pretrained(spec.name, kind), chain)
        elif kind == "multistart":
            solver = MultistartIK(LMRefiner(chain), starts=10)
        elif kind == "lm":
            solver = SingleTargetIK(chain)
        else:
            from hik_sim.scene import build_scene

            solver = DmControlIK(build_scene(chain.robot))
        kwargs.setdefault("lead_time", SceneOptions().servo_lag)
        return cls(solver, **kwargs)

    def reset(self) -> None:
        """Forget the held commands (call at the start of every episode)."""
        self.last_command.clear()
        self.last_result.clear()

    def _solve(self, pos: np.ndarray, quat: np.ndarray, q_now: np.ndarray) -> IKResult:
        if isinstance(self.solver, SingleTargetIK):
            return self.solver.solve_one(pos, quat, q_init=q_now)
        if hasattr(self.solver, "solve"):
            return self.solver.solve(torch.as_tensor(pos[None]), torch.as_tensor(quat[None]), torch.as_tensor(q_now[None]))
        raise SolverError(f"{type(self.solver).__name__} is not an IK solver: it has neither solve_one nor solve")

    def act(self, observation: dict[str, np.ndarray], index: int = 0) -> np.ndarray:
        """Joint targets (n,) for one environment's observation."""
        q_now = np.asarray(observation["joint_pos"], dtype=np.float64)
        chain = getattr(self.solver, "chain", None) or getattr(getattr(self.solver, "refiner", None), "chain", None)
        if chain is not None and q_now.shape != (chain.dof,):  # a network ignores q_init, and would command the wrong size
            raise SolverError(f"joint_pos must hold the {chain.dof} chain joints of {chain.robot.name!r}, got shape {q_now.shape}")
        goal = np.asarray(observation["goal_pos"], dtype=np.float64)
        if self.lead_time and "goal_vel" in observation:
            goal = goal + self.lead_time * np.asarray(observation["goal_vel"], dtype=np.float64)
        goal_quat = np.asarray(observation["goal_quat"], dtype=np.float64)
        result = self._solve(goal, goal_quat, q_now)
        self.last_result[index] = result
        answer_error = float(result.pos_err[0]) + self.rotation_weight * float(result.rot_err[0])
        current_error = (float(np.linalg.norm(np.asarray(observation["ee_pos"]) - goal))
                         + self.rotation_weight * rotation_angle(observation["ee_quat"], goal_quat))
        if not bool(result.success[0]):
            self.failures += 1
        if bool(result.success[0]) or answer_error < current_error:
            command = result.q[0].numpy().astype(np.float64)
        else:
            command = self.last_command.get(index, q_now)
        if self.joint_velocity_limit is not None:
            step = self.joint_velocity_limit * self.dt
            command = np.clip(command, q_now - step, q_now + step)
        self.last_command[index] = command
        return command.copy()

    def __call__(self, observation: dict[str, np.ndarray]) -> np.ndarray:
        """Joint targets: (n,) for one observation, (N, n) for a batch from a vector environment.

        Raises:
            HikError: ``observation`` is not a hik_sim environment's (a mapping with the keys of
                :data:`OBSERVATION_KEYS`), or holds a bad goal (NaN, zero quaternion, …).
        """
        if not isinstance(observation, Mapping) or not set(OBSERVATION_KEYS) <= set(observation):
            got = sorted(observation) if isinstance(observation, Mapping) else type(observation).__name__
            raise SolverError(f"an observation must be a hik_sim environment's: a dict with {', '.join(OBSERVATION_KEYS)}; got {got}")
        if np.ndim(observation["joint_pos"]) == 1:
            return self.act(observation)
        batch = len(observation["joint_pos"])
        return np.stack([self.act({k: v[i] for k, v in observation.items()}, index=i) for i in range(batch)])
