"""Seed networks for the single-target LM, side by side: what each costs and what it buys.

One target at a time the seed's forward pass is paid by that one target, so the seed of
:class:`~hik_sim.solvers.ik.SingleTargetIK` (a controller's ``hybrid``) must be cheap as well as good.
For every robot and every candidate seed (a shipped network's name, a checkpoint path, where
``{robot}`` stands for the robot's name, or ``none``: the same LM and restarts from the home
configuration without a network; a seed a robot lacks is skipped):

- ``params``: the network's weights; ``trained``: its training time over its lineage (continuations included);
- ``forward µs``: :meth:`FastIKNetwork.solve <hik_sim.learning.fast_network.FastIKNetwork.solve>`
  on one pose, one thread, median of ``--calls`` calls cycling over the targets (after warm-up);
- the network alone on the fixed test targets (``--test-targets``, seed 2024): mean position [mm]
  and rotation [°] error, success at 5 mm & 2°; and its success asked turned about the first joint
  for the targets its answers miss (``NeuralIK(..., first_joint_turns=FirstJointSymmetry.default_turns)``,
  no correction, no solver);
- the seeded single-target LM (``make_solver("hybrid", robot, network=seed)``; ``none``:
  ``make_solver("lm", robot)``), network-first, one target a call on ``--targets`` reachable targets
  (seed ``TARGET_SEED + 1``, the targets of ``ik_bench.py``'s single-target rows): median and p95
  latency [ms], success at 5 mm & 2°, and FK + Jacobian evaluations a target (the choice among a
  network's answers included);
- with ``--batched-targets N``, the batched hybrid it seeds (``make_solver("hybrid", robot, batched=True,
  network=seed)``: :class:`~hik_sim.solvers.ik.HybridIK`, its default restarts; ``none``: no row) on
  ``N`` reachable targets of ``ik_bench.py``'s paper table (seed ``TARGET_SEED``): success at 5 mm & 2° and FK + Jacobian evaluations a target,
  the choice among answers included (the hybrid-IK paper's count; its time is ``ik_bench.py``'s to measure).

Every timed path runs on one thread (``torch.set_num_threads(1)``); run it on a quiet machine.
Output: a Markdown table on stdout and in ``<out>/seed_study.md``, raw numbers in
``<out>/seed_study.json``.

Usage::

    python benchmarks/seed_study.py --robots irb120 --seeds mlp_seed harmoatt none
    python benchmarks/seed_study.py --robots irb120 g1 --seeds mlp_seed runs/seed/{robot}/harmoatt_seed.best.pt none
    python benchmarks/seed_study.py --robots irb120 --seeds harmoatt_4answers runs/a.pt --batched-targets 5000
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.evaluation.experiments import TARGET_SEED, TEST_SEED
from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry
from hik_sim.learning.checkpoint import Card, load_checkpoint
from hik_sim.learning.data import make_eval_set
from hik_sim.learning.fast_network import FastIKNetwork
from hik_sim.learning.network import IKNetwork
from hik_sim.policies import load_pretrained
from hik_sim.robots import get_robot
from hik_sim.solvers.ik import REPORT_TOLERANCES, NeuralIK
from hik_sim.solvers.registry import make_solver, shipped_networks

NO_NETWORK = "none"


def load_seed(robot_name: str, seed: str) -> tuple[IKNetwork, Card]:
    """A candidate seed and its card: a shipped network's name, or a checkpoint path (``{robot}`` replaced)."""
    if seed.endswith((".pt", ".safetensors")):
        return load_checkpoint(seed.format(robot=robot_name), get_robot(robot_name))
    network = load_pretrained(robot_name, seed)
    return network, network.card


def available(robot_name: str, seed: str) -> bool:
    """Whether ``seed`` exists for ``robot_name`` (a shipped network or checkpoint some robots lack is skipped, and said)."""
    if seed == NO_NETWORK:
        return True
    exists = (Path(seed.format(robot=robot_name)).is_file() if seed.endswith((".pt", ".safetensors"))
              else seed in shipped_networks(get_robot(robot_name)))
    if not exists:
        print(f"seed_study: {robot_name} has no {seed}; skipped", file=sys.stderr)
    return exists


