"""HarmoAtt-IK: an IK network whose trunk fuses three attention branches with adaptive weights.

No public code exists; this module builds the network from the published description. Each
choice and its reason:

1. **Pose → feature map.** Position (3) and orientation (4, w ≥ 0) are the two information
   sources to fuse, so each gets its own embedding (Linear–GELU–Linear) into ``C`` channels × half
   of the ``L`` positions; the two halves are concatenated along the position axis and a learned
   positional code is added. A map of C × L lets attention act along two axes: channels (which
   features) and positions (which part of the pose, and where in it).
2. **Three attention branches** on the block's input map X (B, L, C) (layer-normalised in the ``map``
   trunk), each a gate in (0, 1) times X:

   - *channel* (squeeze–excitation): mean over L → C → C/r → C, sigmoid; re-weights features;
   - *spatial*: channel-pooled mean and max (2L values) → linear map → sigmoid over the L
     positions; re-weights positions, i.e. position-derived against orientation-derived features;
   - *cross-dimensional* (triplet-attention style): a per-cell gate over (L, C) from two
     descriptors of every cell, its value and a cross-axis context (X mixed by a learned C × C and
     a learned L × L map), so that the gate of a cell depends jointly on its channel and position —
     the interaction the other two branches factor away. Triplet attention convolves such
     descriptors with a k × k kernel; here each cell has its own weights instead, because the
     context already spans both axes and a convolution with one output channel made the whole
     network 15× slower to train on a CPU (its backward pass dominated).
3. **Weight generation with an adaptive temperature.** A compact network maps pooled features
   (mean and max over L, 2C values) to three branch logits and one temperature logit; the fusion
   weights are ``softmax(logits / τ)`` with ``τ = τ_min + (τ_max − τ_min) · sigmoid(t)`` predicted per
   input, positive and bounded (default 0.25…4): a low τ lets the block commit to one branch for a
   pose it is sure about, a high τ blends the branches where it is not.
4. **Fusion and trunk.** Block output ``X + Σᵢ wᵢ · branchᵢ`` (a residual, so a block starts close
   to identity), then a feed-forward layer with its own residual. Several blocks form the trunk,
   and the same tanh head as the baseline maps onto the joint limits (limits hold by construction).
   Two trunks (``trunk``):

   - ``dense`` (this class's default; the shipped networks' trunk): the feed-forward layer mixes the whole flattened
     map (L·C → F → L·C), so the fusion blocks hold almost all of the network's capacity (about
     92 % of the parameters at the defaults) and the head is a single linear layer. The attention
     then re-weights the features that carry the model, instead of a thin stem in front of a
     large MLP head. It has **no LayerNorm**: with the ``map`` trunk's LayerNorms (over the whole
     map, before each branch, feed-forward layer and the head) the dense trunk learned the IRB120
     2.4× slower than the MLP (800 steps: 74.8 mm / 21.4° against 31.3 mm / 20.5°); without them,
     faster (21.9 mm / 13.8°). A norm over the whole feature vector discards its scale, which
     here carries where the target is (docs/networks.md has the runs and the command).
   - ``map`` (hik_sim 0.1, the shipped networks trained before 0.2): a position-wise feed-forward
     layer (C → 2C → C) and a two-layer MLP head on the flattened map; the three fusion blocks held
     2.2 % of the parameters and the head 92 %. Cards without a ``trunk`` option are of this kind.
5. The fusion weights (B, K, 3) and temperatures (B, K) are returned, for the entropy regulariser
   of the composite loss and for inspection.
6. ``attention=False`` is the ablation that says what the attention adds: every branch is replaced
   by the identity (a block adds its (normalised) input), and everything else (embeddings, norms,
   residuals, feed-forward layers, head, parameter count up to the attention's own) is kept.
7. Beyond the paper, optional: ``hypotheses`` H > 1 answers per pose from the same trunk, trained
   winner-takes-all and chosen by forward kinematics (see
   :class:`~hik_sim.learning.models.common.LimitHead`); the baseline MLP takes the same option.

Initialisation follows the baseline (Xavier, zero biases).
"""

from __future__ import annotations

import torch
from torch import nn

from hik_sim.errors import ModelError
from hik_sim.learning.models.common import IKOutput, LimitHead, xavier_init

__all__ = ["HarmoAttIK", "FusionBlock", "BRANCHES", "TRUNKS"]

BRANCHES: tuple[str, ...] = ("channel", "spatial", "cross")
TRUNKS: tuple[str, ...] = ("dense", "map")


