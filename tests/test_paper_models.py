"""The seed papers' networks: CycleIK's generator (``cycleik``) and the hybrid paper's regression DNN (``regression``).

Each kind builds at HarmoAtt-IK's parameter budget, stays inside the joint limits, trains with its
own objective from the CLI, round-trips through a checkpoint and its card, and runs on the fast
inference path. The losses are checked against hand-computed numbers. Tiny and CPU only.
"""

from __future__ import annotations

import copy
import importlib.util
import json
import math
from pathlib import Path

import numpy as np
import pytest
import torch

from hik_sim.learning.checkpoint import Card, load_checkpoint, read_checkpoint
from hik_sim.learning.data import JointSelection, PoseNormalizer, make_eval_set
from hik_sim.errors import HikError, TrainingError
from hik_sim.learning.fast_network import FastIKNetwork, numba_available
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.losses import CycleIKLoss, RegressionLoss, cycleik_orientation_loss, cycleik_position_loss
from hik_sim.learning.models import (CYCLEIK_PROFILES, MATCHED_REFERENCE, CycleIKGenerator, RegressionIK, build_model,
                            matched_cycleik_width, parameter_count, size_options)
from hik_sim.learning.models.cycleik import cycleik_layers, cycleik_parameters
from hik_sim.learning.network import IKNetwork
from hik_sim.robots import get_robot, robot_names
from hik_sim.learning.train import TrainConfig, train
from hik_sim.learning.train_cli import main as train_main

BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])
TINY = {"cycleik": {"width": 0.02}, "regression": {"hidden": 24}}


@pytest.fixture(scope="module")
def irb120() -> Chain:
    return Chain(get_robot("irb120"))


def _limits(m: int) -> tuple[torch.Tensor, torch.Tensor]:
    return -torch.linspace(1.0, 3.0, m), torch.linspace(0.5, 2.0, m)


# --- the networks ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["cycleik", "regression"])
@pytest.mark.parametrize("joints", [5, 6, 7, 10])
def test_default_size_matches_harmoatt_within_one_percent(kind: str, joints: int) -> None:
    lower, upper = _limits(joints)
    reference = parameter_count(build_model("harmoatt", lower, upper, **MATCHED_REFERENCE))  # the dense trunk's default
    count = parameter_count(build_model(kind, lower, upper))
    assert abs(count / reference - 1) < 0.01, (kind, joints, count, reference)
    explicit = build_model(kind, lower, upper, **size_options(kind, joints))  # what a card records builds the same size
    assert parameter_count(explicit) == count


def test_cycleik_keeps_the_published_depth_and_width_profile() -> None:
    published = CYCLEIK_PROFILES["panda"]["layers"]
    assert cycleik_layers(1.0) == published == (1370, 880, 2980, 1000, 2710, 2290, 880)
    assert 17.5e6 < cycleik_parameters(published, 7) < 18.5e6  # ~18 M on the Panda: the GPU size (width=1)
    lower, upper = _limits(7)
    model = build_model("cycleik", lower, upper)
    assert isinstance(model, CycleIKGenerator) and len(model.layers) == 7
    ratios = np.asarray(model.layers) / np.asarray(published)
    assert np.allclose(ratios, model.width, rtol=0.01)  # one scale for every layer: the same profile
    assert model.width == pytest.approx(matched_cycleik_width(7, trunk="dense"))
    modules = list(model.trunk)
    assert [type(m).__name__ for m in modules] == ["Linear", "GELU"] * 7
    assert model.head.hypotheses == 1
    assert cycleik_layers(0.5, "valkyrie") == tuple(round(0.5 * h) for h in CYCLEIK_PROFILES["valkyrie"]["layers"])


