"""The ``numba`` backend of :class:`~hik_sim.learning.fast_network.FastIKNetwork`: a torch model's weights packed
for the compiled kernels of :mod:`hik_sim.learning._fast_numba` (the MLP) and :mod:`hik_sim.learning._harmoatt_numba`
(HarmoAtt-IK's ``dense`` and ``map`` trunks), and the pieces the paper trunk's packing shares
(:mod:`hik_sim.learning.fast_cycleik_trunk`: :func:`_stack_slots`, :func:`_fusion_slots`, :func:`_compiled_parts`).

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


def _compiled_parts(kernels: tuple[Callable[..., Any], Callable[..., Any], Callable[..., Any]], weights: tuple[np.ndarray, ...],
                    N: np.ndarray, outputs: int, joints: int, work: np.ndarray, turn_input: bool) -> _Parts:
    """A model's :class:`_Parts` around its compiled ``(forward, solve, solve_ranked)`` kernels, whose arguments
    begin with ``weights`` (its P, I[, S] arrays; N, :func:`_norm_limits`, follows them in the last two); the answers
    are ``outputs`` = H·m values of m = ``joints``; ``work`` the forward pass's scratch.

    The kernels read their input from one buffer x (9,): the normalised pose in x[:7], and for a ``turn_input`` model
    the turn's (cos, sin) in x[7:9], which ``set_turn`` writes there in float64 (:func:`hik_sim.learning._fast_numba.add_turn`).
    """
    forward_kernel, solve_kernel, ranked_kernel = kernels
    hypotheses = outputs // joints
    x = np.zeros(9)

    def forward(normalised: np.ndarray) -> np.ndarray:
        out = np.empty(outputs)
        x[:7] = normalised
        forward_kernel(*weights, x, out, work)
        return out.reshape(hypotheses, joints)

    def fused(pos: np.ndarray, quat: np.ndarray) -> tuple[int, np.ndarray]:
        out = np.empty(outputs)
        return solve_kernel(*weights, N, pos, quat, x, out, work, MAX_TARGET_DISTANCE), out.reshape(hypotheses, joints)

    def set_turn(cos: float, sin: float) -> None:
        x[7] = cos
        x[8] = sin

    return _Parts(forward, fused, _ranked_maker(ranked_kernel, (*weights, N), x, work, outputs, hypotheses),
                  set_turn if turn_input else None)


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


def _first_layer(pack: _Pack, layer: Any, turn_input: bool) -> list[int]:
    """Pack the first layer: its weight's and bias's offsets and, for a ``turn_input`` model, the offset of the columns
    of cos and sin (:class:`_TurnBias`; the weight is packed without them; -1 for other models)."""
    import torch

    if not turn_input:
        return [pack.add(layer.weight), pack.add(layer.bias), -1]
    weight, turn = _TurnBias.split(layer.weight.detach().cpu().numpy(), layer.bias.detach().cpu().numpy())
    columns = torch.from_numpy(np.ascontiguousarray(turn.columns)).to(layer.weight.dtype)  # the weight's own values
    return [pack.add(torch.from_numpy(weight)), pack.add(layer.bias), pack.add(columns)]


def _stack_slots(pack: _Pack, modules: Sequence[Any], head: Any, turn_input: bool) -> tuple[list[int], int]:
    """Pack a stack of Linear–GELU pairs and its limit head in the MLP layout of :mod:`hik_sim.learning._fast_numba`
    (``MLP_SLOTS``, then (w, b, n_out, n_in) per layer): its slots and the widest activation."""
    from torch import nn

    linears = [m for m in modules if isinstance(m, nn.Linear)]
    gelus = [m for m in modules if isinstance(m, nn.GELU)]
    if len(linears) != len(gelus) or len(linears) + len(gelus) != len(modules) or any(
            not isinstance(a, nn.Linear) or not isinstance(b, nn.GELU) for a, b in zip(modules[::2], modules[1::2])):
        raise ModelError("no fast path for this MLP: its trunk must be Linear–GELU pairs")
    tanh_form = bool(gelus) and _check_gelus(gelus) == "tanh"
    if turn_input and not linears:
        raise ModelError("no fast path for a turn_input MLP without layers")
    # a turn_input model's first layer reads 9; the kernels 7 and the turn apart (add_turn)
    in_features = (7 if turn_input else linears[0].in_features) if linears else head.linear.in_features
    widths = [in_features] + [layer.out_features for layer in linears]
    first = _first_layer(pack, linears[0], turn_input) if linears else [-1, -1, -1]
    slots = [int(tanh_form), len(linears), in_features, head.linear.out_features, head.center.numel(),
             pack.add(head.linear.weight), pack.add(head.linear.bias), pack.add(head.center), pack.add(head.half_range),
             max(widths), first[2]]
    for k, layer in enumerate(linears):
        weights = first[:2] if k == 0 else [pack.add(layer.weight), pack.add(layer.bias)]
        slots += [*weights, layer.out_features, in_features if k == 0 else layer.in_features]
    return slots, max(widths)


def _numba_mlp(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
               turn_input: bool = False) -> _Parts:
    """The MLP as one compiled call (:func:`hik_sim.learning._fast_numba.mlp_forward`); ``turn_input``: its first
    layer reads the turn (:func:`hik_sim.learning._fast_numba.add_turn`)."""
    from hik_sim.learning import _fast_numba

    head = model.head
    pack = _Pack(list(model.parameters()) + [head.center, head.half_range])
    slots, width = _stack_slots(pack, list(model.trunk), head, turn_input)
    P, I = pack.array(), np.asarray(slots, dtype=np.int64)
    return _compiled_parts((_fast_numba.mlp_forward, _fast_numba.mlp_solve, _fast_numba.mlp_solve_ranked), (P, I),
                           _norm_limits(pos_min, pos_max, limits), head.linear.out_features, head.center.numel(),
                           np.zeros((2, width)), turn_input)


def _affine(pack: _Pack, norm: Any) -> list[int]:
    """Pack a norm slot pair (weight, bias) of the numba layout: a LayerNorm's affine ((-1, -1) without one), or
    ``_NO_NORM`` for none (``None`` or ``Identity``)."""
    from torch import nn

    if norm is None or isinstance(norm, nn.Identity):
        return [_NO_NORM, -1]
    if not isinstance(norm, nn.LayerNorm):
        raise ModelError(f"no fast path for a norm {type(norm).__name__}; supported: LayerNorm, Identity")
    if not norm.elementwise_affine:
        return [-1, -1]
    if norm.bias is None:
        raise ModelError("no fast path for a LayerNorm with a weight and no bias")
    return [pack.add(norm.weight), pack.add(norm.bias)]


def _fusion_slots(pack: _Pack, block: Any) -> list[int]:
    """Pack a :class:`~hik_sim.learning.models.harmoatt.FusionBlock` but its feed-forward layer: its ``FUSION_SLOTS``
    slots (:func:`hik_sim.learning._harmoatt_numba.fusion_block`: attention, norm, gates, cross cell, weight network)."""
    return [int(bool(getattr(block, "attention", True))), *_affine(pack, block.norm),
            pack.add(block.channel_gate[0].weight), pack.add(block.channel_gate[0].bias),
            pack.add(block.channel_gate[2].weight), pack.add(block.channel_gate[2].bias),
            pack.add(block.spatial_gate.weight), pack.add(block.spatial_gate.bias),
            pack.add(block.cross_channel_mix.weight), pack.add(block.cross_position_mix.weight),
            pack.add(block.cross_cell), pack.add(block.weight_net[0].weight), pack.add(block.weight_net[0].bias),
            pack.add(block.weight_net[2].weight), pack.add(block.weight_net[2].bias)]


def _numba_harmoatt(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
                    turn_input: bool = False) -> _Parts:
    """HarmoAtt-IK as one compiled call (:func:`hik_sim.learning._harmoatt_numba.harmoatt_forward`); ``turn_input``: its
    position embedding reads the turn (:func:`hik_sim.learning._fast_numba.add_turn`)."""
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
    embed_weight, embed_bias, embed_turn = _first_layer(pack, pos_embed[0], turn_input)
    slots = [int(tanh_form), len(blocks), C, L, int(model.pos_positions), pos_embed[0].out_features, ori_embed[0].out_features,
             int(dense_ff), head_hidden, head.linear.out_features, head.center.numel(),
             embed_weight, embed_bias, pack.add(pos_embed[2].weight), pack.add(pos_embed[2].bias),
             pack.add(ori_embed[0].weight), pack.add(ori_embed[0].bias), pack.add(ori_embed[2].weight), pack.add(ori_embed[2].bias),
             pack.add(model.position_code), *trunk_slots, pack.add(head.linear.weight), pack.add(head.linear.bias),
             pack.add(head.center), pack.add(head.half_range), r, ff_hidden, embed_turn]
    constants = [trunk_eps]
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
        slots += [*_fusion_slots(pack, block), *_affine(pack, ff_norm), pack.add(ff1.weight), pack.add(ff1.bias),
                  pack.add(ff2.weight), pack.add(ff2.bias)]
        constants += [float(getattr(block.norm, "eps", 0.0)), float(getattr(ff_norm, "eps", 0.0)), float(block.tau_min),
                      float(block.tau_max)]
    P, I, S = pack.array(), np.asarray(slots, dtype=np.int64), np.asarray(constants, dtype=np.float64)
    width = max(LC, ff_hidden, head_hidden, pos_embed[0].out_features, ori_embed[0].out_features, 2 * C, 2 * L, 4)
    return _compiled_parts((_harmoatt_numba.harmoatt_forward, _harmoatt_numba.harmoatt_solve, _harmoatt_numba.harmoatt_solve_ranked),
                           (P, I, S), _norm_limits(pos_min, pos_max, limits), head.linear.out_features, head.center.numel(),
                           np.zeros((9, width)), turn_input)
