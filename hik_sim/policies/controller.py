"""`IKController`: an IK solver turned into a reaching policy for the hik_sim environments.

The policy is a plain callable, observation → action. Each call solves IK for the goal pose,
warm-started from its last target (the last answer it accepted, where the servos are heading; the
current joints at the first step), so that reaching and tracking stay on one solution branch, and
commands the answer as joint position targets (on a joint whose range exceeds a turn, the answer's
copy whole turns nearer the last target: the same pose). When a solve fails (outside the solver's
tolerance) its answer is still accepted if it puts the end-effector closer to the goal than the last
target does (a network's best guess, the closest approach to an unreachable goal); otherwise the
controller keeps its last target (initially the joints it starts from) instead of sending a poor
answer. The comparison is with the last target, where the servos are heading, not with the
end-effector on its way there: against a moving arm's pose any answer looks better, and a failed
answer on another solution branch could then take the arm away from a target as good. An
optional joint-velocity limit caps how far a command may move from the current joints in one
control period (the target stays the answer: the next solve starts from it, not from the clipped
command), and a lead time lets it aim at where a moving goal will be when the servos catch up.
Batched observations (vector environments: a leading batch axis) give batched actions; the policy
keeps one state per env.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import replace
from typing import Any

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.robots import RobotSpec
from hik_sim.solvers.registry import NETWORK_FREE_NAMES, SOLVER_NAMES, NetworkNotShippedError, UnknownSolverError, make_solver
from hik_sim.solvers.base import IKResult, IKSolver, SingleTargetSolver
from hik_sim.solvers.neural import NeuralIK
from hik_sim.kinematics.tolerances import rotation_angle

__all__ = ["IKController", "CONTROLLER_KINDS"]

CONTROLLER_KINDS: tuple[str, ...] = SOLVER_NAMES
"""The fixed controller kinds: the solver registry's names (:data:`~hik_sim.solvers.registry.SOLVER_NAMES`);
any other network shipped for the robot and a checkpoint path are kinds too, as they are policies."""
DEFAULT_KIND = "hybrid"
OBSERVATION_KEYS: tuple[str, ...] = ("joint_pos", "ee_pos", "ee_quat", "goal_pos", "goal_quat")
"""What a controller reads from an observation (``goal_vel`` too, where there is one)."""


class IKController:
    """Observation → joint targets, through an IK solver.

    Args:
        solver: an :class:`~hik_sim.solvers.base.IKSolver`; one that is also a
            :class:`~hik_sim.solvers.base.SingleTargetSolver` (:class:`~hik_sim.solvers.single_target_ik.SingleTargetIK`)
            is called through ``solve_one``, the fast path, the others through ``solve`` on a batch of one.
        joint_velocity_limit: largest joint speed a command may ask for [rad/s], or ``None``.
        dt: the environment's control period [s] (needed with ``joint_velocity_limit``).
        lead_time: aim at ``goal_pos + goal_vel · lead_time`` when the observation has a goal
            velocity [s] (about 2/ω for a servo of natural frequency ω; 0: off).
        rotation_weight: weight of the rotation error when comparing a failed answer with the
            last target [m/rad].

    Attributes:
        last_target: per environment index, the joints (n,) the controller heads for: the last answer
            it accepted; the next solve starts from it.
        last_command: per environment index, the last command (n,) sent: the target, clipped by
            ``joint_velocity_limit`` where one is set.
        last_result: per environment index, the solver's last :class:`~hik_sim.solvers.base.IKResult`.
        last_repeated: per environment index, whether that result answered a repeated query (below).
        failures: solves outside the solver's tolerance since the controller was made.

    A network alone (:class:`~hik_sim.solvers.neural.NeuralIK`) answers the same query with the same
    answer, so a query repeated exactly (the same goal from the same last target: a goal it missed,
    whose answer it did not take) is answered with the last result, not solved again; that result
    then counts no FK and its ``wall_time`` is the time of the lookup.

    Raises:
        SolverError: ``solver`` is not an :class:`~hik_sim.solvers.base.IKSolver`, or bad limits.
    """

    def __init__(self, solver: IKSolver, joint_velocity_limit: float | None = None, dt: float | None = None,
                 lead_time: float = 0.0, rotation_weight: float = 0.2) -> None:
        if joint_velocity_limit is not None and (joint_velocity_limit <= 0 or dt is None or dt <= 0):
            raise SolverError("joint_velocity_limit must be positive and comes with dt, the control period [s]")
        if lead_time < 0:
            raise SolverError(f"lead_time must be >= 0, got {lead_time}")
        if not isinstance(solver, IKSolver):
            raise SolverError(f"{type(solver).__name__} is not an IK solver: it needs a chain and "
                              "solve(target_pos, target_quat, q_init=None) -> IKResult (hik_sim.solvers.base.IKSolver)")
        self._solve_one = solver.solve_one if isinstance(solver, SingleTargetSolver) else None  # checked once, not per step
        self.solver, self.joint_velocity_limit, self.dt, self.lead_time = solver, joint_velocity_limit, dt, lead_time
        self.rotation_weight = rotation_weight
        self._lower, self._upper = (limit.numpy() for limit in solver.chain.limits(torch.float64))
        self._turns = solver.chain.turns
        self.last_command: dict[int, np.ndarray] = {}
        self.last_target: dict[int, np.ndarray] = {}
        self.last_result: dict[int, IKResult] = {}
        self.failures = 0
        self._deterministic = isinstance(solver, NeuralIK)
        self._last_query: dict[int, tuple[bytes, bytes, bytes]] = {}
        self.last_repeated: dict[int, bool] = {}

    @classmethod
    def pretrained(cls, robot: str | RobotSpec, kind: str = DEFAULT_KIND, **kwargs: Any) -> "IKController":
        """A controller of one of :data:`CONTROLLER_KINDS` for a robot, on its shipped network where the kind needs one.

        The solver comes from :func:`hik_sim.solvers.registry.make_solver` (one target a call), so a
        kind is a name the evaluator takes as a policy too.

        Args:
            robot: registered robot name, or any :class:`~hik_sim.robots.RobotSpec` (a URDF robot
                too: ``lm``, ``multistart`` and ``dm_control`` need no network).
            kind: ``hybrid`` (network seed + LM, single-target path), ``closed_loop`` (the
                closed-loop network, ``closed_loop_network_name``, closed on its own error by
                :data:`~hik_sim.solvers.neural.CLOSED_LOOP_CORRECTIONS` goal-shift corrections, no
                least-squares solver), a shipped network's name such as ``harmoatt_4answers`` (that
                network alone, open loop; from a checkout also ``harmoatt``, ``mlp``, ``cycleik`` or
                ``regression`` where trained), a checkpoint path, ``multistart`` (LM from the
                current joints, then random seeds, 10 in all), ``lm`` (LM from the current joints, then
                up to 49 random restarts, single-target path), ``dm_control``. The network kinds need a
                network shipped for the robot; for a robot without one, build
                ``IKController(SingleTargetIK(chain, network))`` on your own trained network.
            **kwargs: :class:`IKController` arguments; ``lead_time`` defaults to the scenes' servo
                lag, 2/ω for the default 20 Hz servos (≈ 16 ms).

        Raises:
            HikError: unknown kind or robot, or a kind that needs a network no one ships for the robot.
        """
        from hik_sim.sim import SceneOptions

        try:
            solver = make_solver(kind, robot)
        except UnknownSolverError as exc:
            others = [n for n in exc.shipped if n not in CONTROLLER_KINDS]
            kinds = (f"{DEFAULT_KIND} (the default), {', '.join(k for k in CONTROLLER_KINDS if k != DEFAULT_KIND)}"
                     + (f", the networks shipped for {exc.robot.name} ({', '.join(others)})" if others else ""))
            raise SolverError(f"unknown controller kind {kind!r}; kinds are: {kinds}, or a checkpoint path (.safetensors)") from None
        except NetworkNotShippedError as exc:
            if exc.shipped:
                raise SolverError(f"controller kind {kind!r} needs the {kind} network, and none is shipped for robot "
                                  f"{exc.robot.name!r} (shipped: {', '.join(exc.shipped)})") from None
            raise SolverError(f"controller kind {kind!r} needs a network, and none is shipped for robot {exc.robot.name!r}; kinds "
                              f"without a network: {', '.join(NETWORK_FREE_NAMES)}; or build IKController(SingleTargetIK(chain, "
                              "network)) on a network trained for it") from None
        kwargs.setdefault("lead_time", SceneOptions().servo_lag)
        return cls(solver, **kwargs)

    def reset(self) -> None:
        """Forget the held commands (call at the start of every episode)."""
        self.last_command.clear()
        self.last_target.clear()
        self.last_result.clear()
        self._last_query.clear()
        self.last_repeated.clear()

    def _solve(self, pos: np.ndarray, quat: np.ndarray, q_now: np.ndarray) -> IKResult:
        if self._solve_one is not None:  # a SingleTargetSolver: one pose, no batch
            return self._solve_one(pos, quat, q_init=q_now)
        return self.solver.solve(torch.as_tensor(pos[None]), torch.as_tensor(quat[None]), torch.as_tensor(q_now[None]))

    def act(self, observation: dict[str, np.ndarray], index: int = 0) -> np.ndarray:
        """Joint targets (n,) for one environment's observation."""
        q_now = np.asarray(observation["joint_pos"], dtype=np.float64)
        chain = self.solver.chain
        if q_now.shape != (chain.dof,):  # a network ignores q_init, and would command the wrong size
            raise SolverError(f"joint_pos must hold the {chain.dof} chain joints of {chain.robot.name!r}, got shape {q_now.shape}")
        goal = np.asarray(observation["goal_pos"], dtype=np.float64)
        if self.lead_time and "goal_vel" in observation:
            goal = goal + self.lead_time * np.asarray(observation["goal_vel"], dtype=np.float64)
        goal_quat = np.asarray(observation["goal_quat"], dtype=np.float64)
        # warm-start from the last target, where the servos are heading, not from the joints on their way
        # there: from a configuration between two solution branches the solve can land on the other
        # branch, and a controller re-solving from the moving joints could swap branches every few steps
        # and never arrive (3 of 200 IRB120 Reach episodes did, with speed-limited servos). The target is
        # the last accepted answer: the command itself, unless joint_velocity_limit clipped it on the way
        last = self.last_target.get(index, q_now)
        start = time.perf_counter()
        query = (goal.tobytes(), goal_quat.tobytes(), last.tobytes())
        self.last_repeated[index] = repeated = self._deterministic and self._last_query.get(index) == query
        if repeated:
            again = self.last_result[index]
            result = replace(again, fk_evals=torch.zeros_like(again.fk_evals), wall_time=time.perf_counter() - start)
        else:
            result = self._solve(goal, goal_quat, last)
        self._last_query[index] = query
        self.last_result[index] = result
        if not bool(result.success[0]):
            self.failures += 1
        answer_error = float(result.pos_err[0]) + self.rotation_weight * float(result.rot_err[0])
        if bool(result.success[0]) or answer_error < self._error(last, goal, goal_quat):
            target = self._nearest_turn(result.q[0].numpy().astype(np.float64), last)
        else:
            target = last
        command = target
        if self.joint_velocity_limit is not None and self.dt is not None:  # the constructor gives both or no limit
            step = self.joint_velocity_limit * self.dt
            command = np.clip(target, q_now - step, q_now + step)
        self.last_target[index], self.last_command[index] = target, command
        return command.copy()

    def _error(self, q: np.ndarray, goal_pos: np.ndarray, goal_quat: np.ndarray) -> float:
        """How far joints q (n,) put the end-effector from the goal: position [m] + ``rotation_weight`` × rotation [rad]."""
        pose = self.solver.chain.fk(torch.as_tensor(q, dtype=torch.float64)[None])
        return (float(np.linalg.norm(pose.pos[0].numpy() - goal_pos))
                + self.rotation_weight * rotation_angle(pose.quat[0].numpy(), goal_quat))

    def _nearest_turn(self, q: np.ndarray, reference: np.ndarray) -> np.ndarray:
        """``q`` (n,) with each joint of more than a turn's range moved by whole turns (2π) to the copy
        nearest ``reference`` (n,) inside its limits: the same pose, without a wrist turning 360° on
        the way (a network may answer +2π where the joint stands at 0: the IRB120's joint 6 spans ±400°)."""
        if not self._turns.any():
            return q
        j = self._turns
        turn = 2 * np.pi
        lowest, highest = np.ceil((self._lower[j] - q[j]) / turn - 1e-9), np.floor((self._upper[j] - q[j]) / turn + 1e-9)
        q = q.copy()
        q[j] = q[j] + turn * np.clip(np.round((reference[j] - q[j]) / turn), lowest, highest)  # |q + 2πk − ref| is convex in k
        return np.clip(q, self._lower, self._upper)

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
