"""The solvers' common ground: :class:`IKResult`, the :class:`IKSolver` and :class:`SingleTargetSolver` protocols,
and the input checks every solver runs.

Targets are poses of the end-effector in the chain's base frame: positions (B, 3) [m] and quaternions (B, 4) wxyz.
Non-unit quaternions are normalised; NaN/inf, zero quaternions and wrong shapes raise :class:`~hik_sim.errors.HikError`
(:func:`check_targets`). Every returned configuration lies inside the joint limits, and an unreachable target returns
``success=False`` with the best configuration found. An empty batch (B = 0) returns an empty :class:`IKResult` (``q`` of
shape (0, n)). A network must belong to the chain it is paired with (:func:`check_network_fits`). The success criteria
(:class:`~hik_sim.kinematics.tolerances.Tolerance`, ``REPORT_TOLERANCES``) are re-exported from
:mod:`~hik_sim.kinematics.tolerances`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Protocol, runtime_checkable

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, quaternion_multiply, rotation_error
from hik_sim.kinematics.tolerances import REPORT_TOLERANCES, Tolerance
from hik_sim.learning.network import IKNetwork, _as_real_tensor, as_targets

__all__ = ["IKResult", "IKSolver", "SingleTargetSolver", "Tolerance", "REPORT_TOLERANCES", "check_targets", "check_network_fits", "rotation_residual"]


def check_network_fits(network: IKNetwork, chain: Chain) -> None:
    """Check that ``network`` was made for ``chain``'s robot, not only for as many joints.

    Compared: the joint names (base → tip), the joint limits, and the URDF's SHA-256 where the
    network knows its URDF (a loaded checkpoint's ``card``, or the chain a several-answer network
    ranks its answers with).

    Raises:
        SolverError: the network belongs to another robot or chain (the message says how they differ).
    """
    robot, problems = chain.robot, []
    names = tuple(network.selection.joint_names)
    if names != tuple(robot.joint_names):
        problems.append(f"its joints are {list(names)}, the chain's are {list(robot.joint_names)}")
    elif not (np.allclose(network.lower, robot.lower, atol=1e-5) and np.allclose(network.upper, robot.upper, atol=1e-5)):
        problems.append(f"its joint limits are {network.lower} to {network.upper}, the chain's {robot.lower} to {robot.upper}")
    card = getattr(network, "card", None)
    known = card.urdf_sha256 if card is not None else (network.chain.robot.urdf_sha256() if network.chain is not None else None)
    if known is not None and known != robot.urdf_sha256():
        problems.append(f"it was made for another URDF (sha256 {known[:12]}…, the chain's is {robot.urdf_sha256()[:12]}…)")
    if problems:
        raise SolverError(f"the network does not fit the chain of robot {robot.name!r}: {'; '.join(problems)}; "
                          "pair a network with the robot it was trained for")


@dataclass(frozen=True)
class IKResult:
    """What a solver returns, per target. Immutable: a solver that adds to a result (a retry, a cost,
    its wall time) builds a new one (``dataclasses.replace``); the tensors inside stay tensors.

    Attributes:
        q: (B, n) configurations, inside the joint limits, float64.
        pos_err: (B,) position errors [m].
        rot_err: (B,) rotation errors [rad].
        success: (B,) within the solver's success tolerance.
        iterations: (B,) LM iterations (0 for the network alone).
        fk_evals: (B,) forward-kinematics evaluations.
        jac_evals: (B,) Jacobian evaluations.
        wall_time: wall-clock time of the whole call [s].
        extra: solver-specific figures (read-only), e.g. :class:`DmControlIK`'s ``limit_violations``.
    """

    q: torch.Tensor
    pos_err: torch.Tensor
    rot_err: torch.Tensor
    success: torch.Tensor
    iterations: torch.Tensor
    fk_evals: torch.Tensor
    jac_evals: torch.Tensor
    wall_time: float = 0.0
    extra: Mapping[str, object] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if not isinstance(self.extra, MappingProxyType):
            object.__setattr__(self, "extra", MappingProxyType(dict(self.extra)))

    @property
    def function_evals(self) -> torch.Tensor:
        """(B,) FK plus Jacobian evaluations: the cost measure of the hybrid-IK paper."""
        return self.fk_evals + self.jac_evals

    def success_at(self, tolerance: Tolerance) -> torch.Tensor:
        """(B,) success under another tolerance."""
        return tolerance.met(self.pos_err, self.rot_err)


@runtime_checkable
class IKSolver(Protocol):
    """The one solver interface: every solver in this module, and whatever
    :func:`hik_sim.solvers.registry.make_solver` builds, satisfies it.

    Attributes:
        chain: the robot's :class:`~hik_sim.kinematics.chain.Chain` the solver answers for.
    """

    @property
    def chain(self) -> Chain:
        """The robot's chain."""
        ...

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Configurations for targets (B, 3) [m], (B, 4) wxyz, optionally from ``q_init`` (B, n)."""
        ...


@runtime_checkable
class SingleTargetSolver(IKSolver, Protocol):
    """An :class:`IKSolver` with a fast entry for one pose (the control-rate path: no batch, no torch in the loop).

    :class:`~hik_sim.policies.IKController` calls :meth:`solve_one` where a solver offers it.
    """

    def solve_one(self, target_pos: Any, target_quat: Any, q_init: Any = None) -> IKResult:
        """One target: position (3,) [m], quaternion (4,) wxyz, optional ``q_init`` (n,); a result of batch size 1."""
        ...


def check_targets(target_pos: torch.Tensor, target_quat: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Validated float64 CPU copies of targets, quaternions normalised (:func:`hik_sim.learning.network.as_targets`).

    Raises:
        HikError: not real numbers, wrong shapes, NaN/inf, a zero quaternion, or a position beyond
            :data:`~hik_sim.learning.network.MAX_TARGET_DISTANCE` (10 km) from the base.
    """
    return as_targets(target_pos, target_quat)


