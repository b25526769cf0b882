"""A run folder belongs to one run: claimed and locked before any work, cleaned when the run fails or is interrupted.

- :func:`claim_run_folder`: the folder must be new or empty (the default one, ``runs/eval/<robot>-<date>``,
  takes a ``-2``, ``-3``, … suffix where another run took that name); the run then holds the lock file
  :data:`LOCK_NAME` in it, created with ``O_EXCL``, so two runs given one ``--out`` at once never both
  write there: the second is refused with an :class:`~hik_sim.errors.OutputError` naming the folder.
- :class:`RunFolder`: the claimed folder; :meth:`RunFolder.release` drops the lock at the end of a run,
  :meth:`RunFolder.discard` removes what a failed run wrote (the folder too where the run made it),
  :meth:`RunFolder.mark_incomplete` removes partial videos and writes :data:`INCOMPLETE_NAME` with the
  reason where an interrupted run keeps its finished tables.
- :func:`terminate_as_interrupt`: SIGTERM raises :class:`Interrupted` (Ctrl-C raises ``KeyboardInterrupt``),
  so the clean-up above runs for both.
- :func:`output_error`: an ``OSError`` while writing (disk full, a name too long) as an ``OutputError`` naming the path.

A lock left by a run killed outright (SIGKILL, power loss) names that run's process; a later claim of the
folder says whether it is still running and, if not, to remove the folder or give another ``--out``.
"""

from __future__ import annotations

import errno
import os
import shutil
import signal
import socket
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, Iterator
from contextlib import contextmanager

from hik_sim.errors import OutputError

__all__ = ["INCOMPLETE_NAME", "LOCK_NAME", "Interrupted", "RunFolder", "claim_run_folder", "output_error", "terminate_as_interrupt"]

LOCK_NAME = ".evaluation.lock"
"""The lock file a run holds in its folder (its process id and host), removed when the run ends."""
INCOMPLETE_NAME = "INCOMPLETE"
"""Written into the folder of a run interrupted after its tables were written: the reason, and what is missing."""
PARTIAL_SUFFIXES: tuple[str, ...] = (".mp4", ".gif", ".partial")
"""Files an interrupted run removes: videos, which are half-written until the run ends."""


class Interrupted(BaseException):
    """The run was stopped by a signal (SIGTERM): a ``BaseException`` as ``KeyboardInterrupt`` is, so clean-up runs."""

    def __init__(self, signal_name: str) -> None:
        super().__init__(f"interrupted by {signal_name}")
        self.signal_name = signal_name


@contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """While inside, SIGTERM raises :class:`Interrupted` in the main thread (elsewhere: does nothing)."""
    def handler(signum: int, _frame: FrameType | None) -> None:
        raise Interrupted(signal.Signals(signum).name)

    try:
        previous: Any = signal.signal(signal.SIGTERM, handler)
    except ValueError:  # not the main thread: signals cannot be caught here
        yield
        return
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


def output_error(exc: OSError, path: Path | str, what: str = "write") -> OutputError:
    """An ``OSError`` met while writing ``path`` as an ``OutputError`` that names the path and the cause."""
    cause = exc.strerror or str(exc)
    hint = {errno.ENOSPC: "free some space or give --out a folder on another disk",
            errno.ENAMETOOLONG: "give a shorter path",
            errno.EACCES: "give --out a folder that can be written",
            errno.EROFS: "give --out a folder on a writable disk"}.get(exc.errno or 0, "give --out a folder that can be written")
    return OutputError(f"cannot {what} {path} ({cause}); {hint}")


@dataclass
class RunFolder:
    """A claimed run folder.

    Attributes:
        path: the folder.
        created: this run made it (else it was an empty folder).
        new_parents: the parents this run made, deepest first.
    """

    path: Path
    created: bool
    new_parents: list[Path] = field(default_factory=list)

    @property
    def lock(self) -> Path:
        """The lock file."""
        return self.path / LOCK_NAME

    def release(self) -> None:
        """Drop the lock: the run is over and its folder complete."""
        self.lock.unlink(missing_ok=True)

    def discard(self) -> None:
        """Remove what a failed run wrote: the folder if it made it (and the parents it made, where
        still empty), else the folder's contents (it was empty when claimed)."""
        if self.created:
            shutil.rmtree(self.path, ignore_errors=True)
            for parent in self.new_parents:  # deepest first; one another run has written into since stays
                try:
                    parent.rmdir()
                except OSError:
                    break
            return
        for entry in self.path.iterdir():
            if entry.is_dir():
                shutil.rmtree(entry, ignore_errors=True)
            else:
                entry.unlink(missing_ok=True)

    def mark_incomplete(self, reason: str, missing: str) -> list[str]:
        """Remove partial files (videos, temporaries), write :data:`INCOMPLETE_NAME` and release the lock.

        Args:
            reason: why the run stopped (e.g. ``interrupted by SIGTERM during videos``).
            missing: what the folder lacks.

        Returns:
            The names of the files removed.
        """
        removed = []
        for entry in self.path.iterdir():
            if entry.is_file() and (entry.suffix in PARTIAL_SUFFIXES or entry.name.startswith(".partial")):
                entry.unlink(missing_ok=True)
                removed.append(entry.name)
        try:
            (self.path / INCOMPLETE_NAME).write_text(f"{reason}\n{missing}\nRemove this folder to reuse it as --out.\n")
        finally:
            self.release()
        return sorted(removed)


