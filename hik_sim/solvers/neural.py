"""A trained network's answer without least squares (:class:`NeuralIK`), optionally closed on its own error by
goal-shift corrections (the ``closed_loop`` policy's constants: ``CLOSED_LOOP_*``).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, NamedTuple

import numpy as np
import torch

from hik_sim.errors import HikError, SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, quaternion_multiply, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry
from hik_sim.kinematics.tolerances import Tolerance
from hik_sim.learning.network import IKNetwork
from hik_sim.solvers.base import IKResult, _check_q_init, _result, check_network_fits, check_targets

__all__ = ["NeuralIK", "CLOSED_LOOP_CORRECTIONS", "CLOSED_LOOP_BRANCHES", "CLOSED_LOOP_NEAREST_FIRST", "CLOSED_LOOP_FIRST_JOINT_TURNS"]

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
<hik_sim.kinematics.symmetry.FirstJointSymmetry.default_turns>`): docs/networks.md. Not when
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
            from hik_sim.kinematics.mujoco_chain import SingleTargetKinematics

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
