"""Checkpoints: an IK network's weights plus a card that says exactly what it is.

A checkpoint is a safetensors file (``<name>.safetensors``): the network's weights as named tensors,
and in its string metadata the format, the network's :class:`Card` (JSON) and, for resuming, the
optimiser, loss and generator state (JSON, whose tensors are stored beside the weights under
``resume/<n>``). Reading one runs no code: safetensors holds tensors and strings, nothing is
unpickled. The card is also written beside it as ``<name>.json``, for people and for registries.
Loading checks the file and, when a robot is given, that the checkpoint was trained for that
robot's URDF and chain.

Pickled checkpoints (``torch.save``, the ``.pt`` files of hik_sim 0.1) still load, only through
``torch.load(weights_only=True)`` and with a :class:`DeprecationWarning`; :func:`convert_checkpoint`
rewrites one as safetensors. The format is told by the file's first bytes, not by its name.
"""

from __future__ import annotations

import inspect
import json
import os
import tempfile
import warnings
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import torch

from hik_sim.atomic import write_atomically
from hik_sim.learning import _safetensors_file
from hik_sim.learning.data import JointSelection, PoseNormalizer
from hik_sim.errors import CheckpointError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.network import IKNetwork
from hik_sim.learning.network_options import NetworkOptions
from hik_sim.robots import RobotSpec

__all__ = ["Card", "save_checkpoint", "load_checkpoint", "read_checkpoint", "check_checkpoint_path", "convert_checkpoint",
           "is_pickled_checkpoint", "FORMAT", "SUFFIX", "CHECKPOINT_SUFFIXES"]

FORMAT = "hik_sim.ik_network/1"
"""What a checkpoint's payload is (its ``format`` entry), in either file format."""

SUFFIX = ".safetensors"
"""The suffix of a checkpoint file (any name but ``*.json`` is accepted; the format is read from the file)."""

CHECKPOINT_SUFFIXES: tuple[str, ...] = (SUFFIX, ".pt")
"""Suffixes that mark a path as a checkpoint where a name could also be a solver's: safetensors and the pickled ``.pt``."""

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


def check_checkpoint_path(path: str | os.PathLike[str]) -> Path:
    """Check, before any work, that a checkpoint can be written at ``path``; create its folder.

    A checkpoint is a file (any name but ``*.json``: its card is written beside it with that
    suffix, so ``model.json`` would be overwritten by its own card) in a folder that can be written.

    Returns:
        ``path`` as a :class:`~pathlib.Path`.

    Raises:
        CheckpointError: ``path`` ends in ``.json``, is a folder, or its folder cannot be made or written.
    """
    path = Path(path)
    if path.suffix == ".json":
        raise CheckpointError(f"checkpoint path {path} ends in .json, the name of its card: the card would overwrite the "
                              f"weights; give a {SUFFIX} path such as {path.with_suffix(SUFFIX)}")
    if path.is_dir():
        raise CheckpointError(f"checkpoint path {path} is a folder; give a file path such as {path / ('model' + SUFFIX)}")
    if path.with_suffix(".json").is_dir():
        raise CheckpointError(f"the card of checkpoint {path} would be written to {path.with_suffix('.json')}, which is a folder")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, probe = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".check")
        os.close(handle)
        os.unlink(probe)
    except OSError as exc:
        raise CheckpointError(f"cannot write checkpoint {path}: its folder {path.parent} cannot be made or written "
                              f"({exc.strerror or exc})") from None
    return path


