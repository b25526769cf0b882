"""Levenberg–Marquardt for one target at a time, the control-rate path: numpy and MuJoCo's C kinematics, no torch.

:class:`SingleTargetLM` solves one target per call on :class:`~hik_sim.kinematics.mujoco_chain.SingleTargetKinematics`
(the chain compiled as a bare MuJoCo model; its FK and Jacobian, with :class:`~hik_sim.kinematics.mujoco_chain.SinglePose`,
are handed on from here), or on the compiled loop of :mod:`hik_sim.solvers._lm_numba`.
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hik_sim.errors import SolverError
from hik_sim.kinematics.geometry import ChainGeometry
from hik_sim.kinematics.mujoco_chain import SinglePose, SingleTargetKinematics
from hik_sim.robots import RobotSpec
from hik_sim.solvers.lm_rules import (
    CLOSE_DAMPING,
    DAMPING,
    MAX_ITERATIONS,
    ROTATION_WEIGHT,
    STALL_ITERATIONS,
    STALL_PROGRESS,
    STOP_POSITION,
    STOP_ROTATION,
    check_close_damping,
    check_stall,
    close_arguments,
)

__all__ = ["SingleTargetKinematics", "SinglePose", "SingleTargetLM", "LMAnswer"]


class LMAnswer(NamedTuple):
    """One target's Levenberg–Marquardt answer.

    Attributes:
        q: (n,) configuration, inside the limits.
        pos_err: position error [m].
        rot_err: rotation error [rad].
        iterations: LM iterations.
        evals: FK evaluations (one per evaluated configuration).
        jac_evals: Jacobian evaluations (one per configuration a step started from).
    """

    q: np.ndarray
    pos_err: float
    rot_err: float
    iterations: int
    evals: int
    jac_evals: int


class SingleTargetLM:
    """Levenberg–Marquardt for one target: numpy and MuJoCo's C kinematics, no torch.

    The same method as the batched :class:`hik_sim.solvers.lm.LMRefiner`: a 6-D residual (position
    [m]; rotation as an axis-angle vector [rad] times ``rotation_weight`` [m/rad]), Marquardt-scaled
    damping that falls after a successful step and rises after a failed one, steps bounded at
    active joint limits (a joint at a limit that the step would push beyond it is held and the step
    solved again for the others; every trial is then projected onto the limits), stop once within
    (``stop_position``, ``stop_rotation``) or once stalled (the cost fell by less than
    ``stall_progress`` over the last ``stall_iterations`` iterations: a local minimum, where a
    restart from another seed spends evaluations better); a start already within the success tolerance
    begins at ``close_damping`` instead of ``damping`` (:data:`~hik_sim.solvers.lm_rules.CLOSE_DAMPING`). FK is evaluated at every trial, the
    Jacobian only where a step starts (the seed, and each accepted trial that is not the last).

    Args:
        robot: the robot.
        geometry: its chain geometry, when already at hand.
        max_iterations: iteration cap.
        rotation_weight: weight of the rotation residual [m/rad].
        damping: initial damping.
        stop_position: convergence threshold [m].
        stop_rotation: convergence threshold [rad].
        stall_iterations: the window of the stall test (0: never stop for a stall).
        stall_progress: the fraction of the cost a run must shed over that window to go on.
        close_damping: initial damping of a start within the success tolerance (5 mm & 2°;
            :data:`~hik_sim.solvers.lm_rules.CLOSE_DAMPING`; None: every start begins at ``damping``).
        backend: ``numba`` (the whole loop compiled, :mod:`hik_sim.solvers._lm_numba`: a few µs an
            iteration; needs the ``fast`` extra), ``mujoco`` (numpy and MuJoCo's C kinematics, tens
            of µs an iteration, Python between them) or ``auto``: numba when it is installed.

    Attributes:
        backend: the backend in use.
    """

    def __init__(self, robot: RobotSpec, geometry: ChainGeometry | None = None, max_iterations: int = MAX_ITERATIONS,
                 rotation_weight: float = ROTATION_WEIGHT, damping: float = DAMPING, stop_position: float = STOP_POSITION,
                 stop_rotation: float = STOP_ROTATION, stall_iterations: int = STALL_ITERATIONS, stall_progress: float = STALL_PROGRESS,
                 backend: str = "auto", close_damping: float | None = CLOSE_DAMPING) -> None:
        import mujoco

        from hik_sim.kinematics.flat_chain import flat_geometry as _flat_geometry
        from hik_sim.learning.fast_network import numba_available

        if backend not in ("auto", "numba", "mujoco"):
            raise SolverError(f"unknown LM backend {backend!r}; backends are: auto, numba, mujoco")
        check_stall(stall_iterations, stall_progress)
        check_close_damping(close_damping)
        if backend == "numba" and not numba_available():
            raise SolverError("the numba LM backend needs numba: pip install 'hik_sim[fast]' (or use backend='mujoco')")
        self.backend = "numba" if backend == "numba" or (backend == "auto" and numba_available()) else "mujoco"
        geometry = geometry or ChainGeometry.from_robot(robot)
        self._geometry = _flat_geometry(geometry) if self.backend == "numba" else None
        self.kinematics = SingleTargetKinematics(robot, geometry)
        self.max_iterations, self.rotation_weight, self.damping = max_iterations, rotation_weight, damping
        self.stop_position, self.stop_rotation = stop_position, stop_rotation
        self.stall_iterations, self.stall_progress = stall_iterations, stall_progress
        self.close_damping = close_damping
        self.lower, self.upper = np.asarray(robot.lower, dtype=float), np.asarray(robot.upper, dtype=float)
        self.weights = np.array([1.0, 1.0, 1.0, rotation_weight, rotation_weight, rotation_weight])
        self._mujoco = mujoco
        self._rel, self._conj, self._axis_angle = np.empty(4), np.empty(4), np.empty(3)

    def errors(self, pose: SinglePose, pos: np.ndarray, quat: np.ndarray) -> tuple[np.ndarray, float, float]:
        """Weighted residual (6,), position error [m] and rotation error [rad] of a pose against a target."""
        mj = self._mujoco
        mj.mju_negQuat(self._conj, pose.quat)
        mj.mju_mulQuat(self._rel, quat, self._conj)
        if self._rel[0] < 0:
            self._rel *= -1
        mj.mju_quat2Vel(self._axis_angle, self._rel, 1.0)
        delta = pos - pose.pos
        residual = np.concatenate((delta, self.rotation_weight * self._axis_angle))
        return residual, float(np.linalg.norm(delta)), float(np.linalg.norm(self._axis_angle))

    def refine(self, pos: np.ndarray, quat: np.ndarray, q: np.ndarray) -> LMAnswer:
        """Refine ``q`` (n,) towards the target (pos (3,) [m], unit quat (4,) wxyz)."""
        if self._geometry is not None:
            from hik_sim.solvers._lm_numba import lm_refine

            out = np.empty(len(self.lower))
            pos_err, rot_err, iterations, fk_evals, jac_evals = lm_refine(
                self._geometry, self.lower, self.upper, np.ascontiguousarray(pos, dtype=np.float64),
                np.ascontiguousarray(quat, dtype=np.float64), np.ascontiguousarray(q, dtype=np.float64), self.rotation_weight,
                self.damping, self.max_iterations, self.stop_position, self.stop_rotation, self.stall_iterations,
                1.0 - self.stall_progress, *close_arguments(self.damping, self.close_damping), out)
            return LMAnswer(out, pos_err, rot_err, iterations, fk_evals, jac_evals)
        q = np.clip(np.asarray(q, dtype=float), self.lower, self.upper)
        pose = self.kinematics.fk(q)
        fk_evals, jac_evals, iterations = 1, 0, 0
        residual, pos_err, rot_err = self.errors(pose, pos, quat)
        close_lam, close_position, close_rotation = close_arguments(self.damping, self.close_damping)
        lam = close_lam if pos_err < close_position and rot_err < close_rotation else self.damping
        cost = residual @ residual
        history = [cost]  # the cost after each iteration
        converged = pos_err < self.stop_position and rot_err < self.stop_rotation
        if not converged:
            jac = self.kinematics.fk_and_jacobian(q)[1]
            jac_evals += 1
        while iterations < self.max_iterations and not converged:
            weighted = jac * self.weights[:, None]
            step = _bounded_step(weighted.T @ weighted, weighted.T @ residual, lam, q, self.lower, self.upper)
            trial = np.clip(q + step, self.lower, self.upper)
            trial_pose = self.kinematics.fk(trial)
            fk_evals += 1
            iterations += 1
            trial_residual, trial_pos_err, trial_rot_err = self.errors(trial_pose, pos, quat)
            trial_cost = trial_residual @ trial_residual
            if trial_cost < (1.0 - 1e-12) * cost:  # a decrease beyond rounding
                q, residual, cost, pos_err, rot_err = trial, trial_residual, trial_cost, trial_pos_err, trial_rot_err
                lam = max(lam / 3, 1e-12)
                converged = pos_err < self.stop_position and rot_err < self.stop_rotation
                if not converged and iterations < self.max_iterations:  # the next step needs the Jacobian here
                    jac = self.kinematics.fk_and_jacobian(q)[1]
                    jac_evals += 1
            else:
                lam = min(lam * 4, 1e8)
            history.append(cost)
            if self.stall_iterations and iterations >= self.stall_iterations \
                    and cost > (1 - self.stall_progress) * history[iterations - self.stall_iterations]:
                break
        return LMAnswer(q, pos_err, rot_err, iterations, fk_evals, jac_evals)


def _bounded_step(hessian: np.ndarray, gradient: np.ndarray, lam: float, q: np.ndarray, lower: np.ndarray,
                  upper: np.ndarray) -> np.ndarray:
    """The damped Gauss–Newton step (n,) for JᵀJ ``hessian`` (n, n) and Jᵀr ``gradient`` (n,) at ``q`` (n,),
    bounded at active limits: a joint at a limit that the step would push beyond it is held (its row
    and column dropped) and the step solved again for the others, until no held joint is pushed outwards."""
    moving = np.ones(len(q))
    diagonal = np.diag(hessian)
    for _ in range(len(q) + 1):
        system = hessian * moving[:, None] * moving[None, :] + np.diag(lam * (diagonal * moving + 1e-9))
        step = np.linalg.solve(system, gradient * moving)
        held = (moving != 0) & (((q <= lower) & (step < 0)) | ((q >= upper) & (step > 0)))
        if not held.any():
            break
        moving[held] = 0.0
    return step * moving
