"""Compiled single-target Levenberg–Marquardt (numba): FK, geometric Jacobian and the LM loop of
:class:`hik_sim.solvers.single_target.SingleTargetLM` in one call, without Python between iterations.

The chain geometry ``G`` is the flat float64 array of :func:`hik_sim.kinematics.flat_chain.flat_geometry`
(per joint: origin rotation (9), origin translation (3), axis (3), revolute flag (1); then the tool
rotation (9) and translation (3)). The method is the one the MuJoCo path runs, step for step: a 6-D
residual (position [m]; the axis-angle vector of the rotation still to go [rad] times the rotation
weight), the Gauss–Newton step damped by λ·(diag(JᵀJ) + 1e-9) and bounded at active limits (a joint
at a limit that the step would push beyond it is held, its row and column dropped, and the step
solved again for the others), every trial projected onto the joint limits, λ starting at ``damping``
(at ``close_damping`` for a seed already within the close tolerance:
:data:`hik_sim.solvers.lm_rules.CLOSE_DAMPING`), ÷ 3 after an accepted trial and × 4 after a
rejected one, stop once within the stop thresholds or once stalled (the cost above ``stall_ratio``
times its value ``stall_window`` iterations before). FK is evaluated at every
trial, the Jacobian only where a step starts from (the seed, and an accepted trial that is neither
converged nor the last), and both are counted. Importing this module needs numba;
:mod:`hik_sim.solvers.single_target` falls back to MuJoCo's kinematics where numba is missing.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit, prange

from hik_sim.kinematics._flat_chain_numba import GEOMETRY_STRIDE, rodrigues

__all__ = ["fk_jacobian", "first_good_batch", "lm_refine", "lm_refine_batch", "lm_restarts_batch"]


@njit(cache=True, boundscheck=False)
def fk_jacobian(G, q, pos, quat, jac):  # noqa: ANN001, ANN201
    """End-effector position ``pos`` (3,), unit quaternion ``quat`` (4,) wxyz (w ≥ 0) and geometric
    Jacobian ``jac`` (6, n) (linear rows, then angular) of configuration ``q`` (n,), written in place."""
    n = q.shape[0]
    origins, axes = np.empty((n, 3)), np.empty((n, 3))
    _forward(G, q, pos, quat, origins, axes)
    _jacobian(G, pos, origins, axes, jac)


@njit(cache=True, boundscheck=False)
def _forward(G, q, pos, quat, origins, axes):  # noqa: ANN001, ANN202
    """FK of ``q`` (n,): ``pos`` (3,), ``quat`` (4,) wxyz (w ≥ 0), and per joint its origin ``origins``
    (n, 3) [m] and unit axis ``axes`` (n, 3) in the base frame, which :func:`_jacobian` needs."""
    n = q.shape[0]
    R = np.eye(3)
    M = np.empty((3, 3))
    O = np.empty((3, 3))
    p = np.zeros(3)
    for i in range(n):
        g = GEOMETRY_STRIDE * i
        for r in range(3):
            p[r] += R[r, 0] * G[g + 9] + R[r, 1] * G[g + 10] + R[r, 2] * G[g + 11]
        ax, ay, az = G[g + 12], G[g + 13], G[g + 14]
        for r in range(3):  # R · origin rotation
            for s in range(3):
                O[r, s] = R[r, 0] * G[g + s] + R[r, 1] * G[g + 3 + s] + R[r, 2] * G[g + 6 + s]
        for r in range(3):  # the joint axis in the world (a rotation about it leaves it unchanged)
            axes[i, r] = O[r, 0] * ax + O[r, 1] * ay + O[r, 2] * az
            origins[i, r] = p[r]
        qv = q[i]
        if G[g + 15] != 0.0:  # revolute: R = R · O · Rodrigues(axis, q)
            rodrigues(ax, ay, az, qv, M)
            for r in range(3):
                for s in range(3):
                    R[r, s] = O[r, 0] * M[0, s] + O[r, 1] * M[1, s] + O[r, 2] * M[2, s]
        else:  # prismatic: the frame slides along its axis
            for r in range(3):
                p[r] += qv * axes[i, r]
                for s in range(3):
                    R[r, s] = O[r, s]
    tool = GEOMETRY_STRIDE * n
    for r in range(3):
        pos[r] = p[r] + R[r, 0] * G[tool + 9] + R[r, 1] * G[tool + 10] + R[r, 2] * G[tool + 11]
    for r in range(3):
        for s in range(3):
            M[r, s] = R[r, 0] * G[tool + s] + R[r, 1] * G[tool + 3 + s] + R[r, 2] * G[tool + 6 + s]
    _matrix_quaternion(M, quat)


@njit(cache=True, boundscheck=False)
def _jacobian(G, pos, origins, axes, jac):  # noqa: ANN001, ANN202
    """Geometric Jacobian ``jac`` (6, n) from :func:`_forward`'s end-effector position, origins and axes."""
    for i in range(origins.shape[0]):
        if G[GEOMETRY_STRIDE * i + 15] != 0.0:  # z × (p_ee − p_i), z
            dx, dy, dz = pos[0] - origins[i, 0], pos[1] - origins[i, 1], pos[2] - origins[i, 2]
            zx, zy, zz = axes[i, 0], axes[i, 1], axes[i, 2]
            jac[0, i] = zy * dz - zz * dy
            jac[1, i] = zz * dx - zx * dz
            jac[2, i] = zx * dy - zy * dx
            jac[3, i], jac[4, i], jac[5, i] = zx, zy, zz
        else:
            jac[0, i], jac[1, i], jac[2, i] = axes[i, 0], axes[i, 1], axes[i, 2]
            jac[3, i], jac[4, i], jac[5, i] = 0.0, 0.0, 0.0


