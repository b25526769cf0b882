"""Compiled HarmoAtt-IK kernels of :mod:`hik_sim.learning.fast_network` (numba; imported only when numba is installed):
the forward pass (:func:`harmoatt_forward`), with the input checks and the clamp (:func:`harmoatt_solve`) and with
the choice among answers (:func:`harmoatt_solve_ranked`), and the fusion block they share with the paper trunk's
kernels (:func:`fusion_block`, :mod:`hik_sim.learning._harmoatt_cycleik_numba`), on the building blocks of :mod:`hik_sim.learning._fast_numba`
(float32 weights ``P``, int64 layout ``I``, float64 constants ``S``, float64 activations).
"""

from __future__ import annotations

import math

import numpy as np
from numba import njit

from hik_sim.learning._fast_numba import (
    _FAST,
    _gelu,
    _layer_norm,
    _linear,
    _sigmoid,
    _sigmoid_inplace,
    add_turn,
    clamp,
    limit_head,
    prepare,
    rank,
)

__all__ = ["harmoatt_forward", "harmoatt_solve", "harmoatt_solve_ranked", "fusion_block", "HARMOATT_SLOTS", "FUSION_SLOTS",
           "BLOCK_SLOTS"]


# HarmoAtt-IK layout, the head part of I:
#  0 tanh_gelu, 1 blocks, 2 C, 3 L, 4 L_pos (positions from the position), 5 hidden_pos, 6 hidden_ori,
#  7 trunk (0 map, 1 dense), 8 head_hidden (map) / 0, 9 outputs (H·m), 10 joints m,
#  11 pos0_w, 12 pos0_b, 13 pos2_w, 14 pos2_b, 15 ori0_w, 16 ori0_b, 17 ori2_w, 18 ori2_b, 19 position_code,
#  20 trunk0_w (map: Linear; dense: LayerNorm weight), 21 trunk0_b, 22 trunk2_w (map), 23 trunk2_b (map),
#  24 head_w, 25 head_b, 26 center, 27 half, 28 reduction r, 29 feed_forward hidden F (dense) / 2C (map),
#  30 the position embedding's turn columns (add_turn; -1: none)
# then per block BLOCK_SLOTS: first the fusion block's FUSION_SLOTS (fusion_block; the paper trunk's blocks have these
# alone, hik_sim.learning._harmoatt_cycleik_numba):
#  0 attention, 1 norm_w, 2 norm_b, 3 cg0_w, 4 cg0_b, 5 cg2_w, 6 cg2_b, 7 sp_w, 8 sp_b, 9 cc_w (C×C), 10 cp_w (L×L),
#  11 cross_cell (3, L, C), 12 wn0_w, 13 wn0_b, 14 wn2_w, 15 wn2_b,
# then its feed-forward layer: 16 ff_norm_w, 17 ff_norm_b, 18 ff1_w, 19 ff1_b, 20 ff2_w, 21 ff2_b
# S (float64): 0 trunk-head LayerNorm eps (dense), then per block 4: norm eps, ff norm eps, tau_min, tau_max
HARMOATT_SLOTS = 31
FUSION_SLOTS = 16
BLOCK_SLOTS = 22


