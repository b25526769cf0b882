"""The hybrid solver: a network's answer seeds LM, and targets it leaves short of exact get restarts
(:class:`HybridIK`), with its restart switches in one frozen plan (:class:`HybridPlan`).
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass, replace

import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.tolerances import EXACT, Tolerance
from hik_sim.learning.network import IKNetwork
from hik_sim.solvers.answers import _facing, _first_good, head_order
from hik_sim.solvers.base import IKResult, _check_q_init, _merge, _scatter, check_network_fits, check_targets
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.pose_table import TABLE_SIZE, PoseTable
from hik_sim.solvers.restarts import DISTINCT_SEEDS, RESTARTS, TABLE_SEEDS, TargetStreams, _Added, _Choice, _restarts

__all__ = ["HybridIK", "HybridPlan"]


@dataclass(frozen=True)
class HybridPlan:
    """The restart switches of :class:`HybridIK`, defaults as shipped (what each one buys: the class's docstring and
    ``benchmarks/hybrid_cost.py``).

    Attributes:
        restarts: restarts for targets the seeded LM leaves short of ``finish`` (flips not counted; :data:`RESTARTS`).
        finish: when a target needs no further restart (:data:`~hik_sim.kinematics.tolerances.EXACT`).
        flip_restarts: follow a run from a network answer short of ``finish`` by LM from its flips (only flips of joints
            the refiner moves).
        rank_all_answers: rank all of a several-answer network's answers by FK before LM, rather than starting from the
            first good one in :func:`~hik_sim.solvers.answers.head_order`.
        face_restarts: turn each random restart to face its target (ignored where the first joint is prismatic or held
            fixed).
        distinct_seeds: a network answer this close [rad or m, largest joint difference] to one already tried for the
            target is replaced by a random restart (:data:`DISTINCT_SEEDS`; 0: every answer is tried).
        fallback_after: ask the ``fallback`` network also for the targets the network's answers (one of them good) leave
            short of ``finish``, before their random restarts.
        table_seeds: the pose table's nearest configurations a target short of ``finish`` after its first
            ``table_after`` seeds runs LM from next (:data:`TABLE_SEEDS`; 0: no table).
        table_size: configurations in the pose table (:data:`~hik_sim.solvers.pose_table.TABLE_SIZE`).
        table_after: the seeds (answers, with their flips) run before the table's.

    Raises:
        SolverError: negative ``restarts`` or ``distinct_seeds``, ``table_seeds`` < 0 or ``table_after`` < 1.
    """

    restarts: int = RESTARTS
    finish: Tolerance = EXACT
    flip_restarts: bool = False
    rank_all_answers: bool = False
    face_restarts: bool = False
    distinct_seeds: float = DISTINCT_SEEDS
    fallback_after: bool = True
    table_seeds: int = TABLE_SEEDS
    table_size: int = TABLE_SIZE
    table_after: int = 1

    def __post_init__(self) -> None:
        if not self.restarts >= 0:
            raise SolverError(f"restarts must be >= 0, got {self.restarts!r}")
        if not self.distinct_seeds >= 0:
            raise SolverError(f"distinct_seeds must be >= 0, got {self.distinct_seeds}")
        if not (isinstance(self.table_seeds, int) and self.table_seeds >= 0 and isinstance(self.table_after, int)
                and self.table_after >= 1):
            raise SolverError(f"table_seeds must be an int >= 0 and table_after an int >= 1, got {self.table_seeds!r}, "
                              f"{self.table_after!r}")


class HybridIK:
    """Network seed → LM; targets left short of exact get restarts: the network's other answers
    first (a network with several hypotheses, best first), then random configurations.

    The switches named below (``finish``, ``flip_restarts``, ``distinct_seeds``, ``table_seeds``, ...) are the fields
    of its :class:`HybridPlan`: ``HybridIK(network, refiner, plan=HybridPlan(restarts=9))``.

    A target takes no further restart once its best answer is within ``finish`` (exact: 0.1 mm &
    0.1°), the rule of :class:`MultistartIK`'s early stop too; with ``q_init`` (tracking), the
    network is asked only for the targets that ``q_init``'s LM leaves short of it.
    ``fk_evals`` counts the FK spent choosing among a network's H > 1 answers, where it was asked; an LM
    run from an answer so checked does not count that answer's FK a second time, only the Jacobian
    there (the compiled run recomputes the pose only inside that Jacobian evaluation: 1.03
    evaluations a target fewer on the IRB120, the same answers).

    With ``flip_restarts``, an LM run from a network answer that ends short of ``finish``
    is followed by LM from its flip about each of the chain's flip symmetries
    (:class:`~hik_sim.kinematics.flips.JointFlips`: the IRB120's wrist, the Panda's shoulder, JVRC-1's
    forearm and wrist), the same pose on the far side of a wrist limit that pinned the run. The
    tracking run from ``q_init`` is not flipped (the arm would swap branches), nor a random restart's.
    Measured on 5,000 IRB120 targets (seed 777): 17.8 evaluations a target against 25.8 without,
    99.98 % exact either way (docs/solvers.md). Such a run that ends held at the
    limit of a joint spanning more than a turn (the IRB120's sixth) is also followed by LM from the
    same pose a turn back (:meth:`~hik_sim.kinematics.flips.JointFlips.turn`). With the pose table (below) the
    flips no longer pay, so they are off by default: on 20,000 validation targets with the
    table, the IRB120 8.18 evaluations a target with them against 8.13 without, the Panda 11.82 against 11.29, the
    G1 and JVRC-1 the same either way (flipping only the networks' answers, not the table's seeds: 8.21, 11.74).

    With ``distinct_seeds`` (default :data:`DISTINCT_SEEDS`), a network answer within that distance of
    one already tried for the target (the answers of a network often repeat one solution branch) is
    replaced by a random restart. A ``behind_turn`` network's two answer sets for a target beyond its first joint's
    range (turned into the back half-plane, turned by the azimuth) are both seeds, checked one at a time like the
    others, the back half-plane's first; the network's own choice between them, head by head, would spend 2·H FK on
    every such target (20,000 validation targets beyond the range: the IRB120 24.51 → 18.75, the Panda
    23.64 → 18.00 evaluations a target, that FK counted). With a ``fallback`` network, the targets none of the network's
    answers is good for start from the fallback's answers (its first good one first), then the
    network's; with ``fallback_after`` (default) the fallback is also asked for the targets whose
    answers were good but left them short of exact, before their random restarts. Measured on
    validation targets (docs/solvers.md): the IRB120 12.55 → 11.63 evaluations a
    target with distinct seeds, 11.89 → 11.43 with the fallback asked after; the Panda 15.72 → 14.17
    and the G1 23.72 → 19.56; the same success.

    With ``table_seeds`` > 0 (default :data:`TABLE_SEEDS`), a target that its first ``table_after`` seeds (default 1: the
    good answer, or the best-scored one where none is good; with flips, and their flips) leave short of ``finish`` runs LM next from
    the ``table_seeds`` configurations of a :class:`~hik_sim.solvers.pose_table.PoseTable` (``table_size`` random
    configurations, drawn from their own stream with ``seed``, built with the solver) whose poses are nearest the
    target, before the network's other answers; they take restarts' rounds (the same number of seeds in all). A network
    misses where the map from pose to joints is hard (near singular, at the workspace's edge, at joint limits); a
    nearby pose reached by a known configuration is a good start there, where a random one rarely is. Measured on
    20,000 validation targets (seeds 2026–2029): evaluations a target 10.09 → 8.18 on the IRB120 (5 targets
    left short of exact → 0), the Panda 13.67 → 11.82, the G1 18.39 → 11.52, TALOS 6.76 → 6.36, Romeo 7.15 → 6.65, the
    iCub 6.25 → 5.98, JVRC-1 6.21 → 6.12; after 2 seeds 8.49 and after 4 8.98 on the IRB120; 2 table seeds 8.42, 8 8.11
    (all with flip restarts; without them, the default, the IRB120 8.13, the Panda 11.29).

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
        fallback: a second network, asked only for the targets none of the network's answers is good for;
            its answers go first for them.
        plan: the restart switches (:class:`HybridPlan`; default: as shipped).
        seed: seed of the restarts and of the pose table (the restarts' stream is :class:`TargetStreams`', never a
            target stream).

    Attributes:
        head_order: the order the network's answers are tried in without ``rank_all_answers``
            (:func:`head_order`; ``(0,)`` for one answer).

    Raises:
        HikError: the network and the refiner fix different joints, or a ``fallback`` with a one-answer network or
            ``plan.rank_all_answers``.
        SolverError: the network was made for another robot than the refiner's chain.
    """

    def __init__(self, network: IKNetwork, refiner: LMRefiner, fallback: IKNetwork | None = None,
                 plan: HybridPlan | None = None, seed: int = 0) -> None:
        plan = HybridPlan() if plan is None else plan
        if not isinstance(plan, HybridPlan):
            raise SolverError(f"plan must be a HybridPlan, got {type(plan).__name__}")
        restarts, finish, flip_restarts, rank_all_answers = plan.restarts, plan.finish, plan.flip_restarts, plan.rank_all_answers
        face_restarts, distinct_seeds, fallback_after = plan.face_restarts, plan.distinct_seeds, plan.fallback_after
        table_seeds, table_size, table_after = plan.table_seeds, plan.table_size, plan.table_after
        for net in (network,) if fallback is None else (network, fallback):
            check_network_fits(net, refiner.chain)
            if dict(net.selection.fixed) != dict(refiner.selection.fixed):
                raise SolverError(f"the network holds {dict(net.selection.fixed)} fixed but the refiner {dict(refiner.selection.fixed)}")
        if fallback is not None and (network.hypotheses == 1 or rank_all_answers):
            raise SolverError("a fallback network takes the targets none of the network's answers is good for: "
                              "give a network with several answers and rank_all_answers=False")
        self.plan = plan
        self.network, self.refiner, self.restarts, self.seed, self.finish = network, refiner, restarts, seed, finish
        self.flips = JointFlips(refiner.chain, list(refiner.selection.free_index)) if flip_restarts else None
        self.rank_all_answers = rank_all_answers
        self.head_order = head_order(network)
        self.facing = _facing(refiner.chain, refiner.selection) if face_restarts else None
        self.fallback = fallback
        self.fallback_after = fallback_after
        self.distinct_seeds = distinct_seeds
        self.fallback_order = head_order(fallback) if fallback is not None and fallback.hypotheses > 1 else (0,)
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
