"""The ``numba`` backend of :class:`~hik_sim.learning.fast_network.FastIKNetwork`: a torch model's weights packed
for the compiled kernels of :mod:`hik_sim.learning._fast_numba`.

The weights stay the torch model's float32 values in one flat array ``P`` (:class:`_Pack`), the layout is an
int64 array ``I`` of offsets and sizes, a few float64 constants ``S``; every activation and every sum in the
kernels is float64. The choice among several answers runs in the same compiled call (:func:`_ranked_maker`).
"""

from __future__ import annotations

from typing import Any, Callable, Sequence

import numpy as np

from hik_sim.errors import ModelError
from hik_sim.learning.fast_parts import MAX_TARGET_DISTANCE, Ranked, _check_gelus, _Parts, _TurnBias

__all__: list[str] = []


def _ranked_maker(kernel: Callable[..., tuple[int, int]], weights: tuple[np.ndarray, ...], x: np.ndarray, work: np.ndarray,
                  outputs: int, hypotheses: int) -> Callable[[np.ndarray, np.ndarray, np.ndarray, tuple[float, float]], Ranked]:
    """A backend's ``ranked`` (see :class:`_Parts`) around a compiled ``*_solve_ranked`` kernel, whose
    arguments begin with the model's ``weights`` (its P, I[, S] and N arrays)."""

    def ranked(G: np.ndarray, template: np.ndarray, free_index: np.ndarray, tolerance: tuple[float, float]) -> Ranked:
        n = template.shape[0]

        def answer(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray, np.ndarray, int]:
            out, answers, scores = np.empty(outputs), np.empty((hypotheses, n)), np.empty(hypotheses)
            status, best = kernel(*weights, G, template, free_index, pos, quat, x, out, work, MAX_TARGET_DISTANCE,
                                  tolerance[0], tolerance[1], answers, scores)
            return status, answers, scores, best

        return answer

    return ranked


class _Pack:
    """The numba backend's weights: one flat array (float32 when every tensor is, else float64), offsets into it."""

    def __init__(self, tensors: Sequence[Any]) -> None:
        import torch

        self.dtype = np.float32 if all(t.dtype == torch.float32 for t in tensors) else np.float64
        self.parts: list[np.ndarray] = []
        self.size = 0

    def add(self, tensor: Any) -> int:
        """Append a tensor's values (row-major); its offset. ``None`` → -1 (no bias)."""
        if tensor is None:
            return -1
        values = tensor.detach().cpu().numpy().astype(self.dtype).reshape(-1)
        offset = self.size
        self.parts.append(values)
        self.size += values.size
        return offset

    def array(self) -> np.ndarray:
        """The flat weights."""
        return np.ascontiguousarray(np.concatenate(self.parts), dtype=self.dtype)


def _norm_limits(pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray]) -> np.ndarray:
    """The kernels' N: workspace minimum and span [m], the free joints' lower and upper limits."""
    return np.concatenate((pos_min, pos_max - pos_min, limits[0], limits[1])).astype(np.float64)


_NO_NORM = -2
"""A LayerNorm slot of the numba layout that holds no LayerNorm: the map passes unchanged."""


def _first_layer(pack: _Pack, layer: Any, turn_input: bool) -> tuple[int, int, _TurnBias | None]:
    """Pack the first layer: its weight's and bias's offsets, and for a ``turn_input`` model its :class:`_TurnBias`
    (the weight packed without the columns of cos and sin)."""
    import torch

    if not turn_input:
        return pack.add(layer.weight), pack.add(layer.bias), None
    weight, turn = _TurnBias.split(layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy())
    return pack.add(torch.from_numpy(weight)), pack.add(layer.bias), turn