def test_cycleik_hidden_layers_are_xavier_normal() -> None:
    torch.manual_seed(0)
    model = build_model("cycleik", *_limits(6), layers=[400, 600, 500])
    for layer in [m for m in model.trunk if isinstance(m, torch.nn.Linear)][1:]:
        std = float(layer.weight.detach().std())
        xavier = math.sqrt(2.0 / (layer.in_features + layer.out_features))
        default = 1 / math.sqrt(3 * layer.in_features)  # nn.Linear's own (Kaiming-uniform, a=√5) init
        assert abs(std - xavier) < 0.05 * xavier and abs(std - default) > 0.2 * default


def test_bad_options_are_refused() -> None:
    lower, upper = _limits(6)
    with pytest.raises(HikError, match="either width"):
        build_model("cycleik", lower, upper, width=0.1, layers=[8, 8])
    with pytest.raises(HikError, match="profiles are: panda"):
        build_model("cycleik", lower, upper, profile="nope")
    with pytest.raises(HikError, match="scale factor"):
        build_model("cycleik", lower, upper, width=-1)
    with pytest.raises(HikError, match="whole widths"):
        build_model("cycleik", lower, upper, layers=[8, 0])
    with pytest.raises(HikError, match="bad options"):
        build_model("regression", lower, upper, channels=2)


@pytest.mark.parametrize("kind", ["cycleik", "regression"])
def test_outputs_stay_within_the_joint_limits(kind: str) -> None:
    lower, upper = _limits(6)
    torch.manual_seed(1)
    model = build_model(kind, lower, upper, **TINY[kind])
    with torch.no_grad():
        for parameter in model.parameters():
            parameter.mul_(20)  # saturate the tanh head
        q = model(100 * torch.randn(256, 7)).q
    assert q.shape == (256, 6) and bool(torch.isfinite(q).all())
    assert bool(((q >= lower - 1e-6) & (q <= upper + 1e-6)).all())  # a bare model: inside up to float32 rounding
    assert isinstance(build_model("regression", lower, upper), RegressionIK)


# --- the losses -----------------------------------------------------------------------------------------------------


def test_cycleik_position_term_is_smooth_l1_with_a_1mm_beta() -> None:
    target = torch.zeros(2, 3, dtype=torch.float64)
    pos = torch.tensor([[0.0005, 0.003, 0.0], [-0.001, 0.0, 0.02]], dtype=torch.float64)  # [m]
    # per coordinate: 0.5·d²/β below β = 1 mm, |d| − β/2 above; mean over the 6 coordinates
    expected = (0.5 * 0.0005**2 / 0.001 + (0.003 - 0.0005) + 0 + (0.001 - 0.0005) + 0 + (0.02 - 0.0005)) / 6
    assert float(cycleik_position_loss(pos, target)) == pytest.approx(expected, rel=1e-12)
    assert float(cycleik_position_loss(pos, target)) == pytest.approx(
        float(torch.nn.SmoothL1Loss(beta=0.001)(pos, target)), rel=1e-12)


def test_cycleik_orientation_term_takes_the_minimum_over_the_sign() -> None:
    q = torch.tensor([[1.0, 0.0, 0.0, 0.0]], dtype=torch.float64)
    t = torch.tensor([[0.6, 0.8, 0.0, 0.0]], dtype=torch.float64)
    # +q: |d| = (0.4, 0.8) → (0.4 − 0.005) + (0.8 − 0.005) = 1.19; −q: (1.6, 0.8) → 2.39; the minimum
    assert float(cycleik_orientation_loss(q, t)) == pytest.approx(1.19, rel=1e-12)
    assert float(cycleik_orientation_loss(-q, t)) == pytest.approx(1.19, rel=1e-12)
    generator = torch.Generator().manual_seed(0)
    quats = torch.nn.functional.normalize(torch.randn(64, 4, generator=generator, dtype=torch.float64), dim=1)
    targets = torch.nn.functional.normalize(torch.randn(64, 4, generator=generator, dtype=torch.float64), dim=1)
    signs = torch.where(torch.rand(64, 1, generator=generator) < 0.5, -1.0, 1.0).double()
    assert float(cycleik_orientation_loss(quats * signs, targets)) == pytest.approx(float(cycleik_orientation_loss(quats, targets)))
    assert float(cycleik_orientation_loss(-targets, targets)) == 0.0
    small = torch.tensor([[1.0, 0.004, 0.0, 0.0]], dtype=torch.float64)  # below β = 0.01: quadratic
    assert float(cycleik_orientation_loss(small, q)) == pytest.approx(0.5 * 0.004**2 / 0.01, rel=1e-12)


