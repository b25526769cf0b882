"""Learning curves: validation error against wall-clock time and against steps, networks side by side.

Each network is trained under the same wall-clock budget (``--minutes``), batch, learning rate,
schedule (warm-up, cosine over the budget) and seed, on the same number of CPU threads, one after
the other, and validated every ``--eval-every`` steps on the trainer's validation set. Then:

- **equal time** (the headline: what a user with one machine gets): each network as it stands at
  the end of the budget, on a separate test set (seed 2024, not the validation set);
- **same step**: each network's validation error at the largest step that every network reached.
  Each run follows its own time-based schedule, so at that step the faster networks are still
  mid-schedule (high learning rate) while the slowest is at its end: this column shows how much a
  step buys, not what equal step budgets would give (``scripts/train_pretrained.py`` trains pairs
  at equal steps for that).

Networks (``--models``):

- ``harmoatt``: HarmoAtt-IK, the ``dense`` trunk (the fusion blocks hold ~92 % of the parameters);
- ``harmoatt_no_attention``: the same network with its three attention branches replaced by the
  identity (the ablation that says what the attention adds);
- ``mlp``: the CycleIK-style MLP baseline, width matched to HarmoAtt-IK's parameter count (±1 %);
- ``harmoatt_map``: HarmoAtt-IK as hik_sim 0.1 built it (``map`` trunk; 2.2 % of the parameters in
  the fusion blocks), the design this one replaces;
- ``cycleik``: CycleIK's generator with its own loss, optimiser and learning rate (the HarmoAtt-IK
  paper's baseline, ``hik_sim.learning.models.cycleik``), its width scaled to HarmoAtt-IK's parameter count;
  one answer per pose only.

Each name but ``cycleik`` takes ``--hypotheses H`` (H answers per pose, chosen by FK; the MLP gets as many).

Output: a Markdown table on stdout and in ``<out>/learning_curves.md``, raw curves in
``<out>/learning_curves.json``, plots ``<out>/learning_curves_<robot>.png``. Runs already in the JSON
are kept (so an interrupted benchmark continues where it stopped); ``--fresh`` starts over.

Usage::

    python benchmarks/learning_curves.py                                   # irb120 + panda, 7 min a network
    python benchmarks/learning_curves.py --robots g1 talos --minutes 7
    python benchmarks/learning_curves.py --robots irb120 --hypotheses 4
    python benchmarks/learning_curves.py --robots irb120 --save runs/curves  # keep the networks (and their cards)
    python benchmarks/learning_curves.py --quick                           # seconds: a smoke test
    python benchmarks/learning_curves.py --robots panda --hypotheses 4 --curves big=runs/a.curve.csv small=runs/b.curve.csv \
        --stem size                                                        # only plot runs trained elsewhere
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from pathlib import Path
from typing import Any, Mapping

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.evaluation.experiments import TEST_SEED
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.models import matched_cycleik_width, matched_mlp_hidden
from hik_sim.robots import get_robot
from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.learning.train import TrainConfig, TrainResult, train

NETWORKS: dict[str, tuple[str, dict[str, Any]]] = {
    "harmoatt": ("harmoatt", {"trunk": "dense"}),
    "harmoatt_no_attention": ("harmoatt", {"trunk": "dense", "attention": False}),
    "mlp": ("mlp", {}),
    "harmoatt_map": ("harmoatt", {"trunk": "map", "channels": 16, "blocks": 3}),
    "cycleik": ("cycleik", {}),
}
QUICK_HARMOATT = {"channels": 4, "positions": 4, "blocks": 1, "embed_hidden": 16}
CURVE_METRICS = ("pos_mean_mm", "rot_mean_deg", "success_5mm_2deg")


def network_config(name: str, robot_dof: int, args: argparse.Namespace) -> TrainConfig:
    """The training configuration of network ``name``: everything but the model equal across names."""
    model, options = NETWORKS[name]
    options = dict(options)
    if args.quick and model == "harmoatt":
        options |= QUICK_HARMOATT | ({"feed_forward": 32} if options["trunk"] == "dense" else {"head_hidden": 32})
    if args.hypotheses > 1:
        options["hypotheses"] = args.hypotheses
    reference = dict(NETWORKS["harmoatt"][1]) | (QUICK_HARMOATT | {"feed_forward": 32} if args.quick else {})
    if model == "mlp":
        options["hidden"] = matched_mlp_hidden(robot_dof, hypotheses=args.hypotheses, **reference)
    if model == "cycleik":  # its own loss, optimiser and learning rate (the paper's baseline as published)
        if args.hypotheses > 1:
            raise SystemExit("cycleik trains one answer per pose (its loss has no hypotheses); leave it out of --models")
        options["width"] = matched_cycleik_width(robot_dof, **reference)
    lr = None if model == "cycleik" else args.lr
    return TrainConfig(model=model, steps=10**9, minutes=args.minutes, batch=args.batch, lr=lr, seed=args.seed,
                       device="cpu", model_options=tuple(options.items()), eval_size=args.eval_size,
                       eval_every=args.eval_every, normalizer_samples=5000 if args.quick else 100_000, compile=args.compile)


def train_and_test(robot_name: str, name: str, config: TrainConfig, targets: int, progress: bool,
                   out: Path | None = None) -> tuple[TrainResult, dict[str, Any]]:
    """Train ``config`` under its budget; the result and the record every run keeps: its card's counts,
    its validation curve and its test-set metrics (``targets`` targets, seed :data:`TEST_SEED`).

    Raises:
        SystemExit: the run was stopped by a signal (a cut-short run is not a point on the curve).
    """
    robot = get_robot(robot_name)
    result = train(robot, config, out=out, progress=progress)
    if result.stopped_by is not None:
        raise SystemExit(f"stopped by {result.stopped_by} during {robot_name} {name}; the runs before it are kept")
    chain = Chain(robot)
    card = result.card
    return result, {"robot": robot_name, "network": name, "parameters": card.parameters, "steps": card.steps,
                    "seconds": card.training_seconds, "steps_per_second": card.metrics["steps_per_second"],
                    "curve": [{k: h[k] for k in ("step", "elapsed_s", *CURVE_METRICS)} for h in result.history],
                    "test": evaluate_network(result.network, chain, make_eval_set(chain, TEST_SEED, targets))}


def save_record(path: Path, args: argparse.Namespace, runs: list[dict[str, Any]], info: Mapping[str, Any]) -> None:
    """Write every run so far under the provenance block ``info`` (after each run: an interruption loses one run) and say
    how the last one ended."""
    harness.write_json(path, {"provenance": dict(info), "config": {k: str(v) for k, v in vars(args).items()}, "runs": runs})
    run = runs[-1]
    print(f"{run['robot']} {run['network']}: {run['steps']:,} steps, test {run['test']['pos_mean_mm']:.2f} mm / "
          f"{run['test']['rot_mean_deg']:.2f}°", file=sys.stderr, flush=True)


def run_one(robot_name: str, name: str, args: argparse.Namespace) -> dict[str, Any]:
    """Train one network under the budget; its curve and its test-set metrics."""
    config = network_config(name, get_robot(robot_name).dof, args)
    tag = ("" if args.hypotheses == 1 else f"_{args.hypotheses}answers") + ("_compiled" if args.compile else "")
    out = args.save / robot_name / f"{name}{tag}.pt" if args.save else None
    result, run = train_and_test(robot_name, name, config, args.targets, not args.no_progress, out)
    return run | {"hypotheses": args.hypotheses, "compiled": args.compile, "model_options": result.card.model_options}


def read_curve(path: Path) -> list[dict[str, float]]:
    """A trainer's validation curve (``<checkpoint>.curve.csv``) as a list of points, each column a float."""
    with path.open(newline="") as handle:
        return [{key: float(value) for key, value in row.items()} for row in csv.DictReader(handle)]


