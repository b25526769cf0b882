"""NetworkOptions: the network's own options parsed once from a card's or a constructor's model_options; every
shipped card parses to the options its networks were trained with; the canonical turn's arithmetic in torch
(IKNetwork) agrees with the one plain definition the NumPy and numba paths share (_canonical_turn)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.symmetry import FirstJointSymmetry, range_turn, wrap_first_joint
from hik_sim.learning import _canonical_turn
from hik_sim.learning.checkpoint import LEGACY_HARMOATT_OPTIONS, Card, load_checkpoint
from hik_sim.learning.network_options import NetworkOptions
from hik_sim.robots import get_robot

ROOT = Path(__file__).resolve().parents[1]
CARDS = sorted((ROOT / "hik_sim" / "policies" / "pretrained").glob("*/*.json")) + sorted((ROOT / "benchmarks" / "checkpoints").glob("*/*.json"))
CANONICAL = NetworkOptions(canonical_turn=True, clamp_in_training=True, turn_input=True)
BEHIND = {"irb120", "panda"}  # the arms whose first joint leaves part of the circle out


def _card(path: Path) -> Card:
    data = json.loads(path.read_text())
    return Card.from_json(data.get("card", data))


def test_every_shipped_card_parses_to_the_options_it_was_trained_with() -> None:
    assert len(CARDS) >= 40  # 8 robots' pretrained networks and the benchmark checkpoints
    seen = set()
    for path in CARDS:
        card = _card(path)
        options, model = NetworkOptions.parse(card.model_options, card.model)
        if path.stem == "harmoatt_4answers":
            expected = NetworkOptions(**{**vars(CANONICAL), "behind_turn": path.parent.name in BEHIND})
            assert model["position_inputs"] == 5  # turn_input: the canonical position and (cos, sin)
        else:
            expected = NetworkOptions()
            assert "position_inputs" not in model and "in_features" not in model
        assert options == expected, path
        assert not set(model) & {"canonical_turn", "clamp_in_training", "turn_input", "behind_turn", "turn"}
        if card.model == "harmoatt":  # the card loader writes the trunk it means: map where the card names none
            raw = json.loads(path.read_text())
            raw = raw.get("card", raw)
            assert card.model_options["trunk"] == raw["model_options"].get("trunk", LEGACY_HARMOATT_OPTIONS["trunk"])
        seen.add(options)
    assert len(seen) == 3  # plain, canonical, canonical + behind_turn


@pytest.mark.slow
@pytest.mark.parametrize("robot", ["irb120", "icub"])
def test_loaded_canonical_networks_carry_their_parsed_options(robot: str) -> None:
    network, card = load_checkpoint(ROOT / "hik_sim" / "policies" / "pretrained" / robot / "harmoatt_4answers.safetensors")
    assert network.options == NetworkOptions.parse(card.model_options, card.model)[0]
    assert network.options.behind_turn is (robot in BEHIND) and network.options.turn_input and network.symmetry is not None
    assert network.canonical_turn and network.behind_turn is network.options.behind_turn


def test_a_card_without_a_trunk_loads_the_map_trunk_and_a_constructor_call_the_papers() -> None:
    card = _card(ROOT / "hik_sim" / "policies" / "pretrained" / "irb120" / "harmoatt_4answers_map.json")
    assert card.model_options["trunk"] == "map" and card.model_options["hypotheses"] == 4
    from hik_sim.learning.data import JointSelection, PoseNormalizer
    from hik_sim.learning.models import HarmoAttCycleIK
    from hik_sim.learning.network import IKNetwork

    chain = Chain(get_robot("irb120"))
    lower, upper = chain.limits(torch.float32)

    def network(options: dict) -> IKNetwork:
        return IKNetwork("harmoatt", lower, upper, PoseNormalizer(torch.zeros(3), torch.ones(3)), JointSelection.for_chain(chain),
                         options)

    assert isinstance(network({"width": 0.02}).model, HarmoAttCycleIK)
    dense = network({"trunk": "dense", "channels": 4, "positions": 4, "blocks": 1, "embed_hidden": 8})
    assert isinstance(dense.model.trunk_head, torch.nn.GELU)  # dense: the head reads the map itself
    with pytest.raises(HikError, match="options channels, blocks are the feature-map trunks'"):
        network({"channels": 4, "blocks": 1})


def test_the_canonical_recipe_is_the_three_options_together() -> None:
    options, model = NetworkOptions.parse({"turn": "canonical", "hidden": 32}, "mlp")
    assert options == CANONICAL and model == {"hidden": 32, "in_features": 9}
    assert NetworkOptions.parse({"turn": "canonical", "behind_turn": True, "turn_input": True}, "harmoatt")[0] == NetworkOptions(
        True, True, True, True)
    with pytest.raises(HikError, match="turn must be one of canonical, got 'sideways'"):
        NetworkOptions.parse({"turn": "sideways"}, "mlp")
    with pytest.raises(HikError, match="turn=canonical sets clamp_in_training=true; got clamp_in_training=False"):
        NetworkOptions.parse({"turn": "canonical", "clamp_in_training": False}, "mlp")
    with pytest.raises(HikError, match="turn_input is for the models harmoatt, mlp, not 'cycleik'"):
        NetworkOptions.parse({"turn": "canonical"}, "cycleik")


def test_bad_options_name_the_option_and_what_is_valid() -> None:
    with pytest.raises(HikError, match="behind_turn must be true or false, got 'yes'"):
        NetworkOptions.parse({"canonical_turn": True, "behind_turn": "yes"}, "harmoatt")
    with pytest.raises(HikError, match="turn_input is an option of canonical_turn networks: give canonical_turn=true too"):
        NetworkOptions.parse({"turn_input": True}, "harmoatt")
    with pytest.raises(HikError, match="clamp_in_training must be true or false, got 1"):
        NetworkOptions(canonical_turn=True, clamp_in_training=1)  # type: ignore[arg-type]
    options = NetworkOptions()
    with pytest.raises(AttributeError):
        options.canonical_turn = True  # type: ignore[misc]  # frozen: parsed once, read everywhere


@pytest.mark.parametrize(("robot", "behind"), [("irb120", True), ("panda", True), ("romeo", False)])
def test_the_torch_turn_agrees_with_the_plain_definition(robot: str, behind: bool) -> None:
    """IKNetwork's turn (FirstJointSymmetry, range_turn, wrap_first_joint in float64 torch) and _canonical_turn's
    canonical_pose and turn_back, which the NumPy and numba paths run, agree to float64 rounding."""
    chain = Chain(get_robot(robot))
    symmetry = FirstJointSymmetry(chain)
    lower, upper = float(chain.robot.lower[0]), float(chain.robot.upper[0])
    turn = _canonical_turn.CanonicalTurn(symmetry, lower, upper, compiled=False, behind=behind)
    rng = np.random.default_rng(3)
    pos = rng.uniform(-0.8, 0.8, size=(200, 3))
    quat = rng.normal(size=(200, 4))
    quat /= np.linalg.norm(quat, axis=1, keepdims=True)
    azimuth = symmetry.azimuth(torch.tensor(pos))
    torch_turn = range_turn(azimuth, lower, upper) if behind else azimuth
    torch_pos, torch_quat = symmetry.move_each(torch.tensor(pos), torch.tensor(quat), -torch_turn)
    answers = rng.uniform(lower - math.pi, upper + math.pi, size=(200, 3, 1))
    torch_back = wrap_first_joint(torch.tensor(answers[..., 0]) + torch_turn[:, None], lower, upper, clamp=True).numpy()
    scale = float(np.abs(pos).max())
    turned_back = 0
    for k in range(200):
        status, p, q, angle = turn.canonical(pos[k], quat[k])
        assert status == 0
        assert angle == pytest.approx(float(torch_turn[k]), abs=1e-12)
        assert np.abs(p - torch_pos[k].numpy()).max() < 1e-12 * scale
        assert np.abs(q - torch_quat[k].numpy()).max() < 1e-12
        back = answers[k].copy()
        turned_back += turn.back(back, angle)
        assert np.abs(back[:, 0] - torch_back[k]).max() < 1e-12
    assert 0 < turned_back < 200  # some answers land beyond the range and go to a limit, most do not
    assert behind is bool((torch_turn != azimuth).any())


def test_the_fast_network_does_not_import_the_solvers() -> None:
    code = """
import sys, torch
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.data import JointSelection, PoseNormalizer
from hik_sim.learning.fast_network import FastIKNetwork
from hik_sim.learning.network import IKNetwork
from hik_sim.robots import get_robot
chain = Chain(get_robot("irb120"))
lower, upper = chain.limits(torch.float32)
net = IKNetwork("mlp", lower, upper, PoseNormalizer(torch.zeros(3), torch.ones(3)), JointSelection.for_chain(chain),
                {"hidden": 8, "layers": 1, "hypotheses": 2, "turn": "canonical", "behind_turn": True}, chain)
fast = FastIKNetwork.from_network(net, backend="numpy")
assert fast.options.behind_turn and fast.kinematics is None
print(fast.solve([0.3, 0.2, 0.4], [1.0, 0.0, 0.0, 0.0]).shape, sorted(m for m in sys.modules if m.startswith("hik_sim.solvers")))
"""
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT).stdout
    assert out.strip() == "(6,) []"
