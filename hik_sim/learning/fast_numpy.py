"""The ``numpy`` backend of :class:`~hik_sim.learning.fast_network.FastIKNetwork`: a fused float64 NumPy program.

Everything linear between two nonlinearities is folded into one matrix (the two embeddings into one
block-diagonal pair of layers; in a fusion block, the pooled means and the first layers of the gates and of
the weight network into one matrix on the normalised map and its two max-pools; a LayerNorm's affine part into
the layer that reads it alone; GELU's constants into the layers around it: :mod:`hik_sim.learning.fast_parts`).
The exact GELU uses ``scipy.special.erf``, as ``torch.nn.GELU()`` computes it.
"""

from __future__ import annotations

import math
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy.special import expit

from hik_sim.errors import ModelError
from hik_sim.learning.fast_parts import (
    MAX_TARGET_DISTANCE,
    _array,
    _check_gelus,
    _f64,
    _gelu_ops,
    _layer_norm,
    _linear,
    _Parts,
    _TurnBias,
)

__all__ = ["normalised_input"]


def normalised_input(x: np.ndarray, pos: np.ndarray, quat: np.ndarray, pos_min: np.ndarray, pos_span: np.ndarray) -> int:
    """The network input of one shape-checked pose into ``x`` (7,), as :meth:`IKNetwork.solve_all
    <hik_sim.learning.network.IKNetwork.solve_all>` makes it: the quaternion normalised (in two steps: |q|²
    of a 1e300-long one overflows), then :class:`~hik_sim.learning.data.PoseNormalizer` (workspace minimum
    ``pos_min`` (3,) and span ``pos_span`` (3,) [m]).

    Returns:
        0, or the status of a bad pose (1 NaN/inf, 2 zero quaternion, 4 position too far; ``x`` is then unset).
    """
    if not (np.isfinite(pos).all() and np.isfinite(quat).all()):
        return 1
    if float(np.abs(pos).max()) > MAX_TARGET_DISTANCE:
        return 4
    scale = float(np.abs(quat).max())
    unit = quat / scale if scale > 0 else quat
    length = math.sqrt(float(unit @ unit))
    if scale * length < 1e-9:
        return 2
    x[:3] = pos  # 2·(p − min)/(max − min) − 1, and w ≥ 0
    x[:3] -= pos_min
    x[:3] *= 2.0
    x[:3] /= pos_span
    x[:3] -= 1.0
    x[3:] = unit
    x[3:] /= length
    if quat[0] < 0:
        x[3:] *= -1.0
    return 0


def _head(head: Any, post_of_input: float) -> Callable[[np.ndarray], np.ndarray]:
    """A :class:`~hik_sim.learning.models.common.LimitHead`: features (F,) → (H, m) joint values."""
    weight, bias = _f64(*_linear(head.linear, post_of_input=post_of_input))
    center, half = _f64(_array(head.center), _array(head.half_range))
    hypotheses = int(head.hypotheses)

    def apply(features: np.ndarray) -> np.ndarray:
        raw = weight @ features
        raw += bias
        np.tanh(raw, out=raw)
        out = raw.reshape(hypotheses, -1)
        out *= half
        out += center
        return out

    return apply


def _mlp_forward(model: Any, turn_input: bool = False) -> _Parts:
    """The MLP's forward pass: Linear–GELU pairs, then the limit head; ``turn_input``: its first layer reads the
    turn (:class:`_TurnBias`)."""
    return _stack_forward(list(model.trunk), model.head, turn_input)