def save_checkpoint(path: str | os.PathLike[str], network: IKNetwork, card: Card, resume_state: dict[str, Any] | None = None) -> Path:
    """Write ``path`` (a safetensors file: weights, card, optional resume state) and ``path`` with suffix ``.json`` (the card).

    Each file is written under a unique temporary name and renamed into place, so an interrupted
    or concurrent save never leaves a half-written checkpoint; the card inside the weights' file is
    the authoritative one. The file is safetensors whatever ``path``'s suffix (``.safetensors`` is
    the convention; a ``.pt`` name, as older scripts give, holds safetensors too).

    Args:
        path: the checkpoint file.
        network: whose weights (``state_dict``) are written.
        card: what the network is.
        resume_state: what resuming the training needs (optimiser, loss and generator state, counters):
            nested dicts, lists and tuples of tensors, numbers, strings and None.

    Returns:
        The checkpoint path.

    Raises:
        CheckpointError: see :func:`check_checkpoint_path`; or the resume state holds something that is neither
            a tensor nor JSON data.
    """
    path = check_checkpoint_path(path)
    _safetensors_file.write(path, FORMAT, network.state_dict(), card.to_json(), resume_state)
    text = json.dumps(card.to_json(), indent=2) + "\n"
    write_atomically(path.with_suffix(".json"), lambda tmp: tmp.write_text(text))
    return path


def is_pickled_checkpoint(path: str | os.PathLike[str]) -> bool:
    """Whether the file at ``path`` is not safetensors (a ``torch.save`` pickle, or anything else), by its first bytes."""
    return _safetensors_file.is_pickled(path)


def _outside_hik_sim() -> int:
    """The ``stacklevel`` that points a warning raised by our caller at the first frame outside hik_sim (the user's
    line, where Python's default filters show a DeprecationWarning of ``__main__``)."""
    package = str(Path(__file__).resolve().parents[1])
    frame, level = inspect.currentframe(), 0
    frame = frame.f_back if frame is not None else None  # the function that warns: stacklevel 1
    while frame is not None:
        level += 1
        if not frame.f_code.co_filename.startswith(package):
            break
        frame = frame.f_back
    return max(level, 1)


def read_checkpoint(path: str | os.PathLike[str], map_location: str | torch.device = "cpu") -> dict[str, Any]:
    """The raw payload of a checkpoint file, checked to be one.

    A safetensors file is read without unpickling anything. A pickled one (``torch.save``) is read
    through ``torch.load(weights_only=True)`` only, with a :class:`DeprecationWarning`.

    Args:
        path: the checkpoint file.
        map_location: where the tensors go.

    Returns:
        ``{"format": FORMAT, "card": dict, "state_dict": {name: tensor}}`` and, where saved, ``"resume"``.

    Raises:
        CheckpointError: the file is missing, unreadable, corrupt, or not a hik_sim checkpoint.
    """
    if not isinstance(path, (str, os.PathLike)):
        raise CheckpointError(f"a checkpoint path must be a str or os.PathLike, got {path!r}")
    path = Path(path)
    if not path.is_file():
        raise CheckpointError(f"checkpoint not found: {path}")
    try:
        pickled = _safetensors_file.is_pickled(path)
    except OSError as exc:
        raise CheckpointError(f"{path} is not a readable hik_sim checkpoint ({exc.strerror or exc})") from None
    if pickled:
        warnings.warn(f"{path} is a pickled (torch.save) checkpoint, read with torch.load(weights_only=True); pickled checkpoints "
                      "are deprecated: rewrite it as safetensors with hik_sim.learning.checkpoint.convert_checkpoint(path)",
                      DeprecationWarning, stacklevel=_outside_hik_sim())
    try:
        if pickled:
            payload = torch.load(path, map_location=map_location, weights_only=True)
        else:
            payload = _safetensors_file.to_device(_safetensors_file.read(path), map_location)
    except Exception as exc:  # torch and safetensors raise many kinds for a corrupt file; all mean "not readable"
        raise CheckpointError(f"{path} is not a readable hik_sim checkpoint ({type(exc).__name__}: {str(exc)[:200]})") from None
    if not isinstance(payload, dict) or payload.get("format") != FORMAT or "card" not in payload or "state_dict" not in payload:
        raise CheckpointError(f"{path} is not a hik_sim checkpoint (expected format {FORMAT!r})")
    return payload


