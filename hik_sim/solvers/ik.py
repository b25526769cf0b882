"""IK solvers behind one interface, the :class:`IKSolver` protocol: a ``chain`` and
``solve(target_pos, target_quat, q_init=None) → IKResult`` (an immutable :class:`IKResult`).
Solvers with a fast single-pose entry also satisfy :class:`SingleTargetSolver` (``solve_one``).
:func:`hik_sim.solvers.registry.make_solver` builds any of them from a name.

- :class:`NeuralIK` — a trained network, no refinement.
- :class:`LMRefiner` — batched damped least squares (Levenberg–Marquardt) in float64 with the
  analytic Jacobian of :class:`~hik_sim.kinematics.chain.Chain`: Marquardt-scaled adaptive damping per
  target (from 1e-5 for a start already within 5 mm & 2°, else 1e-3), steps bounded at active joint
  limits (then projected), per-target early exit on convergence or on a stall, and per-target counts
  of FK and Jacobian evaluations (the Jacobian only where a step starts).
- :class:`MultistartIK` — the hybrid-IK paper's Conventional-Multistart-N: LM from random seeds,
  round after round, for the targets not yet converged, up to N seeds.
- :class:`HybridIK` — the network's answer (and ``q_init`` when given, for continuity while
  tracking) seeds LM; targets it leaves short of exact (a local minimum, often at a joint limit)
  get restarts — the network's other answers when it has several hypotheses, then random
  configurations — so its success is never below multistart's with as many restarts.
- :class:`SingleTargetIK` — one target a call on MuJoCo's C kinematics (network seed → LM): the
  control-rate path, with ``solve_one`` for a single pose.
- :class:`DmControlIK` — dm_control's ``qpos_from_site_pose``, as dm_control ships it.

Targets are poses of the end-effector in the chain's base frame: positions (B, 3) [m] and
quaternions (B, 4) wxyz. Non-unit quaternions are normalised; NaN/inf, zero quaternions and wrong
shapes raise :class:`~hik_sim.errors.HikError`. Every returned configuration lies inside the joint
limits, and an unreachable target returns ``success=False`` with the best configuration found.

An empty batch (B = 0) returns an empty :class:`IKResult` (``q`` of shape (0, n)), as an empty
array would. A network must belong to the chain it is paired with (same joints and limits, same
URDF where the network knows its URDF), else :class:`~hik_sim.errors.SolverError`.

The residual is 6-D: the position error [m] and the rotation error as an axis-angle vector
[rad], weighted by ``rotation_weight`` [m/rad] so that both are comparable in length.

Random restarts draw from :func:`restart_rng`, a stream that can never be the one that made the
targets (see there), so no solver's success depends on replaying its targets' configurations. The
hybrid solvers draw each target's restarts from its own stream (:class:`TargetStreams`): a target's
answer does not depend on the other targets of its batch.
"""

from __future__ import annotations

import functools
import math
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Callable, NamedTuple, Protocol, runtime_checkable

import numpy as np
import torch

from hik_sim.learning.data import JointSelection
from hik_sim.errors import HikError, SolverError
from hik_sim.kinematics.chain import Chain, Pose
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.rotations import position_error, quaternion_multiply, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry
from hik_sim.kinematics.tolerances import EXACT, REPORT_TOLERANCES, Tolerance
from hik_sim.learning.network import MAX_TARGET_DISTANCE, IKNetwork, _as_real_tensor, as_targets
from hik_sim.solvers.pose_table import TABLE_SIZE, PoseTable
from hik_sim.solvers.single_target import (CLOSE_DAMPING, STALL_ITERATIONS, STALL_PROGRESS, LMAnswer, check_close_damping, check_stall,
                                           close_arguments)

__all__ = ["IKResult", "IKSolver", "SingleTargetSolver", "Tolerance",
           "NeuralIK", "LMRefiner", "LMRun", "MultistartIK", "TableSeededIK", "HybridIK", "SingleTargetIK", "DmControlIK", "check_targets",
           "check_network_fits", "restart_rng", "TargetStreams", "RESTART_STREAM", "rotation_residual", "REPORT_TOLERANCES", "RESTARTS",
           "SINGLE_TARGET_RESTARTS", "DISTINCT_SEEDS", "TABLE_SEEDS", "head_order", "first_good_answers", "HEAD_ORDER_SAMPLES"]

TABLE_SEEDS = 4
"""How many of its pose table's nearest configurations :class:`HybridIK` runs LM from for a target its first seed leaves
short of exact (:class:`~hik_sim.solvers.pose_table.PoseTable`)."""

RESTART_STREAM = 0x1C5EED
"""The spawn key that sets solvers' random restarts apart from every target stream (see :func:`restart_rng`)."""


def restart_rng(seed: int) -> np.random.Generator:
    """The random stream of a solver's restarts: numpy's PCG64 on ``SeedSequence(seed, spawn_key=(RESTART_STREAM,))``.

    Targets and training data come from torch's Mersenne Twister seeded with the plain integer
    (:func:`~hik_sim.learning.data.make_eval_set`, :class:`~hik_sim.learning.data.FKStream`), and the environments'
    goals from PCG64 on ``SeedSequence(seed)`` (gymnasium's ``np_random``). This stream is another
    generator than the first and, through its spawn key, another entropy pool than the second, so
    whatever the two seeds, restarts never replay the configurations that made the targets (with
    one seed for both, they did: multistart then "solved" every target exactly at its first try).

    Args:
        seed: the solver's seed (any non-negative integer).

    Returns:
        A fresh generator.
    """
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(RESTART_STREAM,)))


_GOLDEN = np.uint64(0x9E3779B97F4A7C15)


def _splitmix64(x: np.ndarray) -> np.ndarray:
    """SplitMix64's finaliser on uint64 arrays (wrapping arithmetic): a well-mixed 64-bit hash of each value."""
    z = x + _GOLDEN
    z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return z ^ (z >> np.uint64(31))


class TargetStreams:
    """Random restart configurations drawn per target: a target's k-th random seed depends on the solver's seed, the
    target pose's exact values (float64 bits) and k only, never on the other targets of the batch or their order, so a
    target solved alone gets the answer it gets in any batch, and copies of one target get the same answer.

    A counter-based stream (SplitMix64 of the seed, the pose's bits, the draw and the joint), vectorised over targets;
    its seed space is set apart from the targets' streams like :func:`restart_rng`'s (``RESTART_STREAM``).

    Args:
        seed: the solver's seed (any non-negative integer).
    """

    def __init__(self, seed: int) -> None:
        self.key = _splitmix64(np.array([seed ^ RESTART_STREAM], dtype=np.uint64))[0]

    def target_keys(self, pos: torch.Tensor, quat: torch.Tensor) -> np.ndarray:
        """(B,) uint64 keys of targets (B, 3) [m], (B, 4) wxyz: their float64 bits hashed with the seed."""
        words = np.ascontiguousarray(torch.cat((pos, quat), dim=1).detach().double().cpu().numpy()).view(np.uint64)
        key = np.full(words.shape[0], self.key, dtype=np.uint64)
        for column in words.T:
            key = _splitmix64(key ^ column)
        return key

    @staticmethod
    def uniform(chain: Chain, keys: np.ndarray, first_draw: np.ndarray, count: int) -> torch.Tensor:
        """(b, count, n) float64 configurations uniform inside the joint limits: draws ``first_draw`` (b,) … + count − 1
        of the targets with ``keys`` (b,)."""
        lower, upper = (np.asarray(v, dtype=np.float64) for v in (chain.robot.lower, chain.robot.upper))
        draw = first_draw.astype(np.uint64)[:, None, None] + np.arange(count, dtype=np.uint64)[None, :, None]
        cell = draw * np.uint64(chain.dof) + np.arange(chain.dof, dtype=np.uint64)[None, None, :] + np.uint64(1)
        bits = _splitmix64(keys[:, None, None] ^ _splitmix64(cell * _GOLDEN))
        unit = (bits >> np.uint64(11)).astype(np.float64) * 2.0**-53
        return torch.from_numpy(lower + (upper - lower) * unit)


def _random_configurations(chain: Chain, count: int, rng: np.random.Generator) -> torch.Tensor:
    """(count, n) float64 configurations uniform inside the joint limits."""
    lower, upper = (np.asarray(v, dtype=np.float64) for v in (chain.robot.lower, chain.robot.upper))
    return torch.from_numpy(rng.uniform(lower, upper, size=(count, chain.dof)))


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


CLOSED_LOOP_CORRECTIONS = 5
"""Goal-shift corrections of the ``closed_loop`` policy (:class:`NeuralIK`): on the shipped networks
most of the gain comes in the first 1–3 (benchmarks/closed_loop.py, docs/networks.md)."""
CLOSED_LOOP_BRANCHES = 1
"""Answers the ``closed_loop`` policy corrects (:class:`NeuralIK` ``branches``): the best one
(benchmarks/closed_loop.py measures all of a network's answers beside it)."""
CLOSED_LOOP_NEAREST_FIRST = True
"""The ``closed_loop`` policy follows the answers nearest its last target first (:class:`NeuralIK`
``nearest_first``): no swings between solution branches while tracking."""
CLOSED_LOOP_FIRST_JOINT_TURNS = True
"""The ``closed_loop`` policy asks again, turned about the first joint, for the targets its plain
answers miss (:class:`NeuralIK` ``first_joint_turns``, :attr:`FirstJointSymmetry.default_turns
<hik_sim.kinematics.symmetry.FirstJointSymmetry.default_turns>`): session 14, docs/networks.md. Not when
every network has ``canonical_turn``: those answer a turned pose with their own answer turned."""
_OUTSIDE = 1e6
"""Added to the score of an answer outside the tolerance when ranking (scores stay below 10⁴: a few
metres over 5 mm, π over 2°), so that any answer within the tolerance ranks first."""


class _Landed(NamedTuple):
    """A network's H answers for B targets and where they land."""

    answers: torch.Tensor  # (B, H, n) [rad, m]
    pos: torch.Tensor  # (B, H, 3) [m]
    quat: torch.Tensor  # (B, H, 4) wxyz
    score: torch.Tensor  # (B, H) position / tolerance + rotation / tolerance
    met: torch.Tensor  # (B, H) within the tolerance

    def rows(self, index: torch.Tensor) -> "_Landed":
        """The targets ``index`` (B',) only."""
        return _Landed(*(field[index] for field in self))


