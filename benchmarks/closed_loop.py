"""The network alone, open loop and closed on its own error, on every robot's fixed test targets.

Per robot, the network the ``closed_loop`` policy uses (the four-answer network where one is shipped:
``hik_sim.policies.closed_loop_network_name``) answers 10,000 test targets (seed 2024) through
:class:`~hik_sim.solvers.ik.NeuralIK` with K = 0 (open loop), 1, 3 and 5 (the policy's default)
goal-shift corrections of its best answer, and with K = 5 corrections of every one of its answers
(``branches`` = H; a four-answer network); then the policy itself, where it adds the answers of further
networks (``hik_sim.policies.closed_loop_extra_names``: the one-answer HarmoAtt-IK) to that network's,
K = 5 corrections of the best of them all, first without and then with its queries turned about the
first joint for the targets all its answers miss (``first_joint_turns``; the row ``… turned``).
The network alone is also measured open loop with those turned queries (K = 0, the row ``… turned`` just
after the open-loop row): the same weights, no correction, asked up to three poses a target.
No least-squares solver is involved; every FK is counted (the choice among several answers included). Reported: mean / median position [mm] and rotation [°] error,
success at 5 mm & 2°, FK evaluations per target, wall time per 1,000 targets [ms] (batched).

A second table says where the policy's own failures are (its K and answers, without and with the turns): how many of the
targets it misses, their median position and rotation miss, the share of failures (and of
successes) whose answer holds a joint within :data:`PINNED` of a joint limit, the joint pinned most
often, and the share of failing (and of all) targets whose own configuration — the one the target
was made from — lies within :data:`NEAR_LIMIT` of its range from a limit.

Output: a Markdown table on stdout and in ``<out>/closed_loop.md``, raw numbers in
``<out>/closed_loop.json``.

Usage::

    python benchmarks/closed_loop.py
    python benchmarks/closed_loop.py --robots irb120 g1 --targets 2000
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.evaluation.experiments import TEST_SEED
from hik_sim.policies import closed_loop_extra_names, closed_loop_network_name
from hik_sim.robots import get_robot
from hik_sim.solvers.registry import make_solver
from hik_sim.solvers.ik import CLOSED_LOOP_BRANCHES, CLOSED_LOOP_CORRECTIONS, IKResult, NeuralIK

CORRECTIONS = (0, 1, 3, CLOSED_LOOP_CORRECTIONS)
PINNED = 1e-3
"""An answer's joint this close to a limit [rad or m] counts as pinned there (the tanh head saturated)."""
NEAR_LIMIT = 0.02
"""A target's own joint this close to a limit, as a share of the joint's range, counts as near it."""


def failures(robot_name: str, network: str, true_q: torch.Tensor, result: IKResult, lower: torch.Tensor,
             upper: torch.Tensor) -> dict[str, object]:
    """Where a solver's failures are, among its answers ``result.q`` (B, n) to targets made from ``true_q`` (B, n)
    within the joint limits ``lower``, ``upper`` (n,)."""
    q, failed = result.q, ~result.success
    pinned = ((q - lower).abs() < PINNED) | ((upper - q).abs() < PINNED)  # (B, n)
    near = (torch.minimum(true_q - lower, upper - true_q) / (upper - lower) < NEAR_LIMIT).any(dim=1)
    share = lambda mask: float(mask.double().mean()) if mask.numel() else math.nan  # noqa: E731
    counts = pinned[failed].sum(dim=0)
    return {"robot": robot_name, "network": network, "targets": int(q.shape[0]), "failures": int(failed.sum()),
            "failure_pos_median_mm": float(1000 * result.pos_err[failed].quantile(0.5)) if failed.any() else math.nan,
            "failure_rot_median_deg": float(torch.rad2deg(result.rot_err[failed]).quantile(0.5)) if failed.any() else math.nan,
            "failures_pinned": share(pinned[failed].any(dim=1)), "successes_pinned": share(pinned[~failed].any(dim=1)),
            "joint_pinned_most": int(counts.argmax()) + 1 if int(counts.sum()) else None,
            "failures_near_limit": share(near[failed]), "targets_near_limit": share(near)}


