"""HarmoAtt-IK as its paper describes it: CycleIK's generator with attention-fusion blocks (trunk=cycleik)."""

from __future__ import annotations

import subprocess
import sys

import pytest
import torch
from conftest import robot_by_id

from hik_sim.errors import HikError
from hik_sim.learning.models import HarmoAttCycleIK, HarmoAttIK, attention_share, build_model, parameter_count
from hik_sim.learning.models.cycleik import cycleik_layers
from hik_sim.learning.models.harmoatt import FusionBlock
from hik_sim.learning.models.harmoatt_cycleik import PAPER_ATTENTION_AFTER, SHIPPED_RECIPE, paper_width_for


def _limits(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    return -torch.ones(n), torch.ones(n)


def test_the_paper_network_is_cycleiks_stack_with_fusion_blocks_at_the_stated_layers() -> None:
    lower, upper = _limits(7)
    model = build_model("harmoatt", lower, upper, trunk="cycleik", width=0.1, hypotheses=4)
    assert isinstance(model, HarmoAttCycleIK)
    published = cycleik_layers(0.1)
    assert len(model.layers) == len(published) == 7
    for index, (width, scaled) in enumerate(zip(model.layers, published), start=1):
        if index in PAPER_ATTENTION_AFTER:  # rounded up to a whole map of `positions` rows
            assert width % model.positions == 0 and scaled <= width < scaled + model.positions
        else:
            assert width == scaled
    linears = [m for stage in model.stages for m in stage if isinstance(m, torch.nn.Linear)]
    assert [m.out_features for m in linears] == list(model.layers)
    assert all(isinstance(stage[1], torch.nn.GELU) for stage in model.stages)
    assert len(model.blocks) == len(PAPER_ATTENTION_AFTER) and all(isinstance(b, FusionBlock) for b in model.blocks)
    out = model(torch.randn(32, 7))
    assert out.q.shape == (32, 7) and out.candidates is not None and out.candidates.shape == (32, 4, 7)
    assert out.fusion_weights is not None and out.fusion_weights.shape == (32, 3, 3)
    assert torch.allclose(out.fusion_weights.sum(dim=2), torch.ones(32, 3), atol=1e-6)
    assert out.temperature is not None and bool(((out.temperature >= 0.25) & (out.temperature <= 4.0)).all())
    assert bool(((out.candidates > lower) & (out.candidates < upper)).all())


def test_the_no_attention_control_differs_by_the_attention_alone() -> None:
    lower, upper = _limits(6)
    torch.manual_seed(0)
    with_attention = build_model("harmoatt", lower, upper, trunk="cycleik", width=0.08)
    torch.manual_seed(0)
    without = build_model("harmoatt", lower, upper, trunk="cycleik", width=0.08, attention=False)
    assert parameter_count(with_attention) == parameter_count(without)
    assert [p.shape for p in with_attention.parameters()] == [p.shape for p in without.parameters()]
    x = torch.randn(16, 7)
    assert not torch.allclose(with_attention(x).q, without(x).q)
    # the control's blocks add their input: the stack is the generator with each attended layer's features doubled
    h = x
    blocks = iter(without.blocks)
    for index, stage in enumerate(without.stages, start=1):
        h = stage(h)
        if index in PAPER_ATTENTION_AFTER:
            next(blocks)
            h = 2 * h
    assert torch.allclose(without.head(h)[:, 0], without(x).q, atol=1e-6)


@pytest.mark.parametrize(("joints", "hypotheses", "position_inputs"), [(6, 4, 5), (7, 4, 5), (10, 1, 3)])
def test_the_default_width_matches_the_shipped_recipe_in_parameters(joints: int, hypotheses: int, position_inputs: int) -> None:
    lower, upper = _limits(joints)
    shipped = parameter_count(HarmoAttIK(lower, upper, hypotheses=hypotheses, position_inputs=position_inputs,
                                         **SHIPPED_RECIPE))  # type: ignore[arg-type]
    paper = HarmoAttCycleIK(lower, upper, hypotheses=hypotheses, position_inputs=position_inputs)
    assert paper.width == paper_width_for(joints, hypotheses, position_inputs)
    assert abs(parameter_count(paper) - shipped) < 0.02 * shipped  # the attended layers round to whole maps: steps of ~1 %


def test_attention_share_counts_the_branches_and_the_weight_generation_network() -> None:
    lower, upper = _limits(6)
    model = HarmoAttCycleIK(lower, upper, width=0.05, positions=4)
    share = attention_share(model)
    branch = weight = 0
    for block in model.blocks:
        branch += sum(p.numel() for m in (block.channel_gate, block.spatial_gate, block.cross_channel_mix, block.cross_position_mix)
                      for p in m.parameters()) + block.cross_cell.numel()
        weight += sum(p.numel() for p in block.weight_net.parameters())
    assert share["attention_branch_parameters"] == branch and share["weight_generation_parameters"] == weight
    assert share["parameters"] == parameter_count(model)
    assert share["attention_parameter_share"] == pytest.approx((branch + weight) / parameter_count(model))
    assert 0 < share["attention_mac_share"] < 1 and share["forward_macs"] > share["attention_macs"] > 0
    dense = attention_share(HarmoAttIK(lower, upper, **SHIPPED_RECIPE))  # type: ignore[arg-type]
    assert 0 < dense["attention_parameter_share"] < 0.05  # the shipped trunk: attention is a few per cent


def test_bad_paper_network_options_are_hik_errors() -> None:
    lower, upper = _limits(6)
    with pytest.raises(HikError, match="attention_after"):
        HarmoAttCycleIK(lower, upper, width=0.05, attention_after=(0, 9))
    with pytest.raises(HikError, match="profile"):
        build_model("harmoatt", lower, upper, trunk="cycleik", width=0.05, profile="nao")
    with pytest.raises(HikError, match="positions"):
        HarmoAttCycleIK(lower, upper, width=0.05, positions=1)


def test_the_paper_network_trains_saves_and_loads_with_the_shipped_options(tmp_path) -> None:  # noqa: ANN001
    from hik_sim.learning.checkpoint import load_checkpoint
    from hik_sim.learning.train import TrainConfig, train

    options = (("trunk", "cycleik"), ("width", 0.05), ("hypotheses", 4), ("canonical_turn", True),
               ("clamp_in_training", True), ("turn_input", True))
    config = TrainConfig(model="harmoatt", steps=20, batch=64, model_options=options, eval_size=64, eval_every=20,
                         normalizer_samples=2000, device="cpu")
    result = train(robot_by_id("irb120"), config, out=tmp_path / "paper.safetensors", progress=False)
    network, card = load_checkpoint(result.path)
    assert isinstance(network.model, HarmoAttCycleIK) and card.model_options["trunk"] == "cycleik"
    pos, quat = torch.tensor([[0.4, 0.1, 0.5]]), torch.tensor([[0.0, 1.0, 0.0, 0.0]])
    assert torch.equal(network.solve(pos, quat), result.network.solve(pos, quat))


def test_describe_prints_the_attention_share() -> None:
    done = subprocess.run([sys.executable, "-m", "hik_sim.train", "--describe", "--robot", "irb120", "--model", "harmoatt",
                           "--model-option", "trunk=cycleik", "--model-option", "hypotheses=4"],
                          capture_output=True, text=True, check=False, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "of the parameters" in done.stdout and "of the multiply-adds" in done.stdout and "trunk=cycleik" in done.stdout


def test_describe_without_a_trunk_describes_the_papers_network(capsys) -> None:  # noqa: ANN001
    from hik_sim.learning.describe import describe_network
    from hik_sim.learning.train_cli import main as train_main

    default, paper = describe_network("harmoatt", 6, {}), describe_network("harmoatt", 6, {"trunk": "cycleik"})
    assert default["options"] == {"trunk": "cycleik"} and default["parameters"] == paper["parameters"] == 147_114
    assert describe_network("harmoatt", 6, {"trunk": "dense"})["parameters"] == 652_954  # the feature-map trunk, named
    assert train_main(["--describe", "--robot", "irb120", "--model", "harmoatt"]) == 0
    assert capsys.readouterr().out.startswith("harmoatt (trunk=cycleik) for 6 joints: 147,114 parameters")
