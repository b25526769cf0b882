"""CycleIK's generator, as its repository defines it (``jangerritha/CycleIK``).

Source: ``cycleik_pytorch/models.py`` (``GenericGenerator``), ``train/train_mlp.py`` and
``train/train.py`` (the MLP trainer, its losses and optimiser) and ``config/<robot>.yaml`` (the
per-robot architecture, loss weights, learning rate and batch size) of CycleIK (Habekost et al.).

What is taken as published:

- **Network.** 7 fully connected hidden layers of *unequal* widths (the robot's ``IKNet``
  ``architecture.layers``; the Panda's: 1370, 880, 2980, 1000, 2710, 2290, 880 → 17.77 M
  parameters for a 7-joint arm), GELU after each hidden layer (``activation: "GELU"``), and one output layer
  followed by tanh (``nbr_tanh: 1``: only the last layer is squashed). The tanh output in
  (−1, 1) is mapped affinely onto the joint limits (CycleIK's ``renormalize_joint_state``), so
  every answer is inside the limits by construction (:class:`~hik_sim.learning.models.common.LimitHead`).
- **Init.** ``xavier_normal_`` on the hidden layers' weights; their biases and the whole output
  layer keep PyTorch's default ``nn.Linear`` init (``GenericGenerator`` initialises only the
  layers of its loop).
- **Input.** The pose (position normalised to the workspace, quaternion), 7 values; here
  :class:`~hik_sim.learning.data.PoseNormalizer` (position scaled to the sampled workspace bounds).
- **Loss and optimiser** (``hik_sim.learning.losses.CycleIKLoss``, selected by the trainer for this
  kind): FK of the answer, ``position_weight × SmoothL1(β = 1 mm)`` on the position coordinates
  [m] plus ``orientation_weight × min over ±q`` of the summed per-component ``SmoothL1(β = 0.01)``
  of the quaternion (``orientation_loss_phi_7``), with the robot's weights (Panda: 16 and 2);
  Adam with betas (0.9, 0.999), no weight decay, at the config's learning rate (Panda 2.4e-4).

Where this module deviates, and why:

- **Size.** At its published size the generator is for the GPU path (``width=1``: about 2 s a
  step on these CPUs). The default scales the *same depth and width profile* by one factor
  ``width`` so that the network has as many parameters as the default HarmoAtt-IK for the same
  joints (within 1 %; :func:`cycleik_width_for`), which is what the shipped CPU checkpoints use.
  ``width=1`` (or ``layers=[...]``) gives the published network.
- **Profile for robots CycleIK has no config for.** The repository publishes IKNet configs for
  its own robots (Panda, NICOL, Valkyrie, NICO, Fetch); for others (IRB120, the humanoids here)
  the Panda's profile is used (``profile="panda"``, the default); ``profile`` picks another.
- **Data.** CycleIK trains epochs over a fixed dataset (e.g. 1 M Panda poses) in batches of 100;
  here every step draws a fresh batch of configurations uniform in the limits, computes their
  poses by FK, and uses the trainer's batch size (1024 by default) so that every network here
  trains under the same budget (steps or minutes, batch).
- **Schedule.** CycleIK's ``DecayLR`` keeps the rate then decays it linearly to 0 over epochs;
  the trainer's warm-up and cosine decay over the step/minute budget is used instead, and its
  gradient-norm clip (1.0) stays on (with Adam it rarely matters).
- **Left out.** The newest CycleIK commit adds a k-nearest-neighbour smoothness term and random
  sign flips of the input quaternion to the IK loss; neither is in the config's weights or the
  paper's loss, and the ``zero_joints_goal`` term exists only for robots whose config names
  zero joints (NICOL), so none of them is used here.
"""

from __future__ import annotations

from typing import Sequence, TypedDict

import torch
from torch import nn

from hik_sim.errors import ModelError
from hik_sim.learning.models.common import IKOutput, LimitHead

__all__ = ["CycleIKGenerator", "CycleIKProfile", "CYCLEIK_PROFILES", "cycleik_layers", "cycleik_parameters", "cycleik_width_for"]


class CycleIKProfile(TypedDict):
    """One robot's IKNet config: hidden widths, loss weights, learning rate and batch size."""

    layers: tuple[int, ...]
    position_weight: float
    orientation_weight: float
    lr: float
    batch_size: int


CYCLEIK_PROFILES: dict[str, CycleIKProfile] = {
    # config/<robot>.yaml, IKNet: architecture.layers, position_weight, orientation_weight, training.lr, training.batch_size
    "panda": {"layers": (1370, 880, 2980, 1000, 2710, 2290, 880), "position_weight": 16.0, "orientation_weight": 2.0,
              "lr": 0.00024, "batch_size": 100},
    "nicol": {"layers": (2780, 3480, 1710, 2880, 1750, 1090, 1470), "position_weight": 9.0, "orientation_weight": 2.0,
              "lr": 0.00018, "batch_size": 100},
    "valkyrie": {"layers": (2930, 1130, 1520, 570, 670, 770, 2250), "position_weight": 9.0, "orientation_weight": 1.0,
                 "lr": 0.00044, "batch_size": 100},
}
"""CycleIK's published IKNet configs by robot: the hidden widths, loss weights, learning rate, batch."""