def forward_us(network: IKNetwork, pos: np.ndarray, quat: np.ndarray, calls: int) -> float:
    """Median time [µs] of the fast forward pass on one pose (its choice among answers included), poses (N, 3), (N, 4)."""
    fast = FastIKNetwork.from_network(network)
    for i in range(min(20, len(pos))):
        fast.solve(pos[i], quat[i])
    times = []
    for k in range(calls):
        i = k % len(pos)
        start = time.perf_counter()
        fast.solve(pos[i], quat[i])
        times.append(time.perf_counter() - start)
    return 1e6 * statistics.median(times)


def alone(network: IKNetwork, chain: Chain, test_targets: int) -> dict[str, Any]:
    """The network alone on the test targets, plain (``alone``: :func:`evaluate_network`'s metrics) and asked turned
    (``alone_turned``: mean errors [mm, °], success at 5 mm & 2° and FK per target)."""
    test = make_eval_set(chain, TEST_SEED, test_targets)
    turned = NeuralIK(network, chain, first_joint_turns=FirstJointSymmetry(chain).default_turns).solve(test.batch.pos,
                                                                                                       test.batch.quat)
    return {"alone": evaluate_network(network, chain, test),
            "alone_turned": {"pos_mean_mm": float(1000 * turned.pos_err.mean()),
                             "rot_mean_deg": float(torch.rad2deg(turned.rot_err).mean()),
                             "success_5mm_2deg": float(turned.success.double().mean()),
                             "fk_per_target": float(turned.fk_evals.double().mean())}}


def batched(network: IKNetwork, chain: Chain, targets: int) -> dict[str, Any]:
    """The batched hybrid seeded by ``network`` (``make_solver("hybrid", ..., batched=True)``) on ``targets``
    reachable targets (seed ``TARGET_SEED``): success at 5 mm & 2° and evaluations (FK + Jacobian) a target."""
    batch = make_eval_set(chain, TARGET_SEED, targets).batch
    result = make_solver("hybrid", chain.robot, network=network, batched=True).solve(batch.pos, batch.quat)
    return {"targets": targets, "success_5mm_2deg": float(result.success.double().mean()),
            "evals_per_target": float(result.function_evals.double().mean())}


def measure(robot_name: str, seed: str, targets: int, test_targets: int, calls: int,
            batched_targets: int = 0) -> dict[str, Any]:
    """One robot's row for one candidate seed (see the module's list)."""
    robot = get_robot(robot_name)
    chain = Chain(robot)
    batch = make_eval_set(chain, TARGET_SEED + 1, targets).batch
    pos, quat = batch.pos.numpy(), batch.quat.numpy()
    path = Path(seed.format(robot=robot_name))
    label = f"{path.parent.name}/{path.stem}" if seed.endswith((".pt", ".safetensors")) else seed
    row: dict[str, Any] = {"robot": robot_name, "seed": label, "source": seed}
    if seed == NO_NETWORK:
        solver = make_solver("lm", robot)
        row.update(params=0, forward_us=None, alone=None, alone_turned=None, batched=None)
    else:
        network, card = load_seed(robot_name, seed)
        solver = make_solver("hybrid", robot, network=network)
        row.update(model=card.model, model_options=dict(card.model_options), hypotheses=network.hypotheses,
                   params=card.parameters,
                   training_minutes=round(card.total_training_seconds / 60, 1), steps=card.total_steps,
                   forward_us=forward_us(network, pos, quat, calls),
                   **alone(network, chain, test_targets),
                   batched=batched(network, chain, batched_targets) if batched_targets > 0 else None)
    solver.solve_one(pos[0], quat[0])  # warm-up: the compiled paths are built on the first call
    times, evals, answers = [], [], []
    for i in range(targets):
        start = time.perf_counter()
        result = solver.solve_one(pos[i], quat[i])
        times.append(time.perf_counter() - start)
        evals.append(int(result.function_evals[0]))  # FK + Jacobian, the hybrid-IK paper's count
        answers.append(result.q[0])
    pose = chain.fk(torch.stack(answers).double())
    met = REPORT_TOLERANCES["5mm_2deg"].met(position_error(pose.pos, batch.pos), rotation_error(pose.quat, batch.quat))
    ms = sorted(1000 * t for t in times)
    row.update(targets=targets, median_ms=statistics.median(ms), p95_ms=ms[int(0.95 * (len(ms) - 1))],
               success_5mm_2deg=float(met.double().mean()), evals_per_target=statistics.fmean(evals))
    return row


