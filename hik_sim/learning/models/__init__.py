"""IK networks, built by name: HarmoAtt-IK, the parameter-matched MLP baseline, CycleIK's generator
(``cycleik``) and the hybrid paper's regression DNN (``regression``).

HarmoAtt-IK has three trunks (the ``trunk`` option): ``cycleik``, the default, the paper's description (CycleIK's
generator with attention-fusion blocks inserted, :mod:`~hik_sim.learning.models.harmoatt_cycleik`), and the
feature-map trunks ``dense`` and ``map`` (:mod:`~hik_sim.learning.models.harmoatt`), which embed the pose into a map
and fuse attention over it; the shipped networks use ``dense`` (or ``map``). The equal-time attention study
(benchmarks/results/attention_ablation) ranks ``cycleik`` ahead of ``dense``.

A feature-map trunk's size options (:data:`FEATURE_MAP_OPTIONS`) without a ``trunk`` are refused
(:func:`harmoatt_trunk`): they would otherwise build the paper trunk and fail on an option it does not take."""

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

__all__ = ["MODEL_KINDS", "ModelKind", "HARMOATT_TRUNKS", "DEFAULT_TRUNK", "FEATURE_MAP_OPTIONS", "MATCHED_REFERENCE",
           "harmoatt_trunk", "IKOutput", "LimitHead", "HarmoAttIK", "HarmoAttCycleIK", "attention_share", "MLPIK",
           "CycleIKGenerator", "RegressionIK", "CYCLEIK_PROFILES", "build_model", "parameter_count", "mlp_hidden_for",
           "matched_mlp_hidden", "matched_cycleik_width", "size_options"]

ModelKind = Literal["harmoatt", "mlp", "cycleik", "regression"]
MODEL_KINDS: tuple[str, ...] = ("harmoatt", "mlp", "cycleik", "regression")
HARMOATT_TRUNKS: tuple[str, ...] = ("cycleik", "dense", "map")
"""HarmoAtt-IK's trunks (the ``trunk`` option of ``harmoatt``)."""
DEFAULT_TRUNK = "cycleik"
"""The trunk of a ``harmoatt`` model whose options name none: the paper's."""
FEATURE_MAP_OPTIONS: tuple[str, ...] = ("channels", "blocks", "embed_hidden", "feed_forward", "head_hidden")
"""Options only the feature-map trunks (``dense``, ``map``) take; with them a ``harmoatt`` model must name its trunk."""
MATCHED_REFERENCE: dict[str, Any] = {"trunk": "dense"}
"""The HarmoAtt-IK network the baselines' default sizes match (CycleIK's ``width``, the regression DNN's ``hidden``):
the ``dense`` trunk at its default size, the one-answer ``harmoatt`` of the equal-time comparison (about 653 k
parameters for 7 joints)."""


def harmoatt_trunk(options: dict[str, Any]) -> str:
    """The trunk a ``harmoatt`` model with ``options`` has: its ``trunk`` option, else :data:`DEFAULT_TRUNK`.

    Raises:
        HikError: an unknown trunk, or :data:`FEATURE_MAP_OPTIONS` without a ``trunk`` (the paper trunk takes none
            of them; the message names them and says to add ``trunk=dense`` or ``trunk=map``).
    """
    trunk = options.get("trunk")
    if trunk is None:
        given = [name for name in FEATURE_MAP_OPTIONS if name in options]
        if given:
            raise ModelError(f"the HarmoAtt-IK options {', '.join(given)} are the feature-map trunks' (dense, map) and no "
                             f"trunk is given: the default trunk, {DEFAULT_TRUNK} (the paper's), takes none of them; add "
                             "trunk=dense or trunk=map (--model-option trunk=dense)")
        return DEFAULT_TRUNK
    if trunk not in HARMOATT_TRUNKS:
        raise ModelError(f"unknown HarmoAtt-IK trunk {trunk!r}; trunks are: {', '.join(HARMOATT_TRUNKS)}")
    return str(trunk)


