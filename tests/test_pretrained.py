"""The shipped checkpoints: one per registered robot and model, each true to its card."""

from __future__ import annotations

import pytest
import torch
from conftest import float32_card_tolerance, reach_successes, robot_by_id

from hik_sim.learning.data import make_eval_set
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.policies import load_pretrained, pretrained_names, pretrained_path
from hik_sim.robots import robot_names
from hik_sim.evaluation.metrics import evaluate_network



def assert_true_to_card(network: object, chain: Chain, eval_set: object) -> None:
    """The card's mean errors rerun on its own evaluation set, to within what float32 rounding on another CPU
    can change (:func:`conftest.float32_card_tolerance`); a network other than the card's is off by far more."""
    metrics = evaluate_network(network, chain, eval_set)  # type: ignore[arg-type]
    tolerance = float32_card_tolerance(network, chain, eval_set)
    for key in ("pos_mean_mm", "rot_mean_deg"):
        assert metrics[key] == pytest.approx(network.card.metrics[key], abs=tolerance[key])  # type: ignore[attr-defined]


@pytest.mark.slow
@pytest.mark.parametrize("robot", robot_names())
def test_shipped_checkpoints_load_and_match_their_cards(robot: str) -> None:
    spec = robot_by_id(robot)
    chain = Chain(spec)
    for model in ("harmoatt", "mlp"):
        assert f"{robot}/{model}" in pretrained_names()
        network = load_pretrained(robot, model)
        assert network.card.robot == robot and network.card.model == model
        eval_set = make_eval_set(chain, network.card.eval_set["seed"], 500)
        q = network.solve(eval_set.batch.pos, eval_set.batch.quat)
        lower, upper = chain.limits()
        assert (q >= lower).all() and (q <= upper).all()
        full = network.card.eval_set
        assert full["size"] >= 10_000
        assert_true_to_card(network, chain, make_eval_set(chain, full["seed"], full["size"]))
    assert pretrained_path(robot, "harmoatt").stat().st_size < 8 * 2**20


@pytest.mark.parametrize("name", [n for n in pretrained_names() if n.split("/")[1] not in ("harmoatt", "mlp", "harmoatt_4answers")])
def test_every_other_shipped_checkpoint_is_true_to_its_card(name: str) -> None:
    robot, stem = name.split("/")
    chain = Chain(robot_by_id(robot))
    network = load_pretrained(robot, stem)
    card = network.card
    assert card.robot == robot and card.parameters > 0 and pretrained_path(robot, stem).stat().st_size < 5 * 2**20
    one_branch = card.config.get("sampling") == "one_branch"  # validated on targets from its own branch
    targets = make_eval_set(chain, card.eval_set["seed"], card.eval_set["size"], network.selection, one_branch=one_branch)
    assert_true_to_card(network, chain, targets)
    if stem in ("cycleik", "regression", "regression_q6fixed"):  # trained with their papers' own objectives
        assert card.model == stem.split("_")[0] and card.config["objective"] == card.model


def test_irb120_ships_a_fixed_q6_network_and_unknown_names_fail() -> None:
    network = load_pretrained("irb120", "harmoatt_q6fixed")
    assert network.card.fixed_joints == {"joint_6": 0.0}
    with pytest.raises(HikError, match="shipped: .*irb120/harmoatt"):
        load_pretrained("irb120", "transformer")
    with pytest.raises(HikError, match="registered robots are"):
        load_pretrained("nope", "mlp")


@pytest.mark.parametrize("robot", list(robot_names()))
def test_the_closed_loop_network_is_the_four_answer_one_where_shipped_and_more_accurate(robot: str) -> None:
    """closed_loop_network_name's rule, and the reason for it in numbers: on 1,000 test targets (seed
    2024) the four-answer network misses by less than the one-answer one, in position and in rotation."""
    from hik_sim.policies import PRETRAINED_DIR, closed_loop_network_name, hybrid_seed_name

    four = (PRETRAINED_DIR / robot / "harmoatt_4answers.safetensors").is_file()
    assert closed_loop_network_name(robot) == ("harmoatt_4answers" if four else hybrid_seed_name(robot))
    if not four:
        return
    chain = Chain(robot_by_id(robot))
    targets = make_eval_set(chain, 2024, 1000)
    one, seed = (evaluate_network(load_pretrained(robot, name), chain, targets) for name in ("harmoatt", "harmoatt_4answers"))
    assert seed["pos_mean_mm"] < one["pos_mean_mm"] and seed["rot_mean_deg"] < one["rot_mean_deg"]
    assert seed["success_5mm_2deg"] > one["success_5mm_2deg"]


