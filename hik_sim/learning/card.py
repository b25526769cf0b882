"""A trained IK network's :class:`Card`: what it is and how it was made, the JSON a checkpoint carries beside
its weights (:mod:`hik_sim.learning.checkpoint` writes and reads it). Reading a card imports neither torch nor the models."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

from hik_sim.errors import CheckpointError

if TYPE_CHECKING:
    from hik_sim.robots import RobotSpec

__all__ = ["Card", "LEGACY_HARMOATT_OPTIONS"]

LEGACY_HARMOATT_OPTIONS: dict[str, Any] = {"trunk": "map", "channels": 16, "blocks": 3}
"""What a HarmoAtt-IK card without a ``trunk`` option means: it was trained with hik_sim 0.1, whose
defaults were this ``map`` trunk (the trainer records the trunk of every HarmoAtt-IK run since)."""


@dataclass(frozen=True)
class Card:
    """What a trained IK network is and how it was made.

    Attributes:
        robot: robot name.
        urdf_sha256: hash of the URDF it was trained on.
        base_link: the chain's base link.
        ee_link: the chain's end-effector link.
        joint_names: chain joints, base → tip.
        lower: joint lower limits.
        upper: joint upper limits.
        fixed_joints: joints held fixed and their values.
        model: ``harmoatt``, ``mlp``, ``cycleik`` or ``regression`` (:data:`hik_sim.learning.models.MODEL_KINDS`).
        model_options: the model's constructor arguments.
        parameters: trainable parameters.
        hypotheses: answers per pose (the network chooses among several by FK). A card written
            before this field existed has it in ``model_options`` (absent: 1); left out (None), it
            is taken from there, and where both are given they must agree.
        pos_min: (3,) workspace lower bound used for normalisation [m].
        pos_max: (3,) workspace upper bound [m].
        config: the training configuration.
        steps: optimiser steps taken.
        training_seconds: wall time of training [s].
        device: where it was trained.
        git_commit: the code's commit, or "unknown".
        metrics: validation metrics at the end of training.
        eval_set: definition and SHA-256 of the validation set.
        versions: torch / hik_sim versions.
        init: the checkpoint this run started from (``checkpoint``: its file name, ``steps`` and
            ``training_seconds``: everything it had been trained, over its own lineage,
            ``git_commit``); empty when trained from scratch.
    """

    robot: str
    urdf_sha256: str
    base_link: str
    ee_link: str
    joint_names: tuple[str, ...]
    lower: tuple[float, ...]
    upper: tuple[float, ...]
    fixed_joints: dict[str, float]
    model: str
    model_options: dict[str, Any]
    parameters: int
    pos_min: tuple[float, ...]
    pos_max: tuple[float, ...]
    config: dict[str, Any] = field(default_factory=dict)
    steps: int = 0
    training_seconds: float = 0.0
    device: str = "cpu"
    git_commit: str = "unknown"
    metrics: dict[str, float] = field(default_factory=dict)
    eval_set: dict[str, Any] = field(default_factory=dict)
    versions: dict[str, str] = field(default_factory=dict)
    init: dict[str, Any] = field(default_factory=dict)
    hypotheses: int | None = None

    def __post_init__(self) -> None:
        implied = self.model_options.get("hypotheses", 1) if isinstance(self.model_options, dict) else 1
        hypotheses = implied if self.hypotheses is None else self.hypotheses
        if isinstance(hypotheses, bool) or not isinstance(hypotheses, int) or hypotheses < 1:
            raise CheckpointError(f"not a hik_sim checkpoint card: hypotheses must be a whole number of answers (at least 1), got {hypotheses!r}")
        if hypotheses != implied:
            raise CheckpointError(f"not a hik_sim checkpoint card: hypotheses is {hypotheses}, and the model's options say {implied}")
        object.__setattr__(self, "hypotheses", hypotheses)

    @property
    def total_steps(self) -> int:
        """Optimiser steps over the whole lineage: this run's and those of the checkpoint it started from."""
        return self.steps + int(self.init.get("steps", 0))

    @property
    def total_training_seconds(self) -> float:
        """Training wall time over the whole lineage [s]."""
        return self.training_seconds + float(self.init.get("training_seconds", 0.0))

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict."""
        return json.loads(json.dumps(asdict(self)))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "Card":
        """The card of a dict written by :meth:`to_json`.

        Raises:
            CheckpointError: fields are missing or unknown.
        """
        try:
            card = cls(**data)
        except TypeError as exc:
            raise CheckpointError(f"not a hik_sim checkpoint card: {exc}") from None
        for name in ("joint_names", "lower", "upper", "pos_min", "pos_max"):  # JSON gives lists
            value = getattr(card, name)
            if isinstance(value, (str, bytes)) or not hasattr(value, "__len__"):
                raise CheckpointError(f"not a hik_sim checkpoint card: {name} must be a list, got {value!r}")
            object.__setattr__(card, name, tuple(value))
        for name, size in (("lower", len(card.joint_names)), ("upper", len(card.joint_names)), ("pos_min", 3), ("pos_max", 3)):
            value = getattr(card, name)
            if len(value) != size or not all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value):
                raise CheckpointError(f"not a hik_sim checkpoint card: {name} must be {size} numbers, got {value!r}")
        if card.model == "harmoatt" and "trunk" not in card.model_options:
            object.__setattr__(card, "model_options", {**LEGACY_HARMOATT_OPTIONS, **card.model_options})
        return card

    def check_robot(self, robot: RobotSpec) -> None:
        """Raise :class:`~hik_sim.errors.CheckpointError` unless this checkpoint was trained for ``robot``'s URDF and chain."""
        problems = []
        if tuple(self.joint_names) != robot.joint_names:
            problems.append(f"its chain is {list(self.joint_names)}, the robot's is {list(robot.joint_names)}")
        if self.urdf_sha256 != robot.urdf_sha256():
            problems.append(f"it was trained on a different URDF (sha256 {self.urdf_sha256[:12]}…, the robot's is {robot.urdf_sha256()[:12]}…)")
        if problems:
            raise CheckpointError(f"checkpoint for robot {self.robot!r} does not fit robot {robot.name!r}: " + "; ".join(problems))
