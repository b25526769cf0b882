"""The composite training loss, computed through differentiable FK of the predicted joints.

The network's joints go through :class:`~hik_sim.kinematics.chain.Chain` FK (cycle consistency: no
joint-space targets, so every IK solution branch is an equally good answer), and the pose it
reaches is compared with the target pose. Errors are measured in units of the success tolerances
(5 mm, 2° by default), so that the two terms weigh a position and a rotation miss alike.

Terms, each of which can be switched to its plain version for ablations:

- **Improved Smooth-L1 on position.** Smooth-L1 (Huber) of the Euclidean position error ``e``:
  quadratic below β, linear above. With a fixed β the loss turns quadratic once errors fall
  below β, and its gradient ``e/β`` fades just when the last millimetres are being won. The
  improvement: β *adapts to the error scale* — it follows ``κ ×`` the running median of the
  batch's errors (an exponential moving average, bounded to [β_min, β_max]), so as training
  converges the quadratic zone shrinks with the errors and the larger-than-typical errors keep a
  full-strength gradient. Plain version: fixed β = 1 tolerance.
- **Sign-invariant quaternion loss.** q and −q are the same rotation. The loss is the geodesic
  angle ``2·atan2(‖vec(q̂*⊗q)‖, |w(q̂*⊗q)|)`` between prediction and target, identical for q and −q
  and linear in the angle (so small rotation errors keep their gradient). Plain version: the
  chordal distance ``‖q̂ − q‖`` (≈ θ/2 for small errors, scaled to the same units) on w ≥ 0
  canonical quaternions, which jumps where w changes sign (rotations near a half turn).
- **Shannon-entropy regulariser** on HarmoAtt-IK's fusion weights: ``+λ·H(w)`` with
  ``H = −Σ wᵢ log wᵢ`` averaged over blocks and batch, λ = 0.01 by default. Its sign *minimises*
  entropy: without it nothing stops the weight network from settling on uniform weights, where
  fusion degenerates into a fixed average and the adaptivity (and the temperature) is wasted;
  a small positive λ pushes each block to commit to the branch that suits the input, while the
  task loss keeps it from collapsing onto one branch for every input. A negative λ (maximising
  entropy, keeping the branches balanced) is accepted for experiments; at λ = 0.01 the two signs
  measured alike (docs/networks.md, "Two readings of the abstract"). Plain version: λ = 0.

For a network with several hypotheses (H answers per pose) the loss is *relaxed winner-takes-all*:
per pose, the loss of the answer the network would choose (least position/tolerance +
rotation/tolerance, as :class:`~hik_sim.learning.network.IKNetwork` chooses), plus ε × the mean loss of all
H answers (ε = 0.05 by default), so that every answer keeps learning even where another wins —
without that term an answer that loses everywhere early never trains again. The winner's errors
drive the adaptive β and are the reported position and rotation terms.

Two other objectives train the baselines as their papers do (the trainer picks one by model kind,
:attr:`hik_sim.learning.train.TrainConfig.objective`):

- :class:`CycleIKLoss`: CycleIK's own loss (``jangerritha/CycleIK``, ``train/train.py`` and
  ``train/train_mlp.py``), through FK like ours: ``position_weight × SmoothL1(β = 1 mm)`` of the
  position coordinates [m] (PyTorch's ``SmoothL1Loss(beta=0.001)``, mean over batch and the three
  coordinates) plus ``orientation_weight ×`` the mean over the batch of
  ``min(Σ SmoothL1_β=0.01(q̂ − q), Σ SmoothL1_β=0.01(−q̂ − q))`` over the four quaternion
  components (``orientation_loss_phi_7``: sign invariant by taking the minimum over ±q).
- :class:`RegressionLoss`: supervised regression (the hybrid paper's DNN): the mean squared error
  between the network's joints and the sampled joints [rad²]; no FK.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import NamedTuple

import torch
from torch import nn

from hik_sim.errors import TrainingError
from hik_sim.kinematics.rotations import quaternion_multiply
from hik_sim.kinematics.tolerances import SUCCESS

__all__ = ["LossConfig", "LossTerms", "CompositeLoss", "adaptive_smooth_l1", "geodesic_angle", "fusion_entropy",
           "CycleIKLoss", "RegressionLoss", "cycleik_position_loss", "cycleik_orientation_loss"]


@dataclass(frozen=True)
class LossConfig:
    """Switches and weights of the composite loss.

    Attributes:
        position_tolerance: position error that counts as one unit [m].
        rotation_tolerance: rotation error that counts as one unit [rad].
        adaptive_beta: improved (adaptive-β) Smooth-L1 on position; False: plain, β = 1 unit.
        sign_invariant: geodesic quaternion loss; False: plain chordal ‖q̂ − q‖.
        entropy_weight: λ of the fusion-entropy term (0: off).
        rotation_weight: weight of the rotation term against the position term.
        beta_kappa: β follows κ × the running median error [units].
        beta_min: smallest β [units].
        beta_max: largest β [units].
        beta_momentum: momentum of the running median.
        hypothesis_mix: ε, weight of the mean loss over all hypotheses added to the winner's (only
            for networks with several hypotheses), in [0, 1].
        limit_pull: weight [tolerance units per rad] of the mean distance by which a ``clamp_in_training``
            network's answers put the first joint outside its range before the clamp (0: off). A clamped
            answer passes no gradient to the first joint, so an answer once pinned at a limit stays there;
            this term pulls it back to the limit, where the pose's own gradient takes over again.
    """

    position_tolerance: float = SUCCESS.position
    rotation_tolerance: float = SUCCESS.rotation
    adaptive_beta: bool = True
    sign_invariant: bool = True
    entropy_weight: float = 0.01
    rotation_weight: float = 1.0
    beta_kappa: float = 1.0
    beta_min: float = 0.05
    beta_max: float = 20.0
    beta_momentum: float = 0.98
    hypothesis_mix: float = 0.05
    limit_pull: float = 0.0

    def __post_init__(self) -> None:
        for name in ("position_tolerance", "rotation_tolerance", "beta_kappa", "beta_min"):
            if not getattr(self, name) > 0:
                raise TrainingError(f"loss {name} must be positive, got {getattr(self, name)}")
        if not self.beta_min < self.beta_max:
            raise TrainingError(f"loss beta_min must be below beta_max, got {self.beta_min}, {self.beta_max}")
        if not 0 <= self.beta_momentum < 1:
            raise TrainingError(f"loss beta_momentum must be in [0, 1), got {self.beta_momentum}")
        if not 0 <= self.hypothesis_mix <= 1:
            raise TrainingError(f"loss hypothesis_mix must be in [0, 1], got {self.hypothesis_mix}")
        if not (self.limit_pull >= 0 and math.isfinite(self.limit_pull)):
            raise TrainingError(f"loss limit_pull must be a finite weight >= 0, got {self.limit_pull}")
        if not self.rotation_weight >= 0 or not math.isfinite(self.entropy_weight):
            raise TrainingError("loss rotation_weight must be >= 0 and entropy_weight finite")


class LossTerms(NamedTuple):
    """The loss and its parts (scalars).

    Attributes:
        total: what is minimised.
        position: position term [tolerance units].
        rotation: rotation term [tolerance units].
        entropy: mean fusion entropy [nats] (0 for networks without fusion).
        beta: the Smooth-L1 β used [tolerance units], a 0-d tensor.
    """

    total: torch.Tensor
    position: torch.Tensor
    rotation: torch.Tensor
    entropy: torch.Tensor
    beta: torch.Tensor


def adaptive_smooth_l1(error: torch.Tensor, beta: float | torch.Tensor) -> torch.Tensor:
    """Smooth-L1 of non-negative errors: ``0.5·e²/β`` below β, ``e − 0.5·β`` above; (B,) → (B,)."""
    return torch.where(error < beta, 0.5 * error * error / beta, error - 0.5 * beta)


def geodesic_angle(quat: torch.Tensor, target_quat: torch.Tensor) -> torch.Tensor:
    """Rotation angle between quaternions, (B, 4) × (B, 4) → (B,) [rad]; same for q and −q.

    Unlike :func:`hik_sim.kinematics.rotations.rotation_error`, a tiny floor under the norm keeps the
    gradient finite at exactly zero error (training targets can be reached exactly).
    """
    conj = quat * quat.new_tensor([1.0, -1.0, -1.0, -1.0])
    rel = quaternion_multiply(conj, target_quat)
    vec_norm = torch.sqrt((rel[..., 1:] ** 2).sum(-1) + 1e-20)
    return 2 * torch.atan2(vec_norm, rel[..., 0].abs())


def fusion_entropy(weights: torch.Tensor) -> torch.Tensor:
    """Mean Shannon entropy [nats] of fusion weights (B, K, 3) → scalar in [0, log 3]."""
    return -(weights * torch.log(weights.clamp_min(1e-12))).sum(-1).mean()


class CompositeLoss(nn.Module):
    """The composite loss; holds the running median error that drives the adaptive β.

    Args:
        config: switches and weights.
    """

    running_error: torch.Tensor  # a registered buffer (0-d float64); < 0 until the first batch

    def __init__(self, config: LossConfig | None = None) -> None:
        super().__init__()
        self.config = config or LossConfig()
        self.register_buffer("running_error", torch.tensor(-1.0, dtype=torch.float64))  # < 0: not yet seen

    def beta_tensor(self) -> torch.Tensor:
        """The current Smooth-L1 β [tolerance units], a 0-d float64 tensor.

        Kept on the device, with no host sync, so that a compiled training step neither breaks its
        graph nor recompiles for every new value of β.
        """
        c = self.config
        if not c.adaptive_beta:
            return torch.ones((), dtype=torch.float64, device=self.running_error.device)
        return torch.where(self.running_error < 0, c.beta_max,
                           (c.beta_kappa * self.running_error).clamp(c.beta_min, c.beta_max))

    def prepare_for_compile(self) -> None:
        """Keep :meth:`_observe` out of ``torch.compile`` (call before compiling a step that runs this loss).

        In a compiled training step (torch 2.13) its in-place update of the buffer was silently dropped, so β stayed
        at β_max for the whole run. Done here rather than by a decorator: ``torch.compiler.disable`` imports
        ``torch._dynamo``, several seconds that every process importing this module would pay.
        """
        self._observe = torch.compiler.disable(self._observe)  # type: ignore[method-assign]

    def _observe(self, median: torch.Tensor) -> None:
        """Fold a batch's median error [units] into the running median (see :meth:`prepare_for_compile`)."""
        c = self.config
        running = self.running_error * c.beta_momentum + (1 - c.beta_momentum) * median
        self.running_error.copy_(torch.where(self.running_error < 0, median, running))

    @property
    def beta(self) -> float:
        """The current Smooth-L1 β [tolerance units]."""
        return float(self.beta_tensor())

    def forward(self, pos: torch.Tensor, quat: torch.Tensor, target_pos: torch.Tensor, target_quat: torch.Tensor,
                fusion_weights: torch.Tensor | None = None, outside: torch.Tensor | None = None) -> LossTerms:
        """Loss of reached poses against targets.

        Args:
            pos: (B, 3) reached positions [m] (FK of the prediction), or (B, H, 3) for H hypotheses.
            quat: (B, 4) reached orientations, wxyz, or (B, H, 4).
            target_pos: (B, 3) [m].
            target_quat: (B, 4) wxyz.
            fusion_weights: (B, K, 3) or ``None``.
            outside: (B,) or (B, H) [rad], the network's ``IKOutput.outside``, or ``None``: with
                ``limit_pull``, ``limit_pull × its mean`` joins the total.

        Returns:
            :class:`LossTerms`.
        """
        c = self.config
        several = pos.ndim == 3
        if several:  # compare every hypothesis with its pose's target
            target_pos, target_quat = target_pos[:, None].expand_as(pos), target_quat[:, None].expand_as(quat)
        error = torch.linalg.vector_norm(pos - target_pos, dim=-1) / c.position_tolerance
        if c.sign_invariant:
            rot_error = geodesic_angle(quat, target_quat) / c.rotation_tolerance
        else:  # chordal distance: ≈ θ/2 for small errors, so θ-like units, but not sign-invariant
            rot_error = torch.linalg.vector_norm(quat - target_quat, dim=-1) / (c.rotation_tolerance / 2)
        winner = None
        if several:
            with torch.no_grad():
                winner = (error + rot_error).argmin(dim=1, keepdim=True)  # (B, 1): the answer the network would give
        chosen = error if winner is None else error.gather(1, winner)
        if c.adaptive_beta and self.training:
            self._observe(chosen.detach().median().double())
        beta = self.beta_tensor()
        pos_loss = adaptive_smooth_l1(error, beta)
        rot_loss = c.rotation_weight * rot_error
        if winner is None:
            position, rotation = pos_loss.mean(), rot_error.mean()
            task = position + c.rotation_weight * rotation
        else:
            position, rotation = pos_loss.gather(1, winner).mean(), rot_error.gather(1, winner).mean()
            task = position + c.rotation_weight * rotation + c.hypothesis_mix * (pos_loss + rot_loss).mean()
        entropy = fusion_entropy(fusion_weights) if fusion_weights is not None else pos.new_zeros(())
        total = task + c.entropy_weight * entropy
        if c.limit_pull and outside is not None:
            total = total + c.limit_pull * outside.mean()
        return LossTerms(total, position, rotation, entropy, beta)


