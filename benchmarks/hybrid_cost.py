"""Where the batched hybrid's evaluations go, and what each of its cost options saves, in one run.

For each robot, on ``--targets`` reachable targets of the hybrid table (seed 777), the batched
``HybridIK`` seeded by the robot's ``hybrid_seed_name`` network, built up one option at a time:

1. flip restarts off, all of a several-answer network's answers ranked by FK before LM;
2. flip restarts on (:mod:`hik_sim.kinematics.flips`, with whole-turn restarts);
3. flip restarts on, the first good answer in head order instead of ranking them all
   (``rank_all_answers=False``: ``hik_sim.solvers.answers.first_good_answers``);
4. as 3, each random restart turned about the first joint to face its target (``face_restarts=True``,
   not the default);
5. as 3, a network answer next to one already tried replaced by a random restart
   (``distinct_seeds``): the default where the robot has no fallback network;
6. where the robot has a ``hybrid_fallback_name`` network (the IRB120), as 3 with that network asked for the
   targets none of the seed's answers is good for (``HybridIK(fallback=..., plan=HybridPlan(fallback_after=False))``),
   then as 5 with it asked also for the targets its answers leave short of exact;
7. as 5 (as 6's last where the robot has a fallback network) with the LM's close-start
   damping (``LMRefiner(rules=LMRules(close_damping=CLOSE_DAMPING))``: a start already within 5 mm & 2°, a network's good answer,
   begins at λ = 1e-5 instead of 1e-3);
8. the default: as 7 with the pose table (``table_seeds=TABLE_SEEDS``: a target its first seed leaves
   short of exact runs LM from the 4 configurations of ``hik_sim.solvers.pose_table.PoseTable`` nearest it next) and
   without flip restarts (with the table they no longer pay);
9. the same table, LM and restarts without the network (``TableSeededIK``): what the network is worth.

Rows 1–7 run without the pose table (``table_seeds=0``), rows 1–6 on the LM without its close-start damping
(``close_damping=None``) and rows 1–4 and the first of 6 without ``distinct_seeds`` (``distinct_seeds=0``); every row counts the FK of a checked answer once,
so they cost less than when each option was first measured; the multistart runs on the default LM (its random
starts are almost never within 5 mm & 2°, so the close-start damping leaves it as it was);

with ``--lm-variants``, a second table: the default hybrid and the multistart under other settings of their shared LM
(its stop, iteration cap, stall test and close-start damping; ``LM_VARIANTS``), to show what each setting does to both and to the ratio
between them;

with ``--network CHECKPOINT`` (one robot), the default options seeded by that network instead, alone and with the
shipped seed as its fallback (``HybridIK(fallback=...)``: the targets none of its answers is good for
start from the shipped seed's answers); and beside them our early-stopping multistart-10 (``MultistartIK(starts=10)``, the same LM), the
reference of the goal "≥ 90 % fewer evaluations, ≥ 4× less time". Columns: success at 5 mm & 2°,
exact (0.1 mm & 0.1°), FK + Jacobian evaluations a target (mean / median / p99), the expensive tail
(targets that took ≥ 100 evaluations: their share of targets and of all evaluations), wall time, and
the hybrid's evaluations and time against the multistart's. Evaluations are machine-independent;
times are not (run it quiet to compare them).

Output: a Markdown table on stdout and in ``<out>/hybrid_cost.md``, raw numbers in ``hybrid_cost.json``, and
``hybrid_cost_curves.png``: for each robot, the share of targets that took more than a number of evaluations, for multistart-10,
the hybrid without and with its pose table, and the table without the network.

Usage::

    python benchmarks/hybrid_cost.py --robots irb120 talos --out benchmarks/results/hybrid_cost
    python benchmarks/hybrid_cost.py --robots irb120 --network runs/irb120_behind.best.pt --out benchmarks/results/hybrid_cost/fallback
    python benchmarks/hybrid_cost.py --robots irb120 --lm-variants --out benchmarks/results/hybrid_cost/lm_variants
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.evaluation.experiments import TARGET_SEED
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.tolerances import EXACT, SUCCESS, Tolerance
from hik_sim.learning.checkpoint import load_checkpoint
from hik_sim.learning.data import make_eval_set
from hik_sim.policies import hybrid_fallback_name, hybrid_seed_name, load_hybrid_fallback, load_pretrained
from hik_sim.robots import get_robot
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.learning.network import IKNetwork
from hik_sim.solvers.answers import first_good_answers, head_order
from hik_sim.solvers.base import IKResult
from hik_sim.solvers.hybrid import HybridIK, HybridPlan
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.lm_rules import LMRules
from hik_sim.solvers.restarts import MultistartIK, TableSeededIK
from hik_sim.solvers.lm_rules import MAX_ITERATIONS

TAIL = 100
"""Evaluations a target from which it counts as the expensive tail."""
SLOW = 20
"""Evaluations a target with a good first answer from which its solve counts as slow (the breakdown's)."""

VARIANTS = (
    ("hybrid: flips off, all answers ranked, random restarts",
     {"flip_restarts": False, "rank_all_answers": True, "face_restarts": False, "distinct_seeds": 0.0, "table_seeds": 0}),
    ("hybrid: flips on, all answers ranked, random restarts",
     {"flip_restarts": True, "rank_all_answers": True, "face_restarts": False, "distinct_seeds": 0.0, "table_seeds": 0}),
    ("hybrid: flips on, first good answer, random restarts",
     {"flip_restarts": True, "rank_all_answers": False, "face_restarts": False, "distinct_seeds": 0.0, "table_seeds": 0}),
    ("hybrid: flips on, first good answer, restarts facing the target",
     {"flip_restarts": True, "rank_all_answers": False, "face_restarts": True, "distinct_seeds": 0.0, "table_seeds": 0}),
    ("hybrid: flips on, first good answer, repeated answers replaced, random restarts",
     {"flip_restarts": True, "rank_all_answers": False, "face_restarts": False, "table_seeds": 0}),
)
"""The hybrid's options added one at a time, each run on the LM without its close-start damping (``BEFORE_CLOSE``)."""
BEFORE_CLOSE = {"close_damping": None}
"""The LM without its close-start damping: every start begins at λ = 1e-3, however close."""
NO_TABLE = "hybrid: repeated answers replaced, a close start at λ 1e-5, flips on, no table"
DEFAULT = "hybrid: the default (a close start, the pose table's 4 nearest after the first seed, flips off)"
TABLE_ONLY = "table → LM: the pose table's 4 nearest, no network"
MULTISTART = "multistart-10, stopping early (ours)"
CURVES = {MULTISTART: "multistart-10", NO_TABLE: "hybrid, no table", DEFAULT: "hybrid (default)",
          TABLE_ONLY: "table → LM, no network"}
"""The rows whose evaluations a target :func:`plot_curves` draws, and their short names."""
LM_VARIANTS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("default: stop within 1 µm & 1e-6 rad, 30 iterations, stall 1 % over 8, a close start at λ 1e-5", {}),
    ("every start at λ 1e-3, however close", BEFORE_CLOSE),
    ("stop within 10 µm & 1e-5 rad", {"stop": Tolerance(1e-5, 1e-5)}),
    ("stop within exact (0.1 mm & 0.1°): answers no closer than that", {"stop": EXACT}),
    ("20 iterations", {"max_iterations": 20}),
    ("stall 5 % over 4", {"stall_iterations": 4, "stall_progress": 0.05}),
    ("15 iterations, stall 10 % over 4", {"max_iterations": 15, "stall_iterations": 4, "stall_progress": 0.1}),
)
"""Settings of the LM that the hybrid and the multistart share (``LMRefiner``'s ``max_iterations``, ``stop``: the
:class:`~hik_sim.solvers.lm_rules.LMRules` ``stop_position`` and ``stop_rotation``, and the other ``LMRules`` fields),
for ``--lm-variants``."""


