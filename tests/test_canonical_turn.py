"""Networks with ``canonical_turn``: the first joint's turn taken out of the input (hik_sim.learning.network).

Such a network is equivariant to the turn by construction: asked about a pose turned by α about the
first joint's axis, it answers with the same joints and α added to the first one (within the
limits). Checked on every registered robot with real forward kinematics, through training, the
checkpoint and the fast forward pass.
"""

from __future__ import annotations

import copy
import math

import numpy as np
import pytest
import torch
from conftest import ALL_ROBOTS, robot_by_id

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry, range_turn
from hik_sim.learning.checkpoint import load_checkpoint
from hik_sim.learning.data import JointSelection, PoseNormalizer, make_eval_set
from hik_sim.learning.fast_network import FastIKNetwork, numba_available
from hik_sim.learning.network import IKNetwork
from hik_sim.learning.train import TrainConfig, train

SMALL = {"trunk": "dense", "channels": 4, "positions": 4, "blocks": 1, "embed_hidden": 8, "feed_forward": 16}


def _network(chain: Chain, options: dict, fixed: dict | None = None, seed: int = 0, scale: float = 0.05) -> IKNetwork:
    """A freshly built float64 network, every weight perturbed away from its initial value (not so far that
    its first joint saturates at a limit of its widened range)."""
    selection = JointSelection.for_chain(chain, fixed or {})
    lower, upper = chain.limits(torch.float32)
    network = IKNetwork("harmoatt", lower, upper, PoseNormalizer.measure(chain, selection, samples=2000), selection,
                        options, chain)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(scale * torch.randn(parameter.shape, generator=generator))
    return network.double().eval()


@pytest.mark.parametrize("robot_id", ALL_ROBOTS)
def test_the_canonical_pose_lies_in_one_half_plane_and_is_the_first_joint_turned_back(robot_id: str) -> None:
    chain = Chain(robot_by_id(robot_id))
    symmetry = FirstJointSymmetry(chain)
    q = chain.sample(100, torch.Generator().manual_seed(4), torch.float64)
    reached = chain.fk(q)
    azimuth = symmetry.azimuth(reached.pos)
    pos, quat = symmetry.move_each(reached.pos, reached.quat, -azimuth)
    assert float(symmetry.azimuth(pos).abs().max()) < 1e-9  # azimuth 0 after the turn
    turned = q.clone()
    turned[:, 0] -= azimuth  # the first joint turned back by each pose's own azimuth
    exact = chain.fk(turned)
    assert float(position_error(pos, exact.pos).max()) < 1e-12
    assert float(rotation_error(quat, exact.quat).max()) < 1e-7
    offset = pos - torch.as_tensor(symmetry.origin)
    assert float((offset @ torch.as_tensor(symmetry.reference)).min()) >= 0  # the reference's half, not its opposite


@pytest.mark.parametrize("robot_id", ALL_ROBOTS)
def test_a_canonical_network_answers_turned_poses_with_the_turn_added_to_its_first_joint(robot_id: str) -> None:
    chain = Chain(robot_by_id(robot_id))
    network = _network(chain, {**SMALL, "hypotheses": 2, "canonical_turn": True})
    symmetry = FirstJointSymmetry(chain)
    targets = make_eval_set(chain, 8, 200).batch
    lower, upper = network.lower[0], network.upper[0]  # the limits it was built with (float32 values, as every network's)
    before = network.candidates(targets.pos, targets.quat)
    for alpha in (0.25 * symmetry.span, -0.2 * symmetry.span):  # turns that keep some answers inside narrow ranges
        after = network.candidates(*symmetry.move_each(targets.pos, targets.quat, torch.full((200,), alpha, dtype=torch.float64)))
        assert float((after[..., 1:] - before[..., 1:]).abs().max()) < 1e-9  # the other joints do not change
        shift = torch.remainder(after[..., 0] - before[..., 0] - alpha + math.pi, 2 * math.pi) - math.pi
        inside = (before[..., 0] > lower + 1e-9) & (before[..., 0] < upper - 1e-9) & (after[..., 0] > lower + 1e-9) \
            & (after[..., 0] < upper - 1e-9)  # not clamped at a limit either time
        assert bool(inside.any()) and float(shift[inside].abs().max()) < 1e-9
        assert bool((after[..., 0] >= lower).all()) and bool((after[..., 0] <= upper).all())