def test_cycleik_loss_weights_its_terms() -> None:
    pos, target = torch.tensor([[0.0, 0.0, 0.003]]), torch.zeros(1, 3)
    q, t = torch.tensor([[1.0, 0.0, 0.0, 0.0]]), torch.tensor([[0.6, 0.8, 0.0, 0.0]])
    terms = CycleIKLoss()(pos, q, target, t)  # the Panda config's weights: 16 and 2
    assert float(terms.position) == pytest.approx(0.0025 / 3)
    assert float(terms.rotation) == pytest.approx(1.19)
    assert float(terms.total) == pytest.approx(16 * 0.0025 / 3 + 2 * 1.19)
    assert float(terms.beta) == pytest.approx(0.001)
    with pytest.raises(HikError):
        CycleIKLoss(position_beta=0)


def test_regression_loss_is_the_joint_mean_squared_error() -> None:
    q = torch.tensor([[0.1, -0.2, 0.3], [1.0, 0.0, -1.0]])
    target = torch.tensor([[0.0, 0.0, 0.0], [0.5, 0.5, 0.5]])
    expected = (0.01 + 0.04 + 0.09 + 0.25 + 0.25 + 2.25) / 6
    terms = RegressionLoss()(q, target)
    assert float(terms.total) == pytest.approx(expected) and float(terms.position) == pytest.approx(expected)


def _fk_calls_with_grad(monkeypatch: pytest.MonkeyPatch, robot, config: TrainConfig) -> tuple[int, list]:  # noqa: ANN001
    """How many FK calls of a run were differentiable (went into a loss), and the run's history."""
    calls = []
    original = Chain.fk

    def counting(self, q):  # noqa: ANN001, ANN202
        calls.append(torch.is_grad_enabled() and q.requires_grad)
        return original(self, q)

    monkeypatch.setattr(Chain, "fk", counting)
    result = train(robot, config, progress=False)
    monkeypatch.setattr(Chain, "fk", original)
    return sum(calls), result.history


def test_regression_trains_without_fk_and_cycleik_through_it(monkeypatch: pytest.MonkeyPatch) -> None:
    robot = get_robot("irb120")
    common = dict(steps=4, batch=32, eval_size=50, eval_every=100, normalizer_samples=1000, device="cpu")
    differentiable, _ = _fk_calls_with_grad(monkeypatch, robot, TrainConfig(model="regression", model_options=(("hidden", 16),),
                                                                            **common))
    assert differentiable == 0  # the loss compares joints: no FK in it
    differentiable, _ = _fk_calls_with_grad(monkeypatch, robot, TrainConfig(model="cycleik", model_options=(("width", 0.02),),
                                                                            **common))
    assert differentiable == 4  # one FK of the answers per step


def _held_out_loss(network: IKNetwork, chain: Chain, kind: str, batch) -> float:  # noqa: ANN001
    """The kind's own loss of a trained network on a fixed batch."""
    with torch.no_grad():
        q = network(batch.pos.float(), batch.quat.float()).q.double()
        if kind == "regression":
            free = list(network.selection.free_index)
            return float(RegressionLoss()(q[:, free], batch.q[:, free]).total)
        reached = chain.fk(q)
        return float(CycleIKLoss()(reached.pos, reached.quat, batch.pos, batch.quat).total)