def markdown(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (the batched hybrid's columns where a row has them)."""
    with_batched = any(r.get("batched") for r in rows)
    header = ["robot", "seed", "params", "trained [min]", "forward [µs]", "alone: pos / rot mean [mm / °]", "alone: 5 mm & 2°",
              "alone, turned: 5 mm & 2°", "seeded LM: median / p95 [ms]", "success 5 mm & 2°", "evaluations / target"]
    header += ["batched hybrid: success 5 mm & 2°, evaluations / target"] if with_batched else []
    cells = []
    for r in rows:
        plain, turned, hybrid = r["alone"], r["alone_turned"], r.get("batched")
        cells.append([r["robot"], r["seed"], f"{r['params']:,}", r.get("training_minutes", "—"),
                      "—" if r["forward_us"] is None else format(r["forward_us"], ".1f"),
                      "—" if plain is None else format(plain["pos_mean_mm"], ".2f") + " / " + format(plain["rot_mean_deg"], ".2f"),
                      "—" if plain is None else format(100 * plain["success_5mm_2deg"], ".1f") + " %",
                      "—" if turned is None else format(100 * turned["success_5mm_2deg"], ".1f") + " %",
                      f"{r['median_ms']:.3f} / {r['p95_ms']:.3f}", f"{100 * r['success_5mm_2deg']:.1f} %", f"{r['evals_per_target']:.1f}"])
        if with_batched:
            cells[-1].append("—" if not hybrid else f"{100 * hybrid['success_5mm_2deg']:.2f} %, {hybrid['evals_per_target']:.1f}")
    return harness.markdown_table(header, cells, "llrrrlrrlrr" + ("l" if with_batched else "")) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robots(parser, ["irb120"])
    parser.add_argument("--seeds", nargs="+", default=["mlp_seed", "harmoatt", NO_NETWORK],
                        help="shipped network names, checkpoint paths ({robot} = the robot's name) or 'none'")
    parser.add_argument("--targets", type=harness.at_least(1), default=1000, help="single-target solves per seed (default 1000)")
    parser.add_argument("--test-targets", type=harness.at_least(1), default=10_000, help="test targets for the network alone (default 10000)")
    parser.add_argument("--calls", type=harness.at_least(1), default=2000, help="timed forward passes per seed (default 2000)")
    parser.add_argument("--batched-targets", type=harness.at_least(0), default=0,
                        help="targets for the batched hybrid each network seeds (default 0: not measured)")
    args = parser.parse_args(argv)
    with harness.torch_threads(1):
        jobs = [(robot, seed) for robot in args.robots for seed in args.seeds if available(robot, seed)]
        rows = [measure(robot, seed, args.targets, args.test_targets, args.calls, args.batched_targets)
                for robot, seed in tqdm(jobs, desc="seeds", unit="seed")]
        info = harness.provenance(__file__, argv)
    table = markdown(rows)
    print(table)
    harness.write_record(args.out, "seed_study", {"config": {k: str(v) for k, v in vars(args).items()}, "rows": rows}, table, info)
    return 0 if all(r["success_5mm_2deg"] > 0 for r in rows) else 1

if __name__ == "__main__":
    raise SystemExit(main())