def cycleik_position_loss(pos: torch.Tensor, target_pos: torch.Tensor, beta: float = 0.001) -> torch.Tensor:
    """CycleIK's position term: Smooth-L1 with β [m] (1 mm) per coordinate, mean over (B, 3) → scalar.

    ``0.5·d²/β`` for a coordinate difference ``|d| < β``, ``|d| − 0.5·β`` above (``SmoothL1Loss(beta=0.001)``).
    """
    return torch.nn.functional.smooth_l1_loss(pos, target_pos, beta=beta)


def cycleik_orientation_loss(quat: torch.Tensor, target_quat: torch.Tensor, beta: float = 0.01) -> torch.Tensor:
    """CycleIK's orientation term (``orientation_loss_phi_7``): per pose the smaller of the summed
    component-wise Smooth-L1 (β = 0.01) of ``q̂ − q`` and of ``−q̂ − q``, mean over the batch; (B, 4) → scalar.

    Equal for q̂ and −q̂ (the same rotation).
    """
    f = torch.nn.functional.smooth_l1_loss
    positive = f(quat, target_quat, beta=beta, reduction="none").sum(dim=-1)
    negative = f(-quat, target_quat, beta=beta, reduction="none").sum(dim=-1)
    return torch.minimum(positive, negative).mean()