@pytest.mark.parametrize("kind", ["cycleik", "regression"])
def test_a_tiny_run_reduces_the_loss(irb120: Chain, kind: str) -> None:
    options = {"cycleik": (("width", 0.05),), "regression": (("hidden", 64),)}[kind]
    # q6 fixed: in the full space joint 6's ±400° range makes q6 and q6 ± 2π the same pose, an error no regression can remove
    fixed = (("joint_6", 0.0),)
    held_out = make_eval_set(irb120, 77, 2000, JointSelection.for_chain(irb120, dict(fixed))).batch
    losses = []
    for steps in (1, 25):  # the first step runs at a fifth of the rate (warm-up): next to no training
        config = TrainConfig(model=kind, steps=steps, batch=128, lr=3e-3, warmup_steps=5, eval_size=20, eval_every=100,
                             normalizer_samples=1000, device="cpu", model_options=options, fixed_joints=fixed)
        losses.append(_held_out_loss(train(get_robot("irb120"), config, progress=False).network, irb120, kind, held_out))
    assert losses[1] < 0.95 * losses[0], losses  # seeded: the same numbers every run


def test_objectives_follow_the_model_kind() -> None:
    assert TrainConfig(model="cycleik").objective == "cycleik"
    assert TrainConfig(model="cycleik").lr == pytest.approx(2.4e-4)  # CycleIK's Panda config
    assert TrainConfig(model="cycleik", model_options=(("profile", "valkyrie"),)).lr == pytest.approx(4.4e-4)
    assert TrainConfig(model="regression").objective == "regression" and TrainConfig(model="regression").lr == 1e-3
    assert TrainConfig(model="harmoatt").objective == "composite" and TrainConfig().lr == 1e-3
    assert TrainConfig(model="cycleik", objective="composite").objective == "composite"  # CycleIK's net with our loss
    assert TrainConfig.from_json(TrainConfig(model="cycleik").to_json()) == TrainConfig(model="cycleik")
    with pytest.raises(HikError, match="objectives are"):
        TrainConfig(objective="nope")
    with pytest.raises(HikError, match="several hypotheses"):
        TrainConfig(model="mlp", objective="regression", model_options=(("hypotheses", 2),))


# --- CLI, checkpoints and cards -------------------------------------------------------------------------------------


@pytest.mark.parametrize(("kind", "extra"), [("cycleik", []), ("regression", ["--fix-joint", "joint_6=0"])])
def test_cli_trains_and_the_checkpoint_round_trips(tmp_path: Path, kind: str, extra: list[str]) -> None:
    out = tmp_path / f"{kind}.pt"
    argv = ["--robot", "irb120", "--model", kind, "--steps", "2", "--batch", "16", "--eval-size", "50", "--eval-every", "2",
            "--out", str(out), "--no-progress", *extra]
    assert train_main(argv) == 0
    card_json = json.loads(out.with_suffix(".json").read_text())
    config = card_json["config"]
    assert card_json["model"] == kind and config["objective"] == kind
    robot = get_robot("irb120")
    outputs = robot.dof - len(extra) // 2
    assert card_json["model_options"] == size_options(kind, outputs)  # the size chosen by default is on the card
    reference = parameter_count(build_model("harmoatt", *_limits(outputs), **MATCHED_REFERENCE))
    assert abs(card_json["parameters"] / reference - 1) < 0.01
    assert config["lr"] == pytest.approx(2.4e-4 if kind == "cycleik" else 1e-3)
    card = Card.from_json(card_json)
    assert Card.from_json(card.to_json()) == card
    network, loaded = load_checkpoint(out, robot)
    assert loaded == card and network.kind == kind and network.selection.fixed == card.fixed_joints
    payload = read_checkpoint(out)
    rebuilt = IKNetwork(kind, torch.tensor(card.lower), torch.tensor(card.upper),
                        PoseNormalizer(torch.tensor(card.pos_min), torch.tensor(card.pos_max)),
                        JointSelection(tuple(card.joint_names), card.fixed_joints), card.model_options)
    rebuilt.load_state_dict(payload["state_dict"])
    targets = make_eval_set(Chain(robot), 9, 20).batch
    assert torch.equal(rebuilt.solve(targets.pos, targets.quat), network.solve(targets.pos, targets.quat))
    # resuming continues with the same objective; another objective is refused
    assert train_main(argv[:5] + ["3"] + argv[6:] + ["--resume", str(out)]) == 0
    assert read_checkpoint(out)["card"]["steps"] == 3
    with pytest.raises(TrainingError, match="objective"):
        train(robot, TrainConfig(model=kind, objective="composite", steps=4, batch=16, eval_size=50, normalizer_samples=1000,
                                 fixed_joints=tuple(card.fixed_joints.items())), resume=out, progress=False)


