"""What a training run is asked to do: :class:`TrainConfig`, its objectives, schedules and the bounds of its sizes.

The module imports neither torch nor the models, so the command line (:mod:`hik_sim.learning.train_cli`) can read
its defaults and answer ``--help`` at once; :class:`TrainConfig` checks the model kind, sampling and CycleIK profile
against the modules that define them when a config is made.

Sizes are bounded (:data:`SIZE_LIMITS`, :data:`MODEL_OPTION_LIMITS`, :data:`LR_RANGE`,
:data:`ENTROPY_WEIGHT_LIMIT`) so that a mistyped value (``--batch 1e9``, ``--model-option blocks=1000000000``,
``--lr 1e30``) is refused with the range at once, not after minutes of allocation or a run of NaN.
"""

from __future__ import annotations

import json
import math
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hik_sim.errors import TrainingError

if TYPE_CHECKING:
    from hik_sim.learning.losses import LossConfig
    from hik_sim.learning.models.cycleik import CycleIKProfile

__all__ = ["TrainConfig", "cycleik_settings", "OBJECTIVES", "DEFAULT_OBJECTIVES", "COMPOSITE_LR", "SCHEDULES", "SIZE_LIMITS",
           "MODEL_OPTION_LIMITS", "LR_RANGE", "ENTROPY_WEIGHT_LIMIT", "validation_score", "best_path"]

OBJECTIVES: tuple[str, ...] = ("composite", "cycleik", "regression")
"""What a run minimises: our composite loss, CycleIK's loss, or supervised joint regression."""

DEFAULT_OBJECTIVES: dict[str, str] = {"cycleik": "cycleik", "regression": "regression"}
"""A model kind's objective when none is given; any other kind: ``composite``."""

COMPOSITE_LR = 1e-3
"""The default peak learning rate of the composite and regression objectives."""

SCHEDULES: tuple[str, ...] = ("cosine", "constant")
"""The learning rate after the warm-up (:attr:`TrainConfig.schedule`)."""

SIZE_LIMITS: dict[str, tuple[int, int]] = {"steps": (1, 1_000_000_000), "batch": (1, 1_048_576), "eval_size": (1, 1_000_000),
                                           "eval_every": (1, 1_000_000_000), "normalizer_samples": (100, 10_000_000)}
"""The least and greatest value of each count of :class:`TrainConfig` (both included). A batch of 2**20
configurations or a million validation targets is well beyond any recipe here; more is a typo."""

MODEL_OPTION_LIMITS: dict[str, int] = {"channels": 1024, "positions": 1024, "blocks": 64, "embed_hidden": 16_384,
                                       "feed_forward": 16_384, "head_hidden": 16_384, "hidden": 16_384, "layers": 64,
                                       "hypotheses": 64}
"""The greatest value of each whole-number size option of the models (``--model-option``); a list of layer widths
(``cycleik``'s ``layers``) may hold at most ``layers`` widths of at most ``hidden`` each. The models check the
lower bounds and everything else."""

LR_RANGE: tuple[float, float] = (0.0, 1.0)
"""The peak learning rate must lie in (low, high]: above 1 every optimiser here diverges at once."""

ENTROPY_WEIGHT_LIMIT = 10.0
"""The greatest magnitude of the fusion-entropy weight λ. Negative values are accepted: they reward a spread
(high-entropy) fusion instead of a sharp one, an arm of the attention study (``benchmarks/attention_ablation.py``)."""


