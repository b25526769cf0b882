"""`IKNetwork`: a trained IK model with everything needed to use it on its robot.

It wraps the model (:mod:`hik_sim.models`) with the input normalisation measured on the robot's
workspace and the joint selection (fixed joints), so that it maps a target pose straight to a full
chain configuration, inside the joint limits by construction.
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn

from hik_sim.data import JointSelection, PoseNormalizer
from hik_sim.errors import HikError
from hik_sim.models import IKOutput, build_model

__all__ = ["IKNetwork"]


class IKNetwork(nn.Module):
    """Target pose → full chain configuration.

    Args:
        kind: ``harmoatt`` or ``mlp``.
        lower: (n,) lower limits of all chain joints.
        upper: (n,) upper limits.
        normalizer: the input normalisation.
        selection: which joints are fixed (the model outputs the free ones).
        model_options: the model's constructor arguments.
    """

    def __init__(self, kind: str, lower: torch.Tensor, upper: torch.Tensor, normalizer: PoseNormalizer,
                 selection: JointSelection, model_options: dict[str, Any] | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.selection = selection
        self.model_options = dict(model_options or {})
        index = selection.free_index
        self.model = build_model(kind, lower[index], upper[index], **self.model_options)
        self.normalizer = normalizer

    def forward(self, pos: torch.Tensor, quat: torch.Tensor) -> IKOutput:
        """Poses (B, 3) [m], (B, 4) wxyz in the base frame → :class:`IKOutput` with full q (B, n)."""
        if pos.ndim != 2 or pos.shape[1] != 3 or quat.shape != (pos.shape[0], 4):
            raise HikError(f"target poses must be (B, 3) positions and (B, 4) quaternions, got {tuple(pos.shape)} and {tuple(quat.shape)}")
        if not (bool(torch.isfinite(pos).all()) and bool(torch.isfinite(quat).all())):
            raise HikError("target poses must be finite; got NaN or inf")
        out = self.model(self.normalizer(pos, quat))
        return out._replace(q=self.selection.expand(out.q))

    @torch.inference_mode()
    def solve(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Joint values (B, n) for target poses, without gradients, in the network's dtype and device."""
        param = next(self.parameters())
        was_training = self.training
        self.eval()
        try:
            return self(pos.to(param), quat.to(param)).q
        finally:
            self.train(was_training)