@njit(cache=True, boundscheck=False, inline="always")
def _matrix_quaternion(M, quat):  # noqa: ANN001, ANN202
    """Rotation matrix (3, 3) → unit quaternion wxyz with w ≥ 0 (Shepperd's method)."""
    trace = M[0, 0] + M[1, 1] + M[2, 2]
    if trace > 0.0:
        s = 2.0 * math.sqrt(1.0 + trace)
        w, x, y, z = 0.25 * s, (M[2, 1] - M[1, 2]) / s, (M[0, 2] - M[2, 0]) / s, (M[1, 0] - M[0, 1]) / s
    elif M[0, 0] > M[1, 1] and M[0, 0] > M[2, 2]:
        s = 2.0 * math.sqrt(1.0 + M[0, 0] - M[1, 1] - M[2, 2])
        w, x, y, z = (M[2, 1] - M[1, 2]) / s, 0.25 * s, (M[0, 1] + M[1, 0]) / s, (M[0, 2] + M[2, 0]) / s
    elif M[1, 1] > M[2, 2]:
        s = 2.0 * math.sqrt(1.0 + M[1, 1] - M[0, 0] - M[2, 2])
        w, x, y, z = (M[0, 2] - M[2, 0]) / s, (M[0, 1] + M[1, 0]) / s, 0.25 * s, (M[1, 2] + M[2, 1]) / s
    else:
        s = 2.0 * math.sqrt(1.0 + M[2, 2] - M[0, 0] - M[1, 1])
        w, x, y, z = (M[1, 0] - M[0, 1]) / s, (M[0, 2] + M[2, 0]) / s, (M[1, 2] + M[2, 1]) / s, 0.25 * s
    norm = math.sqrt(w * w + x * x + y * y + z * z)
    if w < 0.0:
        norm = -norm
    quat[0], quat[1], quat[2], quat[3] = w / norm, x / norm, y / norm, z / norm