# --- the fast inference path ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("kind", ["cycleik", "regression"])
@pytest.mark.parametrize("fixed", [{}, {"joint_6": 0.0}])
def test_fast_network_agrees_with_torch(irb120: Chain, kind: str, fixed: dict, backend: str) -> None:
    selection = JointSelection.for_chain(irb120, fixed)
    lower, upper = irb120.limits(torch.float32)
    options = {"cycleik": {"layers": [12, 9, 20, 10, 16, 14, 9]}, "regression": {"hidden": 24, "layers": 3}}[kind]
    network = IKNetwork(kind, lower, upper, PoseNormalizer.measure(irb120, selection, samples=2000), selection, options, irb120)
    generator = torch.Generator().manual_seed(4)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    network.eval()
    targets = make_eval_set(irb120, 3, 100, selection).batch
    reference = copy.deepcopy(network).double().eval()
    with torch.no_grad():
        expected = reference(targets.pos, targets.quat).q.numpy()
    fast = FastIKNetwork.from_network(network, backend=backend)
    mine = np.stack([fast.solve(p, q) for p, q in zip(targets.pos.numpy(), targets.quat.numpy())])
    assert np.abs(mine - expected).max() < 1e-5
    for name, value in fixed.items():
        assert (mine[:, irb120.joint_names.index(name)] == value).all()


# --- scripts/train_pretrained.py ------------------------------------------------------------------------------------


def _train_pretrained():  # noqa: ANN202
    script = Path(__file__).resolve().parents[1] / "scripts" / "train_pretrained.py"
    spec = importlib.util.spec_from_file_location("train_pretrained", script)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_train_pretrained_has_the_paper_models(tmp_path: Path) -> None:
    script = _train_pretrained()
    jobs = script.jobs(["irb120", "g1"])
    stems = {(robot, stem): (model, fixed) for robot, model, stem, fixed, _ in jobs}
    assert stems[("irb120", "cycleik")] == ("cycleik", ()) and stems[("g1", "cycleik")] == ("cycleik", ())
    assert stems[("irb120", "regression")] == ("regression", ())
    assert stems[("irb120", "regression_q6fixed")] == ("regression", (("joint_6", 0.0),))
    assert ("g1", "regression") not in stems
    assert dict(script.model_options("cycleik", "g1", (), 1)) == size_options("cycleik", 7)
    assert dict(script.model_options("regression", "irb120", (("joint_6", 0.0),), 1)) == size_options("regression", 5)
    out = tmp_path / "shipped"
    argv = ["--robots", "irb120", "--only", "cycleik", "regression_q6fixed", "--steps", "2", "--batch", "16", "--device", "cpu",
            "--out", str(out), "--summary", str(tmp_path / "summary")]
    assert script.main(argv) == 0
    index = json.loads((out / "index.json").read_text())
    assert set(index) == {"irb120/cycleik", "irb120/regression_q6fixed"}
    _, card = load_checkpoint(out / "irb120" / "cycleik.safetensors", get_robot("irb120"))
    assert card.config["objective"] == "cycleik" and card.config["lr"] == pytest.approx(2.4e-4)
    _, card = load_checkpoint(out / "irb120" / "regression_q6fixed.safetensors", get_robot("irb120"))
    assert card.config["objective"] == "regression" and card.fixed_joints == {"joint_6": 0.0}


