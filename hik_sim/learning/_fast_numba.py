"""Compiled kernels of :mod:`hik_sim.learning.fast_network` (numba; imported only when numba is installed).

One call runs a whole forward pass. The weights travel as one flat float32 array ``P`` (the torch
model's own float32 values, unchanged: nothing is folded into them, so nothing is rounded again),
the layout as an int64 array ``I`` of offsets and sizes, a few float64 constants as ``S``; every
activation and every sum is float64. A float32 weight times a float64 activation is exact, so the
result is the float64 forward pass of the shipped weights to about 1e-13, while the big matrices
cost float32's memory traffic (at batch 1 a matrix-vector product streams its matrix once, and
that traffic is most of the cost).

The choice among answers (:func:`rank`, :func:`scores`: forward kinematics of the flat chain geometry) lives in
:mod:`hik_sim.kinematics._flat_chain_numba` and is compiled into the same call as the network
(:func:`mlp_solve_ranked`; HarmoAtt-IK's kernels are in :mod:`hik_sim.learning._harmoatt_numba` and, for its paper
trunk, :mod:`hik_sim.learning._harmoatt_cycleik_numba`, on the building blocks here: :func:`limit_head`, :func:`add_turn`).
A ``turn_input`` model's turn travels as float64 in the input, x[7:9], never rounded into the weights. The canonical
turn (:func:`canonical_pose`, :func:`turn_back`) is :mod:`hik_sim.learning._canonical_kernels`' plain Python, compiled here.
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hik_sim.kinematics._flat_chain_numba import GEOMETRY_STRIDE, rank, scores
from hik_sim.learning import _canonical_kernels

__all__ = ["mlp_forward", "mlp_solve", "limit_head", "add_turn", "prepare", "clamp", "scores", "rank", "canonical_pose", "turn_back",
           "mlp_solve_ranked", "MLP_SLOTS", "GEOMETRY_STRIDE"]

_FAST = {"reassoc", "contract"}  # reorder sums (vectorise), fuse multiply-adds; no assumptions about NaN/inf
_SQRT1_2 = 0.7071067811865476
_SQRT_2_PI = 0.7978845608028654


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def _linear(P, w, b, n_out, n_in, x, out):  # noqa: ANN001, ANN202
    """out[:n_out] = W x + b, W (n_out, n_in) row-major at P[w:], b at P[b:] (b < 0: no bias).

    Four rows at a time, each a slice of P: indexing slices from 0 lets LLVM drop the negative-index
    checks and vectorise (indexing P at ``w + i·n_in + j`` was 7× slower).
    """
    i = 0
    while i + 4 <= n_out:
        r0 = w + i * n_in
        row0 = P[r0:r0 + n_in]
        row1 = P[r0 + n_in:r0 + 2 * n_in]
        row2 = P[r0 + 2 * n_in:r0 + 3 * n_in]
        row3 = P[r0 + 3 * n_in:r0 + 4 * n_in]
        a0 = 0.0
        a1 = 0.0
        a2 = 0.0
        a3 = 0.0
        for j in range(n_in):
            xj = x[j]
            a0 += np.float64(row0[j]) * xj
            a1 += np.float64(row1[j]) * xj
            a2 += np.float64(row2[j]) * xj
            a3 += np.float64(row3[j]) * xj
        if b >= 0:
            a0 += P[b + i]
            a1 += P[b + i + 1]
            a2 += P[b + i + 2]
            a3 += P[b + i + 3]
        out[i] = a0
        out[i + 1] = a1
        out[i + 2] = a2
        out[i + 3] = a3
        i += 4
    while i < n_out:
        row0 = P[w + i * n_in:w + (i + 1) * n_in]
        a0 = 0.0
        for j in range(n_in):
            a0 += np.float64(row0[j]) * x[j]
        if b >= 0:
            a0 += P[b + i]
        out[i] = a0
        i += 1


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def _erf(y):  # noqa: ANN001, ANN202
    """erf(y) to 6e-15 (absolute, against mpmath), branch-free so that LLVM vectorises the loops calling it.

    libm's erf costs ~10 ns a call, and a network has thousands of GELUs (31 µs of the shipped
    HarmoAtt-IK's forward pass); this costs ~2 ns. Two Chebyshev fits (made with mpmath at 40
    digits, in the power basis of the mapped variable): erf(y)/y as a degree-18 polynomial of
    u = (y² − 3.125)/3.125 for |y| ≤ 2.5, and erfc(|y|) as a degree-24 polynomial of
    w = (|y| − 4.25)/1.75 for 2.5 < |y| ≤ 6 (erfc(6) = 2e-17: beyond it erf is ±1 in float64). Both
    are evaluated and one is selected.
    """
    a = abs(y)
    u = (y * y - 3.125) * 0.32
    p = 2.630833095233691e-10
    p = p * u + -1.4031109841246354e-09
    p = p * u + 7.008757644430971e-09
    p = p * u + -3.945885844969831e-08
    p = p * u + 2.0760635858383275e-07
    p = p * u + -1.0146524178516733e-06
    p = p * u + 4.645486135838215e-06
    p = p * u + -1.9835724542286024e-05
    p = p * u + 7.856404941794367e-05
    p = p * u + -0.0002870695535999869
    p = p * u + 0.0009617886553527909
    p = p * u + -0.002934500176432066
    p = p * u + 0.008093207926517187
    p = p * u + -0.020022327213280833
    p = p * u + 0.0441362932123459
    p = p * u + -0.08646495074634146
    p = p * u + 0.15217348832427052
    p = p * u + -0.2545412350226619
    p = p * u + 0.5586599906120294
    small = y * p
    w = (min(a, 6.0) - 4.25) * (1.0 / 1.75)
    p = -1.4595334696329442e-08
    p = p * w + 4.601708291221715e-08
    p = p * w + 2.5904643737185345e-08
    p = p * w + -2.981426971178666e-07
    p = p * w + 4.5720707015199314e-07
    p = p * w + 3.385176719883032e-08
    p = p * w + -1.3721625801590484e-06
    p = p * w + 3.237913829162755e-06
    p = p * w + -4.329209887958345e-06
    p = p * w + 1.7891382422114912e-06
    p = p * w + 7.612122793878929e-06
    p = p * w + -2.4721643670916378e-05
    p = p * w + 4.61345723334975e-05
    p = p * w + -6.494927104680248e-05
    p = p * w + 7.409691394331666e-05
    p = p * w + -7.03495406456695e-05
    p = p * w + 5.610647073260306e-05
    p = p * w + -3.7584537784027445e-05
    p = p * w + 2.0994124352507616e-05
    p = p * w + -9.638516531436023e-06
    p = p * w + 3.552685918727425e-06
    p = p * w + -1.0130252806080228e-06
    p = p * w + 2.1012416250554663e-07
    p = p * w + -2.8251987200827078e-08
    p = p * w + 1.8505741372214527e-09
    big = 1.0 - p
    if y < 0:
        big = -big
    return small if a <= 2.5 else big


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def _gelu(v, n, tanh_form):  # noqa: ANN001, ANN202
    """GELU in place on v[:n]: exact (erf), or torch's tanh form."""
    if tanh_form:
        for i in range(n):
            t = v[i]
            v[i] = 0.5 * t * (1.0 + math.tanh(_SQRT_2_PI * (t + 0.044715 * t * t * t)))
    else:
        for i in range(n):
            t = v[i]
            v[i] = 0.5 * t * (1.0 + _erf(t * _SQRT1_2))


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def _layer_norm(P, w, b, eps, x, n, out):  # noqa: ANN001, ANN202
    """out[:n] = (x − mean) / √(var + eps) · weight + bias over all of x[:n] (w = −1: no affine; w = −2: no
    LayerNorm at all, out = x, as the dense trunk has)."""
    if w == -2:
        for i in range(n):
            out[i] = x[i]
        return
    mean = 0.0
    for i in range(n):
        mean += x[i]
    mean /= n
    var = 0.0
    for i in range(n):
        d = x[i] - mean
        var += d * d
    scale = 1.0 / math.sqrt(var / n + eps)
    if w >= 0:
        weight = P[w:w + n]
        bias = P[b:b + n]
        for i in range(n):
            out[i] = (x[i] - mean) * scale * weight[i] + bias[i]
    else:
        for i in range(n):
            out[i] = (x[i] - mean) * scale


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def _sigmoid(t):  # noqa: ANN001, ANN202
    return 1.0 / (1.0 + math.exp(-t))


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def _sigmoid_inplace(v, n, bits, poly):  # noqa: ANN001, ANN202
    """v[:n] = 1 / (1 + exp(−v)) to 5e-16, in two loops that LLVM vectorises (libm's exp does not; 2× faster).

    exp(y), y clamped to ±700: Cody–Waite reduction y = k·ln 2 + r (fdlibm's two-part ln 2), a
    degree-12 Taylor polynomial of exp(r) for |r| ≤ ln 2 / 2 (remainder below 2e-16), and 2^k built
    from its IEEE bits in ``bits`` (int64 scratch, n values); ``poly`` float64 scratch.
    """
    for i in range(n):
        y = min(max(-v[i], -700.0), 700.0)
        k = math.floor(y * 1.4426950408889634 + 0.5)
        r = (y - k * 6.93147180369123816490e-01) - k * 1.90821492927058770002e-10
        p = 2.08767569878681e-09
        p = p * r + 2.505210838544172e-08
        p = p * r + 2.755731922398589e-07
        p = p * r + 2.7557319223985893e-06
        p = p * r + 2.48015873015873e-05
        p = p * r + 0.0001984126984126984
        p = p * r + 0.001388888888888889
        p = p * r + 0.008333333333333333
        p = p * r + 0.041666666666666664
        p = p * r + 0.16666666666666666
        p = p * r + 0.5
        p = p * r + 1.0
        p = p * r + 1.0
        poly[i] = p
        bits[i] = (np.int64(k) + 1023) << 52
    scale = bits.view(np.float64)
    for i in range(n):
        v[i] = 1.0 / (1.0 + poly[i] * scale[i])


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def limit_head(P, w, b, center, half, outputs, joints, n_in, features, out):  # noqa: ANN001, ANN201
    """A :class:`~hik_sim.learning.models.common.LimitHead` on features[:n_in]: out (H·m,) = centre + half-range ·
    tanh(W features + b), W (H·m, n_in) at P[w:], b at P[b:], the m = ``joints`` centres and half-ranges at P[center:],
    P[half:]."""
    _linear(P, w, b, outputs, n_in, features, out)
    m = 0
    for i in range(outputs):
        out[i] = P[center + m] + P[half + m] * math.tanh(out[i])
        m += 1
        if m == joints:
            m = 0


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def add_turn(P, columns, n, x, out):  # noqa: ANN001, ANN201
    """A ``turn_input`` model's first layer, its turn's part: out[:n] += W_turn · (cos, sin), the turn's cos and sin
    in x[7], x[8] (float64, written there before the call), W_turn (n, 2) row-major at P[columns:] (the columns of
    cos and sin of the torch layer's weight; the rest of it reads the other 7 inputs); ``columns`` < 0: no turn."""
    if columns >= 0:
        cos = x[7]
        sin = x[8]
        for i in range(n):
            out[i] += np.float64(P[columns + 2 * i]) * cos + np.float64(P[columns + 2 * i + 1]) * sin