class CycleIKLoss(nn.Module):
    """CycleIK's IK loss on reached poses: ``position_weight·position + orientation_weight·orientation``.

    Args:
        position_weight: weight of :func:`cycleik_position_loss` (Panda config: 16).
        orientation_weight: weight of :func:`cycleik_orientation_loss` (Panda config: 2).
        position_beta: Smooth-L1 β of the position term [m] (0.001).
        orientation_beta: Smooth-L1 β of the quaternion components (0.01).

    Raises:
        HikError: a negative weight or a β that is not positive.
    """

    def __init__(self, position_weight: float = 16.0, orientation_weight: float = 2.0, position_beta: float = 0.001,
                 orientation_beta: float = 0.01) -> None:
        super().__init__()
        if not (position_weight >= 0 and orientation_weight >= 0 and position_beta > 0 and orientation_beta > 0):
            raise TrainingError("CycleIK loss weights must be >= 0 and its betas positive, got "
                           f"{position_weight}, {orientation_weight}, {position_beta}, {orientation_beta}")
        self.position_weight, self.orientation_weight = float(position_weight), float(orientation_weight)
        self.position_beta, self.orientation_beta = float(position_beta), float(orientation_beta)

    def forward(self, pos: torch.Tensor, quat: torch.Tensor, target_pos: torch.Tensor, target_quat: torch.Tensor,
                fusion_weights: torch.Tensor | None = None,  # noqa: ARG002 - same call as CompositeLoss
                outside: torch.Tensor | None = None) -> LossTerms:  # noqa: ARG002
        """Reached poses (B, 3) [m], (B, 4) against targets → :class:`LossTerms` (position and rotation
        are CycleIK's unweighted terms, ``beta`` the position β [m])."""
        position = cycleik_position_loss(pos, target_pos, self.position_beta)
        rotation = cycleik_orientation_loss(quat, target_quat, self.orientation_beta)
        total = self.position_weight * position + self.orientation_weight * rotation
        return LossTerms(total, position, rotation, pos.new_zeros(()), pos.new_tensor(self.position_beta))


class RegressionLoss(nn.Module):
    """Supervised regression: mean squared error between predicted and sampled joints [rad²]; no FK."""

    def forward(self, q: torch.Tensor, target_q: torch.Tensor) -> LossTerms:
        """Predicted (B, m) and sampled (B, m) joints → :class:`LossTerms` (``position`` holds the joint MSE)."""
        mse = ((q - target_q) ** 2).mean()
        zero = q.new_zeros(())
        return LossTerms(mse, mse, zero, zero, zero)
