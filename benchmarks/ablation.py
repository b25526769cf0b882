"""HarmoAtt-IK against the MLP baseline, and the composite loss with each term switched off.

Part 1 — models. Per robot, the HarmoAtt-IK and MLP networks (the shipped checkpoints by default,
or a pair trained here with ``--train``) are checked to have equal parameter counts (±10 %) and an
equal training budget (steps, batch, seed), then evaluated on the same ≥ 10,000 fixed reachable
targets (a test set: seed 2024, not the validation set the trainer watched): mean / median / p95
position error [mm], rotation error [°], success at (5 mm, 2°) and (10 mm, 20°), and HarmoAtt-IK's
relative reductions as the paper reports them: ``(MLP − HarmoAtt) / MLP`` for the mean errors and
the success-rate difference in percentage points.

Part 2 — loss ablation. On the chosen robots (IRB120 by default) HarmoAtt-IK is trained under one
budget with the full composite loss and with each improvement replaced by its plain version:
plain Smooth-L1 (fixed β), plain quaternion loss (not sign-invariant), no entropy regulariser.

Output: Markdown tables on stdout and in ``<out>/ablation.md``, raw numbers in
``<out>/ablation.json``.

Usage::

    python benchmarks/ablation.py                              # shipped checkpoints + loss ablation on irb120
    python benchmarks/ablation.py --robots irb120 panda --targets 20000
    python benchmarks/ablation.py --train --steps 4000         # train the pairs here instead
    python benchmarks/ablation.py --quick                      # seconds: a smoke test
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import torch

from hik_sim.checkpoint import Card
from hik_sim.data import make_eval_set
from hik_sim.kinematics import Chain
from hik_sim.losses import LossConfig
from hik_sim.models import build_model, mlp_hidden_for, parameter_count
from hik_sim.network import IKNetwork
from hik_sim.policies import load_pretrained
from hik_sim.robots import get_robot, robot_names
from hik_sim.train import TrainConfig, evaluate_network, train

TEST_SEED = 2024
METRICS = ("pos_mean_mm", "pos_median_mm", "pos_p95_mm", "rot_mean_deg", "rot_median_deg", "rot_p95_deg",
           "success_5mm_2deg", "success_10mm_20deg")
LOSS_VARIANTS: dict[str, dict[str, object]] = {
    "full composite loss": {},
    "plain Smooth-L1 (fixed β)": {"adaptive_beta": False},
    "plain quaternion loss": {"sign_invariant": False},
    "no entropy regulariser": {"entropy_weight": 0.0},
}
QUICK_OPTIONS = {"harmoatt": (("channels", 4), ("positions", 4), ("blocks", 1), ("embed_hidden", 16), ("head_hidden", 64))}


def _pair_config(model: str, steps: int, outputs: int, quick: bool) -> TrainConfig:
    if model == "harmoatt":
        options = QUICK_OPTIONS["harmoatt"] if quick else ()
    else:
        reference = build_model("harmoatt", -torch.ones(outputs), torch.ones(outputs), **dict(QUICK_OPTIONS["harmoatt"] if quick else ()))
        options = (("hidden", mlp_hidden_for(parameter_count(reference), outputs)),)
    return TrainConfig(model=model, steps=steps, batch=128 if quick else 1024, model_options=options,
                       eval_size=256 if quick else 2000, normalizer_samples=5000 if quick else 100_000)


def _networks(robot_name: str, args: argparse.Namespace) -> dict[str, tuple[IKNetwork, Card]]:
    if not args.train:
        return {model: (net, net.card) for model in ("harmoatt", "mlp") for net in [load_pretrained(robot_name, model)]}
    robot = get_robot(robot_name)
    out = {}
    for model in ("harmoatt", "mlp"):
        result = train(robot, _pair_config(model, args.steps, robot.dof, args.quick), progress=not args.no_progress)
        out[model] = (result.network, result.card)
    return out


def _check_fair(robot_name: str, cards: dict[str, Card]) -> dict[str, object]:
    """Equal parameter count (±10 %) and equal budget (steps, batch, seed), or exit."""
    h, m = cards["harmoatt"], cards["mlp"]
    ratio = m.parameters / h.parameters
    budget = {k: (h.config[k], m.config[k]) for k in ("batch", "seed")} | {"steps": (h.steps, m.steps)}
    problems = [f"{k}: {a} vs {b}" for k, (a, b) in budget.items() if a != b]
    if not 0.9 <= ratio <= 1.1:
        problems.append(f"parameters {h.parameters} vs {m.parameters}")
    if problems:
        sys.exit(f"{robot_name}: HarmoAtt-IK and MLP were not trained on equal terms ({'; '.join(problems)})")
    return {"parameters": {"harmoatt": h.parameters, "mlp": m.parameters}, "steps": h.steps, "batch": h.config["batch"],
            "seed": h.config["seed"], "training_seconds": {"harmoatt": h.training_seconds, "mlp": m.training_seconds}}


def reductions(harmoatt: dict[str, float], mlp: dict[str, float]) -> dict[str, float]:
    """HarmoAtt-IK's gains over the MLP: relative reductions [%] of mean errors, success gains [points]."""
    return {
        "pos_mean_reduction_pct": 100 * (mlp["pos_mean_mm"] - harmoatt["pos_mean_mm"]) / mlp["pos_mean_mm"],
        "rot_mean_reduction_pct": 100 * (mlp["rot_mean_deg"] - harmoatt["rot_mean_deg"]) / mlp["rot_mean_deg"],
        "success_5mm_2deg_gain_pts": 100 * (harmoatt["success_5mm_2deg"] - mlp["success_5mm_2deg"]),
        "success_10mm_20deg_gain_pts": 100 * (harmoatt["success_10mm_20deg"] - mlp["success_10mm_20deg"]),
    }