@njit(cache=True, boundscheck=False, inline="always")
def _residual(pos, quat, target_pos, target_quat, weight, out):  # noqa: ANN001, ANN202
    """The weighted residual (6,) into ``out``; returns (cost, position error [m], rotation error [rad])."""
    # rel = target ⊗ conj(current): the rotation still to go, in the world frame
    tw, tx, ty, tz = target_quat[0], target_quat[1], target_quat[2], target_quat[3]
    cw, cx, cy, cz = quat[0], -quat[1], -quat[2], -quat[3]
    w = tw * cw - tx * cx - ty * cy - tz * cz
    x = tw * cx + tx * cw + ty * cz - tz * cy
    y = tw * cy - tx * cz + ty * cw + tz * cx
    z = tw * cz + tx * cy - ty * cx + tz * cw
    if w < 0.0:
        w, x, y, z = -w, -x, -y, -z
    sin_half = math.sqrt(x * x + y * y + z * z)
    angle = 2.0 * math.atan2(sin_half, w)
    scale = angle / sin_half if sin_half > 1e-300 else 2.0 / max(w, 1e-300)
    out[0], out[1], out[2] = target_pos[0] - pos[0], target_pos[1] - pos[1], target_pos[2] - pos[2]
    out[3], out[4], out[5] = weight * scale * x, weight * scale * y, weight * scale * z
    cost = 0.0
    for k in range(6):
        cost += out[k] * out[k]
    return cost, math.sqrt(out[0] * out[0] + out[1] * out[1] + out[2] * out[2]), angle


@njit(cache=True, boundscheck=False)
def lm_refine(G, lower, upper, target_pos, target_quat, q, rotation_weight, damping, max_iterations, stop_position,  # noqa: ANN001, ANN201
              stop_rotation, stall_window, stall_ratio, close_damping, close_position, close_rotation, out_q):
    """Refine ``q`` (n,) towards the target; the answer goes into ``out_q`` (n,). A start within ``close_position`` [m]
    and ``close_rotation`` [rad] of the target begins at ``close_damping`` instead of ``damping`` (0, 0: none does).

    Returns:
        (position error [m], rotation error [rad], iterations, FK evaluations, Jacobian evaluations).
    """
    return _refine(G, lower, upper, np.ones(q.shape[0]), target_pos, target_quat, q, rotation_weight, damping, max_iterations,
                   stop_position, stop_rotation, stall_window, stall_ratio, 1, out_q, close_damping, close_position, close_rotation)


@njit(cache=True, boundscheck=False, parallel=True)
def lm_refine_batch(G, lower, upper, free, target_pos, target_quat, q, rotation_weight, damping, max_iterations,  # noqa: ANN001, ANN201
                    stop_position, stop_rotation, stall_window, stall_ratio, close_damping, close_position, close_rotation, seed_fk,
                    out_q, out_pos_err, out_rot_err, out_iterations, out_fk_evals, out_jac_evals):
    """:func:`lm_refine` for B targets (B, 3), (B, 4) from ``q`` (B, n), in parallel over the targets;
    ``free`` (n,): 1 for a joint that moves, 0 for one held at its value in ``q``; ``seed_fk`` (B,) int64: the FK
    evaluations to count for a seed (1; 0 where the caller has already spent and counted its FK)."""
    for b in prange(target_pos.shape[0]):
        pos_err, rot_err, iterations, fk_evals, jac_evals = _refine(
            G, lower, upper, free, target_pos[b], target_quat[b], q[b], rotation_weight, damping, max_iterations, stop_position,
            stop_rotation, stall_window, stall_ratio, seed_fk[b], out_q[b], close_damping, close_position, close_rotation)
        out_pos_err[b], out_rot_err[b], out_iterations[b] = pos_err, rot_err, iterations
        out_fk_evals[b], out_jac_evals[b] = fk_evals, jac_evals


