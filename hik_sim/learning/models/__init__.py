"""IK networks, built by name: HarmoAtt-IK, the parameter-matched MLP baseline, CycleIK's generator
(``cycleik``) and the hybrid paper's regression DNN (``regression``).

HarmoAtt-IK has three trunks (the ``trunk`` option): ``cycleik``, the paper's description (CycleIK's generator with
attention-fusion blocks inserted, :mod:`~hik_sim.learning.models.harmoatt_cycleik`), and the feature-map trunks
``dense`` and ``map`` (:mod:`~hik_sim.learning.models.harmoatt`), which embed the pose into a map and fuse attention
over it; the shipped networks use ``dense`` (or ``map``)."""

from __future__ import annotations

import math
from typing import Any, Literal

import torch
from torch import nn

from hik_sim.errors import ModelError
from hik_sim.learning.models.common import IKOutput, LimitHead
from hik_sim.learning.models.cycleik import CYCLEIK_PROFILES, CycleIKGenerator, cycleik_width_for
from hik_sim.learning.models.harmoatt import HarmoAttIK
from hik_sim.learning.models.harmoatt_cycleik import HarmoAttCycleIK, attention_share, paper_width_for
from hik_sim.learning.models.mlp import MLPIK
from hik_sim.learning.models.regression import RegressionIK

__all__ = ["MODEL_KINDS", "ModelKind", "IKOutput", "LimitHead", "HarmoAttIK", "HarmoAttCycleIK", "attention_share", "MLPIK", "CycleIKGenerator", "RegressionIK",
           "CYCLEIK_PROFILES", "build_model", "parameter_count", "mlp_hidden_for", "matched_mlp_hidden",
           "matched_cycleik_width", "size_options"]

ModelKind = Literal["harmoatt", "mlp", "cycleik", "regression"]
MODEL_KINDS: tuple[str, ...] = ("harmoatt", "mlp", "cycleik", "regression")


def build_model(kind: str, lower: torch.Tensor, upper: torch.Tensor, **options: Any) -> nn.Module:
    """An IK network by name.

    Args:
        kind: ``harmoatt``, ``mlp``, ``cycleik`` or ``regression``.
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        **options: the model's constructor arguments (widths, depths).

    Raises:
        HikError: unknown kind or unknown option.
    """
    classes: dict[str, Any] = {"harmoatt": HarmoAttIK, "mlp": MLPIK, "cycleik": CycleIKGenerator, "regression": RegressionIK}
    if kind not in classes:
        raise ModelError(f"unknown model {kind!r}; models are: {', '.join(MODEL_KINDS)}")
    if kind == "harmoatt" and options.get("trunk") == "cycleik":  # the paper's description: CycleIK's generator + fusion
        options = {k: v for k, v in options.items() if k != "trunk"}
        classes = {"harmoatt": HarmoAttCycleIK}
    try:
        return classes[kind](lower, upper, **options)
    except (TypeError, ValueError, RuntimeError) as exc:  # unknown option; a size torch refuses (hidden=-1)
        raise ModelError(f"bad options for model {kind!r} {options}: {exc}") from None


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


def matched_cycleik_width(outputs: int, profile: str = "panda", **harmoatt_options: Any) -> float:
    """The CycleIK ``width`` (scale of ``profile``'s published widths) whose parameter count matches a
    HarmoAtt-IK network's with ``outputs`` joints (within 1 %)."""
    reference = build_model("harmoatt", -torch.ones(outputs), torch.ones(outputs), **harmoatt_options)
    return cycleik_width_for(parameter_count(reference), outputs * int(harmoatt_options.get("hypotheses", 1)), profile)


def size_options(kind: str, outputs: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``options`` with the size a model kind would choose by default made explicit, for a card.

    ``cycleik`` without ``width`` or ``layers`` gets the matched ``width``; ``regression`` without
    ``hidden`` the matched ``hidden``; other kinds and explicit sizes are returned unchanged. A card
    that records the size loads the same network even if HarmoAtt-IK's defaults change later.
    """
    options = dict(options or {})
    hypotheses = options.get("hypotheses", 1)
    # a bad value (hypotheses=nan) is left to the model's constructor, whose error says what is valid
    answers = {"hypotheses": hypotheses} if isinstance(hypotheses, int) and not isinstance(hypotheses, bool) and hypotheses > 1 else {}
    if kind == "harmoatt" and options.get("trunk") == "cycleik" and "width" not in options:
        options["width"] = paper_width_for(outputs, int(hypotheses) if answers else 1,
                                           5 if options.get("position_inputs") == 5 else 3)
    elif kind == "cycleik" and "width" not in options and "layers" not in options:
        options["width"] = matched_cycleik_width(outputs, str(options.get("profile", "panda")), **answers)
    elif kind == "regression" and "hidden" not in options:
        options["hidden"] = matched_mlp_hidden(outputs, int(options.get("layers", 4)), **answers)
    return options