def compare_models(robots: list[str], args: argparse.Namespace) -> list[dict[str, object]]:
    """Part 1: one row per robot."""
    rows = []
    for robot_name in robots:
        chain = Chain(get_robot(robot_name))
        targets = make_eval_set(chain, TEST_SEED, args.targets)
        nets = _networks(robot_name, args)
        fairness = _check_fair(robot_name, {k: card for k, (_, card) in nets.items()})
        metrics = {model: evaluate_network(net, chain, targets) for model, (net, _) in nets.items()}
        rows.append({"robot": robot_name, "dof": chain.dof, "targets": args.targets, "targets_sha256": targets.sha256,
                     **fairness, "metrics": metrics, "reductions": reductions(metrics["harmoatt"], metrics["mlp"])})
    return rows


def loss_ablation(robots: list[str], args: argparse.Namespace) -> list[dict[str, object]]:
    """Part 2: one row per (robot, loss variant)."""
    rows = []
    for robot_name in robots:
        robot = get_robot(robot_name)
        chain = Chain(robot)
        targets = make_eval_set(chain, TEST_SEED, args.targets)
        base = _pair_config("harmoatt", args.ablation_steps, robot.dof, args.quick)
        for variant, change in LOSS_VARIANTS.items():
            config = replace(base, loss=replace(LossConfig(), **change))
            result = train(robot, config, progress=not args.no_progress)
            rows.append({"robot": robot_name, "variant": variant, "steps": result.card.steps,
                         "training_seconds": result.card.training_seconds,
                         "metrics": evaluate_network(result.network, chain, targets)})
    return rows


def markdown(models: list[dict[str, object]], losses: list[dict[str, object]]) -> str:
    """The two tables."""
    lines = []
    if models:
        lines += ["| robot | DOF | network | params | pos mean / median / p95 [mm] | rot mean / median / p95 [°] "
                  "| success 5 mm & 2° | success 10 mm & 20° |", "|---|---:|---|---:|---|---|---:|---:|"]
        for row in models:
            for model in ("harmoatt", "mlp"):
                m = row["metrics"][model]
                name = "HarmoAtt-IK" if model == "harmoatt" else "MLP baseline"
                lines.append(f"| {row['robot']} | {row['dof']} | {name} | {row['parameters'][model]:,} "
                             f"| {m['pos_mean_mm']:.2f} / {m['pos_median_mm']:.2f} / {m['pos_p95_mm']:.2f} "
                             f"| {m['rot_mean_deg']:.2f} / {m['rot_median_deg']:.2f} / {m['rot_p95_deg']:.2f} "
                             f"| {100 * m['success_5mm_2deg']:.1f} % | {100 * m['success_10mm_20deg']:.1f} % |")
        lines += ["", "| robot | position error reduction | rotation error reduction | success gain (5 mm, 2°) "
                  "| success gain (10 mm, 20°) |", "|---|---:|---:|---:|---:|"]
        for row in models:
            r = row["reductions"]
            lines.append(f"| {row['robot']} | {r['pos_mean_reduction_pct']:+.1f} % | {r['rot_mean_reduction_pct']:+.1f} % "
                         f"| {r['success_5mm_2deg_gain_pts']:+.1f} pts | {r['success_10mm_20deg_gain_pts']:+.1f} pts |")
    if losses:
        lines += ["", "| robot | loss | steps | pos mean [mm] | rot mean [°] | success 5 mm & 2° | success 10 mm & 20° |",
                  "|---|---|---:|---:|---:|---:|---:|"]
        for row in losses:
            m = row["metrics"]
            lines.append(f"| {row['robot']} | {row['variant']} | {row['steps']} | {m['pos_mean_mm']:.2f} | {m['rot_mean_deg']:.2f} "
                         f"| {100 * m['success_5mm_2deg']:.1f} % | {100 * m['success_10mm_20deg']:.1f} % |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="ablation", description=__doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="*", default=list(robot_names()), help="robots for part 1 (default: all)")
    parser.add_argument("--targets", type=int, default=10_000, help="fixed test targets per robot (default 10000)")
    parser.add_argument("--train", action="store_true", help="train the pairs here instead of loading the shipped checkpoints")
    parser.add_argument("--steps", type=int, default=4000, help="with --train: steps per network (default 4000)")
    parser.add_argument("--loss-robots", nargs="*", default=["irb120"], help="robots for part 2 (default irb120; none: skip)")
    parser.add_argument("--ablation-steps", type=int, default=2000, help="steps per loss variant (default 2000)")
    parser.add_argument("--quick", action="store_true", help="tiny networks and budgets: a smoke test")
    parser.add_argument("--out", type=Path, default=Path("benchmarks/results"), help="output folder")
    parser.add_argument("--no-progress", action="store_true", help="no progress bars")
    args = parser.parse_args(argv)
    if args.targets < 1 or args.steps < 1 or args.ablation_steps < 1:
        parser.error("--targets, --steps and --ablation-steps must be at least 1")
    models = compare_models(args.robots, args)
    losses = loss_ablation(args.loss_robots, args)
    table = markdown(models, losses)
    print(table)
    args.out.mkdir(parents=True, exist_ok=True)
    record = {"date": datetime.now(timezone.utc).isoformat(timespec="seconds"), "platform": platform.platform(),
              "torch": torch.__version__, "config": {k: str(v) for k, v in vars(args).items()},
              "models": models, "loss_ablation": losses}
    (args.out / "ablation.json").write_text(json.dumps(record, indent=2) + "\n")
    (args.out / "ablation.md").write_text(table)
    print(f"wrote {args.out / 'ablation.json'} and {args.out / 'ablation.md'}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