@pytest.mark.parametrize("robot", list(robot_names()))
def test_the_hybrid_is_seeded_by_the_networks_that_cost_it_fewer_evaluations(robot: str) -> None:
    """hybrid_seed_name's and hybrid_fallback_name's choice, in numbers, on every robot: the registry's batched
    hybrid solves as many of 2,000 reachable targets (seed 99, success_rate.py's) as seeded by any other of
    ``harmoatt``, ``harmoatt_4answers`` (and the fallback network alone), for fewer evaluations a target (the
    four answers everywhere; on the IRB120 the 148 k network with the map network as fallback). The iCub's:
    within 2 % of ``harmoatt``'s evaluations (6.38 against 6.36) for a network under a quarter its size
    (less time for the hybrid, measured by benchmarks/ik_bench.py, not here)."""
    from hik_sim.policies import hybrid_fallback_name, hybrid_seed_name
    from hik_sim.solvers.hybrid import HybridIK
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.registry import make_solver

    chosen, fallback = hybrid_seed_name(robot), hybrid_fallback_name(robot)
    assert chosen == "harmoatt_4answers"
    assert fallback == ("harmoatt_4answers_map" if robot == "irb120" else None)
    others = {"harmoatt", "harmoatt_4answers"} - {chosen} if fallback is None else {"harmoatt", chosen, fallback}
    chain = Chain(robot_by_id(robot))
    targets = make_eval_set(chain, 99, 2000).batch
    seeded = make_solver("hybrid", robot, batched=True).solve(targets.pos, targets.quat)
    for name in sorted(others):
        alternative = HybridIK(load_pretrained(robot, name), LMRefiner(chain)).solve(targets.pos, targets.quat)
        assert seeded.success.float().mean() >= min(alternative.success.float().mean(), 0.9975), name
        cost, other_cost = float(seeded.function_evals.double().mean()), float(alternative.function_evals.double().mean())
        if robot == "icub":  # about the same evaluations for a far smaller network
            weights = {n: sum(p.numel() for p in load_pretrained(robot, n).model.parameters()) for n in (chosen, name)}
            assert cost < 1.02 * other_cost and 4 * weights[chosen] < weights[name], name
        else:
            assert cost < other_cost, name


@pytest.mark.parametrize("robot", robot_names())
def test_the_default_controllers_are_harmoatt_ik_and_the_mlp_seed_stays_available_by_name(robot: str) -> None:
    """The single-target hybrid (the controllers', the evaluator's and the viewer's ``hybrid``) and the batched one are
    seeded by the robot's HarmoAtt-IK network; ``network="mlp_seed"`` gives the small MLP seed instead; the network saves
    the LM evaluations from home and random restarts."""
    from hik_sim.learning.models import HarmoAttCycleIK, HarmoAttIK
    from hik_sim.policies import IKController, hybrid_seed_name, single_target_seed_name
    from hik_sim.solvers.single_target_ik import SingleTargetIK
    from hik_sim.solvers.registry import make_solver

    assert single_target_seed_name(robot) == hybrid_seed_name(robot) == "harmoatt_4answers"
    assert single_target_seed_name("a_robot_without_one") == hybrid_seed_name("a_robot_without_one") == "harmoatt"
    chain = Chain(robot_by_id(robot))
    harmoatt = (HarmoAttCycleIK, HarmoAttIK)  # the paper's trunk or the dense one, whichever the robot ships
    single = make_solver("hybrid", robot)
    assert isinstance(single, SingleTargetIK) and isinstance(single.network.model, harmoatt)
    assert single.network.card.model_options == load_pretrained(robot, "harmoatt_4answers").card.model_options
    assert isinstance(make_solver("hybrid", robot, batched=True).network.model, harmoatt)
    assert isinstance(IKController.pretrained(robot, "hybrid").solver.network.model, harmoatt)
    small = make_solver("hybrid", robot, network="mlp_seed")
    assert isinstance(small, SingleTargetIK) and small.network.card.parameters < 50_000
    if robot != "irb120":
        return
    targets = make_eval_set(chain, 4242, 100).batch
    seeded = single.solve(targets.pos, targets.quat)
    unseeded = SingleTargetIK(chain).solve(targets.pos, targets.quat)
    assert bool(seeded.success.all()) and bool(unseeded.success.all())
    assert float(seeded.function_evals.double().mean()) < 0.6 * float(unseeded.function_evals.double().mean())


