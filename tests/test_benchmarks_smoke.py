"""Smoke test of benchmarks/kinematics_bench.py: a --quick run writes the expected JSON."""

from __future__ import annotations

import importlib.util
import json
import shutil
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from hik_sim.policies import PRETRAINED_DIR
from hik_sim.solvers.base import IKResult

BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "kinematics_bench.py"

EXPECTED_ROWS = {
    ("fk_float32", "Chain.fk"),
    ("fk_float64", "Chain.fk"),
    ("train_step_float32", "Chain.fk + backward"),
    ("jacobian_float64", "Chain.jacobian"),
    ("single_target_float64", "Chain.fk_and_jacobian (1,n)"),
    ("single_target_float64", "SingleTargetKinematics.fk_and_jacobian"),
}


def _load_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("kinematics_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses resolve annotations through sys.modules
    try:
        spec.loader.exec_module(module)
    except BaseException:
        sys.modules.pop(spec.name, None)
        raise
    return module


@pytest.fixture(scope="module")
def bench() -> ModuleType:
    return _load_bench()


def test_quick_run_writes_rows_with_timings_and_agreement(bench: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert bench.main(["--robot", "irb120", "--quick", "--out", str(tmp_path)]) == 0

    record = json.loads((tmp_path / "kinematics_irb120.json").read_text(encoding="utf-8"))
    rows = record["rows"]
    assert {(row["measurement"], row["implementation"]) for row in rows} == EXPECTED_ROWS
    for row in rows:
        assert row["robot"] == "irb120" and row["dof"] == 6
        for side in ("reference", "hik_sim"):
            timing = row[side]
            assert 0 < timing["min_s"] <= timing["median_s"] <= timing["p95_s"], (row["measurement"], side, timing)
            assert timing["calls"] >= 1
        assert row["speedup"] > 0 and row["speedup_min"] > 0
        assert row["agrees"] is True, row
        assert row["agreement"], row["measurement"]
        for key, value in row["agreement"].items():
            if key in ("pos_gap_m", "jac_gap"):
                assert 0 <= value < 1e-6, (row["measurement"], row["implementation"], key, value)
            else:
                assert 0 <= value < 1e-5, (row["measurement"], row["implementation"], key, value)
    assert any("pos_gap_m" in row["agreement"] for row in rows)
    assert any("jac_gap" in row["agreement"] for row in rows)

    provenance = record["provenance"]
    for key in ("command", "platform", "cpu_count", "torch", "mujoco", "pytorch_kinematics", "torch_threads", "date"):
        assert provenance[key], key
    assert provenance["command"].startswith("python benchmarks/kinematics_bench.py --robot irb120 --quick")
    assert record["config"]["quick"] is True

    out = capsys.readouterr().out
    assert "| robot | measurement |" in out
    assert "Unknown attribute" not in out and "Unknown tag" not in out


def test_all_cannot_be_combined_with_robot(bench: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as excinfo:
        bench.main(["--all", "--robot", "irb120", "--quick", "--out", str(tmp_path)])
    assert excinfo.value.code == 2


def test_bad_batch_is_rejected(bench: ModuleType, tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as excinfo:
        bench.main(["--robot", "irb120", "--batch", "0", "--out", str(tmp_path)])
    assert excinfo.value.code == 2


def _load_script(name: str) -> ModuleType:
    spec = importlib.util.spec_from_file_location(name, BENCH.parent / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_ablation_quick_run_trains_fair_pairs_and_writes_tables(tmp_path: Path) -> None:
    ablation = _load_script("ablation")
    argv = ["--robots", "irb120", "--train", "--quick", "--steps", "5", "--targets", "300", "--loss-robots", "irb120",
            "--ablation-steps", "3", "--no-progress", "--out", str(tmp_path)]
    assert ablation.main(argv) == 0
    record = json.loads((tmp_path / "ablation.json").read_text())
    (row,) = record["models"]
    assert row["steps"] == {"harmoatt": 5, "mlp": 5} and row["budget"] == {"kind": "steps", "value": 5.0} and row["targets"] == 300
    params = row["parameters"]
    assert 0.9 <= params["mlp"] / params["harmoatt"] <= 1.1
    for model in ("harmoatt", "mlp"):
        assert 0 <= row["metrics"][model]["success_5mm_2deg"] <= 1 and row["metrics"][model]["pos_mean_mm"] > 0
    expected = 100 * (row["metrics"]["mlp"]["pos_mean_mm"] - row["metrics"]["harmoatt"]["pos_mean_mm"]) / row["metrics"]["mlp"]["pos_mean_mm"]
    assert row["reductions"]["pos_mean_reduction_pct"] == pytest.approx(expected)
    assert [r["variant"] for r in record["loss_ablation"]] == list(ablation.LOSS_VARIANTS)
    assert "HarmoAtt-IK" in (tmp_path / "ablation.md").read_text()


def test_network_tail_agrees_with_the_network_evaluation(tmp_path: Path) -> None:
    from hik_sim.learning.data import make_eval_set
    from hik_sim.evaluation.experiments import TEST_SEED
    from hik_sim.kinematics.chain import Chain
    from hik_sim.policies import load_pretrained
    from hik_sim.robots import get_robot
    from hik_sim.evaluation.metrics import evaluate_network

    tail = _load_script("network_tail")
    assert tail.main(["--networks", "harmoatt", "harmoatt_4answers", "--targets", "400", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "tail_irb120.json").read_text())["rows"]
    chain = Chain(get_robot("irb120"))
    targets = make_eval_set(chain, TEST_SEED, 400)
    for row in rows:  # the same errors as the evaluation every other table uses
        metrics = evaluate_network(load_pretrained("irb120", row["network"]), chain, targets)
        assert row["pos_mean_mm"] == pytest.approx(metrics["pos_mean_mm"], rel=1e-9)
        assert row["rot_mean_deg"] == pytest.approx(metrics["rot_mean_deg"], rel=1e-9)
        assert 0.1 <= row["worst10_share_of_pos_mean"] <= 1  # the worst tenth makes at least a tenth
        assert 0.02 < row["beyond_range_share"] < 0.09  # joint 1 leaves 30° of 360 out
        assert row["beyond_range_pos_mean_mm"] > 0 and 0 <= row["beyond_range_success"] <= 1
        parts = row["beyond_bent_back_share"], row["beyond_facing_share"]
        assert min(parts) > 0 and sum(parts) == pytest.approx(row["beyond_range_share"])  # every such target is one of them
    assert "chosen_counts" not in rows[0] and sum(rows[1]["chosen_counts"]) == 400
    checkpoint = tmp_path / "four.pt"  # a checkpoint path is a network too: the same rows as its shipped name
    shutil.copy(PRETRAINED_DIR / "irb120" / "harmoatt_4answers.safetensors", checkpoint)
    assert tail.main(["--networks", str(checkpoint), "--targets", "400", "--out", str(tmp_path / "path")]) == 0
    from_path = json.loads((tmp_path / "path" / "tail_irb120.json").read_text())["rows"][0]
    assert from_path["network"] == str(checkpoint)
    assert {k: v for k, v in from_path.items() if k != "network"} == {k: v for k, v in rows[1].items() if k != "network"}


def test_inference_bench_quick_run_times_every_path_and_checks_agreement(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hik_sim.learning.fast_network import numba_available

    inference = _load_script("inference_bench")
    networks = ["irb120/mlp", "irb120/harmoatt_4answers"]
    assert inference.main(["--quick", "--networks", *networks, "--no-progress", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "inference_bench.json").read_text())
    assert [row["network"] for row in record["rows"]] == networks
    fast_paths = ["numba", "numpy"] if numba_available() else ["numpy"]
    for row in record["rows"]:
        for path in ["torch", *fast_paths]:
            timing = row["timings"][path]
            assert 0 < timing["min_s"] <= timing["median_s"] <= timing["p95_s"] and timing["calls"] == inference.QUICK.calls
        for path in fast_paths:
            assert row["gaps"][path] < inference.TOLERANCE and row["agrees"][path] is True
        assert row["gaps"]["torch f32"] >= 0 and row["speedup"]["numpy"] > 0
    assert record["rows"][1]["hypotheses"] == 4 and record["provenance"]["torch_threads"] == 1
    assert "| irb120/harmoatt_4answers | " in capsys.readouterr().out


def test_inference_bench_rejects_a_network_that_is_not_shipped(tmp_path: Path) -> None:
    inference = _load_script("inference_bench")
    with pytest.raises(SystemExit) as excinfo:
        inference.main(["--quick", "--networks", "irb120/nope", "--out", str(tmp_path)])
    assert excinfo.value.code == 2


@pytest.mark.slow
def test_soak_quick_run_finds_no_nan_and_no_limit_violation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    soak = _load_script("soak")
    argv = ["--robots", "irb120", "--solves", "160", "--single-target", "8", "--dm-control", "4", "--no-progress",
            "--out", str(tmp_path)]
    assert soak.main(argv) == 0
    record = json.loads((tmp_path / "soak.json").read_text())
    rows = record["rows"]
    assert {row["kind"] for row in rows} == set(soak.KINDS)
    assert {row["solver"].split(" ")[0] for row in rows} >= {"harmoatt", "closed_loop", "hybrid", "multistart", "LMRefiner", "lm",
                                                              "dm_control"}
    for row in rows:
        assert row["solves"] > 0 and row["nan"] == 0 and row["limit_violations"] == 0, row
        assert row["false_success"] == 0 and row["error_mismatch"] == 0 and row["exceptions"] == 0, row
        if row["kind"] == "unreachable":
            assert row["success_5mm_2deg"] == 0, row
    assert record["targets"]["irb120"]["singular"]["sigma_min_median"] < 1e-4  # near a singularity, not a random pose
    assert "| irb120 | hybrid" in capsys.readouterr().out and "| robot | solver | kind |" in (tmp_path / "soak.md").read_text()


def test_soak_counts_a_violation_and_fails() -> None:
    import torch

    from hik_sim.kinematics.chain import Chain
    from hik_sim.robots import get_robot
    from hik_sim.kinematics.tolerances import Tolerance
    from hik_sim.solvers.base import IKResult

    soak = _load_script("soak")
    chain = Chain(get_robot("irb120"))
    targets = soak.make_targets(chain, "reachable", 3)
    lower, _ = chain.limits(torch.float64)
    q = lower.expand(3, -1).clone()
    q[0, 0] -= 1e-12  # outside by a hair: zero tolerance
    q[1, 1] = float("nan")
    pose = chain.fk(chain.clamp(q.nan_to_num(0.0)))
    zero = torch.zeros(3, dtype=torch.float64)
    result = IKResult(q, zero, zero, torch.ones(3, dtype=torch.bool), zero.long(), zero.long(), zero.long())
    cell = soak.Cell()
    soak.check(chain, result, pose.pos, pose.quat, Tolerance(), cell, unreachable=False)
    assert cell.limit_violations == 1 and cell.nan == 1 and cell.false_success >= 1 and cell.failures > 0
    cell = soak.Cell()
    soak.check(chain, result, targets.pos, targets.quat, Tolerance(), cell, unreachable=True)
    assert cell.false_success == 3  # success claimed on an unreachable target (and reported errors that do not match)


def test_learning_curves_quick_run_trains_every_network_under_one_budget(tmp_path: Path) -> None:
    curves = _load_script("learning_curves")
    argv = ["--quick", "--minutes", "0.02", "--robots", "irb120", "--out", str(tmp_path), "--save", str(tmp_path / "nets"),
            "--no-progress"]
    assert curves.main(argv) == 0
    runs = json.loads((tmp_path / "learning_curves.json").read_text())["runs"]
    assert [r["network"] for r in runs] == list(curves.NETWORKS)
    for run in runs:
        assert run["seconds"] >= 1.2 and run["steps"] >= 1 and run["curve"][-1]["step"] == run["steps"]
        assert [p["step"] for p in run["curve"]] == sorted(p["step"] for p in run["curve"])
        assert (tmp_path / "nets" / "irb120" / f"{run['network']}.pt").exists()
    params = {r["network"]: r["parameters"] for r in runs}
    assert params["harmoatt"] == params["harmoatt_no_attention"]
    assert 0.9 <= params["mlp"] / params["harmoatt"] <= 1.1  # parameter-matched
    assert 0.9 <= params["cycleik"] / params["harmoatt"] <= 1.1
    options = {r["network"]: r["model_options"] for r in runs}
    assert options["harmoatt_no_attention"]["attention"] is False and options["harmoatt_map"]["trunk"] == "map"
    table = (tmp_path / "learning_curves.md").read_text()
    assert table.count("| harmoatt") == 3 and (tmp_path / "learning_curves_irb120.png").stat().st_size > 10_000
    assert curves.main(argv) == 0  # a second run keeps the runs already made
    assert len(json.loads((tmp_path / "learning_curves.json").read_text())["runs"]) == len(runs)


def test_closed_loop_benchmark_never_does_worse_than_the_open_loop(tmp_path: Path) -> None:
    closed = _load_script("closed_loop")
    assert closed.main(["--robots", "irb120", "--targets", "300", "--corrections", "0", "2", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "closed_loop.json").read_text())["rows"]
    open_loop, open_turned, best, every, unturned, policy = rows  # IRB120's closed-loop network has four answers: every third row corrects all
    # the policy: 4 + 4 + 1 answers (the hybrid's fallback network and the small MLP beside the four)
    assert [(r["corrections"], r["branches"], r["answers"]) for r in rows] == [(0, 1, 4), (0, 1, 4), (2, 1, 4), (2, 4, 4), (5, 1, 9),
                                                                                (5, 1, 9)]
    assert open_turned["network"] == "harmoatt_4answers turned"  # the network alone, its misses asked again turned
    assert open_turned["success_5mm_2deg"] > open_loop["success_5mm_2deg"] and open_turned["fk_per_target"] > 4
    policy_networks = "harmoatt_4answers + harmoatt_4answers_map + mlp_seed"
    assert unturned["network"] == policy_networks  # the policy: the other networks' answers beside the four
    assert policy["network"] == f"{policy_networks} turned"  # and its turned queries
    assert policy["success_5mm_2deg"] > unturned["success_5mm_2deg"] >= best["success_5mm_2deg"]
    # choosing among four answers, and the behind_turn network's own 8 FK for the 5–8 % of poses beyond joint 1's range
    own = open_loop["fk_per_target"] - 4
    assert 0.02 * 8 < own < 0.15 * 8
    assert 4 + own <= best["fk_per_target"] <= 4 + own + 2 * 9 and 4 + own <= every["fk_per_target"] <= 4 + own + 2 * 4 * 9
    assert every["success_5mm_2deg"] >= best["success_5mm_2deg"] > open_loop["success_5mm_2deg"]
    # corrections ask again only for the misses: the mean error falls (the median target is most often a hit already)
    assert best["pos_mean_mm"] < open_loop["pos_mean_mm"] and best["pos_median_mm"] <= open_loop["pos_median_mm"]
    table = (tmp_path / "closed_loop.md").read_text()
    assert "| irb120 | harmoatt_4answers | 0 (open loop) | — |" in table and "| 2 | all 4 |" in table
    failure, turned = json.loads((tmp_path / "closed_loop.json").read_text())["failures"]  # the policy's own, unturned and turned
    assert 0 < failure["failures"] < 300 * (1 - best["success_5mm_2deg"]) + 1  # five corrections miss no more targets than two
    assert failure["failures_pinned"] > failure["successes_pinned"]  # the misses are where the tanh head pins a limit
    def pinned(row: dict) -> float:  # failures pinned at a limit (a share of none is NaN)
        return row["failures"] * row["failures_pinned"] if row["failures"] else 0.0

    assert turned["failures"] < failure["failures"] and pinned(turned) < pinned(failure)  # the turns reach those
    assert f"| irb120 | {policy_networks} | {failure['failures']} of 300 |" in table
    assert f"| irb120 | {policy_networks} turned | {turned['failures']} of 300 |" in table


def test_the_closed_loop_failure_analysis_counts_pinned_joints_and_targets_near_limits() -> None:
    closed = _load_script("closed_loop")
    lower, upper = torch.tensor([-1.0, 0.0]), torch.tensor([1.0, 2.0])
    q = torch.tensor([[1.0, 1.0], [0.0, 0.0005], [0.2, 0.3], [0.5, 1.5]])  # pinned: joint 1 at its upper, joint 2 at its lower
    true_q = torch.tensor([[0.99, 1.0], [0.0, 1.0], [0.0, 1.99], [0.1, 0.1]])  # near a limit (2 % of the range): 1st, 3rd
    zeros = torch.zeros(4, dtype=torch.int64)
    result = IKResult(q, torch.tensor([0.02, 0.01, 0.001, 0.0]), torch.zeros(4), torch.tensor([False, False, True, True]),
                      zeros, zeros, zeros)
    row = closed.failures("toy", "net", true_q, result, lower, upper)
    assert (row["failures"], row["failures_pinned"], row["successes_pinned"]) == (2, 1.0, 0.0)
    assert row["joint_pinned_most"] in (1, 2) and row["failure_pos_median_mm"] == pytest.approx(15.0)
    assert (row["failures_near_limit"], row["targets_near_limit"]) == (0.5, 0.5)


def test_env_bench_reports_reach_track_and_the_joint_limit_excess(tmp_path: Path) -> None:
    env_bench = _load_script("env_bench")
    argv = ["--robot", "irb120", "--controllers", "lm", "--episodes", "3", "--track-episodes", "1", "--out", str(tmp_path), "--no-progress"]
    assert env_bench.main(argv) == 0
    record = json.loads((tmp_path / "env_irb120.json").read_text())
    (reach,), (track,) = record["reach"], record["track"]
    assert reach["episodes"] == 3 and reach["success_5mm_2deg"] == 1.0  # the LM controller holds every goal
    assert track["pos_rms_mm"] < 3.0
    for row in (reach, track):  # servo targets at the joint-speed limit keep the joints inside (to MuJoCo's soft limits)
        assert 0.0 <= row["joint_limit_excess_max_rad"] < 1e-3
    table = (tmp_path / "env_irb120.md").read_text()
    assert f"| {reach['joint_limit_violations']}; {1000 * reach['joint_limit_excess_max_rad']:.1f} |" in table


def test_env_bench_measures_the_closed_loop_as_it_was_beside_the_policy() -> None:
    env_bench = _load_script("env_bench")
    policy = env_bench.make_controller("jvrc1", "closed_loop")
    best, four, unturned = (env_bench.make_controller("jvrc1", kind) for kind in env_bench.VARIANTS)
    assert policy.solver.nearest_first and four.solver.nearest_first and unturned.solver.nearest_first and not best.solver.nearest_first
    assert policy.solver.hypotheses == unturned.solver.hypotheses == 5 and best.solver.hypotheses == four.solver.hypotheses == 4  # 4 + 1 answers
    assert len(policy.solver.first_joint_turns) == 2
    for variant in (best, four, unturned):
        assert variant.solver.network.card == policy.solver.network.card and variant.solver.corrections == policy.solver.corrections
        assert variant.lead_time == policy.lead_time > 0 and variant.solver.first_joint_turns == ()


def test_closed_loop_networks_builds_the_shipped_policy_as_its_mlp_seed_variant(tmp_path: Path) -> None:
    from hik_sim.solvers.registry import make_solver

    study = _load_script("closed_loop_networks")
    for robot, fallback in (("irb120", ["harmoatt_4answers_map"]), ("jvrc1", [])):
        policy = make_solver("closed_loop", robot)
        variants = {name: study.controller(robot, second).solver for name, second in study.SECOND_NETWORKS.items()}
        chosen = variants["four+mlp_seed"]
        assert [n.card for n in chosen.networks] == [n.card for n in policy.networks]
        assert (chosen.corrections, chosen.nearest_first, chosen.first_joint_turns) == (policy.corrections, policy.nearest_first,
                                                                                        policy.first_joint_turns)
        assert len(variants["four"].networks) == 1 + len(fallback) and len(variants["four+harmoatt"].networks) == 2 + len(fallback)
    assert study.main(["--robots", "jvrc1", "--reach-episodes", "2", "--track-episodes", "1", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "closed_loop_networks.json").read_text())["rows"]
    assert [r["variant"] for r in rows] == list(study.SECOND_NETWORKS) and all(0.0 <= r["reach_success_5mm_2deg"] <= 1.0 for r in rows)
    assert all(0.0 < r["track_pos_rms_mm"] <= r["track_pos_max_mm"] for r in rows)
    assert "| jvrc1 | four+mlp_seed |" in (tmp_path / "closed_loop_networks.md").read_text()


def test_recipe_study_quick_run_changes_one_thing_per_variant_under_one_budget(tmp_path: Path) -> None:
    study = _load_script("recipe_study")
    argv = ["--quick", "--minutes", "0.01", "--robots", "irb120", "--variants", "baseline", "batch_256", "hard_25",
            "--seeds", "1", "--out", str(tmp_path), "--no-progress"]
    assert study.main(argv) == 0
    runs = {r["network"]: r for r in json.loads((tmp_path / "recipe_study.json").read_text())["runs"]}
    assert set(runs) == {"baseline", "batch_256", "hard_25", "baseline (seed 1)"}
    for run in runs.values():
        assert run["seconds"] >= 0.6 and run["steps"] >= 1 and run["samples"] > 0
        assert 0 <= run["test"]["success_5mm_2deg"] <= 1 and run["test"]["pos_mean_mm"] > 0
    assert runs["batch_256"]["samples"] == runs["batch_256"]["steps"] * 16  # the quick batch, a quarter of 64
    table = (tmp_path / "recipe_study.md").read_text()
    assert "| hard_25 | sampling=hard, tail_fraction=0.25 |" in table and "baseline over 2 seeds" in table
    assert (tmp_path / "recipe_study_irb120.png").stat().st_size > 10_000


def test_ik_bench_quick_run_puts_the_hybrid_beside_multistart_and_the_single_target_paths_beside_the_peers(tmp_path: Path) -> None:
    ik_bench = _load_script("ik_bench")
    assert ik_bench.main(["--robot", "irb120", "--targets", "40", "--peer-targets", "3", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "ik_irb120.json").read_text())
    (table,) = record["tables"]
    rows = {row["solver"]: row for row in table["rows"]}
    hybrid, multistart = rows["hybrid: network + LM"], rows["multistart-10 LM"]
    assert hybrid["success_5mm_2deg"] >= 0.97 and hybrid["function_evals"] < multistart["function_evals"]
    assert table["hybrid_vs_multistart"]["evals_reduction_pct"] > 0
    small = rows["hybrid: mlp_seed + LM"]  # the single-target seed, batched: its own row and reductions
    assert small["success_5mm_2deg"] >= 0.97 and small["function_evals"] < multistart["function_evals"]
    assert table["small_seed_hybrid_vs_multistart"]["evals_reduction_pct"] > 0
    assert "| irb120, hybrid seeded by mlp_seed |" in (tmp_path / "ik_irb120.md").read_text()
    single = {row["solver"]: row for row in record["peers"]["irb120"]}
    for name in ("hik_sim single-target (harmoatt_4answers seed → LM)", "hik_sim single-target (mlp_seed seed → LM)",
                 "hik_sim single-target, warm start (tracking)",
                 "hik_sim single-target, the controller's first step (home → harmoatt_4answers seed → random restarts)",
                 "hik_sim single-target, no network (home → LM → random restarts)"):
        assert single[name]["targets"] == 3 and single[name]["success_5mm_2deg"] == 1.0 and single[name]["median_ms"] > 0
    assert any(name.startswith("TRAC-IK") for name in single)  # measured, or reported as missing
    assert "| irb120 | hik_sim single-target, no network" in (tmp_path / "ik_irb120.md").read_text()


def test_seed_study_puts_each_seed_beside_the_lm_without_one(tmp_path: Path) -> None:
    study = _load_script("seed_study")
    checkpoint = tmp_path / "irb120_seed.pt"
    shutil.copy(PRETRAINED_DIR / "irb120" / "mlp_seed.safetensors", checkpoint)  # a checkpoint path is a seed too
    argv = ["--robots", "irb120", "--seeds", "mlp_seed", str(tmp_path / "{robot}_seed.pt"), "no_such_seed", "none", "--targets", "30",
            "--test-targets", "200", "--calls", "20", "--out", str(tmp_path)]
    assert study.main(argv) == 0
    shipped, from_path, none = json.loads((tmp_path / "seed_study.json").read_text())["rows"]  # the missing seed skipped
    assert (shipped["seed"], from_path["seed"], none["seed"]) == ("mlp_seed", f"{tmp_path.name}/irb120_seed", "none")
    assert shipped["params"] == from_path["params"] > 30_000 and none["params"] == 0
    assert shipped["alone"] == from_path["alone"] and 0 < shipped["alone"]["pos_mean_mm"] < 20  # the same weights, a real seed
    turned = shipped["alone_turned"]  # asked again turned where its answer misses: never worse, one FK more at least there
    assert turned["success_5mm_2deg"] >= shipped["alone"]["success_5mm_2deg"] and turned["fk_per_target"] > 1
    assert none["alone_turned"] is None
    for row in (shipped, from_path, none):
        assert row["success_5mm_2deg"] == 1.0 and row["median_ms"] > 0 and row["evals_per_target"] >= 2
    assert shipped["evals_per_target"] == from_path["evals_per_target"] < none["evals_per_target"]  # a seed saves the LM work
    assert 0 < shipped["forward_us"] < 1000 and none["forward_us"] is None
    assert "| irb120 | none | 0 | — | — |" in (tmp_path / "seed_study.md").read_text()
    assert shipped["batched"] is None  # not asked for
    argv = ["--robots", "irb120", "--seeds", "harmoatt_4answers", "none", "--targets", "5", "--test-targets", "50",
            "--calls", "5", "--batched-targets", "60", "--out", str(tmp_path / "batched")]
    assert study.main(argv) == 0
    four, none = json.loads((tmp_path / "batched" / "seed_study.json").read_text())["rows"]
    hybrid = four["batched"]  # the batched hybrid it seeds: exact on reachable targets, the choice's 4 FK counted
    assert hybrid["targets"] == 60 and hybrid["success_5mm_2deg"] >= 0.95 and hybrid["evals_per_target"] > 4
    assert none["batched"] is None
    table = (tmp_path / "batched" / "seed_study.md").read_text()
    assert "batched hybrid" in table and table.splitlines()[-1].endswith("| — |")


def test_learning_curves_plots_curves_trained_elsewhere_side_by_side(tmp_path: Path) -> None:
    curves = _load_script("learning_curves")
    header = "step,elapsed_s,pos_mean_mm,rot_mean_deg,success_5mm_2deg\n"
    (tmp_path / "a.curve.csv").write_text(header + "1000,30,20.0,8.0,0.0\n2000,60,12.0,5.0,0.05\n")
    (tmp_path / "b.curve.csv").write_text(header + "1000,10,25.0,9.0,0.0\n3000,30,9.0,4.0,0.1\n")
    assert curves.read_curve(tmp_path / "b.curve.csv")[1] == {"step": 3000.0, "elapsed_s": 30.0, "pos_mean_mm": 9.0,
                                                              "rot_mean_deg": 4.0, "success_5mm_2deg": 0.1}
    argv = ["--robots", "panda", "--hypotheses", "4", "--curves", f"big={tmp_path / 'a.curve.csv'}",
            f"small={tmp_path / 'b.curve.csv'}", "--stem", "size", "--out", str(tmp_path / "out")]
    assert curves.main(argv) == 0
    assert (tmp_path / "out" / "size_panda_4answers.png").stat().st_size > 10_000
    assert not (tmp_path / "out" / "learning_curves.json").exists()  # nothing trained
    with pytest.raises(SystemExit):
        curves.main(["--robots", "panda", "irb120", "--curves", f"big={tmp_path / 'a.curve.csv'}"])  # one robot's curves


def test_flip_restarts_rows_are_the_solvers_own_results(tmp_path: Path) -> None:
    """The table's rows for a robot with a flip (JVRC-1's wrist) and one without (the G1): four rows each,
    flips off and on; without flips the two rows are the same solve."""
    bench = _load_script("flip_restarts")
    assert bench.main(["--robots", "jvrc1", "g1", "--targets", "60", "--single-targets", "20", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "flip_restarts.json").read_text())["rows"]
    assert [(r["robot"], r["flip_restarts"]) for r in rows] == [(robot, flips) for robot in ("jvrc1", "g1")
                                                              for _ in range(2) for flips in (False, True)]
    assert rows[0]["flips"] == [7] and rows[4]["flips"] == []
    for off, on in zip(rows[4::2], rows[5::2]):  # the G1 has no flip: flip_restarts changes nothing
        assert off["evals_mean"] == on["evals_mean"] and off["success"] == on["success"]
    for row in rows:
        assert 0 <= row["exact"] <= row["success"] <= 1 and row["evals_mean"] >= 1
    assert "HybridIK (batched)" in (tmp_path / "flip_restarts.md").read_text()


def test_hybrid_cost_lm_variants_run_both_solvers_with_each_shared_lm_setting(tmp_path: Path) -> None:
    """``--lm-variants``: the registry's hybrid and multistart-10 under each LM setting, both with the same LM: the default
    setting's row repeats the main table's evaluations, and an LM that stops sooner (at exact) costs both of them less."""
    bench = _load_script("hybrid_cost")
    assert bench.main(["--robots", "irb120", "--targets", "40", "--lm-variants", "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "hybrid_cost.json").read_text())
    lm_rows, rows = record["lm_rows"], record["rows"]
    assert [r["lm"] for r in lm_rows] == [label for label, _ in bench.LM_VARIANTS]
    default, at_exact = lm_rows[0], next(r for r in lm_rows if r["options"].get("stop") == [1e-4, pytest.approx(0.0017453292519943296)])
    main = {r["solver"]: r for r in rows}
    assert default["hybrid_evals_mean"] == pytest.approx(main[bench.DEFAULT]["evals_mean"])  # the registry's hybrid, the main table's
    assert default["multistart_evals_mean"] == pytest.approx(main[bench.MULTISTART]["evals_mean"])
    before = next(r for r in lm_rows if r["options"] == {"close_damping": None})  # the LM without its close-start damping
    assert before["hybrid_evals_mean"] > default["hybrid_evals_mean"]
    assert before["multistart_evals_mean"] == pytest.approx(default["multistart_evals_mean"])  # random starts are never that close
    assert at_exact["hybrid_evals_mean"] < default["hybrid_evals_mean"] and at_exact["multistart_evals_mean"] < default["multistart_evals_mean"]
    for r in lm_rows:
        assert 0 <= r["hybrid_exact"] <= r["hybrid_success"] <= 1 and 0 <= r["multistart_exact"] <= 1
        assert r["evals_reduction_pct"] == pytest.approx(100 * (1 - r["hybrid_evals_mean"] / r["multistart_evals_mean"]))
    assert "other settings of the LM they share" in (tmp_path / "hybrid_cost.md").read_text()


def test_hybrid_cost_rows_build_up_the_hybrid_one_option_at_a_time(tmp_path: Path) -> None:
    """The IRB120 (a four-answer seed and a wrist flip): the multistart's row, then the hybrid with flips off,
    flips on, the first good answer, restarts facing their targets, repeated answers replaced, its fallback network (for
    the targets with no good answer; then also for those left short of exact), the close-start damping, the pose table (the
    default), and the table without the network; the tail columns are the solver's own evaluations, the first good answer
    spends fewer of them than ranking all four, and the default row is the registry's hybrid."""
    bench = _load_script("hybrid_cost")
    assert bench.main(["--robots", "irb120", "--targets", "80", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "hybrid_cost.json").read_text())["rows"]
    labels = [r["solver"] for r in rows]
    assert labels[:-5] == [bench.MULTISTART] + [label for label, _ in bench.VARIANTS]
    assert labels[-3:] == [bench.NO_TABLE, bench.DEFAULT, bench.TABLE_ONLY]
    assert "harmoatt_4answers_map where no answer is good or none reaches exact" in labels[-4]
    assert "harmoatt_4answers_map where no answer is good" in labels[-5]
    for row in rows:
        assert 0 <= row["exact"] <= row["success"] <= 1 and row["evals_mean"] >= 1 and not row["nan"]
        assert 0 <= row["tail_targets"] <= row["tail_evals_share"] <= 1
    multistart, _, ranked, first_good, _, _, _, session22, session23, default, table_only = rows
    assert first_good["evals_mean"] < ranked["evals_mean"] < multistart["evals_mean"]
    # the close-start damping: the same answers as exact, fewer LM iterations from the good answers
    assert session23["evals_mean"] < session22["evals_mean"] and session23["exact"] >= session22["exact"] - 1 / 80
    # the pose table: no more evaluations, every target exact; without the network it costs more than with it
    assert default["evals_mean"] <= session23["evals_mean"] and default["exact"] == 1.0
    assert default["evals_mean"] < table_only["evals_mean"] < multistart["evals_mean"] and table_only["seed_network"] == "none"
    from hik_sim.evaluation.experiments import TARGET_SEED
    from hik_sim.kinematics.chain import Chain
    from hik_sim.learning.data import make_eval_set
    from hik_sim.robots import get_robot
    from hik_sim.solvers.registry import make_solver

    chain = Chain(get_robot("irb120"))  # the default row is make_solver's hybrid: the same evaluations on the same targets
    batch = make_eval_set(chain, TARGET_SEED, 80).batch
    assert make_solver("hybrid", "irb120", batched=True).solve(batch.pos, batch.quat).function_evals.double().mean().item() \
        == pytest.approx(default["evals_mean"])
    # the default's breakdown: its parts add up to its mean, a good first answer is the cheap case
    good = default["good_answer_targets"]
    assert 0.5 < good < 1 and all("good_answer_targets" not in r for r in rows if r is not default)
    assert good * default["good_answer_evals_mean"] + (1 - good) * default["no_good_answer_evals_mean"] \
        == pytest.approx(default["evals_mean"])
    assert default["good_answer_evals_median"] >= 2 and default["good_answer_evals_mean"] < default["no_good_answer_evals_mean"]
    assert 0 <= default["good_answer_slow_targets"] <= good and 0 <= default["good_answer_slow_evals_share"] < 1
    assert "Where the default's evaluations went" in (tmp_path / "hybrid_cost.md").read_text()
    assert first_good["evals_reduction_pct"] == pytest.approx(100 * (1 - first_good["evals_mean"] / multistart["evals_mean"]))
    assert "first good answer" in (tmp_path / "hybrid_cost.md").read_text()
    assert (tmp_path / "hybrid_cost_curves.png").stat().st_size > 10_000  # the tail of each solver's evaluations, drawn
    checkpoint = tmp_path / "other.pt"  # a checkpoint as the seed, alone and with the shipped seed as fallback
    shutil.copy(PRETRAINED_DIR / "irb120" / "harmoatt_4answers.safetensors", checkpoint)  # several answers: a fallback needs them
    assert bench.main(["--robots", "irb120", "--targets", "40", "--network", str(checkpoint), "--out", str(tmp_path / "fb")]) == 0
    rows = json.loads((tmp_path / "fb" / "hybrid_cost.json").read_text())["rows"]
    assert [r["seed_network"] for r in rows[-2:]] == ["other", "other"] and "fallback" in rows[-1]["solver"]
    assert all(r["success"] == 1.0 and not r["nan"] for r in rows[-2:])
    with pytest.raises(SystemExit):
        bench.main(["--robots", "irb120", "panda", "--network", str(checkpoint)])


def test_single_target_table_rows_are_the_solvers_own_results(tmp_path: Path) -> None:
    """Three rows a robot (no table with flips, the table with flips, the default), every target solved, the table's
    rows spending fewer evaluations than the first on the same targets; the latency columns ordered."""
    bench = _load_script("single_target_table")
    assert bench.main(["--robots", "irb120", "--targets", "40", "--out", str(tmp_path)]) == 0
    rows = json.loads((tmp_path / "single_target_table.json").read_text())["rows"]
    assert [r["variant"] for r in rows] == [label for label, _ in bench.VARIANTS]
    for row in rows:
        assert row["success"] == 1.0 and row["targets"] == 40
        assert 0 < row["median_ms"] <= row["p95_ms"] <= row["p99_ms"] <= row["max_ms"]
    assert rows[2]["evals_mean"] < rows[0]["evals_mean"]
    assert "table, no flips (default)" in (tmp_path / "single_target_table.md").read_text()
