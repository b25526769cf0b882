"""IK networks (MLP baseline, HarmoAtt-IK), the composite loss and the FK data they learn from."""

from __future__ import annotations

import math

import pytest
import torch

from hik_sim.learning.data import FKStream, JointSelection, PoseNormalizer, make_eval_set
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.losses import CompositeLoss, LossConfig, adaptive_smooth_l1, fusion_entropy, geodesic_angle
from hik_sim.learning.models import MODEL_KINDS, build_model, matched_mlp_hidden, mlp_hidden_for, parameter_count
from hik_sim.kinematics.rotations import quaternion_multiply, rotation_error

TINY = {"mlp": {"hidden": 32, "layers": 2},
        "harmoatt": {"trunk": "dense", "channels": 4, "positions": 4, "blocks": 2, "embed_hidden": 16, "feed_forward": 32}}


def _limits(n: int = 6) -> tuple[torch.Tensor, torch.Tensor]:
    lower = torch.linspace(-3.0, -0.5, n)
    return lower, lower + torch.linspace(0.2, 7.0, n)


@pytest.mark.parametrize("hypotheses", [1, 3])
@pytest.mark.parametrize("kind", MODEL_KINDS)
def test_outputs_stay_inside_the_limits_for_any_input(kind: str, hypotheses: int) -> None:
    lower, upper = _limits()
    torch.manual_seed(0)
    model = build_model(kind, lower, upper, hypotheses=hypotheses)
    with torch.no_grad():
        for p in model.parameters():  # large weights drive tanh into saturation
            p.mul_(50)
    inputs = torch.cat((torch.randn(256, 7), torch.randn(64, 7) * 1e6, torch.zeros(4, 7), torch.full((4, 7), -1e6)))
    out = model(inputs)
    assert out.q.shape == (328, 6)
    answers = out.q if hypotheses == 1 else out.candidates
    if hypotheses == 1:
        assert out.candidates is None
    else:
        assert out.candidates.shape == (328, hypotheses, 6) and torch.equal(out.q, out.candidates[:, 0])
    assert torch.isfinite(answers).all()
    assert (answers >= lower).all() and (answers <= upper).all()


def test_harmoatt_fusion_weights_sum_to_one_and_temperature_is_bounded() -> None:
    lower, upper = _limits()
    model = build_model("harmoatt", lower, upper, trunk="dense", blocks=3, tau_min=0.5, tau_max=2.0)
    out = model(torch.randn(100, 7) * 3)
    assert out.fusion_weights.shape == (100, 3, 3)
    assert torch.allclose(out.fusion_weights.sum(-1), torch.ones(100, 3), atol=1e-6)
    assert (out.fusion_weights > 0).all()
    assert (out.temperature >= 0.5).all() and (out.temperature <= 2.0).all()
    assert build_model("mlp", lower, upper)(torch.randn(3, 7)).fusion_weights is None


def test_parameter_matching_and_bad_options() -> None:
    lower, upper = _limits()
    target = parameter_count(build_model("harmoatt", lower, upper))
    mlp = build_model("mlp", lower, upper, hidden=mlp_hidden_for(target, 6))
    assert abs(parameter_count(mlp) - target) / target < 0.01
    with pytest.raises(HikError, match="models are: harmoatt, mlp"):
        build_model("transformer", lower, upper)
    with pytest.raises(HikError, match="bad options"):
        build_model("mlp", lower, upper, width=3)
    with pytest.raises(HikError, match="tau_min"):
        build_model("harmoatt", lower, upper, tau_min=2.0, tau_max=1.0)
    with pytest.raises(HikError, match="hypotheses must be at least 1"):
        build_model("mlp", lower, upper, hypotheses=0)
    # with several answers the MLP gets them too, and still matches HarmoAtt-IK's size
    for trunk in ("cycleik", "dense"):
        reference = parameter_count(build_model("harmoatt", lower, upper, trunk=trunk, hypotheses=4))
        mlp = build_model("mlp", lower, upper, hypotheses=4, hidden=matched_mlp_hidden(6, trunk=trunk, hypotheses=4))
        assert abs(parameter_count(mlp) - reference) / reference < 0.01


