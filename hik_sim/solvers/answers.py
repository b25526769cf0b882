"""A network's answers as LM seeds: the order its heads are tried in (:func:`head_order`) and the first good answer
among them (:func:`first_good_answers`), each answer checked by one FK only when the ones before it miss.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry
from hik_sim.kinematics.tolerances import Tolerance
from hik_sim.learning.data import JointSelection
from hik_sim.learning.network import IKNetwork
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.restarts import _Choice, _random_configurations, restart_rng

__all__ = ["head_order", "first_good_answers", "HEAD_ORDER_SAMPLES"]

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
