"""The main job's wall time: ``python -m hik_sim.evaluate`` with no arguments (the IRB120, its default policies), by phase.

Runs the evaluator as a subprocess into a fresh folder and records its wall time, the CPU time it used,
the machine's load average before and after (the machine may be shared: a load above its core count
means the figure is slower than on a quiet machine), and the phases the evaluator itself writes into
``report.json`` (``phases``: episodes, videos, report; absent for an evaluator that does not write them).

Usage::

    python benchmarks/main_job.py                          # -> benchmarks/results/main_job/main_job.{json,md}
    python benchmarks/main_job.py --out /tmp/main_job       # another record folder
    python benchmarks/main_job.py --warm --label warm      # numba's kernels from its on-disk cache
    python benchmarks/main_job.py --label before --keep    # another row in the record; keep the run folder
    python benchmarks/main_job.py -- --robot panda         # arguments after -- go to the evaluator
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402


def run_main_job(extra: list[str], keep: bool, cold: bool) -> dict:
    """Run the evaluator once; return its record (seconds, phases, load, the run's last lines).

    ``cold``: as on a fresh install, numba compiles every kernel (an empty ``NUMBA_CACHE_DIR``) and the robot's meshes
    are converted again (an empty ``HIK_SIM_CACHE``); else the on-disk caches of earlier runs serve them.
    """
    folder = Path(tempfile.mkdtemp(prefix="main_job-")) / "run"
    command = [sys.executable, "-m", "hik_sim.evaluate", "--no-progress", "--out", str(folder), *extra]
    env = dict(os.environ)
    if cold:
        env["NUMBA_CACHE_DIR"] = str(folder.parent / "numba_cache")
        env["HIK_SIM_CACHE"] = str(folder.parent / "hik_sim_cache")
    load_before = os.getloadavg()
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    done = subprocess.run(command, capture_output=True, text=True, env=env)
    seconds = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    record = {
        "command": "python -m hik_sim.evaluate " + " ".join(extra) if extra else "python -m hik_sim.evaluate",
        "numba_cache": "cold" if cold else "warm",
        "returncode": done.returncode,
        "total_s": seconds,
        "cpu_s": (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime),
        "load_before": list(load_before),
        "load_after": list(os.getloadavg()),
        "last_lines": done.stdout.strip().splitlines()[-3:],
        "stderr_tail": done.stderr.strip().splitlines()[-5:],
    }
    report = folder / "report.json"
    if report.is_file():
        data = json.loads(report.read_text())
        record["phases"] = data.get("phases", {})
        record["files"] = sorted(data.get("files", []))
        record["videos_bytes"] = sum(p.stat().st_size for p in folder.glob("*.mp4"))
    if keep:
        record["run_folder"] = str(folder)
    else:
        shutil.rmtree(folder.parent, ignore_errors=True)
    return record


TITLE = "The main job: `python -m hik_sim.evaluate` (IRB120, default policies)"


def markdown(rows: list[dict]) -> str:
    """The record as a Markdown table (the title and the latest run's provenance line go above it)."""
    header = ["label", "date", "numba cache", "total [s]", "episodes [s]", "videos [s]", "report [s]", "CPU [s]", "load before / after (1 min)", "exit"]
    cells = []
    for row in rows:
        phases = [f"{row['phases'][name]:.1f}" if name in row.get("phases", {}) else "—" for name in ("episodes", "videos", "report")]
        cells.append([row["label"], row["date"], row.get("numba_cache", "—"), f"{row['total_s']:.1f}", *phases, f"{row['cpu_s']:.1f}",
                      f"{row['load_before'][0]:.2f} / {row['load_after'][0]:.2f}", row["returncode"]])
    return ("Rows: `python benchmarks/main_job.py --label LABEL` (`--warm`: numba's on-disk cache serves its kernels; "
            "else an empty cache, as on a fresh install); the line above is the latest run's. The evaluator runs with `--no-progress` "
            "into a temporary folder; CPU is its user + system time, its ffmpeg encoders included. The commands of each row: docs/report.md. "
            "The machine may be shared: the load column says how busy it was.\n\n" + harness.markdown_table(header, cells, "lllrrrrrlr") + "\n")


def main(argv: list[str] | None = None) -> int:
    # the record folder beside this file, so that a run from another folder (an older checkout's, docs/report.md) records here
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=str(Path(__file__).resolve().parent / "results" / "main_job"))
    parser.add_argument("--label", default="current", help="the row's label (default current)")
    parser.add_argument("--keep", action="store_true", help="keep the run folder")
    parser.add_argument("--fresh", action="store_true", help="start a new record instead of adding a row")
    parser.add_argument("--warm", action="store_true", help="let the on-disk caches serve numba's kernels and the meshes "
                                                            "(default: cold, compiled and converted as on a fresh install)")
    parser.add_argument("extra", nargs="*", help="evaluator arguments (after --)")
    args = parser.parse_args(argv)
    path = args.out / "main_job.json"
    info = harness.provenance(__file__, argv)
    row = {"label": args.label, "date": info["date"]} | run_main_job(args.extra, args.keep, cold=not args.warm)
    rows = [] if args.fresh or not path.is_file() else json.loads(path.read_text())["runs"]
    rows = [r for r in rows if r["label"] != args.label] + [row]
    text = markdown(rows)
    harness.write_record(args.out, "main_job", {"runs": rows}, text, info, title=TITLE)
    print(text)
    return 0 if row["returncode"] == 0 else 1

if __name__ == "__main__":
    raise SystemExit(main())
