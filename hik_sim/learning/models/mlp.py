"""The baseline: CycleIK's generator, an MLP from a pose to joint values.

GELU hidden layers with Xavier initialisation and a tanh head mapped affinely onto the joint
limits, so every output is a valid configuration by construction.
"""

from __future__ import annotations

import torch
from torch import nn

from hik_sim.errors import ModelError
from hik_sim.learning.models.common import IKOutput, LimitHead, xavier_init

__all__ = ["MLPIK"]


class MLPIK(nn.Module):
    """Pose (B, 7) → joint values (B, m).

    Args:
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        hidden: width of each hidden layer.
        layers: number of hidden layers.
        in_features: input width (7: normalised position and quaternion).
        hypotheses: answers per pose (see :class:`~hik_sim.learning.models.common.LimitHead`).

    Raises:
        HikError: ``hidden`` or ``layers`` below 1.
    """

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, hidden: int = 512, layers: int = 4, in_features: int = 7,
                 hypotheses: int = 1) -> None:
        super().__init__()
        if not (isinstance(hidden, int) and isinstance(layers, int) and hidden >= 1 and layers >= 1):
            raise ModelError(f"the MLP needs whole numbers hidden >= 1 and layers >= 1, got hidden={hidden!r}, layers={layers!r}")
        blocks: list[nn.Module] = []
        width = in_features
        for _ in range(layers):
            blocks += [nn.Linear(width, hidden), nn.GELU()]
            width = hidden
        self.trunk = nn.Sequential(*blocks)
        self.head = LimitHead(width, lower, upper, hypotheses)
        xavier_init(self)

    def forward(self, x: torch.Tensor) -> IKOutput:
        """(B, 7) normalised pose → :class:`IKOutput` with ``q`` (B, m) (and ``candidates`` (B, H, m) when H > 1)."""
        return self.head.output(self.trunk(x))