@njit(fastmath=_FAST, cache=True, boundscheck=False, inline="always")
def fusion_block(P, I, s, eps, tau_min, tau_max, C, L, r, tanh_form, feat, normed, t1, t2, t3, t4, t5, gate, bits):  # noqa: ANN001, ANN201, E741, PLR0913
    """One :class:`~hik_sim.learning.models.harmoatt.FusionBlock` without its feed-forward layer, in place on the flat
    map feat[:L·C] (L positions × C channels, position-major): ``feat += Σᵢ wᵢ · branchᵢ(norm(feat))`` (attention)
    or ``feat += norm(feat)``; ``normed`` is left holding norm(feat).

    Its slots are I[s:s + FUSION_SLOTS] (see the layout above); ``eps`` its LayerNorm's (unused without one),
    ``tau_min``/``tau_max`` its temperature bounds, ``r`` its channel gate's width. Scratch: ``normed``, ``gate``
    and ``t5`` hold L·C values, ``t1`` 2C, ``t2`` 2L, ``t3`` and ``t4`` max(C, r, L, 4), ``bits`` (int64) L·C.
    """
    LC = L * C
    _layer_norm(P, I[s + 1], I[s + 2], eps, feat, LC, normed)
    if I[s] != 0:  # attention
        # pooled: t1[:C] mean over L, t1[C:2C] max over L; t2[:L] mean over C, t2[L:2L] max over C
        for c in range(C):
            t1[c] = 0.0
            t1[C + c] = -np.inf
        for pos in range(L):
            mean_c = 0.0
            max_c = -np.inf
            for c in range(C):
                v = normed[pos * C + c]
                t1[c] += v
                if v > t1[C + c]:
                    t1[C + c] = v
                mean_c += v
                if v > max_c:
                    max_c = v
            t2[pos] = mean_c / C
            t2[L + pos] = max_c
        for c in range(C):
            t1[c] /= L
        # fusion weights and temperature
        _linear(P, I[s + 12], I[s + 13], C, 2 * C, t1, t3)
        _gelu(t3, C, tanh_form)
        _linear(P, I[s + 14], I[s + 15], 4, C, t3, t4)
        tau = tau_min + (tau_max - tau_min) * _sigmoid(t4[3])
        l0 = t4[0] / tau
        l1 = t4[1] / tau
        l2 = t4[2] / tau
        top = max(l0, max(l1, l2))
        e0 = math.exp(l0 - top)
        e1 = math.exp(l1 - top)
        e2 = math.exp(l2 - top)
        total = e0 + e1 + e2
        w0 = e0 / total
        w1 = e1 / total
        w2 = e2 / total
        # channel gate (C) in t3[C:2C]... from the mean over L
        _linear(P, I[s + 3], I[s + 4], r, C, t1, t4)
        _gelu(t4, r, tanh_form)
        _linear(P, I[s + 5], I[s + 6], C, r, t4, t3)
        for c in range(C):
            t3[c] = _sigmoid(t3[c])
        # spatial gate (L) from the channel-pooled mean and max
        _linear(P, I[s + 7], I[s + 8], L, 2 * L, t2, t4)
        for pos in range(L):
            t4[pos] = _sigmoid(t4[pos])
        # cross context: Wp @ (normed @ Wc^T), (L, C)
        cc = I[s + 9]
        for pos in range(L):
            _linear(P, cc, -1, C, C, normed[pos * C:(pos + 1) * C], t5[pos * C:(pos + 1) * C])
        wp = P[I[s + 10]:I[s + 10] + L * L]
        for i in range(LC):
            gate[i] = 0.0
        for pos in range(L):
            for m in range(L):
                wpm = np.float64(wp[pos * L + m])
                for c in range(C):
                    gate[pos * C + c] += wpm * t5[m * C + c]
        cell = I[s + 11]
        value_w = P[cell:cell + LC]
        context_w = P[cell + LC:cell + 2 * LC]
        cross_b = P[cell + 2 * LC:cell + 3 * LC]
        for i in range(LC):
            gate[i] = value_w[i] * normed[i] + context_w[i] * gate[i] + cross_b[i]
        _sigmoid_inplace(gate, LC, bits, t5)
        for pos in range(L):
            spatial = w1 * t4[pos]
            for c in range(C):
                i = pos * C + c
                feat[i] += normed[i] * (w0 * t3[c] + spatial + w2 * gate[i])
    else:
        for i in range(LC):
            feat[i] += normed[i]


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def harmoatt_forward(P, I, S, x, out, work):  # noqa: ANN001, ANN201, E741, C901, PLR0915
    """HarmoAtt-IK on one normalised input x (9,) → out (H·m,): x[:7] the pose, x[7:9] the turn's (cos, sin) of a
    ``turn_input`` model; ``work`` (9, max width) scratch."""
    tanh_form = I[0] != 0
    C = I[2]
    L = I[3]
    Lp = I[4]
    LC = L * C
    feat = work[0]
    normed = work[1]
    t1 = work[2]
    t2 = work[3]
    t3 = work[4]
    t4 = work[5]
    gate = work[6]
    t5 = work[7]
    bits = work[8].view(np.int64)
    # embeddings
    _linear(P, I[11], I[12], I[5], 3, x[0:3], t1)
    add_turn(P, I[30], I[5], x, t1)
    _gelu(t1, I[5], tanh_form)
    _linear(P, I[13], I[14], Lp * C, I[5], t1, feat)
    _linear(P, I[15], I[16], I[6], 4, x[3:7], t1)
    _gelu(t1, I[6], tanh_form)
    _linear(P, I[17], I[18], LC - Lp * C, I[6], t1, feat[Lp * C:])
    for i in range(LC):
        feat[i] += P[I[19] + i]
    r = I[28]
    F = I[29]
    for k in range(I[1]):
        s = HARMOATT_SLOTS + BLOCK_SLOTS * k
        fusion_block(P, I, s, S[1 + 4 * k], S[3 + 4 * k], S[4 + 4 * k], C, L, r, tanh_form, feat, normed, t1, t2, t3, t4, t5,
                     gate, bits)
        # feed-forward layer with its residual
        _layer_norm(P, I[s + 16], I[s + 17], S[2 + 4 * k], feat, LC, normed)
        if I[7] == 1:  # dense: L·C → F → L·C
            _linear(P, I[s + 18], I[s + 19], F, LC, normed, t1)
            _gelu(t1, F, tanh_form)
            _linear(P, I[s + 20], I[s + 21], LC, F, t1, t2)
            for i in range(LC):
                feat[i] += t2[i]
        else:  # map: C → 2C → C at every position
            for pos in range(L):
                _linear(P, I[s + 18], I[s + 19], F, C, normed[pos * C:(pos + 1) * C], t1)
                _gelu(t1, F, tanh_form)
                _linear(P, I[s + 20], I[s + 21], C, F, t1, t2)
                for c in range(C):
                    feat[pos * C + c] += t2[c]
    if I[7] == 1:  # LayerNorm, GELU, head
        _layer_norm(P, I[20], I[21], S[0], feat, LC, t1)
        _gelu(t1, LC, tanh_form)
        features = t1
        width = LC
    else:  # Linear, GELU, Linear, GELU, head
        width = I[8]
        _linear(P, I[20], I[21], width, LC, feat, t1)
        _gelu(t1, width, tanh_form)
        _linear(P, I[22], I[23], width, width, t1, t2)
        _gelu(t2, width, tanh_form)
        features = t2
    limit_head(P, I[24], I[25], I[26], I[27], I[9], I[10], width, features, out)


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def harmoatt_solve(P, I, S, N, pos, quat, x, out, work, max_distance):  # noqa: ANN001, ANN201, E741
    """Checks, normalisation, HarmoAtt-IK and the clamp in one call; the status of :func:`prepare` or :func:`clamp`."""
    status = prepare(N, pos, quat, x, max_distance)
    if status != 0:
        return status
    harmoatt_forward(P, I, S, x, out, work)
    return clamp(N, out, I[10])


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def harmoatt_solve_ranked(P, I, S, N, G, template, free_index, pos, quat, x, out, work, max_distance, pos_tol,  # noqa: ANN001, ANN201, E741
                          rot_tol, answers, scores_out):
    """:func:`harmoatt_solve`, then :func:`rank`: (status, the best answer's index; 0 when status is not 0)."""
    status = harmoatt_solve(P, I, S, N, pos, quat, x, out, work, max_distance)
    if status != 0:
        return status, 0
    return 0, rank(G, template, free_index, out, pos, quat, pos_tol, rot_tol, answers, scores_out)