def test_poses_on_the_axis_and_far_round_it_stay_finite_and_inside_the_limits() -> None:
    chain = Chain(robot_by_id("panda"))
    network = _network(chain, {**SMALL, "hypotheses": 3, "canonical_turn": True})
    symmetry = FirstJointSymmetry(chain)
    on_axis = torch.as_tensor(symmetry.origin) + torch.as_tensor(symmetry.axis) * torch.tensor([[0.0], [0.2], [-0.3]])
    behind = torch.tensor([[-0.5, 1e-12, 0.4], [-0.5, -1e-12, 0.4], [-0.5, 0.0, 0.4]])  # azimuth ±π: both ends of the range
    pos = torch.cat((on_axis, behind)).double()
    quat = torch.tensor([[0.9, 0.1, 0.3, -0.2]]).double().expand(6, 4)  # w stays away from 0 when turned by π
    answers = network.candidates(pos, quat)
    lower, upper = torch.tensor(network.lower), torch.tensor(network.upper)
    assert bool(torch.isfinite(answers).all())
    assert bool(((answers >= lower) & (answers <= upper)).all())
    # the two sides of azimuth π are the same pose up to 2e-12 m: same answer up to the wrap and the clamp
    assert float((answers[3, :, 1:] - answers[4, :, 1:]).abs().max()) < 1e-6


def test_bad_canonical_turn_options_are_hik_errors() -> None:
    chain = Chain(robot_by_id("irb120"))
    selection = JointSelection.for_chain(chain)
    lower, upper = chain.limits(torch.float32)
    normalizer = PoseNormalizer.measure(chain, selection, samples=500)
    with pytest.raises(HikError, match="canonical_turn must be true or false"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"canonical_turn": "yes"}, chain)
    with pytest.raises(HikError, match="needs the robot's chain"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"canonical_turn": True})
    fixed = JointSelection.for_chain(chain, {"joint_1": 0.0})
    with pytest.raises(HikError, match="revolute first joint.*'joint_1' is fixed"):
        IKNetwork("mlp", lower, upper, normalizer, fixed, {"canonical_turn": True}, chain)
    with pytest.raises(HikError, match="clamp_in_training must be true or false"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"canonical_turn": True, "clamp_in_training": 1}, chain)
    with pytest.raises(HikError, match="clamp_in_training is an option of canonical_turn networks"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"clamp_in_training": True}, chain)
    with pytest.raises(HikError, match="turn_input is an option of canonical_turn networks"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"turn_input": True}, chain)
    with pytest.raises(HikError, match="behind_turn is an option of canonical_turn networks"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"behind_turn": True}, chain)
    with pytest.raises(HikError, match="behind_turn must be true or false"):
        IKNetwork("mlp", lower, upper, normalizer, selection, {"canonical_turn": True, "behind_turn": "no"}, chain)
    with pytest.raises(HikError, match="turn_input is for the models harmoatt, mlp, not 'cycleik'"):
        IKNetwork("cycleik", lower, upper, normalizer, selection, {"canonical_turn": True, "turn_input": True}, chain)


def test_clamp_in_training_trains_on_the_answers_the_network_gives_once_trained() -> None:
    """Romeo's shoulder pitch spans ±0.785 rad: most of the circle lies outside it. Unclamped, a training
    step sees first joints out there (whose FK reaches the target, so no loss tells them apart); with
    clamp_in_training it sees the clamped answers, the very ones the network gives in eval, and a clamped
    first joint passes no gradient."""
    chain = Chain(robot_by_id("romeo"))
    targets = make_eval_set(chain, 5, 200).batch
    lower, upper = chain.limits(torch.float64)
    for clamped in (False, True):
        network = _network(chain, {**SMALL, "hypotheses": 2, "canonical_turn": True, "clamp_in_training": clamped})
        assert network.clamp_in_training is clamped
        network.train()
        train_out = network(targets.pos, targets.quat, choose=False)
        network.eval()
        with torch.no_grad():
            eval_out = network(targets.pos, targets.quat, choose=False)
        inside = ((train_out.candidates >= lower - 1e-6) & (train_out.candidates <= upper + 1e-6)).all()
        assert bool(inside) is clamped
        assert torch.allclose(train_out.candidates, eval_out.candidates) is clamped
        if clamped:
            first = train_out.candidates[..., 0]
            at_limit = ((first - lower[0]).abs() < 1e-6) | ((first - upper[0]).abs() < 1e-6)
            assert 0.2 < float(at_limit.double().mean()) < 1.0
            parameters = [p for p in network.parameters() if p.requires_grad]
            grads = torch.autograd.grad(first[at_limit].sum(), parameters, allow_unused=True, retain_graph=True)
            assert all(g is None or not bool(g.any()) for g in grads)  # a clamped first joint passes no gradient
            grads = torch.autograd.grad(first[~at_limit].sum(), parameters, allow_unused=True)
            assert any(g is not None and bool(g.any()) for g in grads)