def test_irb120_ships_the_hybrid_seed_network_with_four_answers_true_to_its_card() -> None:
    from hik_sim.policies import hybrid_seed_name

    assert hybrid_seed_name("irb120") == "harmoatt_4answers"
    network = load_pretrained("irb120", "harmoatt_4answers")
    assert network.hypotheses == network.card.hypotheses == 4 and network.card.model_options["behind_turn"]  # the 148 k behind_turn network
    chain = Chain(robot_by_id("irb120"))
    full = network.card.eval_set
    targets = make_eval_set(chain, full["seed"], full["size"])
    answers = network.solve_all(targets.batch.pos[:500], targets.batch.quat[:500])
    lower, upper = chain.limits()
    assert answers.shape == (500, 4, 6) and (answers >= lower).all() and (answers <= upper).all()
    assert_true_to_card(network, chain, targets)


@pytest.mark.parametrize("name", [n for n in pretrained_names() if "/harmoatt_4answers" in n])
def test_every_four_answer_network_is_true_to_its_card(name: str) -> None:
    """Its card's validation figures rerun (the choice among the answers is made in float32: near-ties may flip)."""
    robot, stem = name.split("/")
    network = load_pretrained(robot, stem)
    assert network.hypotheses == network.card.hypotheses == 4 and network.card.model_options.get("trunk") in ("cycleik", "dense", "map")
    chain = Chain(robot_by_id(robot))
    targets = make_eval_set(chain, network.card.eval_set["seed"], network.card.eval_set["size"])
    assert_true_to_card(network, chain, targets)


def test_hybrid_controller_reaches_and_tracks_on_irb120() -> None:
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.evaluation.metrics import track_metrics
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.policies import IKController

    controller = IKController.pretrained("irb120", "hybrid")
    assert reach_successes(gym.make("hik_sim/Reach-irb120-v0"), controller, range(10)) >= 9
    track = gym.make("hik_sim/Track-irb120-v0", trajectory="figure_eight", speed=0.1)
    episode = rollout(track, controller, seed=0, max_steps=250)
    assert episode.steps == 250 and episode.joint_limit_violations == 0
    assert track_metrics([episode])["pos_rms_mm"] < 3.0  # 2 mm in the benchmark; looser here


def test_the_closed_loop_network_tracks_without_swinging_between_its_answers() -> None:
    """The closed_loop policy follows the network's answer nearest its last target (``nearest_first``):
    following the best answer instead, JVRC-1's arm swung between solution branches on the figure-eight
    (52.8 mm RMS over these 250 steps; 2.0 mm now), with no least-squares solver either way."""
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.evaluation.metrics import track_metrics
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.policies import IKController

    controller = IKController.pretrained("jvrc1", "closed_loop")
    assert controller.solver.nearest_first and controller.solver.network.hypotheses > 1
    track = gym.make("hik_sim/Track-jvrc1-v0", trajectory="figure_eight", speed=0.1)
    episode = rollout(track, controller, seed=0, max_steps=250)
    assert episode.steps == 250 and episode.joint_limit_violations == 0
    assert track_metrics([episode])["pos_rms_mm"] < 3.0


def test_the_closed_loop_policy_tracks_talos_figure_eight_on_the_four_answer_network_and_the_mlp() -> None:
    """A window of TALOS's figure-eight where an earlier four-answer network's answers all collapsed onto one
    configuration 3-6° off (two arm joints at their limits) and the arm swung 4 rad between branches (124.7 mm
    RMS over these 250 steps); the policy, the shipped four-answer network with the small MLP's answer beside
    its four, tracks it."""
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.evaluation.metrics import track_metrics
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.policies import IKController, closed_loop_extra_names

    assert closed_loop_extra_names("talos") == ("mlp_seed",)
    controller = IKController.pretrained("talos", "closed_loop")
    assert [n.card.model for n in controller.solver.networks] == ["harmoatt", "mlp"] and controller.solver.hypotheses == 5
    track = gym.make("hik_sim/Track-talos-v0", trajectory="figure_eight", speed=0.1)
    episode = rollout(track, controller, seed=0, max_steps=250)
    assert episode.steps == 250 and track_metrics([episode])["pos_rms_mm"] < 3.0


