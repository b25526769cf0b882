"""Atomic file writes: a file is either its old self or wholly new, never half-written or clobbered."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable

__all__ = ["write_atomically"]


def write_atomically(target: Path, write: Callable[[Path], object]) -> None:
    """Write ``target`` through ``write(path)`` on a unique temporary file beside it, then rename it into place.

    Concurrent writers of the same target never clash (each has its own temporary name, which keeps
    the target's suffix for writers that choose a format by it) and readers see either the old file
    or a whole new one (``os.replace`` is atomic within a folder). An interrupted write leaves no
    temporary file behind. A target without a suffix gets ``.partial`` on its temporary name: torch's
    writer refuses a file name that starts with a dot and has no suffix (session 23: a run trained with
    ``--out runs/net`` died at its first periodic checkpoint).
    """
    handle, name = tempfile.mkstemp(dir=target.parent, prefix=".partial-", suffix=target.suffix or ".partial")
    os.close(handle)
    try:
        write(Path(name))
        os.replace(name, target)
    except BaseException:
        Path(name).unlink(missing_ok=True)
        raise