def test_the_limit_pull_gives_pinned_answers_a_gradient_back_to_the_limit() -> None:
    """A clamp_in_training network reports in training how far each answer's first joint lay outside its range
    (0 inside, the distance to the nearer limit round the circle outside); the loss's limit_pull adds its mean
    to the total, whose gradient then moves the pinned answers' weights (the clamped FK gives them none)."""
    from hik_sim.errors import TrainingError
    from hik_sim.learning.losses import CompositeLoss, LossConfig

    chain = Chain(robot_by_id("romeo"))
    targets = make_eval_set(chain, 5, 200).batch
    lower, upper = chain.limits(torch.float64)
    network = _network(chain, {**SMALL, "hypotheses": 2, "canonical_turn": True, "clamp_in_training": True}).train()
    out = network(targets.pos, targets.quat, choose=False)
    outside, first = out.outside, out.candidates[..., 0]
    assert outside is not None and outside.shape == first.shape == (200, 2)
    at_limit = ((first - lower[0]).abs() < 1e-6) | ((first - upper[0]).abs() < 1e-6)
    assert 0.2 < float(at_limit.double().mean()) < 1.0
    assert bool((outside[~at_limit] == 0).all()) and bool((outside[at_limit] > 0).all())
    assert float(outside.max()) <= math.pi - (float(upper[0]) - float(lower[0])) / 2 + 1e-9  # at most half the gap
    reached = chain.fk(out.candidates.reshape(-1, chain.dof))
    pos, quat = reached.pos.view(200, 2, 3), reached.quat.view(200, 2, 4)
    plain, pulled = CompositeLoss(LossConfig()), CompositeLoss(LossConfig(limit_pull=2.0))
    total = pulled(pos, quat, targets.pos, targets.quat, out.fusion_weights, outside).total
    assert float(total) == pytest.approx(float(plain(pos, quat, targets.pos, targets.quat, out.fusion_weights).total)
                                         + 2.0 * float(outside.mean()))
    parameters = [p for p in network.parameters() if p.requires_grad]
    grads = torch.autograd.grad(outside[at_limit].sum(), parameters, allow_unused=True)
    assert any(g is not None and bool(g.any()) for g in grads)  # the pinned answers' weights move
    network.eval()
    assert network(targets.pos, targets.quat).outside is None  # once trained, nothing to report
    with pytest.raises(TrainingError, match="limit_pull"):
        TrainConfig(model="harmoatt", loss=LossConfig(limit_pull=1.0), model_options=(("canonical_turn", True),))
    with pytest.raises(TrainingError, match="limit_pull"):
        LossConfig(limit_pull=-1.0)


def test_a_canonical_network_trains_round_trips_and_resumes(tmp_path) -> None:  # noqa: ANN001
    robot = robot_by_id("irb120")
    path = tmp_path / "turn.pt"
    options = tuple(SMALL.items()) + (("hypotheses", 2), ("canonical_turn", True))
    config = TrainConfig(model="harmoatt", steps=60, batch=128, lr=3e-3, warmup_steps=5, model_options=options,
                         eval_size=256, eval_every=30, normalizer_samples=5000, device="cpu")
    result = train(robot, config, out=path, progress=False)
    assert result.history[-1]["pos_mean_mm"] < result.history[0]["pos_mean_mm"]
    assert result.card.model_options["canonical_turn"] is True
    chain = Chain(robot)
    targets = make_eval_set(chain, 5, 100).batch
    loaded, card = load_checkpoint(path)
    assert loaded.canonical_turn and card.model_options["canonical_turn"] is True
    assert torch.equal(loaded.solve(targets.pos, targets.quat), result.network.solve(targets.pos, targets.quat))


BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])


