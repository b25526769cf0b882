"""IK networks: the CycleIK-style MLP baseline and HarmoAtt-IK, built by name."""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import nn

from hik_sim.errors import HikError
from hik_sim.models.common import IKOutput, LimitHead
from hik_sim.models.harmoatt import HarmoAttIK
from hik_sim.models.mlp import MLPIK

__all__ = ["MODEL_KINDS", "ModelKind", "IKOutput", "LimitHead", "HarmoAttIK", "MLPIK", "build_model", "parameter_count",
           "mlp_hidden_for", "matched_mlp_hidden"]

ModelKind = Literal["harmoatt", "mlp"]
MODEL_KINDS: tuple[str, ...] = ("harmoatt", "mlp")


def build_model(kind: str, lower: torch.Tensor, upper: torch.Tensor, **options: Any) -> nn.Module:
    """An IK network by name.

    Args:
        kind: ``harmoatt`` or ``mlp``.
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        **options: the model's constructor arguments (widths, depths).

    Raises:
        HikError: unknown kind or unknown option.
    """
    classes = {"harmoatt": HarmoAttIK, "mlp": MLPIK}
    if kind not in classes:
        raise HikError(f"unknown model {kind!r}; models are: {', '.join(MODEL_KINDS)}")
    try:
        return classes[kind](lower, upper, **options)
    except (TypeError, ValueError, RuntimeError) as exc:  # unknown option; a size torch refuses (hidden=-1)
        raise HikError(f"bad options for model {kind!r} {options}: {exc}") from None


def parameter_count(model: nn.Module) -> int:
    """Number of trainable parameters."""
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


def mlp_hidden_for(parameters: int, outputs: int, layers: int = 4, in_features: int = 7) -> int:
    """The hidden width that gives an :class:`MLPIK` about ``parameters`` parameters.

    Solves ``(layers − 1)·h² + (in + layers + outputs)·h + outputs = parameters`` for h.
    """
    a = layers - 1
    b = in_features + layers + outputs
    c = outputs - parameters
    if a == 0:
        return max(1, round(-c / b))
    return max(1, round((-b + math.sqrt(b * b - 4 * a * c)) / (2 * a)))


def matched_mlp_hidden(outputs: int, layers: int = 4, **harmoatt_options: Any) -> int:
    """The MLP width whose parameter count matches a HarmoAtt-IK network's with ``outputs`` joints.

    A ``hypotheses`` option counts for both: the MLP is meant to get the same number of answers.
    """
    reference = build_model("harmoatt", -torch.ones(outputs), torch.ones(outputs), **harmoatt_options)
    return mlp_hidden_for(parameter_count(reference), outputs * int(harmoatt_options.get("hypotheses", 1)), layers)