def test_the_closed_loop_policy_reaches_g1_goals_near_its_shoulder_limits_by_turned_queries() -> None:
    """G1 Reach goals 9 and 14: every answer of the plain one-answer network saturates the shoulder pitch at a
    limit and the closed loop on it never arrives; asked for the goal turned about that joint, it does. The
    shipped four-answer network takes that turn out of its input (canonical_turn) and reaches both without the
    turned queries. A goal the policy misses (out of reach) is answered once: the repeated query (same goal,
    same last target) is not solved again."""
    import gymnasium as gym
    import numpy as np

    import hik_sim.envs  # noqa: F401
    from hik_sim.policies import IKController, load_pretrained
    from hik_sim.solvers.registry import make_solver

    from hik_sim.evaluation.rollout import rollout

    env = gym.make("hik_sim/Reach-g1-v0")
    plain = IKController(make_solver("closed_loop", "g1", network=load_pretrained("g1", "harmoatt")))
    assert plain.solver.first_joint_turns == pytest.approx((1.9199, -1.9199), abs=1e-4)
    assert reach_successes(env, plain, [9]) == 1
    episode = rollout(env, plain, seed=14)
    assert episode.success and len(episode.ik_repeated) == episode.steps and episode.ik_repeated.any()  # a held goal is asked again
    plain.solver.first_joint_turns = ()
    assert reach_successes(env, plain, [9, 14]) == 0
    shipped = IKController.pretrained("g1", "closed_loop")
    assert shipped.solver.network.canonical_turn
    shipped.solver.first_joint_turns = ()
    assert reach_successes(env, shipped, [9, 14]) == 2
    controller = IKController.pretrained("g1", "closed_loop")
    observation, _ = env.reset(seed=9)
    observation = {**observation, "goal_pos": observation["goal_pos"] + 2.0}  # 3.5 m out: no answer reaches it
    controller(observation)  # from home: its best miss beats home, so it becomes the last target
    first = controller(observation)  # from there: the same answer, not better, so the last target stays
    solved = controller.last_result[0]
    assert not bool(solved.success[0]) and int(solved.fk_evals[0]) > 0 and controller.failures == 2
    again = controller(observation)
    repeated = controller.last_result[0]
    assert np.array_equal(first, again) and torch.equal(repeated.q, solved.q) and int(repeated.fk_evals[0]) == 0
    assert controller.failures == 3 and repeated.wall_time < solved.wall_time and controller.last_repeated[0]
    controller.reset()
    controller(observation)
    assert int(controller.last_result[0].fk_evals[0]) > 0  # a new episode solves again


@pytest.mark.parametrize("kind", ["hybrid", "lm"])
def test_the_controller_warm_starts_from_its_command_and_arrives_where_the_moving_joints_swapped_branches(kind: str) -> None:
    """Reach goals 40, 41 and 140 of the IRB120: warm-started from the joints on their way (speed-limited
    servos), the solve swapped between two solution branches every few steps and the arm never arrived."""
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.policies import IKController

    controller = IKController.pretrained("irb120", kind)
    assert reach_successes(gym.make("hik_sim/Reach-irb120-v0"), controller, [40, 41, 140]) == 3


def test_a_speed_limited_controller_warm_starts_from_its_target_not_its_clipped_command() -> None:
    """With joint_velocity_limit the command is clipped on the way to the answer; warm-started from that
    intermediate command (as before), the hybrid swapped branches on Reach goals 0, 3 and 21 of the
    IRB120 at 1 rad/s and never arrived (8 of 100 goals missed); from the answer it heads for, it
    arrives (100 of 100)."""
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.policies import IKController

    env = gym.make("hik_sim/Reach-irb120-v0")
    controller = IKController.pretrained("irb120", "hybrid", joint_velocity_limit=1.0, dt=env.unwrapped.dt)
    assert reach_successes(env, controller, [0, 3, 21]) == 3
    assert set(controller.last_target) == set(controller.last_command) == {0}


