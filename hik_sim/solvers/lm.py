"""Batched damped least squares (Levenberg–Marquardt): :class:`LMRefiner` and what a run returns (:class:`LMRun`).

Float64 with the analytic Jacobian of :class:`~hik_sim.kinematics.chain.Chain`: Marquardt-scaled adaptive damping per
target, steps bounded at active joint limits (then projected), per-target early exit on convergence or on a stall, and
per-target counts of FK and Jacobian evaluations (the Jacobian only where a step starts). The damping, close-start
damping, stopping and stall rules are :mod:`~hik_sim.solvers.lm_rules`' (:class:`~hik_sim.solvers.lm_rules.LMRules`),
the same rules as the one-target :class:`~hik_sim.solvers.single_target.SingleTargetLM`'s.

The residual is 6-D: the position error [m] and the rotation error as an axis-angle vector [rad], weighted by
``rotation_weight`` [m/rad] so that both are comparable in length.
"""

from __future__ import annotations

import math
import time
from typing import NamedTuple

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics.chain import Chain, Pose
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.tolerances import Tolerance
from hik_sim.learning.data import JointSelection
from hik_sim.solvers.base import IKResult, _check_q_init, _result, check_targets, rotation_residual
from hik_sim.solvers.lm_rules import MAX_ITERATIONS, LMRules, close_arguments

__all__ = ["LMRefiner", "LMRun"]


class LMRun(NamedTuple):
    """What :meth:`LMRefiner.refine` returns, per target (all (B,) but ``q``).

    Attributes:
        q: (B, n) answers, inside the joint limits, float64.
        iterations: LM iterations.
        fk_evals: FK evaluations (the seed's, unless the caller spent it before, and one per trial).
        jac_evals: Jacobian evaluations (where a step started).
        pos_err: position errors of the answers [m], as the loop measured them.
        rot_err: rotation errors of the answers [rad].
    """

    q: torch.Tensor
    iterations: torch.Tensor
    fk_evals: torch.Tensor
    jac_evals: torch.Tensor
    pos_err: torch.Tensor
    rot_err: torch.Tensor