class FusionBlock(nn.Module):
    """Channel, spatial and cross-dimensional attention fused by input-dependent weights.

    Maps are laid out (B, L, C): L positions of C channels.

    Args:
        channels: C.
        positions: L.
        feed_forward: the block's feed-forward layer, (B, L, C) → (B, L, C), added as a residual; ``None``: none
            (the paper network's blocks, :mod:`~hik_sim.learning.models.harmoatt_cycleik`).
        reduction: squeeze ratio of the channel branch.
        tau_min: smallest softmax temperature.
        tau_max: largest softmax temperature.
        attention: ``False``: every branch is the identity (the ablation; the fusion weights are
            still computed and returned, but a convex mix of identical maps is the map itself).
        norm: layer-normalise the block's input (the ``map`` trunk) or not (the ``dense`` trunk).
    """

    def __init__(self, channels: int, positions: int, feed_forward: nn.Module | None, reduction: int = 4, tau_min: float = 0.25,
                 tau_max: float = 4.0, attention: bool = True, norm: bool = True) -> None:
        super().__init__()
        if not 0 < tau_min < tau_max:
            raise ModelError(f"temperature bounds must satisfy 0 < tau_min < tau_max, got {tau_min}, {tau_max}")
        self.tau_min, self.tau_max = tau_min, tau_max
        self.attention = attention
        self.norm = nn.LayerNorm((positions, channels)) if norm else nn.Identity()
        squeezed = max(channels // reduction, 1)
        self.channel_gate = nn.Sequential(nn.Linear(channels, squeezed), nn.GELU(), nn.Linear(squeezed, channels))
        self.spatial_gate = nn.Linear(2 * positions, positions)
        self.cross_channel_mix = nn.Linear(channels, channels, bias=False)
        self.cross_position_mix = nn.Linear(positions, positions, bias=False)
        self.cross_cell = nn.Parameter(torch.stack((torch.ones(positions, channels), torch.ones(positions, channels),
                                                    torch.zeros(positions, channels))))
        self.weight_net = nn.Sequential(nn.Linear(2 * channels, channels), nn.GELU(), nn.Linear(channels, len(BRANCHES) + 1))
        self.feed_forward = feed_forward

    def branches(self, x: torch.Tensor) -> torch.Tensor:
        """The three attended maps of a (normalised) map (B, L, C), stacked: (B, 3, L, C)."""
        channel = x * torch.sigmoid(self.channel_gate(x.mean(dim=1)))[:, None, :]
        pooled = torch.cat((x.mean(dim=2), x.amax(dim=2)), dim=1)  # (B, 2L): channel-pooled mean and max
        spatial = x * torch.sigmoid(self.spatial_gate(pooled))[:, :, None]
        context = self.cross_position_mix(self.cross_channel_mix(x).transpose(1, 2)).transpose(1, 2)  # (B, L, C)
        value_weight, context_weight, bias = self.cross_cell
        cross = x * torch.sigmoid(value_weight * x + context_weight * context + bias)
        return torch.stack((channel, spatial, cross), dim=1)

    def fusion(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Fusion weights (B, 3), summing to 1, and temperature (B,) of a (normalised) map (B, L, C)."""
        out = self.weight_net(torch.cat((x.mean(dim=1), x.amax(dim=1)), dim=1))
        tau = self.tau_min + (self.tau_max - self.tau_min) * torch.sigmoid(out[:, -1])
        return torch.softmax(out[:, :-1] / tau[:, None], dim=1), tau

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        """(B, L, C) → (B, L, C), fusion weights (B, 3), temperature (B,)."""
        normed = self.norm(x)
        weights, tau = self.fusion(normed)
        if self.attention:
            x = x + (weights[:, :, None, None] * self.branches(normed)).sum(dim=1)
        else:
            x = x + normed
        return (x if self.feed_forward is None else x + self.feed_forward(x)), weights, tau


class _PositionWise(nn.Sequential):
    """The ``map`` trunk's feed-forward layer: LayerNorm, then C → 2C → C at every position."""

    def __init__(self, channels: int, positions: int) -> None:
        super().__init__(nn.LayerNorm((positions, channels)), nn.Linear(channels, 2 * channels), nn.GELU(),
                         nn.Linear(2 * channels, channels))


class _Dense(nn.Module):
    """The ``dense`` trunk's feed-forward layer: L·C → F → L·C over the flattened map (no norm)."""

    def __init__(self, channels: int, positions: int, hidden: int) -> None:
        super().__init__()
        self.mix = nn.Sequential(nn.Linear(channels * positions, hidden), nn.GELU(), nn.Linear(hidden, channels * positions))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        """(B, L, C) → (B, L, C)."""
        return self.mix(x.flatten(1)).view_as(x)


class HarmoAttIK(nn.Module):
    """Pose (B, 7) → joint values (B, m) through attention-fusion blocks.

    The defaults are the ``dense`` trunk. The ``map`` trunk of hik_sim 0.1 was built with
    ``trunk="map", channels=16, blocks=3, head_hidden=640``.

    Args:
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        channels: C, channels of the feature map.
        positions: L, positions of the feature map (half from the position, half from the orientation).
        blocks: number of fusion blocks K.
        embed_hidden: hidden width of each embedding.
        trunk: ``dense`` or ``map`` (see the module docstring).
        feed_forward: ``dense`` trunk: hidden width F of each block's feed-forward layer (default L·C).
        head_hidden: ``map`` trunk: width of the MLP head's two hidden layers (default 640).
        attention: ``False`` replaces the three attention branches by the identity (the ablation).
        tau_min: smallest softmax temperature.
        tau_max: largest softmax temperature.
        hypotheses: answers per pose (see :class:`~hik_sim.learning.models.common.LimitHead`).
        position_inputs: P, the input's leading features embedded as the position (3; 5 for a network whose
            first joint's turn is given back as (cos, sin), :class:`~hik_sim.learning.network.IKNetwork`'s
            ``turn_input``); the next 4 are the quaternion.

    Raises:
        HikError: sizes below their minimum, an unknown trunk, or an option of the other trunk.
    """

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, channels: int = 24, positions: int = 16, blocks: int = 2,
                 embed_hidden: int = 128, trunk: str = "dense", feed_forward: int | None = None, head_hidden: int | None = None,
                 attention: bool = True, tau_min: float = 0.25, tau_max: float = 4.0, hypotheses: int = 1,
                 position_inputs: int = 3) -> None:
        super().__init__()
        if channels < 2 or positions < 2 or blocks < 1:
            raise ModelError(f"HarmoAtt-IK needs channels >= 2, positions >= 2, blocks >= 1; got {channels}, {positions}, {blocks}")
        if trunk not in TRUNKS:
            raise ModelError(f"unknown HarmoAtt-IK trunk {trunk!r}; trunks are: {', '.join(TRUNKS)}")
        if (trunk == "dense" and head_hidden is not None) or (trunk == "map" and feed_forward is not None):
            raise ModelError(f"the {trunk!r} trunk takes " + ("feed_forward, not head_hidden" if trunk == "dense" else
                                                            "head_hidden, not feed_forward"))
        if position_inputs < 1:
            raise ModelError(f"HarmoAtt-IK needs position_inputs >= 1, got {position_inputs}")
        self.channels, self.positions, self.trunk = channels, positions, trunk
        self.position_inputs = position_inputs
        self.pos_positions = positions // 2
        ori_positions = positions - self.pos_positions
        self.pos_embed = nn.Sequential(nn.Linear(position_inputs, embed_hidden), nn.GELU(),
                                       nn.Linear(embed_hidden, channels * self.pos_positions))
        self.ori_embed = nn.Sequential(nn.Linear(4, embed_hidden), nn.GELU(), nn.Linear(embed_hidden, channels * ori_positions))
        self.position_code = nn.Parameter(torch.zeros(1, positions, channels))
        width = channels * positions

        def feed_forward_layer() -> nn.Module:
            if trunk == "map":
                return _PositionWise(channels, positions)
            return _Dense(channels, positions, feed_forward or width)

        self.blocks = nn.ModuleList(FusionBlock(channels, positions, feed_forward_layer(), tau_min=tau_min, tau_max=tau_max,
                                                attention=attention, norm=trunk == "map") for _ in range(blocks))
        if trunk == "map":
            hidden = head_hidden or 640
            self.trunk_head: nn.Module = nn.Sequential(nn.Linear(width, hidden), nn.GELU(), nn.Linear(hidden, hidden), nn.GELU())
        else:
            hidden = width
            self.trunk_head = nn.GELU()
        self.head = LimitHead(hidden, lower, upper, hypotheses)
        xavier_init(self)
        nn.init.normal_(self.position_code, std=0.02)

    def forward(self, x: torch.Tensor) -> IKOutput:
        """(B, P + 4) normalised pose (P = ``position_inputs``, 3 by default) → :class:`IKOutput` with q (B, m),
        fusion weights (B, K, 3), temperatures (B, K) (and candidates (B, H, m) when H > 1)."""
        batch, split = x.shape[0], self.position_inputs
        pos_map = self.pos_embed(x[:, :split]).view(batch, self.pos_positions, self.channels)
        ori_map = self.ori_embed(x[:, split:]).view(batch, -1, self.channels)
        features = torch.cat((pos_map, ori_map), dim=1) + self.position_code  # (B, L, C)
        weights, temperatures = [], []
        for block in self.blocks:
            features, w, tau = block(features)
            weights.append(w)
            temperatures.append(tau)
        return self.head.output(self.trunk_head(features.flatten(1)), fusion_weights=torch.stack(weights, dim=1),
                                temperature=torch.stack(temperatures, dim=1))
