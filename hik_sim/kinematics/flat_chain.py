"""A chain's geometry as one flat float64 array, the layout the compiled kinematics kernels read.

:func:`flat_geometry` writes a :class:`~hik_sim.kinematics.geometry.ChainGeometry` as ``G``: per joint
:data:`GEOMETRY_STRIDE` values, rotation (3×3, row-major), translation (3), axis (3), revolute (1 or 0); then the
tool's rotation (9) and translation (3). The same geometry
:class:`~hik_sim.kinematics.mujoco_chain.SingleTargetKinematics` compiles into MuJoCo. The kernels that read it
(forward kinematics, scores of answers, Jacobians) are in :mod:`hik_sim.kinematics._flat_chain_numba` (numba) and
:mod:`hik_sim.solvers._lm_numba`; :func:`scores` is the scores' NumPy form, for when numba is not installed.
NumPy only: importing this module imports neither numba nor torch.
"""

# ruff: noqa: N803, N806  (the kernels' matrix names: G, R, J, M, T, D)

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["GEOMETRY_STRIDE", "flat_geometry", "scores"]

GEOMETRY_STRIDE = 16
"""Values per joint in the flat geometry ``G``."""


def flat_geometry(geometry: Any) -> np.ndarray:
    """A :class:`~hik_sim.kinematics.geometry.ChainGeometry` as the flat float64 array ``G`` (n·16 + 12,) that the
    compiled kernels read (:func:`hik_sim.kinematics._flat_chain_numba.scores`)."""
    n = len(geometry.joint_names)
    flat = np.zeros(GEOMETRY_STRIDE * n + 12)
    for i in range(n):
        g = GEOMETRY_STRIDE * i
        flat[g:g + 9] = np.asarray(geometry.rotations[i], dtype=np.float64).reshape(9)
        flat[g + 9:g + 12] = geometry.translations[i]
        flat[g + 12:g + 15] = geometry.axes[i]
        flat[g + 15] = 1.0 if bool(geometry.revolute[i]) else 0.0
    flat[GEOMETRY_STRIDE * n:GEOMETRY_STRIDE * n + 9] = np.asarray(geometry.tool_rotation, dtype=np.float64).reshape(9)
    flat[GEOMETRY_STRIDE * n + 9:] = geometry.tool_translation
    return flat


def _rotations(axis: np.ndarray, angles: np.ndarray) -> np.ndarray:
    """(H, 3, 3) rotations by ``angles`` (H,) [rad] about the unit ``axis`` (3,) (Rodrigues' formula)."""
    k = np.array([[0.0, -axis[2], axis[1]], [axis[2], 0.0, -axis[0]], [-axis[1], axis[0], 0.0]])
    s, c = np.sin(angles)[:, None, None], np.cos(angles)[:, None, None]
    return np.eye(3) + s * k + (1.0 - c) * (k @ k)


def scores(G: np.ndarray, answers: np.ndarray, pos: np.ndarray, quat: np.ndarray, pos_tol: float, rot_tol: float) -> np.ndarray:
    """How badly each configuration reaches a target, in NumPy: the arithmetic of the compiled
    :func:`hik_sim.kinematics._flat_chain_numba.scores`, batched over the configurations.

    Args:
        G: the flat chain geometry (:func:`flat_geometry`).
        answers: (H, n) configurations [rad or m].
        pos: (3,) target position [m].
        quat: (4,) target orientation wxyz (any non-zero norm).
        pos_tol: position unit [m].
        rot_tol: rotation unit [rad].

    Returns:
        (H,) position error / pos_tol + rotation error / rot_tol, float64 forward kinematics; the rotation error
        is the geodesic angle ``atan2(‖v‖, trace − 1)`` of the rotation from the target to the reached orientation.
    """
    answers = np.asarray(answers, dtype=np.float64)
    count, n = answers.shape
    R = np.tile(np.eye(3), (count, 1, 1))
    p = np.zeros((count, 3))
    for i in range(n):
        g = GEOMETRY_STRIDE * i
        origin, translation, axis = G[g:g + 9].reshape(3, 3), G[g + 9:g + 12], G[g + 12:g + 15]
        p += R @ translation
        if G[g + 15] != 0.0:  # revolute: the origin rotation, then the joint's turn about its axis
            J = origin @ _rotations(axis, answers[:, i])
        else:  # prismatic: the frame slides along its axis
            J = np.broadcast_to(origin, (count, 3, 3))
            p += answers[:, i, None] * (R @ (origin @ axis))
        R = R @ J
    tool = GEOMETRY_STRIDE * n
    p += R @ G[tool + 9:tool + 12]
    M = R @ G[tool:tool + 9].reshape(3, 3)
    w, a, b, c = np.asarray(quat, dtype=np.float64) / math.sqrt(float(np.dot(quat, quat)))
    T = np.array([[1 - 2 * (b * b + c * c), 2 * (a * b - c * w), 2 * (a * c + b * w)],
                  [2 * (a * b + c * w), 1 - 2 * (a * a + c * c), 2 * (b * c - a * w)],
                  [2 * (a * c - b * w), 2 * (b * c + a * w), 1 - 2 * (a * a + b * b)]])
    D = T.T @ M  # (H, 3, 3): the rotation from the target to the reached orientation
    trace = D[:, 0, 0] + D[:, 1, 1] + D[:, 2, 2]
    v = np.stack((D[:, 2, 1] - D[:, 1, 2], D[:, 0, 2] - D[:, 2, 0], D[:, 1, 0] - D[:, 0, 1]), axis=1)
    angle = np.arctan2(np.linalg.norm(v, axis=1), trace - 1.0)
    return np.linalg.norm(p - np.asarray(pos, dtype=np.float64), axis=1) / pos_tol + angle / rot_tol