def test_train_pretrained_trains_the_closed_loop_network_with_the_shipped_recipe(tmp_path: Path) -> None:
    """``harmoatt_4answers`` trains ``CLOSED_LOOP_RECIPE`` (the small network with the first joint's turn taken
    out of its input), the recipe of the shipped ones; the one-answer pair keeps the default size."""
    script = _train_pretrained()
    four = dict(script.model_options("harmoatt", "g1", (), 4, "harmoatt_4answers"))
    assert four == {**dict(script.CLOSED_LOOP_RECIPE), **dict(script.CLOSED_LOOP_EXTRAS["g1"]), "hypotheses": 4}
    assert four["canonical_turn"] is True and four["turn_input"] is True  # the G1's options
    assert "canonical_turn" not in dict(script.model_options("harmoatt", "g1", (), 1, "harmoatt"))
    from hik_sim.policies import load_pretrained

    for robot in ("g1", "panda"):  # the one-answer pair: the dense trunk at its default size, as its cards record
        for name in ("harmoatt", "mlp"):
            card = load_pretrained(robot, name).card
            assert dict(script.model_options(name, robot, (), 1, name)) == card.model_options == dict(card.config["model_options"])
    import argparse  # the iCub's closed-loop network trains with the limit pull, nothing else does

    args = argparse.Namespace(lr=3e-3, cycleik_lr=1e-4, batch=256, seed=0, device="cpu", compile=False)
    assert script._config(args, "icub", "harmoatt", (), 4, 10, 60.0, "harmoatt_4answers").loss.limit_pull == 10.0
    assert script._config(args, "icub", "harmoatt", (), 1, 10, 60.0, "harmoatt").loss.limit_pull == 0.0
    assert script._config(args, "g1", "harmoatt", (), 4, 10, 60.0, "harmoatt_4answers").loss.limit_pull == 0.0
    out = tmp_path / "shipped"
    argv = ["--robots", "g1", "--only", "harmoatt_4answers", "--steps", "2", "--batch", "16", "--device", "cpu",
            "--out", str(out), "--summary", str(tmp_path / "summary")]
    assert script.main(argv) == 0
    network, card = load_checkpoint(out / "g1" / "harmoatt_4answers.safetensors", get_robot("g1"))
    assert network.canonical_turn and network.hypotheses == 4 and 140_000 < card.parameters < 155_000
    shipped = load_pretrained("jvrc1", "harmoatt_4answers").card  # a robot that ships the dense trunk
    assert {k: shipped.model_options[k] for k in dict(script.CLOSED_LOOP_RECIPE)} == dict(script.CLOSED_LOOP_RECIPE)
    for robot in robot_names():  # every shipped dense network of the recipe: the script's options are its card's
        card = load_pretrained(robot, "harmoatt_4answers").card  # (a paper-trunk one: tests/test_train_paper_trunk.py)
        if card.model_options.get("canonical_turn") and card.model_options.get("trunk") == "dense":
            want = dict(script.model_options("harmoatt", robot, (), 4, "harmoatt_4answers"))
            assert {k: card.model_options.get(k, False) for k in want} == want, robot
            loss = dict(script.CLOSED_LOOP_LOSS.get(robot, ()))  # and the loss options it trained with
            assert {k: card.config["loss"].get(k, 0.0) for k in loss} == loss, robot
            assert card.config["loss"].get("limit_pull", 0.0) == loss.get("limit_pull", 0.0), robot
    assert dict(script.model_options("harmoatt", "jvrc1", (), 4, "harmoatt_4answers"))["turn_input"] is True