def _random_quaternions(n: int, seed: int) -> torch.Tensor:
    q = torch.randn(n, 4, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return q / q.norm(dim=-1, keepdim=True)


def test_quaternion_loss_is_sign_invariant_and_the_geodesic_angle() -> None:
    a, b = _random_quaternions(300, 0), _random_quaternions(300, 1)
    angle = geodesic_angle(a, b)
    assert torch.allclose(angle, geodesic_angle(a, -b), atol=1e-12)
    assert torch.allclose(angle, geodesic_angle(-a, b), atol=1e-12)
    assert torch.allclose(angle, rotation_error(a, b), atol=1e-9)
    loss = CompositeLoss(LossConfig(entropy_weight=0.0))
    pos = torch.zeros(300, 3, dtype=torch.float64)
    assert torch.allclose(loss(pos, a, pos, b).rotation, loss(pos, a, pos, -b).rotation)
    plain = CompositeLoss(LossConfig(sign_invariant=False))
    assert not torch.allclose(plain(pos, a, pos, b).rotation, plain(pos, a, pos, -b).rotation)
    # the gradient stays finite at zero error
    q = a.clone().requires_grad_(True)
    geodesic_angle(q, a).sum().backward()
    assert torch.isfinite(q.grad).all()


def test_adaptive_beta_follows_the_error_scale() -> None:
    config = LossConfig(entropy_weight=0.0, beta_momentum=0.5)
    loss = CompositeLoss(config).train()
    target = torch.zeros(512, 3)
    quat = torch.tensor([[1.0, 0, 0, 0]]).expand(512, 4)
    betas = []
    for scale in (0.05, 0.02, 0.005, 0.001, 0.0002):  # errors shrinking as training converges [m]
        pos = torch.randn(512, 3, generator=torch.Generator().manual_seed(0)) * scale
        for _ in range(10):
            betas.append(float(loss(pos, quat, target, quat).beta))
    assert betas[-1] < betas[9] / 20  # β shrank with the errors
    assert config.beta_min <= min(betas) and max(betas) <= config.beta_max
    assert CompositeLoss(LossConfig(adaptive_beta=False)).beta == 1.0
    errors = torch.tensor([0.0, 0.5, 1.0, 4.0])
    assert torch.allclose(adaptive_smooth_l1(errors, 1.0), torch.tensor([0.0, 0.125, 0.5, 3.5]))


@pytest.mark.slow
@pytest.mark.parametrize("hypotheses", [None, 3])
def test_adaptive_beta_follows_the_errors_inside_a_compiled_step_too(hypotheses: int | None, needs_inductor: None) -> None:
    shape = (256, 3) if hypotheses is None else (256, hypotheses, 3)
    target, quat = torch.zeros(256, 3), torch.tensor([[1.0, 0, 0, 0]]).expand(256, 4)
    reached_quat = quat if hypotheses is None else quat[:, None].expand(256, hypotheses, 4)
    eager, compiled = CompositeLoss().train(), CompositeLoss().train()
    compiled.prepare_for_compile()  # as the trainer does: the running error's in-place update stays eager
    step = torch.compile(lambda pos: compiled(pos, reached_quat, target, quat))
    for scale in (0.02, 0.01, 0.005):  # [m]: 1–4 tolerance units, far below β_max
        pos = (torch.randn(shape, generator=torch.Generator().manual_seed(1)) * scale).requires_grad_(True)
        expected = eager(pos, reached_quat, target, quat)
        got = step(pos)
        got.total.backward()
        assert float(got.beta) == pytest.approx(float(expected.beta), rel=1e-5)
    assert float(compiled.running_error) == pytest.approx(float(eager.running_error), rel=1e-5)
    assert float(compiled.beta) < 10  # it moved off β_max = 20


def test_entropy_regulariser_moves_the_fusion_weights_as_designed() -> None:
    lower, upper = _limits()
    x = torch.randn(256, 7, generator=torch.Generator().manual_seed(0))
    results = {}
    for sign in (+1.0, -1.0):
        torch.manual_seed(0)
        model = build_model("harmoatt", lower, upper, **TINY["harmoatt"])
        optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
        start = float(fusion_entropy(model(x).fusion_weights).detach())
        for _ in range(30):  # the entropy term alone, with its sign
            loss = sign * fusion_entropy(model(x).fusion_weights)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        results[sign] = (start, float(fusion_entropy(model(x).fusion_weights).detach()))
    assert results[1.0][1] < results[1.0][0] - 0.1  # +λ·H (the default sign) sharpens the fusion
    assert results[-1.0][1] > results[-1.0][0]  # −λ·H spreads it towards uniform
    assert results[-1.0][1] <= math.log(3) + 1e-6
    assert LossConfig().entropy_weight > 0


def test_fk_stream_and_eval_sets(robot) -> None:  # noqa: ANN001
    chain = Chain(robot)
    stream = FKStream(chain, 64, torch.Generator().manual_seed(3))
    first, second = next(stream), next(stream)
    assert not torch.equal(first.q, second.q)  # fresh every batch
    lower, upper = chain.limits()
    assert (first.q >= lower).all() and (first.q <= upper).all()
    assert torch.allclose(chain.fk(first.q).pos, first.pos)
    again = next(FKStream(chain, 64, torch.Generator().manual_seed(3)))
    assert torch.equal(again.q, first.q)
    a, b = make_eval_set(chain, 7, 100), make_eval_set(chain, 7, 100)
    assert a.sha256 == b.sha256 and torch.equal(a.batch.q, b.batch.q)
    assert make_eval_set(chain, 8, 100).sha256 != a.sha256
    normalizer = PoseNormalizer.measure(chain, samples=20_000)
    x = normalizer(a.batch.pos.float(), a.batch.quat.float())
    assert x.shape == (100, 7) and (x[:, :3].abs() <= 1).all() and (x[:, 3] >= 0).all()


def test_fixed_joints_stay_fixed_and_bad_selections_are_rejected() -> None:
    from conftest import robot_by_id

    chain = Chain(robot_by_id("irb120"))
    selection = JointSelection.for_chain(chain, {"joint_6": 0.5})
    assert selection.free_names == tuple(f"joint_{i}" for i in range(1, 6))
    batch = next(FKStream(chain, 32, torch.Generator().manual_seed(0), selection))
    assert torch.all(batch.q[:, 5] == 0.5)
    assert torch.allclose(chain.fk(batch.q).pos, batch.pos)
    assert torch.equal(selection.expand(selection.free(batch.q)), batch.q)
    with pytest.raises(HikError, match="chain joints are"):
        JointSelection.for_chain(chain, {"joint_7": 0.0})
    with pytest.raises(HikError, match="outside its limits"):
        JointSelection.for_chain(chain, {"joint_2": 3.0})
    with pytest.raises(HikError, match="at least one joint"):
        JointSelection.for_chain(chain, {f"joint_{i}": 0.0 for i in range(1, 7)})


def test_rotation_functions_compose() -> None:
    a = _random_quaternions(10, 2)
    identity = torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float64)
    assert torch.allclose(quaternion_multiply(a, identity.expand(10, 4)), a)