def _refiner(chain: Chain, options: dict[str, Any]) -> LMRefiner:
    """The LM with ``options`` (an ``LM_VARIANTS`` entry's or ``BEFORE_CLOSE``) in place of its defaults."""
    rules = {key: value for key, value in options.items() if key not in ("max_iterations", "stop")}
    if "stop" in options:
        rules.update(stop_position=options["stop"].position, stop_rotation=options["stop"].rotation)
    return LMRefiner(chain, max_iterations=options.get("max_iterations", MAX_ITERATIONS), rules=LMRules(**rules))


def _row(robot: str, solver: str, seed_network: str, result: IKResult) -> dict[str, Any]:
    evals = result.function_evals.double().numpy()
    tail = evals >= TAIL
    return {"robot": robot, "solver": solver, "seed_network": seed_network, "targets": int(evals.size),
            "success": float(result.success.double().mean()),
            "exact": float(EXACT.met(result.pos_err, result.rot_err).double().mean()),
            "evals_mean": float(evals.mean()), "evals_median": float(np.median(evals)),
            "evals_p99": float(np.percentile(evals, 99)), "tail_targets": float(tail.mean()),
            "tail_evals_share": float(evals[tail].sum() / max(evals.sum(), 1.0)), "wall_time_s": float(result.wall_time),
            "nan": bool(torch.isnan(result.q).any())}


