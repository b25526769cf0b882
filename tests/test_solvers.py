"""IK solvers: accuracy on reachable targets, limits on every answer, exact counts, bad input."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from conftest import robot_by_id

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flips import JointFlips
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.tolerances import EXACT, REPORT_TOLERANCES, SUCCESS, Tolerance
from hik_sim.learning.data import JointSelection, PoseNormalizer, make_eval_set
from hik_sim.learning.network import IKNetwork
from hik_sim.learning.train import TrainConfig, train
from hik_sim.solvers.answers import _first_good, first_good_answers, head_order
from hik_sim.solvers.base import check_targets, rotation_residual
from hik_sim.solvers.hybrid import HybridIK, HybridPlan
from hik_sim.solvers.lm import LMRefiner
from hik_sim.solvers.lm_rules import LMRules
from hik_sim.solvers.neural import NeuralIK
from hik_sim.solvers.registry import make_solver
from hik_sim.solvers.restarts import DISTINCT_SEEDS, MultistartIK, _Added, _Choice, _random_configurations, _restarts, restart_rng
from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan


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
    fk_rows, jac_rows = [], []
    original_fk, original_jacobian = Chain.fk, Chain.jacobian

    def counting_fk(self: Chain, q: torch.Tensor):  # noqa: ANN202
        fk_rows.append(q.shape[0])
        return original_fk(self, q)

    def counting_jacobian(self: Chain, q: torch.Tensor):  # noqa: ANN202
        jac_rows.append(q.shape[0])
        return original_jacobian(self, q)

    targets = make_eval_set(irb120, 4, 50).batch
    starts = irb120.clamp(targets.q + 0.8 * torch.randn(50, 6, generator=torch.Generator().manual_seed(4), dtype=torch.float64))
    monkeypatch.setattr(Chain, "fk", counting_fk)
    monkeypatch.setattr(Chain, "jacobian", counting_jacobian)
    q, iterations, fk, jac, pos_err, _ = LMRefiner(irb120, backend="torch").refine(targets.pos, targets.quat, starts)
    assert int(fk.sum()) == sum(fk_rows) and int(jac.sum()) == sum(jac_rows)  # every evaluation is counted, once
    assert torch.equal(fk, iterations + 1)  # the seed's FK and one per trial
    assert bool((jac >= 1).all()) and int(jac.sum()) < int(fk.sum())  # a Jacobian only where a step starts
    # the compiled loop (which never calls Chain) takes the same steps and counts them the same
    monkeypatch.undo()
    compiled = LMRefiner(irb120, backend="numba").refine(targets.pos, targets.quat, starts)
    assert torch.equal(compiled.iterations, iterations) and torch.equal(compiled.fk_evals, fk) and torch.equal(compiled.jac_evals, jac)
    assert torch.allclose(compiled.q, q, atol=1e-6) and torch.allclose(compiled.pos_err, pos_err, atol=1e-9)
    # the errors the loop reports are the answers' errors
    reached = irb120.fk(compiled.q)
    assert torch.allclose(compiled.pos_err, position_error(reached.pos, targets.pos), atol=1e-12)
    assert torch.allclose(compiled.rot_err, rotation_error(reached.quat, targets.quat), atol=1e-9)
    # a seed that is already converged costs one FK and no Jacobian
    exact = LMRefiner(irb120).solve(targets.pos[:3], targets.quat[:3], targets.q[:3])
    assert exact.fk_evals.tolist() == [1, 1, 1] and exact.jac_evals.tolist() == [0, 0, 0]
    # a seed whose FK the caller spent (choosing it) is not counted again, on either backend; the rest is the same
    spent = torch.arange(50) % 2 == 0
    for backend in ("torch", "numba"):
        again = LMRefiner(irb120, backend=backend).refine(targets.pos, targets.quat, starts, seed_evaluated=spent)
        assert torch.equal(again.fk_evals, fk - spent.long()) and torch.equal(again.jac_evals, jac)
        assert torch.equal(again.iterations, iterations) and torch.allclose(again.q, q, atol=1e-6)


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
    solver = SingleTargetIK(irb120, plan=SingleTargetPlan(max_iterations=1, restarts=1, table_seeds=0), seed=0)  # home, then one random seed, one step each
    result = solver.solve_one(goal.pos[0], goal.quat[0], q_init=np.asarray(irb120.robot.home))
    assert not bool(result.success) and not np.allclose(result.q[0].numpy(), goal_q)


def test_fixed_joints_stay_fixed(irb120: Chain) -> None:
    selection = JointSelection.for_chain(irb120, {"joint_6": 0.3})
    targets = make_eval_set(irb120, 6, 50, selection).batch
    result = MultistartIK(LMRefiner(irb120, selection=selection), starts=10).solve(targets.pos, targets.quat)
    assert torch.all(result.q[:, 5] == 0.3)
    assert result.success.float().mean() >= 0.9  # 93.5 % of 200 such targets


def test_neural_and_hybrid_solvers(irb120: Chain, tiny_network) -> None:  # noqa: ANN001
    targets = make_eval_set(irb120, 7, 100).batch
    neural = NeuralIK(tiny_network, irb120).solve(targets.pos, targets.quat)
    assert (neural.fk_evals == 0).all() and _in_limits(irb120, neural.q)
    hybrid = HybridIK(tiny_network, LMRefiner(irb120), plan=HybridPlan(restarts=9)).solve(targets.pos, targets.quat)
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
    from hik_sim.solvers.single_target_ik import SingleTargetIK

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
    from hik_sim.solvers.dm_control import DmControlIK

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
    for solver in (MultistartIK(LMRefiner(chain), starts=10), SingleTargetIK(chain, plan=SingleTargetPlan(restarts=9))):
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
    # several answers: choosing among them costs H FK, and is counted; each correction then costs one per followed answer
    seed = load_pretrained("irb120", "harmoatt_4answers")
    irb = Chain(robot_by_id("irb120"))
    t = make_eval_set(irb, 99, 300).batch
    own = seed.facing_fk(t.pos)  # a behind_turn network's own FK for the poses beyond joint 1's range (8 there, else 0)
    base = 4 + own
    assert int(own.max()) == 8 and bool((NeuralIK(seed, irb).solve(t.pos, t.quat).fk_evals == base).all())
    one = NeuralIK(seed, irb, corrections=2).solve(t.pos, t.quat)
    every = NeuralIK(seed, irb, corrections=2, branches=4).solve(t.pos, t.quat)
    # a correction: one FK where its answer lands (and the network's own 8 where its shifted goal lies beyond the range)
    assert bool(((one.fk_evals >= base) & (one.fk_evals <= base + 2 * 9)).all()) and bool((one.fk_evals > base).any())
    assert bool(((every.fk_evals >= base) & (every.fk_evals <= base + 2 * 4 * 9)).all())
    assert bool(((every.fk_evals - base) > 2).any())
    # the best answer is followed in both: correcting the others as well can only add successes
    assert bool((every.success | ~one.success).all()) and int(every.success.sum()) > int(one.success.sum())
    with pytest.raises(HikError, match="corrections"):
        NeuralIK(network, chain, corrections=-1)
    with pytest.raises(HikError, match="branches"):
        NeuralIK(network, chain, corrections=1, branches=0)
    controller = IKController.pretrained("g1", "closed_loop")
    assert controller.solver.corrections > 0 and controller.solver.network.card.model == "harmoatt"


def _count_lm_batches(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Record the batch size of every LMRefiner.refine call (the list fills as the solver runs)."""
    sizes: list[int] = []
    original = LMRefiner.refine

    def counting(self, pos, quat, q, seed_evaluated=None):  # noqa: ANN001, ANN202
        sizes.append(pos.shape[0])
        return original(self, pos, quat, q, seed_evaluated)

    monkeypatch.setattr(LMRefiner, "refine", counting)
    return sizes


