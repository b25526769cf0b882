"""What every IK network shares: its output record and the head that keeps joints in their limits."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

from hik_sim.errors import ModelError

__all__ = ["IKOutput", "LimitHead", "xavier_init"]


class IKOutput(NamedTuple):
    """What an IK network returns.

    Attributes:
        q: (B, m) joint values of the free joints [rad or m], inside the limits by construction.
        fusion_weights: (B, K, 3) attention-fusion weights per block (channel, spatial, cross),
            each row summing to 1; ``None`` for networks without attention fusion.
        temperature: (B, K) the softmax temperature each block chose; ``None`` likewise.
        candidates: (B, H, m) the H answers of a network with several hypotheses
            (:class:`LimitHead` with ``hypotheses > 1``); ``None`` for a single answer. A bare
            model's ``q`` is then its first candidate; :class:`~hik_sim.learning.network.IKNetwork` replaces
            it with the candidate whose forward kinematics reaches the target best.
        outside: (B,) or (B, H) [rad] how far each answer's first joint lay outside its range before the
            clamp (0 inside): a ``clamp_in_training`` network's, in training (the loss's ``limit_pull``);
            ``None`` otherwise.
    """

    q: torch.Tensor
    fusion_weights: torch.Tensor | None = None
    temperature: torch.Tensor | None = None
    candidates: torch.Tensor | None = None
    outside: torch.Tensor | None = None


class LimitHead(nn.Module):
    """Linear layer, tanh, and an affine map of (−1, 1) onto [lower, upper]: limits hold by construction.

    With ``hypotheses`` H > 1 the head proposes H answers from the same features. A pose has
    several IK solutions (up to 8 for a 6-joint arm), and a single continuous map from poses to
    joints must jump between solution branches somewhere — near a joint limit, around the base
    axis, at a wrist flip — and blurs each jump into a wide miss. H answers, trained
    winner-takes-all (:class:`~hik_sim.learning.losses.CompositeLoss`) and chosen by forward kinematics
    (:class:`~hik_sim.learning.network.IKNetwork`), can each place their jumps elsewhere.

    Args:
        in_features: width of the features.
        lower: (m,) lower joint limits.
        upper: (m,) upper joint limits.
        hypotheses: H, answers per pose.
    """

    center: torch.Tensor  # (m,) registered buffers
    half_range: torch.Tensor

    def __init__(self, in_features: int, lower: torch.Tensor, upper: torch.Tensor, hypotheses: int = 1) -> None:
        super().__init__()
        if isinstance(hypotheses, bool) or not isinstance(hypotheses, int):
            raise ModelError(f"hypotheses must be a whole number of answers (at least 1), got {hypotheses!r}")
        if hypotheses < 1:
            raise ModelError(f"hypotheses must be at least 1, got {hypotheses}")
        self.hypotheses = hypotheses
        self.linear = nn.Linear(in_features, hypotheses * lower.numel())
        self.register_buffer("center", ((upper + lower) / 2).float())
        self.register_buffer("half_range", ((upper - lower) / 2).float())

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """(B, in_features) → (B, H, m) joint values."""
        raw = self.linear(features).view(features.shape[0], self.hypotheses, -1)
        return self.center + self.half_range * torch.tanh(raw)

    def output(self, features: torch.Tensor, **attention: torch.Tensor | None) -> IKOutput:
        """(B, in_features) → :class:`IKOutput`: ``q`` the first answer, ``candidates`` all of them when H > 1."""
        candidates = self(features)
        return IKOutput(candidates[:, 0], candidates=candidates if self.hypotheses > 1 else None, **attention)


def xavier_init(module: nn.Module) -> None:
    """Xavier-uniform weights and zero biases for every linear and convolution layer (CycleIK's init)."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
