"""Restarts: LM from more seeds for the targets not yet exact, and the solvers built on them alone.

- :class:`MultistartIK`: the hybrid-IK paper's Conventional-Multistart-N, LM from random seeds, round after round.
- :class:`TableSeededIK`: LM from a pose table's nearest configurations, then random restarts (the hybrid without a
  network).
- :func:`_restarts`: the round loop every restarting solver runs (given seeds, added seeds, flips, random seeds).

Random restarts draw from :func:`restart_rng`, a stream that can never be the one that made the targets (see there), so
no solver's success depends on replaying its targets' configurations. The hybrid solvers draw each target's restarts
from its own stream (:class:`TargetStreams`): a target's answer does not depend on the other targets of its batch.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import replace
from typing import Callable, NamedTuple

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.symmetry import FirstJointSymmetry
from hik_sim.kinematics.tolerances import EXACT, Tolerance
from hik_sim.solvers.base import IKResult, _check_q_init, check_targets
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.pose_table import TABLE_SIZE, PoseTable

__all__ = ["MultistartIK", "TableSeededIK", "TargetStreams", "restart_rng", "RESTART_STREAM", "RESTARTS", "DISTINCT_SEEDS", "TABLE_SEEDS"]

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


DISTINCT_SEEDS = 0.5
"""A network answer within this distance (the largest joint difference, rad or m) of an answer :class:`HybridIK`
already ran LM from for the same target is replaced by a random restart: on the same branch, LM from it would most
likely end where the earlier run did, short of exact. Chosen on validation targets (seeds 2026 and 2027, 5,000 each,
never a benchmark's): 0.3–0.8 rad all cut the IRB120's, the Panda's and the G1's evaluations by 8–18 % at the same
success; the other robots' answers rarely repeat (docs/solvers.md)."""

RESTARTS = 49
"""Restarts of :class:`HybridIK` and :class:`SingleTargetIK` after a target's first seed leaves it
short of exact (the network's other answers count). Only such targets take them, so the default
costs little on the others; ``benchmarks/success_rate.py`` measures the success each budget buys
(docs/solvers.md)."""


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


class TableSeededIK:
    """LM from a pose table's nearest configurations, then random restarts: :class:`HybridIK` without a network.

    The peer that says what the network is worth: the hybrid's table (:class:`~hik_sim.solvers.pose_table.PoseTable`,
    built with the solver, its FK not counted, as a network's training FK is not), its LM, distinct seeds and restart
    budget (flips off, as the hybrid's), with the table's ``table_seeds`` nearest configurations where the hybrid has the
    network's answers. Measured (5,000 IRB120 targets, seed 777, ``benchmarks/ik_bench.py --all``,
    benchmarks/results/ik_all.md): 17.2 evaluations and 0.019 ms a target, every target exact, against the hybrid's 7.8
    and 0.013 ms (the table is searched for every target).

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