def test_winner_takes_all_loss_trains_the_best_answer_and_a_little_the_rest() -> None:
    torch.manual_seed(0)
    target_pos, target_quat = torch.randn(8, 3) * 0.3, _random_quaternions(8, 2).float()
    off_pos = target_pos[:, None] + torch.tensor([0.02, 0.0, 0.0])  # 20 mm off: 4 tolerance units
    near_pos = target_pos[:, None] + torch.tensor([1e-4, 0.0, 0.0])  # 0.1 mm off: 0.02 units
    pos = torch.cat((off_pos, near_pos, off_pos), dim=1).requires_grad_(True)  # answer 1 is best
    quat = target_quat[:, None].repeat(1, 3, 1)
    config = LossConfig(adaptive_beta=False, hypothesis_mix=0.1)
    terms = CompositeLoss(config)(pos, quat, target_pos, target_quat)
    assert float(terms.position.detach()) == pytest.approx(0.5 * 0.02**2, rel=1e-3)  # Smooth-L1 of 0.02 units, β = 1
    assert float(terms.rotation.detach()) == pytest.approx(0.0, abs=1e-2)
    terms.total.backward()
    grad = pos.grad.norm(dim=-1).mean(0)  # per answer
    assert grad[0] > 0 and grad[0] == pytest.approx(grad[2])  # the losers learn, through the ε term only
    assert float(terms.total.detach()) == pytest.approx(float((terms.position + terms.rotation).detach()) + 0.1 * (2 * 3.5 + 0.5 * 0.02**2) / 3, rel=1e-2)
    # one answer, no mix: the same loss as a plain batch
    single = CompositeLoss(LossConfig(hypothesis_mix=0.0))(pos[:, 1:2].detach(), quat[:, 1:2], target_pos, target_quat)
    plain = CompositeLoss(LossConfig())(pos[:, 1].detach(), quat[:, 1], target_pos, target_quat)
    assert float(single.total) == pytest.approx(float(plain.total))
    with pytest.raises(HikError, match="hypothesis_mix"):
        LossConfig(hypothesis_mix=1.5)


def test_sizes_torch_would_refuse_are_hik_errors() -> None:
    with pytest.raises(HikError, match="hidden >= 1 and layers >= 1, got hidden=-1"):
        build_model("mlp", -torch.ones(6), torch.ones(6), hidden=-1)
    with pytest.raises(HikError, match="bad options for model 'harmoatt'"):  # what torch refuses, named
        build_model("harmoatt", -torch.ones(6), torch.ones(6), trunk="dense", embed_hidden=-4)


