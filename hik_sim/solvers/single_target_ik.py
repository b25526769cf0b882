"""The control-rate path: one target a call on MuJoCo's C kinematics, network seed → LM
(:class:`SingleTargetIK`), with its LM and restart switches in one frozen plan (:class:`SingleTargetPlan`).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
import math
import time
from typing import Any, Callable

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.tolerances import Tolerance
from hik_sim.learning.data import JointSelection
from hik_sim.learning.network import MAX_TARGET_DISTANCE, IKNetwork, _as_real_tensor
from hik_sim.solvers.base import _PER_TARGET, IKResult, _check_q_init, _result, check_network_fits, check_targets
from hik_sim.solvers.pose_table import TABLE_SIZE, PoseTable
from hik_sim.solvers.lm_rules import MAX_ITERATIONS, ROTATION_WEIGHT
from hik_sim.solvers.restarts import RESTARTS, TABLE_SEEDS, restart_rng
from hik_sim.solvers.single_target import LMAnswer

__all__ = ["SingleTargetIK", "SingleTargetPlan", "SINGLE_TARGET_RESTARTS"]

SINGLE_TARGET_RESTARTS = RESTARTS
"""Restarts of :class:`SingleTargetIK` after its first seeds fail (:data:`RESTARTS`; with the compiled
LM a restart costs tens of µs, and only failing targets take them)."""


@dataclass(frozen=True)
class SingleTargetPlan:
    """The LM and restart switches of :class:`SingleTargetIK`, defaults as shipped.

    Attributes:
        max_iterations: LM iterations per seed (:data:`~hik_sim.solvers.lm_rules.MAX_ITERATIONS`).
        rotation_weight: weight of the rotation residual [m/rad] (:data:`~hik_sim.solvers.lm_rules.ROTATION_WEIGHT`).
        restarts: seeds after the first ones fail: the network's other answers, then random ones (flips not counted;
            :data:`SINGLE_TARGET_RESTARTS`).
        flip_restarts: follow a network answer's (or the home pose's) run that ends short of the tolerance by
            LM from its flips (:class:`~hik_sim.kinematics.flips.JointFlips`); off by default, as
            :class:`HybridIK`'s: with the table they no longer pay.
        table_seeds: after ``q_init`` and the first answer (or home), LM from this many of a
            :class:`~hik_sim.solvers.pose_table.PoseTable`'s nearest configurations (``table_size`` entries, built with the
            solver; searched only for a target that gets there; not flipped), in restarts' places, as :class:`HybridIK`
            does (0: none). Measured (``benchmarks/single_target_table.py``: 3,000 targets a robot, seed
            2030, each robot's HarmoAtt-IK seed), the default (4 table seeds, no flips) against no table, with
            flips: the IRB120 13.0 against 24.2 evaluations a target, p99 latency 0.38 against 0.90 ms, max 1.65
            against 3.92, every target solved against 2,999 of 3,000; the Panda and the G1 p99 0.36 and 0.32
            against 0.47 and 0.50 ms; the other robots within 0.03 ms; the most evaluations a target lower on
            every robot but the iCub (the same).

    Raises:
        SolverError: ``max_iterations`` < 0, ``rotation_weight`` not positive, ``restarts`` < 0 or ``table_seeds`` < 0.
    """

    max_iterations: int = MAX_ITERATIONS
    rotation_weight: float = ROTATION_WEIGHT
    restarts: int = SINGLE_TARGET_RESTARTS
    flip_restarts: bool = False
    table_seeds: int = TABLE_SEEDS
    table_size: int = TABLE_SIZE

    def __post_init__(self) -> None:
        if not (self.max_iterations >= 0 and self.rotation_weight > 0 and self.restarts >= 0):
            raise SolverError(f"max_iterations and restarts must be >= 0 and rotation_weight positive, got "
                              f"{self.max_iterations!r}, {self.restarts!r}, {self.rotation_weight!r}")
        if not (isinstance(self.table_seeds, int) and self.table_seeds >= 0):
            raise SolverError(f"table_seeds must be an int >= 0, got {self.table_seeds!r}")


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
    The switches (``restarts``, ``flip_restarts``, ``table_seeds``, ...) are the fields of its
    :class:`SingleTargetPlan`.

    The network runs as a :class:`~hik_sim.learning.fast_network.FastIKNetwork` (tens of µs for one pose
    instead of torch's 0.2–2 ms; the float64 forward pass of the same weights, its answers ranked
    by a float64 FK): its weights are read once, when the solver is built.

    Args:
        chain: the robot's chain.
        network: optional trained network for the seed after ``q_init``.
        tolerance: success criterion (default 5 mm & 2°).
        plan: the LM and restart switches (:class:`SingleTargetPlan`; default: as shipped).
        seed: seed of the random restarts and of the pose table (the restarts' stream is
            :func:`~hik_sim.solvers.restarts.restart_rng`'s, never a target stream).

    Raises:
        HikError: a network with fixed joints.
        SolverError: the network was made for another robot.
    """

    def __init__(self, chain: Chain, network: IKNetwork | None = None, tolerance: Tolerance | None = None,
                 plan: SingleTargetPlan | None = None, seed: int = 0) -> None:
        plan = SingleTargetPlan() if plan is None else plan
        if not isinstance(plan, SingleTargetPlan):
            raise SolverError(f"plan must be a SingleTargetPlan, got {type(plan).__name__}")
        max_iterations, rotation_weight, restarts = plan.max_iterations, plan.rotation_weight, plan.restarts
        flip_restarts, table_seeds, table_size = plan.flip_restarts, plan.table_seeds, plan.table_size
        from hik_sim.solvers.single_target import SingleTargetLM

        if network is not None:
            check_network_fits(network, chain)
            if network.selection.fixed:
                raise SolverError("SingleTargetIK drives every chain joint; give it a network without fixed joints")
        self.plan = plan
        self.chain, self.network, self.tolerance, self.restarts = chain, network, tolerance or Tolerance(), restarts
        self.lm = SingleTargetLM(chain.robot, chain.geometry, max_iterations=max_iterations, rotation_weight=rotation_weight)
        self.fast_network = None
        if network is not None:
            from hik_sim.learning.fast_network import FastIKNetwork

            self.fast_network = FastIKNetwork.from_network(network)  # the network's seed without torch at batch 1
        self.rng = restart_rng(seed)
        self.flips = JointFlips(chain) if flip_restarts else None
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
