"""The first joint's turn taken out of a ``canonical_turn`` network's input and added back to its answers,
for one pose (:func:`canonical_pose`, :func:`turn_back`), as plain scalar Python that :mod:`hik_sim.learning._fast_numba`
compiles with numba (the ``numba`` backend of :class:`~hik_sim.learning.fast_network.FastIKNetwork`) and the ``numpy``
backend runs as it is: one definition, two speeds. :class:`~hik_sim.learning._canonical_turn.CanonicalTurn` calls one
or the other.
"""

from __future__ import annotations

import math

__all__ = ["canonical_pose", "turn_back"]

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