def _stack_forward(modules: Sequence[Any], limit_head: Any, turn_input: bool = False, blocks: Mapping[int, Any] | None = None,
                   positions: int = 0) -> _Parts:
    """Linear–GELU pairs, then a limit head; ``turn_input``: the first layer reads the turn (:class:`_TurnBias`).

    ``blocks`` maps a layer (0-based) to the norm-free :class:`~hik_sim.learning.models.harmoatt.FusionBlock` without a
    feed-forward layer that follows its GELU, on its output laid out as ``positions`` L × W / L channels (the paper
    trunk, :mod:`hik_sim.learning.fast_cycleik_trunk`); such a layer's GELU is not folded into the next layer.
    """
    from torch import nn

    linears = [m for m in modules if isinstance(m, nn.Linear)]
    gelus = [m for m in modules if isinstance(m, nn.GELU)]
    if len(linears) != len(gelus) or len(linears) + len(gelus) != len(modules):
        raise ModelError("no fast path for this MLP: its trunk must be Linear–GELU pairs")
    if not gelus:  # a trunk without layers: the head alone
        if turn_input:
            raise ModelError("no fast path for a turn_input MLP without layers")
        return _Parts(_head(limit_head, 1.0))
    pre, post, gelu = _gelu_ops(_check_gelus(gelus))
    layers: list[tuple[np.ndarray, np.ndarray, Callable[[np.ndarray], np.ndarray] | None]] = []
    scale_in = 1.0
    for k, linear in enumerate(linears):
        weight, bias = _f64(*_linear(linear, pre=pre, post_of_input=scale_in))
        block = None if blocks is None or k not in blocks else _fusion_block(blocks[k], linear.out_features // positions,
                                                                              positions, pre, post, gelu)
        layers.append((weight, bias, block))
        scale_in = post if block is None else 1.0  # a block reads the GELU itself: its constant applied before it
    head = _head(limit_head, scale_in)
    turn = None
    if turn_input:
        w0, turn = _TurnBias.split(layers[0][0], layers[0][1])
        layers[0] = (np.ascontiguousarray(w0), *layers[0][1:])
    post64 = np.float64(post)

    def forward(x: np.ndarray) -> np.ndarray:
        h = x
        for weight, bias, block in layers:
            h = weight @ h
            h += bias
            h = gelu(h)
            if block is not None:
                h *= post64
                h = block(h)
        return head(h)

    return _Parts(forward, set_turn=None if turn is None else turn.setter(layers[0][1]))


def _harmoatt_forward(model: Any, turn_input: bool = False) -> _Parts:
    """HarmoAtt-IK's forward pass (``map`` or ``dense`` trunk, with or without attention); ``turn_input``: its
    position embedding reads the turn (:class:`_TurnBias`)."""
    from torch import nn

    channels, positions = int(model.channels), int(model.positions)
    width = channels * positions
    gelus = [m for m in model.modules() if isinstance(m, nn.GELU)]
    pre, post, gelu = _gelu_ops(_check_gelus(gelus))

    # embeddings: two Linear–GELU–Linear stacks on x[:3] and x[3:] → one block-diagonal pair
    pos_embed, ori_embed = list(model.pos_embed), list(model.ori_embed)
    (pw1, pb1), (ow1, ob1) = _linear(pos_embed[0], pre), _linear(ori_embed[0], pre)
    (pw2, pb2), (ow2, ob2) = _linear(pos_embed[2], post_of_input=post), _linear(ori_embed[2], post_of_input=post)
    turn = None
    if turn_input:  # 5 position inputs: (cos, sin) go to the bias
        pw1, turn = _TurnBias.split(pw1, pb1)
    hidden_p, hidden_o = pw1.shape[0], ow1.shape[0]
    embed1 = np.zeros((hidden_p + hidden_o, 7))
    embed1[:hidden_p, :3], embed1[hidden_p:, 3:] = pw1, ow1
    embed_b1 = np.concatenate((pb1, ob1))
    embed2 = np.zeros((width, hidden_p + hidden_o))
    split = pw2.shape[0]
    embed2[:split, :hidden_p], embed2[split:, hidden_p:] = pw2, ow2
    embed_b2 = np.concatenate((pb2, ob2)) + _array(model.position_code).reshape(-1)
    embed1, embed_b1, embed2, embed_b2 = _f64(embed1, embed_b1, embed2, embed_b2)

    blocks = [_fusion_block(block, channels, positions, pre, post, gelu) for block in model.blocks]
    trunk_head = _trunk_head(model, width, pre, post, gelu)

    def forward(x: np.ndarray) -> np.ndarray:
        h = embed1 @ x
        h += embed_b1
        h = embed2 @ gelu(h)
        h += embed_b2
        for block in blocks:
            h = block(h)
        return trunk_head(h)

    return _Parts(forward, set_turn=None if turn is None else turn.setter(embed_b1[:hidden_p]))


def _normalise(x: np.ndarray, inv_size: float, eps: float) -> np.ndarray:
    """(x − mean) / √(var + eps) over all of a flat map (LayerNorm without its affine part)."""
    d = x - np.add.reduce(x) * inv_size
    d *= 1.0 / math.sqrt(float(d @ d) * inv_size + eps)
    return d


