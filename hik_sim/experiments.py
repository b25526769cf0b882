"""The two seed papers' experiments, as functions the benchmarks and the evaluator share.

- :func:`compare_networks`: HarmoAtt-IK against the MLP baseline on one robot (HarmoAtt-IK
  paper): equal parameters (±10 %) and training budget checked, errors and success on the same
  fixed targets, and HarmoAtt-IK's reductions.
- :func:`hybrid_table`: the hybrid-IK paper's comparison on one robot: the network in the full
  joint space, the network with q6 fixed (IRB120), the hybrid (network seed + LM) and
  Conventional-Multistart-10, with function evaluations and time, and the hybrid's reductions.
"""

from __future__ import annotations

from typing import Callable

import torch

from hik_sim.checkpoint import Card
from hik_sim.data import JointSelection, make_eval_set
from hik_sim.errors import HikError
from hik_sim.kinematics import Chain
from hik_sim.network import IKNetwork
from hik_sim.policies import hybrid_seed_name, load_pretrained
from hik_sim.robots import RobotSpec
from hik_sim.solvers import REPORT_TOLERANCES, HybridIK, IKResult, LMRefiner, MultistartIK, NeuralIK
from hik_sim.train import evaluate_network

__all__ = ["TEST_SEED", "TARGET_SEED", "PAPER_IRB120", "check_fair", "compare_networks", "hybrid_table", "reductions",
           "shipped_pair", "summarize"]

TEST_SEED = 2024  # the networks' test set (not the validation set the trainer watched)
TARGET_SEED = 777  # the hybrid table's targets
PAPER_IRB120 = {"hybrid": {"pos_mean_mm": 1.406, "rot_mean_deg": 0.900, "success_5mm_2deg": 0.942},
                "evals_reduction_pct": 95.1, "time_reduction_pct": 82.5}


def check_fair(robot_name: str, cards: dict[str, Card]) -> dict[str, object]:
    """Equal parameter count (±10 %), equal budget (steps over the whole lineage, batch, seed) and
    the same number of hypotheses.

    Raises:
        HikError: the two were not trained on equal terms.
    """
    h, m = cards["harmoatt"], cards["mlp"]
    ratio = m.parameters / h.parameters
    budget = ({k: (h.config[k], m.config[k]) for k in ("batch", "seed")} | {"steps": (h.total_steps, m.total_steps)}
              | {"hypotheses": (h.model_options.get("hypotheses", 1), m.model_options.get("hypotheses", 1))})
    problems = [f"{k}: {a} vs {b}" for k, (a, b) in budget.items() if a != b]
    if not 0.9 <= ratio <= 1.1:
        problems.append(f"parameters {h.parameters} vs {m.parameters}")
    if problems:
        raise HikError(f"{robot_name}: HarmoAtt-IK and MLP were not trained on equal terms ({'; '.join(problems)})")
    return {"parameters": {"harmoatt": h.parameters, "mlp": m.parameters}, "steps": h.total_steps, "batch": h.config["batch"],
            "seed": h.config["seed"], "hypotheses": h.model_options.get("hypotheses", 1),
            "training_seconds": {"harmoatt": h.total_training_seconds, "mlp": m.total_training_seconds}}


def reductions(harmoatt: dict[str, float], mlp: dict[str, float]) -> dict[str, float]:
    """HarmoAtt-IK's gains over the MLP: relative reductions [%] of mean errors, success gains [points]."""
    return {
        "pos_mean_reduction_pct": 100 * (mlp["pos_mean_mm"] - harmoatt["pos_mean_mm"]) / mlp["pos_mean_mm"],
        "rot_mean_reduction_pct": 100 * (mlp["rot_mean_deg"] - harmoatt["rot_mean_deg"]) / mlp["rot_mean_deg"],
        "success_5mm_2deg_gain_pts": 100 * (harmoatt["success_5mm_2deg"] - mlp["success_5mm_2deg"]),
        "success_10mm_20deg_gain_pts": 100 * (harmoatt["success_10mm_20deg"] - mlp["success_10mm_20deg"]),
    }