class LMRefiner:
    """Batched Levenberg–Marquardt from given starting configurations.

    Args:
        chain: the robot's chain.
        tolerance: success criterion (reported; default 5 mm & 2°).
        selection: joints held fixed (they do not move).
        backend: ``numba`` (each target's loop compiled, :func:`hik_sim.solvers._lm_numba.lm_refine_batch`,
            the targets in parallel over the CPU's cores; needs the ``fast`` extra), ``torch`` (the
            batch as tensors, one iteration for all active targets at a time) or ``auto``: numba
            when installed. The same method and counts; the answers agree to rounding.
        max_iterations: iteration cap per target (:data:`~hik_sim.solvers.lm_rules.MAX_ITERATIONS`).
        rules: damping, close-start damping, stopping and stall rules, rotation weight
            (:class:`~hik_sim.solvers.lm_rules.LMRules`; default: as shipped, the rules
            :class:`~hik_sim.solvers.single_target.SingleTargetLM` uses too). A target stops iterating once within
            (``stop_position``, ``stop_rotation``), far inside the success criterion, so successes are exact, or once
            its cost fell by less than ``stall_progress`` over the last ``stall_iterations`` iterations (a local
            minimum, where a restart spends evaluations better); a start already within the success tolerance begins
            at ``close_damping``, any other at ``damping``.

    Attributes:
        backend: the backend in use.
    """

    def __init__(self, chain: Chain, tolerance: Tolerance | None = None, selection: JointSelection | None = None,
                 backend: str = "auto", max_iterations: int = MAX_ITERATIONS, rules: LMRules | None = None) -> None:
        from hik_sim.learning.fast_network import numba_available

        rules = LMRules() if rules is None else rules
        if not isinstance(rules, LMRules):
            raise SolverError(f"rules must be an LMRules, got {type(rules).__name__}")
        if not (isinstance(max_iterations, int) and max_iterations >= 1):
            raise SolverError(f"max_iterations must be >= 1, got {max_iterations!r}")
        if backend not in ("auto", "numba", "torch"):
            raise SolverError(f"unknown LM backend {backend!r}; backends are: auto, numba, torch")
        if backend == "numba" and not numba_available():
            raise SolverError("the numba LM backend needs numba: pip install 'hik_sim[fast]' (or use backend='torch')")
        self.backend = "numba" if backend == "numba" or (backend == "auto" and numba_available()) else "torch"
        self._geometry: np.ndarray | None = None
        self.chain = chain
        self.tolerance = tolerance or Tolerance()
        self.rules = rules
        self.stop = Tolerance(rules.stop_position, rules.stop_rotation)
        self.max_iterations, self.rotation_weight, self.damping = max_iterations, rules.rotation_weight, rules.damping
        self.selection = selection or JointSelection(chain.joint_names, {})
        self.free = torch.tensor(self.selection.free_index)
        self.stall_iterations, self.stall_progress = rules.stall_iterations, rules.stall_progress
        self.close_damping = rules.close_damping

    def _cost_and_residual(self, pose: Pose, pos: torch.Tensor, quat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        residual = torch.cat((pos - pose.pos, self.rotation_weight * rotation_residual(pose.quat, quat)), dim=-1)
        return (residual ** 2).sum(-1), residual

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Refine ``q_init`` (B, n) (default: home) towards the targets."""
        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        batch = pos.shape[0]
        if q_init is None:
            q_init = torch.tensor(self.chain.robot.home, dtype=torch.float64).expand(batch, -1)
        q_init = _check_q_init(q_init, batch, self.chain.dof)
        run = self.refine(pos, quat, q_init)
        return _result(self.chain, run.q, pos, quat, self.tolerance, run.iterations, run.fk_evals, run.jac_evals, start)

    def refine(self, pos: torch.Tensor, quat: torch.Tensor, q: torch.Tensor, seed_evaluated: torch.Tensor | None = None) -> LMRun:
        """The LM loop on validated float64 targets (B, 3), (B, 4) from ``q`` (B, n).

        ``seed_evaluated`` (B,) bool: the seeds whose FK the caller has already spent and counted (choosing
        among a network's answers, :func:`first_good_answers`), so the run does not count it again; the
        Jacobian at the seed is counted either way (default: none)."""
        chain, batch = self.chain, pos.shape[0]
        q = self._prepared(q)
        seed_fk = torch.ones(batch, dtype=torch.int64) if seed_evaluated is None else (~seed_evaluated).long()
        if self.backend == "numba" and batch > 0:
            return self._refine_compiled(pos, quat, q, seed_fk)
        iterations = torch.zeros(batch, dtype=torch.int64)
        pose = chain.fk(q)
        fk = seed_fk.clone()
        jac = torch.zeros(batch, dtype=torch.int64)
        cost, residual = self._cost_and_residual(pose, pos, quat)
        seed_pos_err, seed_rot_err = position_error(pose.pos, pos), rotation_error(pose.quat, quat)
        converged = self.stop.met(seed_pos_err, seed_rot_err)
        close_lam, close_position, close_rotation = close_arguments(self.damping, self.close_damping)
        close = (seed_pos_err < close_position) & (seed_rot_err < close_rotation)
        jacobian = torch.zeros(batch, 6, chain.dof, dtype=torch.float64)
        jacobian[~converged] = chain.jacobian(q[~converged])  # only where a step will need it
        jac += ~converged
        history = torch.empty(batch, self.max_iterations + 1, dtype=torch.float64)  # the cost after each iteration
        history[:, 0] = cost
        running = ~converged
        lam = torch.full((batch,), self.damping, dtype=torch.float64).masked_fill(close, close_lam)
        weights = torch.tensor([1.0, 1.0, 1.0, self.rotation_weight, self.rotation_weight, self.rotation_weight], dtype=torch.float64)
        lower, upper = (bound[self.free] for bound in chain.limits(torch.float64))
        for iteration in range(1, self.max_iterations + 1):
            idx = torch.nonzero(running).flatten()
            if idx.numel() == 0:
                break
            jac_a = jacobian[idx][:, :, self.free] * weights[None, :, None]
            hessian = jac_a.transpose(1, 2) @ jac_a
            gradient = (jac_a.transpose(1, 2) @ residual[idx, :, None])[..., 0]
            step = self._bounded_step(hessian, gradient, lam[idx], q[idx][:, self.free], lower, upper)
            trial = q[idx].clone()
            trial[:, self.free] += step
            trial = chain.clamp(trial)
            trial_pose = chain.fk(trial)
            fk[idx] += 1
            iterations[idx] += 1
            trial_cost, trial_residual = self._cost_and_residual(trial_pose, pos[idx], quat[idx])
            better = trial_cost < (1.0 - 1e-12) * cost[idx]  # a decrease beyond rounding
            accept = idx[better]
            q[accept] = trial[better]
            cost = cost.index_copy(0, accept, trial_cost[better])
            residual = residual.index_copy(0, accept, trial_residual[better])
            lam[idx] = torch.where(better, (lam[idx] / 3).clamp_min(1e-12), (lam[idx] * 4).clamp_max(1e8))
            converged[accept] = self.stop.met(position_error(trial_pose.pos[better], pos[accept]),
                                              rotation_error(trial_pose.quat[better], quat[accept]))
            renew = accept[~converged[accept]] if iteration < self.max_iterations else accept[:0]
            if renew.numel():  # the next step needs the Jacobian at the accepted configuration
                jacobian[renew] = chain.jacobian(q[renew])
                jac[renew] += 1
            history[idx, iteration] = cost[idx]
            running[idx] = ~converged[idx]
            if self.stall_iterations and iteration >= self.stall_iterations:
                running[idx] &= cost[idx] <= (1 - self.stall_progress) * history[idx, iteration - self.stall_iterations]
        return LMRun(q, iterations, fk, jac, residual[:, :3].norm(dim=-1), residual[:, 3:].norm(dim=-1) / self.rotation_weight)

    @staticmethod
    def _bounded_step(hessian: torch.Tensor, gradient: torch.Tensor, lam: torch.Tensor, q: torch.Tensor, lower: torch.Tensor,
                      upper: torch.Tensor) -> torch.Tensor:
        """The damped Gauss–Newton step (b, f) of the free joints, bounded at active limits.

        Args:
            hessian: (b, f, f) JᵀJ of the weighted Jacobian.
            gradient: (b, f) Jᵀr.
            lam: (b,) damping.
            q: (b, f) the free joints' values, inside the limits.
            lower: (f,) the free joints' lower limits.
            upper: (f,) their upper limits.

        A joint at a limit that the step would push beyond it is held (its row and column dropped)
        and the step solved again for the others, until no held joint is pushed outwards.
        """
        moving = torch.ones_like(q)
        diagonal = torch.diagonal(hessian, dim1=1, dim2=2)
        for _ in range(q.shape[1] + 1):
            system = hessian * moving[:, :, None] * moving[:, None, :] + torch.diag_embed(lam[:, None] * (diagonal * moving + 1e-9))
            step = torch.linalg.solve(system, gradient * moving)
            held = (moving != 0) & (((q <= lower) & (step < 0)) | ((q >= upper) & (step > 0)))
            if not bool(held.any()):
                break
            moving = moving.masked_fill(held, 0.0)
        return step * moving

    def _prepared(self, q: torch.Tensor) -> torch.Tensor:
        """Starts (..., n) inside the limits, the joints the selection holds at their values (a new tensor)."""
        flat = q.reshape(-1, self.chain.dof)
        return self.selection.expand(self.selection.free(self.chain.clamp(flat))).view_as(q)  # clamp makes the copy

    def compiled_geometry(self) -> np.ndarray:
        """The chain's flat geometry for the numba kernels (built once; :mod:`hik_sim.solvers._lm_numba`)."""
        from hik_sim.kinematics.flat_chain import flat_geometry as _flat_geometry

        if self._geometry is None:
            self._geometry = _flat_geometry(self.chain.geometry)
            lower, upper = self.chain.limits(torch.float64)
            self._limits = (np.ascontiguousarray(lower.numpy()), np.ascontiguousarray(upper.numpy()))
            free = np.zeros(self.chain.dof)
            free[list(self.selection.free_index)] = 1.0
            self._free_mask = free
        return self._geometry

    def restart_compiled(self, pos: torch.Tensor, quat: torch.Tensor, seeds: torch.Tensor, best: tuple[torch.Tensor, ...],
                         finish: Tolerance | None) -> tuple[torch.Tensor, ...]:
        """LM from each target's ``seeds`` (b, R, n) in turn until its best answer is within ``finish`` (None: every
        seed), compiled (:func:`hik_sim.solvers._lm_numba.lm_restarts_batch`; the numba backend only).

        Args:
            pos: (b, 3) validated float64 target positions [m].
            quat: (b, 4) their quaternions wxyz.
            seeds: (b, R, n) starts (clamped into the limits, fixed joints set, as :meth:`refine` does).
            best: the best answers so far, ``(q (b, n), position errors (b,), rotation errors (b,))``, updated in place.
            finish: when a target needs no further seed.

        Returns:
            (runs, iterations, FK evaluations, Jacobian evaluations), each (b,) int64.
        """
        from hik_sim.solvers._lm_numba import lm_restarts_batch

        geometry = self.compiled_geometry()
        best_q, best_pos_err, best_rot_err = (t.numpy() for t in best)
        counts = tuple(np.empty(pos.shape[0], dtype=np.int64) for _ in range(4))
        stop_at = (-math.inf, -math.inf) if finish is None else (finish.position, finish.rotation)
        lm_restarts_batch(geometry, *self._limits, self._free_mask, np.ascontiguousarray(pos.numpy()), np.ascontiguousarray(quat.numpy()),
                          np.ascontiguousarray(self._prepared(seeds).numpy()), self.rotation_weight, self.damping, self.max_iterations,
                          self.stop.position, self.stop.rotation, self.stall_iterations, 1.0 - self.stall_progress,
                          *close_arguments(self.damping, self.close_damping), *stop_at, best_q, best_pos_err, best_rot_err, *counts)
        return tuple(torch.from_numpy(c) for c in counts)

    def _refine_compiled(self, pos: torch.Tensor, quat: torch.Tensor, q: torch.Tensor, seed_fk: torch.Tensor) -> LMRun:
        from hik_sim.solvers._lm_numba import lm_refine_batch

        geometry = self.compiled_geometry()
        batch, dof = q.shape
        out_q = np.empty((batch, dof))
        pos_err, rot_err = np.empty(batch), np.empty(batch)
        iterations, fk, jac = (np.empty(batch, dtype=np.int64) for _ in range(3))
        lm_refine_batch(geometry, *self._limits, self._free_mask, np.ascontiguousarray(pos.numpy()),
                        np.ascontiguousarray(quat.numpy()), np.ascontiguousarray(q.numpy()), self.rotation_weight, self.damping,
                        self.max_iterations, self.stop.position, self.stop.rotation, self.stall_iterations, 1.0 - self.stall_progress,
                        *close_arguments(self.damping, self.close_damping), np.ascontiguousarray(seed_fk.numpy()), out_q, pos_err,
                        rot_err, iterations, fk, jac)
        return LMRun(*(torch.from_numpy(a) for a in (out_q, iterations, fk, jac, pos_err, rot_err)))
