"""HarmoAtt-IK as its paper describes it: CycleIK's generator with attention-fusion blocks inserted.

The HarmoAtt-IK abstract builds on CycleIK's network (a pose → joint angles MLP trained through
differentiable forward kinematics) and adds an attention-fusion block: spatial, channel and
cross-dimensional attention, fused by a small weight-generation network with a temperature-adaptive
softmax. No code is published. Where the abstract can be read several ways, this module takes one
reading and says so (``docs/papers.md`` lists them too):

1. **The generator.** CycleIK's ``GenericGenerator`` as its repository defines it (see
   :mod:`hik_sim.learning.models.cycleik`): 7 fully connected hidden layers with the Panda profile's
   unequal widths (1370, 880, 2980, 1000, 2710, 2290, 880), GELU after each, a tanh head mapped onto
   the joint limits. *Reading:* the widths are the profile scaled by one factor ``width``; the default
   scale gives the network as many parameters as the shipped recipe's HarmoAtt-IK with the same
   answers and inputs (:func:`paper_width_for`), so both train at the same cost.
2. **Where the block goes.** *Reading:* after the GELU of hidden layers 2, 4 and 6 (``attention_after``),
   i.e. between the generator's narrow and wide layers, so that every third of the stack is attended;
   the abstract says only that the block is inserted into the generator.
3. **What the attention acts on.** The abstract's "spatial" and "channel" need two axes, and a hidden
   layer of an MLP has one. *Reading:* the layer's W features are laid out as a map of L positions ×
   C = W / L channels (L = ``positions``, 8 by default; the widths at the insertion points are rounded
   up to a multiple of L). Channel attention re-weights the C channels (squeeze–excitation), spatial
   attention the L positions, cross-dimensional attention every (position, channel) cell from a context
   that spans both axes (:class:`~hik_sim.learning.models.harmoatt.FusionBlock`, the same block the
   ``dense`` and ``map`` trunks use).
4. **The fusion.** The weight-generation network maps the map's mean and max over positions to three
   branch logits and one temperature logit; the weights are ``softmax(logits / τ)`` with
   ``τ ∈ [τ_min, τ_max]`` predicted per input. The block's output is ``x + Σᵢ wᵢ · branchᵢ(x)``
   (a residual, so a block starts close to a fixed scaling of its input); no norms (CycleIK has none).
5. ``attention=False`` is the control: each block adds its input instead of the attended maps (the
   widths, the stack and every other weight are the same), so ``harmoatt_no_attention`` differs from
   HarmoAtt-IK by the attention alone.

Beyond the paper, as for every network here: ``hypotheses`` H > 1 answers per pose
(:class:`~hik_sim.learning.models.common.LimitHead`), ``position_inputs`` 5 for a network that reads its
first joint's turn as (cos, sin) (:class:`~hik_sim.learning.network.IKNetwork`'s ``turn_input``).
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import nn

from hik_sim.errors import ModelError
from hik_sim.learning.models.common import IKOutput, LimitHead
from hik_sim.learning.models.cycleik import CYCLEIK_PROFILES, cycleik_layers
from hik_sim.learning.models.harmoatt import FusionBlock

__all__ = ["HarmoAttCycleIK", "PAPER_ATTENTION_AFTER", "SHIPPED_RECIPE", "paper_width_for", "attention_share"]

PAPER_ATTENTION_AFTER: tuple[int, ...] = (2, 4, 6)
"""The hidden layers (1-based) after whose GELU a fusion block sits (reading 2 of the module docstring)."""

SHIPPED_RECIPE: dict[str, int | str] = {"trunk": "dense", "channels": 16, "positions": 8, "feed_forward": 256, "embed_hidden": 64}
"""The size options of the shipped four-answer HarmoAtt-IK networks (``dense`` trunk): the size the paper
network is matched to by default."""


def _round_up(value: int, multiple: int) -> int:
    return -(-value // multiple) * multiple


class HarmoAttCycleIK(nn.Module):
    """Pose (B, P + 4) → joint values (B, m): CycleIK's generator with attention-fusion blocks.

    Args:
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        width: scale of the profile's published widths (1 = CycleIK's published size); default
            :func:`paper_width_for` the shipped recipe's parameter count.
        profile: whose published widths (``panda``, ``nicol``, ``valkyrie``).
        positions: L, positions of the map a hidden layer is laid out as (the channels are W / L).
        attention_after: the hidden layers (1-based) followed by a fusion block.
        attention: ``False``: each block adds its input instead of the attended maps (the control).
        tau_min: smallest softmax temperature.
        tau_max: largest softmax temperature.
        hypotheses: answers per pose.
        position_inputs: P, the input's leading position features (3, or 5 with the turn's cos and sin).

    Raises:
        HikError: a width out of (0, 64], fewer than 2 positions, an insertion point outside the stack.
    """

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, width: float | None = None, profile: str = "panda",
                 positions: int = 8, attention_after: Sequence[int] = PAPER_ATTENTION_AFTER, attention: bool = True,
                 tau_min: float = 0.25, tau_max: float = 4.0, hypotheses: int = 1, position_inputs: int = 3) -> None:
        super().__init__()
        if profile not in CYCLEIK_PROFILES:
            raise ModelError(f"unknown CycleIK profile {profile!r}; profiles are: {', '.join(CYCLEIK_PROFILES)}")
        if isinstance(positions, bool) or not isinstance(positions, int) or positions < 2:
            raise ModelError(f"positions must be a whole number >= 2, got {positions!r}")
        if position_inputs < 1:
            raise ModelError(f"position_inputs must be >= 1, got {position_inputs}")
        depth = len(CYCLEIK_PROFILES[profile]["layers"])
        after = tuple(sorted(set(attention_after)))
        if not all(isinstance(i, int) and 1 <= i <= depth for i in after):
            raise ModelError(f"attention_after must name hidden layers 1..{depth}, got {list(attention_after)}")
        if width is None:
            width = paper_width_for(lower.numel(), hypotheses, position_inputs, profile, positions, after)
        widths = list(cycleik_layers(width, profile))
        for i in after:
            widths[i - 1] = _round_up(max(widths[i - 1], 2 * positions), positions)
        self.width, self.profile, self.positions, self.attention_after = width, profile, positions, after
        self.layers = tuple(widths)
        self.attention = attention
        self.position_inputs = position_inputs
        stages: list[nn.Module] = []
        blocks: list[FusionBlock] = []
        current = position_inputs + 4
        for index, h in enumerate(widths, start=1):
            linear = nn.Linear(current, h)
            nn.init.xavier_normal_(linear.weight)  # GenericGenerator: xavier_normal_ on the hidden layers
            stages.append(nn.Sequential(linear, nn.GELU()))
            if index in after:
                blocks.append(FusionBlock(h // positions, positions, None, tau_min=tau_min, tau_max=tau_max,
                                          attention=attention, norm=False))
            current = h
        self.stages = nn.ModuleList(stages)
        self.blocks = nn.ModuleList(blocks)
        self.head = LimitHead(current, lower, upper, hypotheses)

    def forward(self, x: torch.Tensor) -> IKOutput:
        """(B, P + 4) normalised pose → :class:`IKOutput` with q (B, m), fusion weights (B, K, 3), temperatures
        (B, K) (and candidates (B, H, m) when H > 1)."""
        weights, temperatures = [], []
        blocks = iter(self.blocks)
        for index, stage in enumerate(self.stages, start=1):
            x = stage(x)
            if index in self.attention_after:
                block = next(blocks)
                mapped, w, tau = block(x.view(x.shape[0], self.positions, -1))
                x = mapped.flatten(1)
                weights.append(w)
                temperatures.append(tau)
        return self.head.output(x, fusion_weights=torch.stack(weights, dim=1), temperature=torch.stack(temperatures, dim=1))


def _count(module: nn.Module) -> int:
    return sum(p.numel() for p in module.parameters())


def paper_width_for(outputs: int, hypotheses: int = 1, position_inputs: int = 3, profile: str = "panda", positions: int = 8,
                    attention_after: Sequence[int] = PAPER_ATTENTION_AFTER, parameters: int | None = None) -> float:
    """The profile scale (4 decimals) whose paper network has the parameter count nearest ``parameters``.

    Default ``parameters``: the shipped recipe's HarmoAtt-IK (:data:`SHIPPED_RECIPE`) with ``outputs`` joints, the same
    answers and position inputs.
    """
    lower, upper = -torch.ones(outputs), torch.ones(outputs)
    if parameters is None:
        from hik_sim.learning.models.harmoatt import HarmoAttIK

        parameters = _count(HarmoAttIK(lower, upper, hypotheses=hypotheses, position_inputs=position_inputs,
                                       **SHIPPED_RECIPE))  # type: ignore[arg-type]

    def count(width: float) -> int:
        return _count(HarmoAttCycleIK(lower, upper, width, profile, positions, attention_after, hypotheses=hypotheses,
                                      position_inputs=position_inputs))

    lo, hi = 0.01, 1.0
    for _ in range(30):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if count(mid) < parameters else (lo, mid)
    return min({round(lo, 4), round(hi, 4)}, key=lambda w: abs(count(w) - parameters))


def attention_share(model: nn.Module) -> dict[str, float | int]:
    """How much of a network is attention: parameters of the three branches and of the weight-generation network,
    and their share of all parameters and of the forward pass's multiply-adds (one pose).

    Counts the modules of every :class:`~hik_sim.learning.models.harmoatt.FusionBlock`; multiply-adds are counted
    for linear layers (weights) and the branches' element-wise gates (one per map cell and branch).
    """
    total = _count(model)
    branch = weight_net = gate_macs = 0
    attention_linears: set[int] = set()
    for block in (m for m in model.modules() if isinstance(m, FusionBlock)):
        parts = (block.channel_gate, block.spatial_gate, block.cross_channel_mix, block.cross_position_mix)
        branch += sum(_count(p) for p in parts) + block.cross_cell.numel()
        weight_net += _count(block.weight_net)
        attention_linears |= {id(m) for p in (*parts, block.weight_net) for m in p.modules() if isinstance(m, nn.Linear)}
        gate_macs += 4 * block.cross_cell.shape[1] * block.cross_cell.shape[2]  # 3 branch gates and the cross gate's product
    linears = [m for m in model.modules() if isinstance(m, nn.Linear)]
    macs_attention = gate_macs + sum(m.in_features * m.out_features for m in linears if id(m) in attention_linears)
    macs_total = gate_macs + sum(m.in_features * m.out_features for m in linears)
    return {"parameters": total, "attention_branch_parameters": branch, "weight_generation_parameters": weight_net,
            "attention_parameter_share": (branch + weight_net) / total if total else 0.0,
            "forward_macs": macs_total, "attention_macs": macs_attention,
            "attention_mac_share": macs_attention / macs_total if macs_total else 0.0}
