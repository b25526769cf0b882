"""Recipe study: what moves HarmoAtt-IK's learning curve on a CPU, variants of one recipe side by side.

Each variant trains the shipped HarmoAtt-IK (dense trunk, one answer) from the same seed under the
same wall-clock budget (``--minutes``) on the same number of CPU threads, one after the other, and
changes ONE thing against ``baseline`` (the recipe the shipped networks were trained with: batch
1024, peak learning rate 3e-3, warm-up then cosine decay over the budget, configurations uniform in
the joint limits):

- ``constant_lr``: no decay after the warm-up (schedule);
- ``batch_256`` / ``batch_4096``: a quarter / four times the batch (more, noisier steps against
  fewer, better-averaged ones in the same time);
- ``limits_25``: a quarter of each batch next to the joint limits (``--sampling limits``);
- ``hard_25``: a quarter of each batch replays the previous batch's worst-served configurations
  with a little noise (``--sampling hard``: hard-example mining, which finds the tails wherever they
  are: solution-branch boundaries, near the base axis, joint limits).

The validation curve (the trainer's validation set) is recorded every ``--eval-every`` steps; the
table compares the networks at the end of the budget on a separate test set (seed 2024, as the
other benchmarks), with the change against ``baseline``. A variant is worth keeping only if it
beats ``baseline`` on every robot studied by more than the run-to-run noise, which ``--seeds``
measures (``baseline`` again with other seeds).

Output: a Markdown table on stdout and in ``<out>/recipe_study.md``, raw curves in
``<out>/recipe_study.json``, plots ``<out>/recipe_study_<robot>.png``. Runs already in the JSON are
kept (an interrupted study continues where it stopped); ``--fresh`` starts over.

Usage::

    python benchmarks/recipe_study.py --robots panda g1 --minutes 5
    python benchmarks/recipe_study.py --quick            # seconds: a smoke test
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the harness and the sibling benchmark, also when this file is loaded by path
import harness  # noqa: E402
from hik_sim.evaluation.experiments import TEST_SEED
from hik_sim.learning.train import TrainConfig
from learning_curves import QUICK_HARMOATT, plot, save_record, train_and_test  # noqa: E402

VARIANTS: dict[str, dict[str, Any]] = {
    "baseline": {},
    "constant_lr": {"schedule": "constant"},
    "batch_256": {"batch": 256},
    "batch_4096": {"batch": 4096},
    "limits_25": {"sampling": "limits", "tail_fraction": 0.25},
    "hard_25": {"sampling": "hard", "tail_fraction": 0.25},
}
"""A variant's changes to the baseline :class:`~hik_sim.learning.train.TrainConfig` (one thing each)."""


