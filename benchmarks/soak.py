"""Soak: every solver a user can pick, on many targets of four kinds, checked for NaN, limit violations and false successes.

``--solves`` solves (default 100,000) by the batched solvers, shared equally by every robot
(``--robots``, default the IRB120 and the G1 humanoid's left arm), batched solver and kind of
target; all batched solvers of a robot solve the same targets. Four kinds, in equal shares:

- **reachable**: FK of configurations drawn uniformly inside the joint limits
  (:func:`hik_sim.learning.data.make_eval_set` with the soak's own seed);
- **unreachable**: the directions of reachable positions pushed out to 2–4 times the farthest
  reach measured over 20,000 reachable samples (no configuration can get there), with uniformly
  random orientations;
- **singular**: FK of configurations where the Jacobian (rows: linear velocity [m/rad], angular
  velocity × 0.2 m/rad, LM's rotation weight) loses rank. Found by sampling: per target, 8 random
  in-limit configurations each get one random joint set to 0, +π/2 or −π/2 (clamped into its
  limits; these values straighten an elbow or line up a wrist on many arms); the one whose
  smallest singular value (:meth:`~hik_sim.kinematics.chain.Chain.fk_and_jacobian`, 6th singular value)
  is least is kept, then moved 60 projected gradient steps down that singular value (autograd
  through ``torch.linalg.svdvals``), inside the limits. On the IRB120 this ends at the wrist
  singularity (joint 5 at 0, σ ~ 1e-8); on a 7-joint arm, whose Jacobian loses rank only where
  two conditions meet, mostly near one (σ ~ 1e-4 against ~0.04 for a random configuration). The
  JSON records the kept values' median, 90th percentile, largest and share below 1e-6;
- **limit-pinned**: FK of random in-limit configurations with 1 to n joints (a random number,
  random joints) set exactly to their lower or upper limit.

Solvers, built by :func:`hik_sim.solvers.registry.make_solver` as the evaluator builds them (shipped networks through
:func:`hik_sim.policies.load_pretrained`, the hybrid's seed through
:func:`~hik_sim.policies.hybrid_seed_name`): every network shipped for the robot alone
(``NeuralIK``), ``closed_loop`` (``NeuralIK``: its networks, 5 corrections, turned queries), ``hybrid`` (``HybridIK``),
``multistart`` (``MultistartIK``, 10 starts), both again warm-started from a ``q_init`` (random
in-limit joints, as a tracking controller passes its current ones), ``LMRefiner`` from the home
configuration, all
batched over every target in chunks of ``--chunk``; and the single-target path, one Python call per
target through ``SingleTargetIK.solve_one`` (``lm``: no network, 49 restarts; ``hybrid controller``:
the single-target seed network, as the hybrid policy's controller) and ``dm_control``
(``DmControlIK``, one target per call), on a subset: the first ``--single-target`` /
``--dm-control`` targets, split equally over the four kinds, since they run per target in Python.

Checks per solver and kind: no exception; answers of shape (B, n); no NaN or inf in q or in the
reported errors; no joint outside ``chain.limits(torch.float64)`` (zero tolerance: a clamped answer
must be inside); the reported errors match errors recomputed from the answer by an independent FK
(pytorch-kinematics, :func:`hik_sim.kinematics.chain.reference_fk`: within 1e-6 m and 1e-5 rad); success
reported only where the recomputed errors are within the tolerance (5 mm & 2°, with the same
slack); no success on an unreachable target. Any failure makes the exit code 1.

Output: a Markdown table (solver × kind: solves, NaN, limit violations, false successes, success %,
wall time) on stdout and in ``<out>/soak.md`` (after a compact one, a row per solver; "false
successes" there counts error mismatches too), raw numbers in ``<out>/soak.json``.

Usage::

    python benchmarks/soak.py                                   # 100,000 batched solves, irb120 and g1
    python benchmarks/soak.py --solves 400 --single-target 40 --dm-control 8 --robots irb120
"""

from __future__ import annotations

import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain, reference_fk
from hik_sim.robots import RobotSpec, get_robot
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.solvers.ik import IKResult, Tolerance

