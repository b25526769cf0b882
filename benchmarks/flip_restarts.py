"""Flip restarts side by side: the hybrid solvers with and without them, in the same run.

For each robot, both solvers a user gets from ``make_solver("hybrid", robot)``: the batched
``HybridIK`` (seeded by the robot's ``hybrid_seed_name`` network, with its ``hybrid_fallback_name`` network
where it has one, ``--targets`` reachable targets of
the hybrid table, seed 777) and the single-target ``SingleTargetIK`` (seeded by its
``single_target_seed_name`` network, ``--single-targets`` targets of seed 778), each with
``flip_restarts`` off and on (:mod:`hik_sim.kinematics.flips`). Columns: the robot's flips, success at
5 mm & 2°, exact (0.1 mm & 0.1°), FK + Jacobian evaluations a target (mean / median / p99), wall time.
The evaluations are machine-independent; the times are not (run it quiet to compare them).

Output: a Markdown table on stdout and in ``<out>/flip_restarts.md``, raw numbers in ``flip_restarts.json``.

Usage::

    python benchmarks/flip_restarts.py --robots irb120 panda jvrc1 --out benchmarks/results/flips
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.evaluation.experiments import TARGET_SEED
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.tolerances import EXACT
from hik_sim.learning.data import make_eval_set
from hik_sim.policies import hybrid_fallback_name, hybrid_seed_name, load_hybrid_fallback, load_pretrained, single_target_seed_name
from hik_sim.robots import get_robot
from hik_sim.solvers.base import IKResult
from hik_sim.solvers.hybrid import HybridIK, HybridPlan
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan


def _row(robot: str, solver: str, seed_network: str, flips: bool, triples: tuple[int, ...], result: IKResult) -> dict[str, Any]:
    evals = result.function_evals.double().numpy()
    return {"robot": robot, "solver": solver, "seed_network": seed_network, "flip_restarts": flips, "flips": list(triples),
            "targets": int(evals.size), "success": float(result.success.double().mean()),
            "exact": float(EXACT.met(result.pos_err, result.rot_err).double().mean()),
            "evals_mean": float(evals.mean()), "evals_median": float(np.median(evals)),
            "evals_p99": float(np.percentile(evals, 99)), "wall_time_s": float(result.wall_time)}


def rows_for(robot: str, targets: int, single_targets: int) -> list[dict[str, Any]]:
    """The four rows of one robot (batched and single-target, flips off and on)."""
    chain = Chain(get_robot(robot))
    triples = JointFlips(chain).triples
    rows = []
    batch = make_eval_set(chain, TARGET_SEED, targets).batch
    name, other = hybrid_seed_name(robot), hybrid_fallback_name(robot)
    network = load_pretrained(robot, name)
    fallback = load_hybrid_fallback(robot)
    name += "" if other is None else f" (then {other})"
    for flips in (False, True):
        result = HybridIK(network, LMRefiner(chain), fallback=fallback, plan=HybridPlan(flip_restarts=flips)).solve(batch.pos, batch.quat)
        rows.append(_row(robot, "HybridIK (batched)", name, flips, triples, result))
    single = make_eval_set(chain, TARGET_SEED + 1, single_targets).batch
    name = single_target_seed_name(robot)
    network = load_pretrained(robot, name)
    for flips in (False, True):
        result = SingleTargetIK(chain, network, plan=SingleTargetPlan(flip_restarts=flips)).solve(single.pos, single.quat)
        rows.append(_row(robot, "SingleTargetIK", name, flips, triples, result))
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table."""
    header = ["robot", "solver (seed network)", "flips (first joint)", "flip restarts", "targets", "success 5 mm & 2°", "exact",
              "evaluations a target: mean / median / p99", "time [s]"]
    cells = [[r["robot"], f"{r['solver']} ({r['seed_network']})", r["flips"] or "none", "on" if r["flip_restarts"] else "off", r["targets"],
              f"{100 * r['success']:.2f} %", f"{100 * r['exact']:.2f} %",
              f"{r['evals_mean']:.2f} / {r['evals_median']:.0f} / {r['evals_p99']:.0f}", f"{r['wall_time_s']:.2f}"] for r in rows]
    return harness.markdown_table(header, cells, "llllrrrlr") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=f"{harness.RESULTS}/flips")
    harness.add_robots(parser, ["irb120"])
    parser.add_argument("--targets", type=harness.at_least(1), default=5000, help="batched hybrid targets per robot (default 5000)")
    parser.add_argument("--single-targets", type=harness.at_least(1), default=2000, help="single-target solves per robot (default 2000)")
    args = parser.parse_args(argv)
    rows = [row for robot in args.robots for row in rows_for(robot, args.targets, args.single_targets)]
    table = markdown(rows)
    print(table)
    harness.write_record(args.out, "flip_restarts", {"rows": rows}, table, harness.provenance(__file__, argv))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
