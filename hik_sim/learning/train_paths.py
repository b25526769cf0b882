"""The trainer's files, checked before any work: names the file system can hold, nothing overwritten by mistake.

:func:`check_run_paths` looks at every path a run reads or writes and raises a :class:`~hik_sim.errors.HikError`
naming the argument (``--out``, ``--resume``, ``--init-from``, ``--tensorboard``, or the Python argument) when

- a name is longer than the file system allows (each name at most ``NAME_MAX``, 255 on common file systems;
  the checkpoint's own name leaves room for the files written beside it, :data:`DERIVED_HEADROOM`);
- the checkpoint would overwrite a file that is not a hik_sim checkpoint (a text file turned into a zip), or a
  card or curve that is not one, or would land in the package's shipped networks
  (:data:`hik_sim.learning.pretrained.PRETRAINED_DIR`), unless ``force``;
- the TensorBoard folder is a file, lies under one, or cannot be made.

:func:`non_finite_weights` names the tensors of a state dict that hold NaN or inf.
"""

from __future__ import annotations

import errno
import json
import os
import warnings
from pathlib import Path
from typing import Any, Callable, Mapping

from hik_sim.errors import CheckpointError, HikError, OutputError

__all__ = ["check_run_paths", "check_output_path", "check_input_path", "check_tensorboard_dir", "non_finite_weights",
           "DERIVED_HEADROOM", "kept_checkpoint", "written_or_explained"]

DERIVED_HEADROOM = 32
"""Characters a checkpoint's name must leave free below ``NAME_MAX``: the longest name written beside
``<stem>.pt`` is the temporary file of its best weights, ``.<stem>.best.pt.XXXXXXXX.check`` (stem + 24),
and the card, curve and best weights (``<stem>.curve.csv``, ``<stem>.best.json``: stem + 10) are shorter."""

_PATH_MAX_DEFAULT, _NAME_MAX_DEFAULT = 4096, 255