KINDS: tuple[str, ...] = ("reachable", "unreachable", "singular", "limit_pinned")
SOAK_SEED = 16_000
"""The soak's targets come from their own seeds (SOAK_SEED + kind index), none of the evaluators' or the solvers'."""
POS_SLACK, ROT_SLACK = 1e-6, 1e-5  # [m], [rad]: reported against recomputed errors (two FK implementations, acos near 0)
SINGULAR_CANDIDATES = 8
SINGULAR_STEPS = 60
ROTATION_WEIGHT = 0.2  # [m/rad], as LMRefiner's


@dataclass
class Targets:
    """One kind of targets: positions (B, 3) [m], quaternions (B, 4) wxyz, float64, base frame."""

    pos: torch.Tensor
    quat: torch.Tensor
    info: dict[str, Any] = field(default_factory=dict)


def _random_quaternions(count: int, generator: torch.Generator) -> torch.Tensor:
    quat = torch.randn(count, 4, generator=generator, dtype=torch.float64)
    quat = quat / quat.norm(dim=1, keepdim=True)
    return torch.where(quat[:, :1] < 0, -quat, quat)


def _pose_targets(chain: Chain, q: torch.Tensor, info: dict[str, Any] | None = None) -> Targets:
    pose = chain.fk(q)
    return Targets(pose.pos, pose.quat, info or {})


def smallest_singular_value(chain: Chain, q: torch.Tensor) -> torch.Tensor:
    """(B,) 6th singular value of the Jacobian at ``q`` (B, n), rotation rows weighted by 0.2 m/rad."""
    _, jacobian = chain.fk_and_jacobian(q)
    weights = torch.tensor([1.0, 1.0, 1.0] + [ROTATION_WEIGHT] * 3, dtype=jacobian.dtype)
    return torch.linalg.svdvals(jacobian * weights[None, :, None])[:, min(6, chain.dof) - 1]


def _descend_to_singularity(chain: Chain, q: torch.Tensor, steps: int = SINGULAR_STEPS) -> torch.Tensor:
    """``q`` (B, n) moved down the gradient of the smallest singular value, inside the limits (projected steps)."""
    for _ in range(steps):
        q = q.detach().requires_grad_(True)
        sigma = smallest_singular_value(chain, q)
        (grad,) = torch.autograd.grad(sigma.sum(), q)
        with torch.no_grad():  # a step of at most 0.1 rad, shorter as sigma nears 0
            length = torch.clamp(20 * sigma[:, None], max=1.0) * 0.1
            q = chain.clamp(q - length * grad / grad.norm(dim=1, keepdim=True).clamp_min(1e-12))
    return q.detach()


