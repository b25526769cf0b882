"""Compiled kernels on the flat chain geometry ``G`` (:func:`hik_sim.kinematics.flat_chain.flat_geometry`), numba;
imported only when numba is installed.

- :func:`rodrigues`: the rotation about a unit axis (inlined into the kernels that call it);
- :func:`scores`: float64 forward kinematics of several configurations and how badly each reaches a target
  (position error / pos_tol + rotation error / rot_tol);
- :func:`rank`: a network's free-joint answers completed with the fixed joints, scored, the best one's index.

:mod:`hik_sim.learning._fast_numba` calls :func:`rank` in the same compiled call as a network's forward pass, and
:mod:`hik_sim.solvers._lm_numba` builds its Jacobians with :func:`rodrigues`.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hik_sim.kinematics.flat_chain import GEOMETRY_STRIDE

__all__ = ["rodrigues", "scores", "rank", "GEOMETRY_STRIDE"]

_FAST = {"reassoc", "contract"}  # reorder sums (vectorise), fuse multiply-adds; no assumptions about NaN/inf



@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def rodrigues(ax, ay, az, angle, M):  # noqa: ANN001, ANN201
    """The rotation by ``angle`` [rad] about the unit axis (ax, ay, az), written into ``M`` (3, 3)."""
    cq, sq = math.cos(angle), math.sin(angle)
    vq = 1.0 - cq
    M[0, 0] = cq + ax * ax * vq
    M[0, 1] = ax * ay * vq - az * sq
    M[0, 2] = ax * az * vq + ay * sq
    M[1, 0] = ay * ax * vq + az * sq
    M[1, 1] = cq + ay * ay * vq
    M[1, 2] = ay * az * vq - ax * sq
    M[2, 0] = az * ax * vq - ay * sq
    M[2, 1] = az * ay * vq + ax * sq
    M[2, 2] = cq + az * az * vq


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def scores(G, answers, pos, quat, pos_tol, rot_tol, out):  # noqa: ANN001, ANN201, C901
    """How badly each answer (H, n) reaches the target: position error / pos_tol + rotation error / rot_tol.

    Forward kinematics of the chain geometry G in float64; the rotation error is the geodesic angle
    ``atan2(‖v‖, trace − 1)`` of the rotation from the target to the reached orientation (v the
    skew part), accurate near 0 and near π. ``quat`` need not be unit.
    """
    n = answers.shape[1]
    qn = math.sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3])
    w, a, b, c = quat[0] / qn, quat[1] / qn, quat[2] / qn, quat[3] / qn
    T = np.empty((3, 3))  # target rotation
    T[0, 0] = 1 - 2 * (b * b + c * c)
    T[0, 1] = 2 * (a * b - c * w)
    T[0, 2] = 2 * (a * c + b * w)
    T[1, 0] = 2 * (a * b + c * w)
    T[1, 1] = 1 - 2 * (a * a + c * c)
    T[1, 2] = 2 * (b * c - a * w)
    T[2, 0] = 2 * (a * c - b * w)
    T[2, 1] = 2 * (b * c + a * w)
    T[2, 2] = 1 - 2 * (a * a + b * b)
    R = np.empty((3, 3))
    M = np.empty((3, 3))
    J = np.empty((3, 3))
    p = np.empty(3)
    tool = GEOMETRY_STRIDE * n
    for h in range(answers.shape[0]):
        for r in range(3):
            p[r] = 0.0
            for s in range(3):
                R[r, s] = 1.0 if r == s else 0.0
        for i in range(n):
            g = GEOMETRY_STRIDE * i
            for r in range(3):  # p += R t
                p[r] += R[r, 0] * G[g + 9] + R[r, 1] * G[g + 10] + R[r, 2] * G[g + 11]
            qv = answers[h, i]
            ax, ay, az = G[g + 12], G[g + 13], G[g + 14]
            if G[g + 15] != 0.0:  # revolute: J = origin rotation · Rodrigues(axis, q)
                rodrigues(ax, ay, az, qv, M)
                for r in range(3):
                    for s in range(3):
                        J[r, s] = G[g + 3 * r] * M[0, s] + G[g + 3 * r + 1] * M[1, s] + G[g + 3 * r + 2] * M[2, s]
            else:  # prismatic: J = origin rotation, and the frame slides along its axis
                for r in range(3):
                    for s in range(3):
                        J[r, s] = G[g + 3 * r + s]
                d0 = J[0, 0] * ax + J[0, 1] * ay + J[0, 2] * az
                d1 = J[1, 0] * ax + J[1, 1] * ay + J[1, 2] * az
                d2 = J[2, 0] * ax + J[2, 1] * ay + J[2, 2] * az
                for r in range(3):
                    p[r] += qv * (R[r, 0] * d0 + R[r, 1] * d1 + R[r, 2] * d2)
            for r in range(3):  # R = R J
                r0, r1, r2 = R[r, 0], R[r, 1], R[r, 2]
                for s in range(3):
                    M[r, s] = r0 * J[0, s] + r1 * J[1, s] + r2 * J[2, s]
            for r in range(3):
                for s in range(3):
                    R[r, s] = M[r, s]
        for r in range(3):  # the tool
            p[r] += R[r, 0] * G[tool + 9] + R[r, 1] * G[tool + 10] + R[r, 2] * G[tool + 11]
        for r in range(3):
            r0, r1, r2 = R[r, 0], R[r, 1], R[r, 2]
            for s in range(3):
                M[r, s] = r0 * G[tool + s] + r1 * G[tool + 3 + s] + r2 * G[tool + 6 + s]
        # relative rotation D = Tᵀ M, D[i, j] = Σ_k T[k, i] M[k, j]: the angle from its trace and skew part
        trace = 0.0
        for r in range(3):
            trace += T[0, r] * M[0, r] + T[1, r] * M[1, r] + T[2, r] * M[2, r]
        vx = (T[0, 2] * M[0, 1] + T[1, 2] * M[1, 1] + T[2, 2] * M[2, 1]) - (T[0, 1] * M[0, 2] + T[1, 1] * M[1, 2] + T[2, 1] * M[2, 2])
        vy = (T[0, 0] * M[0, 2] + T[1, 0] * M[1, 2] + T[2, 0] * M[2, 2]) - (T[0, 2] * M[0, 0] + T[1, 2] * M[1, 0] + T[2, 2] * M[2, 0])
        vz = (T[0, 1] * M[0, 0] + T[1, 1] * M[1, 0] + T[2, 1] * M[2, 0]) - (T[0, 0] * M[0, 1] + T[1, 0] * M[1, 1] + T[2, 0] * M[2, 1])
        angle = math.atan2(math.sqrt(vx * vx + vy * vy + vz * vz), trace - 1.0)
        dx, dy, dz = p[0] - pos[0], p[1] - pos[1], p[2] - pos[2]
        out[h] = math.sqrt(dx * dx + dy * dy + dz * dz) / pos_tol + angle / rot_tol


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def rank(G, template, free_index, free, pos, quat, pos_tol, rot_tol, answers, out):  # noqa: ANN001, ANN201
    """The choice among a network's answers, in the same call as the network.

    ``answers`` (H, n) ← the clamped free-joint answers ``free`` (H·m,), head order, with the fixed
    joints' values of ``template`` (n,) (``free_index`` (m,): where the free joints go); ``out``
    (H,) ← their :func:`scores`. Returns the best answer's index: the first of the lowest scores,
    as ``np.argmin`` chooses.
    """
    joints = free_index.shape[0]
    for h in range(answers.shape[0]):
        for i in range(template.shape[0]):
            answers[h, i] = template[i]
        for k in range(joints):
            answers[h, free_index[k]] = free[h * joints + k]
    scores(G, answers, pos, quat, pos_tol, rot_tol, out)
    best = 0
    for h in range(1, out.shape[0]):
        if out[h] < out[best]:
            best = h
    return best