def test_harmoatt_fusion_blocks_carry_the_model_and_the_ablation_removes_only_the_attention() -> None:
    lower, upper = _limits()
    torch.manual_seed(0)
    model = build_model("harmoatt", lower, upper, trunk="dense")
    share = sum(p.numel() for p in model.blocks.parameters()) / parameter_count(model)
    assert share > 0.9  # the map trunk of hik_sim 0.1 held 2.2 % in its blocks
    legacy = build_model("harmoatt", lower, upper, trunk="map", channels=16, blocks=3)
    assert sum(p.numel() for p in legacy.blocks.parameters()) / parameter_count(legacy) < 0.05
    x = torch.randn(64, 7, generator=torch.Generator().manual_seed(1))
    torch.manual_seed(0)
    ablated = build_model("harmoatt", lower, upper, trunk="dense", attention=False)
    assert parameter_count(ablated) == parameter_count(model)  # same modules, only the branches' use differs
    ablated.load_state_dict(model.state_dict())
    before_with, before_without = model(x).q.detach(), ablated(x).q.detach()
    assert not torch.allclose(before_with, before_without)
    with torch.no_grad():  # the branches' own parameters move the full model, and not the ablation
        for block in (*model.blocks, *ablated.blocks):
            block.channel_gate[-1].bias.add_(3.0)
            block.cross_cell[2].add_(-2.0)
    assert not torch.allclose(model(x).q, before_with)
    assert torch.equal(ablated(x).q, before_without)
    with pytest.raises(HikError, match="trunks are: cycleik, dense, map"):
        build_model("harmoatt", lower, upper, trunk="conv")
    with pytest.raises(HikError, match="takes feed_forward, not head_hidden"):
        build_model("harmoatt", lower, upper, trunk="dense", head_hidden=64)


def test_a_card_without_a_trunk_is_the_map_trunk_of_hik_sim_0_1() -> None:
    from hik_sim.learning.checkpoint import LEGACY_HARMOATT_OPTIONS
    from hik_sim.policies import load_pretrained

    network = load_pretrained("irb120", "harmoatt_4answers_map")  # shipped before the dense trunk existed
    assert network.model.trunk == "map" and network.card.model_options["trunk"] == "map"
    assert {k: network.card.model_options[k] for k in LEGACY_HARMOATT_OPTIONS} == LEGACY_HARMOATT_OPTIONS
    from hik_sim.learning.train import TrainConfig

    assert dict(TrainConfig(model="harmoatt").model_options)["trunk"] == "cycleik"  # new runs always say which
    assert "trunk" not in dict(TrainConfig(model="mlp").model_options)
    recorded = network.card.config  # its run's config, as written then
    assert "trunk" not in dict(recorded["model_options"])
    assert dict(TrainConfig.from_json(recorded).model_options)["trunk"] == "map"  # read as its card is: the map trunk


def test_the_default_trunk_is_the_papers_and_feature_map_options_must_name_theirs() -> None:
    import inspect

    from hik_sim.learning.models import FEATURE_MAP_OPTIONS, HarmoAttCycleIK, HarmoAttIK, harmoatt_trunk
    from hik_sim.learning.train import TrainConfig

    feature_map, paper = (set(inspect.signature(c).parameters) for c in (HarmoAttIK, HarmoAttCycleIK))
    assert set(FEATURE_MAP_OPTIONS) == feature_map - paper - {"trunk"}  # exactly the options the paper trunk lacks

    lower, upper = _limits(7)
    model = build_model("harmoatt", lower, upper)
    assert isinstance(model, HarmoAttCycleIK) and model.positions == 8 and model.attention_after == (2, 4, 6)
    explicit = build_model("harmoatt", lower, upper, trunk="cycleik")
    assert parameter_count(model) == parameter_count(explicit) == 147_192  # sized like the shipped recipe's network
    assert isinstance(build_model("harmoatt", lower, upper, trunk="dense"), HarmoAttIK)
    assert build_model("harmoatt", lower, upper, trunk="map", channels=16, blocks=3).trunk == "map"
    config = TrainConfig(model="harmoatt", model_options=(("hypotheses", 2),))
    assert config.model_options == (("trunk", "cycleik"), ("hypotheses", 2))  # the card records the trunk it holds
    assert TrainConfig(model="harmoatt", model_options=(("trunk", "dense"), ("channels", 4))).model_options[0] == ("trunk", "dense")
    assert harmoatt_trunk({"positions": 4, "width": 0.1}) == "cycleik"  # options the paper trunk takes too
    for options in ({"channels": 4}, {"blocks": 1, "feed_forward": 32}, {"embed_hidden": 8, "head_hidden": 16}):
        names = ", ".join(options)
        with pytest.raises(HikError, match=f"options {names} are the feature-map trunks' .* add trunk=dense or trunk=map"):
            build_model("harmoatt", lower, upper, **options)
        with pytest.raises(HikError, match=f"options {names} are the feature-map trunks'"):
            TrainConfig(model="harmoatt", model_options=tuple(options.items()))
    with pytest.raises(HikError, match="unknown HarmoAtt-IK trunk 'paper'; trunks are: cycleik, dense, map"):
        TrainConfig(model="harmoatt", model_options=(("trunk", "paper"),))