def _limits(path: Path) -> tuple[int, int]:
    """``(NAME_MAX, PATH_MAX)`` of the file system of ``path``'s nearest existing folder."""
    folder = path.absolute()
    while True:
        try:
            if folder.is_dir():
                break
        except OSError:
            pass
        if folder.parent == folder:
            break
        folder = folder.parent
    try:
        return os.pathconf(folder, "PC_NAME_MAX"), os.pathconf(folder, "PC_PATH_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows) or no answer: the common limits
        return _NAME_MAX_DEFAULT, _PATH_MAX_DEFAULT


def _short(name: str) -> str:
    return name if len(name) <= 40 else f"{name[:16]}…{name[-16:]}"


def _check_lengths(path: Path, what: str, error: type[HikError], headroom: int = 0) -> None:
    name_max, path_max = _limits(path)
    for i, part in enumerate(path.parts):
        room = name_max - (headroom if i == len(path.parts) - 1 else 0)
        if len(part.encode()) > room:
            beside = (f", less {headroom} for the files written beside it (card, curve, best weights, temporary files)"
                      if headroom and i == len(path.parts) - 1 else "")
            raise error(f"{what}: the name {_short(part)!r} is {len(part.encode())} bytes long; this file system allows "
                        f"{name_max} per name{beside}: give a name of at most {room} bytes")
    if len(str(path.absolute()).encode()) >= path_max:
        raise error(f"{what}: the path is {len(str(path.absolute()).encode())} bytes long; this file system allows "
                    f"{path_max - 1}: give a shorter path")


def check_input_path(path: str | os.PathLike[str], what: str) -> Path:
    """Check that a checkpoint to read (``--resume``, ``--init-from``) is a path the file system can hold.

    Raises:
        CheckpointError: a name or the whole path is too long (naming ``what``).
    """
    path = Path(path)
    _check_lengths(path, what, CheckpointError)
    return path


def _is_checkpoint(path: Path) -> bool:
    from hik_sim.learning.checkpoint import read_checkpoint

    try:
        with warnings.catch_warnings():  # a probe: the format's deprecation notes are for files that are used
            warnings.simplefilter("ignore")
            read_checkpoint(path)
    except HikError:
        return False
    return True


def _is_card(path: Path) -> bool:
    from hik_sim.learning.checkpoint import Card

    try:
        data = json.loads(path.read_text())
        Card.from_json(data)
    except (OSError, ValueError, TypeError, HikError):
        return False
    return True


def _is_curve(path: Path) -> bool:
    from hik_sim.learning.training_log import CURVE_COLUMNS

    try:
        with path.open() as handle:
            first = handle.readline().strip()
    except (OSError, UnicodeDecodeError):
        return False
    return first == ",".join(CURVE_COLUMNS)


def _foreign_files(out: Path, keep_best: bool) -> list[Path]:
    """The existing files a run writing ``out`` would replace that a run did not write."""
    from hik_sim.learning.training_log import curve_paths

    csv, png = curve_paths(out)
    foreign = []
    if out.is_file() and not _is_checkpoint(out):
        foreign.append(out)
    if out.with_suffix(".json").is_file() and not _is_card(out.with_suffix(".json")):
        foreign.append(out.with_suffix(".json"))
    if csv.is_file() and not _is_curve(csv):
        foreign.append(csv)
    if png.exists() and not (csv.is_file() and _is_curve(csv)):  # a curve's plot goes with its CSV
        foreign.append(png)
    best = out.with_name(out.stem + ".best" + (".safetensors" if out.suffix == ".safetensors" else ".pt"))  # train_options.best_path
    if keep_best and best.is_file() and not _is_checkpoint(best):
        foreign.append(best)
    return foreign


def check_output_path(out: str | os.PathLike[str], what: str = "out", force: bool = False, keep_best: bool = False) -> Path:
    """Check, before any work, where a run writes its checkpoint (see the module docstring); create its folder.

    Args:
        out: the checkpoint path.
        what: the argument's name in messages (``--out`` on the command line).
        force: allow overwriting files that are not checkpoints, and the shipped networks' folder.
        keep_best: the run also writes ``<stem>.best.pt``.

    Returns:
        ``out`` as a :class:`~pathlib.Path`.

    Raises:
        CheckpointError: the path is too long, inside the shipped networks, would overwrite a foreign file, or
            cannot be written (:func:`hik_sim.learning.checkpoint.check_checkpoint_path`).
    """
    from hik_sim.learning.checkpoint import check_checkpoint_path
    from hik_sim.learning.pretrained import PRETRAINED_DIR

    path = Path(out)
    _check_lengths(path, f"{what} {_short(str(path))}", CheckpointError, headroom=DERIVED_HEADROOM)
    try:
        inside_shipped = path.resolve().is_relative_to(PRETRAINED_DIR.resolve())
        foreign = [] if force else _foreign_files(path, keep_best)
    except OSError as exc:
        raise CheckpointError(f"{what} {path}: cannot be used ({exc.strerror or exc})") from None
    if inside_shipped and not force:
        raise CheckpointError(f"{what} {path} is inside the package's shipped networks ({PRETRAINED_DIR}): a run would "
                              "overwrite a shipped network; write elsewhere (scripts/train_pretrained.py --ship installs a "
                              "network there), or add --force")
    if foreign:
        raise CheckpointError(f"{what} {path}: the run would overwrite {', '.join(str(f) for f in foreign)}, which "
                              f"{'is' if len(foreign) == 1 else 'are'} not written by a hik_sim run; give another path, or "
                              "add --force to overwrite")
    return check_checkpoint_path(path)


def check_tensorboard_dir(folder: str | os.PathLike[str], what: str = "tensorboard") -> Path:
    """Check a TensorBoard log folder and create it.

    Raises:
        OutputError: a name is too long, the path is a file or lies under one, or the folder cannot be made.
    """
    path = Path(folder)
    _check_lengths(path, f"{what} {_short(str(path))}", OutputError)
    ancestor = path
    while not ancestor.exists() and ancestor.parent != ancestor:
        ancestor = ancestor.parent
    if ancestor.exists() and not ancestor.is_dir():
        where = "is a file" if ancestor == path else f"lies under {ancestor}, which is a file"
        raise OutputError(f"cannot write {what} {path}: it {where}, not a folder; give a folder path")
    try:
        path.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise OutputError(f"cannot write {what} {path}: the folder cannot be made ({exc.strerror or exc})") from None
    return path


def check_run_paths(out: str | os.PathLike[str] | None, resume: str | os.PathLike[str] | None = None,
                    init_from: str | os.PathLike[str] | None = None, tensorboard: str | os.PathLike[str] | None = None,
                    force: bool = False, keep_best: bool = False, names: Mapping[str, str] | None = None) -> Path | None:
    """Check every path of a run (see the module docstring); ``names`` maps ``out``, ``resume``, ``init_from`` and
    ``tensorboard`` to the names messages use (the command line's flags). Returns the checked ``out``.

    Raises:
        HikError: a :class:`~hik_sim.errors.CheckpointError` or :class:`~hik_sim.errors.OutputError` naming the argument.
    """
    name = {"out": "out", "resume": "resume", "init_from": "init_from", "tensorboard": "tensorboard", **(names or {})}
    if resume is not None:
        check_input_path(resume, f"{name['resume']} {_short(str(resume))}")
    if init_from is not None:
        check_input_path(init_from, f"{name['init_from']} {_short(str(init_from))}")
    if tensorboard is not None:
        check_tensorboard_dir(tensorboard, name["tensorboard"])
    return None if out is None else check_output_path(out, name["out"], force=force, keep_best=keep_best)


def non_finite_weights(state: Mapping[str, Any]) -> list[str]:
    """The names of the floating-point tensors in ``state`` that hold NaN or inf."""
    import torch

    return [key for key, value in state.items()
            if isinstance(value, torch.Tensor) and value.is_floating_point() and not bool(value.isfinite().all())]


def kept_checkpoint(out: Path | None) -> str:
    """What the run's checkpoint file holds now (after a failure), for an error message."""
    if out is None or not out.is_file():
        return "no checkpoint of this run was written"
    from hik_sim.learning.checkpoint import read_checkpoint

    try:
        steps = read_checkpoint(out)["card"].get("steps", "?")
    except HikError:
        return f"{out} is not a readable checkpoint"
    return f"the last checkpoint written, of step {steps}, is kept at {out} (continue with --resume {out})"


def written_or_explained(path: Path, write: Callable[[], Path], step: int, kept: Path) -> Path:
    """``write()`` (a checkpoint to ``path``), an OSError (a full disk) turned into a CheckpointError saying what
    the run's checkpoint ``kept`` holds."""
    try:
        return write()
    except OSError as exc:
        reason = os.strerror(exc.errno) if exc.errno else str(exc)
        note = " (the disk is full)" if exc.errno == errno.ENOSPC else ""
        raise CheckpointError(f"cannot write checkpoint {path} at step {step}: {reason}{note}; {kept_checkpoint(kept)}") from None