def _profile(profile: str) -> CycleIKProfile:
    if profile not in CYCLEIK_PROFILES:
        raise ModelError(f"unknown CycleIK profile {profile!r}; profiles are: {', '.join(CYCLEIK_PROFILES)}")
    return CYCLEIK_PROFILES[profile]


def cycleik_layers(width: float, profile: str = "panda") -> tuple[int, ...]:
    """The hidden widths of ``profile`` scaled by ``width`` (1 = published), each rounded, at least 1."""
    if not (isinstance(width, (int, float)) and not isinstance(width, bool) and 0 < width <= 64):
        raise ModelError(f"CycleIK width must be a scale factor in (0, 64], got {width!r}")
    return tuple(max(1, round(width * h)) for h in _profile(profile)["layers"])


def cycleik_parameters(layers: Sequence[int], outputs: int, in_features: int = 7) -> int:
    """Parameters of a generator with these hidden widths and ``outputs`` joints."""
    count, width = 0, in_features
    for h in layers:
        count += width * h + h
        width = h
    return count + width * outputs + outputs


def cycleik_width_for(parameters: int, outputs: int, profile: str = "panda") -> float:
    """The scale ``width`` (4 decimals) whose generator has the nearest count to ``parameters``."""
    lo, hi = 1e-3, 64.0
    for _ in range(60):  # the count grows with the width: bisect
        mid = (lo + hi) / 2
        if cycleik_parameters(cycleik_layers(mid, profile), outputs) < parameters:
            lo = mid
        else:
            hi = mid
    candidates = {round(w, 4) for w in (lo, hi, lo - 1e-4, hi + 1e-4)}
    return min(candidates, key=lambda w: abs(cycleik_parameters(cycleik_layers(w, profile), outputs) - parameters))


class CycleIKGenerator(nn.Module):
    """Pose (B, 7) → joint values (B, m): CycleIK's ``GenericGenerator`` with ``nbr_tanh=1``.

    Laid out as :class:`~hik_sim.learning.models.mlp.MLPIK` is (``trunk`` of Linear–GELU pairs, ``head`` a
    :class:`~hik_sim.learning.models.common.LimitHead`), so the fast inference path serves both.

    Args:
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        width: scale of the profile's hidden widths (1 = published); default: the scale that matches
            the parameter count of :data:`~hik_sim.learning.models.MATCHED_REFERENCE` (HarmoAtt-IK's dense trunk)
            for m joints.
        layers: explicit hidden widths (instead of ``profile`` × ``width``).
        profile: whose published widths: ``panda`` (default), ``nicol``, ``valkyrie``.
        in_features: input width (7).
        hypotheses: answers per pose (beyond CycleIK, for the composite objective only; see
            :class:`~hik_sim.learning.models.common.LimitHead`); the default width then matches a HarmoAtt-IK
            with as many answers.

    Raises:
        HikError: both ``width`` and ``layers``, an unknown profile, or widths below 1.
    """

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, width: float | None = None,
                 layers: Sequence[int] | None = None, profile: str = "panda", in_features: int = 7,
                 hypotheses: int = 1) -> None:
        super().__init__()
        _profile(profile)
        if layers is not None and width is not None:
            raise ModelError("give CycleIK either width (a scale of the profile) or layers (explicit widths), not both")
        if layers is None:
            if width is None:
                from hik_sim.learning.models import MATCHED_REFERENCE, matched_cycleik_width

                width = matched_cycleik_width(lower.numel(), profile, **MATCHED_REFERENCE,
                                              **({"hypotheses": hypotheses} if hypotheses != 1 else {}))
            layers = cycleik_layers(width, profile)
        layers = tuple(layers)
        if not layers or not all(isinstance(h, int) and not isinstance(h, bool) and h >= 1 for h in layers):
            raise ModelError(f"CycleIK layers must be whole widths >= 1, got {list(layers)}")
        self.width, self.layers, self.profile = width, layers, profile
        blocks: list[nn.Module] = []
        current = in_features
        for h in layers:
            linear = nn.Linear(current, h)
            nn.init.xavier_normal_(linear.weight)  # GenericGenerator: xavier_normal_ on the loop's layers only
            blocks += [linear, nn.GELU()]
            current = h
        self.trunk = nn.Sequential(*blocks)
        self.head = LimitHead(current, lower, upper, hypotheses)  # default nn.Linear init, tanh, affine onto the limits

    def forward(self, x: torch.Tensor) -> IKOutput:
        """(B, 7) normalised pose → :class:`IKOutput` with ``q`` (B, m) (and ``candidates`` (B, H, m) when H > 1)."""
        return self.head.output(self.trunk(x))