@pytest.mark.slow
def test_multistart_with_the_papers_definition_runs_every_start_and_keeps_the_best(irb120: Chain,
                                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    targets = make_eval_set(irb120, 11, 40).batch
    runs = _count_lm_batches(monkeypatch)  # the torch backend runs the random starts round by round, through refine
    early = MultistartIK(LMRefiner(irb120, backend="torch"), starts=10, seed=3).solve(targets.pos, targets.quat)
    early_runs = sum(runs)
    runs.clear()
    paper = MultistartIK(LMRefiner(irb120, backend="torch"), starts=10, seed=3, stop_early=False).solve(targets.pos, targets.quat)
    assert runs == [40] * 10  # every target gets all ten starts
    monkeypatch.undo()
    for torch_result, stop_early in ((early, True), (paper, False)):  # the compiled phase: the same seeds, runs and answers
        compiled = MultistartIK(LMRefiner(irb120, backend="numba"), starts=10, seed=3, stop_early=stop_early).solve(targets.pos,
                                                                                                                    targets.quat)
        # the backends agree to rounding: over 400 runs a decision at the rounding level may cost a target one evaluation
        same = (compiled.fk_evals == torch_result.fk_evals) & (compiled.jac_evals == torch_result.jac_evals)
        assert int((~same).sum()) <= 2 and int((compiled.function_evals - torch_result.function_evals).abs().max()) <= 2
        assert torch.allclose(compiled.q[same], torch_result.q[same], atol=1e-6)
        assert torch.equal(compiled.success, torch_result.success)
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
    with_choice = HybridIK(three, LMRefiner(irb120),
                           plan=HybridPlan(restarts=0, flip_restarts=False, rank_all_answers=True)).solve(targets.pos, targets.quat)
    # the same LM run from the same first answer, seeded by hand: 3 fewer FK per target
    seeds = irb120.clamp(three.solve_all(targets.pos, targets.quat).double())[:, 0]
    plain = LMRefiner(irb120).solve(targets.pos, targets.quat, seeds)
    assert torch.equal(with_choice.fk_evals, plain.fk_evals + 3)
    assert torch.equal(with_choice.jac_evals, plain.jac_evals)
    # the first good answer (the default): the FK of the answers it checked, and LM from the one it took
    solver = HybridIK(three, LMRefiner(irb120), plan=HybridPlan(restarts=0, flip_restarts=False))
    lazy = solver.solve(targets.pos, targets.quat)
    answers = irb120.clamp(three.candidates(targets.pos, targets.quat).double())
    seeds, checked = first_good_answers(irb120, answers, targets.pos, targets.quat, solver.head_order, SUCCESS)
    plain = LMRefiner(irb120).solve(targets.pos, targets.quat, seeds[:, 0])
    assert bool(((checked >= 1) & (checked <= 3)).all())
    # the answer LM starts from was among those checked: its FK is counted once, in the choice
    assert torch.equal(lazy.fk_evals, plain.fk_evals + checked - 1)
    assert torch.equal(lazy.jac_evals, plain.jac_evals)


def test_restarts_facing_their_targets_turn_only_the_first_joint_and_count_the_fk_that_aims_them(irb120: Chain) -> None:
    """One round of random restarts, plain and faced, from the same stream: the faced seeds are the plain
    ones turned about joint 1 (so LM runs from other seeds), and each costs one more FK, counted."""
    from hik_sim.kinematics.symmetry import FirstJointSymmetry

    targets = make_eval_set(irb120, 21, 40).batch
    refiner = LMRefiner(irb120)
    plain = _restarts(refiner, targets.pos, targets.quat, None, 1, restart_rng(4), stop_early=False)
    faced = _restarts(refiner, targets.pos, targets.quat, None, 1, restart_rng(4), stop_early=False,
                      facing=FirstJointSymmetry(irb120))
    seeds = _random_configurations(irb120, 40, restart_rng(4))
    aimed = FirstJointSymmetry(irb120).face(seeds, irb120.fk(seeds).pos, targets.pos, irb120.robot.lower[0], irb120.robot.upper[0])
    alone = LMRefiner(irb120).solve(targets.pos, targets.quat, aimed)
    assert torch.equal(faced.fk_evals, alone.fk_evals + 1) and torch.equal(faced.jac_evals, alone.jac_evals)
    assert torch.allclose(faced.q, alone.q) and not torch.allclose(faced.q, plain.q)
    assert _in_limits(irb120, faced.q)


def test_the_first_good_answer_is_taken_in_head_order_and_a_target_with_none_ranks_them_all(irb120: Chain) -> None:
    """Answers checked by FK in the given head order until one is within the tolerance; that one first, the
    others after it in head order; where none is good, all H FK are spent and the answers ranked by FK."""
    answers = irb120.sample(3, torch.Generator().manual_seed(5), torch.float64)  # (H, n), the same for every target
    reached = irb120.fk(answers)
    far = irb120.fk(irb120.sample(1, torch.Generator().manual_seed(6), torch.float64))
    pos = torch.cat((reached.pos[[0, 1]], far.pos))  # targets: answer 0's pose, answer 1's, and a pose none reaches
    quat = torch.cat((reached.quat[[0, 1]], far.quat))
    seeds, checked = first_good_answers(irb120, answers.expand(3, -1, -1), pos, quat, (2, 0, 1), SUCCESS)
    assert checked.tolist() == [2, 3, 3]  # head 2 missed target 0, head 0 hit it; target 1 needed all three
    assert torch.equal(seeds[0], answers[[0, 2, 1]]) and torch.equal(seeds[1], answers[[1, 2, 0]])
    ranked = _constant_answers_network(irb120, answers).solve_all(pos[2:], quat[2:])[0].double()
    assert torch.allclose(seeds[2], ranked, atol=1e-4)  # none good: ranked best first, as the network ranks them


class _RecordingRefiner(LMRefiner):
    """An LM refiner that keeps every seed (b, n) it was asked to start from, call by call."""

    def __init__(self, chain: Chain) -> None:
        super().__init__(chain, backend="torch")  # the torch backend runs random restarts round by round, through refine
        self.seeds: list[torch.Tensor] = []

    def refine(self, pos, quat, q, seed_evaluated=None):  # noqa: ANN001, ANN201
        self.seeds.append(q.clone())
        return super().refine(pos, quat, q, seed_evaluated)


def _unreachable(count: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Targets (count, 3), (count, 4) 5 m from the IRB120's base: every LM run ends short of them."""
    return (torch.tensor([[5.0, 0.0, 0.5]], dtype=torch.float64).expand(count, 3).clone(),
            torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64).expand(count, 4).clone())


def test_an_answer_next_to_one_already_tried_is_replaced_by_a_random_restart(irb120: Chain) -> None:
    """``distinct``: a given seed within that distance (largest joint difference) of an earlier given seed of the same
    target is not run (nor flipped); a random seed takes its round. A seed farther away still runs."""
    pos, quat = _unreachable(4)
    base = irb120.sample(4, torch.Generator().manual_seed(31), torch.float64)
    near = irb120.clamp(base + 0.05)  # a repeat of base
    far = irb120.clamp(-base)  # another answer
    first = torch.stack((base, near, far), dim=1)  # (4, 3, 6)

    def seeds_run(distinct: float, flips: JointFlips | None = None) -> torch.Tensor:
        refiner = _RecordingRefiner(irb120)
        _restarts(refiner, pos, quat, first, 3, restart_rng(0), distinct=distinct, flips=flips)
        return torch.cat(refiner.seeds)

    def ran(seeds: torch.Tensor, q: torch.Tensor) -> bool:
        return bool((torch.cdist(irb120.clamp(q), seeds).min(dim=1).values < 1e-12).all())

    every, distinct = seeds_run(0.0), seeds_run(DISTINCT_SEEDS)
    assert every.shape[0] == distinct.shape[0] == 12  # three rounds of four targets either way
    assert ran(every, base) and ran(every, near) and ran(every, far)
    assert ran(distinct, base) and ran(distinct, far) and not bool((torch.cdist(near, distinct).min(dim=1).values < 1e-12).any())
    # with flip restarts, the random seed that took a repeat's round is not flipped: four flip runs fewer at least
    wrist = JointFlips(irb120)
    assert seeds_run(DISTINCT_SEEDS, wrist).shape[0] <= seeds_run(0.0, wrist).shape[0] - 4


def test_seeds_added_once_the_given_ones_are_spent_run_before_random_restarts(irb120: Chain) -> None:
    """``added`` at None: called once, for the targets still short when the given seeds are spent; its seeds run next (in the
    following rounds), the FK it spent counted; only then random seeds."""
    pos, quat = _unreachable(3)
    given = irb120.sample(3, torch.Generator().manual_seed(41), torch.float64)
    more = irb120.sample(6, torch.Generator().manual_seed(42), torch.float64).view(3, 2, 6)
    calls: list[torch.Tensor] = []

    def extend(index: torch.Tensor) -> Any:
        calls.append(index)
        spent = torch.full((index.numel(),), 2, dtype=torch.int64)
        return _Choice(more[index], spent, torch.zeros(index.numel(), dtype=torch.bool), torch.ones(index.numel(), 2, dtype=torch.bool))

    refiner = _RecordingRefiner(irb120)
    result = _restarts(refiner, pos, quat, given, 5, restart_rng(0), added=(_Added(None, extend),))
    assert len(calls) == 1 and calls[0].tolist() == [0, 1, 2]
    assert torch.equal(refiner.seeds[0], irb120.clamp(given))
    assert torch.equal(refiner.seeds[1], irb120.clamp(more[:, 0])) and torch.equal(refiner.seeds[2], irb120.clamp(more[:, 1]))
    assert len(refiner.seeds) == 5  # then two rounds of random seeds
    plain = _restarts(LMRefiner(irb120), pos, quat, torch.stack((given, more[:, 0], more[:, 1]), dim=1), 5, restart_rng(0))
    # the same runs; the extension's 2 FK counted, its seeds' own FK not again (the choice spent it)
    assert torch.equal(result.fk_evals, plain.fk_evals + 2 - 2) and torch.equal(result.jac_evals, plain.jac_evals)
    solver = make_solver("hybrid", "irb120", batched=True)
    assert isinstance(solver, HybridIK) and solver.fallback_after and solver.distinct_seeds == DISTINCT_SEEDS


def test_the_compiled_choice_of_the_first_good_answer_is_the_torch_one(irb120: Chain) -> None:
    """The hybrid's choice on the numba backend (the FK compiled) takes the same answer first, in the same order,
    spending the same FK, and says which answers it checked: those in head order up to the good one, all where
    none is good."""
    targets = make_eval_set(irb120, 21, 200).batch
    noise = torch.randn(200, 4, 6, generator=torch.Generator().manual_seed(21), dtype=torch.float64)
    scale = torch.tensor([0.0, 0.002, 0.02, 0.3], dtype=torch.float64)[torch.randint(0, 4, (200, 4), generator=torch.Generator().manual_seed(22))]
    answers = irb120.clamp(targets.q[:, None] + scale[..., None] * noise)  # some good, some near, some far
    order = (2, 0, 3, 1)
    plain = _first_good(irb120, answers, targets.pos, targets.quat, order, SUCCESS)
    compiled = _first_good(irb120, answers, targets.pos, targets.quat, order, SUCCESS, LMRefiner(irb120, backend="numba"))
    assert 0 < int(plain.found.sum()) < 200 and int(plain.fk.max()) == 4 and int(plain.fk.min()) == 1
    assert torch.equal(compiled.seeds, plain.seeds) and torch.equal(compiled.fk, plain.fk) and torch.equal(compiled.found, plain.found)
    assert torch.equal(compiled.evaluated, plain.evaluated)
    assert torch.equal(plain.evaluated.sum(dim=1), plain.fk) and bool(plain.evaluated[:, 0].all())  # the first seed was checked
    assert bool(plain.evaluated[~plain.found].all())


@pytest.mark.parametrize("name", ["harmoatt_4answers", "harmoatt_4answers_map"])
def test_the_head_order_puts_first_the_head_most_often_best_on_unseen_targets(name: str) -> None:
    """The IRB120's four-answer networks (its hybrid's seed and fallback): the order counted on random
    configurations' poses predicts which head is most often best on the hybrid table's targets (seed 777),
    and the first good answer saves FK there without losing a target against ranking all four."""
    from hik_sim.policies import load_pretrained

    chain = Chain(robot_by_id("irb120"))
    network = load_pretrained("irb120", name)
    order = head_order(network)
    assert sorted(order) == list(range(network.hypotheses)) and order == head_order(network)  # a permutation, repeatable
    targets = make_eval_set(chain, 777, 600).batch
    answers = network.candidates(targets.pos, targets.quat)
    best = network.rank(answers, targets.pos.float(), targets.quat.float())[:, 0]
    counts = torch.bincount(best, minlength=network.hypotheses)
    assert int(counts.argmax()) == order[0] and int(counts[order[0]]) > 0.4 * len(best)
    ranked, first_good = (HybridIK(network, LMRefiner(chain), plan=HybridPlan(rank_all_answers=flag)).solve(targets.pos, targets.quat)
                          for flag in (True, False))
    assert int(first_good.success.sum()) >= int(ranked.success.sum()) >= 599 and _in_limits(chain, first_good.q)
    assert float(EXACT.met(first_good.pos_err, first_good.rot_err).float().mean()) >= \
        float(EXACT.met(ranked.pos_err, ranked.rot_err).float().mean()) - 1 / 600
    # the choice itself: one FK for most targets instead of four (the means also carry a few long restart tails)
    assert float(first_good.function_evals.double().median()) <= float(ranked.function_evals.double().median()) - 3
    assert float(first_good.function_evals.double().mean()) < float(ranked.function_evals.double().mean())


def test_a_fallback_network_seeds_the_targets_none_of_the_networks_answers_is_good_for() -> None:
    """HybridIK(fallback=...): targets with a good answer among the network's are solved exactly as without
    it; the others start from the fallback network's answer, then the network's own; every FK counted."""
    from hik_sim.policies import load_pretrained

    chain = Chain(robot_by_id("irb120"))
    network, fallback = load_pretrained("irb120", "harmoatt_4answers"), load_pretrained("irb120", "mlp")
    refiner = LMRefiner(chain)
    targets = make_eval_set(chain, 5, 300).batch
    solver = HybridIK(network, refiner, fallback=fallback)
    seeds, _ = first_good_answers(chain, chain.clamp(network.candidates(targets.pos, targets.quat).double()), targets.pos,
                                  targets.quat, solver.head_order, SUCCESS)
    first = chain.fk(seeds[:, 0])
    good = SUCCESS.met(position_error(first.pos, targets.pos), rotation_error(first.quat, targets.quat))
    assert 0 < int((~good).sum()) < 300
    result = solver.solve(targets.pos, targets.quat)
    alone = HybridIK(network, refiner).solve(targets.pos[good], targets.quat[good])  # the same fresh restart stream
    # the same runs (a network's float32 answers may differ in the last bits with the batch they come in)
    assert torch.allclose(result.q[good], alone.q, atol=1e-8) and torch.equal(result.function_evals[good], alone.function_evals)
    assert bool(result.success.all()) and _in_limits(chain, result.q) and bool(torch.isfinite(result.q).all())
    from_fallback = LMRefiner(chain).solve(targets.pos[~good], targets.quat[~good],
                                           chain.clamp(fallback.solve(targets.pos[~good], targets.quat[~good]).double()))
    assert bool((result.fk_evals[~good] >= 4 + from_fallback.fk_evals).all())  # the network's 4 answers checked, then LM
    with pytest.raises(HikError, match="fallback network"):
        HybridIK(network, refiner, fallback=fallback, plan=HybridPlan(rank_all_answers=True))


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


@pytest.mark.parametrize(("corrections", "branches", "shipped"), [(0, 1, False), (3, 1, False), (0, 1, True), (3, 1, True), (3, 4, True)])
def test_one_target_takes_the_fast_path_and_agrees_with_the_batched_solve(irb120: Chain, tiny_network,  # noqa: ANN001
                                                                          corrections: int, branches: int, shipped: bool) -> None:
    from hik_sim.policies import load_pretrained

    targets = make_eval_set(irb120, 14, 25).batch
    network = load_pretrained("irb120", "harmoatt_4answers") if shipped else tiny_network  # four answers, or one
    solver = NeuralIK(network, irb120, corrections=corrections, branches=branches)
    batched = solver.solve(targets.pos, targets.quat)
    assert solver._fast is None  # a batch never builds it
    for i in range(25):
        one = solver.solve(targets.pos[i:i + 1], targets.quat[i:i + 1])
        assert torch.allclose(one.q, batched.q[i:i + 1], atol=1e-4)
        assert torch.equal(one.fk_evals, batched.fk_evals[i:i + 1])
        assert float(one.pos_err[0]) == pytest.approx(float(batched.pos_err[i]), abs=1e-4)
        assert _in_limits(irb120, one.q)
    assert solver._fast  # the single targets went through FastIKNetwork


def test_a_step_is_bounded_at_an_active_limit_not_only_projected() -> None:
    from hik_sim.solvers.single_target import _bounded_step

    rng = np.random.default_rng(0)
    jac = rng.normal(size=(6, 4))
    hessian, gradient = jac.T @ jac, jac.T @ rng.normal(size=6)
    lower, upper = -np.ones(4), np.ones(4)
    free_step = np.linalg.solve(hessian + 1e-3 * np.diag(np.diag(hessian) + 1e-9), gradient)
    k = int(np.argmax(np.abs(free_step)))  # put that joint at the limit its step pushes against
    q = np.zeros(4)
    q[k] = lower[k] if free_step[k] < 0 else upper[k]
    step = _bounded_step(hessian, gradient, 1e-3, q, lower, upper)
    assert step[k] == 0.0
    others = [i for i in range(4) if i != k]  # the others solve the system without joint k: not the projected free step
    reduced = hessian[np.ix_(others, others)]
    expected = np.linalg.solve(reduced + 1e-3 * np.diag(np.diag(reduced) + 1e-9), gradient[others])
    assert np.allclose(step[others], expected) and not np.allclose(step[others], free_step[others])
    # the batched torch step is the same
    chain_step = LMRefiner._bounded_step(torch.from_numpy(hessian)[None], torch.from_numpy(gradient)[None],
                                         torch.tensor([1e-3], dtype=torch.float64), torch.from_numpy(q)[None],
                                         torch.from_numpy(lower), torch.from_numpy(upper))
    assert torch.allclose(chain_step[0], torch.from_numpy(step))


def test_a_stalled_lm_stops_early_and_stays_finite_inside_the_limits(irb120: Chain) -> None:
    generator = torch.Generator().manual_seed(8)
    far = torch.randn(20, 3, generator=generator, dtype=torch.float64) * 3  # unreachable: the cost can only plateau
    quat = torch.nn.functional.normalize(torch.randn(20, 4, generator=generator, dtype=torch.float64), dim=-1)
    for backend in ("numba", "torch"):
        stalling = LMRefiner(irb120, backend=backend).solve(far, quat)
        patient = LMRefiner(irb120, backend=backend, rules=LMRules(stall_iterations=0)).solve(far, quat)
        assert bool((patient.iterations == 30).all()) and stalling.iterations.float().mean() < 20
        assert torch.isfinite(stalling.q).all() and _in_limits(irb120, stalling.q)
        assert not bool(stalling.success.any())
        # no worse than where it started (home): LM only accepts trials that lower the cost
        home = irb120.fk(torch.tensor(irb120.robot.home, dtype=torch.float64).expand(20, -1))
        start_cost = (home.pos - far).norm(dim=-1) ** 2 + (0.2 * rotation_residual(home.quat, quat).norm(dim=-1)) ** 2
        assert bool((stalling.pos_err ** 2 + (0.2 * stalling.rot_err) ** 2 <= start_cost + 1e-9).all())
    with pytest.raises(HikError, match="stall_progress"):
        LMRefiner(irb120, rules=LMRules(stall_progress=1.0))


def test_limit_pinned_targets_are_solved_without_nan_or_limit_violations(irb120: Chain) -> None:
    lower, upper = irb120.limits(torch.float64)
    generator = torch.Generator().manual_seed(9)
    q = irb120.sample(60, generator, torch.float64)
    pinned = torch.rand(60, 6, generator=generator, dtype=torch.float64) < 0.4  # 40 % of the joints at a limit
    q = torch.where(pinned, torch.where(torch.rand(60, 6, generator=generator, dtype=torch.float64) < 0.5, lower, upper), q)
    targets = irb120.fk(q)
    opposite = torch.where(q - lower > upper - q, lower, upper)  # every joint starts at its far limit
    for solver in (LMRefiner(irb120), MultistartIK(LMRefiner(irb120), starts=10)):
        result = solver.solve(targets.pos, targets.quat, opposite)
        assert torch.isfinite(result.q).all() and torch.isfinite(result.pos_err).all() and _in_limits(irb120, result.q)
    assert result.success.float().mean() >= 0.8  # multistart from there reaches most of them (0.83-0.97 over restart seeds 0-9)


def test_hybrid_restarts_only_targets_short_of_exact(irb120: Chain, monkeypatch: pytest.MonkeyPatch) -> None:
    answers = irb120.sample(2, torch.Generator().manual_seed(10), torch.float64)
    network = _constant_answers_network(irb120, answers)
    near = irb120.fk(irb120.clamp(answers[torch.tensor([0, 1, 0])] + 0.02))  # LM from an answer reaches these exactly
    far = make_eval_set(irb120, 15, 5).batch  # these need random restarts
    pos, quat = torch.cat((near.pos, far.pos)), torch.cat((near.quat, far.quat))
    rows = _count_lm_batches(monkeypatch)
    few = HybridIK(network, LMRefiner(irb120), plan=HybridPlan(restarts=1)).solve(pos, quat)
    rows.clear()
    many = HybridIK(network, LMRefiner(irb120), plan=HybridPlan(restarts=49)).solve(pos, quat)
    # the three near targets end exact after their first LM run and cost the same whatever the budget
    assert bool(many.success_at(REPORT_TOLERANCES["0.1mm_0.1deg"])[:3].all())
    assert torch.equal(few.function_evals[:3], many.function_evals[:3])
    assert rows[0] == 8 and len(rows) > 1 and max(rows[1:]) <= 5  # only the far targets were restarted (rows: answers' runs)
    assert many.success.float().mean() >= few.success.float().mean()
    assert bool((many.fk_evals >= 2 + many.iterations).all())  # the 2 FK of the answers' ranking are counted


@pytest.mark.parametrize("robot_name", ["irb120", "g1"])
def test_the_shipped_hybrid_solves_reachable_targets_exactly_at_a_bounded_cost(robot_name: str) -> None:
    from hik_sim.policies import hybrid_seed_name, load_pretrained
    from hik_sim.solvers.restarts import RESTARTS
    from hik_sim.solvers.single_target_ik import SINGLE_TARGET_RESTARTS

    chain = Chain(robot_by_id(robot_name))
    targets = make_eval_set(chain, 99, 400).batch
    network = load_pretrained(robot_name, hybrid_seed_name(robot_name))
    solver = HybridIK(network, LMRefiner(chain))
    assert solver.restarts == RESTARTS == SINGLE_TARGET_RESTARTS == SingleTargetIK(chain).restarts
    result = solver.solve(targets.pos, targets.quat)
    assert result.success.float().mean() >= 0.995
    assert result.success_at(REPORT_TOLERANCES["0.1mm_0.1deg"]).float().mean() >= 0.99
    assert torch.isfinite(result.q).all() and _in_limits(chain, result.q)
    choice = 1 if network.hypotheses > 1 else 0
    assert bool((result.fk_evals >= 1 + choice).all())  # the seed's FK and one answer checked, at least
    assert float(result.function_evals.double().mean()) < 45  # ~25 (IRB120) and ~33 (G1) measured; restarts only where needed


def test_with_q_init_the_closed_loop_network_follows_its_answer_nearest_q_init_first() -> None:
    """Continuity: the best of a network's answers is the wrong one to follow while tracking (which is best
    changes from step to step where two are about as good: the JVRC-1's arm swung between branches, 56 mm
    RMS on the figure-eight); with ``nearest_first`` the answer nearest ``q_init`` that meets the tolerance wins."""
    from hik_sim.policies import load_pretrained

    chain = Chain(robot_by_id("jvrc1"))
    network = load_pretrained("jvrc1", "harmoatt_4answers")
    targets = make_eval_set(chain, 99, 300).batch
    plain = NeuralIK(network, chain, corrections=3)
    nearest = NeuralIK(network, chain, corrections=3, nearest_first=True)
    without = nearest.solve(targets.pos, targets.quat)
    assert torch.equal(without.q, plain.solve(targets.pos, targets.quat).q)  # no q_init: nothing changes
    # per target, an answer within the tolerance that is not the best one, far from the best in joint space
    answers = nearest._candidates(targets.pos, targets.quat)  # (B, H, n)
    batch, hypotheses, dof = answers.shape
    pose = chain.fk(answers.reshape(-1, dof))
    pos_err = position_error(pose.pos, targets.pos.repeat_interleave(hypotheses, 0)).view(batch, hypotheses)
    rot_err = rotation_error(pose.quat, targets.quat.repeat_interleave(hypotheses, 0)).view(batch, hypotheses)
    met, best = Tolerance().met(pos_err, rot_err), nearest._score(pos_err, rot_err).argmin(dim=1)
    far = (answers - answers[torch.arange(batch), best][:, None]).norm(dim=-1) > 0.3
    other = met & far
    rows = other.any(dim=1).nonzero().flatten()
    assert rows.numel() >= 10  # measured: 47 of 300
    heads = other[rows].double().argmax(dim=1)  # the first such answer
    pos, quat, q_init = targets.pos[rows], targets.quat[rows], answers[rows, heads]
    followed = nearest.solve(pos, quat, q_init=q_init)
    # the same answer, asked again in a smaller batch: float32 rounding (the canonical network's turn) moves it ~5e-7 rad
    assert torch.allclose(followed.q, q_init, atol=1e-5) and bool(followed.success.all())
    assert bool((followed.fk_evals == hypotheses).all())  # within the tolerance as it stands: no correction
    assert not torch.allclose(plain.solve(pos, quat, q_init=q_init).q, q_init)  # plain: the best answer, another branch
    # the single-target path (batch 1, the controller's) follows the same answer
    for i in range(3):
        one = nearest.solve(pos[i:i + 1], quat[i:i + 1], q_init=q_init[i:i + 1])
        assert torch.allclose(one.q, q_init[i:i + 1], atol=1e-4) and int(one.fk_evals[0]) == hypotheses
    # an answer within the tolerance ranks before any outside it, whatever their scores
    assert int(nearest._key(torch.tensor([1.35, 1.9], dtype=torch.float64), torch.tensor([False, True])).argmin()) == 1
    assert nearest._key(1.9, True) < nearest._key(1.35, False)
    with pytest.raises(HikError, match="q_init"):
        nearest.solve(pos, quat, q_init=q_init[:, :2])
    # on a joint spanning more than a turn (the IRB120's joint 6, ±400°) a copy whole turns away is no distance at all
    irb = Chain(robot_by_id("irb120"))
    wrist = NeuralIK(load_pretrained("irb120", "harmoatt_4answers"), irb, nearest_first=True)
    q = torch.zeros(1, 6, dtype=torch.float64)
    turned, elbow = q.clone(), q.clone()
    turned[0, 5], elbow[0, 2] = 2 * math.pi, 0.5
    distance = wrist._distance(torch.stack([turned, elbow], dim=1), q)  # (1, 2)
    assert float(distance[0, 0]) == pytest.approx(0.0, abs=1e-12) and float(distance[0, 1]) == pytest.approx(0.5)
    assert np.allclose(wrist._distance(torch.stack([turned, elbow], dim=1).numpy(), q.numpy()), distance.numpy())


def test_an_ensemble_of_networks_ranks_and_follows_all_their_answers() -> None:
    from hik_sim.policies import load_pretrained

    chain = Chain(robot_by_id("talos"))
    four, one = load_pretrained("talos", "harmoatt_4answers"), load_pretrained("talos", "harmoatt")
    targets = make_eval_set(chain, 99, 300).batch
    ensemble = NeuralIK(four, chain, extra_networks=[one])
    assert ensemble.hypotheses == 5 and ensemble.networks == (four, one)
    answers = ensemble._candidates(targets.pos, targets.quat)
    assert answers.shape == (300, 5, chain.dof)
    assert torch.allclose(answers[:, :4], chain.clamp(four.candidates(targets.pos, targets.quat).double()))
    assert torch.allclose(answers[:, 4], chain.clamp(one.solve(targets.pos, targets.quat).double()))
    # open loop: the best of the five answers by FK, never worse than either network's own, all five FK counted
    tolerance = Tolerance()
    score = lambda r: r.pos_err / tolerance.position + r.rot_err / tolerance.rotation  # noqa: E731
    both = ensemble.solve(targets.pos, targets.quat)
    for alone in (NeuralIK(four, chain), NeuralIK(one, chain)):
        result = alone.solve(targets.pos, targets.quat)
        assert bool((score(both) <= score(result) + 1e-9).all())
    assert bool((both.fk_evals == 5).all()) and _in_limits(chain, both.q)
    # the single-target path (FastIKNetwork for each network) gives the same answers
    for i in range(3):
        single = ensemble.solve(targets.pos[i:i + 1], targets.quat[i:i + 1])
        assert torch.allclose(single.q, both.q[i:i + 1], atol=1e-4) and int(single.fk_evals[0]) == 5
    closed = NeuralIK(four, chain, corrections=3, extra_networks=[one]).solve(targets.pos, targets.quat)
    assert closed.success.double().mean() >= NeuralIK(four, chain, corrections=3).solve(targets.pos, targets.quat).success.double().mean()
    with pytest.raises(HikError, match="does not fit"):
        NeuralIK(four, chain, extra_networks=[load_pretrained("g1", "harmoatt")])


def test_turned_queries_reach_what_the_plain_answers_miss_near_the_first_joints_limits() -> None:
    """The G1's shoulder pitch spans 5.76 rad: near either limit all answers saturate there and the goal-shift
    corrections cannot move it. Asked for the pose turned about that joint's axis (FirstJointSymmetry), the
    network answers about the middle of its range, and the turn added back reaches the target. On the plain
    one-answer network; the shipped four-answer one takes the turn out of its input (canonical_turn) and
    gains little from it (measured: 280 → 282 of 300 beside the one-answer network)."""
    from hik_sim.kinematics.symmetry import FirstJointSymmetry
    from hik_sim.policies import load_pretrained

    chain = Chain(robot_by_id("g1"))
    four, one = load_pretrained("g1", "harmoatt_4answers"), load_pretrained("g1", "harmoatt")
    assert four.canonical_turn and not one.canonical_turn
    targets = make_eval_set(chain, 99, 300).batch
    turns = FirstJointSymmetry(chain).default_turns
    plain = NeuralIK(one, chain, corrections=3).solve(targets.pos, targets.quat)
    solver = NeuralIK(one, chain, corrections=3, first_joint_turns=turns)
    turned = solver.solve(targets.pos, targets.quat)
    assert int(turned.success.sum()) >= int(plain.success.sum()) + 15  # measured: 243 → 272 of 300
    assert bool(turned.success[plain.success].all())
    # a target the plain answers met is not asked again: the same answer, the same FK count
    assert torch.equal(turned.q[plain.success], plain.q[plain.success])
    assert torch.equal(turned.fk_evals[plain.success], plain.fk_evals[plain.success])
    missed = ~plain.success
    assert bool((turned.fk_evals[missed] >= plain.fk_evals[missed] + solver.hypotheses).all())  # a turn's answers are counted
    assert torch.isfinite(turned.q).all() and _in_limits(chain, turned.q)
    # the single-target path (the controller's) reaches the same answers
    rescued = (missed & turned.success).nonzero().flatten()[:3]
    for i in rescued.tolist():
        single = solver.solve(targets.pos[i:i + 1], targets.quat[i:i + 1])
        assert bool(single.success[0]) and torch.allclose(single.q, turned.q[i:i + 1], atol=1e-3)
    for bad in ((0.0,), (math.nan,), (math.inf, 1.0)):
        with pytest.raises(HikError, match="first_joint_turns"):
            NeuralIK(four, chain, first_joint_turns=bad)


def test_absent_answers_are_skipped_by_the_choice_and_the_restarts() -> None:
    """Targets with fewer answers than others (a behind_turn network's second set exists only beyond joint 1's range)
    carry NaN rows: the first-good choice never evaluates or counts them (both backends alike) and puts them last, and
    the restarts idle on them instead of running LM from NaN."""
    from hik_sim.solvers.answers import _first_good
    from hik_sim.solvers.restarts import _restarts, restart_rng

    chain = Chain(robot_by_id("irb120"))
    batch = make_eval_set(chain, 41, 60).batch
    generator = torch.Generator().manual_seed(5)
    near = chain.clamp(batch.q[:, None] + 0.002 * torch.randn(60, 4, chain.dof, generator=generator, dtype=torch.float64))
    far = chain.sample(60 * 4, generator, torch.float64).view(60, 4, chain.dof)
    answers = torch.cat((far, near), dim=1)  # the good answers only in the second set
    answers[:30, 4:] = math.nan  # the first 30 targets have no second set
    order = (0, 1, 2, 3, 4, 5, 6, 7)
    compiled = _first_good(chain, answers, batch.pos, batch.quat, order, Tolerance(), LMRefiner(chain, backend="numba"))
    plain = _first_good(chain, answers, batch.pos, batch.quat, order, Tolerance(), LMRefiner(chain, backend="torch"))
    for choice in (compiled, plain):
        assert bool((choice.fk[:30] == 4).all()) and not bool(choice.found[:30].any())  # NaN rows: no FK, never good
        assert bool(choice.seeds[:30, 4:].isnan().all()) and not bool(choice.seeds[:30, :4].isnan().any())  # absent last
        assert bool(choice.found[30:].all()) and bool((choice.fk[30:] == 5).all())  # four far ones, then a near one
    assert torch.equal(compiled.fk, plain.fk) and torch.equal(compiled.found, plain.found)
    assert torch.equal(compiled.seeds.nan_to_num(7.0), plain.seeds.nan_to_num(7.0))
    result = _restarts(LMRefiner(chain), batch.pos, batch.quat, compiled.seeds, 9, restart_rng(0), evaluated=compiled.evaluated)
    assert bool(torch.isfinite(result.q).all()) and _in_limits(chain, result.q)
    assert bool(result.success[30:].all())  # their good second-set answer, reached only after the four far ones


def test_a_correction_asks_only_the_network_whose_answer_it_follows() -> None:
    """Several networks' answers, corrected: each correction asks the one network that gave the followed answer, once
    (every network's answers and FK only for the first query), and counts one FK where that answer lands."""
    from hik_sim.policies import load_pretrained

    chain = Chain(robot_by_id("talos"))
    four, one = load_pretrained("talos", "harmoatt_4answers"), load_pretrained("talos", "harmoatt")
    targets = make_eval_set(chain, 43, 300).batch
    asked: list[int] = []

    def counted(real):  # noqa: ANN001, ANN202
        return lambda p, q, **kw: asked.append(p.shape[0]) or real(p, q, **kw)

    for network in (four, one):
        network.candidates = counted(network.candidates)  # type: ignore[method-assign]
    try:
        result = NeuralIK(four, chain, corrections=3, extra_networks=[one]).solve(targets.pos, targets.quat)
    finally:
        del four.candidates, one.candidates
    corrections = int(result.fk_evals.sum()) - 5 * 300  # 5 answers checked by FK, then one FK a correction
    assert corrections > 0 and sum(asked) - 2 * 300 == corrections  # the first query asks both, a correction one


@pytest.mark.parametrize("robot", ["irb120", "panda"])
def test_a_targets_hybrid_answer_does_not_depend_on_the_rest_of_its_batch(robot: str) -> None:
    """Targets solved in a batch, alone, and as copies of one another get the same answers and costs: the random restarts
    of each target come from its own stream. The shipped hybrid (with the IRB120's fallback network) first, then one
    without table seeds whose seed network is the MLP seed, so that many targets reach the random restarts."""
    from hik_sim.policies import load_pretrained
    from hik_sim.solvers.restarts import TargetStreams

    chain = Chain(robot_by_id(robot))
    targets = make_eval_set(chain, 4242, 80)
    pos, quat = targets.batch.pos, targets.batch.quat
    weak = HybridIK(load_pretrained(robot, "mlp_seed"), LMRefiner(chain), plan=HybridPlan(table_seeds=0))
    for solver in (make_solver("hybrid", robot, batched=True), weak):
        batch = solver.solve(pos, quat)
        hardest = batch.fk_evals.argsort(descending=True)[:4].tolist()
        for i in (*hardest, 0):
            alone = solver.solve(pos[i:i + 1], quat[i:i + 1])
            assert int(alone.fk_evals[0]) == int(batch.fk_evals[i]) and bool(alone.success[0]) == bool(batch.success[i])
            assert float((alone.q[0] - batch.q[i]).abs().max()) < 1e-6
        i = hardest[0]
        copies = solver.solve(pos[i:i + 1].repeat(4, 1), quat[i:i + 1].repeat(4, 1))
        assert len(set(copies.fk_evals.tolist())) == 1 and float((copies.q - copies.q[0]).abs().max()) < 1e-6
    assert int(batch.fk_evals.max()) > 60  # the weak hybrid's hardest targets ran random restarts
    assert make_solver("hybrid", robot, batched=True).solve(torch.zeros(0, 3), torch.zeros(0, 4)).q.shape == (0, chain.dof)
    # the stream itself: a target's draws depend on its pose and the draw number, not on its neighbours
    streams = TargetStreams(0)
    keys = streams.target_keys(pos[:5], quat[:5])
    together = TargetStreams.uniform(chain, keys, np.zeros(5, dtype=np.int64), 3)
    alone_draws = TargetStreams.uniform(chain, keys[2:3], np.zeros(1, dtype=np.int64), 3)
    later = TargetStreams.uniform(chain, keys[2:3], np.array([1]), 2)
    assert torch.equal(together[2], alone_draws[0]) and torch.equal(later[0], alone_draws[0, 1:])
    lower, upper = chain.limits()
    assert bool((together >= lower.double()).all()) and bool((together <= upper.double()).all())
    assert len({tuple(k) for k in together.reshape(-1, chain.dof).tolist()}) == 15
