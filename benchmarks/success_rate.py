"""How many reachable targets the hybrid leaves unsolved, with up to 9 or 49 restarts, on many targets.

Batched ``HybridIK`` (the robot's hybrid seed network, with its fallback network where it has one,
→ compiled LM; a target whose answer is short of exact, 0.1 mm & 0.1°, restarts from the networks' other answers, then from random
configurations; 49 is ``HybridIK``'s default, :data:`hik_sim.solvers.RESTARTS`) on reachable
targets (FK of configurations uniform in the limits; seed 99): success within 5 mm & 2° and exact,
the unsolved count, mean evaluations (FK + Jacobian, the choice among a network's answers
included) and time per target, NaN and limit checks.

Usage::

    python benchmarks/success_rate.py --robots irb120 --targets 100000
    python benchmarks/success_rate.py --targets 10000            # every registered robot
    python benchmarks/success_rate.py --robots g1 --restarts 49 --seed-network harmoatt_4answers --out benchmarks/results/seed_choice

Output: a Markdown table on stdout and ``<out>/success_rate.{md,json}`` (default ``benchmarks/results``).
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.kinematics.chain import Chain
from hik_sim.policies import hybrid_fallback_name, hybrid_seed_name, load_hybrid_fallback, load_pretrained
from hik_sim.robots import get_robot
from hik_sim.kinematics.tolerances import EXACT
from hik_sim.solvers.hybrid import HybridIK, HybridPlan
from hik_sim.solvers.lm import LMRefiner

SEED = 99


def measure(robot_name: str, targets: int, restarts: int, seed_network: str | None = None) -> dict[str, Any]:
    """One robot, one restart budget, one seed network (default: the robot's ``hybrid_seed_name``, with its
    ``hybrid_fallback_name`` network where it has one; a seed network given goes alone)."""
    chain = Chain(get_robot(robot_name))
    batch = make_eval_set(chain, SEED, targets).batch
    fallback_name = hybrid_fallback_name(robot_name) if seed_network is None else None
    seed_network = seed_network or hybrid_seed_name(robot_name)
    network = load_pretrained(robot_name, seed_network)
    fallback = None if fallback_name is None else load_hybrid_fallback(robot_name)
    solver = HybridIK(network, LMRefiner(chain), fallback=fallback, plan=HybridPlan(restarts=restarts))
    solver.solve(batch.pos[:2], batch.quat[:2])  # warm-up: the compiled LM's first call
    result = solver.solve(batch.pos, batch.quat)
    lower, upper = chain.limits(torch.float64)
    return {"robot": robot_name, "seed_network": seed_network + ("" if fallback_name is None else f" (then {fallback_name})"),
            "restarts": restarts, "targets": targets,
            "success_5mm_2deg": float(result.success.double().mean()), "unsolved": int((~result.success).sum()),
            "exact_0.1mm_0.1deg": float(result.success_at(EXACT).double().mean()),
            "evals_per_target": float(result.function_evals.double().mean()), "ms_per_target": 1000 * result.wall_time / targets,
            "nan": int((~torch.isfinite(result.q)).any(dim=1).sum()),
            "limit_violations": int(((result.q < lower) | (result.q > upper)).any(dim=1).sum())}


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table."""
    header = ["robot", "seed network", "restarts", "targets", "success 5 mm & 2°", "unsolved", "exact 0.1 mm & 0.1°", "evals / target",
              "ms / target", "NaN", "limit violations"]
    cells = [[r["robot"], r["seed_network"], r["restarts"], f"{r['targets']:,}", f"{100 * r['success_5mm_2deg']:.3f} %", r["unsolved"],
              f"{100 * r['exact_0.1mm_0.1deg']:.3f} %", f"{r['evals_per_target']:.1f}", f"{r['ms_per_target']:.3f}", r["nan"],
              r["limit_violations"]] for r in rows]
    return harness.markdown_table(header, cells, "ll" + "r" * 9) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robots(parser, None, nargs="*")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="targets per robot (default 10000)")
    parser.add_argument("--restarts", type=int, nargs="*", default=[9, 49], help="restart budgets to measure (default 9 49)")
    parser.add_argument("--seed-network", default=None, metavar="NAME",
                        help="a shipped network to seed the hybrid with instead of the robot's hybrid_seed_name")
    args = parser.parse_args(argv)
    rows = [measure(robot, args.targets, restarts, args.seed_network) for robot in args.robots for restarts in args.restarts]
    table = markdown(rows)
    print(table)
    name = "success_rate" if args.targets != 100_000 else "success_rate_100k"
    harness.write_record(args.out, name, {"seed": SEED, "rows": rows}, table, harness.provenance(__file__, argv))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