def make_targets(chain: Chain, kind: str, count: int, seed: int = SOAK_SEED) -> Targets:
    """``count`` targets of one kind (see the module docstring), always the same for a (robot, kind, count, seed)."""
    index = KINDS.index(kind)
    generator = torch.Generator().manual_seed(seed + index)
    lower, upper = chain.limits(torch.float64)
    n = chain.dof
    if kind == "reachable":
        batch = make_eval_set(chain, seed + index, count).batch
        return Targets(batch.pos, batch.quat)
    if kind == "unreachable":
        reach = float(chain.fk(chain.sample(20_000, generator, torch.float64)).pos.norm(dim=1).max())
        direction = chain.fk(chain.sample(count, generator, torch.float64)).pos
        length = direction.norm(dim=1, keepdim=True)
        random_direction = torch.randn(count, 3, generator=generator, dtype=torch.float64)
        direction = torch.where(length > 1e-3, direction, random_direction)  # a position on the base: any direction
        direction = direction / direction.norm(dim=1, keepdim=True)
        distance = reach * (2 + 2 * torch.rand(count, 1, generator=generator, dtype=torch.float64))
        return Targets(direction * distance, _random_quaternions(count, generator), {"farthest_reach_m": reach})
    if kind == "singular":
        candidates = chain.sample(count * SINGULAR_CANDIDATES, generator, torch.float64)
        joint = torch.randint(0, n, (candidates.shape[0],), generator=generator)
        special = torch.tensor([0.0, math.pi / 2, -math.pi / 2], dtype=torch.float64)
        value = special[torch.randint(0, 3, (candidates.shape[0],), generator=generator)]
        rows = torch.arange(candidates.shape[0])
        candidates[rows, joint] = torch.minimum(torch.maximum(value, lower[joint]), upper[joint])
        sigma = torch.cat([smallest_singular_value(chain, part) for part in candidates.split(50_000)])
        best = sigma.view(count, SINGULAR_CANDIDATES).argmin(dim=1)
        q = candidates.view(count, SINGULAR_CANDIDATES, n)[torch.arange(count), best]
        q = torch.cat([_descend_to_singularity(chain, part) for part in q.split(50_000)])
        kept = smallest_singular_value(chain, q)
        return _pose_targets(chain, q, {"sigma_min_median": float(kept.median()), "sigma_min_p90": float(kept.quantile(0.9)),
                                        "sigma_min_max": float(kept.max()), "share_below_1e-6": float((kept < 1e-6).double().mean()),
                                        "sigma_min_random_median": float(sigma.median())})
    if kind == "limit_pinned":
        q = chain.sample(count, generator, torch.float64)
        pinned = torch.randint(1, n + 1, (count,), generator=generator)
        order = torch.rand(count, n, generator=generator).argsort(dim=1)
        chosen = torch.zeros(count, n, dtype=torch.bool)
        chosen.scatter_(1, order, torch.arange(n)[None, :] < pinned[:, None])
        at_upper = torch.rand(count, n, generator=generator) < 0.5
        limit = torch.where(at_upper, upper.expand(count, n), lower.expand(count, n))
        q = torch.where(chosen, limit, q)
        return _pose_targets(chain, q, {"mean_joints_pinned": float(pinned.double().mean())})
    raise HikError(f"unknown target kind {kind!r}; kinds are: {', '.join(KINDS)}")


@dataclass
class Cell:
    """Counts for one (robot, solver, kind)."""

    solves: int = 0
    nan: int = 0
    limit_violations: int = 0
    false_success: int = 0
    error_mismatch: int = 0
    bad_shape: int = 0
    exceptions: int = 0
    successes: int = 0
    wall_s: float = 0.0
    exception_messages: list[str] = field(default_factory=list)
    worst_excursion_rad: float = 0.0

    @property
    def failures(self) -> int:
        return self.nan + self.limit_violations + self.false_success + self.error_mismatch + self.bad_shape + self.exceptions


def check(chain: Chain, result: IKResult, pos: torch.Tensor, quat: torch.Tensor, tolerance: Tolerance, cell: Cell,
          unreachable: bool) -> None:
    """Fold one result's checks into ``cell`` (see the module docstring)."""
    batch = pos.shape[0]
    cell.solves += batch
    q = torch.as_tensor(result.q)
    fields = [torch.as_tensor(getattr(result, name)) for name in ("pos_err", "rot_err", "success")]
    if q.shape != (batch, chain.dof) or any(f.shape != (batch,) for f in fields):
        cell.bad_shape += batch
        return
    q = q.to(torch.float64)
    reported_pos, reported_rot, success = fields[0].double(), fields[1].double(), fields[2].bool()
    finite = torch.isfinite(q).all(dim=1) & torch.isfinite(reported_pos) & torch.isfinite(reported_rot)
    cell.nan += int((~finite).sum())
    lower, upper = chain.limits(torch.float64)
    outside = (q < lower) | (q > upper)
    cell.limit_violations += int(outside.any(dim=1).sum())
    excursion = torch.maximum(lower - q, q - upper).clamp_min(0).nan_to_num(0.0)
    cell.worst_excursion_rad = max(cell.worst_excursion_rad, float(excursion.max()) if excursion.numel() else 0.0)
    cell.successes += int(success.sum())
    ok = finite.clone()
    if bool(ok.any()):
        reached = reference_fk(chain.robot, q[ok])
        pos_err, rot_err = position_error(reached.pos, pos[ok]), rotation_error(reached.quat, quat[ok])
        mismatch = ((pos_err - reported_pos[ok]).abs() > POS_SLACK) | ((rot_err - reported_rot[ok]).abs() > ROT_SLACK)
        cell.error_mismatch += int(mismatch.sum())
        within = (pos_err < tolerance.position + POS_SLACK) & (rot_err < tolerance.rotation + ROT_SLACK)
        false = success[ok] & ~within
        if unreachable:
            false = false | success[ok]
        cell.false_success += int(false.sum())
    cell.false_success += int((success & ~finite).sum())


