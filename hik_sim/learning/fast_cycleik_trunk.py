"""HarmoAtt-IK's paper trunk (``trunk=cycleik``, :class:`~hik_sim.learning.models.harmoatt_cycleik.HarmoAttCycleIK`)
for :class:`~hik_sim.learning.fast_network.FastIKNetwork`, on both backends.

The network is CycleIK's generator (Linear–GELU layers and a limit head, as the MLP) with a norm-free
:class:`~hik_sim.learning.models.harmoatt.FusionBlock` without a feed-forward layer after the GELU of some hidden
layers, reading that layer's W features as L positions × W / L channels. Both backends are the MLP's with the
dense trunk's fusion block inserted there:

- ``numpy``: :func:`hik_sim.learning.fast_numpy._stack_forward` with the block of
  :func:`hik_sim.learning.fast_numpy._fusion_block` (its GELU's constant applied before the block, not folded into
  the next layer, since the block reads the GELU's true value);
- ``numba``: one compiled call, :mod:`hik_sim.learning._harmoatt_cycleik_numba` (the MLP's layout with a table of
  blocks, packed here by :mod:`hik_sim.learning.fast_numba_pack`'s helpers).

NumPy only at import: torch is imported by whoever hands over a network, numba when the numba backend is built.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from hik_sim.errors import ModelError
from hik_sim.learning.fast_parts import _check_gelus, _Parts

__all__: list[str] = []


def _paper_layout(model: Any, turn_input: bool) -> tuple[list[Any], dict[int, Any]]:
    """The paper trunk's Linear–GELU modules (in order) and its fusion blocks by layer (0-based: the block after that
    layer's GELU); checks what the fast paths assume (one GELU kind, norm-free blocks without a feed-forward layer,
    the input width ``turn_input`` implies)."""
    from torch import nn

    modules = [m for stage in model.stages for m in stage]
    _check_gelus([m for m in model.modules() if isinstance(m, nn.GELU)])  # the stack's and the blocks' GELUs alike
    after = tuple(model.attention_after)
    blocks = list(model.blocks)
    if len(blocks) != len(after):
        raise ModelError(f"no fast path for a paper trunk of {len(blocks)} blocks after layers {list(after)}")
    inputs = modules[0].in_features
    if inputs != (9 if turn_input else 7):
        raise ModelError(f"no fast path for a paper trunk of {inputs} inputs ({'9 with' if turn_input else '7 without'} turn_input)")
    for layer, block in zip(after, blocks):
        if block.feed_forward is not None or not isinstance(block.norm, nn.Identity):
            raise ModelError("no fast path for a paper-trunk fusion block with a norm or a feed-forward layer")
        if modules[2 * (layer - 1)].out_features != int(model.positions) * block.channel_gate[0].in_features:
            raise ModelError(f"no fast path for a paper trunk whose layer {layer} is not its block's L × C map")
    return modules, {layer - 1: block for layer, block in zip(after, blocks)}


def _harmoatt_cycleik_forward(model: Any, turn_input: bool = False) -> _Parts:
    """The paper trunk's NumPy forward pass (with or without attention); ``turn_input``: its first layer reads the
    turn (:class:`~hik_sim.learning.fast_parts._TurnBias`)."""
    from hik_sim.learning.fast_numpy import _stack_forward

    modules, blocks = _paper_layout(model, turn_input)
    return _stack_forward(modules, model.head, turn_input, blocks, int(model.positions))


def _numba_harmoatt_cycleik(model: Any, pos_min: np.ndarray, pos_max: np.ndarray, limits: tuple[np.ndarray, np.ndarray],
                            turn_input: bool = False) -> _Parts:
    """The paper trunk as one compiled call (:func:`hik_sim.learning._harmoatt_cycleik_numba.harmoatt_cycleik_forward`);
    ``turn_input``: its first layer reads the turn (:func:`hik_sim.learning._fast_numba.add_turn`)."""
    from hik_sim.learning import _harmoatt_cycleik_numba as kernels
    from hik_sim.learning.fast_numba_pack import _compiled_parts, _fusion_slots, _norm_limits, _Pack, _stack_slots

    modules, blocks = _paper_layout(model, turn_input)
    head = model.head
    pack = _Pack(list(model.parameters()) + [head.center, head.half_range])
    slots, width = _stack_slots(pack, modules, head, turn_input)
    layers, L = len(modules) // 2, int(model.positions)
    table = len(slots)  # one slot per layer: the offset of its block's slots, or -1
    slots += [-1] * layers
    constants: list[float] = []
    for layer, block in sorted(blocks.items()):
        slots[table + layer] = len(slots)
        slots += [*_fusion_slots(pack, block), block.channel_gate[0].in_features, L, block.channel_gate[0].out_features,
                  len(constants)]
        constants += [float(getattr(block.norm, "eps", 0.0)), float(block.tau_min), float(block.tau_max)]
    P, I, S = pack.array(), np.asarray(slots, dtype=np.int64), np.asarray(constants or [0.0], dtype=np.float64)
    return _compiled_parts((kernels.harmoatt_cycleik_forward, kernels.harmoatt_cycleik_solve, kernels.harmoatt_cycleik_solve_ranked),
                           (P, I, S), _norm_limits(pos_min, pos_max, limits), head.linear.out_features, head.center.numel(),
                           np.zeros((10, max(width, 4))), turn_input)
