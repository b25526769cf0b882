"""What every benchmark script shares, so that a script holds only what it measures.

- the common command-line options: :func:`make_parser` (the record folder ``--out``), :func:`add_robot`,
  :func:`add_robots`, :func:`add_quick`, :func:`add_progress`, and :func:`at_least` for counts;
- one provenance block for every record: :func:`provenance` (the command line, the date in UTC, the machine, the
  versions of Python, torch, MuJoCo and NumPy, torch's thread count) and its one-line form for a Markdown record,
  :func:`provenance_line`;
- one Markdown table writer, :func:`markdown_table`;
- one record writer, :func:`write_record` (``<out>/<stem>.json`` with the provenance block first, ``<out>/<stem>.md``
  under the provenance line), and :func:`write_json` and :func:`write_markdown` for one of the two alone;
- one :class:`Timing`, the summary of timed calls, :func:`time_side_by_side` to time callables in turns, and
  :func:`torch_threads` to time on a given number of threads.

A script imports it as a sibling module (``import harness``): ``python benchmarks/x.py`` puts ``benchmarks/`` on
``sys.path``, and a script loaded by its path (the smoke tests) puts it there itself before the import.
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import importlib.metadata
import json
import os
import platform
import shlex
import sys
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable, Iterable, Iterator, Mapping, Sequence

import numpy as np

try:  # a script run from a checkout without installing the package
    import hik_sim  # noqa: F401
except ModuleNotFoundError:  # pragma: no cover - depends on how the script is started
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from hik_sim.errors import HikError

__all__ = ["RESULTS", "make_parser", "add_robot", "add_robots", "add_quick", "add_progress", "at_least", "command_line",
           "utc_now", "provenance", "provenance_line", "version", "markdown_table", "write_json", "write_markdown", "write_record", "Timing",
           "time_side_by_side", "torch_threads"]

RESULTS = "benchmarks/results"
"""The records' folder, relative to the repository's root (where the scripts are run from)."""

ALIGN = {"l": "---", "r": "---:"}
"""Markdown's separator cell for a left-aligned (``l``) and a right-aligned (``r``) column."""


# --- command line ---------------------------------------------------------------------------------


def make_parser(script: str, description: str, *, out: str = RESULTS) -> argparse.ArgumentParser:
    """A script's parser with the record folder ``--out`` (a path, default ``out``).

    Args:
        script: the script's ``__file__``; its stem is the program's name.
        description: what the script measures (its docstring's first line).
        out: the default record folder, relative to the repository's root.
    """
    parser = argparse.ArgumentParser(prog=Path(script).stem, description=description)
    parser.add_argument("--out", type=Path, default=Path(out), help=f"record folder (default {out})")
    return parser


def add_robot(parser: argparse.ArgumentParser, default: str = "irb120") -> None:
    """``--robot NAME``: one registered robot."""
    from hik_sim.robots import robot_names

    parser.add_argument("--robot", default=default, choices=list(robot_names()), metavar="NAME",
                        help=f"registered robot: {', '.join(robot_names())} (default {default})")


def add_robots(parser: argparse.ArgumentParser, default: Sequence[str] | None, *, nargs: str = "+", text: str | None = None) -> None:
    """``--robots NAME ...``: registered robots (``default`` ``None``: every registered robot; ``text``: the help)."""
    from hik_sim.robots import robot_names

    names = list(robot_names())
    told = "every registered robot" if default is None else " ".join(default)
    parser.add_argument("--robots", nargs=nargs, default=names if default is None else list(default), choices=names, metavar="NAME",
                        help=text or f"registered robots: {', '.join(names)} (default {told})")


def add_quick(parser: argparse.ArgumentParser, text: str = "tiny networks and budgets: a smoke test") -> None:
    """``--quick``: the script's smoke-test configuration (``text``: the help)."""
    parser.add_argument("--quick", action="store_true", help=text)


def add_progress(parser: argparse.ArgumentParser) -> None:
    """``--no-progress``: no progress bars on stderr."""
    parser.add_argument("--no-progress", action="store_true", help="no progress bars on stderr")