@dataclass
class Solver:
    """A solver as a user picks it: its label, its path (``batch``, or ``single``: one Python call per target), and
    how it is called; ``single`` and ``dm_control`` solvers get a subset of the targets."""

    label: str
    kind: str
    solve: Callable[[torch.Tensor, torch.Tensor], IKResult]
    single: bool = False
    dm_control: bool = False


def _single(solve_one: Callable[..., IKResult]) -> Callable[[torch.Tensor, torch.Tensor], IKResult]:
    """The per-target path as a batch call: ``solve_one`` on each target in turn (no batching)."""

    def solve(pos: torch.Tensor, quat: torch.Tensor) -> IKResult:
        results = [solve_one(pos[i], quat[i]) for i in range(pos.shape[0])]
        return IKResult(*(torch.cat([torch.as_tensor(getattr(r, name)) for r in results])
                          for name in ("q", "pos_err", "rot_err", "success", "iterations", "fk_evals", "jac_evals")))

    return solve


def _warm(chain: Chain, solve: Callable[..., IKResult]) -> Callable[[torch.Tensor, torch.Tensor], IKResult]:
    """``solve`` given a ``q_init``: random in-limit configurations from the soak's own stream, as a tracking controller's joints."""
    generator = torch.Generator().manual_seed(SOAK_SEED + 100)

    def solve_warm(pos: torch.Tensor, quat: torch.Tensor) -> IKResult:
        return solve(pos, quat, q_init=chain.sample(pos.shape[0], generator, torch.float64))

    return solve_warm


def build_solvers(robot: RobotSpec) -> list[Solver]:
    """Every solver a user can pick for ``robot``, from :func:`hik_sim.solvers.registry.make_solver` as the evaluator builds them."""
    from hik_sim.policies import (closed_loop_extra_names, closed_loop_network_name, hybrid_fallback_name, hybrid_seed_name,
                                  single_target_seed_name)
    from hik_sim.solvers.registry import make_solver, shipped_networks
    from hik_sim.solvers.ik import LMRefiner

    chain = Chain(robot)
    shipped = shipped_networks(robot)
    solvers = [Solver(f"{name} (NeuralIK)", "batch", make_solver(name, robot).solve) for name in shipped]
    if shipped:
        seed = hybrid_seed_name(robot.name) + ("" if (other := hybrid_fallback_name(robot.name)) is None else f", then {other}")
        closed = make_solver("closed_loop", robot)
        networks = " + ".join((closed_loop_network_name(robot.name), *closed_loop_extra_names(robot.name)))
        turns = f", turned ±{abs(closed.first_joint_turns[0]):.2f}" if closed.first_joint_turns else ""
        solvers.append(Solver(f"closed_loop ({networks}, NeuralIK, {closed.corrections} corrections{turns})", "batch", closed.solve))
        hybrid = make_solver("hybrid", robot, batched=True)
        solvers.append(Solver(f"hybrid ({seed} → HybridIK)", "batch", hybrid.solve))
    multistart = make_solver("multistart", robot, batched=True)
    solvers.append(Solver(f"multistart (MultistartIK, {multistart.starts} starts)", "batch", multistart.solve))
    if shipped:  # the tracking path: warm-started from the current joints (here random in-limit ones)
        solvers.append(Solver("hybrid, warm-started (HybridIK, q_init)", "batch", _warm(chain, hybrid.solve)))
    solvers.append(Solver("multistart, warm-started (MultistartIK, q_init)", "batch", _warm(chain, multistart.solve)))
    solvers.append(Solver("LMRefiner (from home)", "batch", LMRefiner(chain).solve))
    solvers.append(Solver("lm (SingleTargetIK.solve_one, 49 restarts)", "single", _single(make_solver("lm", robot).solve_one),
                          single=True))
    if shipped:
        controller = make_solver("hybrid", robot)  # the controller's: SingleTargetIK on its own seed network
        solvers.append(Solver(f"hybrid controller ({single_target_seed_name(robot.name)} → SingleTargetIK.solve_one)", "single",
                              _single(controller.solve_one),
                              single=True))
    solvers.append(Solver("dm_control (DmControlIK, per target)", "single", lambda p, q: _dm_control(robot).solve(p, q),
                          dm_control=True))
    return solvers