@pytest.mark.parametrize("variant", ["canonical", "turn_input", "behind_turn"])
@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("robot_id", ["irb120", "g1"])
@pytest.mark.parametrize("kind", ["harmoatt", "mlp"])
def test_the_fast_forward_pass_of_a_canonical_network_agrees_with_torch(robot_id: str, kind: str, backend: str,
                                                                        variant: str) -> None:
    chain = Chain(robot_by_id(robot_id))
    turn_input = variant != "canonical"
    options = {**(SMALL if kind == "harmoatt" else {"hidden": 24, "layers": 2}), "hypotheses": 3, "canonical_turn": True,
               "turn_input": turn_input, "behind_turn": variant == "behind_turn"}
    selection = JointSelection.for_chain(chain)
    lower, upper = chain.limits(torch.float32)
    network = IKNetwork(kind, lower, upper, PoseNormalizer.measure(chain, selection, samples=2000), selection, options, chain)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=torch.Generator().manual_seed(1)))
    network.eval()
    targets = make_eval_set(chain, 3, 100).batch
    if variant == "behind_turn":  # poses beyond the first joint's range, turned the other way: some among the targets
        assert bool((range_turn(FirstJointSymmetry(chain).azimuth(targets.pos), *network.lower[0:1], network.upper[0])
                     != FirstJointSymmetry(chain).azimuth(targets.pos)).any())
    reference = copy.deepcopy(network).double()
    want = reference.solve_all(targets.pos, targets.quat).numpy()
    fast = FastIKNetwork.from_network(network, backend=backend)  # numba: the turn enters the first layer's bias
    got = np.stack([fast.solve_all(p, q) for p, q in zip(targets.pos.numpy(), targets.quat.numpy())])
    assert np.abs(got - want).max() < 1e-5
    assert ((got >= np.asarray(chain.robot.lower)) & (got <= np.asarray(chain.robot.upper))).all()
    one = np.stack([fast.candidates(p, q) for p, q in zip(targets.pos.numpy(), targets.quat.numpy())])
    assert np.abs(one - reference.candidates(targets.pos, targets.quat).numpy()).max() < 1e-5  # the uncompiled call too
    x = torch.tensor([[0.1, -0.2, 0.3, 0.3, 0.9, 0.5, 0.5, 0.5, 0.5] if turn_input else [0.1, -0.2, 0.3, 0.5, 0.5, 0.5, 0.5]],
                     dtype=torch.float64)
    model_answers = reference.model(x).candidates[0].detach().numpy()  # the bare model: x is its input
    assert np.abs(fast.forward(x[0].numpy()) - model_answers).max() < 1e-5
    with pytest.raises(HikError, match="finite"):
        fast.solve(np.array([np.nan, 0.0, 0.0]), np.array([1.0, 0.0, 0.0, 0.0]))


def test_turn_input_gives_the_model_the_turn_and_only_it() -> None:
    """With turn_input the model sees (canonical position, cos, sin, canonical quaternion): two poses with one
    canonical pose, turned apart, get different canonical answers (the model can tell which turn allows
    which branch) and the same ones once the weights that read the turn are zero (nothing else changed)."""
    chain = Chain(robot_by_id("irb120"))
    network = _network(chain, {**SMALL, "canonical_turn": True, "turn_input": True}, scale=0.3)
    assert network.turn_input and network.model.pos_embed[0].in_features == 5
    symmetry = FirstJointSymmetry(chain)
    targets = make_eval_set(chain, 8, 50).batch
    turned = symmetry.move(targets.pos, targets.quat, 0.7)
    with torch.no_grad():
        first, second = network(targets.pos, targets.quat).q, network(*turned).q
        assert (first[:, 1:] - second[:, 1:]).abs().max() > 1e-4  # the turn reached the model
        network.model.pos_embed[0].weight[:, 3:] = 0.0  # the columns of cos and sin
        first, second = network(targets.pos, targets.quat).q, network(*turned).q
    assert (first[:, 1:] - second[:, 1:]).abs().max() < 1e-9
    wrapped = torch.remainder(second[:, 0] - first[:, 0] - 0.7 + math.pi, 2 * math.pi) - math.pi
    inside = (second[:, 0] > chain.robot.lower[0] + 1e-6) & (second[:, 0] < chain.robot.upper[0] - 1e-6)
    inside &= (first[:, 0] > chain.robot.lower[0] + 1e-6) & (first[:, 0] < chain.robot.upper[0] - 1e-6)
    assert bool(inside.any()) and wrapped[inside].abs().max() < 1e-9