def build_model(kind: str, lower: torch.Tensor, upper: torch.Tensor, **options: Any) -> nn.Module:
    """An IK network by name.

    Args:
        kind: ``harmoatt``, ``mlp``, ``cycleik`` or ``regression``.
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        **options: the model's constructor arguments (widths, depths); for ``harmoatt`` also ``trunk``
            (:data:`HARMOATT_TRUNKS`, default :data:`DEFAULT_TRUNK`: :class:`HarmoAttCycleIK`; ``dense`` and ``map``:
            :class:`HarmoAttIK`).

    Raises:
        HikError: unknown kind or unknown option; a feature-map trunk's options without a trunk (:func:`harmoatt_trunk`).
    """
    classes: dict[str, Any] = {"harmoatt": HarmoAttIK, "mlp": MLPIK, "cycleik": CycleIKGenerator, "regression": RegressionIK}
    if kind not in classes:
        raise ModelError(f"unknown model {kind!r}; models are: {', '.join(MODEL_KINDS)}")
    if kind == "harmoatt" and harmoatt_trunk(options) == "cycleik":  # the paper's description: CycleIK's generator + fusion
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
    """The MLP width whose parameter count matches a HarmoAtt-IK network's with ``outputs`` joints, built from
    ``harmoatt_options`` (:func:`build_model`'s default trunk where they name none; :data:`MATCHED_REFERENCE` is the
    network the baselines' default sizes match).

    A ``hypotheses`` option counts for both: the MLP is meant to get the same number of answers.
    """
    reference = build_model("harmoatt", -torch.ones(outputs), torch.ones(outputs), **harmoatt_options)
    return mlp_hidden_for(parameter_count(reference), outputs * int(harmoatt_options.get("hypotheses", 1)), layers)


def matched_cycleik_width(outputs: int, profile: str = "panda", **harmoatt_options: Any) -> float:
    """The CycleIK ``width`` (scale of ``profile``'s published widths) whose parameter count matches a
    HarmoAtt-IK network's with ``outputs`` joints (within 1 %), built from ``harmoatt_options`` as in
    :func:`matched_mlp_hidden`."""
    reference = build_model("harmoatt", -torch.ones(outputs), torch.ones(outputs), **harmoatt_options)
    return cycleik_width_for(parameter_count(reference), outputs * int(harmoatt_options.get("hypotheses", 1)), profile)


def size_options(kind: str, outputs: int, options: dict[str, Any] | None = None) -> dict[str, Any]:
    """``options`` with the size a model kind would choose by default made explicit, for a card.

    ``harmoatt`` with the paper trunk and no ``width`` gets :func:`paper_width_for`'s; ``cycleik`` without
    ``width`` or ``layers`` gets the ``width`` matched to :data:`MATCHED_REFERENCE`; ``regression`` without
    ``hidden`` the matched ``hidden``; other kinds and explicit sizes are returned unchanged. A card
    that records the size loads the same network even if the defaults change later.
    """
    options = dict(options or {})
    hypotheses = options.get("hypotheses", 1)
    # a bad value (hypotheses=nan) is left to the model's constructor, whose error says what is valid
    answers = {"hypotheses": hypotheses} if isinstance(hypotheses, int) and not isinstance(hypotheses, bool) and hypotheses > 1 else {}
    if kind == "harmoatt" and harmoatt_trunk(options) == "cycleik" and "width" not in options:
        options["width"] = paper_width_for(outputs, int(hypotheses) if answers else 1,
                                           5 if options.get("position_inputs") == 5 else 3)
    elif kind == "cycleik" and "width" not in options and "layers" not in options:
        options["width"] = matched_cycleik_width(outputs, str(options.get("profile", "panda")), **MATCHED_REFERENCE, **answers)
    elif kind == "regression" and "hidden" not in options:
        options["hidden"] = matched_mlp_hidden(outputs, int(options.get("layers", 4)), **MATCHED_REFERENCE, **answers)
    return options
