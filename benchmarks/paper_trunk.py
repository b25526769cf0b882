"""The paper's trunk against the ``dense`` trunk at the shipped budget: which four-answer HarmoAtt-IK ships.

For every robot with a run of ``scripts/train_paper_trunk.py`` (``benchmarks/results/paper_trunk/runs/<robot>/``): the
``dense`` ``harmoatt_4answers`` as it shipped before the comparison (``benchmarks/results/paper_trunk/dense/<robot>/``)
and the run's best validation checkpoint (``trunk=cycleik``, the same recipe, the ``dense`` network's time as steps),
each on

- the **validation** set its trainer watched (its card: seed 12345, 2,000 targets), which decides: the paper's trunk
  replaces the ``dense`` network where its run is finished and its validation score (mean position error / 5 mm + mean
  rotation error / 2°) is lower;
- the **test** targets (seed 2024, ``--targets``), which report and never decide.

A run not yet finished is shown with the share of its steps it has trained, and decides nothing.

Usage::

    python benchmarks/paper_trunk.py                       # -> benchmarks/results/paper_trunk/paper_trunk.{json,md}
    python benchmarks/paper_trunk.py --robots irb120 --targets 2000
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
RUNS = ROOT / "benchmarks" / "results" / "paper_trunk" / "runs"
DENSE = ROOT / "benchmarks" / "results" / "paper_trunk" / "dense"
"""The reference: each robot's ``dense`` network as it shipped before the comparison (``scripts/train_paper_trunk.py``)."""
NAME = "harmoatt_4answers"


def decision(dense: dict[str, Any], candidate: dict[str, Any]) -> str:
    """What the validation figures say: ``ship the paper trunk``, ``keep dense``, or why neither yet.

    Args:
        dense: the ``dense`` network's row (``validation``: its card's metrics).
        candidate: the paper trunk's row (``validation``, ``done``: the share of its steps trained).
    """
    from hik_sim.learning.train_options import validation_score

    if candidate["done"] < 1.0:
        return f"not finished ({100 * candidate['done']:.0f} % of its steps)"
    better = validation_score(candidate["validation"]) < validation_score(dense["validation"])
    return "ship the paper trunk" if better else "keep dense"


def measure(robot_name: str, targets: int, runs: Path) -> list[dict[str, Any]]:
    """The ``dense`` network's and the paper-trunk run's rows for one robot (validation from the cards, test measured)."""
    from hik_sim.evaluation.experiments import TEST_SEED
    from hik_sim.evaluation.metrics import evaluate_network
    from hik_sim.kinematics.chain import Chain
    from hik_sim.learning.checkpoint import load_checkpoint, read_checkpoint
    from hik_sim.learning.data import make_eval_set
    from hik_sim.learning.train_options import best_path
    from hik_sim.robots import get_robot

    chain = Chain(get_robot(robot_name))
    run = runs / robot_name / f"{NAME}.safetensors"
    goal = int(read_checkpoint(run)["card"]["config"]["steps"])
    trained = int(read_checkpoint(run)["card"]["steps"])
    candidate, candidate_card = load_checkpoint(best_path(run), robot=get_robot(robot_name))
    dense, dense_card = load_checkpoint(DENSE / robot_name / f"{NAME}.safetensors", robot=get_robot(robot_name))
    rows = []
    for label, network, card, done in (("dense", dense, dense_card, 1.0),
                                       ("paper trunk (cycleik)", candidate, candidate_card, trained / goal)):
        test = evaluate_network(network, chain, make_eval_set(chain, TEST_SEED, targets, network.selection))
        rows.append({"robot": robot_name, "network": label, "trunk": card.model_options.get("trunk", ""),
                     "parameters": card.parameters, "steps": card.total_steps, "done": done,
                     "validation": {k: card.metrics[k] for k in ("pos_mean_mm", "rot_mean_deg", "success_5mm_2deg")},
                     "test": {k: test[k] for k in ("pos_mean_mm", "rot_mean_deg", "success_5mm_2deg")}, "targets": targets})
    rows[1]["decision"] = decision(rows[0], rows[1])
    return rows


def summary(rows: list[dict[str, Any]]) -> str:
    """One line a robot, for the docs (a test holds docs/paper_models.md to it): the paper trunk's and the ``dense``
    network's validation pos [mm] / rot [°] / success, and what validation says.

    Args:
        rows: the record's rows, the ``dense`` network's row before its paper-trunk run's, robot by robot.
    """
    lines = []
    for dense, candidate in zip(rows[0::2], rows[1::2]):
        v, w = candidate["validation"], dense["validation"]
        lines.append(f"- {dense['robot']}: paper trunk {v['pos_mean_mm']:.2f} mm / {v['rot_mean_deg']:.2f}° / "
                     f"{100 * v['success_5mm_2deg']:.1f} %, `dense` {w['pos_mean_mm']:.2f} mm / {w['rot_mean_deg']:.2f}° / "
                     f"{100 * w['success_5mm_2deg']:.1f} % on validation (its best at step {candidate['steps']:,}): {candidate['decision']}")
    return "\n".join(lines)


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table: validation (decides) and test (reports) beside each other."""
    cells = []
    for row in rows:
        v, t = row["validation"], row["test"]
        cells.append([row["robot"], row["network"], f"{row['parameters']:,}", f"{row['steps']:,}", f"{100 * row['done']:.0f} %",
                      f"{v['pos_mean_mm']:.2f} / {v['rot_mean_deg']:.2f} / {100 * v['success_5mm_2deg']:.1f} %",
                      f"{t['pos_mean_mm']:.2f} / {t['rot_mean_deg']:.2f} / {100 * t['success_5mm_2deg']:.1f} %",
                      row.get("decision", "")])
    return harness.markdown_table(["robot", "network", "params", "steps", "of its steps", "validation: pos [mm] / rot [°] / 5 mm & 2°",
                                   "test: pos [mm] / rot [°] / 5 mm & 2°", "validation says"], cells, "llrrrlll") + "\n\n" + summary(rows) + "\n"


def main(argv: list[str] | None = None) -> int:
    from hik_sim.robots import robot_names

    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out="benchmarks/results/paper_trunk")
    harness.add_robots(parser, [], nargs="*", text="robots (default: every robot with a run under --runs)")
    parser.add_argument("--runs", type=Path, default=RUNS, help=f"the training runs' folder (default {RUNS.relative_to(ROOT)})")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="test targets a robot (seed 2024; default 10000)")
    args = parser.parse_args(argv)
    robots = args.robots or [r for r in robot_names() if (args.runs / r / f"{NAME}.safetensors").is_file()]
    if not robots:
        parser.error(f"no run under {args.runs}: train with scripts/train_paper_trunk.py first")
    rows = [row for robot in robots for row in measure(robot, args.targets, args.runs)]
    table = markdown(rows)
    print(table)
    harness.write_record(Path(args.out), "paper_trunk", {"rows": rows}, table, harness.provenance(__file__, argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