def _numba_mlp(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
               turn_input: bool = False) -> _Parts:
    """The MLP as one compiled call (:func:`hik_sim.learning._fast_numba.mlp_forward`); ``turn_input``: its first
    layer reads the turn (:class:`_TurnBias`)."""
    from torch import nn

    from hik_sim.learning import _fast_numba

    modules = list(model.trunk)
    linears = [m for m in modules if isinstance(m, nn.Linear)]
    gelus = [m for m in modules if isinstance(m, nn.GELU)]
    if len(linears) != len(gelus) or len(linears) + len(gelus) != len(modules) or any(
            not isinstance(a, nn.Linear) or not isinstance(b, nn.GELU) for a, b in zip(modules[::2], modules[1::2])):
        raise ModelError("no fast path for this MLP: its trunk must be Linear–GELU pairs")
    tanh_form = bool(gelus) and _check_gelus(gelus) == "tanh"
    head = model.head
    pack = _Pack(list(model.parameters()) + [head.center, head.half_range])
    joints = head.center.numel()
    outputs = head.linear.out_features
    if turn_input and not linears:
        raise ModelError("no fast path for a turn_input MLP without layers")
    # a turn_input model's first layer reads 9; the kernels 7, its turn going to the bias (_TurnBias)
    in_features = (7 if turn_input else linears[0].in_features) if linears else head.linear.in_features
    widths = [in_features] + [layer.out_features for layer in linears]
    slots = [int(tanh_form), len(linears), in_features, outputs, joints, pack.add(head.linear.weight), pack.add(head.linear.bias),
             pack.add(head.center), pack.add(head.half_range), max(widths)]
    turn, first_bias = None, -1
    for k, layer in enumerate(linears):
        if k == 0:
            weight_slot, first_bias, turn = _first_layer(pack, layer, turn_input)
            slots += [weight_slot, first_bias, layer.out_features, in_features]
        else:
            slots += [pack.add(layer.weight), pack.add(layer.bias), layer.out_features, layer.in_features]
    P, I = pack.array(), np.asarray(slots, dtype=np.int64)
    work = np.zeros((2, max(widths)))
    hypotheses = outputs // joints
    kernel, fused_kernel = _fast_numba.mlp_forward, _fast_numba.mlp_solve
    N, x = _norm_limits(pos_min, pos_max, limits), np.empty(7)

    def forward(x: np.ndarray) -> np.ndarray:
        out = np.empty(outputs)
        kernel(P, I, x, out, work)
        return out.reshape(hypotheses, joints)

    def fused(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray]:
        out = np.empty(outputs)
        return fused_kernel(P, I, N, pos, quat, x, out, work, MAX_TARGET_DISTANCE), out.reshape(hypotheses, joints)

    return _Parts(forward, fused, _ranked_maker(_fast_numba.mlp_solve_ranked, (P, I, N), x, work, outputs, hypotheses),
                  None if turn is None else turn.setter(P[first_bias:first_bias + turn.bias.size]))