# MLP layout: I = [tanh_gelu, layers, in_features, outputs, joints, head_w, head_b, center, half, max_width,
#                  turn columns (add_turn; -1: none), then per layer (w, b, n_out, n_in)]
MLP_SLOTS = 11


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def mlp_forward(P, I, x, out, work):  # noqa: ANN001, ANN201, E741
    """The MLP on one normalised input x (9,) → out (H·m,): x[:7] the pose, x[7:9] the turn's (cos, sin) of a
    ``turn_input`` model; ``work`` (2, max width) scratch."""
    tanh_form = I[0] != 0
    layers = I[1]
    n_in = I[2]
    for i in range(n_in):
        work[0, i] = x[i]
    for k in range(layers):
        s = MLP_SLOTS + 4 * k
        # the layers take turns on the two rows, each picked by index: swapping two names instead (a, b = b, a) cost
        # LLVM its vectorised loops (1.5x slower)
        a = work[k & 1]
        b = work[1 - (k & 1)]
        _linear(P, I[s], I[s + 1], I[s + 2], I[s + 3], a, b)
        if k == 0:
            add_turn(P, I[10], I[s + 2], x, b)
        _gelu(b, I[s + 2], tanh_form)
        n_in = I[s + 2]
    limit_head(P, I[5], I[6], I[7], I[8], I[3], I[4], n_in, work[layers & 1], out)