def at_step(curve: list[dict[str, float]], step: int) -> dict[str, float] | None:
    """The last validation at or before ``step`` (``None`` when the first came later)."""
    before = [point for point in curve if point["step"] <= step]
    return before[-1] if before else None


def markdown(runs: list[dict[str, Any]]) -> str:
    """Per robot: the equal-time columns (test set) and the same-step columns (validation set)."""
    parts = []
    for robot in dict.fromkeys(r["robot"] for r in runs):
        rows = [r for r in runs if r["robot"] == robot]
        common = min(r["curve"][-1]["step"] for r in rows)
        header = ["network", "params", "steps/s", "steps", "equal time: pos mean [mm]", "rot mean [°]", "success 5 mm & 2°",
                  f"same step ({common:,}), own schedule: pos mean [mm]", "rot mean [°]", "success"]
        cells = []
        for r in sorted(rows, key=lambda r: r["test"]["pos_mean_mm"]):
            t, s = r["test"], at_step(r["curve"], common)
            same_step = [f"{s['pos_mean_mm']:.2f}", f"{s['rot_mean_deg']:.2f}", f"{100 * s['success_5mm_2deg']:.1f} %"] if s else ["—"] * 3
            cells.append([r["network"], f"{r['parameters']:,}", f"{r['steps_per_second']:.1f}", f"{r['steps']:,}", f"{t['pos_mean_mm']:.2f}",
                          f"{t['rot_mean_deg']:.2f}", f"{100 * t['success_5mm_2deg']:.1f} %", *same_step])
        heading = (f"**{robot}**, {rows[0]['minutes']:g} min each, {rows[0]['hypotheses']} answer(s)"
                   + (", compiled" if rows[0].get("compiled") else ""))
        parts.append(f"{heading}\n\n{harness.markdown_table(header, cells, 'l' + 'r' * 9)}\n")
    return "\n".join(parts)


