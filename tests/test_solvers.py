"""IK solvers: accuracy on reachable targets, limits on every answer, exact counts, bad input."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch
from conftest import robot_by_id

from hik_sim.learning.data import JointSelection, PoseNormalizer, make_eval_set
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.network import IKNetwork
from hik_sim.solvers.ik import _restarts
from hik_sim.solvers.ik import (HybridIK, LMRefiner, MultistartIK, NeuralIK, SingleTargetIK, Tolerance, check_targets, restart_rng,
                             rotation_residual)
from hik_sim.learning.train import TrainConfig, train


@pytest.fixture(scope="module")
def irb120() -> Chain:
    return Chain(robot_by_id("irb120"))


@pytest.fixture(scope="module")
def tiny_network():  # noqa: ANN201
    config = TrainConfig(model="mlp", steps=30, batch=128, model_options=(("hidden", 64), ("layers", 2)), eval_size=64,
                         eval_every=30, normalizer_samples=2000, device="cpu")
    return train(robot_by_id("irb120"), config, progress=False).network


def _in_limits(chain: Chain, q: torch.Tensor) -> bool:
    lower, upper = chain.limits(torch.float64)
    return bool(((q >= lower) & (q <= upper)).all())


def test_lm_converges_from_near_the_answer_in_few_iterations(irb120: Chain) -> None:
    targets = make_eval_set(irb120, 1, 200).batch
    start = irb120.clamp(targets.q + 0.05 * torch.randn(200, 6, generator=torch.Generator().manual_seed(0), dtype=torch.float64))
    result = LMRefiner(irb120).solve(targets.pos, targets.quat, start)
    assert bool(result.success.all())
    assert result.pos_err.max() < 1e-6 and result.rot_err.max() < 1e-6
    assert result.iterations.float().mean() < 6
    assert _in_limits(irb120, result.q)


@pytest.mark.slow
def test_multistart_meets_its_tolerance_on_reachable_targets(robot) -> None:  # noqa: ANN001
    chain = Chain(robot)
    targets = make_eval_set(chain, 3, 60).batch
    result = MultistartIK(LMRefiner(chain, max_iterations=50), starts=10).solve(targets.pos, targets.quat)
    assert result.success.float().mean() >= 0.9
    assert bool(((result.pos_err < 0.005) & (result.rot_err < math.radians(2)) == result.success).all())
    assert _in_limits(chain, result.q)


def test_function_evaluation_counts_are_exact(irb120: Chain, monkeypatch: pytest.MonkeyPatch) -> None:
    calls = []
    original = Chain.fk_and_jacobian

    def counting(self: Chain, q: torch.Tensor):  # noqa: ANN202
        calls.append(q.shape[0])
        return original(self, q)

    monkeypatch.setattr(Chain, "fk_and_jacobian", counting)
    targets = make_eval_set(irb120, 4, 50).batch
    result = MultistartIK(LMRefiner(irb120, backend="torch"), starts=3).solve(targets.pos, targets.quat)
    assert int(result.jac_evals.sum()) == sum(calls)  # every configuration evaluated is counted, once
    assert torch.equal(result.fk_evals, result.jac_evals)
    assert (result.fk_evals >= result.iterations).all()
    # the compiled loop (which never calls Chain) takes the same steps and counts them the same
    compiled = MultistartIK(LMRefiner(irb120, backend="numba"), starts=3).solve(targets.pos, targets.quat)
    assert torch.equal(compiled.fk_evals, result.fk_evals) and torch.equal(compiled.iterations, result.iterations)
    assert torch.allclose(compiled.q, result.q, atol=1e-6) and torch.equal(compiled.success, result.success)


def test_limits_hold_and_nothing_is_nan_for_unreachable_and_singular_targets(irb120: Chain) -> None:
    generator = torch.Generator().manual_seed(5)
    far = torch.randn(40, 3, generator=generator, dtype=torch.float64) * 3  # far outside the 0.58 m reach
    quat = torch.nn.functional.normalize(torch.randn(40, 4, generator=generator, dtype=torch.float64), dim=-1)
    singular_q = torch.zeros(10, 6, dtype=torch.float64)  # wrist aligned (q5 = 0) and arm stretched
    singular_q[:, 1] = torch.linspace(-0.5, 0.5, 10)
    singular = irb120.fk(singular_q)
    pos, quat = torch.cat((far, singular.pos)), torch.cat((quat, singular.quat))
    for solver in (LMRefiner(irb120), MultistartIK(LMRefiner(irb120), starts=3)):
        result = solver.solve(pos, quat, singular_q.new_zeros(50, 6) if isinstance(solver, LMRefiner) else None)
        assert torch.isfinite(result.q).all() and torch.isfinite(result.pos_err).all() and torch.isfinite(result.rot_err).all()
        assert _in_limits(irb120, result.q)
        assert not bool(result.success[:40].any())
        if isinstance(solver, LMRefiner):  # started at zero, next to the singular answers
            assert bool(result.success[40:].all())


def test_random_restarts_never_replay_the_configurations_that_made_the_targets(irb120: Chain) -> None:
    # The evaluator draws its targets with seed 0 and builds multistart with seed 0. From one
    # stream, the first random seeds were the targets' own configurations: 100 %, 0.000 mm.
    targets = make_eval_set(irb120, 0, 200).batch
    once = MultistartIK(LMRefiner(irb120), starts=1, seed=0).solve(targets.pos, targets.quat)
    assert not bool((once.pos_err == 0).any())  # no answer is a replayed target configuration
    assert once.success.float().mean() < 0.9  # one LM run from a truly random seed misses many targets
    ten = MultistartIK(LMRefiner(irb120), starts=10, seed=0).solve(targets.pos, targets.quat)
    assert 0.9 <= ten.success.float().mean() < 1.0 and not bool((ten.pos_err == 0).any())


def test_single_target_restarts_never_replay_an_environment_goal(irb120: Chain) -> None:
    # Reach draws its goal configuration from gymnasium's np_random, PCG64 on SeedSequence(seed).
    lower, upper = np.asarray(irb120.robot.lower), np.asarray(irb120.robot.upper)
    goal_q = np.random.default_rng(0).uniform(lower, upper)  # the goal of `env.reset(seed=0)`
    goal = irb120.fk(torch.from_numpy(goal_q)[None])
    solver = SingleTargetIK(irb120, max_iterations=1, restarts=1, seed=0)  # home, then one random seed, one step each
    result = solver.solve_one(goal.pos[0], goal.quat[0], q_init=np.asarray(irb120.robot.home))
    assert not bool(result.success) and not np.allclose(result.q[0].numpy(), goal_q)


def test_fixed_joints_stay_fixed(irb120: Chain) -> None:
    selection = JointSelection.for_chain(irb120, {"joint_6": 0.3})
    targets = make_eval_set(irb120, 6, 50, selection).batch
    result = MultistartIK(LMRefiner(irb120, selection=selection), starts=5).solve(targets.pos, targets.quat)
    assert torch.all(result.q[:, 5] == 0.3)
    assert result.success.float().mean() > 0.8


def test_neural_and_hybrid_solvers(irb120: Chain, tiny_network) -> None:  # noqa: ANN001
    targets = make_eval_set(irb120, 7, 100).batch
    neural = NeuralIK(tiny_network, irb120).solve(targets.pos, targets.quat)
    assert (neural.fk_evals == 0).all() and _in_limits(irb120, neural.q)
    hybrid = HybridIK(tiny_network, LMRefiner(irb120), restarts=9).solve(targets.pos, targets.quat)
    assert hybrid.success.float().mean() >= 0.95
    assert _in_limits(irb120, hybrid.q)
    # q_init near the answer: solved from there, in few iterations, staying on that branch
    near = irb120.clamp(targets.q + 0.01)
    tracked = HybridIK(tiny_network, LMRefiner(irb120)).solve(targets.pos, targets.quat, q_init=near)
    assert bool(tracked.success.all()) and tracked.iterations.float().mean() < 5
    assert (tracked.q - targets.q).abs().max() < 0.05
    with pytest.raises(HikError, match="holds"):
        HybridIK(tiny_network, LMRefiner(irb120, selection=JointSelection.for_chain(irb120, {"joint_6": 0.0})))


def _constant_answers_network(chain: Chain, answers: torch.Tensor) -> IKNetwork:
    """A network with several hypotheses whose answers (H, n) are the same for every pose."""
    lower, upper = chain.limits()
    normalizer = PoseNormalizer.measure(chain, samples=1000)
    network = IKNetwork("mlp", lower, upper, normalizer, JointSelection.for_chain(chain),
                        {"hidden": 8, "layers": 1, "hypotheses": answers.shape[0]}, chain)
    head = network.model.head
    with torch.no_grad():
        head.linear.weight.zero_()
        head.linear.bias.copy_(torch.atanh((answers.float() - head.center) / head.half_range).flatten())
    return network.eval()


def test_a_network_with_several_answers_ranks_them_by_fk_and_seeds_lm_with_each(irb120: Chain) -> None:
    answers = irb120.sample(3, torch.Generator().manual_seed(3), torch.float64)
    network = _constant_answers_network(irb120, answers)
    targets = irb120.fk(irb120.clamp(answers[torch.tensor([1, 2, 0, 1])] + 0.01))
    ranked = network.solve_all(targets.pos, targets.quat)
    assert ranked.shape == (4, 3, 6)
    assert torch.allclose(ranked[:, 0].double(), answers[torch.tensor([1, 2, 0, 1])], atol=1e-5)
    assert torch.equal(network.solve(targets.pos, targets.quat), ranked[:, 0])
    # LM from the given seeds in turn before any random one: one iteration from a far seed fails,
    # the second seed (the exact answer) succeeds at once
    exact = irb120.sample(20, torch.Generator().manual_seed(4), torch.float64)
    pose = irb120.fk(exact)
    far = irb120.clamp(exact + 1.5)
    seeds = torch.stack((far, exact), dim=1)
    one_step = LMRefiner(irb120, max_iterations=1)
    assert not bool(_restarts(one_step, pose.pos, pose.quat, seeds, 1, restart_rng(0)).success.any())
    both = _restarts(one_step, pose.pos, pose.quat, seeds, 2, restart_rng(0))
    assert bool(both.success.all()) and torch.allclose(both.q, exact, atol=1e-6)


def test_bad_targets_are_hik_errors_and_quaternions_are_normalised(irb120: Chain) -> None:
    pos = torch.tensor([[0.3, 0.0, 0.5]], dtype=torch.float64)
    with pytest.raises(HikError, match="finite"):
        check_targets(torch.tensor([[float("nan"), 0, 0]]), torch.tensor([[1.0, 0, 0, 0]]))
    with pytest.raises(HikError, match="non-zero"):
        check_targets(pos, torch.zeros(1, 4))
    with pytest.raises(HikError, match=r"\(B, 3\)"):
        check_targets(torch.zeros(2), torch.zeros(2, 4))
    _, quat = check_targets(pos, torch.tensor([[2.0, 0.0, 0.0, 0.0]]))
    assert torch.allclose(quat, torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64))
    with pytest.raises(HikError, match="q_init"):
        LMRefiner(irb120).solve(pos, torch.tensor([[1.0, 0, 0, 0]]), torch.zeros(1, 5))
    with pytest.raises(HikError, match="tolerances"):
        Tolerance(0.0, 1.0)


def test_rotation_residual_is_the_axis_angle() -> None:
    angle = torch.tensor([0.0, 0.3, math.pi - 1e-3], dtype=torch.float64)
    target = torch.stack((torch.cos(angle / 2), torch.zeros(3, dtype=torch.float64), torch.sin(angle / 2),
                          torch.zeros(3, dtype=torch.float64)), dim=-1)
    identity = torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64).expand(3, 4)
    residual = rotation_residual(identity, target)
    assert torch.allclose(residual, torch.stack((torch.zeros(3), angle, torch.zeros(3)), dim=-1).double(), atol=1e-12)
    assert torch.allclose(rotation_residual(identity, -target), residual, atol=1e-12)


def test_single_target_path_tracks_without_branch_jumps(irb120: Chain, tiny_network) -> None:  # noqa: ANN001
    from hik_sim.solvers.ik import SingleTargetIK

    solver = SingleTargetIK(irb120, tiny_network)
    targets = make_eval_set(irb120, 8, 30).batch
    cold_successes = 0
    for i in range(30):
        warm = solver.solve_one(targets.pos[i], targets.quat[i], q_init=targets.q[i].numpy() + 0.01)
        assert bool(warm.success) and int(warm.iterations) < 6
        assert (warm.q[0] - targets.q[i]).abs().max() < 0.05  # the branch of the current joints
        cold = solver.solve_one(targets.pos[i], targets.quat[i])  # an untrained network's seed, then 9 random ones
        cold_successes += int(cold.success)
        assert _in_limits(irb120, cold.q) and int(cold.fk_evals) >= int(cold.iterations)
    assert cold_successes >= 27
    far = solver.solve_one(torch.tensor([3.0, 0.0, 0.0]), torch.tensor([1.0, 0.0, 0.0, 0.0]))
    assert not bool(far.success) and _in_limits(irb120, far.q) and torch.isfinite(far.q).all()
    with pytest.raises(HikError, match="q_init"):
        solver.solve_one(targets.pos[0], targets.quat[0], q_init=[0.0, 0.0])
    with pytest.raises(HikError, match="finite"):
        solver.solve_one(torch.tensor([float("inf"), 0, 0]), targets.quat[0])


def test_dm_control_peer_reports_its_limit_violations(irb120: Chain) -> None:
    from hik_sim.sim import build_scene
    from hik_sim.solvers.ik import DmControlIK

    targets = make_eval_set(irb120, 9, 20).batch
    result = DmControlIK(build_scene(irb120.robot)).solve(targets.pos, targets.quat)
    assert _in_limits(irb120, result.q)
    assert 0 <= result.extra["limit_violations"] <= 20
    assert result.success.float().mean() > 0.2
    from_answer = DmControlIK(build_scene(irb120.robot)).solve(targets.pos, targets.quat, q_init=targets.q)
    assert bool(from_answer.success.all())


@pytest.mark.slow
def test_property_answers_are_finite_and_within_limits_for_any_target() -> None:
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as st

    chain = Chain(robot_by_id("irb120"))
    refiner = LMRefiner(chain, max_iterations=10)
    lower, upper = chain.limits(torch.float64)
    number = st.floats(min_value=-5.0, max_value=5.0, allow_nan=False)

    @settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(pos=st.lists(number, min_size=3, max_size=3), quat=st.lists(number, min_size=4, max_size=4),
           start=st.lists(st.floats(min_value=0.0, max_value=1.0), min_size=6, max_size=6))
    def check(pos: list[float], quat: list[float], start: list[float]) -> None:
        if sum(v * v for v in quat) < 1e-6:
            quat = [1.0, 0.0, 0.0, 0.0]
        q0 = lower + (upper - lower) * torch.tensor([start], dtype=torch.float64)
        result = refiner.solve(torch.tensor([pos], dtype=torch.float64), torch.tensor([quat], dtype=torch.float64), q0)
        assert torch.isfinite(result.q).all() and torch.isfinite(result.pos_err).all()
        assert bool(((result.q >= lower) & (result.q <= upper)).all())

    check()


def test_an_empty_batch_gives_empty_results_of_the_right_shape(irb120: Chain, tiny_network) -> None:  # noqa: ANN001
    pos, quat = torch.zeros(0, 3), torch.zeros(0, 4)
    assert tiny_network.solve(pos, quat).shape == (0, 6)
    for solver in (NeuralIK(tiny_network, irb120), HybridIK(tiny_network, LMRefiner(irb120)), MultistartIK(LMRefiner(irb120)),
                   SingleTargetIK(irb120, tiny_network)):
        result = solver.solve(pos, quat)
        assert result.q.shape == (0, 6) and result.pos_err.shape == result.success.shape == (0,)


def test_a_network_rejects_a_zero_quaternion(tiny_network) -> None:  # noqa: ANN001
    pos = torch.tensor([[0.3, 0.0, 0.5], [0.3, 0.0, 0.4]])
    with pytest.raises(HikError, match=r"non-zero \(rows \[1\]"):
        tiny_network.solve(pos, torch.tensor([[1.0, 0.0, 0.0, 0.0], [0.0, 0.0, 0.0, 0.0]]))
    with pytest.raises(HikError, match="finite"):
        tiny_network.solve(pos, torch.tensor([[1.0, 0.0, 0.0, 0.0], [float("nan"), 0.0, 0.0, 0.0]]))


def test_a_network_is_checked_against_the_robot_of_its_chain(tmp_path) -> None:  # noqa: ANN001
    from hik_sim.errors import SolverError
    from hik_sim.policies import load_pretrained
    from hik_sim.robots import robot_from_urdf

    panda, g1 = load_pretrained("panda", "harmoatt"), Chain(robot_by_id("g1"))  # both 7 joints
    with pytest.raises(SolverError, match="its joints are .*panda_joint1"):
        NeuralIK(panda, g1)
    with pytest.raises(SolverError, match="does not fit"):
        HybridIK(panda, LMRefiner(g1))
    with pytest.raises(SolverError, match="does not fit"):
        SingleTargetIK(g1, panda)
    # the same joints and limits on an edited URDF: told apart by the URDF's hash in the card
    irb120 = robot_by_id("irb120")
    edited = tmp_path / "irb120.urdf"
    text = irb120.urdf.read_text()
    edited.write_text(text.replace("<robot ", "<!-- edited -->\n<robot ", 1))
    other = Chain(robot_from_urdf(edited, irb120.base_link, irb120.ee_link))
    assert other.joint_names == Chain(irb120).joint_names
    network = load_pretrained("irb120", "harmoatt")
    NeuralIK(network, Chain(irb120))  # its own robot is fine
    with pytest.raises(SolverError, match="another URDF"):
        NeuralIK(network, other)


def test_multistart_and_single_target_lm_start_from_q_init_and_stay_on_its_branch(irb120: Chain) -> None:
    # while tracking, the current joints are q_init: an answer on another IK branch is a jump of the arm
    chain = irb120
    targets = make_eval_set(chain, 11, 40).batch
    near = chain.clamp(targets.q + 0.02)
    for solver in (MultistartIK(LMRefiner(chain), starts=10), SingleTargetIK(chain, restarts=9)):
        result = solver.solve(targets.pos, targets.quat, q_init=near)
        assert bool(result.success.all())
        assert (result.q - targets.q).abs().max() < 0.1, type(solver).__name__
    with pytest.raises(HikError, match="q_init"):
        MultistartIK(LMRefiner(chain)).solve(targets.pos, targets.quat, q_init=near[:, :2])


def test_the_closed_loop_network_corrects_its_own_error_without_least_squares() -> None:
    from hik_sim.policies import IKController, load_pretrained

    chain = Chain(robot_by_id("g1"))
    network = load_pretrained("g1", "harmoatt")
    targets = make_eval_set(chain, 99, 300).batch
    open_loop = NeuralIK(network, chain).solve(targets.pos, targets.quat)
    closed = NeuralIK(network, chain, corrections=3).solve(targets.pos, targets.quat)
    assert open_loop.fk_evals.sum() == 0 and (closed.iterations == 0).all() and (closed.jac_evals == 0).all()
    assert ((closed.fk_evals >= 1) & (closed.fk_evals <= 4)).all()
    assert bool((closed.fk_evals[open_loop.success] == 1).all())  # a target already within tolerance stops at once
    tolerance = Tolerance()
    score = lambda r: r.pos_err / tolerance.position + r.rot_err / tolerance.rotation  # noqa: E731
    assert bool((score(closed) <= score(open_loop) + 1e-9).all())  # the best answer is kept: never worse
    assert closed.success.double().mean() > open_loop.success.double().mean() + 0.2  # measured: 21 % -> 74 %
    assert _in_limits(chain, closed.q) and bool(torch.isfinite(closed.q).all())
    # several answers: choosing among them costs H FK per network call, and is counted
    seed = load_pretrained("irb120", "harmoatt_4answers")
    irb = Chain(robot_by_id("irb120"))
    t = make_eval_set(irb, 99, 50).batch
    assert bool((NeuralIK(seed, irb).solve(t.pos, t.quat).fk_evals == 4).all())
    assert bool((NeuralIK(seed, irb, corrections=2).solve(t.pos, t.quat).fk_evals >= 5).all())
    with pytest.raises(HikError, match="corrections"):
        NeuralIK(network, chain, corrections=-1)
    controller = IKController.pretrained("g1", "closed_loop")
    assert controller.solver.corrections > 0 and controller.solver.network.card.model == "harmoatt"


@pytest.mark.slow
def test_multistart_with_the_papers_definition_runs_every_start_and_keeps_the_best(irb120: Chain,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    targets = make_eval_set(irb120, 11, 40).batch
    runs = []
    original = LMRefiner.refine

    def counting(self, pos, quat, q):  # noqa: ANN001, ANN202
        runs.append(pos.shape[0])
        return original(self, pos, quat, q)

    monkeypatch.setattr(LMRefiner, "refine", counting)
    early = MultistartIK(LMRefiner(irb120), starts=10, seed=3).solve(targets.pos, targets.quat)
    early_runs = sum(runs)
    runs.clear()
    paper = MultistartIK(LMRefiner(irb120), starts=10, seed=3, stop_early=False).solve(targets.pos, targets.quat)
    assert runs == [40] * 10  # every target gets all ten starts
    assert early_runs < 400  # stopping at the first converged start saves most of them
    assert float(paper.function_evals.double().mean()) > 2 * float(early.function_evals.double().mean())
    # the best of the ten is kept (the same seed stream, but the early stop draws fewer random starts per round)
    assert paper.success.float().mean() >= early.success.float().mean()
    assert _in_limits(irb120, paper.q)


def test_hybrid_counts_the_fk_that_orders_a_networks_answers(irb120: Chain) -> None:
    config = TrainConfig(model="mlp", steps=5, batch=64, model_options=(("hidden", 32), ("layers", 2), ("hypotheses", 3)),
                         eval_size=32, eval_every=5, normalizer_samples=1000, device="cpu")
    three = train(robot_by_id("irb120"), config, progress=False).network
    targets = make_eval_set(irb120, 12, 30).batch
    with_choice = HybridIK(three, LMRefiner(irb120), restarts=0).solve(targets.pos, targets.quat)
    # the same LM run from the same first answer, seeded by hand: 3 fewer FK per target
    seeds = irb120.clamp(three.solve_all(targets.pos, targets.quat).double())[:, 0]
    plain = LMRefiner(irb120).solve(targets.pos, targets.quat, seeds)
    assert torch.equal(with_choice.fk_evals, plain.fk_evals + 3)
    assert torch.equal(with_choice.jac_evals, plain.jac_evals)


def test_the_network_alone_is_not_charged_for_the_fk_that_reports_its_errors(irb120: Chain, tiny_network,  # noqa: ANN001
                                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    import time as time_module

    targets = make_eval_set(irb120, 13, 20).batch
    original = Chain.fk
    calls = []

    def slow_fk(self, q):  # noqa: ANN001, ANN202
        calls.append(q.shape[0])
        time_module.sleep(0.5)
        return original(self, q)

    monkeypatch.setattr(Chain, "fk", slow_fk)
    for corrections in (0, 1):
        calls.clear()
        start = time_module.perf_counter()
        result = NeuralIK(tiny_network, irb120, corrections=corrections).solve(targets.pos, targets.quat)
        total = time_module.perf_counter() - start
        # the last FK only reports the errors: its 0.5 s is outside the solver's time, the loop's FK inside
        assert result.wall_time <= total - 0.45
        assert result.wall_time >= 0.5 * (len(calls) - 1)


@pytest.mark.parametrize("corrections", [0, 3])
def test_one_target_takes_the_fast_path_and_agrees_with_the_batched_solve(irb120: Chain, tiny_network,  # noqa: ANN001
                                                                          corrections: int) -> None:
    targets = make_eval_set(irb120, 14, 25).batch
    solver = NeuralIK(tiny_network, irb120, corrections=corrections)
    batched = solver.solve(targets.pos, targets.quat)
    assert solver._fast is None  # a batch never builds it
    for i in range(25):
        one = solver.solve(targets.pos[i:i + 1], targets.quat[i:i + 1])
        assert torch.allclose(one.q, batched.q[i:i + 1], atol=1e-4)
        assert torch.equal(one.fk_evals, batched.fk_evals[i:i + 1])
        assert float(one.pos_err[0]) == pytest.approx(float(batched.pos_err[i]), abs=1e-4)
        assert _in_limits(irb120, one.q)
    assert solver._fast  # the single targets went through FastIKNetwork