def measure(robot_name: str, targets: int, corrections: tuple[int, ...],
            ) -> tuple[list[dict[str, object]], list[dict[str, object]]]:
    """One row per number of corrections of the network's best answer, one for every answer corrected K = max(corrections)
    times (where the network has several), one for the policy where it adds other networks' answers, one for the
    policy with its turned queries; and where the policy's own failures are, without and with them (:func:`failures`)."""
    robot = get_robot(robot_name)
    policy = make_solver("closed_loop", robot)  # the closed_loop policy: its networks, with K = CLOSED_LOOP_CORRECTIONS
    unturned = make_solver("closed_loop", robot)
    unturned.first_joint_turns = ()
    chain, network, name = policy.chain, policy.network, closed_loop_network_name(robot_name)
    policy_name = " + ".join((name, *closed_loop_extra_names(robot_name)))
    batch = make_eval_set(chain, TEST_SEED, targets).batch
    settings = [(k, CLOSED_LOOP_BRANCHES) for k in corrections]
    if network.hypotheses > 1 and max(corrections) > 0:
        settings.append((max(corrections), network.hypotheses))
    solvers = [(name, NeuralIK(network, chain, corrections=k, branches=branches)) for k, branches in settings]
    if 0 in corrections and policy.first_joint_turns:  # the network alone, open loop, its misses asked again turned
        solvers.insert(corrections.index(0) + 1, (f"{name} turned", NeuralIK(network, chain, corrections=0,
                                                                              first_joint_turns=policy.first_joint_turns)))
    if len(policy.networks) > 1:
        solvers.append((policy_name, unturned))
    solvers.append((f"{policy_name} turned", policy))
    rows, own = [], {}  # own: the policy's results without and with the turns, for where its failures are
    for label, solver in solvers:
        result = solver.solve(batch.pos, batch.quat)
        if solver is policy or solver is unturned:
            own[label] = result
        pos_mm, rot_deg = 1000 * result.pos_err, torch.rad2deg(result.rot_err)
        rows.append({"robot": robot_name, "network": label, "corrections": solver.corrections, "branches": solver.branches,
                     "answers": solver.hypotheses, "targets": targets,
                     "pos_mean_mm": float(pos_mm.mean()), "pos_median_mm": float(pos_mm.median()),
                     "rot_mean_deg": float(rot_deg.mean()), "rot_median_deg": float(rot_deg.median()),
                     "success_5mm_2deg": float(result.success.double().mean()),
                     "fk_per_target": float(result.fk_evals.double().mean()),
                     "ms_per_1000": 1000 * result.wall_time / targets * 1000})
    if policy_name not in own:  # one network: the unturned policy is its own row of K corrections, if measured
        own = {policy_name: unturned.solve(batch.pos, batch.quat), **own}
    return rows, [failures(robot_name, label, batch.q, result, *chain.limits(torch.float64)) for label, result in own.items()]


def markdown(rows: list[dict[str, object]], failure_rows: Sequence[dict[str, object]] = ()) -> str:
    """The tables."""
    header = ["robot", "network", "corrections", "answers corrected", "pos mean / median [mm]", "rot mean / median [°]", "success 5 mm & 2°",
              "FK per target", "ms per 1,000 targets"]
    cells = [[r["robot"], r["network"], f"{r['corrections']}{' (open loop)' if r['corrections'] == 0 else ''}",
              "—" if r["corrections"] == 0 else ("best" if r["branches"] == 1 else f"all {r['branches']}"),
              f"{r['pos_mean_mm']:.2f} / {r['pos_median_mm']:.2f}", f"{r['rot_mean_deg']:.2f} / {r['rot_median_deg']:.2f}",
              f"{100 * r['success_5mm_2deg']:.1f} %", f"{r['fk_per_target']:.2f}", f"{r['ms_per_1000']:.0f}"] for r in rows]
    text = harness.markdown_table(header, cells, "llrrllrrr") + "\n"
    if failure_rows:
        header = ["robot", "network", "failures", "failure median pos / rot [mm / °]", "failures pinned", "successes pinned",
                  "joint pinned most", "failing targets near a limit", "all targets near a limit"]
        cells = [[r["robot"], r["network"], f"{r['failures']} of {r['targets']:,}",
                  f"{r['failure_pos_median_mm']:.1f} / {r['failure_rot_median_deg']:.1f}", f"{100 * r['failures_pinned']:.1f} %",
                  f"{100 * r['successes_pinned']:.1f} %", r["joint_pinned_most"] or "—", f"{100 * r['failures_near_limit']:.1f} %",
                  f"{100 * r['targets_near_limit']:.1f} %"] for r in failure_rows]
        text += (f"\nThe policy's failures (its {CLOSED_LOOP_CORRECTIONS} corrections, without and with its turned queries): answers with a "
                 f"joint within {PINNED:g} of a limit (pinned), targets whose own configuration has a joint within {100 * NEAR_LIMIT:g} % "
                 "of its range from a limit (near).\n\n" + harness.markdown_table(header, cells, "llrlrrrrr") + "\n")
    return text


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robots(parser, None, nargs="*")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="test targets per robot (default 10000)")
    parser.add_argument("--corrections", type=harness.at_least(0), nargs="+", default=list(CORRECTIONS),
                        help=f"numbers of corrections to measure (default {' '.join(map(str, CORRECTIONS))})")
    args = parser.parse_args(argv)
    measured = [measure(name, args.targets, tuple(args.corrections)) for name in args.robots]
    rows = [row for robot_rows, _ in measured for row in robot_rows]
    failure_rows = [failure for _, robot_failures in measured for failure in robot_failures]
    table = markdown(rows, failure_rows)
    print(table)
    record = {"config": {k: str(v) for k, v in vars(args).items()}, "rows": rows, "failures": failure_rows}
    harness.write_record(args.out, "closed_loop", record, table, harness.provenance(__file__, argv))
    return 0 if all(math.isfinite(r["pos_mean_mm"]) for r in rows) else 1

if __name__ == "__main__":
    raise SystemExit(main())