def _numba_harmoatt(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
                    turn_input: bool = False) -> _Parts:
    """HarmoAtt-IK as one compiled call (:func:`hik_sim.learning._harmoatt_numba.harmoatt_forward`); ``turn_input``: its
    position embedding reads the turn (:class:`_TurnBias`)."""
    from torch import nn

    from hik_sim.learning import _harmoatt_numba

    C, L = int(model.channels), int(model.positions)
    LC = C * L
    gelus = [m for m in model.modules() if isinstance(m, nn.GELU)]
    tanh_form = _check_gelus(gelus) == "tanh"
    head = model.head
    pack = _Pack(list(model.parameters()) + [head.center, head.half_range])
    pos_embed, ori_embed = list(model.pos_embed), list(model.ori_embed)
    trunk: list[Any] = list(model.trunk_head) if isinstance(model.trunk_head, nn.Sequential) else [model.trunk_head]
    kinds = [type(m) for m in trunk]
    if kinds == [nn.GELU]:  # the dense trunk: no LayerNorm before the head
        dense_head, head_hidden = True, 0
        trunk_slots = [_NO_NORM, -1, -1, -1]
        trunk_eps = 0.0
    elif kinds == [nn.LayerNorm, nn.GELU]:
        dense_head, head_hidden = True, 0
        trunk_slots = [pack.add(trunk[0].weight), pack.add(trunk[0].bias), -1, -1]
        trunk_eps = float(trunk[0].eps)
    elif kinds == [nn.Linear, nn.GELU, nn.Linear, nn.GELU]:
        dense_head, head_hidden = False, trunk[0].out_features
        trunk_slots = [pack.add(trunk[0].weight), pack.add(trunk[0].bias), pack.add(trunk[2].weight), pack.add(trunk[2].bias)]
        trunk_eps = 0.0
    else:
        raise ModelError(f"no fast path for the trunk head {[k.__name__ for k in kinds]}; supported: "
                       "Linear–GELU–Linear–GELU (map trunk), GELU or LayerNorm–GELU (dense trunk)")
    blocks = list(model.blocks)
    first_ff = blocks[0].feed_forward
    dense_ff = hasattr(first_ff, "mix")
    if dense_ff != dense_head:
        raise ModelError("no fast path for a HarmoAtt-IK network that mixes the dense and map trunks")
    ff_hidden = list(first_ff.mix)[0].out_features if dense_ff else list(first_ff)[1].out_features
    r = blocks[0].channel_gate[0].out_features
    if pos_embed[0].in_features != (5 if turn_input else 3):
        raise ModelError(f"no fast path for a position embedding of {pos_embed[0].in_features} inputs "
                         f"({'5 with' if turn_input else '3 without'} turn_input)")
    embed_weight, embed_bias, turn = _first_layer(pack, pos_embed[0], turn_input)
    slots = [int(tanh_form), len(blocks), C, L, int(model.pos_positions), pos_embed[0].out_features, ori_embed[0].out_features,
             int(dense_ff), head_hidden, head.linear.out_features, head.center.numel(),
             embed_weight, embed_bias, pack.add(pos_embed[2].weight), pack.add(pos_embed[2].bias),
             pack.add(ori_embed[0].weight), pack.add(ori_embed[0].bias), pack.add(ori_embed[2].weight), pack.add(ori_embed[2].bias),
             pack.add(model.position_code), *trunk_slots, pack.add(head.linear.weight), pack.add(head.linear.bias),
             pack.add(head.center), pack.add(head.half_range), r, ff_hidden]
    constants = [trunk_eps]

    def affine(norm: Any) -> list[int]:
        if norm is None or isinstance(norm, nn.Identity):
            return [_NO_NORM, -1]
        if not isinstance(norm, nn.LayerNorm):
            raise ModelError(f"no fast path for a norm {type(norm).__name__}; supported: LayerNorm, Identity")
        if not norm.elementwise_affine:
            return [-1, -1]
        if norm.bias is None:
            raise ModelError("no fast path for a LayerNorm with a weight and no bias")
        return [pack.add(norm.weight), pack.add(norm.bias)]

    for block in blocks:
        ff = block.feed_forward
        if dense_ff:
            if not (hasattr(ff, "mix") and len(ff.mix) == 3 and isinstance(ff.mix[0], nn.Linear)
                    and isinstance(ff.mix[2], nn.Linear) and ff.mix[0].out_features == ff_hidden):
                raise ModelError("no fast path for this dense feed-forward layer: expected Linear–GELU–Linear of one width")
            ff_norm, ff1, ff2 = getattr(ff, "norm", None), ff.mix[0], ff.mix[2]
        else:
            layers = list(ff)
            if (len(layers) != 4 or not isinstance(layers[0], nn.LayerNorm) or not isinstance(layers[1], nn.Linear)
                    or not isinstance(layers[3], nn.Linear) or layers[1].out_features != ff_hidden):
                raise ModelError("no fast path for this feed-forward layer: expected LayerNorm–Linear–GELU–Linear (map trunk)")
            ff_norm, ff1, ff2 = layers[0], layers[1], layers[3]
        if block.channel_gate[0].out_features != r:
            raise ModelError("no fast path for HarmoAtt-IK blocks of different channel-gate widths")
        slots += [int(bool(getattr(block, "attention", True))), *affine(block.norm),
                  pack.add(block.channel_gate[0].weight), pack.add(block.channel_gate[0].bias),
                  pack.add(block.channel_gate[2].weight), pack.add(block.channel_gate[2].bias),
                  pack.add(block.spatial_gate.weight), pack.add(block.spatial_gate.bias),
                  pack.add(block.cross_channel_mix.weight), pack.add(block.cross_position_mix.weight),
                  pack.add(block.cross_cell), pack.add(block.weight_net[0].weight), pack.add(block.weight_net[0].bias),
                  pack.add(block.weight_net[2].weight), pack.add(block.weight_net[2].bias), *affine(ff_norm),
                  pack.add(ff1.weight), pack.add(ff1.bias), pack.add(ff2.weight), pack.add(ff2.bias)]
        constants += [float(getattr(block.norm, "eps", 0.0)), float(getattr(ff_norm, "eps", 0.0)), float(block.tau_min),
                      float(block.tau_max)]
    P, I, S = pack.array(), np.asarray(slots, dtype=np.int64), np.asarray(constants, dtype=np.float64)
    outputs, joints = head.linear.out_features, head.center.numel()
    width = max(LC, ff_hidden, head_hidden, pos_embed[0].out_features, ori_embed[0].out_features, 2 * C, 2 * L, 4)
    work = np.zeros((9, width))
    kernel, fused_kernel = _harmoatt_numba.harmoatt_forward, _harmoatt_numba.harmoatt_solve
    N, x = _norm_limits(pos_min, pos_max, limits), np.empty(7)

    def forward(x: np.ndarray) -> np.ndarray:
        out = np.empty(outputs)
        kernel(P, I, S, x, out, work)
        return out.reshape(outputs // joints, joints)

    def fused(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray]:
        out = np.empty(outputs)
        return fused_kernel(P, I, S, N, pos, quat, x, out, work, MAX_TARGET_DISTANCE), out.reshape(outputs // joints, joints)

    return _Parts(forward, fused, _ranked_maker(_harmoatt_numba.harmoatt_solve_ranked, (P, I, S, N), x, work, outputs,
                                                outputs // joints),
                  None if turn is None else turn.setter(P[embed_bias:embed_bias + turn.bias.size]))
