"""The first joint's turn taken out of a ``canonical_turn`` network's input and added back to its answers,
for one pose (:func:`canonical_pose`, :func:`turn_back`), as plain scalar Python that :mod:`hik_sim.learning._fast_numba` compiles with numba (the
``numba`` backend of :class:`~hik_sim.learning.fast_network.FastIKNetwork`) and the ``numpy`` backend
runs as it is: one definition, two speeds. :class:`~hik_sim.learning.network.IKNetwork` does the same
in torch, batched (tests/test_canonical_turn.py checks the two agree). :class:`CanonicalTurn` holds one
network's frame and limits and calls the compiled or the plain functions.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["canonical_pose", "turn_back", "CanonicalTurn"]

_MAX_TARGET_DISTANCE = 1e4
"""[m]: :data:`hik_sim.learning.network.MAX_TARGET_DISTANCE` (importing it would import torch)."""

# frame (float64, 12): the first joint's origin (3) [m], its unit axis (3), the unit direction of azimuth 0 (3)
# and axis × that direction (3), base frame (hik_sim.kinematics.symmetry.FirstJointSymmetry).


def canonical_pose(frame, pos, quat, out_pos, out_quat, max_distance, lower, upper, behind):  # noqa: ANN001, ANN201
    """The pose turned by −turn about the first joint's axis into out_pos (3,), out_quat (4,): the turn is the
    pose's azimuth, or with ``behind`` (a ``behind_turn`` network) :func:`~hik_sim.kinematics.symmetry.range_turn` of it
    for the first joint's range [lower, upper] [rad].

    Returns:
        (status, turn [rad]): status 0, or 1 for a NaN/inf in the pose and 4 for a position
        coordinate beyond ``max_distance`` [m], as :func:`hik_sim.learning._fast_numba.prepare` (the outputs are then unset).
    """
    for i in range(4):
        if not math.isfinite(quat[i]):
            return 1, 0.0
    for i in range(3):
        if not math.isfinite(pos[i]):
            return 1, 0.0
        if abs(pos[i]) > max_distance:
            return 4, 0.0
    dx, dy, dz = pos[0] - frame[0], pos[1] - frame[1], pos[2] - frame[2]
    kx, ky, kz = frame[3], frame[4], frame[5]
    azimuth = math.atan2(dx * frame[9] + dy * frame[10] + dz * frame[11], dx * frame[6] + dy * frame[7] + dz * frame[8])
    if behind:  # hik_sim.kinematics.symmetry.range_turn for one value
        value = azimuth - lower
        if lower + (value - 2.0 * math.pi * math.floor(value / (2.0 * math.pi))) > upper:
            azimuth = azimuth - math.pi if azimuth > 0.0 else azimuth + math.pi
    c, s = math.cos(azimuth), -math.sin(azimuth)  # Rodrigues' formula for the turn by −azimuth
    along = (dx * kx + dy * ky + dz * kz) * (1.0 - c)
    out_pos[0] = frame[0] + dx * c + (ky * dz - kz * dy) * s + kx * along
    out_pos[1] = frame[1] + dy * c + (kz * dx - kx * dz) * s + ky * along
    out_pos[2] = frame[2] + dz * c + (kx * dy - ky * dx) * s + kz * along
    w, h = math.cos(azimuth / 2), -math.sin(azimuth / 2)
    x, y, z = h * kx, h * ky, h * kz
    qw, qx, qy, qz = quat[0], quat[1], quat[2], quat[3]
    out_quat[0] = w * qw - x * qx - y * qy - z * qz
    out_quat[1] = w * qx + x * qw + y * qz - z * qy
    out_quat[2] = w * qy - x * qz + y * qw + z * qx
    out_quat[3] = w * qz + x * qy - y * qx + z * qw
    return 0, azimuth


def turn_back(answers, azimuth, lower, upper):  # noqa: ANN001, ANN201
    """Column 0 of answers (H, n) (the canonical first joint) + azimuth, wrapped into [lower, lower + 2π),
    beyond ``upper`` moved to the nearer limit round the circle. Returns whether any was moved."""
    turn = 2.0 * math.pi
    moved = False
    for h in range(answers.shape[0]):
        value = answers[h, 0] + azimuth - lower
        value = lower + (value - turn * math.floor(value / turn))
        if value > upper:
            value = upper if value - upper <= lower + turn - value else lower
            moved = True
        answers[h, 0] = value
    return moved


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
        self.frame = np.concatenate((origin, axis, u, np.cross(axis, u)))  # (12,): _canonical_turn's frame
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