@pytest.mark.parametrize("robot_id", ["irb120", "panda"])
def test_behind_turn_puts_the_targets_beyond_the_first_joints_range_in_the_back_half_plane(robot_id: str) -> None:
    """The IRB120's and the Panda's joint 1 leave part of the circle out. range_turn keeps a pose's azimuth as
    its turn inside the range and turns one beyond it by azimuth − π, into the back half-plane. Most
    configurations that reach a position there are bent back over the base: turned so, their canonical
    first joint (q₁ − turn) lies within π/2 of 0, as a facing arm's does (turned by the azimuth, it would
    lie near ±π, where the canonical networks answered the first joint pinned at a limit)."""
    chain = Chain(robot_by_id(robot_id))
    symmetry = FirstJointSymmetry(chain)
    lower, upper = float(chain.robot.lower[0]), float(chain.robot.upper[0])
    q = chain.sample(20000, torch.Generator().manual_seed(11), torch.float64)
    reached = chain.fk(q)
    azimuth = symmetry.azimuth(reached.pos)
    turn = range_turn(azimuth, lower, upper)
    beyond = turn != azimuth
    assert 0.03 < float(beyond.double().mean()) < 0.12  # 5–8 % of random configurations' positions lie there
    assert bool((turn.abs() <= math.pi).all()) and float((turn[~beyond] - azimuth[~beyond]).abs().max()) == 0.0
    assert float(((turn[beyond] - azimuth[beyond]).abs() - math.pi).abs().max()) < 1e-12
    wrapped = lower + torch.remainder(azimuth - lower, 2 * math.pi)
    assert bool((wrapped[beyond] > upper).all()) and bool((wrapped[~beyond] <= upper).all())
    pos, _ = symmetry.move_each(reached.pos, reached.quat, -turn)
    along = (pos - torch.as_tensor(symmetry.origin)) @ torch.as_tensor(symmetry.reference)
    assert bool((along[beyond] < 0).all()) and bool((along[~beyond] >= 0).all())  # back and front half-planes
    canonical = torch.remainder(q[:, 0] - turn + math.pi, 2 * math.pi) - math.pi
    assert float((canonical[beyond].abs() < math.pi / 2).double().mean()) > 0.5  # IRB120 64 %, Panda 54 %