class NeuralIK:
    """A trained network's answer, without any least-squares solver; optionally closed on its own error.

    With ``corrections`` = 0 this is the network alone (open loop): its chosen answer. With
    ``corrections`` = K > 0 the network closes the loop on the error of its own answer, still
    without a least-squares solver: FK says where an answer lands, and the network is asked again
    for a goal shifted by the remaining error (position: goal + (target − reached); orientation:
    the residual rotation from the reached to the target orientation applied to the goal), K times.
    Where the network's error varies slowly over the workspace, a few corrections cancel most of it.

    Each correction follows one answer: the same output head of a network with H answers, so the
    same solution branch. One head's error varies slowly with the goal; which head is best does
    not (it jumps where two answers are equally good), so re-choosing among the answers at every
    correction can undo the last correction. The ``branches`` best answers of the open-loop call
    are each corrected so, and the best answer seen over all of them (by position / tolerance +
    rotation / tolerance, an answer within the tolerance before any other) is kept; a target stops
    at the first correction round that brings one within the tolerance, so a correction can only help.

    With ``nearest_first`` and a ``q_init`` (a controller's last target), a network with several
    answers follows its answers in the order of their distance from ``q_init`` instead, each alone
    (its K corrections), and keeps the first that meets the tolerance: continuity, as
    :class:`HybridIK`'s ``q_init`` seed gives it. The best answer is the wrong one to follow while
    tracking: where two answers are about equally good, which is best changes from one control
    step to the next and the commanded joints swing between solution branches. Only when none of
    the answers meets the tolerance does the best seen win. Without ``q_init`` nothing changes.

    With ``first_joint_turns`` (α₁, α₂, …), a target none of whose answers met the tolerance after
    their corrections is asked again, turned: the networks answer for the pose moved by −α about the
    chain's first joint axis (:class:`~hik_sim.kinematics.symmetry.FirstJointSymmetry`), and α is
    added back to each answer's first joint, an exact symmetry of every serial chain. A pose that
    needs the first joint near a limit, where a network's answers saturate, is so asked about one
    whose first joint sits inside the range. The turned answers are ranked by FK and the best
    ``branches`` of them corrected (each correction turned the same way; not nearest ``q_init``
    first: a fallback, it follows the best), one α after another until one meets the tolerance;
    the best seen over all of them wins. Only the targets the plain answers miss pay.

    ``fk_evals`` counts every FK: for the open-loop answer, the H that choose among a network's
    answers (none with one answer); with corrections, one for every answer at the start (which
    ranks them and says where each lands), then one per followed answer per correction, and the
    same again for every turn a target is asked.

    Args:
        network: the trained :class:`~hik_sim.learning.network.IKNetwork`.
        chain: the robot's chain (for the corrections and for reporting errors).
        tolerance: success criterion.
        corrections: K, goal-shift corrections per target (0: the network alone).
        branches: how many of the network's answers, the best first, are each corrected (at most
            its H answers; more is taken as H); not used for a ``q_init`` with ``nearest_first``.
        nearest_first: with ``q_init``, follow the answers nearest it first (above).
        extra_networks: further trained networks of the same chain whose answers join the first
            network's (an ensemble: H is then the sum of their answers; all are ranked by FK,
            followed and corrected alike). The ``closed_loop`` policy adds the robot's one-answer
            HarmoAtt-IK to its four-answer network: where all four answers fail together (TALOS's
            figure-eight), the other network's answer often does not.
        first_joint_turns: α [rad, or m for a prismatic first joint] of the turned queries, in the
            order they are tried (above); the ``closed_loop`` policy passes
            :attr:`~hik_sim.kinematics.symmetry.FirstJointSymmetry.default_turns`.

    Raises:
        SolverError: the network was made for another robot, ``corrections`` < 0, ``branches`` < 1
            or a turn that is not a finite non-zero number.
    """

    def __init__(self, network: IKNetwork, chain: Chain, tolerance: Tolerance | None = None, corrections: int = 0,
                 branches: int = 1, nearest_first: bool = False, extra_networks: Sequence[IKNetwork] = (),
                 first_joint_turns: Sequence[float] = ()) -> None:
        self.networks = (network, *extra_networks)
        for each in self.networks:
            check_network_fits(each, chain)
        if corrections < 0:
            raise SolverError(f"corrections must be >= 0, got {corrections}")
        if branches < 1:
            raise SolverError(f"branches must be >= 1 (how many of the network's answers to correct), got {branches}")
        turns = tuple(first_joint_turns)
        if not all(isinstance(a, (int, float)) and math.isfinite(a) and a != 0 for a in turns):
            raise SolverError(f"first_joint_turns must be finite non-zero numbers [rad, or m], got {turns}")
        self.first_joint_turns = tuple(float(a) for a in turns)
        self._symmetry = FirstJointSymmetry(chain)
        self.network, self.chain, self.tolerance, self.corrections = network, chain, tolerance or Tolerance(), corrections
        self.hypotheses = sum(each.hypotheses for each in self.networks)
        """H: the answers per target, all networks together."""
        # answer h of the H is answer `local` of network `owner`: a correction asks only that network again
        self._owners = [(owner, local) for owner, each in enumerate(self.networks) for local in range(each.hypotheses)]
        self._owner_of, self._local_of = (torch.tensor(column) for column in zip(*self._owners))  # (H,) each, for tensors of heads
        self.branches, self.nearest_first = min(branches, self.hypotheses), nearest_first
        self._turns = chain.turns
        self._limits = tuple(limit.numpy() for limit in chain.limits(torch.float64))  # (n,), (n,) for the single-target path
        self._fast: Any = None  # FastIKNetworks and MuJoCo FK for one target a call, built on the first such call
        self._single_fk: Any = None

    def _answer(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        return self.chain.clamp(self.network.solve(pos, quat).double().cpu())

    def _candidates(self, pos: torch.Tensor, quat: torch.Tensor, turn: float = 0.0,
                    networks: Sequence[IKNetwork] | None = None) -> torch.Tensor:
        """All networks' answers (B, H, n) for targets (B, 3), (B, 4), inside the limits, network after network in head order
        (of ``networks`` only, if given); with a ``turn`` α, asked for the targets moved by −α about the first joint, α
        added back to its answers."""
        if turn:
            pos, quat = self._symmetry.move(pos, quat, -turn)
        answers = torch.cat([each.candidates(pos, quat).double().cpu() for each in networks or self.networks], dim=1)
        if turn:
            answers[..., 0] += turn
        return self.chain.clamp(answers)

    def _answers_of_heads(self, pos: torch.Tensor, quat: torch.Tensor, heads: torch.Tensor, turn: float,
                          ) -> tuple[torch.Tensor, torch.Tensor]:
        """Answer ``heads[i]`` (of the H, :meth:`_candidates`' order) for each goal (b, 3), (b, 4), asked only of the network
        that owns it, turned as :meth:`_candidates` asks: the answers (b, n), inside the limits, and the FK those networks
        spent on their own (b,) (:meth:`~hik_sim.learning.network.IKNetwork.facing_fk`)."""
        owners, locals_ = self._owner_of[heads], self._local_of[heads]
        answers = torch.empty(pos.shape[0], self.chain.dof, dtype=torch.float64)
        own = torch.zeros(pos.shape[0], dtype=torch.int64)
        for owner, network in enumerate(self.networks):
            mine = torch.nonzero(owners == owner).flatten()
            if mine.numel():
                asked = self._candidates(pos[mine], quat[mine], turn, (network,))
                answers[mine] = asked[torch.arange(mine.numel()), locals_[mine]]
                own[mine] = self._facing_fk(pos[mine], quat[mine], turn, (network,))
        return answers, own

    def _facing_fk(self, pos: torch.Tensor, quat: torch.Tensor, turn: float = 0.0,
                   networks: Sequence[IKNetwork] | None = None) -> torch.Tensor:
        """(B,) the FK the networks (``networks`` only, if given) spend on their own answering :meth:`_candidates` for
        targets (B, 3), (B, 4) (:meth:`~hik_sim.learning.network.IKNetwork.facing_fk`), asked as it asks them."""
        if turn:
            pos = self._symmetry.move(pos, quat, -turn)[0]
        return sum((each.facing_fk(pos) for each in networks or self.networks), torch.zeros(pos.shape[0], dtype=torch.int64))

    @property
    def _choice_fk(self) -> int:
        """FK evaluations one network call spends choosing among its answers (H for H > 1 answers, else 0)."""
        return self.hypotheses if self.hypotheses > 1 else 0

    def _score(self, pos_err: torch.Tensor, rot_err: torch.Tensor) -> torch.Tensor:
        return pos_err / self.tolerance.position + rot_err / self.tolerance.rotation

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Network answers (B, n) for targets (B, 3), (B, 4); ``q_init`` (B, n) only orders the answers
        of a several-answer network with ``nearest_first`` (a network has no starting point)."""
        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        if q_init is not None:
            q_init = _check_q_init(q_init, pos.shape[0], self.chain.dof)
        nearest = q_init if self.nearest_first and self.hypotheses > 1 else None
        if pos.shape[0] == 1 and self._fast_path():
            return self._solve_one(pos, quat, None if nearest is None else nearest[0].numpy(), start)
        zeros = torch.zeros(pos.shape[0], dtype=torch.int64)
        if (self.corrections == 0 and nearest is None and len(self.networks) == 1 and not self.first_joint_turns) \
                or pos.shape[0] == 0:
            q = self._answer(pos, quat)
            elapsed = time.perf_counter() - start  # the reporting FK below is not the network's cost
            fk_evals = zeros + self._choice_fk + self.network.facing_fk(pos)
            result = _result(self.chain, q, pos, quat, self.tolerance, zeros, fk_evals, zeros.clone(), start)
            return replace(result, wall_time=elapsed)
        best_q, fk_evals = self._corrected(pos, quat, nearest)
        elapsed = time.perf_counter() - start  # the corrections' FK counts; the reporting FK below does not
        result = _result(self.chain, best_q, pos, quat, self.tolerance, zeros, fk_evals, zeros.clone(), start)
        return replace(result, wall_time=elapsed)

    def _distance(self, answers: np.ndarray | torch.Tensor, q_init: np.ndarray | torch.Tensor) -> Any:
        """Joint-space distance (..., H) of answers (..., H, n) from ``q_init`` (..., n) [rad, m]; on a
        joint of more than a turn's range, the nearest copy whole turns away counts (the same pose)."""
        diff = answers - q_init[..., None, :]
        if isinstance(diff, torch.Tensor):
            diff = torch.where(torch.as_tensor(self._turns), torch.remainder(diff + math.pi, 2 * math.pi) - math.pi, diff)
        else:
            diff = np.where(self._turns, np.remainder(diff + math.pi, 2 * math.pi) - math.pi, diff)
        return (diff ** 2).sum(-1) ** 0.5

    def _corrected(self, pos: torch.Tensor, quat: torch.Tensor, nearest: torch.Tensor | None = None,
                   ) -> tuple[torch.Tensor, torch.Tensor]:
        """The best corrected answers (B, n) of targets (B, 3), (B, 4), and the FK each spent (B,): the
        plain answers, then, for the targets none of them brought within the tolerance, each turn's."""
        best_q, best_key, done, fk_evals = self._stage(pos, quat, nearest, 0.0)
        for turn in self.first_joint_turns:
            index = (~done).nonzero().flatten()
            if index.numel() == 0:
                break
            q, key, met, spent = self._stage(pos[index], quat[index], None, turn)  # the best turned answers first
            fk_evals[index] += spent
            take = key < best_key[index]
            best_q[index[take]], best_key[index[take]] = q[take], key[take]
            done[index[met]] = True
        return best_q, fk_evals

    def _stage(self, pos: torch.Tensor, quat: torch.Tensor, nearest: torch.Tensor | None, turn: float,
               ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """One query of targets (B, 3), (B, 4), turned by ``turn`` (0: plain), its answers corrected: the
        best answer (B, n), its :meth:`_key` (B,), whether it meets the tolerance (B,) and the FK spent (B,);
        with ``nearest`` (B, n), the answers nearest it first, each followed alone, until one meets."""
        batch, hypotheses, dof = pos.shape[0], self.hypotheses, self.chain.dof
        answers = self._candidates(pos, quat, turn)  # (B, H, n), head order
        reached = self.chain.fk(answers.reshape(batch * hypotheses, dof))
        pos_err = position_error(reached.pos, pos.repeat_interleave(hypotheses, 0)).view(batch, hypotheses)
        rot_err = rotation_error(reached.quat, quat.repeat_interleave(hypotheses, 0)).view(batch, hypotheses)
        landed = _Landed(answers, reached.pos.view(batch, hypotheses, 3), reached.quat.view(batch, hypotheses, 4),
                         self._score(pos_err, rot_err), self.tolerance.met(pos_err, rot_err))
        fk_evals = torch.full((batch,), hypotheses, dtype=torch.int64) + self._facing_fk(pos, quat, turn)
        if nearest is None:
            heads = landed.score.argsort(dim=1, stable=True)[:, :self.branches]  # (B, F): the answers followed, best first
            best_q, best_key, done, spent = self._follow(pos, quat, landed, heads, turn)
            return best_q, best_key, done, fk_evals + spent
        order = self._distance(answers, nearest).argsort(dim=1, stable=True)  # (B, H): nearest first
        best_q, best_key = answers[:, 0].clone(), torch.full((batch,), math.inf, dtype=torch.float64)
        done = torch.zeros(batch, dtype=torch.bool)
        for rank in range(hypotheses):
            index = (~done).nonzero().flatten()
            if index.numel() == 0:
                break
            q, key, met, spent = self._follow(pos[index], quat[index], landed.rows(index), order[index, rank:rank + 1], turn)
            fk_evals[index] += spent
            take = met | (key < best_key[index])
            best_q[index[take]], best_key[index[take]] = q[take], key[take]
            done[index[met]] = True
        return best_q, best_key, done, fk_evals

    def _key(self, score: Any, met: Any) -> Any:
        """Ranking of answers, lower is better: any answer within the tolerance before any other,
        then by score (an answer 0.1 mm and 2.5° off scores below one 4.9 mm and 1.9° off)."""
        if isinstance(score, torch.Tensor):
            return score + _OUTSIDE * (~met).to(score.dtype)
        return score if met else score + _OUTSIDE

    def _follow(self, pos: torch.Tensor, quat: torch.Tensor, landed: "_Landed", heads: torch.Tensor, turn: float = 0.0,
                ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
        """Correct answers ``heads`` (B, F) of each target (B, 3), (B, 4) side by side, round after
        round, until one of a target's meets the tolerance: its best answer (B, n), that answer's
        :meth:`_key` (B,), whether it meets the tolerance (B,) and the FK the corrections spent (B,).
        Each correction asks as the answers were asked (``turn``, :meth:`_candidates`)."""
        batch, followed, dof = heads.shape[0], heads.shape[1], self.chain.dof
        # one row per (target, followed answer), target-major: its head, goal, answer and where it lands
        rows = torch.arange(batch).repeat_interleave(followed)
        head = heads.flatten()
        q = landed.answers[rows, head].clone()
        reached_pos, reached_quat = landed.pos[rows, head].clone(), landed.quat[rows, head].clone()
        goal_pos, goal_quat = pos[rows].clone(), quat[rows].clone()
        met = landed.met[rows, head]
        best_key, first = self._key(landed.score[rows, head], met).view(batch, followed).min(dim=1)
        best_q = q.view(batch, followed, dof)[torch.arange(batch), first].clone()
        done = met.view(batch, followed).any(dim=1)
        spent = torch.zeros(batch, dtype=torch.int64)
        for _ in range(self.corrections):
            index = (~done[rows]).nonzero().flatten()
            if index.numel() == 0:
                break
            target_pos, target_quat = pos[rows[index]], quat[rows[index]]
            goal_pos[index] = goal_pos[index] + (target_pos - reached_pos[index])
            residual = quaternion_multiply(target_quat, reached_quat[index] * reached_quat.new_tensor([1.0, -1.0, -1.0, -1.0]))
            shifted = quaternion_multiply(residual, goal_quat[index])
            goal_quat[index] = shifted / shifted.norm(dim=-1, keepdim=True)
            q[index], own = self._answers_of_heads(goal_pos[index], goal_quat[index], head[index], turn)
            now = self.chain.fk(q[index])
            reached_pos[index], reached_quat[index] = now.pos, now.quat
            spent.index_add_(0, rows[index], 1 + own)
            pos_now, rot_now = position_error(now.pos, target_pos), rotation_error(now.quat, target_quat)
            met_now = self.tolerance.met(pos_now, rot_now)
            round_key = torch.full((batch * followed,), math.inf, dtype=torch.float64)
            round_key[index] = self._key(self._score(pos_now, rot_now), met_now)
            round_best, branch = round_key.view(batch, followed).min(dim=1)
            better = round_best < best_key
            best_key[better] = round_best[better]
            best_q[better] = q.view(batch, followed, dof)[better, branch[better]]
            met_round = torch.zeros(batch * followed, dtype=torch.bool)
            met_round[index] = met_now
            done |= met_round.view(batch, followed).any(dim=1)
        return best_q, best_key, done, spent

    def _fast_path(self) -> bool:
        """Build the batch-1 path once: :class:`~hik_sim.learning.fast_network.FastIKNetwork` (tens of µs a pose,
        where torch at batch 1 costs about a millisecond) and MuJoCo's FK of one configuration.
        False for a network the fast forward pass does not cover (torch then answers)."""
        if self._fast is None:
            import mujoco

            from hik_sim.learning.fast_network import FastIKNetwork
            from hik_sim.solvers.single_target import SingleTargetKinematics

            self._mujoco = mujoco

            try:
                self._fast = [FastIKNetwork.from_network(each) for each in self.networks]
            except HikError:
                self._fast = False
                return False
            needs_fk = self.corrections or self.nearest_first or len(self.networks) > 1 or self.first_joint_turns
            self._single_fk = SingleTargetKinematics(self.chain.robot) if needs_fk else None
        return self._fast is not False

    def _solve_one(self, pos: torch.Tensor, quat: torch.Tensor, nearest: np.ndarray | None, start: float) -> IKResult:
        """:meth:`solve` for one target (1, 3), (1, 4) without torch in the loop: the same answers (to
        the fast forward pass's 1e-5) and the same FK count as the batched path."""
        target_pos, target_quat = pos[0].numpy(), quat[0].numpy()
        if self.corrections or nearest is not None or len(self._fast) > 1 or self.first_joint_turns:
            q, fk_evals = self._corrected_one(target_pos, target_quat, nearest)
        else:
            q = np.clip(self._fast[0].solve(target_pos, target_quat), *self._limits)
            fk_evals = self._choice_fk + self._fast[0].facing_fk(target_pos, target_quat)
        elapsed = time.perf_counter() - start  # the reporting FK below is not the solver's cost
        one = torch.ones(1, dtype=torch.int64)
        result = _result(self.chain, torch.from_numpy(np.array(q, dtype=np.float64))[None], pos, quat, self.tolerance, 0 * one,
                         fk_evals * one, 0 * one, start)
        return replace(result, wall_time=elapsed)

    def _corrected_one(self, target_pos: np.ndarray, target_quat: np.ndarray, nearest: np.ndarray | None = None,
                       ) -> tuple[np.ndarray, int]:
        """:meth:`_corrected` for one target (3,), (4,): the best corrected answer (n,) and the FK it spent."""
        best_q, best_key, met, fk_evals = self._stage_one(target_pos, target_quat, nearest, 0.0)
        for turn in self.first_joint_turns:
            if met:
                break
            q, key, met, spent = self._stage_one(target_pos, target_quat, None, turn)  # the best turned answers first
            fk_evals += spent
            if key < best_key:
                best_q, best_key = q, key
        return best_q, fk_evals

    def _stage_one(self, target_pos: np.ndarray, target_quat: np.ndarray, nearest: np.ndarray | None, turn: float,
                   ) -> tuple[np.ndarray, float, bool, int]:
        """:meth:`_stage` for one target (3,), (4,): the best answer (n,), its key, whether it meets and the FK spent."""
        answers = self._fast_candidates(target_pos, target_quat, turn)  # (H, n), head order
        landed = [self._land(q, target_pos, target_quat) for q in answers]
        fk_evals = len(answers) + self._fast_facing_fk(target_pos, target_quat, turn)
        if nearest is None:
            heads = sorted(range(len(answers)), key=lambda h: landed[h][0])[:self.branches]  # stable, as argsort
            best_q, best_key, met, spent = self._follow_one(target_pos, target_quat, answers, landed, heads, turn)
            return best_q, best_key, met, fk_evals + spent
        best_q, best_key, met = answers[0], math.inf, False
        for head in np.argsort(self._distance(answers, nearest), kind="stable"):  # nearest first
            q, key, met, spent = self._follow_one(target_pos, target_quat, answers, landed, [int(head)], turn)
            fk_evals += spent
            if met or key < best_key:
                best_q, best_key = q, key
            if met:
                break
        return best_q, best_key, met, fk_evals

    def _fast_candidates(self, target_pos: np.ndarray, target_quat: np.ndarray, turn: float = 0.0,
                         networks: Sequence[Any] | None = None) -> np.ndarray:
        """:meth:`_candidates` for one target (3,), (4,): (H, n); of ``networks`` (fast networks) only, if given."""
        if turn:
            target_pos, target_quat = self._symmetry.move_one(target_pos, target_quat, -turn)
        answers = np.concatenate([np.atleast_2d(fast.candidates(target_pos, target_quat))
                                  for fast in (self._fast if networks is None else networks)])
        answers[:, 0] += turn
        return np.clip(answers, *self._limits)

    def _fast_facing_fk(self, target_pos: np.ndarray, target_quat: np.ndarray, turn: float = 0.0,
                        networks: Sequence[Any] | None = None) -> int:
        """:meth:`_facing_fk` of :meth:`_fast_candidates` for one target (3,), (4,) (of ``networks`` only, if given)."""
        if turn:
            target_pos, target_quat = self._symmetry.move_one(target_pos, target_quat, -turn)
        return sum(fast.facing_fk(target_pos, target_quat) for fast in (self._fast if networks is None else networks))

    def _fast_answer(self, head: int, goal_pos: np.ndarray, goal_quat: np.ndarray, turn: float) -> np.ndarray:
        """Answer ``head`` (n,) of the H for goal (3,), (4,), asked only of the network that owns it, turned as
        :meth:`_fast_candidates`."""
        owner, local = self._owners[head]
        return self._fast_candidates(goal_pos, goal_quat, turn, (self._fast[owner],))[local]

    def _land(self, q: np.ndarray, target_pos: np.ndarray, target_quat: np.ndarray,
              ) -> tuple[float, bool, np.ndarray, np.ndarray]:
        """Where answer q (n,) lands: its score, whether it is within the tolerance, its position (3,)
        and the rotation still to go from it to the target (4,), world frame."""
        reached = self._single_fk.fk(q)
        conjugate, residual = np.empty(4), np.empty(4)
        self._mujoco.mju_negQuat(conjugate, reached.quat)
        self._mujoco.mju_mulQuat(residual, target_quat, conjugate)
        pos_err = float(np.linalg.norm(target_pos - reached.pos))
        rot_err = 2 * math.atan2(float(np.linalg.norm(residual[1:])), abs(float(residual[0])))
        score = pos_err / self.tolerance.position + rot_err / self.tolerance.rotation
        return score, self.tolerance.met(pos_err, rot_err), reached.pos.copy(), residual

    def _follow_one(self, target_pos: np.ndarray, target_quat: np.ndarray, answers: np.ndarray,
                    landed: list[tuple[float, bool, np.ndarray, np.ndarray]], heads: list[int], turn: float = 0.0,
                    ) -> tuple[np.ndarray, float, bool, int]:
        """:meth:`_follow` for one target: its best answer (n,), that answer's key, whether it meets
        the tolerance and the FK the corrections spent."""
        keys = [self._key(landed[h][0], landed[h][1]) for h in heads]
        first = int(np.argmin(keys))
        best_q, best_key = answers[heads[first]], keys[first]
        done = any(landed[h][1] for h in heads)
        branches = [[head, target_pos.copy(), target_quat.copy(), landed[head][2], landed[head][3]] for head in heads]
        shifted = np.empty(4)
        spent = 0
        for _ in range(self.corrections):
            if done:
                break
            for branch in branches:  # every followed answer once a round, as the batched path does
                head, goal_pos, goal_quat, reached_pos, residual = branch
                goal_pos = goal_pos + (target_pos - reached_pos)
                self._mujoco.mju_mulQuat(shifted, residual, goal_quat)
                goal_quat = shifted / np.linalg.norm(shifted)
                q = self._fast_answer(head, goal_pos, goal_quat, turn)
                score, met, reached_pos, residual = self._land(q, target_pos, target_quat)
                spent += 1 + self._fast_facing_fk(goal_pos, goal_quat, turn, (self._fast[self._owners[head][0]],))
                branch[1:] = [goal_pos, goal_quat, reached_pos, residual]
                key = self._key(score, met)
                if key < best_key:
                    best_q, best_key = q, key
                done = done or met
        return best_q, best_key, done, spent


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
        tolerance: success criterion (reported).
        stop: convergence criterion: a target stops iterating once within it (default 1 µm and
            1e-6 rad, far inside the success criterion, so successes are exact).
        max_iterations: iteration cap per target.
        stall_iterations: a target also stops once its cost fell by less than ``stall_progress``
            (a fraction) over the last ``stall_iterations`` iterations: a local minimum, where a
            restart spends evaluations better (0: no stall test).
        stall_progress: see ``stall_iterations``.
        rotation_weight: weight of the rotation residual [m/rad].
        damping: initial Marquardt damping λ.
        close_damping: initial λ of a start already within the success tolerance (5 mm & 2°: a network's good
            answer, the joints of the step before while tracking; :data:`~hik_sim.solvers.single_target.CLOSE_DAMPING`;
            None: every start begins at ``damping``).
        selection: joints held fixed (they do not move).
        backend: ``numba`` (each target's loop compiled, :func:`hik_sim.solvers._lm_numba.lm_refine_batch`,
            the targets in parallel over the CPU's cores; needs the ``fast`` extra), ``torch`` (the
            batch as tensors, one iteration for all active targets at a time) or ``auto``: numba
            when installed. The same method and counts; the answers agree to rounding.

    Attributes:
        backend: the backend in use.
    """

    def __init__(self, chain: Chain, tolerance: Tolerance | None = None, stop: Tolerance | None = None,
                 max_iterations: int = 30, rotation_weight: float = 0.2, damping: float = 1e-3,
                 selection: JointSelection | None = None, backend: str = "auto", stall_iterations: int = STALL_ITERATIONS,
                 stall_progress: float = STALL_PROGRESS, close_damping: float | None = CLOSE_DAMPING) -> None:
        from hik_sim.learning.fast_network import numba_available

        if max_iterations < 1 or not rotation_weight > 0 or not damping > 0:
            raise SolverError("max_iterations must be >= 1 and rotation_weight, damping positive")
        if backend not in ("auto", "numba", "torch"):
            raise SolverError(f"unknown LM backend {backend!r}; backends are: auto, numba, torch")
        check_stall(stall_iterations, stall_progress)
        if backend == "numba" and not numba_available():
            raise SolverError("the numba LM backend needs numba: pip install 'hik_sim[fast]' (or use backend='torch')")
        self.backend = "numba" if backend == "numba" or (backend == "auto" and numba_available()) else "torch"
        self._geometry: np.ndarray | None = None
        self.chain = chain
        self.tolerance = tolerance or Tolerance()
        self.stop = stop or Tolerance(1e-6, 1e-6)
        self.max_iterations, self.rotation_weight, self.damping = max_iterations, rotation_weight, damping
        self.selection = selection or JointSelection(chain.joint_names, {})
        self.free = torch.tensor(self.selection.free_index)
        self.stall_iterations, self.stall_progress = stall_iterations, stall_progress
        check_close_damping(close_damping)
        self.close_damping = close_damping

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
        from hik_sim.learning.fast_network import _flat_geometry

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


class MultistartIK:
    """Conventional-Multistart-N: LM from uniformly random seeds, round by round, up to N seeds.

    Given ``q_init`` (the current joints while tracking), that is the first of the N seeds, so the
    answer stays on the current solution branch wherever that branch reaches the target.

    Two definitions (both measured in ``hik_sim.evaluation.experiments.hybrid_table``):

    - ``stop_early=True`` (default, ours): a target stops at its first start whose answer is
      within ``finish`` (exact: 0.1 mm & 0.1°, the rule of :class:`HybridIK`'s restarts too), so an
      easy target costs one LM run.
    - ``stop_early=False`` (the hybrid-IK paper's Conventional-Multistart-10, as we read it):
      every target runs all N starts and the best answer is kept; the cost is N LM runs
      whatever the target.

    Args:
        refiner: the LM refiner.
        starts: N, the largest number of seeds per target.
        seed: seed of the random starts (their stream is :func:`restart_rng`'s, never a target stream).
        stop_early: stop a target at its first start within ``finish``.
        finish: when a target needs no further start (default :data:`~hik_sim.kinematics.tolerances.EXACT`).
    """

    def __init__(self, refiner: LMRefiner, starts: int = 10, seed: int = 0, stop_early: bool = True,
                 finish: Tolerance = EXACT) -> None:
        if starts < 1:
            raise SolverError(f"starts must be at least 1, got {starts}")
        self.refiner, self.starts, self.seed, self.stop_early, self.finish = refiner, starts, seed, stop_early, finish

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Solve from ``q_init`` (B, n) when given, then from random seeds, up to N seeds per target.

        Raises:
            HikError: bad targets or ``q_init``.
        """
        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        first = None if q_init is None else _check_q_init(q_init, pos.shape[0], self.refiner.chain.dof)
        result = _restarts(self.refiner, pos, quat, first, self.starts, restart_rng(self.seed), self.stop_early, self.finish)
        return replace(result, wall_time=time.perf_counter() - start)

    @property
    def chain(self) -> Chain:
        """The refiner's chain (the :class:`IKSolver` attribute)."""
        return self.refiner.chain


def _restarts(refiner: LMRefiner, pos: torch.Tensor, quat: torch.Tensor, first: torch.Tensor | None, rounds: int,
              rng: np.random.Generator | TargetStreams, stop_early: bool = True, finish: Tolerance = EXACT,
              flips: JointFlips | None = None, facing: FirstJointSymmetry | None = None,
              evaluated: torch.Tensor | None = None, distinct: float = 0.0, added: "Sequence[_Added]" = ()) -> IKResult:
    """LM from ``first`` (B, n) or from each of ``first`` (B, S, n) in turn (or a random seed), then
    from random seeds, for the targets whose best answer is not yet within ``finish`` (every target
    when not ``stop_early``), ``rounds`` rounds in all; the best answer of each target is kept. The
    random seeds of all the remaining rounds are drawn at once for the targets left when the given
    ones are spent (``rng`` fills target by target; :class:`TargetStreams` draws each target's from its own stream) and,
    on the numba backend, run in one compiled call.

    With ``flips``, a run from one of ``first``'s seeds that ends short of ``finish`` is followed, for
    those targets, by LM from its flip about each of ``flips.triples`` in turn (extra runs, not
    rounds: the seeds stay the same; their cost is counted like any other). Runs from random seeds
    are not flipped: measured, that cost the Panda and JVRC-1 more than it saved.

    With ``facing`` (a revolute first joint's symmetry), each random seed is first turned about the
    first joint to face its target (:meth:`FirstJointSymmetry.face`; one FK a seed, counted).

    ``evaluated`` (B, S) bool: the seeds of ``first`` whose FK was spent (and counted) choosing among them
    (:func:`first_good_answers`): a run from one does not count it again.

    With ``distinct`` > 0, a seed of ``first`` within ``distinct`` (the largest joint difference, rad or m) of
    one of ``first``'s seeds before it for the same target is replaced by a random seed (not flipped): LM
    from it would most likely end where the run from the earlier one did.

    Each of ``added`` (:class:`_Added`, in order), when the rounds reach its ``at`` (``at`` of ``first``'s seeds run, or
    all of them where it has fewer; None: once they are spent), gives the targets still short of ``finish`` (indices
    (b,)) more seeds, ``seeds_for(indices)`` (a :class:`_Choice`): they run next, as ``first``'s seeds (flipped alike,
    in the same rounds), before the rest of ``first``'s and the random ones; the FK it spent is counted."""
    if first is not None and first.ndim == 2:
        first = first[:, None]
        evaluated = None if evaluated is None else evaluated[:, None]
    chain, batch = refiner.chain, pos.shape[0]
    best_q = torch.zeros(batch, chain.dof, dtype=torch.float64)
    best_pos_err = torch.full((batch,), math.inf, dtype=torch.float64)
    best_rot_err = torch.full((batch,), math.inf, dtype=torch.float64)
    solved = torch.zeros(batch, dtype=torch.bool)
    iterations = torch.zeros(batch, dtype=torch.int64)
    fk = torch.zeros(batch, dtype=torch.int64)
    jac = torch.zeros(batch, dtype=torch.int64)
    weight = refiner.rotation_weight
    pending = list(added)
    keys = rng.target_keys(pos, quat) if isinstance(rng, TargetStreams) else None
    draws = np.zeros(batch, dtype=np.int64)  # random seeds drawn so far, per target (TargetStreams)

    def splice(idx: torch.Tensor, more: _Choice, at: int) -> None:
        """``more``'s seeds (b, k, n) for targets ``idx`` into ``first`` before its seed ``at`` (absent, NaN, for the others)."""
        nonlocal first, evaluated
        assert first is not None
        fk[idx] += more.fk
        count = more.seeds.shape[1]
        block = first.new_full((batch, count, chain.dof), math.nan)
        block[idx] = more.seeds
        marks = torch.zeros(batch, count, dtype=torch.bool)
        marks[idx] = more.evaluated
        before = torch.zeros(batch, first.shape[1], dtype=torch.bool) if evaluated is None else evaluated
        first = torch.cat((first[:, :at], block, first[:, at:]), dim=1)
        evaluated = torch.cat((before[:, :at], marks, before[:, at:]), dim=1)

    def run_from(idx: torch.Tensor, seeds: torch.Tensor, seed_evaluated: torch.Tensor | None = None) -> torch.Tensor:
        """LM for targets ``idx`` from ``seeds``; keeps improvements, counts the cost; returns the run's answers."""
        run = refiner.refine(pos[idx], quat[idx], seeds, seed_evaluated)  # its errors come with it: no FK here
        improved = run.pos_err + weight * run.rot_err < best_pos_err[idx] + weight * best_rot_err[idx]
        chosen = idx[improved]
        best_q[chosen], best_pos_err[chosen], best_rot_err[chosen] = run.q[improved], run.pos_err[improved], run.rot_err[improved]
        # Exact targets are done; one that met the success tolerance in a local minimum (often
        # pinned at a joint limit) short of exact is not, and gets another seed.
        if stop_early:
            solved[idx] = finish.met(best_pos_err[idx], best_rot_err[idx])
        iterations[idx] += run.iterations
        fk[idx] += run.fk_evals
        jac[idx] += run.jac_evals
        return run.q

    def random_seeds(idx: torch.Tensor, count: int = 1) -> torch.Tensor:
        """Uniformly random seeds (b, count, n) for targets ``idx`` (b,), each faced to its target with ``facing``
        (whose FK the caller counts, for the seeds it runs)."""
        if isinstance(rng, TargetStreams):
            assert keys is not None
            at = idx.numpy()
            seeds = rng.uniform(chain, keys[at], draws[at], count).reshape(idx.numel() * count, chain.dof)
            draws[at] += count
        else:
            seeds = _random_configurations(chain, idx.numel() * count, rng)
        if facing is not None:
            seeds = facing.face(seeds, chain.fk(seeds).pos, pos[idx].repeat_interleave(count, dim=0), chain.robot.lower[0],
                                chain.robot.upper[0])
        return seeds.view(idx.numel(), count, chain.dof)

    def random_phase(idx: torch.Tensor, count: int) -> None:
        """Up to ``count`` random seeds for each of targets ``idx``, LM from one after another until the target's best
        answer is within ``finish`` (all of them when not ``stop_early``); drawn at once, so both backends use the
        same seeds; on the numba backend the whole phase runs compiled, without Python between the runs."""
        seeds = random_seeds(idx, count)
        if refiner.backend == "numba":
            best = best_q[idx].contiguous(), best_pos_err[idx].contiguous(), best_rot_err[idx].contiguous()
            runs, its, fks, jacs = refiner.restart_compiled(pos[idx], quat[idx], seeds, best, finish if stop_early else None)
            best_q[idx], best_pos_err[idx], best_rot_err[idx] = best
            if stop_early:
                solved[idx] = finish.met(best_pos_err[idx], best_rot_err[idx])
            iterations[idx] += its
            fk[idx] += fks + (runs if facing is not None else 0)
            jac[idx] += jacs
            return
        for k in range(count):
            pending = ~solved[idx]
            if not bool(pending.any()):
                break
            if facing is not None:
                fk[idx[pending]] += 1
            run_from(idx[pending], seeds[pending, k])

    for round_index in range(rounds):
        idx = torch.nonzero(~solved).flatten()
        if idx.numel() == 0:
            break
        for addition in list(pending):  # each in turn: one spliced in moves the end of ``first`` for the next
            if first is not None and round_index == (first.shape[1] if addition.at is None else min(addition.at, first.shape[1])):
                splice(idx, addition.seeds_for(idx), round_index)
                pending.remove(addition)
        given = first is not None and round_index < first.shape[1]
        if first is not None and given:  # a target whose seed this round is absent (NaN: it has fewer) idles
            idx = idx[~first[idx, round_index].isnan().any(dim=1)]
            if idx.numel() == 0:
                continue
        seed_evaluated, repeated = None, torch.zeros(idx.numel(), dtype=torch.bool)
        if first is not None and given:
            seeds = first[idx, round_index]
            seed_evaluated = None if evaluated is None else evaluated[idx, round_index]
            if distinct > 0 and round_index > 0:
                repeated = ((first[idx, :round_index] - seeds[:, None]).abs().amax(dim=-1) < distinct).any(dim=1)
                if bool(repeated.any()):
                    seeds = seeds.clone()
                    seeds[repeated] = random_seeds(idx[repeated])[:, 0]
                    if facing is not None:
                        fk[idx[repeated]] += 1
                    if seed_evaluated is not None:
                        seed_evaluated = seed_evaluated & ~repeated
        else:  # the given seeds are spent: every remaining round's random seed at once
            random_phase(idx, rounds - round_index)
            break
        reached = run_from(idx, seeds, seed_evaluated)
        if flips is None or not stop_early:
            continue
        for triple in flips.triples:
            short = ~solved[idx] & ~repeated
            if not bool(short.any()):
                break
            run_from(idx[short], flips.flip(reached[short], triple))
        for joint in flips.turns:  # a run held at the limit of a joint that spans more than a turn: the same pose a turn back
            short = ~solved[idx] & ~repeated
            pinned = short & flips.at_limit(reached, joint)
            if bool(pinned.any()):
                run_from(idx[pinned], flips.turn(reached[pinned], joint))
    return IKResult(best_q, best_pos_err, best_rot_err, refiner.tolerance.met(best_pos_err, best_rot_err), iterations, fk, jac)


HEAD_ORDER_SAMPLES = 512
"""Poses (of uniformly random configurations, drawn from :func:`restart_rng`'s stream) on which
:func:`head_order` counts how often each of a network's heads gives the best answer."""


def head_order(network: IKNetwork, samples: int = HEAD_ORDER_SAMPLES, seed: int = 0) -> tuple[int, ...]:
    """A several-answer network's heads, the one most often best first (ties: the lower head first).

    Counted on ``samples`` poses reached by uniformly random configurations of the network's chain
    (drawn from :func:`restart_rng` ``(seed)``, never a target stream), ranked as
    :meth:`~hik_sim.learning.network.IKNetwork.rank` ranks them. The order :class:`HybridIK` tries the
    answers in when it takes the first good one (``rank_all_answers=False``). One answer: ``(0,)``.
    """
    if network.hypotheses == 1:
        return (0,)
    assert network.chain is not None  # a several-answer network has one (IKNetwork checks)
    chain = network.chain
    q = network.selection.expand(network.selection.free(_random_configurations(chain, samples, restart_rng(seed))))
    pose = chain.fk(q)
    answers = network.candidates(pose.pos, pose.quat)
    best = network.rank(answers, pose.pos.to(answers), pose.quat.to(answers))[:, 0]
    counts = torch.bincount(best, minlength=network.hypotheses)
    return tuple(int(h) for h in sorted(range(network.hypotheses), key=lambda h: (-int(counts[h]), h)))


def first_good_answers(chain: Chain, answers: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor,
                       order: Sequence[int], good: Tolerance) -> tuple[torch.Tensor, torch.Tensor]:
    """A network's answers ordered for LM, choosing the first good one rather than ranking them all.

    Each target's answers are checked by FK in ``order`` (head indices) until one is within ``good``;
    that one goes first, the others follow in ``order``. A target none of whose answers is good has
    spent H FK and gets them ranked best first, as :meth:`~hik_sim.learning.network.IKNetwork.rank`
    ranks them (position error / ``good.position`` + rotation error / ``good.rotation``).

    Args:
        chain: the robot's chain.
        answers: (B, H, n) float64 answers in head order (``IKNetwork.candidates``), inside the limits.
        pos: (B, 3) target positions [m], float64.
        quat: (B, 4) target quaternions wxyz, float64.
        order: the H heads in the order to try them (:func:`head_order`).
        good: when an answer is good enough to start LM from without looking at the others.

    Returns:
        ``(seeds, fk)``: seeds (B, H, n), the one to start from first; fk (B,) int64, the FK spent.
    """
    choice = _first_good(chain, answers, pos, quat, order, good)
    return choice.seeds, choice.fk


class _Choice(NamedTuple):
    """What :func:`_first_good` returns (B targets, H answers of n joints)."""

    seeds: torch.Tensor  # (B, H, n) the answers, the one to start from first
    fk: torch.Tensor  # (B,) int64 the FK spent choosing
    found: torch.Tensor  # (B,) bool: the seed put first is good (else none of them is)
    evaluated: torch.Tensor  # (B, H) bool, in the seeds' order: the answers whose FK was spent choosing


class _Added(NamedTuple):
    """Seeds :func:`_restarts` adds during its rounds (a second network's answers, a pose table's nearest)."""

    at: int | None  # before which of the given seeds they run (None: once the given seeds are spent)
    seeds_for: Callable[[torch.Tensor], _Choice]  # the targets still short (b,) → their seeds (b, k, n) and FK spent


def _first_good(chain: Chain, answers: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor, order: Sequence[int],
                good: Tolerance, refiner: LMRefiner | None = None) -> _Choice:
    """:func:`first_good_answers`, also saying which seed is good and whose FK was spent; with a ``refiner`` on the
    numba backend, the FK runs compiled (:func:`hik_sim.solvers._lm_numba.first_good_batch`), the same choice."""
    batch, hypotheses, _ = answers.shape
    rank_in_order = torch.empty(hypotheses, dtype=torch.float64)
    rank_in_order[list(order)] = torch.arange(hypotheses, dtype=torch.float64)
    key = rank_in_order.expand(batch, hypotheses).clone()  # sort key: the order, or the score where none is good
    if refiner is not None and refiner.backend == "numba" and batch > 0:
        from hik_sim.solvers._lm_numba import first_good_batch

        score_np, fk_np, found_head = np.empty((batch, hypotheses)), np.empty(batch, dtype=np.int64), np.empty(batch, dtype=np.int64)
        first_good_batch(refiner.compiled_geometry(), np.ascontiguousarray(answers.numpy()), np.ascontiguousarray(pos.numpy()),
                         np.ascontiguousarray(quat.numpy()), np.asarray(order, dtype=np.int64), good.position, good.rotation,
                         score_np, fk_np, found_head)
        score, fk, head = torch.from_numpy(score_np), torch.from_numpy(fk_np), torch.from_numpy(found_head)
        found = head >= 0
        key[torch.nonzero(found).flatten(), head[found]] = -1.0  # first
        pending = torch.nonzero(~found).flatten()
    else:
        score = torch.full((batch, hypotheses), math.inf, dtype=torch.float64)
        fk = torch.zeros(batch, dtype=torch.int64)
        pending = torch.arange(batch)
        for head_index in order:
            if pending.numel() == 0:
                break
            rows = pending[~answers[pending, head_index].isnan().any(dim=1)]  # an absent (NaN) answer is skipped
            reached = chain.fk(answers[rows, head_index])
            fk[rows] += 1
            pos_err, rot_err = position_error(reached.pos, pos[rows]), rotation_error(reached.quat, quat[rows])
            score[rows, head_index] = pos_err / good.position + rot_err / good.rotation
            met = good.met(pos_err, rot_err)
            key[rows[met], head_index] = -1.0  # first
            pending = pending[~torch.isin(pending, rows[met])]
        found = torch.ones(batch, dtype=torch.bool)
        found[pending] = False
    key[pending] = score[pending]
    key[answers.isnan().any(dim=2)] = math.inf  # absent answers last
    index = key.argsort(dim=1, stable=True)
    return _Choice(answers.gather(1, index[:, :, None].expand_as(answers)), fk, found, score.isfinite().gather(1, index))


def _facing(chain: Chain, selection: JointSelection) -> FirstJointSymmetry | None:
    """The first joint's symmetry, to turn random restarts towards their targets; None where that joint
    is prismatic or held fixed."""
    symmetry = FirstJointSymmetry(chain)
    return symmetry if symmetry.revolute and 0 in selection.free_index else None


DISTINCT_SEEDS = 0.5
"""A network answer within this distance (the largest joint difference, rad or m) of an answer :class:`HybridIK`
already ran LM from for the same target is replaced by a random restart: on the same branch, LM from it would most
likely end where the earlier run did, short of exact. Chosen on validation targets (seeds 2026 and 2027, 5,000 each,
never a benchmark's): 0.3–0.8 rad all cut the IRB120's, the Panda's and the G1's evaluations by 8–18 % at the same
success; the other robots' answers rarely repeat (docs/benchmarks.md, session 22)."""

RESTARTS = 49
"""Restarts of :class:`HybridIK` and :class:`SingleTargetIK` after a target's first seed leaves it
short of exact (the network's other answers count). Only such targets take them, so the default
costs little on the others; ``benchmarks/success_rate.py`` measures the success each budget buys
(docs/benchmarks.md)."""


class TableSeededIK:
    """LM from a pose table's nearest configurations, then random restarts: :class:`HybridIK` without a network.

    The peer that says what the network is worth: the hybrid's table (:class:`~hik_sim.solvers.pose_table.PoseTable`,
    built with the solver, its FK not counted, as a network's training FK is not), its LM, distinct seeds and restart
    budget (flips off, as the hybrid's), with the table's ``table_seeds`` nearest configurations where the hybrid has the
    network's answers. Measured (5,000 IRB120 targets, seed 777, session 24's ``benchmarks/ik_bench.py``): 17.2
    evaluations and 0.036 ms a target, every target exact, against the hybrid's 7.8 and 0.013 ms (the table is searched
    for every target).

    Args:
        refiner: the LM refiner.
        table_seeds: the nearest configurations tried first, nearest first.
        restarts: seeds after the first (table or random), as :class:`HybridIK`'s ``restarts``.
        seed: seed of the table and of the restarts.
        table_size: configurations in the table.
        flip_restarts: follow a run from a table seed short of ``finish`` by LM from its flips (off, as :class:`HybridIK`'s).
        distinct_seeds: as :class:`HybridIK`'s, among the table's seeds.
        finish: when a target needs no further seed.

    Raises:
        HikError: ``table_seeds`` < 1 or ``restarts`` < 0.
    """

    def __init__(self, refiner: LMRefiner, table_seeds: int = TABLE_SEEDS, restarts: int = RESTARTS, seed: int = 0,
                 table_size: int = TABLE_SIZE, flip_restarts: bool = False, distinct_seeds: float = DISTINCT_SEEDS,
                 finish: Tolerance = EXACT) -> None:
        if not (isinstance(table_seeds, int) and table_seeds >= 1) or restarts < 0:
            raise SolverError(f"table_seeds must be an int >= 1 and restarts >= 0, got {table_seeds!r}, {restarts!r}")
        self.refiner, self.table_seeds, self.restarts, self.seed, self.finish = refiner, table_seeds, restarts, seed, finish
        self.table = PoseTable(refiner.chain, refiner.selection, table_size, seed, refiner.rotation_weight)
        self.flips = JointFlips(refiner.chain, list(refiner.selection.free_index)) if flip_restarts else None
        self.distinct_seeds = distinct_seeds

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """The table's nearest configurations of each target (B, 3), (B, 4) first (``q_init`` (B, n), when given, before
        them), then random restarts."""
        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        first = self.table.nearest(pos, quat, self.table_seeds)
        if q_init is not None:
            first = torch.cat((_check_q_init(q_init, pos.shape[0], self.chain.dof)[:, None], first), dim=1)
        result = _restarts(self.refiner, pos, quat, first, max(1 + self.restarts, first.shape[1]), TargetStreams(self.seed),
                           finish=self.finish, flips=self.flips, distinct=self.distinct_seeds)
        return replace(result, wall_time=time.perf_counter() - start)

    @property
    def chain(self) -> Chain:
        """The refiner's chain (the :class:`IKSolver` attribute)."""
        return self.refiner.chain


class HybridIK:
    """Network seed → LM; targets left short of exact get restarts: the network's other answers
    first (a network with several hypotheses, best first), then random configurations.

    A target takes no further restart once its best answer is within ``finish`` (exact: 0.1 mm &
    0.1°), the rule of :class:`MultistartIK`'s early stop too; with ``q_init`` (tracking), the
    network is asked only for the targets that ``q_init``'s LM leaves short of it.
    ``fk_evals`` counts the FK spent choosing among a network's H > 1 answers, where it was asked; an LM
    run from an answer so checked does not count that answer's FK a second time, only the Jacobian
    there (the compiled run recomputes the pose only inside that Jacobian evaluation; session 22: 1.03
    evaluations a target fewer on the IRB120, the same answers).

    With ``flip_restarts`` (the default until session 24), an LM run from a network answer that ends short of ``finish``
    is followed by LM from its flip about each of the chain's flip symmetries
    (:class:`~hik_sim.kinematics.flips.JointFlips`: the IRB120's wrist, the Panda's shoulder, JVRC-1's
    forearm and wrist), the same pose on the far side of a wrist limit that pinned the run. The
    tracking run from ``q_init`` is not flipped (the arm would swap branches), nor a random restart's.
    Measured on 5,000 IRB120 targets (seed 777): 17.8 evaluations a target against 25.8 without,
    99.98 % exact either way (docs/benchmarks.md, "Flip restarts"). Such a run that ends held at the
    limit of a joint spanning more than a turn (the IRB120's sixth) is also followed by LM from the
    same pose a turn back (:meth:`~hik_sim.kinematics.flips.JointFlips.turn`). With the pose table (below) the
    flips no longer pay, so they are off by default since session 24: on 20,000 validation targets with the
    table, the IRB120 8.18 evaluations a target with them against 8.13 without, the Panda 11.82 against 11.29, the
    G1 and JVRC-1 the same either way (flipping only the networks' answers, not the table's seeds: 8.21, 11.74).

    With ``distinct_seeds`` (default :data:`DISTINCT_SEEDS`), a network answer within that distance of
    one already tried for the target (the answers of a network often repeat one solution branch) is
    replaced by a random restart. A ``behind_turn`` network's two answer sets for a target beyond its first joint's
    range (turned into the back half-plane, turned by the azimuth) are both seeds, checked one at a time like the
    others, the back half-plane's first; the network's own choice between them, head by head, would spend 2·H FK on
    every such target (session 23, 20,000 validation targets beyond the range: the IRB120 24.51 → 18.75, the Panda
    23.64 → 18.00 evaluations a target, that FK counted). With a ``fallback`` network, the targets none of the network's
    answers is good for start from the fallback's answers (its first good one first), then the
    network's; with ``fallback_after`` (default) the fallback is also asked for the targets whose
    answers were good but left them short of exact, before their random restarts. Measured on
    validation targets (session 22, docs/benchmarks.md): the IRB120 12.55 → 11.63 evaluations a
    target with distinct seeds, 11.89 → 11.43 with the fallback asked after; the Panda 15.72 → 14.17
    and the G1 23.72 → 19.56; the same success.

    With ``table_seeds`` > 0 (default :data:`TABLE_SEEDS`), a target that its first ``table_after`` seeds (default 1: the
    good answer, or the best-scored one where none is good; with flips, and their flips) leave short of ``finish`` runs LM next from
    the ``table_seeds`` configurations of a :class:`~hik_sim.solvers.pose_table.PoseTable` (``table_size`` random
    configurations, drawn from their own stream with ``seed``, built with the solver) whose poses are nearest the
    target, before the network's other answers; they take restarts' rounds (the same number of seeds in all). A network
    misses where the map from pose to joints is hard (near singular, at the workspace's edge, at joint limits); a
    nearby pose reached by a known configuration is a good start there, where a random one rarely is. Measured on
    20,000 validation targets (seeds 2026–2029, session 24): evaluations a target 10.09 → 8.18 on the IRB120 (5 targets
    left short of exact → 0), the Panda 13.67 → 11.82, the G1 18.39 → 11.52, TALOS 6.76 → 6.36, Romeo 7.15 → 6.65, the
    iCub 6.25 → 5.98, JVRC-1 6.21 → 6.12; after 2 seeds 8.49 and after 4 8.98 on the IRB120; 2 table seeds 8.42, 8 8.11
    (all with flip restarts; without them, the default since, the IRB120 8.13, the Panda 11.29).

    A network with H > 1 answers: by default (``rank_all_answers=False``) its answers are checked by
    FK one at a time, in :func:`head_order` (the head most often best first), and LM starts from the
    first within the refiner's success tolerance (default 5 mm & 2°; :func:`first_good_answers`); the
    FK of the answers not checked is not spent. With ``rank_all_answers``, all H are ranked by FK (H
    evaluations) and LM starts from the best. With ``face_restarts`` (a revolute first joint that the
    refiner moves), each random restart is first turned about the first joint to face its target
    (:meth:`~hik_sim.kinematics.symmetry.FirstJointSymmetry.face`, one FK, counted): the same arm shape
    pointed at the target. Off by default: measured (5,000 targets, seed 777) it saved the G1 8 % of
    its evaluations but cost the IRB120 9 % more and 6 of its targets exact, and changed the others by
    ≤ 2 %, though alone a faced start reaches exact more often than a random one (49 against 40 % on
    the IRB120). ``benchmarks/hybrid_cost.py`` measures each option.

    Args:
        network: the trained network.
        refiner: the LM refiner (its selection must match the network's fixed joints).
        restarts: restarts for targets the seeded LM leaves short of ``finish`` (flips not counted).
        seed: seed of the restarts (their stream is :func:`restart_rng`'s, never a target stream).
        finish: when a target needs no further restart (default :data:`~hik_sim.kinematics.tolerances.EXACT`).
        flip_restarts: follow a run short of ``finish`` by LM from its flips (only flips of joints the
            refiner moves).
        rank_all_answers: rank all of a several-answer network's answers by FK before LM, rather than
            starting from the first good one in :func:`head_order`.
        face_restarts: turn each random restart to face its target (ignored where the first joint is
            prismatic or held fixed).
        fallback: a second network, asked only for the targets none of the network's answers is good for;
            its answers go first for them.
        distinct_seeds: a network answer this close to one already tried for the target is replaced by a
            random restart (:data:`DISTINCT_SEEDS`; 0: every answer is tried).
        fallback_after: ask the ``fallback`` network also for the targets the network's answers (one of them
            good) leave short of ``finish``, before their random restarts.
        table_seeds: the pose table's nearest configurations a target short of ``finish`` after its first
            ``table_after`` seeds runs LM from next (0: no table).
        table_size: configurations in the pose table.
        table_after: the seeds (answers, with their flips) run before the table's.

    Attributes:
        head_order: the order the network's answers are tried in without ``rank_all_answers``
            (:func:`head_order`; ``(0,)`` for one answer).

    Raises:
        HikError: negative ``restarts``, ``table_seeds`` < 0, ``table_after`` < 1, or the network and the refiner fix
            different joints.
        SolverError: the network was made for another robot than the refiner's chain.
    """

    def __init__(self, network: IKNetwork, refiner: LMRefiner, restarts: int = RESTARTS, seed: int = 0,
                 finish: Tolerance = EXACT, flip_restarts: bool = False, rank_all_answers: bool = False,
                 face_restarts: bool = False, fallback: IKNetwork | None = None,
                 distinct_seeds: float = DISTINCT_SEEDS, fallback_after: bool = True, table_seeds: int = TABLE_SEEDS,
                 table_size: int = TABLE_SIZE, table_after: int = 1) -> None:
        for net in (network,) if fallback is None else (network, fallback):
            check_network_fits(net, refiner.chain)
            if dict(net.selection.fixed) != dict(refiner.selection.fixed):
                raise SolverError(f"the network holds {dict(net.selection.fixed)} fixed but the refiner {dict(refiner.selection.fixed)}")
        if restarts < 0:
            raise SolverError(f"restarts must be >= 0, got {restarts}")
        if fallback is not None and (network.hypotheses == 1 or rank_all_answers):
            raise SolverError("a fallback network takes the targets none of the network's answers is good for: "
                              "give a network with several answers and rank_all_answers=False")
        self.network, self.refiner, self.restarts, self.seed, self.finish = network, refiner, restarts, seed, finish
        self.flips = JointFlips(refiner.chain, list(refiner.selection.free_index)) if flip_restarts else None
        self.rank_all_answers = rank_all_answers
        self.head_order = head_order(network)
        self.facing = _facing(refiner.chain, refiner.selection) if face_restarts else None
        self.fallback = fallback
        self.fallback_after = fallback_after
        if not distinct_seeds >= 0:
            raise SolverError(f"distinct_seeds must be >= 0, got {distinct_seeds}")
        self.distinct_seeds = distinct_seeds
        self.fallback_order = head_order(fallback) if fallback is not None and fallback.hypotheses > 1 else (0,)
        if not (isinstance(table_seeds, int) and table_seeds >= 0 and isinstance(table_after, int) and table_after >= 1):
            raise SolverError(f"table_seeds must be an int >= 0 and table_after an int >= 1, got {table_seeds!r}, {table_after!r}")
        self.table_seeds, self.table_after = table_seeds, table_after
        self.table = PoseTable(refiner.chain, refiner.selection, table_size, seed, refiner.rotation_weight) if table_seeds else None

    def _table_added(self, pos: torch.Tensor, quat: torch.Tensor) -> tuple[_Added, ...]:
        """:func:`_restarts`'s seeds added for targets (B, 3), (B, 4): the table's nearest after ``table_after`` seeds (none
        without a table; no FK spent choosing them)."""
        table, count = self.table, self.table_seeds
        if table is None:
            return ()

        def nearest(index: torch.Tensor) -> _Choice:
            nothing = torch.zeros(index.numel(), count, dtype=torch.bool)
            return _Choice(table.nearest(pos[index], quat[index], count), torch.zeros(index.numel(), dtype=torch.int64),
                           nothing[:, 0], nothing)

        return (_Added(self.table_after, nearest),)

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Seeded by ``q_init`` when given (tracking continuity), then the network, then random restarts."""
        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        chain = self.refiner.chain
        generator = TargetStreams(self.seed)  # each target's restarts its own: the answer does not depend on the batch
        hypotheses = self.network.hypotheses

        def seeded(index: torch.Tensor | None) -> IKResult:
            """The network's answers (B, H, n), the chosen one first, then random restarts, for targets ``index`` (None: all)."""
            p, o = (pos, quat) if index is None else (pos[index], quat[index])
            evaluated = None
            if hypotheses > 1 and not self.rank_all_answers:
                chosen = self._choice(p, o)
                if self.fallback is not None and p.shape[0]:  # an empty batch has no part to ask the fallback for
                    return self._with_fallback(p, o, chosen, generator)
                seeds, choice, evaluated = chosen.seeds, chosen.fk, chosen.evaluated
            else:  # ordering H > 1 answers best first costs H FK (the network's own, in its dtype: LM counts the seed's again)
                seeds = chain.clamp(self.network.solve_all(p, o).double().cpu())
                choice = torch.full((p.shape[0],), hypotheses if hypotheses > 1 else 0, dtype=torch.int64) + self.network.facing_fk(p)
            answer = _restarts(self.refiner, p, o, seeds, self._rounds(seeds), generator, finish=self.finish, flips=self.flips,
                               facing=self.facing, evaluated=evaluated, distinct=self.distinct_seeds, added=self._table_added(p, o))
            return replace(answer, fk_evals=answer.fk_evals + choice)

        if q_init is not None:
            q_init = _check_q_init(q_init, pos.shape[0], chain.dof)
            result = _restarts(self.refiner, pos, quat, q_init, 1, generator, finish=self.finish)
            todo = torch.nonzero(~self.finish.met(result.pos_err, result.rot_err)).flatten()
            if todo.numel():
                result = _merge(result, seeded(todo), todo)
        else:
            result = seeded(None)
        return replace(result, wall_time=time.perf_counter() - start)

    def _rounds(self, seeds: torch.Tensor) -> int:
        """The rounds of :func:`_restarts` for seeds (B, S, n): the first, then ``restarts``; a second answer set
        (:meth:`_choice`) adds its own rounds rather than taking random restarts' (a target without it idles there)."""
        return 1 + self.restarts + max(seeds.shape[1] - self.network.hypotheses, 0)

    def _choice(self, pos: torch.Tensor, quat: torch.Tensor) -> _Choice:
        """The network's answers for targets (B, 3), (B, 4), its first good one first (:func:`_first_good`). For the
        targets beyond a ``behind_turn`` network's first joint's range, both of its answer sets, the back half-plane's
        first (the network's own choice between them, head by head, would spend 2·H FK on each such target, whether
        or not one answer is good: :meth:`~hik_sim.learning.network.IKNetwork.facing_fk`): then (B, 2H, n) seeds, the
        other targets' second H absent (NaN, last), which :func:`_first_good` and :func:`_restarts` skip."""
        chain, network = self.refiner.chain, self.network
        answers = network.candidates(pos, quat, turned="range")
        order: Sequence[int] = self.head_order
        beyond = network.beyond_range(pos)
        if bool(beyond.any()):
            second = answers.new_full(answers.shape, math.nan)
            second[beyond] = network.candidates(pos[beyond], quat[beyond], turned="azimuth")
            answers = torch.cat((answers, second), dim=1)
            order = (*order, *(network.hypotheses + h for h in order))
        return _first_good(chain, chain.clamp(answers.double().cpu()), pos, quat, order, self.refiner.tolerance, self.refiner)

    def _with_fallback(self, pos: torch.Tensor, quat: torch.Tensor, chosen: _Choice, generator: TargetStreams) -> IKResult:
        """LM and restarts for targets (B, 3), (B, 4) whose network answers are ``chosen`` by :func:`_first_good`:
        where none is good, the fallback network's answers (its first good one first) go before them."""
        chain, tolerance = self.refiner.chain, self.refiner.tolerance
        none, some = torch.nonzero(~chosen.found).flatten(), torch.nonzero(chosen.found).flatten()
        assert self.fallback is not None
        parts: list[tuple[torch.Tensor, IKResult]] = []
        fallback = self.fallback

        def fallback_answers(p: torch.Tensor, o: torch.Tensor) -> _Choice:
            """The fallback network's answers for targets (b, 3), (b, 4), its first good one first."""
            answers = chain.clamp(fallback.candidates(p, o).double().cpu())
            own = fallback.facing_fk(p)  # the network's own FK, where it spends any
            if answers.shape[1] > 1:
                chosen = _first_good(chain, answers, p, o, self.fallback_order, tolerance, self.refiner)
                return chosen._replace(fk=chosen.fk + own)
            nothing = torch.zeros(p.shape[0], dtype=torch.bool)  # one answer: nothing to choose
            return _Choice(answers, own, nothing, nothing[:, None])

        if some.numel():
            p, o = pos[some], quat[some]
            after = (_Added(None, lambda idx: fallback_answers(p[idx], o[idx])),) if self.fallback_after else ()
            answer = _restarts(self.refiner, p, o, chosen.seeds[some], self._rounds(chosen.seeds[some]), generator,
                               finish=self.finish, flips=self.flips, facing=self.facing, evaluated=chosen.evaluated[some],
                               distinct=self.distinct_seeds, added=self._table_added(p, o) + after)
            parts.append((some, replace(answer, fk_evals=answer.fk_evals + chosen.fk[some])))
        if none.numel():
            p, o = pos[none], quat[none]
            extra = fallback_answers(p, o)
            answer = _restarts(self.refiner, p, o, torch.cat((extra.seeds, chosen.seeds[none]), dim=1), self._rounds(chosen.seeds[none]),
                               generator,
                               finish=self.finish, flips=self.flips, facing=self.facing,
                               evaluated=torch.cat((extra.evaluated, chosen.evaluated[none]), dim=1), distinct=self.distinct_seeds,
                               added=self._table_added(p, o))
            parts.append((none, replace(answer, fk_evals=answer.fk_evals + chosen.fk[none] + extra.fk)))
        return _scatter(parts, pos.shape[0])

    @property
    def chain(self) -> Chain:
        """The refiner's chain (the :class:`IKSolver` attribute)."""
        return self.refiner.chain


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


SINGLE_TARGET_RESTARTS = RESTARTS
"""Restarts of :class:`SingleTargetIK` after its first seeds fail (:data:`RESTARTS`; with the compiled
LM a restart costs tens of µs, and only failing targets take them)."""


class SingleTargetIK:
    """The control-rate path: one target per call, on :class:`~hik_sim.solvers.single_target.SingleTargetLM`.

    The same LM as :class:`LMRefiner` (damping, limits, stopping rule) in numpy on MuJoCo's C
    kinematics, no torch in the loop. Seeds, in order: ``q_init`` (the current joints while
    tracking: continuity, no jumps between solution branches), the network's answer (when a
    network is given; else the home configuration), the nearest configurations of a pose table
    (``table_seeds``), the network's other answers (a network with several hypotheses, best first), then
    random configurations, until one succeeds. With ``flip_restarts`` a run from a network answer (or the
    home pose) that ends short is followed by LM from its flips; the runs from ``q_init``, the table's
    seeds and random restarts are not.

    The network runs as a :class:`~hik_sim.learning.fast_network.FastIKNetwork` (tens of µs for one pose
    instead of torch's 0.2–2 ms; the float64 forward pass of the same weights, its answers ranked
    by a float64 FK): its weights are read once, when the solver is built.

    Args:
        chain: the robot's chain.
        network: optional trained network for the seed after ``q_init``.
        tolerance: success criterion.
        max_iterations: LM iterations per seed.
        rotation_weight: weight of the rotation residual [m/rad].
        restarts: seeds after the first ones fail: the network's other answers, then random ones (flips not counted).
        seed: seed of the random restarts (their stream is :func:`restart_rng`'s, never a target stream).
        flip_restarts: follow a network answer's (or the home pose's) run that ends short of the tolerance by
            LM from its flips (:class:`~hik_sim.kinematics.flips.JointFlips`); off by default since session 24, as
            :class:`HybridIK`'s: with the table they no longer pay.
        table_seeds: after ``q_init`` and the first answer (or home), LM from this many of a
            :class:`~hik_sim.solvers.pose_table.PoseTable`'s nearest configurations (``table_size`` entries, built with the
            solver; searched only for a target that gets there; not flipped), in restarts' places, as :class:`HybridIK`
            does (0: none). Measured (session 24, ``benchmarks/single_target_table.py``: 3,000 targets a robot, seed
            2030, each robot's ``mlp_seed``), the default (4 table seeds, no flips) against session 23's (no table,
            flips): the IRB120 12.4 against 20.8 evaluations a target, p99 latency 0.23 against 0.47 ms, max 1.05
            against 2.17, mean 0.052 against 0.057, median 0.034 against 0.032; the Panda, TALOS and the G1 p99 0.24,
            0.24, 0.23 against 0.49, 0.41, 0.53 ms; every target solved.

    Raises:
        HikError: a network with fixed joints.
        SolverError: the network was made for another robot.
    """

    def __init__(self, chain: Chain, network: IKNetwork | None = None, tolerance: Tolerance | None = None,
                 max_iterations: int = 30, rotation_weight: float = 0.2, restarts: int = SINGLE_TARGET_RESTARTS,
                 seed: int = 0, flip_restarts: bool = False, table_seeds: int = TABLE_SEEDS, table_size: int = TABLE_SIZE) -> None:
        from hik_sim.solvers.single_target import SingleTargetLM

        if network is not None:
            check_network_fits(network, chain)
            if network.selection.fixed:
                raise SolverError("SingleTargetIK drives every chain joint; give it a network without fixed joints")
        self.chain, self.network, self.tolerance, self.restarts = chain, network, tolerance or Tolerance(), restarts
        self.lm = SingleTargetLM(chain.robot, chain.geometry, max_iterations=max_iterations, rotation_weight=rotation_weight)
        self.fast_network = None
        if network is not None:
            from hik_sim.learning.fast_network import FastIKNetwork

            self.fast_network = FastIKNetwork.from_network(network)  # the network's seed without torch at batch 1
        self.rng = restart_rng(seed)
        self.flips = JointFlips(chain) if flip_restarts else None
        if not (isinstance(table_seeds, int) and table_seeds >= 0):
            raise SolverError(f"table_seeds must be an int >= 0, got {table_seeds!r}")
        self.table_seeds = table_seeds
        self.table = PoseTable(chain, JointSelection.for_chain(chain), table_size, seed, rotation_weight) if table_seeds else None

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """The batch interface: each target in turn through :meth:`solve_one` (each from its ``q_init`` row when given).

        Raises:
            HikError: bad targets or ``q_init``.
        """
        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        q_init = None if q_init is None else _check_q_init(q_init, pos.shape[0], self.chain.dof)
        results = [self.solve_one(pos[i], quat[i], None if q_init is None else q_init[i].numpy()) for i in range(pos.shape[0])]
        if not results:  # an empty batch: empty results
            none = torch.zeros(0, dtype=torch.int64)
            return _result(self.chain, torch.zeros(0, self.chain.dof, dtype=torch.float64), pos, quat, self.tolerance,
                           none, none, none, start)
        joined: dict[str, Any] = {name: torch.cat([getattr(r, name) for r in results]) for name in _PER_TARGET}
        return IKResult(**joined, wall_time=time.perf_counter() - start)

    def solve_one(self, target_pos, target_quat, q_init=None) -> IKResult:  # noqa: ANN001
        """Solve one target: position (3,) [m], quaternion (4,) wxyz, optional ``q_init`` (n,).

        Returns:
            :class:`IKResult` with batch size 1.

        Raises:
            HikError: bad target or ``q_init``.
        """
        start = time.perf_counter()
        pos, quat = _one_target_fast(target_pos, target_quat)
        if pos is None:  # anything but a plain, valid float pose: the full checks, which say what is wrong
            pos_t, quat_t = check_targets(_as_real_tensor(target_pos, "target position").reshape(1, -1),
                                          _as_real_tensor(target_quat, "target quaternion").reshape(1, -1))
            pos, quat = pos_t[0].numpy(), quat_t[0].numpy()
        assert quat is not None  # a valid pose in both branches
        seeds: list[Callable[[], np.ndarray]] = []  # each makes one LM start (n,), in the order they are tried
        if q_init is not None:
            start_q = _as_real_tensor(q_init, "q_init").numpy()
            if start_q.shape != (self.chain.dof,) or not np.isfinite(start_q).all():
                raise SolverError(f"q_init must be finite with shape ({self.chain.dof},), got {start_q.shape}")
            seeds.append(lambda: start_q)
        restarts = self.restarts
        answers: list[np.ndarray] = []  # the network's answers, once asked
        hypotheses = self.network.hypotheses if self.network is not None else 0
        if hypotheses:  # its answers, best first; the alternatives count as restarts
            fast = self.fast_network
            assert fast is not None  # built with the network

            def network_answer(k: int) -> np.ndarray:
                if not answers:
                    answers.extend(fast.solve_all(pos, quat))
                return answers[k]

            alternatives = min(hypotheses - 1, restarts)
            seeds += [functools.partial(network_answer, k) for k in range(1 + alternatives)]
            restarts -= alternatives
        if not seeds:
            seeds.append(lambda: np.asarray(self.chain.robot.home, dtype=float))
        # Flipped when short: the network's answers, or the home configuration; not q_init (the arm would swap
        # branches while tracking), not the random restarts (measured: that cost more than it saved).
        flipped = range(1 if q_init is not None else 0, len(seeds)) if self.flips is not None else range(0)
        # The table's nearest after q_init and the first seed that is not q_init (the network's answer, or home); they take
        # restarts' places (and, past those, the network's last answers'); only searched for a target that gets there.
        table_at, table_count = len(seeds), 0
        if self.table is not None and restarts + len(seeds) > 1:
            table_at = min(2 if q_init is not None else 1, len(seeds))
            table_count = min(self.table_seeds, restarts + len(seeds) - table_at)
            drop = max(0, table_count - restarts)
            restarts -= table_count - drop
            del seeds[len(seeds) - drop:]
        seeds += [lambda: self.rng.uniform(self.lm.lower, self.lm.upper)] * restarts
        best: LMAnswer | None = None
        iterations, fk_evals, jac_evals = 0, 0, 0
        weight = self.lm.rotation_weight
        done = False

        def run(start_q: np.ndarray) -> LMAnswer:
            """LM from one start; the counts and the best answer kept, ``done`` once it is within the tolerance."""
            nonlocal best, iterations, fk_evals, jac_evals, done
            answer = self.lm.refine(pos, quat, start_q)
            iterations, fk_evals, jac_evals = iterations + answer.iterations, fk_evals + answer.evals, jac_evals + answer.jac_evals
            if best is None or answer.pos_err + weight * answer.rot_err < best.pos_err + weight * best.rot_err:
                best = answer
            done = best.pos_err < self.tolerance.position and best.rot_err < self.tolerance.rotation
            return answer

        def run_table() -> None:
            """LM from the table's ``table_count`` nearest configurations in turn, until one is within the tolerance."""
            assert self.table is not None
            for start_q in self.table.nearest_one(pos, quat, table_count):
                run(start_q)
                if done:
                    break

        for index, make_seed in enumerate(seeds):
            if index == table_at and table_count:
                run_table()
                if done:
                    break
            reached = run(make_seed()).q
            if not done and index in flipped:
                assert self.flips is not None  # flipped is empty without flips
                for triple in self.flips.triples:
                    run(self.flips.flip(torch.from_numpy(reached[None]), triple)[0].numpy())
                    if done:
                        break
            if done:
                break
        if not done and table_count and table_at == len(seeds):  # no seed after the table's
            run_table()
        if answers and hypotheses > 1:  # ordering the network's H answers cost H FK
            fk_evals += hypotheses
        if answers:  # and what the network spent on its own (a behind_turn network's pose beyond the first joint's range)
            assert self.fast_network is not None
            fk_evals += self.fast_network.facing_fk(pos, quat)
        assert best is not None  # there is always at least one seed
        met = self.tolerance.met(best.pos_err, best.rot_err)
        counts = np.array([iterations, fk_evals, jac_evals], dtype=np.int64)
        return IKResult(torch.from_numpy(best.q[None]), torch.from_numpy(np.array([best.pos_err])),
                        torch.from_numpy(np.array([best.rot_err])), torch.from_numpy(np.array([met])),
                        torch.from_numpy(counts[0:1]), torch.from_numpy(counts[1:2]), torch.from_numpy(counts[2:3]),
                        time.perf_counter() - start)


def _one_target_fast(target_pos: Any, target_quat: Any) -> tuple[np.ndarray | None, np.ndarray | None]:
    """A plain float target — numpy arrays (or CPU tensors) of shapes (3,) and (4,), finite, within
    :data:`~hik_sim.learning.network.MAX_TARGET_DISTANCE`, a non-zero quaternion — as float64 copies (the
    quaternion normalised), in a few µs; ``(None, None)`` for anything else (the full checks of
    :func:`check_targets` then run and name what is wrong)."""
    if isinstance(target_pos, torch.Tensor) and isinstance(target_quat, torch.Tensor) and target_pos.device.type == "cpu" \
            and target_quat.device.type == "cpu" and target_pos.dtype.is_floating_point and target_quat.dtype.is_floating_point:
        target_pos, target_quat = target_pos.detach().numpy(), target_quat.detach().numpy()
    if not (isinstance(target_pos, np.ndarray) and isinstance(target_quat, np.ndarray) and target_pos.shape == (3,)
            and target_quat.shape == (4,) and target_pos.dtype.kind == "f" and target_quat.dtype.kind == "f"):
        return None, None
    pos, quat = target_pos.astype(np.float64), target_quat.astype(np.float64)
    norm = math.sqrt(float(quat @ quat))
    if not (1e-9 < norm < math.inf and float(np.abs(pos).max()) <= MAX_TARGET_DISTANCE):  # NaN fails both
        return None, None
    return pos, quat / norm


class DmControlIK:
    """dm_control's ``qpos_from_site_pose`` on the robot's scene, one target at a time, as dm_control ships it.

    dm_control ignores joint limits: answers outside them are counted in
    ``result.extra["limit_violations"]`` and then clamped into the limits (so the result, like every
    solver's, is a configuration the robot can take), with errors measured after clamping.

    Args:
        scene: the robot's :class:`~hik_sim.sim.model.Scene`.
        tolerance: success criterion.
        max_steps: dm_control's iteration cap.
        tol: dm_control's convergence tolerance on the residual norm.
    """

    def __init__(self, scene, tolerance: Tolerance | None = None, max_steps: int = 100, tol: float = 1e-14) -> None:  # noqa: ANN001
        import mujoco
        from dm_control import mujoco as dm_mujoco

        self.scene, self.chain = scene, Chain(scene.robot)
        self.tolerance, self.max_steps, self.tol = tolerance or Tolerance(), max_steps, tol
        self.physics = dm_mujoco.Physics.from_xml_string(scene.spec.to_xml())
        data = scene.make_data()
        self.base_pos, base_rot = scene.base_pose(data)
        self.base_rot = torch.from_numpy(base_rot)
        base_quat = torch.empty(4, dtype=torch.float64)
        mujoco.mju_mat2Quat(base_quat.numpy(), base_rot.reshape(-1))
        self.base_quat = base_quat
        self.home_qpos = data.qpos.copy()

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Solve each target from ``q_init`` (B, n) (default: home).

        Raises:
            HikError: bad targets or ``q_init``.
        """
        from dm_control.utils.inverse_kinematics import qpos_from_site_pose

        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        batch, robot = pos.shape[0], self.scene.robot
        if q_init is not None:  # a wrong shape was a raw ValueError, NaN a LinAlgError from inside dm_control
            q_init = _check_q_init(q_init, batch, self.chain.dof)
        world_pos = torch.from_numpy(self.base_pos) + pos @ self.base_rot.T
        world_quat = quaternion_multiply(self.base_quat.expand(batch, 4), quat)
        q = torch.empty(batch, self.chain.dof, dtype=torch.float64)
        steps = torch.zeros(batch, dtype=torch.int64)
        for i in range(batch):
            self.physics.data.qpos[:] = self.home_qpos
            if q_init is not None:
                self.physics.data.qpos[self.scene.chain_qpos] = torch.as_tensor(q_init[i]).numpy()
            answer = qpos_from_site_pose(self.physics, "ee", target_pos=world_pos[i].numpy(), target_quat=world_quat[i].numpy(),
                                         joint_names=list(robot.joint_names), tol=self.tol, max_steps=self.max_steps, inplace=False)
            q[i] = torch.from_numpy(answer.qpos[self.scene.chain_qpos])
            steps[i] = answer.steps
        lower, upper = self.chain.limits(torch.float64)
        violations = int(((q < lower - 1e-9) | (q > upper + 1e-9)).any(dim=1).sum())
        result = _result(self.chain, self.chain.clamp(q), pos, quat, self.tolerance, steps, steps + 1, steps, start)
        return replace(result, extra={"limit_violations": violations})
