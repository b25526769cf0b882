"""What every IK network shares: its output record and the head that keeps joints in their limits."""

from __future__ import annotations

from typing import NamedTuple

import torch
from torch import nn

__all__ = ["IKOutput", "LimitHead", "xavier_init"]


class IKOutput(NamedTuple):
    """What an IK network returns.

    Attributes:
        q: (B, m) joint values of the free joints [rad or m], inside the limits by construction.
        fusion_weights: (B, K, 3) attention-fusion weights per block (channel, spatial, cross),
            each row summing to 1; ``None`` for networks without attention fusion.
        temperature: (B, K) the softmax temperature each block chose; ``None`` likewise.
    """

    q: torch.Tensor
    fusion_weights: torch.Tensor | None = None
    temperature: torch.Tensor | None = None


class LimitHead(nn.Module):
    """Linear layer, tanh, and an affine map of (−1, 1) onto [lower, upper]: limits hold by construction.

    Args:
        in_features: width of the features.
        lower: (m,) lower joint limits.
        upper: (m,) upper joint limits.
    """

    def __init__(self, in_features: int, lower: torch.Tensor, upper: torch.Tensor) -> None:
        super().__init__()
        self.linear = nn.Linear(in_features, lower.numel())
        self.register_buffer("center", ((upper + lower) / 2).float())
        self.register_buffer("half_range", ((upper - lower) / 2).float())

    def forward(self, features: torch.Tensor) -> torch.Tensor:
        """(B, in_features) → (B, m) joint values."""
        return self.center + self.half_range * torch.tanh(self.linear(features))


def xavier_init(module: nn.Module) -> None:
    """Xavier-uniform weights and zero biases for every linear and convolution layer (CycleIK's init)."""
    for layer in module.modules():
        if isinstance(layer, (nn.Linear, nn.Conv1d, nn.Conv2d)):
            nn.init.xavier_uniform_(layer.weight)
            if layer.bias is not None:
                nn.init.zeros_(layer.bias)
