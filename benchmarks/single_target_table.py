"""One target a call with and without the pose table: the controllers' single-target solver, side by side in one run.

For each robot, ``SingleTargetIK`` seeded by its ``single_target_seed_name`` network (cold: no ``q_init``) on
``--targets`` reachable targets (seed 2030, not a benchmark table's), one call a target, back to back (the answers
checked after the timed loop), three ways:

1. no pose table, flip restarts on (``table_seeds=0, flip_restarts=True``);
2. the table, flips kept (``flip_restarts=True``);
3. the default: the table's 4 nearest after the first answer, no flips.

Columns: success within 5 mm & 2°, FK + Jacobian evaluations a target (mean / p99 / max), and the per-call latency
(median, p95, p99, max, mean). The evaluations are machine-independent; the latencies are not (run it quiet).

Output: a Markdown table on stdout and in ``<out>/single_target_table.md``, raw numbers in ``single_target_table.json``.

Usage::

    python benchmarks/single_target_table.py --robots irb120 panda talos g1 --out benchmarks/results/single_target_table
"""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.tolerances import SUCCESS
from hik_sim.learning.data import make_eval_set
from hik_sim.policies import load_pretrained, single_target_seed_name
from hik_sim.robots import get_robot
from hik_sim.solvers.restarts import TABLE_SEEDS
from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan

SEED = 2030
"""The targets' seed: not a benchmark table's (777, 99, 2024)."""

VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("no table, flips", {"table_seeds": 0, "flip_restarts": True}),
    ("table, flips", {"table_seeds": TABLE_SEEDS, "flip_restarts": True}),
    ("table, no flips (default)", {}),
)


def rows_for(robot: str, targets: int) -> list[dict[str, Any]]:
    """One row a variant on one robot."""
    chain = Chain(get_robot(robot))
    batch = make_eval_set(chain, SEED, targets).batch
    name = single_target_seed_name(robot)
    network = load_pretrained(robot, name)
    rows = []
    for label, options in VARIANTS:
        solver = SingleTargetIK(chain, network, plan=SingleTargetPlan(**options))
        solver.solve_one(batch.pos[0].numpy(), batch.quat[0].numpy())  # warm-up, untimed
        times, evals, met = [], [], []
        for i in range(targets):
            pos, quat = batch.pos[i].numpy(), batch.quat[i].numpy()
            start = time.perf_counter()
            result = solver.solve_one(pos, quat)
            times.append(time.perf_counter() - start)
            evals.append(int(result.function_evals[0]))
            met.append(bool(SUCCESS.met(result.pos_err, result.rot_err)[0]))
        ms, ev = 1000 * np.array(times), np.array(evals, dtype=float)
        rows.append({"robot": robot, "variant": label, "seed_network": name, "options": options, "targets": targets,
                     "success": float(np.mean(met)), "evals_mean": float(ev.mean()), "evals_p99": float(np.percentile(ev, 99)),
                     "evals_max": float(ev.max()), "median_ms": float(np.median(ms)), "p95_ms": float(np.percentile(ms, 95)),
                     "p99_ms": float(np.percentile(ms, 99)), "max_ms": float(ms.max()), "mean_ms": float(ms.mean())})
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table."""
    header = ["robot", "single-target solver (seed network)", "targets", "success 5 mm & 2°", "evaluations: mean / p99 / max",
              "latency median / p95 / p99 / max [ms]", "mean [ms]"]
    cells = [[r["robot"], f"{r['variant']} ({r['seed_network']})", r["targets"], f"{100 * r['success']:.2f} %",
              f"{r['evals_mean']:.1f} / {r['evals_p99']:.0f} / {r['evals_max']:.0f}",
              f"{r['median_ms']:.3f} / {r['p95_ms']:.3f} / {r['p99_ms']:.3f} / {r['max_ms']:.3f}", f"{r['mean_ms']:.3f}"] for r in rows]
    return harness.markdown_table(header, cells, "llrrllr") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=f"{harness.RESULTS}/single_target_table")
    harness.add_robots(parser, ["irb120"])
    parser.add_argument("--targets", type=harness.at_least(1), default=3000, help="targets per robot (default 3000)")
    args = parser.parse_args(argv)
    rows = [row for robot in args.robots for row in rows_for(robot, args.targets)]
    table = markdown(rows)
    print(table)
    harness.write_record(args.out, "single_target_table", {"seed": SEED, "rows": rows}, table, harness.provenance(__file__, argv))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
