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
import sys
from dataclasses import replace
from pathlib import Path


sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.checkpoint import Card
from hik_sim.learning.data import make_eval_set
from hik_sim.errors import HikError
from hik_sim.evaluation.experiments import TEST_SEED, compare_networks, shipped_pair
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.losses import LossConfig
from hik_sim.learning.models import matched_mlp_hidden
from hik_sim.learning.network import IKNetwork
from hik_sim.robots import get_robot
from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.learning.train import TrainConfig, train

METRICS = ("pos_mean_mm", "pos_median_mm", "pos_p95_mm", "rot_mean_deg", "rot_median_deg", "rot_p95_deg",
           "success_5mm_2deg", "success_10mm_20deg")
LOSS_VARIANTS: dict[str, dict[str, object]] = {
    "full composite loss": {},
    "plain Smooth-L1 (fixed β)": {"adaptive_beta": False},
    "plain quaternion loss": {"sign_invariant": False},
    "no entropy regulariser": {"entropy_weight": 0.0},
}
HARMOATT_OPTIONS = (("trunk", "dense"),)
"""The HarmoAtt-IK this study trains: the ``dense`` trunk at its default size (the shipped one-answer networks')."""
QUICK_OPTIONS = {"harmoatt": (("trunk", "dense"), ("channels", 4), ("positions", 4), ("blocks", 1), ("embed_hidden", 16),
                              ("feed_forward", 32))}


def _pair_config(model: str, steps: int, outputs: int, quick: bool) -> TrainConfig:
    harmoatt = QUICK_OPTIONS["harmoatt"] if quick else HARMOATT_OPTIONS
    options = harmoatt if model == "harmoatt" else (("hidden", matched_mlp_hidden(outputs, **dict(harmoatt))),)
    return TrainConfig(model=model, steps=steps, batch=128 if quick else 1024, model_options=options,
                       eval_size=256 if quick else 2000, normalizer_samples=5000 if quick else 100_000)


def _networks(robot_name: str, args: argparse.Namespace) -> dict[str, tuple[IKNetwork, Card]]:
    robot = get_robot(robot_name)
    if not args.train:
        return shipped_pair(robot)
    out = {}
    for model in ("harmoatt", "mlp"):
        result = train(robot, _pair_config(model, args.steps, robot.dof, args.quick), progress=not args.no_progress)
        out[model] = (result.network, result.card)
    return out


def compare_models(robots: list[str], args: argparse.Namespace) -> list[dict[str, object]]:
    """Part 1: one row per robot."""
    return [compare_networks(get_robot(name), _networks(name, args), args.targets) for name in robots]


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
    tables = []
    if models:
        header = ["robot", "DOF", "network", "params", "pos mean / median / p95 [mm]", "rot mean / median / p95 [°]", "success 5 mm & 2°",
                  "success 10 mm & 20°"]
        cells = []
        for row in models:
            for model in ("harmoatt", "mlp"):
                m = row["metrics"][model]
                name = "HarmoAtt-IK" if model == "harmoatt" else "MLP baseline"
                if row.get("hypotheses", 1) > 1:
                    name += f" ({row['hypotheses']} answers)"
                cells.append([row["robot"], row["dof"], name, f"{row['parameters'][model]:,}",
                              f"{m['pos_mean_mm']:.2f} / {m['pos_median_mm']:.2f} / {m['pos_p95_mm']:.2f}",
                              f"{m['rot_mean_deg']:.2f} / {m['rot_median_deg']:.2f} / {m['rot_p95_deg']:.2f}",
                              f"{100 * m['success_5mm_2deg']:.1f} %", f"{100 * m['success_10mm_20deg']:.1f} %"])
        tables.append(harness.markdown_table(header, cells, "lrlrllrr"))
        header = ["robot", "position error reduction", "rotation error reduction", "success gain (5 mm, 2°)", "success gain (10 mm, 20°)"]
        cells = [[row["robot"], f"{row['reductions']['pos_mean_reduction_pct']:+.1f} %", f"{row['reductions']['rot_mean_reduction_pct']:+.1f} %",
                  f"{row['reductions']['success_5mm_2deg_gain_pts']:+.1f} pts", f"{row['reductions']['success_10mm_20deg_gain_pts']:+.1f} pts"]
                 for row in models]
        tables.append(harness.markdown_table(header, cells, "lrrrr"))
    if losses:
        header = ["robot", "loss", "steps", "pos mean [mm]", "rot mean [°]", "success 5 mm & 2°", "success 10 mm & 20°"]
        cells = [[row["robot"], row["variant"], row["steps"], f"{row['metrics']['pos_mean_mm']:.2f}", f"{row['metrics']['rot_mean_deg']:.2f}",
                  f"{100 * row['metrics']['success_5mm_2deg']:.1f} %", f"{100 * row['metrics']['success_10mm_20deg']:.1f} %"] for row in losses]
        tables.append(("\n" if not models else "") + harness.markdown_table(header, cells, "llrrrrr"))
    return "\n\n".join(tables) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robots(parser, None, nargs="*", text="robots for part 1 (default: all)")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="fixed test targets per robot (default 10000)")
    parser.add_argument("--train", action="store_true", help="train the pairs here instead of loading the shipped checkpoints")
    parser.add_argument("--steps", type=harness.at_least(1), default=4000, help="with --train: steps per network (default 4000)")
    parser.add_argument("--loss-robots", nargs="*", default=["irb120"], help="robots for part 2 (default irb120; none: skip)")
    parser.add_argument("--ablation-steps", type=harness.at_least(1), default=2000, help="steps per loss variant (default 2000)")
    harness.add_quick(parser)
    harness.add_progress(parser)
    args = parser.parse_args(argv)
    try:
        models = compare_models(args.robots, args)
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    losses = loss_ablation(args.loss_robots, args)
    table = markdown(models, losses)
    print(table)
    record = {"config": {k: str(v) for k, v in vars(args).items()}, "models": models, "loss_ablation": losses}
    harness.write_record(args.out, "ablation", record, table, harness.provenance(__file__, argv))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