@njit(cache=True, boundscheck=False)
def _refine(G, lower, upper, free, target_pos, target_quat, q, rotation_weight, damping, max_iterations, stop_position,  # noqa: ANN001, ANN202
            stop_rotation, stall_window, stall_ratio, seed_fk, out_q, close_damping, close_position, close_rotation):
    """The LM loop of one target (see the module's docstring); ``stall_window`` 0 never stops for a stall; ``seed_fk``:
    the FK evaluations counted for the seed (1, or 0 where its FK was spent and counted before); a seed within
    ``close_position`` [m] and ``close_rotation`` [rad] begins at ``close_damping`` instead of ``damping``."""
    n = q.shape[0]
    for i in range(n):
        out_q[i] = min(max(q[i], lower[i]), upper[i])
    pos, quat, origins, axes = np.empty(3), np.empty(4), np.empty((n, 3)), np.empty((n, 3))
    trial_pos, trial_quat, trial_origins, trial_axes = np.empty(3), np.empty(4), np.empty((n, 3)), np.empty((n, 3))
    jac = np.empty((6, n))
    residual, trial_residual = np.empty(6), np.empty(6)
    weights = np.array([1.0, 1.0, 1.0, rotation_weight, rotation_weight, rotation_weight])
    weighted = np.empty((6, n))
    hessian = np.empty((n, n))
    system = np.empty((n, n))
    gradient = np.empty(n)
    moving = np.empty(n)
    trial = np.empty(n)
    history = np.empty(max_iterations + 1)  # the cost after each iteration
    _forward(G, out_q, pos, quat, origins, axes)
    fk_evals, jac_evals, iterations = seed_fk, 0, 0
    cost, pos_err, rot_err = _residual(pos, quat, target_pos, target_quat, rotation_weight, residual)
    lam = close_damping if pos_err < close_position and rot_err < close_rotation else damping
    history[0] = cost
    converged = pos_err < stop_position and rot_err < stop_rotation
    if not converged and max_iterations > 0:
        _jacobian(G, pos, origins, axes, jac)
        jac_evals += 1
    while iterations < max_iterations and not converged:
        for k in range(6):
            for i in range(n):
                weighted[k, i] = jac[k, i] * weights[k]
        for i in range(n):
            acc = 0.0
            for k in range(6):
                acc += weighted[k, i] * residual[k]
            gradient[i] = acc
            for j in range(i, n):
                acc = 0.0
                for k in range(6):
                    acc += weighted[k, i] * weighted[k, j]
                hessian[i, j] = acc
                hessian[j, i] = acc
        for i in range(n):
            moving[i] = free[i]
        # the step of the joints that can move: a joint at a limit that the step would push beyond it
        # is held (its column dropped) and the step solved again for the others
        for _ in range(n):
            for i in range(n):
                for j in range(n):
                    system[i, j] = hessian[i, j] * moving[i] * moving[j]
                system[i, i] += lam * (hessian[i, i] * moving[i] + 1e-9)
                gradient_i = gradient[i] * moving[i]
                trial[i] = gradient_i
            step = np.linalg.solve(system, trial)
            held = False
            for i in range(n):
                if moving[i] != 0.0 and ((out_q[i] <= lower[i] and step[i] < 0.0) or (out_q[i] >= upper[i] and step[i] > 0.0)):
                    moving[i] = 0.0
                    held = True
            if not held:
                break
        for i in range(n):
            trial[i] = min(max(out_q[i] + moving[i] * step[i], lower[i]), upper[i])
        _forward(G, trial, trial_pos, trial_quat, trial_origins, trial_axes)
        fk_evals += 1
        iterations += 1
        trial_cost, trial_pos_err, trial_rot_err = _residual(trial_pos, trial_quat, target_pos, target_quat, rotation_weight,
                                                             trial_residual)
        if trial_cost < (1.0 - 1e-12) * cost:  # a decrease beyond rounding (the backends agree on every decision)
            for i in range(n):
                out_q[i] = trial[i]
            residual[:] = trial_residual
            cost, pos_err, rot_err = trial_cost, trial_pos_err, trial_rot_err
            lam = max(lam / 3.0, 1e-12)
            converged = pos_err < stop_position and rot_err < stop_rotation
            if not converged and iterations < max_iterations:  # the next step needs the Jacobian here
                _jacobian(G, trial_pos, trial_origins, trial_axes, jac)
                jac_evals += 1
        else:
            lam = min(lam * 4.0, 1e8)
        history[iterations] = cost
        if stall_window > 0 and iterations >= stall_window and cost > stall_ratio * history[iterations - stall_window]:
            break
    return pos_err, rot_err, iterations, fk_evals, jac_evals