def variant_config(changes: dict[str, Any], seed: int, args: argparse.Namespace) -> TrainConfig:
    """The baseline recipe (see the module docstring) with ``changes``, under the study's budget."""
    options: dict[str, Any] = {"trunk": "dense"} | (QUICK_HARMOATT | {"feed_forward": 32} if args.quick else {})
    changes = dict(changes)
    if args.quick and "batch" in changes:
        changes["batch"] = max(16, changes["batch"] * args.batch // 1024)
    return TrainConfig(**({"model": "harmoatt", "steps": 10**9, "minutes": args.minutes, "batch": args.batch, "lr": args.lr,
                           "seed": seed, "device": "cpu", "model_options": tuple(options.items()), "eval_size": args.eval_size,
                           "eval_every": args.eval_every, "normalizer_samples": 5000 if args.quick else 100_000} | changes))


def run_one(robot_name: str, name: str, seed: int, args: argparse.Namespace) -> dict[str, Any]:
    """Train one variant under the budget; its curve and its test-set metrics."""
    config = variant_config(VARIANTS[name], seed, args)
    label = name if seed == args.seed else f"{name} (seed {seed})"
    _, run = train_and_test(robot_name, label, config, args.targets, not args.no_progress)
    return run | {"variant": name, "seed": seed, "changes": VARIANTS[name], "hypotheses": 1,
                  "samples": run["steps"] * config.batch}


def markdown(runs: list[dict[str, Any]]) -> str:
    """Per robot: each run's test metrics at the end of the budget and its change against the baseline."""
    parts = []
    for robot in dict.fromkeys(r["robot"] for r in runs):
        rows = [r for r in runs if r["robot"] == robot]
        base = next((r["test"] for r in rows if r["network"] == "baseline"), None)
        noise = [r["test"]["pos_mean_mm"] for r in rows if r["variant"] == "baseline"]
        heading = (f"**{robot}**, HarmoAtt-IK (dense), {rows[0]['minutes']:g} min each, {rows[0]['threads']} thread(s); "
                   f"test set (seed {TEST_SEED}, {rows[0]['targets']:,} targets)"
                   + (f"; baseline over {len(noise)} seeds: {min(noise):.2f}–{max(noise):.2f} mm" if len(noise) > 1 else ""))
        header = ["variant", "change", "steps", "samples", "pos mean [mm]", "Δ pos", "rot mean [°]", "Δ rot", "success 5 mm & 2°"]
        cells = []
        for r in sorted(rows, key=lambda r: r["test"]["pos_mean_mm"]):
            t = r["test"]
            deltas = ([f"{100 * (t['pos_mean_mm'] / base['pos_mean_mm'] - 1):+.0f} %", f"{100 * (t['rot_mean_deg'] / base['rot_mean_deg'] - 1):+.0f} %"]
                      if base else ["—", "—"])
            cells.append([r["network"], ", ".join(f"{k}={v}" for k, v in r["changes"].items()) or "—", f"{r['steps']:,}", f"{r['samples']:,}",
                          f"{t['pos_mean_mm']:.2f}", deltas[0], f"{t['rot_mean_deg']:.2f}", deltas[1], f"{100 * t['success_5mm_2deg']:.1f} %"])
        parts.append(f"{heading}\n\n{harness.markdown_table(header, cells, 'll' + 'r' * 7)}\n")
    return "\n".join(parts)


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=f"{harness.RESULTS}/recipe")
    harness.add_robots(parser, ["panda", "g1"], nargs="*")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS), choices=list(VARIANTS), help="variants (default all)")
    parser.add_argument("--seeds", nargs="*", type=int, default=[], help="also run the baseline with these seeds (the noise)")
    parser.add_argument("--minutes", type=float, default=5.0, help="wall-clock budget per run [min] (default 5)")
    parser.add_argument("--batch", type=harness.at_least(1), default=1024, help="the baseline's batch (default 1024)")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of every variant (default 0)")
    parser.add_argument("--threads", type=harness.at_least(1), default=1, help="CPU threads per run (default 1)")
    parser.add_argument("--eval-every", type=int, default=250, help="steps between validations (default 250)")
    parser.add_argument("--eval-size", type=int, default=2000, help="validation targets (default 2000)")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="test targets at the end (default 10000)")
    harness.add_quick(parser)
    parser.add_argument("--fresh", action="store_true", help="ignore runs already in the output JSON")
    harness.add_progress(parser)
    args = parser.parse_args(argv)
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    if args.quick:
        args.batch, args.eval_size, args.eval_every, args.targets = 64, 128, 5, 256
    torch.set_num_threads(args.threads)
    info = harness.provenance(__file__, argv)
    record_path = args.out / "recipe_study.json"
    runs: list[dict[str, Any]] = []
    if record_path.exists() and not args.fresh:
        runs = json.loads(record_path.read_text())["runs"]
    plan = [(name, args.seed) for name in args.variants] + [("baseline", seed) for seed in args.seeds if seed != args.seed]
    for robot_name in args.robots:
        for name, seed in plan:
            key = (robot_name, name, seed, args.minutes, args.batch)
            if any((r["robot"], r["variant"], r["seed"], r["minutes"], r["baseline_batch"]) == key for r in runs):
                continue
            run = run_one(robot_name, name, seed, args) | {
                "minutes": args.minutes, "threads": args.threads, "targets": args.targets, "baseline_batch": args.batch,
                "date": harness.utc_now()}
            runs.append(run)
            save_record(record_path, args, runs, info)
    shown = [r for r in runs if r["robot"] in args.robots and (r["minutes"], r["baseline_batch"]) == (args.minutes, args.batch)]
    table = markdown(shown)
    print(table)
    md_path = harness.write_markdown(args.out / "recipe_study.md", table, info)
    for path in plot(shown, args.out, stem="recipe_study"):
        print(f"wrote {path}", file=sys.stderr)
    print(f"wrote {record_path} and {md_path}", file=sys.stderr)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