def _lock_holder(lock: Path) -> str:
    """Who holds a lock, and whether that process still runs (on this host)."""
    try:
        fields = dict(line.split("=", 1) for line in lock.read_text().splitlines() if "=" in line)
    except OSError:
        fields = {}
    pid, host = fields.get("pid", "?"), fields.get("host", "?")
    alive = None
    if host == socket.gethostname() and pid.isdigit():
        try:
            os.kill(int(pid), 0)
            alive = True
        except ProcessLookupError:
            alive = False
        except PermissionError:
            alive = True
    if alive is False:
        return (f"the run that locked it (process {pid}) is no longer running: it was killed before it could clean up; "
                f"remove the folder (rm -r {lock.parent}) or give another --out")
    return f"another evaluation (process {pid} on {host}) is writing into it; wait for it to finish or give another --out"


def _take_lock(folder: Path) -> None:
    """Create the lock file with ``O_EXCL``: exactly one run gets it."""
    lock = folder / LOCK_NAME
    try:
        handle = os.open(lock, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
    except FileExistsError:
        raise OutputError(f"run folder {folder} is locked ({LOCK_NAME}): {_lock_holder(lock)}") from None
    except OSError as exc:
        raise output_error(exc, folder, "lock run folder") from None
    with os.fdopen(handle, "w") as f:
        f.write(f"pid={os.getpid()}\nhost={socket.gethostname()}\n")


def claim_run_folder(out: Path, unique: bool = False) -> tuple[Path, bool]:
    """Make ``out`` this run's folder, before any work, and lock it (:data:`LOCK_NAME`).

    Args:
        out: the folder.
        unique: where ``out`` exists, take ``out-2``, ``out-3``, … instead (for default folders named
            by the second a run starts: two runs started in one second get a folder each). Each
            is created with ``mkdir(exist_ok=False)``, so two runs never both take one.

    Returns:
        The folder, and whether this call created it (``False``: it was an empty folder).

    Raises:
        OutputError: ``out`` is a file, a folder another run holds (locked) or that already holds
            files (a report beside another run's files would not list them), an interrupted run's
            folder (:data:`INCOMPLETE_NAME`), or a folder that cannot be created or written.
    """
    names = [out] + ([out.with_name(f"{out.name}-{i}") for i in range(2, 1000)] if unique else [])
    for folder in names:
        try:
            folder.mkdir(parents=True, exist_ok=False)
            _take_lock(folder)
            return folder, True
        except FileExistsError:
            if unique:
                continue
        except OSError as exc:
            raise OutputError(f"cannot create run folder {folder} ({exc.strerror}); give --out a folder that can be written") from None
        if not folder.is_dir():
            raise OutputError(f"run folder {folder} is an existing file; give --out a new or empty folder")
        try:
            held = sorted(p.name for p in folder.iterdir())
        except OSError as exc:
            raise OutputError(f"cannot read run folder {folder} ({exc.strerror}); give --out a folder that can be written") from None
        if LOCK_NAME in held:
            raise OutputError(f"run folder {folder} is locked ({LOCK_NAME}): {_lock_holder(folder / LOCK_NAME)}")
        if INCOMPLETE_NAME in held:
            reason = (folder / INCOMPLETE_NAME).read_text(errors="replace").splitlines()[:1]
            raise OutputError(f"run folder {folder} holds an interrupted run ({INCOMPLETE_NAME}: {reason[0] if reason else '?'}); "
                              f"remove the folder (rm -r {folder}) to reuse it, or give another --out")
        if held:
            raise OutputError(f"run folder {folder} already holds files ({', '.join(held[:5])}{', …' if len(held) > 5 else ''}); "
                              "a new report beside them would mix this run with another's: give --out a new or empty folder")
        try:
            handle, probe = tempfile.mkstemp(dir=folder)
            os.close(handle)
            os.unlink(probe)
        except OSError as exc:
            raise OutputError(f"cannot write in run folder {folder} ({exc.strerror}); give --out a folder that can be written") from None
        _take_lock(folder)
        return folder, False
    raise OutputError(f"run folders {names[0]} to {names[-1]} are all taken; give --out a new folder")


def claim(out: Path, unique: bool = False) -> RunFolder:
    """:func:`claim_run_folder` as a :class:`RunFolder` (with the parents it made, for :meth:`RunFolder.discard`)."""
    new_parents = [parent for parent in Path(out).parents if not parent.exists()]
    path, created = claim_run_folder(Path(out), unique)
    return RunFolder(path, created, new_parents)