def _good_answer(chain: Chain, network: IKNetwork, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
    """(B,) bool: one of the network's answers for targets (B, 3), (B, 4) is within 5 mm & 2° (the hybrid's
    first good answer exists; for a one-answer network, its answer)."""
    several = network.hypotheses > 1
    answers = network.candidates(pos, quat) if several else network.solve(pos, quat)[:, None]
    order = head_order(network) if several else (0,)
    seeds, _ = first_good_answers(chain, chain.clamp(answers.double().cpu()), pos, quat, order, SUCCESS)
    first = chain.fk(seeds[:, 0])
    return SUCCESS.met(position_error(first.pos, pos), rotation_error(first.quat, quat))


def _breakdown(row: dict[str, Any], evals: np.ndarray, good: np.ndarray) -> None:
    """Where a row's evaluations went (added to ``row``): the targets with a good first answer (their share, mean and
    median evaluations; those of them that still took ≥ ``SLOW``: share of targets and of all evaluations) and those
    without one (their mean and their share of all evaluations)."""
    total, slow = max(evals.sum(), 1.0), good & (evals >= SLOW)
    row.update(good_answer_targets=float(good.mean()), good_answer_evals_mean=float(evals[good].mean()) if good.any() else 0.0,
               good_answer_evals_median=float(np.median(evals[good])) if good.any() else 0.0,
               good_answer_slow_targets=float(slow.mean()), good_answer_slow_evals_share=float(evals[slow].sum() / total),
               no_good_answer_evals_mean=float(evals[~good].mean()) if (~good).any() else 0.0,
               no_good_answer_evals_share=float(evals[~good].sum() / total))


def rows_for(robot: str, targets: int, checkpoint: Path | None = None,
             curves: dict[str, np.ndarray] | None = None) -> list[dict[str, Any]]:
    """The multistart's row and the hybrid's variants on one robot, each with its ratios to the multistart
    (and, with ``checkpoint``, the default options seeded by it, alone and with the shipped seed as fallback); the default
    row also says where its evaluations went (:func:`_breakdown`). ``curves``, when given, receives the evaluations of
    each target (targets,) of the rows :data:`CURVES` names, by label (for :func:`plot_curves`)."""
    chain = Chain(get_robot(robot))
    batch = make_eval_set(chain, TARGET_SEED, targets).batch
    name = hybrid_seed_name(robot)
    network = load_pretrained(robot, name)
    refiner, before = LMRefiner(chain), _refiner(chain, BEFORE_CLOSE)
    for lm in (refiner, before):
        lm.solve(batch.pos[:2], batch.quat[:2])  # warm-up, untimed: the compiled LM loads from its cache
    multistart_result = MultistartIK(refiner, starts=10).solve(batch.pos, batch.quat)
    multistart = _row(robot, MULTISTART, "none", multistart_result)
    rows = [multistart]
    if curves is not None:
        curves[MULTISTART] = multistart_result.function_evals.numpy()
    other = hybrid_fallback_name(robot)
    solvers = [(label, name, HybridIK(network, before, plan=HybridPlan(**options))) for label, options in VARIANTS]
    fallback = load_hybrid_fallback(robot) if other is not None else None
    if fallback is not None:
        solvers += [(f"hybrid: flips on, first good answer, {other} where no answer is good, random restarts", name,
                     HybridIK(network, before, fallback=fallback,
                              plan=HybridPlan(fallback_after=False, distinct_seeds=0.0, table_seeds=0, flip_restarts=True))),
                    (f"hybrid: flips on, first good answer, {other} where no answer is good or none reaches exact, repeated "
                     "answers replaced, random restarts", name, HybridIK(network, before, fallback=fallback,
                                                                      plan=HybridPlan(table_seeds=0, flip_restarts=True)))]
    solvers.append((NO_TABLE, name, HybridIK(network, refiner, fallback=fallback, plan=HybridPlan(table_seeds=0, flip_restarts=True))))
    solvers.append((DEFAULT, name, HybridIK(network, refiner, fallback=fallback)))
    solvers.append((TABLE_ONLY, "none", TableSeededIK(refiner)))
    if checkpoint is not None:
        given = load_checkpoint(checkpoint, get_robot(robot))[0]
        solvers += [("hybrid: the default options, random restarts", checkpoint.stem, HybridIK(given, refiner)),
                    (f"hybrid: the default options, {name} as fallback, random restarts", checkpoint.stem,
                     HybridIK(given, refiner, fallback=network))]
    for label, seed_name, solver in solvers:
        result = solver.solve(batch.pos, batch.quat)
        if curves is not None and label in CURVES:
            curves[label] = result.function_evals.numpy()
        row = _row(robot, label, seed_name, result)
        row["evals_reduction_pct"] = 100.0 * (1.0 - row["evals_mean"] / multistart["evals_mean"])
        row["time_speedup"] = multistart["wall_time_s"] / row["wall_time_s"]
        if label == DEFAULT:
            good = _good_answer(chain, network, batch.pos, batch.quat).numpy()
            _breakdown(row, result.function_evals.double().numpy(), good)
        rows.append(row)
    return rows


def plot_curves(curves: dict[str, dict[str, np.ndarray]], path: Path) -> None:
    """One panel a robot: the share of targets (y, log scale) that took more than a number of evaluations (x, log scale),
    the tail where the solvers differ most, a curve for each of :data:`CURVES`'s rows (``curves``: robot → label →
    evaluations of each target); written to ``path`` (PNG)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = min(4, len(curves))
    rows = (len(curves) + columns - 1) // columns
    figure, axes = plt.subplots(rows, columns, figsize=(4.2 * columns, 3.4 * rows), squeeze=False, sharey=True)
    for axis, (robot, by_label) in zip(axes.flat, curves.items()):
        for label, name in CURVES.items():
            if label in by_label:
                evals = np.sort(by_label[label])
                beyond = 1.0 - np.arange(1, evals.size + 1) / evals.size  # the share that took more than evals[i]
                keep = beyond > 0
                axis.step(np.maximum(evals[keep], 1), beyond[keep], where="post", label=f"{name} ({evals.mean():.1f})")
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.set_title(robot)
        axis.set_xlabel("evaluations (FK + Jacobian) a target")
        axis.grid(True, which="both", alpha=0.3)
        axis.legend(fontsize=7, loc="lower left")
    for axis in axes[:, 0]:
        axis.set_ylabel("share of targets taking more")
    for axis in list(axes.flat)[len(curves):]:
        axis.axis("off")
    figure.suptitle("Share of targets that took more than x evaluations (mean a target in brackets):\nthe hybrid with and "
                    "without its pose table, the table without the network, multistart-10", fontsize=9)
    figure.tight_layout()
    figure.savefig(path, dpi=110)
    plt.close(figure)


def lm_rows_for(robot: str, targets: int) -> list[dict[str, Any]]:
    """The registry's hybrid and our multistart-10 on one robot under each of ``LM_VARIANTS``, both with the same LM."""
    chain = Chain(get_robot(robot))
    batch = make_eval_set(chain, TARGET_SEED, targets).batch
    network, other = load_pretrained(robot, hybrid_seed_name(robot)), hybrid_fallback_name(robot)
    fallback = load_hybrid_fallback(robot) if other is not None else None
    rows = []
    for label, options in LM_VARIANTS:
        refiner = _refiner(chain, options)
        refiner.solve(batch.pos[:2], batch.quat[:2])  # warm-up, untimed
        hybrid = HybridIK(network, refiner, fallback=fallback).solve(batch.pos, batch.quat)
        multistart = MultistartIK(refiner, starts=10).solve(batch.pos, batch.quat)
        row: dict[str, Any] = {"robot": robot, "lm": label, "options": {k: (v.position, v.rotation) if isinstance(v, Tolerance) else v
                                                                          for k, v in options.items()}}
        for name, result in (("hybrid", hybrid), ("multistart", multistart)):
            row[f"{name}_evals_mean"] = float(result.function_evals.double().mean())
            row[f"{name}_exact"] = float(EXACT.met(result.pos_err, result.rot_err).double().mean())
            row[f"{name}_success"] = float(result.success.double().mean())
            row[f"{name}_wall_time_s"] = float(result.wall_time)
        row["evals_reduction_pct"] = 100.0 * (1.0 - row["hybrid_evals_mean"] / row["multistart_evals_mean"])
        row["time_speedup"] = row["multistart_wall_time_s"] / row["hybrid_wall_time_s"]
        rows.append(row)
    return rows


def lm_markdown(rows: list[dict[str, Any]]) -> str:
    """The ``--lm-variants`` table."""
    header = ["robot", "LM (shared by both)", "hybrid: evaluations a target, exact", "multistart-10: evaluations a target, exact",
              "hybrid vs multistart-10: evaluations, time"]
    cells = [[r["robot"], r["lm"], f"{r['hybrid_evals_mean']:.2f}, {100 * r['hybrid_exact']:.2f} %",
              f"{r['multistart_evals_mean']:.2f}, {100 * r['multistart_exact']:.2f} %",
              f"−{r['evals_reduction_pct']:.1f} %, {r['time_speedup']:.2f}×"] for r in rows]
    return harness.markdown_table(header, cells, "lllll") + "\n"


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table."""
    header = ["robot", "solver (seed network)", "targets", "success 5 mm & 2°", "exact", "evaluations a target: mean / median / p99",
              f"≥ {TAIL} evaluations: targets, their share of all", "time [s]", "vs multistart-10: evaluations, time"]
    cells = [[r["robot"], f"{r['solver']} ({r['seed_network']})", r["targets"], f"{100 * r['success']:.2f} %", f"{100 * r['exact']:.2f} %",
              f"{r['evals_mean']:.2f} / {r['evals_median']:.0f} / {r['evals_p99']:.0f}",
              f"{100 * r['tail_targets']:.2f} %, {100 * r['tail_evals_share']:.0f} %", f"{r['wall_time_s']:.2f}",
              f"−{r['evals_reduction_pct']:.1f} %, {r['time_speedup']:.2f}×" if "evals_reduction_pct" in r else "—"] for r in rows]
    header_split = ["robot", "good first answer: targets, evaluations mean / median",
                    f"of them ≥ {SLOW} evaluations: targets, their share of all", "no good answer: evaluations mean, their share of all"]
    split = [[r["robot"], f"{100 * r['good_answer_targets']:.1f} %, {r['good_answer_evals_mean']:.2f} / {r['good_answer_evals_median']:.0f}",
              f"{100 * r['good_answer_slow_targets']:.2f} %, {100 * r['good_answer_slow_evals_share']:.0f} %",
              f"{r['no_good_answer_evals_mean']:.2f}, {100 * r['no_good_answer_evals_share']:.0f} %"] for r in rows if "good_answer_targets" in r]
    return (harness.markdown_table(header, cells, "llrrrllrl") + "\n\n"
            "Where the default's evaluations went: the targets one of whose seed network's answers is within 5 mm & 2° "
            f"(a good first answer), those of them that still took ≥ {SLOW} evaluations, and those without one.\n\n"
            + harness.markdown_table(header_split, split, "llll") + "\n")


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=f"{harness.RESULTS}/hybrid_cost")
    harness.add_robots(parser, ["irb120"])
    parser.add_argument("--targets", type=harness.at_least(1), default=5000, help="targets per robot (default 5000)")
    parser.add_argument("--network", type=Path, default=None, metavar="CHECKPOINT",
                        help="a checkpoint of the one robot given: rows seeded by it, alone and with the shipped seed as fallback")
    parser.add_argument("--lm-variants", action="store_true",
                        help="also the default hybrid and multistart-10 under other settings of their shared LM (a second table)")
    args = parser.parse_args(argv)
    if args.network is not None and len(args.robots) != 1:
        parser.error("--network is a checkpoint of one robot: give one --robots name")
    curves: dict[str, dict[str, np.ndarray]] = {robot: {} for robot in args.robots}
    rows = [row for robot in args.robots for row in rows_for(robot, args.targets, args.network, curves[robot])]
    table = markdown(rows)
    lm_rows = [row for robot in args.robots for row in lm_rows_for(robot, args.targets)] if args.lm_variants else []
    if lm_rows:
        table += "\nThe default hybrid and multistart-10 under other settings of the LM they share:\n\n" + lm_markdown(lm_rows)
    print(table)
    record = {"target_seed": TARGET_SEED, "tail_from_evaluations": TAIL, "rows": rows, "lm_rows": lm_rows}
    harness.write_record(args.out, "hybrid_cost", record, table, harness.provenance(__file__, argv))
    plot_curves(curves, args.out / "hybrid_cost_curves.png")
    print(f"wrote {args.out / 'hybrid_cost_curves.png'}", file=sys.stderr)
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