def at_least(minimum: int) -> Callable[[str], int]:
    """An argparse ``type``: an integer of at least ``minimum`` (a smaller one is a usage error, exit status 2)."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"an integer is needed, got {text!r}") from None
        if value < minimum:
            raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {value}")
        return value

    parse.__name__ = f"integer >= {minimum}"
    return parse


# --- provenance -----------------------------------------------------------------------------------


def command_line(script: str, argv: Sequence[str] | None) -> str:
    """The command that ran the script, as typed from the repository's root: ``python benchmarks/<name>.py <args>``
    (``argv`` ``None``: this process's own arguments)."""
    args = list(sys.argv[1:] if argv is None else argv)
    return shlex.join(["python", f"benchmarks/{Path(script).name}", *args])


def version(distribution: str) -> str:
    """The installed version of a distribution, or ``"not installed"``."""
    try:
        return importlib.metadata.version(distribution)
    except importlib.metadata.PackageNotFoundError:
        return "not installed"


def _cpu_model() -> str:
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def _load_average() -> float | None:
    try:
        return os.getloadavg()[0]
    except (AttributeError, OSError):
        return None


def utc_now() -> str:
    """The date and time now, UTC, ISO 8601 to the second (``2026-01-31T12:00:00+00:00``)."""
    return datetime.now(timezone.utc).isoformat(timespec="seconds")


def provenance(script: str, argv: Sequence[str] | None, **extra: Any) -> dict[str, Any]:
    """Where a record comes from: the command line, the date (UTC, ISO 8601 to the second), the machine (platform,
    CPU model, CPU count, 1-minute load average), the versions of Python, torch, MuJoCo and NumPy, and torch's
    thread count now; then ``extra`` (a script's own versions or settings).

    Args:
        script: the script's ``__file__``.
        argv: the arguments its ``main`` was given (``None``: this process's own).
        **extra: more entries, after the common ones.
    """
    import torch

    info: dict[str, Any] = {
        "command": command_line(script, argv),
        "date": utc_now(),
        "platform": platform.platform(),
        "cpu_model": _cpu_model(),
        "cpu_count": os.cpu_count(),
        "load_average_1min": _load_average(),
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_threads": torch.get_num_threads(),
        "mujoco": version("mujoco"),
        "numpy": np.__version__,
    }
    return info | extra


def provenance_line(info: Mapping[str, Any]) -> str:
    """:func:`provenance` in one Markdown line: the command, then the date, machine, versions and threads."""
    load = info.get("load_average_1min")
    threads = info["torch_threads"]
    return (f"`{info['command']}` · {info['date']} · {info['platform']} · {info['cpu_model']} · {info['cpu_count']} CPUs"
            + ("" if load is None else f" (load {load:.2f})")
            + f" · Python {info['python']} · torch {info['torch']} ({threads} thread{'' if threads == 1 else 's'}) · "
            f"MuJoCo {info['mujoco']} · NumPy {info['numpy']}")


# --- tables and records ---------------------------------------------------------------------------


def markdown_table(header: Sequence[str], rows: Iterable[Sequence[object]], align: str) -> str:
    """A Markdown table, without a final newline.

    Args:
        header: the column names.
        rows: the rows' cells (each ``str()``-ed), as many a row as there are columns.
        align: one letter per column, ``l`` (left) or ``r`` (right: the figures).

    Raises:
        HikError: ``align`` is not one ``l``/``r`` a column, or a row has another number of cells.
    """
    if len(align) != len(header) or set(align) - set(ALIGN):
        raise HikError(f"align needs one of 'l', 'r' for each of the {len(header)} columns, got {align!r}")
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(ALIGN[a] for a in align) + "|"]
    for number, row in enumerate(rows):
        cells = [str(cell) for cell in row]
        if len(cells) != len(header):
            raise HikError(f"row {number} has {len(cells)} cells for {len(header)} columns: {cells}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def write_json(path: Path, record: Mapping[str, Any]) -> Path:
    """``record`` as indented JSON (and a final newline) at ``path``, its folder made if missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    return path


def write_markdown(path: Path, markdown: str, info: Mapping[str, Any], title: str | None = None) -> Path:
    """A Markdown record at ``path``: the ``# title`` if given, the provenance line, then ``markdown``; its folder made if
    missing."""
    path.parent.mkdir(parents=True, exist_ok=True)
    head = "" if title is None else f"# {title}\n\n"
    path.write_text(head + provenance_line(info) + "\n\n" + markdown.rstrip("\n") + "\n", encoding="utf-8")
    return path


def write_record(out: Path, stem: str, record: Mapping[str, Any], markdown: str, info: Mapping[str, Any],
                 title: str | None = None) -> tuple[Path, Path]:
    """Write a run's record: ``<out>/<stem>.json`` (``{"provenance": info, **record}``) and ``<out>/<stem>.md``
    (:func:`write_markdown`); say so on stderr.

    Returns:
        The JSON's and the Markdown's paths.

    Raises:
        HikError: ``record`` has a ``provenance`` key of its own.
    """
    if "provenance" in record:
        raise HikError(f"the record of {stem} has its own 'provenance' key; the provenance block goes in as info")
    json_path = write_json(out / f"{stem}.json", {"provenance": dict(info), **record})
    md_path = write_markdown(out / f"{stem}.md", markdown, info, title)
    print(f"wrote {json_path} and {md_path}", file=sys.stderr)
    return json_path, md_path


# --- timing ---------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Timing:
    """Wall-clock time of one callable over its timed calls.

    Attributes:
        median_s: median time per call [s].
        p95_s: 95th percentile [s].
        min_s: fastest call [s].
        calls: number of timed calls.
    """

    median_s: float
    p95_s: float
    min_s: float
    calls: int

    @classmethod
    def from_samples(cls, samples: Sequence[float]) -> "Timing":
        """Summarise per-call times [s].

        Raises:
            HikError: no samples.
        """
        values = np.asarray(samples, dtype=float)
        if values.size == 0:
            raise HikError("a Timing needs at least one timed call")
        return cls(float(np.median(values)), float(np.percentile(values, 95)), float(values.min()), int(values.size))


def time_side_by_side(candidates: Sequence[tuple[Callable[[Any], object], Sequence[Any]]], calls: int,
                      warmup: int, block: int = 1) -> list[Timing]:
    """Time several callables call by call, interleaved so that they share the machine's state.

    The candidates take turns in blocks of ``block`` consecutive calls (round robin), so a burst of
    noise from the machine (another process, a slow core) hits every candidate alike rather than
    whichever happened to be running. With ``block > 1`` each block starts with one untimed call, so
    that per-call latencies are measured with warm caches: right after a torch call, a MuJoCo call of
    a few µs runs several times slower on cold caches. The garbage collector is paused while timing,
    as :mod:`timeit` does.

    Args:
        candidates: (callable, inputs) pairs; call i passes ``inputs[i % len(inputs)]``.
        calls: timed calls per candidate.
        warmup: untimed calls per candidate first.
        block: consecutive calls of one candidate before the next takes its turn.

    Returns:
        One :class:`Timing` per candidate, in order.

    Raises:
        HikError: ``calls`` or ``block`` below 1, or ``warmup`` below 0.
    """
    if calls < 1 or block < 1 or warmup < 0:
        raise HikError(f"calls and block must be at least 1 and warmup at least 0, got {calls}, {block}, {warmup}")
    for fn, inputs in candidates:
        for i in range(warmup):
            fn(inputs[i % len(inputs)])
    samples: list[list[float]] = [[] for _ in candidates]
    gc.collect()
    gc_was_enabled = gc.isenabled()
    gc.disable()
    try:
        for first in range(0, calls, block):
            for (fn, inputs), times in zip(candidates, samples):
                if block > 1:
                    fn(inputs[first % len(inputs)])
                for i in range(first, min(first + block, calls)):
                    arg = inputs[i % len(inputs)]
                    start = time.perf_counter()
                    fn(arg)
                    times.append(time.perf_counter() - start)
    finally:
        if gc_was_enabled:
            gc.enable()
    return [Timing.from_samples(times) for times in samples]


@contextlib.contextmanager
def torch_threads(threads: int) -> Iterator[None]:
    """Run the block with torch on ``threads`` threads, then restore the caller's count (a test session keeps its own)."""
    import torch

    before = torch.get_num_threads()
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.set_num_threads(before)
