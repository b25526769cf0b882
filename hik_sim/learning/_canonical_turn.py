"""The first joint's turn taken out of a ``canonical_turn`` network's input and added back to its answers, for
one pose: :class:`CanonicalTurn` holds one network's frame and limits and calls :func:`canonical_pose` and
:func:`turn_back` (plain scalar Python, :mod:`hik_sim.learning._canonical_kernels`) as they are on the ``numpy``
backend of :class:`~hik_sim.learning.fast_network.FastIKNetwork`, compiled by :mod:`hik_sim.learning._fast_numba` on
the ``numba`` one: one definition, two speeds. :class:`~hik_sim.learning.network.IKNetwork` does the same in torch,
batched (tests/test_canonical_turn.py checks the two agree).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hik_sim.learning._canonical_kernels import canonical_pose, turn_back

__all__ = ["canonical_pose", "turn_back", "CanonicalTurn"]

_MAX_TARGET_DISTANCE = 1e4
"""[m]: :data:`hik_sim.learning.network.MAX_TARGET_DISTANCE` (importing it would import torch)."""


class CanonicalTurn:
    """The first joint's turn taken out of a ``canonical_turn`` network's input and added back to its answers,
    in float64 as :class:`~hik_sim.learning.network.IKNetwork` does it in torch: compiled
    (:func:`~hik_sim.learning._fast_numba.canonical_pose`, :func:`~hik_sim.learning._fast_numba.turn_back`)
    on the ``numba`` backend, in Python on ``numpy``.

    Args:
        symmetry: the chain's :class:`~hik_sim.kinematics.symmetry.FirstJointSymmetry` (revolute).
        lower: the first joint's lower limit [rad].
        upper: its upper limit [rad].
        compiled: use the numba kernels.
        behind: a ``behind_turn`` network's turn (:func:`~hik_sim.kinematics.symmetry.range_turn`), not the azimuth.
    """

    def __init__(self, symmetry: Any, lower: float, upper: float, compiled: bool, behind: bool = False) -> None:
        origin, axis, u = (np.asarray(v, dtype=np.float64) for v in (symmetry.origin, symmetry.axis, symmetry.reference))
        self.frame = np.concatenate((origin, axis, u, np.cross(axis, u)))  # (12,): _canonical_kernels' frame
        self.lower, self.upper, self.behind = lower, upper, behind
        self._canonical_pose, self._turn_back = canonical_pose, turn_back
        if compiled:
            from hik_sim.learning import _fast_numba

            self._canonical_pose, self._turn_back = _fast_numba.canonical_pose, _fast_numba.turn_back
        self._pos, self._quat = np.empty(3), np.empty(4)

    def canonical(self, pos: np.ndarray, quat: np.ndarray, behind: bool | None = None) -> tuple[int, np.ndarray, np.ndarray, float]:
        """A pose (3,) [m], (4,) wxyz → (status, the pose turned by −turn about the axis, the turn [rad]: its azimuth
        or, with ``behind`` (default: the network's), the range_turn of it);
        status as :func:`~hik_sim.learning._canonical_turn.canonical_pose`'s 0, 1 (NaN/inf) or 4 (too far).
        The returned arrays are reused by the next call."""
        status, azimuth = self._canonical_pose(self.frame, pos, quat, self._pos, self._quat, _MAX_TARGET_DISTANCE,
                                               self.lower, self.upper, self.behind if behind is None else behind)
        return status, self._pos, self._quat, azimuth

    def back(self, answers: np.ndarray, azimuth: float) -> bool:
        """Column 0 of answers (H, k) (the canonical first joint) in place → the pose's own: + azimuth, wrapped
        into ``[lower, lower + 2π)``, beyond ``upper`` moved to the nearer limit round the circle. Returns
        whether any answer was moved to a limit."""
        return bool(self._turn_back(answers, azimuth, self.lower, self.upper))