_DM: dict[str, Any] = {}


def _dm_control(robot: RobotSpec) -> Any:
    """dm_control's solver on the robot's scene, built once (its scene takes a while)."""
    if robot.name not in _DM:
        from hik_sim.solvers.registry import make_solver

        _DM[robot.name] = make_solver("dm_control", robot)
    return _DM[robot.name]


def soak_robot(robot: RobotSpec, solvers: list[Solver], per_kind: int, single_target: int, dm_control: int, chunk: int,
               progress: bool) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Rows (one per solver × kind) and the targets' description for one robot: ``per_kind`` targets of each kind."""
    chain, tolerance = Chain(robot), Tolerance()
    targets = {kind: make_targets(chain, kind, per_kind) for kind in KINDS}
    rows = []
    for solver in solvers:
        count = per_kind
        if solver.single:
            count = min(per_kind, single_target // len(KINDS))
        elif solver.dm_control:
            count = min(per_kind, dm_control // len(KINDS))
        if count == 0:
            continue
        for kind in KINDS:
            cell = Cell()
            pos, quat = targets[kind].pos[:count], targets[kind].quat[:count]
            step = chunk if not (solver.single or solver.dm_control) else max(1, min(chunk, 250))
            for start in range(0, count, step):
                part_pos, part_quat = pos[start:start + step], quat[start:start + step]
                began = time.perf_counter()
                try:
                    result = solver.solve(part_pos, part_quat)
                except Exception as error:  # noqa: BLE001 - the soak counts every exception as a failure
                    cell.wall_s += time.perf_counter() - began
                    cell.solves += part_pos.shape[0]
                    cell.exceptions += part_pos.shape[0]
                    if len(cell.exception_messages) < 3:
                        cell.exception_messages.append(f"{type(error).__name__}: {error}")
                    continue
                cell.wall_s += time.perf_counter() - began
                check(chain, result, part_pos, part_quat, tolerance, cell, kind == "unreachable")
            row = {"robot": robot.name, "solver": solver.label, "path": solver.kind, "kind": kind, "solves": cell.solves,
                   "nan": cell.nan, "limit_violations": cell.limit_violations, "false_success": cell.false_success,
                   "error_mismatch": cell.error_mismatch, "bad_shape": cell.bad_shape, "exceptions": cell.exceptions,
                   "exception_messages": cell.exception_messages, "success_5mm_2deg": cell.successes / max(1, cell.solves),
                   "worst_excursion_rad": cell.worst_excursion_rad, "wall_s": cell.wall_s, "failures": cell.failures}
            rows.append(row)
            if progress:
                print(f"  {robot.name:8s} {solver.label:55s} {kind:13s} {cell.solves:7d} solves  {cell.wall_s:7.1f} s  "
                      f"{100 * row['success_5mm_2deg']:5.1f} %  failures {cell.failures}", file=sys.stderr, flush=True)
    return rows, {kind: {"count": per_kind, **targets[kind].info} for kind in KINDS}


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table: one row per robot × solver × kind."""
    header = ["robot", "solver", "kind", "solves", "NaN/inf", "limit violations", "false successes", "error mismatches", "exceptions",
              "success 5 mm & 2°", "wall time [s]"]
    cells = [[r["robot"], r["solver"], r["kind"], f"{r['solves']:,}", r["nan"], r["limit_violations"], r["false_success"], r["error_mismatch"],
              r["exceptions"] + r["bad_shape"], f"{100 * r['success_5mm_2deg']:.1f} %", f"{r['wall_s']:.1f}"] for r in rows]
    return harness.markdown_table(header, cells, "lll" + "r" * 8) + "\n"


def compact(rows: list[dict[str, Any]]) -> str:
    """One row per robot × solver: the checks summed over the kinds, success per kind."""
    header = ["robot", "solver", "solves", "NaN/inf", "limit violations", "false successes", "exceptions", "success: reachable", "unreachable",
              "singular", "limit-pinned", "wall time [s]"]
    groups: dict[tuple[str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["robot"], r["solver"]), []).append(r)
    cells = []
    for (robot, solver), group in groups.items():
        total = lambda key: sum(r[key] for r in group)  # noqa: E731
        success = {r["kind"]: f"{100 * r['success_5mm_2deg']:.1f} %" for r in group}
        cells.append([robot, solver, f"{total('solves'):,}", total("nan"), total("limit_violations"), total("false_success") + total("error_mismatch"),
                      total("exceptions") + total("bad_shape"), *(success.get(kind, "—") for kind in KINDS), f"{total('wall_s'):.1f}"])
    return harness.markdown_table(header, cells, "ll" + "r" * 10) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robots(parser, ["irb120", "g1"])
    parser.add_argument("--solves", type=harness.at_least(len(KINDS)), default=100_000,
                        help="solves by the batched solvers in all, shared equally by every robot × batched solver × kind; "
                             "every batched solver of a robot solves the same targets (default 100000)")
    parser.add_argument("--single-target", type=harness.at_least(0), default=2_000,
                        help="targets per robot for each single-target solver, split over the kinds (default 2000)")
    parser.add_argument("--dm-control", type=harness.at_least(0), default=400, help="targets per robot for dm_control (default 400)")
    parser.add_argument("--chunk", type=harness.at_least(1), default=5_000, help="targets per batched call (default 5000)")
    parser.add_argument("--no-progress", action="store_true", help="no per-cell lines on stderr")
    args = parser.parse_args(argv)
    began = time.perf_counter()
    robots = [get_robot(name) for name in args.robots]
    solvers = {robot.name: build_solvers(robot) for robot in robots}
    batched = sum(1 for robot_solvers in solvers.values() for s in robot_solvers if not (s.single or s.dm_control))
    per_kind = math.ceil(args.solves / (batched * len(KINDS)))  # every batched (robot, solver, kind) gets as many
    rows, targets = [], {}
    for robot in robots:
        robot_rows, targets[robot.name] = soak_robot(robot, solvers[robot.name], per_kind, args.single_target, args.dm_control,
                                                     args.chunk, not args.no_progress)
        rows += robot_rows
    table = markdown(rows)
    failures = sum(r["failures"] for r in rows)
    total = sum(r["solves"] for r in rows)
    total_batched = sum(r["solves"] for r in rows if r["path"] == "batch")
    summary = (f"{total:,} solves ({total_batched:,} batched, {total - total_batched:,} one target per call), {sum(r['nan'] for r in rows)} NaN/inf, {sum(r['limit_violations'] for r in rows)} limit "
               f"violations, {sum(r['false_success'] for r in rows)} false successes, {sum(r['error_mismatch'] for r in rows)} "
               f"error mismatches, {sum(r['exceptions'] + r['bad_shape'] for r in rows)} exceptions; "
               f"{time.perf_counter() - began:.0f} s in all")
    print(table)
    print(summary)
    record = {"config": {"robots": args.robots, "solves": args.solves, "single_target": args.single_target,
                         "dm_control": args.dm_control, "chunk": args.chunk, "seed": SOAK_SEED,
                         "pos_slack_m": POS_SLACK, "rot_slack_rad": ROT_SLACK},
              "targets": targets, "total_solves": total, "failures": failures, "rows": rows}
    text = summary + "\n\n" + compact(rows) + "\nPer kind of target:\n\n" + table
    harness.write_record(args.out, "soak", record, text, harness.provenance(__file__, argv), title="Soak")
    if failures:
        print(f"soak FAILED: {failures} failed solves (see the table)", file=sys.stderr)
        return 1
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