def compare_networks(robot: RobotSpec, networks: dict[str, tuple[IKNetwork, Card]], targets: int,
                     seed: int = TEST_SEED) -> dict[str, object]:
    """HarmoAtt-IK against the MLP on ``targets`` fixed reachable targets of one robot.

    Args:
        robot: the robot.
        networks: ``{"harmoatt": (network, card), "mlp": (network, card)}``.
        targets: number of test targets.
        seed: seed of the test targets.

    Raises:
        HikError: the pair was not trained on equal terms.
    """
    chain = Chain(robot)
    test = make_eval_set(chain, seed, targets)
    fairness = check_fair(robot.name, {k: card for k, (_, card) in networks.items()})
    metrics = {model: evaluate_network(net, chain, test) for model, (net, _) in networks.items()}
    return {"robot": robot.name, "dof": chain.dof, "targets": targets, "targets_sha256": test.sha256,
            **fairness, "metrics": metrics, "reductions": reductions(metrics["harmoatt"], metrics["mlp"])}


def shipped_pair(robot: RobotSpec) -> dict[str, tuple[IKNetwork, Card]]:
    """The shipped HarmoAtt-IK and MLP networks of a registered robot, with their cards."""
    return {model: (net, net.card) for model in ("harmoatt", "mlp") for net in [load_pretrained(robot.name, model)]}


def summarize(name: str, result: IKResult, count: int) -> dict[str, float | str]:
    """The table row of a solver's result on ``count`` targets."""
    exact = result.success_at(REPORT_TOLERANCES["0.1mm_0.1deg"])
    row: dict[str, float | str] = {
        "solver": name,
        "pos_mean_mm": float(result.pos_err.mean() * 1000),
        "rot_mean_deg": float(torch.rad2deg(result.rot_err).mean()),
        "function_evals": float(result.function_evals.double().mean()),
        "iterations": float(result.iterations.double().mean()),
        "ms_per_target": 1000 * result.wall_time / count,
        "exact_per_second": float(exact.sum()) / result.wall_time,
    }
    for key, tolerance in REPORT_TOLERANCES.items():
        row[f"success_{key}"] = float(result.success_at(tolerance).double().mean())
    return row


def hybrid_table(robot: RobotSpec, targets: int, seed: int = TARGET_SEED) -> dict[str, object]:
    """The hybrid-IK paper's comparison on one robot (shipped networks; q6 fixed at 0 for the IRB120).

    The hybrid is seeded by :func:`~hik_sim.policies.hybrid_seed_name`'s network; where that is
    not ``harmoatt``, that network alone and the hybrid seeded by ``harmoatt`` are rows too.
    """
    chain = Chain(robot)
    batch = make_eval_set(chain, seed, targets).batch
    network = load_pretrained(robot.name, "harmoatt")
    seed_name = hybrid_seed_name(robot.name)
    seed_network = network if seed_name == "harmoatt" else load_pretrained(robot.name, seed_name)
    refiner = LMRefiner(chain)
    solvers: list[tuple[str, Callable[[], IKResult]]] = [
        ("network (full joint space)", lambda: NeuralIK(network, chain).solve(batch.pos, batch.quat))]
    if seed_network is not network and seed_network.hypotheses > 1:  # the hybrid's own seed network, and the hybrid without it
        solvers += [
            (f"network, {seed_network.hypotheses} answers (full joint space)",
             lambda: NeuralIK(seed_network, chain).solve(batch.pos, batch.quat)),
            ("hybrid: 1-answer network + LM", lambda: HybridIK(network, refiner, restarts=9).solve(batch.pos, batch.quat))]
    solvers += [
        ("hybrid: network + LM", lambda: HybridIK(seed_network, refiner, restarts=9).solve(batch.pos, batch.quat)),
        ("multistart-10 LM", lambda: MultistartIK(refiner, starts=10).solve(batch.pos, batch.quat)),
    ]
    if robot.name == "irb120":
        fixed = JointSelection.for_chain(chain, {"joint_6": 0.0})
        fixed_batch = make_eval_set(chain, TARGET_SEED, targets, fixed).batch
        fixed_network = load_pretrained(robot.name, "harmoatt_q6fixed")
        solvers.insert(1, ("network (q6 fixed)", lambda: NeuralIK(fixed_network, chain).solve(fixed_batch.pos, fixed_batch.quat)))
    rows = [summarize(name, run(), targets) for name, run in solvers]
    hybrid, multistart = rows[-2], rows[-1]
    reductions = {
        "evals_reduction_pct": 100 * (1 - hybrid["function_evals"] / multistart["function_evals"]),
        "time_reduction_pct": 100 * (1 - hybrid["ms_per_target"] / multistart["ms_per_target"]),
        "time_speedup": multistart["ms_per_target"] / hybrid["ms_per_target"],
    }
    return {"robot": robot.name, "targets": targets, "rows": rows, "hybrid_vs_multistart": reductions}