def _check_q_init(q_init: torch.Tensor, batch: int, dof: int) -> torch.Tensor:
    """``q_init`` as float64 (B, n).

    Raises:
        HikError: wrong shape or NaN/inf.
    """
    q_init = _as_real_tensor(q_init, "q_init")
    if q_init.shape != (batch, dof) or not bool(torch.isfinite(q_init).all()):
        raise SolverError(f"q_init must be finite with shape ({batch}, {dof}), got {tuple(q_init.shape)}")
    return q_init


def rotation_residual(quat: torch.Tensor, target_quat: torch.Tensor) -> torch.Tensor:
    """Axis-angle vector (B, 3) [rad] of the rotation from ``quat`` to ``target_quat``, base frame."""
    conj = quat * quat.new_tensor([1.0, -1.0, -1.0, -1.0])
    rel = quaternion_multiply(target_quat, conj)
    rel = torch.where(rel[:, :1] < 0, -rel, rel)
    vec_norm = rel[:, 1:].norm(dim=-1, keepdim=True)
    angle = 2 * torch.atan2(vec_norm, rel[:, :1])
    scale = torch.where(vec_norm > 1e-12, angle / vec_norm.clamp_min(1e-12), torch.full_like(vec_norm, 2.0))
    return rel[:, 1:] * scale


def _result(chain: Chain, q: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor, tolerance: Tolerance, iterations: torch.Tensor,
            fk: torch.Tensor, jac: torch.Tensor, start: float) -> IKResult:
    pose = chain.fk(q)
    pos_err, rot_err = position_error(pose.pos, pos), rotation_error(pose.quat, quat)
    return IKResult(q, pos_err, rot_err, tolerance.met(pos_err, rot_err), iterations, fk, jac, time.perf_counter() - start)


_PER_TARGET = ("q", "pos_err", "rot_err", "success", "iterations", "fk_evals", "jac_evals")
"""The :class:`IKResult` fields with one row a target."""


def _scatter(parts: list[tuple[torch.Tensor, IKResult]], batch: int) -> IKResult:
    """One result for ``batch`` targets from results of disjoint sets of them, ``(index (b,), result of b targets)``."""
    joined: dict[str, Any] = {}
    for name in _PER_TARGET:
        sample = getattr(parts[0][1], name)
        whole = sample.new_zeros((batch, *sample.shape[1:]))
        for index, result in parts:
            whole[index] = getattr(result, name)
        joined[name] = whole
    return IKResult(**joined, wall_time=sum(result.wall_time for _, result in parts))


def _merge(into: IKResult, other: IKResult, index: torch.Tensor) -> IKResult:
    """``into`` with the results of a retry of targets ``index`` folded in (a new result; ``into``
    is left as it was): costs add, the better answer wins."""
    better = other.success | (other.pos_err < into.pos_err[index])
    chosen = index[better]
    changes: dict[str, Any] = {}
    for name in ("iterations", "fk_evals", "jac_evals"):
        changes[name] = getattr(into, name).index_add(0, index, getattr(other, name))
    for name in ("q", "pos_err", "rot_err", "success"):
        changes[name] = getattr(into, name).index_copy(0, chosen, getattr(other, name)[better])
    return replace(into, **changes)
