"""Train every robot's four-answer HarmoAtt-IK with the paper's trunk (``trunk=cycleik``) at the recipe and training time
of its ``dense``-trunk network: the candidates that replace the ``dense`` networks where they win.

The attention study (``benchmarks/attention_ablation.py``, docs/paper_models.md) ranks the paper's trunk ahead of the
``dense`` trunk at 3 minutes a run; these runs ask the same question at the shipped budget, one seed a robot.
``benchmarks/paper_trunk.py`` decides on validation which of the two ships.

- **Reference:** each robot's ``dense`` ``harmoatt_4answers`` as it shipped before the comparison, kept with its card
  under ``benchmarks/results/paper_trunk/dense/<robot>/`` (:data:`DENSE`).
- **Recipe:** the reference's (``scripts/train_pretrained.py``: ``CLOSED_LOOP_RECIPE``'s canonical turn, the robot's
  ``CLOSED_LOOP_EXTRAS`` and ``CLOSED_LOOP_LOSS``, batch 256, AdamW 3e-3, cosine schedule, the best validation kept),
  with ``trunk=cycleik`` sized to the reference's weights (:func:`~hik_sim.learning.models.harmoatt_cycleik.paper_width_for`)
  in place of the dense trunk's size options.
- **Budget, equal time without a quiet machine:** the steps the reference trained over its lineage, times the ratio of
  the two trunks' step rates on one thread (the study's ``calibration.json``; robots it lacks are measured first with
  ``attention_ablation.py --calibrate``). The load of other work then changes a run's wall time, not its budget.
- **Checkpoints** every 5 minutes under ``--out`` (default ``benchmarks/results/paper_trunk/runs/<robot>/``, committed
  with the record: about 2.5 MB a robot); a run found there resumes, a finished one is skipped, so the runs can span
  several sittings and machines (``--stop-after``; SIGTERM saves a resumable checkpoint).

Usage::

    python scripts/train_paper_trunk.py --jobs 2 --stop-after 90          # every robot, two runs side by side
    python scripts/train_paper_trunk.py --robots talos romeo --dry-run     # print the commands only

Each run writes ``<out>/<robot>/harmoatt_4answers.safetensors`` and its best validation ``….best.safetensors``; the
validation set is the trainer's default (seed 12345, 2,000 targets), the cards'. Ship one with
``python scripts/train_pretrained.py --robots ROBOT --only harmoatt_4answers --ship <best checkpoint>``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "scripts"))
from train_pretrained import CLOSED_LOOP_EXTRAS, CLOSED_LOOP_LOSS, CLOSED_LOOP_RECIPE  # noqa: E402

from hik_sim.learning.card import Card  # noqa: E402
from hik_sim.learning.checkpoint import read_checkpoint  # noqa: E402
from hik_sim.learning.models.harmoatt_cycleik import paper_width_for  # noqa: E402
from hik_sim.learning.train_options import best_path  # noqa: E402
from hik_sim.robots import robot_names  # noqa: E402

CALIBRATION = ROOT / "benchmarks" / "results" / "attention_ablation" / "calibration.json"
RUNS = ROOT / "benchmarks" / "results" / "paper_trunk" / "runs"
"""Where the runs live: in the repository, so that runs spanning several sittings survive a fresh checkout."""
DENSE = ROOT / "benchmarks" / "results" / "paper_trunk" / "dense"
"""The ``dense``-trunk ``harmoatt_4answers`` of every robot as it shipped before this comparison (weights and card): the
fixed reference of each run's recipe and budget, and of ``benchmarks/paper_trunk.py``, also once a paper-trunk
network ships in its place."""
NAME = "harmoatt_4answers"
DENSE_ONLY = ("trunk", "channels", "positions", "feed_forward", "embed_hidden")
"""Options of the reference's recipe that size the dense trunk and do not apply to the paper's."""


def rates(robots: list[str]) -> dict[str, dict[str, float]]:
    """Steps a CPU-second of one thread of the ``harmoatt`` (paper trunk) and ``harmoatt_dense`` arms per robot,
    measured first for robots the calibration lacks."""
    known = json.loads(CALIBRATION.read_text())["steps_per_second"] if CALIBRATION.is_file() else {}
    missing = [r for r in robots if not {"harmoatt", "harmoatt_dense"} <= set(known.get(r, {}))]
    if missing:
        subprocess.run([sys.executable, str(ROOT / "benchmarks" / "attention_ablation.py"), "--calibrate", "--robots", *missing,
                        "--models", "harmoatt", "harmoatt_dense"], check=True, env={**os.environ, "OMP_NUM_THREADS": "1"})
        known = json.loads(CALIBRATION.read_text())["steps_per_second"]
    return known


def budget(robot: str, rate: dict[str, float]) -> tuple[Card, int]:
    """The ``dense`` network's card (:data:`DENSE`) and the paper trunk's steps in the time the ``dense`` network trained."""
    card = Card.from_json(json.loads((DENSE / robot / f"{NAME}.json").read_text()))
    return card, round(card.total_steps * rate["harmoatt"] / rate["harmoatt_dense"])


def command(robot: str, out: Path, seed: int, rate: dict[str, float]) -> list[str]:
    """The trainer's command line for one robot's run (see the module docstring)."""
    card, steps = budget(robot, rate)
    options = dict(CLOSED_LOOP_RECIPE + CLOSED_LOOP_EXTRAS.get(robot, ()))
    options = {k: v for k, v in options.items() if k not in DENSE_ONLY}
    inputs = 5 if options.get("turn_input") else 3
    joints = len(card.joint_names) - len(card.fixed_joints)
    width = paper_width_for(joints, 4, inputs, parameters=card.parameters)
    options = {"trunk": "cycleik", "width": width, "hypotheses": 4, **options}
    loss = [a for k, v in CLOSED_LOOP_LOSS.get(robot, ()) for a in (f"--{k.replace('_', '-')}", str(v))]
    argv = [sys.executable, "-m", "hik_sim.train", "--robot", robot, "--model", "harmoatt",
            *[a for k, v in options.items() for a in ("--model-option", f"{k}={str(v).lower() if isinstance(v, bool) else v}")],
            "--batch", "256", "--lr", "3e-3", *loss, "--seed", str(seed), "--device", "cpu", "--steps", str(steps),
            "--eval-every", "2000", "--keep-best", "--checkpoint-minutes", "5", "--no-progress", "--out", str(out)]
    return argv + (["--resume", str(out)] if out.is_file() else [])


def finished(out: Path, steps: int) -> bool:
    """Whether a run's checkpoint has reached its steps (and its best validation is kept)."""
    if not (out.is_file() and best_path(out).is_file()):
        return False
    return int(read_checkpoint(out)["card"]["steps"]) >= steps


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="+", default=list(robot_names()), choices=list(robot_names()), metavar="NAME")
    parser.add_argument("--out", type=Path, default=RUNS)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="runs side by side, one thread each (default 1)")
    parser.add_argument("--stop-after", type=float, default=None, metavar="MIN", help="launch no run after this many minutes")
    parser.add_argument("--dry-run", action="store_true", help="print the commands and stop")
    args = parser.parse_args(argv)
    if args.jobs < 1:
        parser.error("--jobs must be at least 1")
    known = rates(args.robots) if not args.dry_run or CALIBRATION.is_file() else {}
    start = time.monotonic()

    def run(robot: str) -> str:
        out = args.out / robot / f"{NAME}.safetensors"
        if args.stop_after is not None and time.monotonic() - start > args.stop_after * 60:
            return f"{robot}: not started (--stop-after)"
        line = command(robot, out, args.seed, known[robot])
        if args.dry_run:
            return " ".join(line[1:])
        out.parent.mkdir(parents=True, exist_ok=True)
        env = {**os.environ, "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1", "NUMBA_NUM_THREADS": "1"}
        with open(out.with_suffix(".log"), "a") as log:
            code = subprocess.run(line, env=env, stdout=log, stderr=subprocess.STDOUT).returncode
        return f"{robot}: exit {code}, {out}"

    todo = [r for r in args.robots if args.dry_run or not finished(args.out / r / f"{NAME}.safetensors", budget(r, known[r])[1])]
    with ThreadPoolExecutor(args.jobs) as pool:
        for message in pool.map(run, todo):
            print(message, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
