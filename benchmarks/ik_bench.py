"""IK solvers side by side: the hybrid-IK paper's table, and classic solvers people use today.

Part 1 — the paper's table, per robot, on ``--targets`` reachable targets from a fixed seed (FK of
random in-limit configurations; for the q6-fixed row, with joint 6 at 0): the shipped HarmoAtt-IK
network in the full joint space, the network with q6 fixed (IRB120), the hybrid (network seed →
batched LM, up to 49 restarts for targets short of exact: the network's other answers, then
random), and multistart-10 (the same LM from random seeds) in both definitions: ours (a target
stops at its first exact start) and the paper's Conventional-Multistart-10 (all 10 starts run). The hybrid's seed network is
:func:`hik_sim.policies.hybrid_seed_name`'s (on the IRB120 the 4-answer HarmoAtt-IK network; that
network alone and the hybrid seeded by the 1-answer network are rows too). Columns: mean position [mm] and rotation [°] error, success at (5 mm, 2°), (1 mm, 1°) and
(0.1 mm, 0.1°), mean function evaluations (FK + Jacobian) and iterations per target, batched wall
time per target, and exact (0.1 mm & 0.1°) solutions per second; then the hybrid's reductions
against both multistart-10 definitions, beside the paper's published IRB120 figures.

Part 2 — peers, one target per call from the robot's home configuration (``--peer-targets``
targets): hik_sim's single-target path (its seed network, ``single_target_seed_name``: the robot's HarmoAtt-IK → LM →
restarts; the same seeded by the small ``mlp_seed`` where shipped; warm-started from a
configuration 0.05 rad away, as in tracking; from home, then the network's answers, as a controller's first
step; and without the network: home → LM → random restarts), TRAC-IK (``pytracik``), ``optik-py``, dm_control's
``qpos_from_site_pose``, pytorch-kinematics ``PseudoInverseIK`` and ``scipy.optimize.least_squares``
multistart (up to 10 starts): median and p95 latency, success at (5 mm, 2°) and (1 mm, 1°), and
solutions per second (batched where the solver is batched). One target a call, the calls run back to
back and the answers are checked afterwards (checking each answer between calls evicts the caches and
reads up to ~3x higher). Peers come from the ``bench`` extra
(``pip install -e ".[bench]"``); a missing one is reported as such.

Output: Markdown tables on stdout and ``<out>/ik_<robot>.md``/``ik_all.md``, raw numbers in
``<out>/ik_<robot>.json``/``ik_all.json``.

Usage::

    python benchmarks/ik_bench.py --robot irb120 --targets 1000
    python benchmarks/ik_bench.py --all                      # 10,000 targets per robot
    python benchmarks/ik_bench.py --all --peers-only --out benchmarks/results/single_target_peers   # part 2 alone
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path
from typing import Callable

import numpy as np
import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.robots.cli import add_robot_arguments, robot_from_args
from hik_sim.learning.data import make_eval_set
from hik_sim.errors import HikError
from hik_sim.evaluation.experiments import PAPER_IRB120, TARGET_SEED, hybrid_table
from hik_sim.kinematics.chain import Chain, reference_chain
from hik_sim.robots import RobotSpec, get_robot, robot_names
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.policies import single_target_seed_name
from hik_sim.solvers.registry import make_solver, shipped_networks
from hik_sim.solvers.ik import REPORT_TOLERANCES



def _latency_row(name: str, times: list[float], pos_err: list[float], rot_err: list[float],
                 throughput: float | None = None) -> dict[str, float | str]:
    pos, rot = torch.tensor(pos_err, dtype=torch.float64), torch.tensor(rot_err, dtype=torch.float64)
    ms = sorted(1000 * t for t in times)
    return {"solver": name, "targets": len(times), "median_ms": statistics.median(ms), "p95_ms": ms[int(0.95 * (len(ms) - 1))],
            "success_5mm_2deg": float(REPORT_TOLERANCES["5mm_2deg"].met(pos, rot).double().mean()),
            "success_1mm_1deg": float(REPORT_TOLERANCES["1mm_1deg"].met(pos, rot).double().mean()),
            "per_second": throughput if throughput is not None else 1000 / statistics.fmean(ms)}


def _errors(chain: Chain, q: np.ndarray, pos: torch.Tensor, quat: torch.Tensor) -> tuple[float, float]:
    """Position [m] and rotation [rad] error of a peer's answer; a non-finite answer (pytracik can
    return NaN when it fails) is a failure with infinite errors."""
    if not np.isfinite(q).all():
        return math.inf, math.inf
    q_t = chain.clamp(torch.as_tensor(q, dtype=torch.float64).reshape(1, -1))
    pose = chain.fk(q_t)
    return float(position_error(pose.pos, pos[None])), float(rotation_error(pose.quat, quat[None]))


def _single(name: str, chain: Chain, batch, solve: Callable[[int], np.ndarray]) -> dict[str, float | str]:  # noqa: ANN001
    """One target a call, back to back (the answers are checked after the timed loop, so that checking one does not
    evict the next call's data from the caches: checked between calls, the latencies read up to ~3x higher)."""
    times, answers = [], []
    solve(0)  # warm-up
    for i in range(batch.q.shape[0]):
        start = time.perf_counter()
        q = solve(i)
        times.append(time.perf_counter() - start)
        answers.append(np.array(q, dtype=float, copy=True))
    errors = [_errors(chain, q, batch.pos[i], batch.quat[i]) for i, q in enumerate(answers)]
    return _latency_row(name, times, [p for p, _ in errors], [r for _, r in errors])


def peers(robot: RobotSpec, targets: int) -> list[dict[str, object]]:
    """Part 2 for one robot."""
    chain = Chain(robot)
    batch = make_eval_set(chain, TARGET_SEED + 1, targets).batch
    home = np.asarray(robot.home, dtype=float)
    single = make_solver("hybrid", robot)  # the controller's hybrid: SingleTargetIK on the single-target seed network
    single_seed = single_target_seed_name(robot.name)
    no_network = make_solver("lm", robot)  # the same LM and restarts without the network: what the seed must beat
    noise = np.random.default_rng(0).uniform(-0.05, 0.05, size=tuple(batch.q.shape))
    rows: list[dict[str, object]] = [
        _single(f"hik_sim single-target ({single_seed} seed → LM)", chain, batch,
                lambda i: single.solve_one(batch.pos[i], batch.quat[i]).q[0].numpy()),
        _single("hik_sim single-target, warm start (tracking)", chain, batch,
                lambda i: single.solve_one(batch.pos[i], batch.quat[i], q_init=np.clip(batch.q[i].numpy() + noise[i], robot.lower, robot.upper)).q[0].numpy()),
        _single(f"hik_sim single-target, the controller's first step (home → {single_seed} seed → random restarts)", chain, batch,
                lambda i: single.solve_one(batch.pos[i], batch.quat[i], q_init=home).q[0].numpy()),
        _single("hik_sim single-target, no network (home → LM → random restarts)", chain, batch,
                lambda i: no_network.solve_one(batch.pos[i], batch.quat[i]).q[0].numpy()),
    ]
    if "mlp_seed" in shipped_networks(robot) and single_seed != "mlp_seed":  # the small MLP seed, by name
        small = make_solver("hybrid", robot, network="mlp_seed")
        rows.insert(1, _single("hik_sim single-target (mlp_seed seed → LM)", chain, batch,
                               lambda i: small.solve_one(batch.pos[i], batch.quat[i]).q[0].numpy()))
    try:
        import pytracik

        solver = pytracik.TRAC_IK(robot.base_link, robot.ee_link, robot.urdf.read_text(), 0.005, 1e-5, pytracik.SolveType.Speed)

        def trac(i: int) -> np.ndarray:
            p, q = batch.pos[i].tolist(), batch.quat[i].tolist()
            answer = np.asarray(pytracik.ik(solver, home, *p, q[1], q[2], q[3], q[0]))
            # [status, q...]; on failure (status < 0) the joints are uninitialised memory
            return answer[1:] if answer[0] >= 0 else np.full(chain.dof, np.nan)

        rows.append(_single("TRAC-IK (pytracik, Speed, 5 ms)", chain, batch, trac))
    except ImportError:
        rows.append({"solver": "TRAC-IK (pytracik)", "missing": "pip install pytracik"})
    try:
        import optik

        from hik_sim.kinematics.rotations import quaternion_to_matrix

        optik_robot = optik.Robot.from_urdf_file(str(robot.urdf), robot.base_link, robot.ee_link)
        config = optik.SolverConfig()
        matrices = np.tile(np.eye(4), (batch.q.shape[0], 1, 1))
        matrices[:, :3, :3] = quaternion_to_matrix(batch.quat).numpy()
        matrices[:, :3, 3] = batch.pos.numpy()

        def solve_optik(i: int) -> np.ndarray:
            answer = optik_robot.ik(config, matrices[i], home)
            return np.asarray(answer[0] if isinstance(answer, tuple) else answer, dtype=float) if answer is not None else home

        rows.append(_single("optik-py", chain, batch, solve_optik))
    except ImportError:
        rows.append({"solver": "optik-py", "missing": "pip install optik-py"})
    dm = make_solver("dm_control", robot)
    dm_row = _single("dm_control qpos_from_site_pose (1 start)", chain, batch,
                     lambda i: dm.solve(batch.pos[i:i + 1], batch.quat[i:i + 1]).q[0].numpy())
    dm_row["limit_violations"] = dm.solve(batch.pos, batch.quat).extra["limit_violations"]
    rows.append(dm_row)
    rows.append(_pk_pseudo_inverse(robot, chain, batch))
    rows.append(_scipy_multistart(robot, chain, batch))
    return rows


def _pk_pseudo_inverse(robot: RobotSpec, chain: Chain, batch) -> dict[str, object]:  # noqa: ANN001
    import pytorch_kinematics as pk

    serial = reference_chain(robot, torch.float64)
    lower, upper = chain.limits(torch.float64)
    ik = pk.PseudoInverseIK(serial, joint_limits=torch.stack((lower, upper), dim=1), num_retries=10, max_iterations=50,
                            pos_tolerance=1e-3, rot_tolerance=math.radians(1.0), early_stopping_any_converged=True)

    def solve(pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        solution = ik.solve(pk.Transform3d(pos=pos, rot=quat, dtype=torch.float64))
        err = solution.err_pos + solution.err_rot
        return solution.solutions[torch.arange(pos.shape[0]), err.argmin(dim=1)]

    count = min(batch.q.shape[0], 50)
    times, pos_errs, rot_errs = [], [], []
    for i in range(count):
        start = time.perf_counter()
        q = solve(batch.pos[i:i + 1], batch.quat[i:i + 1])[0]
        times.append(time.perf_counter() - start)
        p, r = _errors(chain, q.numpy(), batch.pos[i], batch.quat[i])
        pos_errs.append(p)
        rot_errs.append(r)
    start = time.perf_counter()
    q = solve(batch.pos, batch.quat)
    throughput = batch.q.shape[0] / (time.perf_counter() - start)
    pose = chain.fk(chain.clamp(q))
    row = _latency_row("pytorch-kinematics PseudoInverseIK (10 retries)", times, pos_errs, rot_errs, throughput)
    row["batched_success_1mm_1deg"] = float(REPORT_TOLERANCES["1mm_1deg"].met(position_error(pose.pos, batch.pos),
                                                                              rotation_error(pose.quat, batch.quat)).double().mean())
    return row


def _scipy_multistart(robot: RobotSpec, chain: Chain, batch) -> dict[str, object]:  # noqa: ANN001
    from scipy.optimize import least_squares

    from hik_sim.solvers.single_target import SingleTargetKinematics, SingleTargetLM

    kinematics = SingleTargetKinematics(robot, chain.geometry)
    lower, upper = np.asarray(robot.lower), np.asarray(robot.upper)
    rng = np.random.default_rng(0)
    reference_lm = SingleTargetLM(robot, chain.geometry)

    def solve(i: int) -> np.ndarray:
        pos, quat = batch.pos[i].numpy(), batch.quat[i].numpy()

        def residual(q: np.ndarray) -> np.ndarray:
            return -reference_lm.errors(kinematics.fk(q), pos, quat)[0]  # the same residual as hik_sim's LM

        best = None
        for k in range(10):
            x0 = home if k == 0 else rng.uniform(lower, upper)
            answer = least_squares(residual, np.clip(x0, lower, upper), bounds=(lower, upper), method="trf", xtol=1e-10, ftol=1e-10)
            if best is None or answer.cost < best.cost:
                best = answer
            if best.cost < 1e-10:
                break
        return best.x

    home = np.asarray(robot.home, dtype=float)
    count = min(batch.q.shape[0], 100)
    sub = type(batch)(batch.q[:count], batch.pos[:count], batch.quat[:count])
    return _single("scipy least_squares multistart (≤ 10)", chain, sub, solve)


def markdown(tables: list[dict[str, object]], peer_rows: dict[str, list[dict[str, object]]]) -> str:
    """Both parts as Markdown."""
    parts = []
    if tables:  # not --peers-only
        header = ["robot", "solver", "pos mean [mm]", "rot mean [°]", "success 5 mm & 2°", "1 mm & 1°", "0.1 mm & 0.1°", "evals / target",
                  "iterations", "ms / target", "exact solutions / s"]
        cells = [[table["robot"], row["solver"], f"{row['pos_mean_mm']:.3f}", f"{row['rot_mean_deg']:.3f}", f"{100 * row['success_5mm_2deg']:.2f} %",
                  f"{100 * row['success_1mm_1deg']:.2f} %", f"{100 * row['success_0.1mm_0.1deg']:.2f} %", f"{row['function_evals']:.1f}",
                  f"{row['iterations']:.1f}", f"{row['ms_per_target']:.3f}", f"{row['exact_per_second']:,.0f}"]
                 for table in tables for row in table["rows"]]
        parts.append(harness.markdown_table(header, cells, "ll" + "r" * 9))
        header = ["robot", "hybrid vs multistart-10 (ours: a target stops at its first exact start): evaluations", "time", "speed-up",
                  "hybrid vs Conventional-Multistart-10 (paper: all 10 starts): evaluations", "time", "speed-up"]
        cells = []
        for table in tables:
            r, p = table["hybrid_vs_multistart"], table["hybrid_vs_paper_multistart"]
            cells.append([table["robot"], f"{-r['evals_reduction_pct']:+.1f} %", f"{-r['time_reduction_pct']:+.1f} %", f"{r['time_speedup']:.1f}×",
                          f"{-p['evals_reduction_pct']:+.1f} %", f"{-p['time_reduction_pct']:+.1f} %", f"{p['time_speedup']:.1f}×"])
            if "small_seed_hybrid_vs_multistart" in table:
                r = table["small_seed_hybrid_vs_multistart"]
                cells.append([f"{table['robot']}, hybrid seeded by mlp_seed", f"{-r['evals_reduction_pct']:+.1f} %",
                              f"{-r['time_reduction_pct']:+.1f} %", f"{r['time_speedup']:.1f}×", "", "", ""])
        cells.append(["paper (IRB120)", "", "", "", f"−{PAPER_IRB120['evals_reduction_pct']} %", f"−{PAPER_IRB120['time_reduction_pct']} %", ""])
        parts.append(harness.markdown_table(header, cells, "l" + "r" * 6))
    if peer_rows:
        header = ["robot", "solver (one target per call)", "median [ms]", "p95 [ms]", "success 5 mm & 2°", "1 mm & 1°", "solutions / s"]
        cells = []
        for robot, rows in peer_rows.items():
            for row in rows:
                if "missing" in row:
                    cells.append([robot, row["solver"], f"not installed ({row['missing']})", "", "", "", ""])
                    continue
                note = f" ({row['limit_violations']} answers outside the limits)" if "limit_violations" in row else ""
                cells.append([robot, f"{row['solver']}{note}", f"{row['median_ms']:.3f}", f"{row['p95_ms']:.3f}",
                              f"{100 * row['success_5mm_2deg']:.1f} %", f"{100 * row['success_1mm_1deg']:.1f} %", f"{row['per_second']:,.0f}"])
        parts.append(("" if tables else "\n") + harness.markdown_table(header, cells, "ll" + "r" * 5))
        ratios = cold_against_trac_ik(peer_rows)
        if ratios:
            header = ["robot", "cold single-target median / TRAC-IK's (same run; robots where TRAC-IK solves ≥ 50 %)"]
            parts.append(harness.markdown_table(header, [[robot, f"{ratio:.2f}×"] for robot, ratio in ratios.items()], "lr"))
    return "\n\n".join(parts) + "\n"


def cold_against_trac_ik(peer_rows: dict[str, list[dict[str, object]]]) -> dict[str, float]:
    """Per robot where TRAC-IK works (solves at least half the targets): the median of hik_sim's cold single-target
    solve (the robot's seed network → LM) over TRAC-IK's median in the same run."""
    ratios = {}
    for robot, rows in peer_rows.items():
        ours = next((r for r in rows if str(r["solver"]).startswith("hik_sim single-target (") and "mlp_seed" not in str(r["solver"])
                     and "median_ms" in r), None)
        trac = next((r for r in rows if str(r["solver"]).startswith("TRAC-IK") and "median_ms" in r), None)
        if ours is not None and trac is not None and float(trac["success_5mm_2deg"]) >= 0.5:  # type: ignore[arg-type]
            ratios[robot] = float(ours["median_ms"]) / float(trac["median_ms"])  # type: ignore[arg-type]
    return ratios


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    add_robot_arguments(parser)
    parser.add_argument("--all", action="store_true", help="every registered robot")
    parser.add_argument("--targets", type=harness.at_least(1), default=10_000, help="targets for the paper's table (default 10000)")
    parser.add_argument("--peer-targets", type=harness.at_least(1), default=300, help="targets for the single-target peers (default 300)")
    parser.add_argument("--no-peers", action="store_true", help="skip part 2")
    parser.add_argument("--peers-only", action="store_true", help="skip part 1 (the single-target paths beside the peers only)")
    parser.add_argument("--threads", type=harness.at_least(1), default=None,
                        help="threads for torch and the compiled LM (default: as the libraries start, all cores)")
    args = parser.parse_args(argv)
    if args.threads is not None:
        torch.set_num_threads(args.threads)
        try:
            import numba

            numba.set_num_threads(min(args.threads, numba.config.NUMBA_NUM_THREADS))
        except ImportError:
            pass
    try:
        robots = [get_robot(n) for n in robot_names()] if args.all else [robot_from_args(args)]
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    tables, peer_rows = [], {}
    for robot in robots:
        if not args.peers_only:
            print(f"{robot.name}: paper table on {args.targets} targets", file=sys.stderr, flush=True)
            tables.append(hybrid_table(robot, args.targets))
        if not args.no_peers:
            print(f"{robot.name}: peers on {args.peer_targets} targets", file=sys.stderr, flush=True)
            peer_rows[robot.name] = peers(robot, args.peer_targets)
    text = markdown(tables, peer_rows)
    print(text)
    stem = ("peers_all" if args.peers_only else "ik_all") if args.all else f"ik_{robots[0].name}"
    record = {"targets": args.targets, "peer_targets": args.peer_targets, "paper_irb120": PAPER_IRB120, "tables": tables, "peers": peer_rows,
              "cold_single_target_over_trac_ik": cold_against_trac_ik(peer_rows)}
    harness.write_record(args.out, stem, record, text, harness.provenance(__file__, argv))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