@dataclass(frozen=True)
class TrainConfig:
    """How a network is trained.

    Attributes:
        model: ``harmoatt``, ``mlp``, ``cycleik`` or ``regression``.
        steps: optimiser steps (the budget when ``minutes`` is not set).
        minutes: wall-clock budget [min]; when set, training stops at whichever of steps and
            minutes comes first, and the learning rate follows the time.
        batch: configurations per step.
        lr: peak learning rate; default (``None``): CycleIK's config's rate for the ``cycleik``
            objective (the profile's, Panda 2.4e-4), else 1e-3.
        weight_decay: AdamW weight decay.
        warmup_steps: linear warm-up steps.
        final_lr_fraction: the cosine decay ends at this fraction of ``lr``.
        schedule: the learning rate after the warm-up: ``cosine`` (default; decays to
            ``final_lr_fraction`` over the budget, steps or minutes, whichever runs out first) or
            ``constant`` (``lr`` throughout; the recipe study's alternative).
        sampling: where the training configurations fall, one of :data:`hik_sim.learning.data.SAMPLINGS`
            (``uniform``, default; ``limits``; ``hard``: hard-example replay).
        tail_fraction: the share of each batch that ``limits`` or ``hard`` places in the tails.
        grad_clip: gradient-norm clip.
        seed: seed of the weights' initialisation and of the training batches.
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda`` or ``cuda:N``.
        fixed_joints: joints held at fixed values; the network outputs the others.
        model_options: the model's constructor arguments; a ``harmoatt`` config without ``trunk`` gets the
            default trunk, ``cycleik`` (:func:`~hik_sim.learning.models.harmoatt_trunk`: refused with the feature-map
            trunks' size options, which need ``trunk=dense`` or ``trunk=map``), so that its card says which it holds.
        loss: the composite loss's switches.
        eval_size: validation targets.
        eval_seed: seed of the validation set.
        eval_every: steps between validations (also at the end).
        eval_seconds: seconds of training between validations [s], as well as every ``eval_every``
            steps; ``None`` (default): with a ``minutes`` budget, a tenth of it, but at least three
            times the last validation's own time (validation is at most about a quarter of the run);
            with a step budget alone, none (validation by steps only).
        normalizer_samples: FK samples that measure the workspace bounds.
        init_from: a checkpoint whose weights start this run (not its optimiser: a fresh warm-up and
            schedule; unlike resuming, the budget and options may differ). It must be for the same
            robot, model, fixed joints and options, except ``hypotheses``, which may grow: the new
            answers start as copies of its answers with a little noise. The card records it
            (:attr:`~hik_sim.learning.checkpoint.Card.init`).
        objective: ``composite``, ``cycleik`` or ``regression`` (see the module docstring);
            ``auto`` (default): ``cycleik`` for the cycleik model, ``regression`` for the regression
            model, ``composite`` otherwise. The ``cycleik`` objective trains with Adam (betas
            0.9, 0.999, no weight decay), the others with AdamW.
        compile: compile the step's forward pass (network, FK, loss) with ``torch.compile``. On a
            2-core CPU, after ~30 s of compiling, a HarmoAtt-IK network starts at 19–20 steps/s
            against 14 eager, and slows as the run goes on (a 22,000-step run averaged 16.7 and
            ended near 14; the cause is not yet known). The shipped IRB120 pair was trained
            compiled before denormals were flushed (``_denormals_flushed``) and before β stopped
            causing recompiles, and slowed from 18 to 10 steps/s over its run.
        checkpoint_minutes: when writing a checkpoint, also save one (resumable) every this many
            minutes [min] of training, so that a killed run loses at most that much.
        keep_best: when writing a checkpoint, also keep the weights of the best validation so far
            (lowest :func:`validation_score`) as ``<stem>.best.pt`` with its card: early stopping on
            the validation set, for runs whose curve swings (a continuation at a high rate).
    """

    model: str = "harmoatt"
    steps: int = 2000
    minutes: float | None = None
    batch: int = 1024
    lr: float | None = None
    weight_decay: float = 1e-5
    warmup_steps: int = 100
    final_lr_fraction: float = 0.02
    schedule: str = "cosine"
    sampling: str = "uniform"
    tail_fraction: float = 0.25
    grad_clip: float = 1.0
    seed: int = 0
    device: str = "auto"
    fixed_joints: tuple[tuple[str, float], ...] = ()
    model_options: tuple[tuple[str, Any], ...] = ()
    loss: LossConfig = field(default_factory=lambda: _loss_config())
    eval_size: int = 2000
    eval_seed: int = 12345
    eval_every: int = 100
    normalizer_samples: int = 100_000
    compile: bool = False
    init_from: str | None = None
    checkpoint_minutes: float = 5.0
    objective: str = "auto"
    keep_best: bool = False
    eval_seconds: float | None = None

    def __post_init__(self) -> None:
        from hik_sim.learning.data import SAMPLINGS
        from hik_sim.learning.models import MODEL_KINDS, harmoatt_trunk

        if self.model not in MODEL_KINDS:
            raise TrainingError(f"unknown model {self.model!r}; models are: {', '.join(MODEL_KINDS)}")
        if self.objective == "auto":
            object.__setattr__(self, "objective", DEFAULT_OBJECTIVES.get(self.model, "composite"))
        if self.objective not in OBJECTIVES:
            raise TrainingError(f"unknown objective {self.objective!r}; objectives are: auto, {', '.join(OBJECTIVES)}")
        hypotheses = dict(self.model_options).get("hypotheses", 1)
        if self.objective != "composite" and isinstance(hypotheses, (int, float)) and hypotheses > 1:
            raise TrainingError(f"the {self.objective} objective trains one answer per pose; several hypotheses need "
                           "the composite objective")
        lr = self.lr
        if lr is None:
            lr = float(cycleik_settings(self)["lr"] if self.objective == "cycleik" else COMPOSITE_LR)
            object.__setattr__(self, "lr", lr)
        if self.loss.limit_pull and not _clamps_in_training(dict(self.model_options), self.model):
            raise TrainingError(f"loss limit_pull ({self.loss.limit_pull:g}) pulls a clamp_in_training network's pinned answers "
                                "back to the limit; add --model-option clamp_in_training=true (with canonical_turn=true) or "
                                "leave it at 0")
        if self.steps < 1:
            raise TrainingError(f"steps must be at least 1, got {self.steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise TrainingError(f"minutes must be positive, got {self.minutes}")
        if self.batch < 1 or self.eval_size < 1 or self.eval_every < 1 or self.normalizer_samples < 100:
            raise TrainingError("batch, eval_size and eval_every must be at least 1 and normalizer_samples at least 100")
        for name, (low, high) in SIZE_LIMITS.items():
            if not low <= getattr(self, name) <= high:
                flag = f" (--{name.replace('_', '-')})" if name != "normalizer_samples" else ""
                raise TrainingError(f"{name}{flag} must be in [{low:,}, {high:,}], got {getattr(self, name):,}")
        if not (0 < lr < math.inf and 0 < self.final_lr_fraction <= 1 and self.warmup_steps >= 0
                and 0 < self.grad_clip < math.inf):
            raise TrainingError(f"lr and grad_clip must be positive and finite, final_lr_fraction in (0, 1], warmup_steps >= 0; "
                           f"got lr={self.lr}, grad_clip={self.grad_clip}, final_lr_fraction={self.final_lr_fraction}, "
                           f"warmup_steps={self.warmup_steps}")
        if not LR_RANGE[0] < lr <= LR_RANGE[1]:
            raise TrainingError(f"lr (--lr) must be in ({LR_RANGE[0]:g}, {LR_RANGE[1]:g}], got {lr:g}: a peak rate above "
                                f"{LR_RANGE[1]:g} diverges at once (the default is {COMPOSITE_LR:g})")
        if not abs(self.loss.entropy_weight) <= ENTROPY_WEIGHT_LIMIT:
            raise TrainingError(f"loss entropy_weight (--entropy-weight) must be in [-{ENTROPY_WEIGHT_LIMIT:g}, "
                                f"{ENTROPY_WEIGHT_LIMIT:g}], got {self.loss.entropy_weight:g} (negative: rewards a spread fusion)")
        if self.eval_seconds is not None and not 0 < self.eval_seconds < math.inf:
            raise TrainingError(f"eval_seconds must be positive and finite, got {self.eval_seconds}")
        _check_model_option_sizes(dict(self.model_options))
        if self.device != "auto" and not (self.device == "cpu" or self.device.startswith("cuda")):
            raise TrainingError(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if self.model == "harmoatt":  # refuses an unknown trunk, and a feature-map trunk's options without a trunk
            trunk = harmoatt_trunk(dict(self.model_options))
            if "trunk" not in dict(self.model_options):  # a card must say which trunk it holds
                object.__setattr__(self, "model_options", (("trunk", trunk), *self.model_options))
        if self.schedule not in SCHEDULES:
            raise TrainingError(f"unknown schedule {self.schedule!r}; schedules are: {', '.join(SCHEDULES)}")
        if self.sampling not in SAMPLINGS:
            raise TrainingError(f"unknown sampling {self.sampling!r}; samplings are: {', '.join(SAMPLINGS)}")
        if not 0 <= self.tail_fraction < 1:
            raise TrainingError(f"tail_fraction must be in [0, 1), got {self.tail_fraction}")
        if not self.checkpoint_minutes > 0:
            raise TrainingError(f"checkpoint_minutes must be positive, got {self.checkpoint_minutes}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (recorded in the checkpoint's card)."""
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TrainConfig":
        """The config of a dict written by :meth:`to_json`; a ``harmoatt`` config without ``trunk`` was written by
        hik_sim 0.1 and holds the ``map`` trunk (:data:`~hik_sim.learning.card.LEGACY_HARMOATT_OPTIONS`, as its card)."""
        data = dict(data)
        from hik_sim.learning.card import LEGACY_HARMOATT_OPTIONS
        from hik_sim.learning.losses import LossConfig

        data["loss"] = LossConfig(**data.get("loss", {}))
        data["fixed_joints"] = tuple((str(k), float(v)) for k, v in data.get("fixed_joints", ()))
        options = {str(k): v for k, v in data.get("model_options", ())}
        if data.get("model", "harmoatt") == "harmoatt" and "trunk" not in options:
            options = {**LEGACY_HARMOATT_OPTIONS, **options}
        data["model_options"] = tuple(options.items())
        return cls(**data)


def cycleik_settings(config: TrainConfig) -> CycleIKProfile:
    """CycleIK's published config (loss weights, learning rate) for a run: its model's ``profile`` (default Panda)."""
    from hik_sim.learning.models import CYCLEIK_PROFILES

    profile = str(dict(config.model_options).get("profile", "panda")) if config.model == "cycleik" else "panda"
    if profile not in CYCLEIK_PROFILES:
        raise TrainingError(f"unknown CycleIK profile {profile!r}; profiles are: {', '.join(CYCLEIK_PROFILES)}")
    return CYCLEIK_PROFILES[profile]



def _loss_config() -> LossConfig:
    from hik_sim.learning.losses import LossConfig

    return LossConfig()


def _check_model_option_sizes(options: dict[str, Any]) -> None:
    """Raise :class:`~hik_sim.errors.TrainingError` for a size option above :data:`MODEL_OPTION_LIMITS`."""
    for name, high in MODEL_OPTION_LIMITS.items():
        value = options.get(name)
        if isinstance(value, list) and name == "layers":  # explicit layer widths
            widths = [v for v in value if isinstance(v, (int, float)) and not isinstance(v, bool)]
            if len(value) > high or any(not v <= MODEL_OPTION_LIMITS["hidden"] for v in widths):
                raise TrainingError(f"model option layers (--model-option layers=[...]) may hold at most {high} widths of at "
                                    f"most {MODEL_OPTION_LIMITS['hidden']:,} each, got {len(value)} widths up to "
                                    f"{max(widths, default=0):,}")
        elif isinstance(value, (int, float)) and not isinstance(value, bool) and value > high:
            raise TrainingError(f"model option {name} (--model-option {name}=N) must be at most {high:,}, got {value:,}; "
                                "the network would take minutes to build and more memory than a device holds")


def validation_score(metrics: dict[str, float]) -> float:
    """One number for a validation (lower is better): mean position error / 5 mm + mean rotation
    error / 2°, the weighting a multi-answer network ranks its answers by."""
    return metrics["pos_mean_mm"] / 5.0 + metrics["rot_mean_deg"] / 2.0


def best_path(out: str | os.PathLike[str]) -> Path:
    """Where :attr:`TrainConfig.keep_best` keeps the best validation's weights: ``<stem>.best.safetensors`` beside a
    ``.safetensors`` checkpoint, else ``<stem>.best.pt`` (a safetensors file too: the format is read from the file)."""
    out = Path(out)
    return out.with_name(out.stem + ".best" + (".safetensors" if out.suffix == ".safetensors" else ".pt"))


def _clamps_in_training(model_options: dict[str, Any], kind: str) -> bool:
    """Whether the options (the ``turn`` recipe included) make a ``clamp_in_training`` network."""
    from hik_sim.learning.network_options import NetworkOptions

    return NetworkOptions.parse(model_options, kind)[0].clamp_in_training
