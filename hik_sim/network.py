"""`IKNetwork`: a trained IK model with everything needed to use it on its robot.

It wraps the model (:mod:`hik_sim.models`) with the input normalisation measured on the robot's
workspace and the joint selection (fixed joints), so that it maps a target pose straight to a full
chain configuration, inside the joint limits by construction. A model with several hypotheses
proposes H answers; the network answers with the one whose forward kinematics lands closest to the
target (position error / 5 mm + rotation error / 2°, the success tolerances), so it needs the
robot's :class:`~hik_sim.kinematics.Chain`.
"""

from __future__ import annotations

import math
from typing import Any

import torch
from torch import nn

from hik_sim.data import JointSelection, PoseNormalizer
from hik_sim.errors import HikError
from hik_sim.kinematics import Chain
from hik_sim.losses import geodesic_angle
from hik_sim.models import IKOutput, build_model

__all__ = ["IKNetwork", "CHOICE_TOLERANCE"]

CHOICE_TOLERANCE: tuple[float, float] = (0.005, math.radians(2.0))
"""Units [m], [rad] in which position and rotation errors are added to choose among hypotheses."""


class IKNetwork(nn.Module):
    """Target pose → full chain configuration.

    Args:
        kind: ``harmoatt`` or ``mlp``.
        lower: (n,) lower limits of all chain joints.
        upper: (n,) upper limits.
        normalizer: the input normalisation.
        selection: which joints are fixed (the model outputs the free ones).
        model_options: the model's constructor arguments.
        chain: the robot's chain; needed (to choose among answers) when ``hypotheses`` > 1.

    Raises:
        HikError: a model with several hypotheses and no chain.
    """

    def __init__(self, kind: str, lower: torch.Tensor, upper: torch.Tensor, normalizer: PoseNormalizer,
                 selection: JointSelection, model_options: dict[str, Any] | None = None, chain: Chain | None = None) -> None:
        super().__init__()
        self.kind = kind
        self.selection = selection
        self.model_options = dict(model_options or {})
        self.lower, self.upper = tuple(float(v) for v in lower), tuple(float(v) for v in upper)  # (n,) for robot checks
        index = selection.free_index
        self.model = build_model(kind, lower[index], upper[index], **self.model_options)
        self.normalizer = normalizer
        self.hypotheses = int(self.model_options.get("hypotheses", 1))
        if self.hypotheses > 1 and chain is None:
            raise HikError(f"a network with {self.hypotheses} hypotheses needs the robot's chain to choose among them")
        self.chain = chain

    def forward(self, pos: torch.Tensor, quat: torch.Tensor, choose: bool = True) -> IKOutput:
        """Poses (B, 3) [m], (B, 4) wxyz in the base frame → :class:`IKOutput` with full q (B, n).

        With several hypotheses, ``candidates`` holds all of them as full configurations (B, H, n)
        and ``q`` the one chosen by forward kinematics; ``choose=False`` skips that choice (``q``
        is then the first candidate), for training, whose loss computes the FK of every candidate.
        """
        if pos.ndim != 2 or pos.shape[1] != 3 or quat.shape != (pos.shape[0], 4):
            raise HikError(f"target poses must be (B, 3) positions and (B, 4) quaternions, got {tuple(pos.shape)} and {tuple(quat.shape)}")
        if not (bool(torch.isfinite(pos).all()) and bool(torch.isfinite(quat).all())):
            raise HikError("target poses must be finite; got NaN or inf")
        zero = quat.norm(dim=-1) < 1e-9
        if bool(zero.any()):
            raise HikError(f"target quaternions must be non-zero (rows {torch.nonzero(zero).flatten().tolist()[:10]} are zero); "
                           "give unit quaternions (w, x, y, z)")
        out = self.model(self.normalizer(pos, quat))
        if out.candidates is None:
            return out._replace(q=self.selection.expand(out.q))
        batch, hypotheses, free = out.candidates.shape
        candidates = self.selection.expand(out.candidates.reshape(batch * hypotheses, free)).view(batch, hypotheses, -1)
        if not choose:
            return out._replace(q=candidates[:, 0], candidates=candidates)
        return out._replace(q=self.choose(candidates, pos, quat), candidates=candidates)

    def choose(self, candidates: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """The candidate (B, H, n) → (B, n) whose FK reaches the target (B, 3), (B, 4) best."""
        best = self.rank(candidates, pos, quat)[:, 0]
        return candidates[torch.arange(candidates.shape[0], device=candidates.device), best]

    def rank(self, candidates: torch.Tensor, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Indices (B, H) that order each pose's candidates (B, H, n) from the best to the worst.

        Best: least position error / 5 mm + rotation error / 2° of the candidate's FK against the
        target (B, 3), (B, 4), computed in the candidates' dtype.
        """
        assert self.chain is not None
        batch, hypotheses, n = candidates.shape
        with torch.no_grad():
            reached = self.chain.fk(candidates.detach().reshape(batch * hypotheses, n))
            pos_error = torch.linalg.vector_norm(reached.pos.view(batch, hypotheses, 3) - pos[:, None].to(reached.pos), dim=-1)
            rot_error = geodesic_angle(reached.quat.view(batch, hypotheses, 4),
                                       quat[:, None].to(reached.quat).expand(batch, hypotheses, 4))
            return (pos_error / CHOICE_TOLERANCE[0] + rot_error / CHOICE_TOLERANCE[1]).argsort(dim=1)

    def solve(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Joint values (B, n) for target poses (the chosen answer), without gradients, in the network's dtype and device.

        Raises:
            HikError: wrong shapes, NaN/inf or a zero quaternion. An empty batch (B = 0) answers (0, n).
        """
        return self.solve_all(pos, quat)[:, 0]

    @torch.inference_mode()
    def solve_all(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """Every answer (B, H, n) for target poses, the chosen one first, then by how well they reach the target.

        H = 1 for a network with a single answer; no gradients, in the network's dtype and device.
        An empty batch (B = 0) answers an empty (0, H, n) tensor.

        Raises:
            HikError: wrong shapes, NaN/inf or a zero quaternion.
        """
        param = next(self.parameters())
        if pos.ndim == 2 and pos.shape == (0, 3) and quat.shape == (0, 4):
            return param.new_empty((0, self.hypotheses, len(self.selection.joint_names)))
        was_training = self.training
        self.eval()
        try:
            pos, quat = pos.to(param), quat.to(param)
            out = self(pos, quat, choose=False)
            if out.candidates is None:
                return out.q[:, None]
            order = self.rank(out.candidates, pos, quat)
            return out.candidates.gather(1, order[:, :, None].expand_as(out.candidates))
        finally:
            self.train(was_training)
