"""Atomic file writes: a file is either its old self or wholly new, never half-written or clobbered."""

from __future__ import annotations

import os
import stat
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["write_atomically", "new_file_mode"]


def new_file_mode() -> int:
    """The permission bits a new file gets from ``open``: ``0o666`` less the process's umask.

    Read from ``/proc/self/status`` where Linux gives it; elsewhere the umask is set and put back at once.
    """
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return 0o666 & ~int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return 0o666 & ~mask


def write_atomically(target: Path, write: Callable[[Path], object]) -> None:
    """Write ``target`` through ``write(path)`` on a unique temporary file beside it, then rename it into place.

    Concurrent writers of the same target never clash (each has its own temporary name, which keeps
    the target's suffix for writers that choose a format by it) and readers see either the old file
    or a whole new one (``os.replace`` is atomic within a folder). An interrupted write leaves no
    temporary file behind. A target without a suffix gets ``.partial`` on its temporary name: torch's
    writer refuses a file name that starts with a dot and has no suffix.

    The file gets the permissions a plain ``open`` would give it: an existing target's mode is kept,
    a new one gets ``0o666`` less the umask (:func:`new_file_mode`), so files in a shared folder (a
    shared ``HIK_SIM_CACHE``) are as readable as the user's umask allows, not private to their writer.
    """
    target = Path(target)
    try:
        mode = stat.S_IMODE(target.stat().st_mode)
    except OSError:
        mode = new_file_mode()
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=".partial-", suffix=target.suffix or ".partial")
    os.close(handle)
    try:
        write(Path(name))
        os.chmod(name, mode)
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