def _fusion_block(block: Any, channels: int, positions: int, pre: float, post: float,
                  gelu: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """One :class:`~hik_sim.learning.models.harmoatt.FusionBlock` on a flat map (L·C,) → (L·C,)."""
    from torch import nn

    C, L = channels, positions
    LC = L * C
    inv_size = 1.0 / LC
    if isinstance(block.norm, nn.LayerNorm):
        norm_w, norm_b, norm_eps = _layer_norm(block.norm)
        norm_w32, norm_b32 = _f64(norm_w, norm_b)

        def block_norm(x: np.ndarray) -> np.ndarray:
            normed = _normalise(x, inv_size, norm_eps)
            normed *= norm_w32
            normed += norm_b32
            return normed
    elif isinstance(block.norm, nn.Identity):  # the dense trunk: no norm (the map is read, never written)
        def block_norm(x: np.ndarray) -> np.ndarray:
            return x
    else:
        raise ModelError(f"no fast path for a fusion block normalised by {type(block.norm).__name__}; supported: LayerNorm, Identity")
    attention = bool(getattr(block, "attention", True))
    feed_forward = _feed_forward(block.feed_forward, C, L, pre, post, gelu)

    if not attention:  # x + norm(x), then the feed-forward layer; the fusion weights do not matter
        def forward_plain(x: np.ndarray) -> np.ndarray:
            return feed_forward(x + block_norm(x))

        return forward_plain

    tau_min, tau_span = float(block.tau_min), float(block.tau_max) - float(block.tau_min)
    cg1, cg2 = block.channel_gate[0], block.channel_gate[2]
    wn1, wn2 = block.weight_net[0], block.weight_net[2]
    if not (isinstance(cg1, nn.Linear) and isinstance(wn1, nn.Linear)):
        raise ModelError("no fast path for this HarmoAtt-IK block: unexpected gate layers")
    r = cg1.out_features
    mean_over_l = np.tile(np.eye(C), (1, L)) / L  # (C, LC): mean over positions of a flat (L, C) map
    mean_over_c = np.kron(np.eye(L), np.ones((1, C))) / C  # (L, LC): mean over channels

    # one matrix on [normed (LC), max over L (C), max over C (L)] → z = [weight-net hidden (C),
    # channel-gate hidden (r), spatial logits (L)]; the cross logits value·x + context_w·(Wp x Wcᵀ) + b
    # apart (folding their context too, a Kronecker product of (LC)² values, costs more memory
    # traffic than the two small products it saves)
    wn1_w, wn1_b = _linear(wn1, pre)
    cg1_w, cg1_b = _linear(cg1, pre)
    sp_w, sp_b = _linear(block.spatial_gate)
    value_w, context_w, cross_b = _f64(*(_array(t) for t in block.cross_cell))  # (L, C) each
    channel_mix_t, position_mix = _f64(_array(block.cross_channel_mix.weight).T, _array(block.cross_position_mix.weight))
    big = np.zeros((C + r + L, LC + C + L))
    big[:C, :LC] = wn1_w[:, :C] @ mean_over_l
    big[:C, LC:LC + C] = wn1_w[:, C:]
    big[C:C + r, :LC] = cg1_w @ mean_over_l
    big[C + r:, :LC] = sp_w[:, :L] @ mean_over_c
    big[C + r:, LC + C:] = sp_w[:, L:]
    big_b = np.concatenate((wn1_b, cg1_b, sp_b))
    # second layers of the weight network (4 logits) and the channel gate (C), on their GELUs
    wn2_w, wn2_b = _linear(wn2, post_of_input=post)
    cg2_w, cg2_b = _linear(cg2, post_of_input=post)
    second = np.zeros((4 + C, C + r))
    second[:4, :C], second[4:, C:] = wn2_w, cg2_w
    second_b = np.concatenate((wn2_b, cg2_b))
    big, big_b, second, second_b = _f64(big, big_b, second, second_b)
    stacked = np.empty(LC + C + L)
    maximum = np.maximum

    def forward(x: np.ndarray) -> np.ndarray:
        normed = block_norm(x)
        grid = normed.reshape(L, C)
        stacked[:LC] = normed
        maximum.reduce(grid, axis=0, out=stacked[LC:LC + C])
        maximum.reduce(grid, axis=1, out=stacked[LC + C:])
        z = big @ stacked
        z += big_b
        out = second @ gelu(z[:C + r])
        out += second_b
        logits = out[:4].tolist()
        tau = tau_min + tau_span / (1.0 + math.exp(-logits[3]))
        a, b, c = logits[0] / tau, logits[1] / tau, logits[2] / tau
        top = max(a, b, c)
        a, b, c = math.exp(a - top), math.exp(b - top), math.exp(c - top)
        total = a + b + c
        context = position_mix @ (grid @ channel_mix_t)
        context *= context_w
        gate = grid * value_w
        gate += context
        gate += cross_b
        expit(gate, out=gate)
        gate *= c / total
        gate += expit(out[4:]) * (a / total)
        spatial = expit(z[C + r:])
        spatial *= b / total
        gate += spatial[:, None]
        gate *= grid
        flat = gate.reshape(-1)
        flat += x
        return feed_forward(flat)

    return forward


def _unchanged(x: np.ndarray) -> np.ndarray:
    return x


def _feed_forward(module: Any, channels: int, positions: int, pre: float, post: float,
                  gelu: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """A fusion block's feed-forward layer with its residual: flat map (L·C,) → x + ff(x); x itself for none (``None``)."""
    from torch import nn

    C, L = channels, positions
    inv_size = 1.0 / (L * C)
    if module is None:  # the paper trunk's blocks have none
        return _unchanged
    if hasattr(module, "mix"):  # dense: (LayerNorm,) L·C → F → L·C
        layers = list(module.mix)
        if len(layers) != 3 or not isinstance(layers[0], nn.Linear) or not isinstance(layers[2], nn.Linear):
            raise ModelError("no fast path for this dense feed-forward layer: expected Linear–GELU–Linear")
        norm = getattr(module, "norm", None)  # hik_sim 0.2's first dense trunk had one
        w1, b1 = _linear(layers[0], pre)
        eps = None
        if isinstance(norm, nn.LayerNorm):
            norm_w, norm_b, eps = _layer_norm(norm)
            b1 = b1 + w1 @ norm_b  # the LayerNorm's affine folded into the first layer
            w1 = w1 * norm_w[None, :]
        elif norm is not None and not isinstance(norm, nn.Identity):
            raise ModelError(f"no fast path for a dense feed-forward layer normalised by {type(norm).__name__}")
        w2, b2 = _linear(layers[2], post_of_input=post)
        w1, b1, w2, b2 = _f64(w1, b1, w2, b2)

        def dense(x: np.ndarray) -> np.ndarray:
            h = w1 @ (x if eps is None else _normalise(x, inv_size, eps))
            h += b1
            out = w2 @ gelu(h)
            out += b2
            out += x
            return out

        return dense
    layers = list(module)
    if (len(layers) != 4 or not isinstance(layers[0], nn.LayerNorm) or not isinstance(layers[1], nn.Linear)
            or not isinstance(layers[3], nn.Linear)):
        raise ModelError("no fast path for this feed-forward layer: expected LayerNorm–Linear–GELU–Linear (map trunk) "
                       "or a dense layer (norm, mix)")
    norm_w, norm_b, eps = _layer_norm(layers[0])
    w1, b1 = _linear(layers[1], pre)
    w2, b2 = _linear(layers[3], post_of_input=post)
    norm_w, norm_b, w1t, b1, w2t, b2 = _f64(norm_w, norm_b, w1.T, b1, w2.T, b2)

    def position_wise(x: np.ndarray) -> np.ndarray:
        normed = _normalise(x, inv_size, eps)
        normed *= norm_w
        normed += norm_b
        h = normed.reshape(L, C) @ w1t
        h += b1
        out = gelu(h) @ w2t
        out += b2
        out = out.reshape(-1)
        out += x
        return out

    return position_wise


def _trunk_head(model: Any, width: int, pre: float, post: float,
                gelu: Callable[[np.ndarray], np.ndarray]) -> Callable[[np.ndarray], np.ndarray]:
    """The trunk head and the limit head: flat map (L·C,) → (H, m).

    ``map`` trunk: Linear–GELU–Linear–GELU; ``dense`` trunk: GELU (LayerNorm–GELU in its first version).
    """
    from torch import nn

    layers = list(model.trunk_head) if isinstance(model.trunk_head, nn.Sequential) else [model.trunk_head]
    kinds = [type(m) for m in layers]
    if kinds == [nn.GELU]:
        scale = np.float64(pre)
        head = _head(model.head, post)

        def bare(x: np.ndarray) -> np.ndarray:
            return head(gelu(x * scale))

        return bare
    if kinds == [nn.LayerNorm, nn.GELU]:
        norm_w, norm_b, eps = _layer_norm(layers[0])
        norm_w, norm_b = _f64(norm_w * pre, norm_b * pre)
        inv_size = 1.0 / width
        head = _head(model.head, post)

        def dense(x: np.ndarray) -> np.ndarray:
            normed = _normalise(x, inv_size, eps)
            normed *= norm_w
            normed += norm_b
            return head(gelu(normed))

        return dense
    if kinds == [nn.Linear, nn.GELU, nn.Linear, nn.GELU]:
        w1, b1 = _f64(*_linear(layers[0], pre))
        w2, b2 = _f64(*_linear(layers[2], pre, post_of_input=post))
        head = _head(model.head, post)

        def mlp(x: np.ndarray) -> np.ndarray:
            h = w1 @ x
            h += b1
            h = w2 @ gelu(h)
            h += b2
            return head(gelu(h))

        return mlp
    raise ModelError(f"no fast path for the trunk head {[k.__name__ for k in kinds]}; supported: "
                   "Linear–GELU–Linear–GELU (map trunk), GELU or LayerNorm–GELU (dense trunk)")
