"""How :class:`~hik_sim.learning.fast_network.FastIKNetwork` ranks a network's answers: position error / 5 mm +
rotation error / 2° of each answer's forward kinematics, like :meth:`IKNetwork.rank
<hik_sim.learning.network.IKNetwork.rank>`, in float64.

The forward kinematics are the caller's (:class:`~hik_sim.kinematics.mujoco_chain.SingleTargetKinematics`, MuJoCo's
C functions, a few µs an answer) or the chain geometry's own (:mod:`hik_sim.kinematics.flat_chain`): compiled on
the ``numba`` backend (about 1 µs for 4 answers, in the same compiled call as the network), NumPy on ``numpy``.
Answers whose scores differ by less than the network's dtype's rounding may be ordered differently.
"""

from __future__ import annotations

import math
from typing import Any, Callable

import numpy as np

from hik_sim.errors import ModelError
from hik_sim.kinematics import flat_chain
from hik_sim.kinematics.tolerances import SUCCESS, rotation_angle
from hik_sim.learning._canonical_turn import CanonicalTurn
from hik_sim.learning.fast_parts import Ranked, _bad_pose

__all__ = ["CHOICE_TOLERANCE", "Scorer", "ranked_answers"]

CHOICE_TOLERANCE: tuple[float, float] = (SUCCESS.position, SUCCESS.rotation)
"""[m], [rad]: :data:`hik_sim.learning.network.CHOICE_TOLERANCE` (importing it would import torch)."""


class Scorer:
    """How badly answers reach a target, from the caller's forward kinematics or the chain geometry's.

    Args:
        kinematics: forward kinematics with ``fk(q)`` → a pose with ``pos`` (3,) [m] and ``quat`` (4,) wxyz
            (:class:`~hik_sim.kinematics.mujoco_chain.SingleTargetKinematics`), or None.
        geometry: the flat chain geometry (:func:`~hik_sim.kinematics.flat_chain.flat_geometry`), used when
            ``kinematics`` is None.
        compiled: score the geometry with the numba kernel (:func:`hik_sim.kinematics._flat_chain_numba.scores`).
    """

    def __init__(self, kinematics: Any, geometry: np.ndarray | None, compiled: bool) -> None:
        if kinematics is None and geometry is None:
            raise ModelError("scoring answers needs forward kinematics: kinematics or a chain geometry")
        self.kinematics, self.geometry = kinematics, geometry
        self._kernel: Callable[..., None] | None = None
        if kinematics is None and compiled:
            from hik_sim.kinematics import _flat_chain_numba

            self._kernel = _flat_chain_numba.scores

    def __call__(self, answers: np.ndarray, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """(H,) scores of answers (H, n) [rad or m] for a target (3,) [m], (4,) wxyz of any non-zero norm; lower is better."""
        answers = np.ascontiguousarray(answers, dtype=np.float64)
        if self.kinematics is None:
            assert self.geometry is not None  # checked when built
            if self._kernel is None:
                return flat_chain.scores(self.geometry, answers, pos, quat, *CHOICE_TOLERANCE)
            out = np.empty(len(answers))
            self._kernel(self.geometry, answers, pos, quat, CHOICE_TOLERANCE[0], CHOICE_TOLERANCE[1], out)
            return out
        out = np.empty(len(answers))
        unit = quat / math.sqrt(quat @ quat)
        for k, q in enumerate(answers):
            reached = self.kinematics.fk(q)
            delta = reached.pos - pos
            out[k] = math.sqrt(delta @ delta) / CHOICE_TOLERANCE[0] + rotation_angle(reached.quat, unit) / CHOICE_TOLERANCE[1]
        return out


def ranked_answers(ranked: Ranked, turn: CanonicalTurn | None, set_turn: Callable[[float, float], None] | None,
                   scores_of: Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray], pos: np.ndarray,
                   quat: np.ndarray) -> tuple[np.ndarray, np.ndarray, int]:
    """The compiled path's (H, n) answers in head order, their (H,) scores and the best one's index
    for a pose (3,) [m], (4,) whose shapes are checked: the network and the choice in one call (``ranked``).

    A ``canonical_turn`` network's answers (``turn``; ``set_turn`` for a ``turn_input`` model) are ranked for the
    canonical pose (the turn moves an answer's forward kinematics and its target alike, so the errors are the
    same), and again (``scores_of``) for the pose itself when the turn back moved one of them to a limit.

    Raises:
        HikError: a bad pose (NaN/inf, a zero quaternion, a position too far) or an answer that is not finite.
    """
    if turn is None:
        status, answers, scores, best = ranked(pos, quat)
        if status:
            raise _bad_pose(status, pos, quat)
        return answers, scores, best
    status, canonical_pos, canonical_quat, azimuth = turn.canonical(pos, quat)
    if status:
        raise _bad_pose(status, pos, quat)
    if set_turn is not None:
        set_turn(math.cos(azimuth), math.sin(azimuth))
    status, answers, scores, best = ranked(canonical_pos, canonical_quat)
    if status:
        raise _bad_pose(status, pos, quat)
    if turn.back(answers, azimuth):
        scores = scores_of(answers, pos, quat)
        best = int(np.argmin(scores))
    if turn.behind:  # a pose beyond the range: asked turned by its azimuth too, each head keeps the better
        status, canonical_pos, canonical_quat, other = turn.canonical(pos, quat, behind=False)
        if other != azimuth:
            if set_turn is not None:
                set_turn(math.cos(other), math.sin(other))
            status, second, second_scores, _ = ranked(canonical_pos, canonical_quat)
            if turn.back(second, other):
                second_scores = scores_of(second, pos, quat)
            better = second_scores < scores
            answers[better], scores[better] = second[better], second_scores[better]
            best = int(np.argmin(scores))
    return answers, scores, best