def test_a_turn_input_network_trains_and_round_trips(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "turn_input.pt"
    options = tuple(SMALL.items()) + (("hypotheses", 2), ("canonical_turn", True), ("turn_input", True))
    config = TrainConfig(model="harmoatt", steps=40, batch=128, lr=3e-3, warmup_steps=5, model_options=options,
                         eval_size=256, eval_every=20, normalizer_samples=5000, device="cpu")
    result = train(robot_by_id("irb120"), config, out=path, progress=False)
    assert result.history[-1]["pos_mean_mm"] < result.history[0]["pos_mean_mm"]
    loaded, card = load_checkpoint(path)
    assert loaded.turn_input and card.model_options["turn_input"] is True
    targets = make_eval_set(Chain(robot_by_id("irb120")), 5, 100).batch
    assert torch.equal(loaded.solve(targets.pos, targets.quat), result.network.solve(targets.pos, targets.quat))


def test_the_closed_loop_policy_asks_a_canonical_network_no_turned_queries() -> None:
    from hik_sim.solvers.neural import NeuralIK
    from hik_sim.solvers.registry import make_solver

    robot = robot_by_id("irb120")
    chain = Chain(robot)
    canonical = _network(chain, {**SMALL, "hypotheses": 2, "canonical_turn": True}).float()
    plain = _network(chain, {**SMALL, "hypotheses": 2}).float()
    policy = make_solver("closed_loop", robot, network=canonical)
    assert isinstance(policy, NeuralIK) and policy.first_joint_turns == ()
    assert make_solver("closed_loop", robot, network=plain).first_joint_turns == FirstJointSymmetry(chain).default_turns
    targets = make_eval_set(chain, 6, 40).batch
    result = policy.solve(targets.pos, targets.quat)  # its corrections run on the canonical network's answers
    lower, upper = np.asarray(robot.lower), np.asarray(robot.upper)
    assert np.isfinite(result.q.numpy()).all() and ((result.q.numpy() >= lower) & (result.q.numpy() <= upper)).all()
    reached = chain.fk(result.q.double())
    assert torch.equal(result.success, (position_error(reached.pos, targets.pos) < 0.005)
                       & (rotation_error(reached.quat, targets.quat) < math.radians(2)))


def test_the_fk_a_behind_turn_network_spends_on_its_own_is_counted_by_every_solver() -> None:
    """A shipped behind_turn network (the IRB120's four-answer one) asks a pose beyond its first joint's range twice and
    keeps each head's better answer by FK: facing_fk says 2·H for exactly those poses, the FK its forward pass and the
    fast forward pass really run (counted by wrapping them), and the network-alone solver and the closed-loop policy
    add it to their counts; asked for one set at a time it spends none, and the hybrid checks both sets itself."""
    from hik_sim.policies import load_pretrained
    from hik_sim.solvers.hybrid import HybridIK
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.neural import NeuralIK

    chain = Chain(robot_by_id("irb120"))
    network = load_pretrained("irb120", "harmoatt_4answers")
    assert network.behind_turn and network.hypotheses == 4
    batch = make_eval_set(chain, 31, 400).batch
    pos, quat = batch.pos, batch.quat
    facing = network.facing_fk(pos)
    azimuth = network.symmetry.azimuth(pos.float())
    beyond = range_turn(azimuth, network.lower[0], network.upper[0]) != azimuth
    assert 0.02 < float(beyond.double().mean()) < 0.15 and torch.equal(facing, beyond.long() * 8)
    rows = []
    real_fk = network.chain.fk
    network.chain.fk = lambda q: rows.append(q.shape[0]) or real_fk(q)  # type: ignore[method-assign]
    try:
        network.candidates(pos, quat)
    finally:
        network.chain.fk = real_fk  # type: ignore[method-assign]
    assert sum(rows) == int(facing.sum()) > 0  # the forward pass's own FK: both answer sets of the poses beyond
    rows.clear()
    network.chain.fk = lambda q: rows.append(q.shape[0]) or real_fk(q)  # type: ignore[method-assign]
    try:  # asked for one set only, it spends none: the hybrid checks both sets itself, one answer at a time
        back, facing_set = network.candidates(pos, quat, turned="range"), network.candidates(pos, quat, turned="azimuth")
    finally:
        network.chain.fk = real_fk  # type: ignore[method-assign]
    merged = network.candidates(pos, quat)
    assert not rows and torch.equal(back[~beyond], merged[~beyond]) and torch.equal(facing_set[~beyond], merged[~beyond])
    assert bool(((merged[beyond] == back[beyond]) | (merged[beyond] == facing_set[beyond])).all())  # each head the better
    assert not torch.equal(back[beyond], facing_set[beyond])
    with pytest.raises(HikError, match="turned must be one of better, range, azimuth"):
        network.candidates(pos, quat, turned="both")
    fast = FastIKNetwork.from_network(network)
    scored = []
    real_scores = fast.scores
    fast.scores = lambda answers, p, q: scored.append(len(answers)) or real_scores(answers, p, q)  # type: ignore[method-assign]
    for i in range(0, 400, 7):
        before = sum(scored)
        fast.candidates(pos[i].numpy(), quat[i].numpy())
        assert sum(scored) - before == fast.facing_fk(pos[i].numpy(), quat[i].numpy()) == int(facing[i])
    # the solvers count it: the same solve with the network's own FK hidden spends exactly that much less
    solvers = {"hybrid": HybridIK(network, LMRefiner(chain)), "alone": NeuralIK(network, chain),
               "corrected": NeuralIK(network, chain, corrections=2)}
    for name, solver in solvers.items():
        counted = solver.solve(pos, quat).fk_evals
        network.facing_fk = lambda p: torch.zeros(p.shape[0], dtype=torch.int64)  # type: ignore[method-assign]
        try:
            hidden = solver.solve(pos, quat).fk_evals
        finally:
            del network.facing_fk
        extra = counted - hidden
        if name == "corrected":  # a correction asks again for a shifted goal, which may lie beyond the range itself
            assert bool((extra >= 0).all()) and bool((extra[beyond] >= 8).all()) and bool((extra % 8 == 0).all())
        elif name == "hybrid":  # it asks for both sets and checks them itself (counted there): the network spends none
            assert bool((extra == 0).all())
        else:
            assert torch.equal(extra, facing), name
    alone = solvers["alone"]  # one target a call: the fast forward pass, counted alike
    for i in torch.cat((torch.nonzero(beyond).flatten()[:3], torch.nonzero(~beyond).flatten()[:3])).tolist():
        assert int(alone.solve(pos[i:i + 1], quat[i:i + 1]).fk_evals[0]) == 4 + int(facing[i])