def test_the_controller_commands_the_copy_of_an_answer_a_whole_turn_nearer_its_joints() -> None:
    """The IRB120's joint 6 spans ±400°: an answer and its ±2π copies are one pose. A solver that answers
    a turn away makes the controller command the near copy, and the closed-loop network tracks the
    figure-eight without the wrist turning (it did, 31° rotation RMS, before)."""
    from dataclasses import replace

    import gymnasium as gym
    import numpy as np
    import torch

    import hik_sim.envs  # noqa: F401
    from hik_sim.evaluation.metrics import track_metrics
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.policies import IKController

    def one(x):  # noqa: ANN001, ANN202
        return torch.as_tensor(x, dtype=torch.float64)[None]

    lm = IKController.pretrained("irb120", "lm").solver  # a fresh one for each use: its random restarts are a stream

    class TurnedAway:  # LM's answer with joint 6 one turn up (inside its ±6.98 rad while LM's is below 0.69 rad)
        chain = lm.chain

        def solve(self, target_pos, target_quat, q_init=None):  # noqa: ANN001, ANN201
            result = lm.solve(target_pos, target_quat, q_init)
            q = result.q.clone()
            q[:, 5] += 2 * np.pi
            return replace(result, q=q)

    env = gym.make("hik_sim/Reach-irb120-v0")
    observation, _ = env.reset(seed=3)
    fresh = IKController.pretrained("irb120", "lm").solver
    answer = fresh.solve(one(observation["goal_pos"]), one(observation["goal_quat"]), one(observation["joint_pos"])).q[0].numpy()
    assert answer[5] < 0.69  # so the turned answer is inside the limits, and a turn away
    command = IKController(TurnedAway())(observation)
    assert np.allclose(command, answer, atol=1e-9)
    track = gym.make("hik_sim/Track-irb120-v0", trajectory="figure_eight", speed=0.1)
    episode = rollout(track, IKController.pretrained("irb120", "closed_loop"), seed=1)
    assert track_metrics([episode])["rot_rms_deg"] < 2.0


@pytest.mark.slow
def test_example_script_runs_and_writes_a_video(tmp_path) -> None:  # noqa: ANN001
    import subprocess
    import sys
    from pathlib import Path

    import os

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(root), os.environ.get("PYTHONPATH", "")]))}
    done = subprocess.run([sys.executable, str(root / "examples" / "reach.py")], cwd=tmp_path, env=env, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert "success: True" in done.stdout
    assert list((tmp_path / "videos").glob("reach-episode-0.mp4"))


def test_networks_md_ablation_table_matches_a_rerun_on_the_shipped_checkpoints() -> None:
    import importlib.util
    import sys
    from pathlib import Path

    from hik_sim.evaluation.experiments import compare_networks, shipped_pair

    root = Path(__file__).resolve().parents[1]
    spec = importlib.util.spec_from_file_location("ablation", root / "benchmarks" / "ablation.py")
    ablation = importlib.util.module_from_spec(spec)
    sys.modules["ablation"] = ablation
    spec.loader.exec_module(ablation)
    page = (root / "docs" / "networks.md").read_text(encoding="utf-8")
    shown = page.split("<!-- ablation:models:begin -->\n", 1)[1].split("<!-- ablation:models:end -->", 1)[0]
    rows = [compare_networks(robot_by_id(name), shipped_pair(robot_by_id(name)), 10_000) for name in robot_names()]
    assert ablation.markdown(rows, []) == shown


def test_hypotheses_is_a_field_of_the_card_and_old_cards_still_load() -> None:
    import dataclasses
    import json

    from hik_sim.errors import CheckpointError
    from hik_sim.learning.checkpoint import Card

    for name, answers in (("harmoatt_4answers_map", 4), ("harmoatt_q6fixed", 1)):
        stored = json.loads(pretrained_path("irb120", name).with_suffix(".json").read_text())
        assert "hypotheses" not in stored  # written before the field: it comes from model_options (absent: 1)
        card = Card.from_json(stored)
        assert card.hypotheses == answers and load_pretrained("irb120", name).hypotheses == answers
        written = card.to_json()
        assert written["hypotheses"] == answers and Card.from_json(written) == card  # written, and read back
    with pytest.raises(CheckpointError, match="hypotheses is 2, and the model's options say 4"):
        Card.from_json({**stored, "model_options": {"hypotheses": 4}, "hypotheses": 2})
    with pytest.raises(CheckpointError, match="hypotheses must be a whole number"):
        dataclasses.replace(card, hypotheses=0)