# --- input, limits and the choice among answers ----------------------------------------------------
# N (float64): 0:3 workspace minimum [m], 3:6 workspace span [m], then the free joints' lower (m) and upper (m) limits.


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def prepare(N, pos, quat, x, max_distance):  # noqa: ANN001, ANN201
    """The network input x (7,) of one pose, as :meth:`IKNetwork.solve_all
    <hik_sim.learning.network.IKNetwork.solve_all>` makes it: the quaternion normalised (in two steps, so that
    a 1e300-long one does not overflow), then :class:`~hik_sim.learning.data.PoseNormalizer`.

    Returns:
        0, or 1 for a NaN/inf in the pose, 2 for a quaternion of norm below 1e-9, 4 for a position
        coordinate beyond ``max_distance`` [m] (x is then unset).
    """
    scale = 0.0
    for i in range(4):
        if not math.isfinite(quat[i]):
            return 1
        scale = max(scale, abs(quat[i]))
    for i in range(3):
        if not math.isfinite(pos[i]):
            return 1
    for i in range(3):
        if abs(pos[i]) > max_distance:
            return 4
    if scale < 1e-9:  # below 1e-9 in every component; the norm decides
        if math.sqrt(quat[0] * quat[0] + quat[1] * quat[1] + quat[2] * quat[2] + quat[3] * quat[3]) < 1e-9:
            return 2
    square = 0.0
    for i in range(4):
        square += (quat[i] / scale) * (quat[i] / scale)
    length = scale * math.sqrt(square)
    if length < 1e-9:
        return 2
    for i in range(3):
        x[i] = 2.0 * (pos[i] - N[i]) / N[3 + i] - 1.0
    sign = -1.0 if quat[0] < 0 else 1.0
    for i in range(4):
        x[3 + i] = sign * (quat[i] / scale) / math.sqrt(square)
    return 0


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def clamp(N, out, joints):  # noqa: ANN001, ANN201
    """Clamp answers out (H·m,) into the free joints' float64 limits (the limit head's float32 centre and
    half-range can put ±1 up to ~1e-7 outside them); 3 when an answer is not finite (NaN weights), else 0."""
    m = 0
    for i in range(out.shape[0]):
        if not math.isfinite(out[i]):
            return 3
        low = N[6 + m]
        high = N[6 + joints + m]
        if out[i] < low:
            out[i] = low
        elif out[i] > high:
            out[i] = high
        m += 1
        if m == joints:
            m = 0
    return 0


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def mlp_solve(P, I, N, pos, quat, x, out, work, max_distance):  # noqa: ANN001, ANN201, E741
    """Checks, normalisation, the MLP and the clamp in one call; the status of :func:`prepare` or :func:`clamp`."""
    status = prepare(N, pos, quat, x, max_distance)
    if status != 0:
        return status
    mlp_forward(P, I, x, out, work)
    return clamp(N, out, I[4])


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def mlp_solve_ranked(P, I, N, G, template, free_index, pos, quat, x, out, work, max_distance, pos_tol, rot_tol,  # noqa: ANN001, ANN201, E741
                     answers, scores_out):
    """:func:`mlp_solve`, then :func:`rank`: (status, the best answer's index; 0 when status is not 0)."""
    status = mlp_solve(P, I, N, pos, quat, x, out, work, max_distance)
    if status != 0:
        return status, 0
    return 0, rank(G, template, free_index, out, pos, quat, pos_tol, rot_tol, answers, scores_out)


# --- the first joint's turn taken out of a canonical_turn network's input: the plain functions, compiled ----
canonical_pose = njit(fastmath=_FAST, cache=True, boundscheck=False)(_canonical_kernels.canonical_pose)
turn_back = njit(fastmath=_FAST, cache=True, boundscheck=False)(_canonical_kernels.turn_back)
