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
from pathlib import Path
from typing import Any

import torch

from hik_sim.atomic import write_atomically
from hik_sim.learning import _safetensors_file
from hik_sim.learning.card import LEGACY_HARMOATT_OPTIONS, Card  # noqa: F401 - LEGACY_HARMOATT_OPTIONS: read from here too
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