@njit(cache=True, boundscheck=False, parallel=True)
def first_good_batch(G, answers, target_pos, target_quat, order, good_position, good_rotation, out_score, out_fk_evals,  # noqa: ANN001, ANN201
                     out_found):
    """Each target's answers checked by FK in ``order`` until one is within the tolerance, in parallel over the targets.

    Args:
        G: the chain geometry (the module's docstring).
        answers: (B, H, n) configurations, inside the limits; NaN rows are absent (skipped, never counted).
        target_pos: (B, 3) [m].
        target_quat: (B, 4) wxyz.
        order: (H,) int64, the heads in the order to check them.
        good_position: the tolerance's position [m] (strict: an error below it).
        good_rotation: its rotation [rad].
        out_score: (B, H), written: position error / ``good_position`` + rotation error / ``good_rotation`` of
            each answer checked, inf for an answer not checked.
        out_fk_evals: (B,) int64, written: the FK evaluations spent.
        out_found: (B,) int64, written: the head found within the tolerance, −1 where none is.
    """
    batch, hypotheses, n = answers.shape
    for b in prange(batch):
        pos, quat, origins, axes, residual = np.empty(3), np.empty(4), np.empty((n, 3)), np.empty((n, 3)), np.empty(6)
        out_found[b] = -1
        out_fk_evals[b] = 0
        for h in range(hypotheses):
            out_score[b, h] = np.inf
        for k in range(hypotheses):
            h = order[k]
            if answers[b, h, 0] != answers[b, h, 0]:  # NaN: an absent answer (a target with fewer), skipped
                continue
            _forward(G, answers[b, h], pos, quat, origins, axes)
            out_fk_evals[b] += 1
            _, pos_err, rot_err = _residual(pos, quat, target_pos[b], target_quat[b], 1.0, residual)
            out_score[b, h] = pos_err / good_position + rot_err / good_rotation
            if pos_err < good_position and rot_err < good_rotation:
                out_found[b] = h
                break


@njit(cache=True, boundscheck=False, parallel=True)
def lm_restarts_batch(G, lower, upper, free, target_pos, target_quat, seeds, rotation_weight, damping, max_iterations,  # noqa: ANN001, ANN201
                      stop_position, stop_rotation, stall_window, stall_ratio, close_damping, close_position, close_rotation,
                      finish_position, finish_rotation, best_q, best_pos_err, best_rot_err, out_runs, out_iterations, out_fk_evals,
                      out_jac_evals):
    """LM from each target's seeds in turn, in parallel over the targets, until its best answer is within the finish.

    ``seeds`` (B, R, n): the starts, tried in order (fixed joints already at their values). A target takes no
    further seed once its best answer's position error [m] is below ``finish_position`` and its rotation error
    [rad] below ``finish_rotation`` (−inf: every seed runs). ``best_q`` (B, n), ``best_pos_err`` (B,) and
    ``best_rot_err`` (B,) hold the best answer so far and its errors (inf where there is none yet), updated in
    place; best: least position + ``rotation_weight`` × rotation error, as
    :func:`hik_sim.solvers.restarts._restarts` keeps it. Written, each (B,) int64: ``out_runs`` the seeds run,
    ``out_iterations`` their LM iterations, ``out_fk_evals`` and ``out_jac_evals`` their FK (each seed's
    counted) and Jacobian evaluations. The other arguments are :func:`lm_refine_batch`'s.
    """
    batch, count, n = seeds.shape
    for b in prange(batch):
        q = np.empty(n)
        runs, iterations_sum, fk_sum, jac_sum = 0, 0, 0, 0
        for r in range(count):
            if best_pos_err[b] < finish_position and best_rot_err[b] < finish_rotation:
                break
            pos_err, rot_err, iterations, fk_evals, jac_evals = _refine(
                G, lower, upper, free, target_pos[b], target_quat[b], seeds[b, r], rotation_weight, damping, max_iterations,
                stop_position, stop_rotation, stall_window, stall_ratio, 1, q, close_damping, close_position, close_rotation)
            runs += 1
            iterations_sum += iterations
            fk_sum += fk_evals
            jac_sum += jac_evals
            if pos_err + rotation_weight * rot_err < best_pos_err[b] + rotation_weight * best_rot_err[b]:
                for i in range(n):
                    best_q[b, i] = q[i]
                best_pos_err[b], best_rot_err[b] = pos_err, rot_err
        out_runs[b], out_iterations[b], out_fk_evals[b], out_jac_evals[b] = runs, iterations_sum, fk_sum, jac_sum
