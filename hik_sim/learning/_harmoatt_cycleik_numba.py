"""Compiled kernels of HarmoAtt-IK's paper trunk (``trunk=cycleik``,
:class:`~hik_sim.learning.models.harmoatt_cycleik.HarmoAttCycleIK`) for :mod:`hik_sim.learning.fast_network` (numba;
imported only when numba is installed): the forward pass (:func:`harmoatt_cycleik_forward`), with the input checks and
the clamp (:func:`harmoatt_cycleik_solve`) and with the choice among answers (:func:`harmoatt_cycleik_solve_ranked`).

The network is CycleIK's generator (Linear–GELU layers, a limit head) with fusion blocks after some of its GELUs, so
the kernel is the MLP's (:func:`hik_sim.learning._fast_numba.mlp_forward`, same layout) with the fusion block of
:func:`hik_sim.learning._harmoatt_numba.fusion_block` run in place on a layer's output where the layout names one
(float32 weights ``P``, int64 layout ``I``, float64 constants ``S``, float64 activations).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from hik_sim.learning._fast_numba import _FAST, MLP_SLOTS, _gelu, _linear, add_turn, clamp, limit_head, prepare, rank
from hik_sim.learning._harmoatt_numba import FUSION_SLOTS, fusion_block

__all__ = ["harmoatt_cycleik_forward", "harmoatt_cycleik_solve", "harmoatt_cycleik_solve_ranked", "PAPER_BLOCK_SLOTS"]

# Layout: I is the MLP's (MLP_SLOTS, then (w, b, n_out, n_in) per layer), then one slot per layer: the offset in I of
# the fusion block after its GELU, or -1 for none; then each block's PAPER_BLOCK_SLOTS: its FUSION_SLOTS
# (fusion_block), then C (channels), L (positions), r (channel-gate width) and the offset in S of its three constants.
# S (float64): per block its norm's eps (no norm: unused), tau_min, tau_max.
PAPER_BLOCK_SLOTS = FUSION_SLOTS + 4


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def harmoatt_cycleik_forward(P, I, S, x, out, work):  # noqa: ANN001, ANN201, E741
    """The paper trunk on one normalised input x (9,) → out (H·m,): x[:7] the pose, x[7:9] the turn's (cos, sin) of a
    ``turn_input`` model; ``work`` (10, max(widest layer, 4)) scratch."""
    tanh_form = I[0] != 0
    layers = I[1]
    normed = work[2]
    t1 = work[3]
    t2 = work[4]
    t3 = work[5]
    t4 = work[6]
    t5 = work[7]
    gate = work[8]
    bits = work[9].view(np.int64)
    n_in = I[2]
    for i in range(n_in):
        work[0, i] = x[i]
    for k in range(layers):
        s = MLP_SLOTS + 4 * k
        n_out = I[s + 2]
        a = work[k & 1]  # the layers take turns on rows 0 and 1, picked by index (as mlp_forward, which says why)
        b = work[1 - (k & 1)]
        _linear(P, I[s], I[s + 1], n_out, n_in, a, b)
        if k == 0:
            add_turn(P, I[10], n_out, x, b)
        _gelu(b, n_out, tanh_form)
        f = I[MLP_SLOTS + 4 * layers + k]
        if f >= 0:  # the layer's output as a map of L positions × C channels, attended in place
            e = I[f + FUSION_SLOTS + 3]
            fusion_block(P, I, f, S[e], S[e + 1], S[e + 2], I[f + FUSION_SLOTS], I[f + FUSION_SLOTS + 1],
                         I[f + FUSION_SLOTS + 2], tanh_form, b, normed, t1, t2, t3, t4, t5, gate, bits)
        n_in = n_out
    limit_head(P, I[5], I[6], I[7], I[8], I[3], I[4], n_in, work[layers & 1], out)


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def harmoatt_cycleik_solve(P, I, S, N, pos, quat, x, out, work, max_distance):  # noqa: ANN001, ANN201, E741
    """Checks, normalisation, the paper trunk and the clamp in one call; the status of :func:`prepare` or :func:`clamp`."""
    status = prepare(N, pos, quat, x, max_distance)
    if status != 0:
        return status
    harmoatt_cycleik_forward(P, I, S, x, out, work)
    return clamp(N, out, I[4])


@njit(fastmath=_FAST, cache=True, boundscheck=False)
def harmoatt_cycleik_solve_ranked(P, I, S, N, G, template, free_index, pos, quat, x, out, work, max_distance,  # noqa: ANN001, ANN201, E741
                                  pos_tol, rot_tol, answers, scores_out):
    """:func:`harmoatt_cycleik_solve`, then :func:`rank`: (status, the best answer's index; 0 when status is not 0)."""
    status = harmoatt_cycleik_solve(P, I, S, N, pos, quat, x, out, work, max_distance)
    if status != 0:
        return status, 0
    return 0, rank(G, template, free_index, out, pos, quat, pos_tol, rot_tol, answers, scores_out)
