"""Every shipped network on its robot's fixed test targets, beside the accuracy goals.

For each checkpoint under ``hik_sim/policies/pretrained`` (or the robots and names given): its
card (model, trunk, parameters, steps, training minutes, how the budget was bounded) and its
accuracy on 10,000 test targets (seed 2024, the set ``ablation.py`` and ``learning_curves.py``
use; not the validation set the trainer watched). HarmoAtt-IK rows also show the gap to the goals
(≤ 5 mm and ≤ 2.5° mean, ≥ 75 % within 5 mm & 2°; the Panda ≤ 6.66 mm and ≤ 2.03°, IKFlow's published
Panda model in its own table, jstmn/ikflow's model_performances.md).

Usage::

    python benchmarks/shipped_networks.py                      # every shipped network
    python benchmarks/shipped_networks.py --robots g1 --names harmoatt cycleik

Output: a Markdown table on stdout and in ``<out>/shipped_networks.md``, the records in
``<out>/shipped_networks.json`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.evaluation.experiments import TEST_SEED, training_budget
from hik_sim.kinematics.chain import Chain
from hik_sim.policies import load_pretrained, pretrained_names
from hik_sim.robots import get_robot
from hik_sim.evaluation.metrics import evaluate_network

GOALS = {"default": (5.0, 2.5, 0.75), "panda": (6.66, 2.03, 0.75)}
"""The accuracy goals for the shipped HarmoAtt-IK: (pos mean [mm], rot mean [°], success 5 mm & 2°)."""


def measure(robot_name: str, name: str, targets: int) -> dict[str, Any]:
    """One shipped network's card and test-set metrics."""
    robot = get_robot(robot_name)
    chain = Chain(robot)
    network = load_pretrained(robot_name, name)
    card = network.card
    metrics = evaluate_network(network, chain, make_eval_set(chain, TEST_SEED, targets, network.selection))
    kind, value = training_budget(card)
    return {"robot": robot_name, "name": name, "model": card.model, "trunk": card.model_options.get("trunk", "map" if card.model == "harmoatt" else ""),
            "answers": network.hypotheses, "parameters": card.parameters, "steps": card.total_steps,
            "minutes": card.total_training_seconds / 60, "budget": {"kind": kind, "value": value}, "targets": targets,
            "test": metrics}


def goal_gap(row: dict[str, Any]) -> str:
    """Where a full-joint-space HarmoAtt-IK row (one answer or four) stands against the accuracy goals ("met", or what is missing)."""
    if row["model"] != "harmoatt" or row["name"] not in ("harmoatt", "harmoatt_4answers"):
        return ""
    pos, rot, success = GOALS.get(row["robot"], GOALS["default"])
    m = row["test"]
    misses = []
    if m["pos_mean_mm"] > pos:
        misses.append(f"pos +{m['pos_mean_mm'] - pos:.1f} mm")
    if m["rot_mean_deg"] > rot:
        misses.append(f"rot +{m['rot_mean_deg'] - rot:.1f}°")
    if m["success_5mm_2deg"] < success:
        misses.append(f"success −{100 * (success - m['success_5mm_2deg']):.1f} pts")
    return "met" if not misses else ", ".join(misses)


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table."""
    header = ["robot", "network", "model (trunk)", "answers", "params", "budget", "steps", "pos mean / median [mm]", "rot mean / median [°]",
              "success 5 mm & 2°", "10 mm & 20°", "accuracy goal"]
    cells = []
    for row in rows:
        m, b = row["test"], row["budget"]
        budget = f"{b['value']:g} min" if b["kind"] == "minutes" else f"{row['minutes']:.0f} min ({b['value']:,.0f} steps)"
        model = row["model"] + (f" ({row['trunk']})" if row["trunk"] else "")
        cells.append([row["robot"], row["name"], model, row["answers"], f"{row['parameters']:,}", budget, f"{row['steps']:,}",
                      f"{m['pos_mean_mm']:.2f} / {m['pos_median_mm']:.2f}", f"{m['rot_mean_deg']:.2f} / {m['rot_median_deg']:.2f}",
                      f"{100 * m['success_5mm_2deg']:.1f} %", f"{100 * m['success_10mm_20deg']:.1f} %", goal_gap(row)])
    return harness.markdown_table(header, cells, "lllrrlrllrrl") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    parser.add_argument("--robots", nargs="*", default=None, help="robots (default: every robot with a shipped network)")
    parser.add_argument("--names", nargs="*", default=None, help="networks (default: every shipped one)")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="test targets per robot (default 10000)")
    args = parser.parse_args(argv)
    order = {"harmoatt": 0, "mlp": 1, "cycleik": 2}
    shipped = [name.split("/") for name in pretrained_names()]
    wanted = [(r, n) for r, n in shipped if (args.robots is None or r in args.robots) and (args.names is None or n in args.names)]
    robots = list(dict.fromkeys(r for r, _ in shipped))
    wanted.sort(key=lambda rn: (robots.index(rn[0]), order.get(rn[1], 3), rn[1]))
    if not wanted:
        parser.error("no shipped network matches --robots/--names")
    rows = [measure(robot, name, args.targets) for robot, name in wanted]
    table = markdown(rows)
    print(table)
    harness.write_record(args.out, "shipped_networks", {"test_seed": TEST_SEED, "rows": rows}, table, harness.provenance(__file__, argv))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