def plot(runs: list[dict[str, Any]], out: Path, stem: str = "learning_curves") -> list[Path]:
    """One figure per robot, ``<out>/<stem>_<robot>[_<H>answers].png``: position and rotation error against
    time and against steps (log scale), a line per run labelled by its ``network``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    paths = []
    for robot in dict.fromkeys(r["robot"] for r in runs):
        fig, axes = plt.subplots(2, 2, figsize=(11, 7), sharey="row")
        for r in (r for r in runs if r["robot"] == robot):
            curve = r["curve"]
            for row, metric in enumerate(("pos_mean_mm", "rot_mean_deg")):
                axes[row, 0].plot([p["elapsed_s"] / 60 for p in curve], [p[metric] for p in curve], label=r["network"])
                axes[row, 1].plot([p["step"] for p in curve], [p[metric] for p in curve], label=r["network"])
        for row, label in enumerate(("position error, mean [mm]", "rotation error, mean [°]")):
            axes[row, 0].set_ylabel(label)
            for col in range(2):
                axes[row, col].set_yscale("log")
                axes[row, col].grid(True, which="both", alpha=0.3)
        axes[1, 0].set_xlabel("training time [min]")
        axes[1, 1].set_xlabel("optimiser steps")
        axes[0, 0].set_title("against wall-clock time (the headline)")
        axes[0, 1].set_title("against steps")
        axes[0, 0].legend()
        fig.suptitle(f"{robot}: validation error while training (CPU, {runs[0]['threads']} thread(s) each"
                     + (f", {runs[0]['hypotheses']} answers" if runs[0]["hypotheses"] > 1 else "")
                     + (", compiled" if runs[0].get("compiled") else "") + ")")
        fig.tight_layout()
        tag = (f"_{runs[0]['hypotheses']}answers" if runs[0]["hypotheses"] > 1 else "") + ("_compiled" if runs[0].get("compiled") else "")
        path = out / f"{stem}_{robot}{tag}.png"
        fig.savefig(path, dpi=90)
        plt.close(fig)
        paths.append(path)
    return paths


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robots(parser, ["irb120", "panda"], nargs="*")
    parser.add_argument("--models", nargs="*", default=list(NETWORKS), choices=list(NETWORKS), help="networks (default all)")
    parser.add_argument("--hypotheses", type=harness.at_least(1), default=1, help="answers per pose for every network (default 1)")
    parser.add_argument("--minutes", type=float, default=7.0, help="wall-clock budget per network [min] (default 7)")
    parser.add_argument("--batch", type=int, default=1024, help="batch (default 1024)")
    parser.add_argument("--lr", type=float, default=3e-3, help="peak learning rate (default 3e-3)")
    parser.add_argument("--seed", type=int, default=0, help="seed (default 0)")
    parser.add_argument("--threads", type=harness.at_least(1), default=1, help="CPU threads per run (default 1)")
    parser.add_argument("--compile", action="store_true", help="torch.compile every network's step (compiling counts in the budget)")
    parser.add_argument("--eval-every", type=int, default=250, help="steps between validations (default 250)")
    parser.add_argument("--eval-size", type=int, default=2000, help="validation targets (default 2000)")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="test targets at the end (default 10000)")
    harness.add_quick(parser)
    parser.add_argument("--fresh", action="store_true", help="ignore runs already in the output JSON")
    parser.add_argument("--save", type=Path, default=None, help="also keep each trained network: SAVE/<robot>/<network>.pt")
    harness.add_progress(parser)
    parser.add_argument("--curves", nargs="+", metavar="LABEL=CSV", default=None,
                        help="train nothing: plot these trainer curves (python -m hik_sim.train's *.curve.csv) of one robot "
                             "(--robots R) side by side, as <out>/<stem>_<robot>[_<H>answers].png")
    parser.add_argument("--stem", default="learning_curves", help="file name stem of the figures (default learning_curves)")
    args = parser.parse_args(argv)
    if args.curves is not None:
        if len(args.robots) != 1 or any("=" not in c for c in args.curves):
            parser.error("--curves takes LABEL=CSV pairs of one robot: give exactly one --robots")
        args.out.mkdir(parents=True, exist_ok=True)
        runs = [{"robot": args.robots[0], "network": label, "curve": read_curve(Path(path)), "threads": args.threads,
                 "hypotheses": args.hypotheses} for label, path in (c.split("=", 1) for c in args.curves)]
        for path in plot(runs, args.out, stem=args.stem):
            print(f"wrote {path}", file=sys.stderr)
        return 0
    if args.minutes <= 0:
        parser.error("--minutes must be positive")
    if args.quick:
        args.batch, args.eval_size, args.eval_every, args.targets = 64, 128, 5, 256
    torch.set_num_threads(args.threads)
    info = harness.provenance(__file__, argv)
    record_path = args.out / "learning_curves.json"
    runs: list[dict[str, Any]] = []
    if record_path.exists() and not args.fresh:
        runs = json.loads(record_path.read_text())["runs"]
    for robot_name in args.robots:
        for name in args.models:
            key = (robot_name, name, args.hypotheses, args.minutes, args.compile)
            if any((r["robot"], r["network"], r["hypotheses"], r["minutes"], r.get("compiled", False)) == key for r in runs):
                continue
            run = run_one(robot_name, name, args) | {"minutes": args.minutes, "threads": args.threads,
                                                     "date": harness.utc_now()}
            runs.append(run)
            save_record(record_path, args, runs, info)
    shown = [r for r in runs if r["robot"] in args.robots and r["network"] in args.models
             and (r["hypotheses"], r["minutes"], r.get("compiled", False)) == (args.hypotheses, args.minutes, args.compile)]
    table = markdown(shown)
    print(table)
    md_path = harness.write_markdown(args.out / "learning_curves.md", table, info)
    for path in plot(shown, args.out, stem=args.stem):
        print(f"wrote {path}", file=sys.stderr)
    print(f"wrote {record_path} and {md_path}", file=sys.stderr)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