def convert_checkpoint(source: str | os.PathLike[str], target: str | os.PathLike[str] | None = None) -> Path:
    """Rewrite a pickled (``.pt``) checkpoint as safetensors, its resume state included; its card beside it where none is.

    Args:
        source: the pickled checkpoint (read with ``torch.load(weights_only=True)``).
        target: the safetensors file to write (default: ``source`` with suffix ``.safetensors``).

    Returns:
        The written path. The source is left in place.

    Raises:
        CheckpointError: ``source`` is not a readable checkpoint, or ``target`` cannot be written.
    """
    source = Path(source)
    target = source.with_suffix(SUFFIX) if target is None else check_checkpoint_path(target)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)  # converting is what the warning asks for
        payload = read_checkpoint(source)
    card = Card.from_json(payload["card"])
    state = payload["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{source}: the weights must be a mapping of names to tensors, got {type(state).__name__}")
    _safetensors_file.write(check_checkpoint_path(target), FORMAT, state, payload["card"], payload.get("resume"))  # the card as stored: a faithful copy
    if not target.with_suffix(".json").is_file():  # a card already beside it is kept as written
        text = json.dumps(card.to_json(), indent=2) + "\n"
        write_atomically(target.with_suffix(".json"), lambda tmp: tmp.write_text(text))
    return target


def _registered_robot(card: Card, path: str | os.PathLike[str]) -> RobotSpec:
    from hik_sim.robots import get_robot, robot_names

    if card.robot not in robot_names():
        raise CheckpointError(f"{path} holds a network with several hypotheses for robot {card.robot!r}, which is not registered; "
                       "pass its RobotSpec (robot=...) so that its answers can be chosen by forward kinematics")
    robot = get_robot(card.robot)
    card.check_robot(robot)
    return robot


def load_checkpoint(path: str | os.PathLike[str], robot: RobotSpec | None = None,
                    map_location: str | torch.device = "cpu") -> tuple[IKNetwork, Card]:
    """Rebuild a trained network from a checkpoint.

    Args:
        path: the checkpoint file (safetensors, or a pickled ``.pt`` with a :class:`DeprecationWarning`).
        robot: when given, the checkpoint must have been trained for this robot.
        map_location: where the weights go.

    Returns:
        The network (in eval mode) and its card.

    Raises:
        CheckpointError: the file is not a valid checkpoint, holds NaN weights, or was trained for another robot.
    """
    payload = read_checkpoint(path, map_location)
    card = Card.from_json(payload["card"])
    if robot is not None:
        card.check_robot(robot)
    normalizer = PoseNormalizer(torch.tensor(card.pos_min), torch.tensor(card.pos_max))
    chain = None
    assert card.hypotheses is not None  # Card.__post_init__ fills it in
    options, _ = NetworkOptions.parse(card.model_options, card.model)  # checked here and again by IKNetwork: the same message
    if card.hypotheses > 1 or options.canonical_turn:  # it chooses among answers by FK; turns poses
        chain = Chain(robot if robot is not None else _registered_robot(card, path))
    network = IKNetwork(card.model, torch.tensor(card.lower), torch.tensor(card.upper), normalizer,
                        JointSelection(tuple(card.joint_names), card.fixed_joints), card.model_options, chain)
    state = payload["state_dict"]
    if not isinstance(state, dict) or not all(isinstance(v, torch.Tensor) for v in state.values()):
        raise CheckpointError(f"{path}: the weights must be a mapping of names to tensors, got {type(state).__name__}")
    try:
        network.load_state_dict(state)
    except RuntimeError as exc:
        raise CheckpointError(f"{path}: the weights do not fit the network its card describes ({str(exc)[:300]})") from None
    broken = [name for name, value in payload["state_dict"].items() if value.is_floating_point() and not bool(value.isfinite().all())]
    if broken:
        raise CheckpointError(f"{path}: weights hold NaN or inf ({', '.join(broken[:3])}{', …' if len(broken) > 3 else ''}); "
                              "the network would answer NaN: retrain it or resume from an earlier checkpoint")
    return network.to(map_location).eval(), card
