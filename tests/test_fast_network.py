"""FastIKNetwork computes the same function as the torch network, for every shipped network and every model option.

The reference is the torch network in float64 (``copy.deepcopy(network).double()``): the float32
network is not reproducible to 1e-5 by any other program, not even by itself at another batch size
(see :mod:`hik_sim.learning.fast_network`); its float64 forward pass of the same weights is.
"""

from __future__ import annotations

import copy
import json

import numpy as np
import pytest
import torch

from hik_sim.learning import fast_network
from hik_sim.learning.data import JointSelection, PoseNormalizer, make_eval_set
from hik_sim.errors import HikError
from hik_sim.learning.fast_network import FastIKNetwork, numba_available
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.flat_chain import flat_geometry
from hik_sim.learning.network import IKNetwork
from hik_sim.policies import PRETRAINED_DIR, load_pretrained
from hik_sim.robots import get_robot
from hik_sim.solvers.single_target import SingleTargetKinematics

TOLERANCE = 1e-5  # [rad or m], joint values
TARGETS = 200
SHIPPED = sorted(json.loads((PRETRAINED_DIR / "index.json").read_text(encoding="utf-8")))
BACKENDS = ["numpy"] + (["numba"] if numba_available() else [])


def _reference(network: IKNetwork, pos: torch.Tensor, quat: torch.Tensor) -> tuple[np.ndarray, np.ndarray]:
    """The float64 torch network's unranked candidates (B, H, n) and ranked answers (B, H, n)."""
    reference = copy.deepcopy(network).double().eval()
    with torch.no_grad():
        out = reference(pos, quat, choose=False)
    candidates = out.candidates if out.candidates is not None else out.q[:, None]
    return candidates.numpy(), reference.solve_all(pos, quat).numpy()


def _check_agreement(network: IKNetwork, chain: Chain, selection: JointSelection, backend: str, seed: int = 3) -> None:
    targets = make_eval_set(chain, seed, TARGETS, selection).batch
    candidates, ranked = _reference(network, targets.pos, targets.quat)
    fast = FastIKNetwork.from_network(network, backend=backend)
    assert fast.backend == backend and fast.hypotheses == network.hypotheses
    pos, quat = targets.pos.numpy(), targets.quat.numpy()
    mine = np.stack([fast.candidates(p, q) for p, q in zip(pos, quat)])
    mine_ranked = np.stack([fast.solve_all(p, q) for p, q in zip(pos, quat)])
    best = np.stack([fast.solve(p, q) for p, q in zip(pos, quat)])
    assert mine.shape == candidates.shape == (TARGETS, network.hypotheses, chain.dof)
    assert mine.dtype == np.float64
    assert np.abs(mine - candidates).max() < TOLERANCE
    assert np.abs(mine_ranked - ranked).max() < TOLERANCE
    assert np.abs(best - ranked[:, 0]).max() < TOLERANCE
    lower, upper = np.asarray(chain.robot.lower), np.asarray(chain.robot.upper)
    assert ((mine >= lower) & (mine <= upper)).all()
    for name, value in selection.fixed.items():
        assert (mine[..., chain.joint_names.index(name)] == value).all()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("name", SHIPPED)
def test_every_shipped_network_agrees_with_torch(name: str, backend: str) -> None:
    robot, model = name.split("/")
    network = load_pretrained(robot, model)
    chain = network.chain or Chain(get_robot(robot))
    _check_agreement(network, chain, network.selection, backend)


@pytest.fixture(scope="module")
def irb120() -> Chain:
    return Chain(get_robot("irb120"))


TINY = {
    "dense": ("harmoatt", {"trunk": "dense", "channels": 4, "positions": 6, "blocks": 2, "embed_hidden": 8, "feed_forward": 12}),
    "map": ("harmoatt", {"trunk": "map", "channels": 4, "positions": 5, "blocks": 2, "embed_hidden": 8, "head_hidden": 10}),
    "no_attention": ("harmoatt", {"trunk": "dense", "channels": 4, "positions": 4, "blocks": 2, "embed_hidden": 8,
                                  "attention": False}),
    "map_no_attention": ("harmoatt", {"trunk": "map", "channels": 4, "positions": 4, "blocks": 1, "embed_hidden": 8,
                                      "attention": False}),
    "dense_3answers": ("harmoatt", {"trunk": "dense", "channels": 4, "positions": 4, "blocks": 1, "embed_hidden": 8,
                                    "hypotheses": 3}),
    "map_3answers": ("harmoatt", {"trunk": "map", "channels": 4, "positions": 4, "blocks": 2, "embed_hidden": 8,
                                  "head_hidden": 12, "hypotheses": 3}),
    "mlp": ("mlp", {"hidden": 24, "layers": 3}),
    "mlp_3answers": ("mlp", {"hidden": 16, "layers": 2, "hypotheses": 3}),
}


def _tiny(chain: Chain, kind: str, options: dict, fixed: dict | None = None, seed: int = 0) -> IKNetwork:
    """A freshly built network whose every parameter (biases, norms, gates) is perturbed away from its initial value."""
    selection = JointSelection.for_chain(chain, fixed or {})
    normalizer = PoseNormalizer.measure(chain, selection, samples=2000)
    lower, upper = chain.limits(torch.float32)
    network = IKNetwork(kind, lower, upper, normalizer, selection, options, chain=chain)
    generator = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for parameter in network.parameters():
            parameter.add_(0.3 * torch.randn(parameter.shape, generator=generator))
    return network.eval()


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", sorted(TINY))
def test_freshly_built_networks_agree_with_torch(irb120: Chain, variant: str, backend: str) -> None:
    kind, options = TINY[variant]
    network = _tiny(irb120, kind, options)
    _check_agreement(network, irb120, network.selection, backend)


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", ["dense_3answers", "map", "mlp_3answers"])
def test_fixed_joints_are_filled_in(irb120: Chain, variant: str, backend: str) -> None:
    kind, options = TINY[variant]
    network = _tiny(irb120, kind, options, fixed={"joint_6": 0.3, "joint_4": -0.2})
    _check_agreement(network, irb120, network.selection, backend)


@pytest.mark.parametrize("backend", BACKENDS)
def test_quaternion_sign_and_scale_match_the_network(irb120: Chain, backend: str) -> None:
    network = _tiny(irb120, *TINY["dense"])
    fast = FastIKNetwork.from_network(network, backend=backend)
    targets = make_eval_set(irb120, 5, 4).batch
    for pos, quat in zip(targets.pos, targets.quat):
        base = fast.solve(pos.numpy(), quat.numpy())
        assert np.array_equal(base, fast.solve(pos.numpy(), (-quat).numpy()))  # q and −q: one target
        for scale in (2.5, 1e-6, 1e300):  # any length, normalised as IKNetwork.solve_all does (1e300 without overflow)
            scaled = scale * quat
            _, ranked = _reference(network, pos[None], scaled[None])
            assert np.abs(fast.solve(pos.numpy(), scaled.numpy()) - ranked[0, 0]).max() < TOLERANCE
            assert np.abs(fast.solve(pos.numpy(), scaled.numpy()) - base).max() < 1e-12
        assert np.abs(fast.solve(pos.tolist(), quat.tolist()) - base).max() == 0  # lists are poses too


def test_forward_is_the_bare_model_on_a_normalised_input(irb120: Chain) -> None:
    network = _tiny(irb120, *TINY["map_3answers"])
    fast = FastIKNetwork.from_network(network, backend="numpy")
    targets = make_eval_set(irb120, 2, 3).batch
    x = network.normalizer(targets.pos, targets.quat).double()
    with torch.no_grad():
        reference = copy.deepcopy(network.model).double()(x).candidates.numpy()
    for i in range(3):
        assert np.abs(fast.forward(x[i].numpy()) - reference[i]).max() < TOLERANCE


@pytest.mark.parametrize("backend", BACKENDS)
def test_scores_rank_like_the_network(irb120: Chain, backend: str) -> None:
    network = _tiny(irb120, *TINY["mlp_3answers"])
    kinematics = SingleTargetKinematics(irb120.robot) if backend == "numpy" else None  # numba: its own compiled FK
    fast = FastIKNetwork.from_network(network, backend=backend, kinematics=kinematics)
    targets = make_eval_set(irb120, 9, 50).batch
    reference = copy.deepcopy(network).double()
    for pos, quat in zip(targets.pos, targets.quat):
        answers = fast.candidates(pos.numpy(), quat.numpy())
        order = reference.rank(torch.from_numpy(answers)[None], pos[None], quat[None])[0].numpy()
        assert np.array_equal(np.argsort(fast.scores(answers, pos.numpy(), quat.numpy()), kind="stable"), order)


@pytest.mark.skipif(not numba_available(), reason="the compiled choice is the numba backend's")
@pytest.mark.parametrize("variant", ["dense_3answers", "map_3answers", "mlp_3answers"])
def test_the_compiled_choice_is_the_scores_choice(irb120: Chain, variant: str) -> None:
    """The numba backend chooses among answers in the network's own call, exactly as candidates ranked by scores."""
    network = _tiny(irb120, *TINY[variant], fixed={"joint_4": -0.2} if variant == "map_3answers" else None)
    fast = FastIKNetwork.from_network(network, backend="numba")
    assert fast._ranked is not None  # noqa: SLF001  the one-call path is the one in use
    targets = make_eval_set(irb120, 11, 40).batch
    for pos, quat in zip(targets.pos.numpy(), targets.quat.numpy()):
        answers = fast.candidates(pos, quat)
        order = np.argsort(fast.scores(answers, pos, quat), kind="stable")
        assert np.array_equal(fast.solve_all(pos, quat), answers[order])
        assert np.array_equal(fast.solve(pos, quat), answers[order[0]])


BAD_POSES = {
    "position (1, 3)": (np.zeros((1, 3)), np.array([1.0, 0, 0, 0])),
    "position (2,)": (np.zeros(2), np.array([1.0, 0, 0, 0])),
    "quaternion (3,)": (np.zeros(3), np.array([1.0, 0, 0])),
    "quaternion (1, 4)": (np.zeros(3), np.array([[1.0, 0, 0, 0]])),
    "NaN position": (np.array([0.3, np.nan, 0.2]), np.array([1.0, 0, 0, 0])),
    "inf position": (np.array([0.3, np.inf, 0.2]), np.array([1.0, 0, 0, 0])),
    "NaN quaternion": (np.array([0.3, 0.1, 0.2]), np.array([np.nan, 0, 0, 0])),
    "inf quaternion": (np.array([0.3, 0.1, 0.2]), np.array([1.0, -np.inf, 0, 0])),
    "zero quaternion": (np.array([0.3, 0.1, 0.2]), np.zeros(4)),
    "tiny quaternion": (np.array([0.3, 0.1, 0.2]), np.array([1e-12, 0, 0, 0])),
    "position 1e5 m away": (np.array([0.3, 1e5, 0.2]), np.array([1.0, 0, 0, 0])),
}


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("case", sorted(BAD_POSES))
def test_bad_poses_are_hik_errors(irb120: Chain, case: str, backend: str) -> None:
    network = _tiny(irb120, *TINY["dense_3answers"])
    fast = FastIKNetwork.from_network(network, backend=backend)
    pos, quat = BAD_POSES[case]
    for method in (fast.solve, fast.solve_all, fast.candidates):
        with pytest.raises(HikError):
            method(pos, quat)


def test_bad_normalised_inputs_and_options_are_hik_errors(irb120: Chain, monkeypatch: pytest.MonkeyPatch) -> None:
    network = _tiny(irb120, *TINY["mlp_3answers"])
    fast = FastIKNetwork.from_network(network, backend="numpy")
    for bad in (np.zeros(6), np.zeros((1, 7)), np.array([0, 0, 0, 1.0, 0, 0, np.nan])):
        with pytest.raises(HikError, match="normalised input"):
            fast.forward(bad)
    with pytest.raises(HikError, match="backends are: auto, numba, numpy"):
        FastIKNetwork.from_network(network, backend="onnx")  # type: ignore[arg-type]
    chainless = copy.deepcopy(network)
    chainless.chain = None
    with pytest.raises(HikError, match="hypotheses"):
        FastIKNetwork.from_network(chainless, backend="numpy")
    with pytest.raises(HikError, match="joints"):
        FastIKNetwork.from_network(network, kinematics=SingleTargetKinematics(get_robot("panda")), backend="numpy")
    monkeypatch.setattr(fast_network, "numba_available", lambda: False)
    assert FastIKNetwork.from_network(network).backend == "numpy"  # auto falls back
    with pytest.raises(HikError, match=r"hik_sim\[fast\]"):
        FastIKNetwork.from_network(network, backend="numba")


def test_a_single_answer_network_runs_no_kinematics(irb120: Chain) -> None:
    network = _tiny(irb120, *TINY["mlp"])
    network.chain = None  # nothing to rank with, and nothing needed
    fast = FastIKNetwork.from_network(network, backend="numpy")
    assert fast.kinematics is None and fast.hypotheses == 1
    answer = fast.solve(np.array([0.3, 0.1, 0.4]), np.array([0.0, 1.0, 0.0, 0.0]))
    assert answer.shape == (6,) and np.isfinite(answer).all()
    assert fast.solve_all(np.array([0.3, 0.1, 0.4]), np.array([0.0, 1.0, 0.0, 0.0])).shape == (1, 6)


@pytest.mark.skipif(not numba_available(), reason="the compiled backend needs numba (the 'fast' extra)")
@pytest.mark.parametrize("robot_name", ["irb120", "panda", "g1", "user_arm"])
def test_compiled_scores_match_mujoco_forward_kinematics(robot_name: str) -> None:
    from hik_sim.learning import _fast_numba
    from hik_sim.learning.network import CHOICE_TOLERANCE

    from conftest import robot_by_id

    robot = robot_by_id(robot_name)
    chain = Chain(robot)
    kinematics = SingleTargetKinematics(robot, chain.geometry)
    geometry = flat_geometry(chain.geometry)
    rng = np.random.default_rng(0)
    targets = make_eval_set(chain, 4, 20).batch
    for pos, quat in zip(targets.pos.numpy(), targets.quat.numpy()):
        answers = rng.uniform(chain.robot.lower, chain.robot.upper, size=(5, chain.dof))
        answers[0] = answers[1]  # two equal answers score equally
        compiled = np.empty(5)
        _fast_numba.scores(geometry, answers, pos, 3.0 * quat, CHOICE_TOLERANCE[0], CHOICE_TOLERANCE[1], compiled)
        for k, q in enumerate(answers):
            reached = kinematics.fk(q)
            pos_err = np.linalg.norm(reached.pos - pos)
            relative = _relative(reached.quat, quat)
            rot_err = 2 * np.arctan2(np.linalg.norm(relative[1:]), abs(relative[0]))
            assert compiled[k] == pytest.approx(pos_err / CHOICE_TOLERANCE[0] + rot_err / CHOICE_TOLERANCE[1], abs=1e-6)
        assert compiled[0] == compiled[1]


def _relative(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """conj(a) ⊗ b for wxyz quaternions."""
    w1, x1, y1, z1 = a[0], -a[1], -a[2], -a[3]
    w2, x2, y2, z2 = b
    return np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])


@pytest.mark.parametrize("variant", ["dense_3answers", "mlp"])
def test_single_target_ik_seeds_with_the_fast_network(irb120: Chain, variant: str) -> None:
    from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan

    network = _tiny(irb120, *TINY[variant])
    solver = SingleTargetIK(irb120, network, plan=SingleTargetPlan(max_iterations=0, restarts=0, flip_restarts=False))  # the answer is the seed itself
    assert isinstance(solver.fast_network, FastIKNetwork)
    targets = make_eval_set(irb120, 6, 20).batch
    _, ranked = _reference(network, targets.pos, targets.quat)
    for i in range(20):
        q = solver.solve_one(targets.pos[i], targets.quat[i]).q[0].numpy()
        assert np.abs(q - ranked[i, 0]).max() < TOLERANCE


@pytest.mark.parametrize("backend", BACKENDS)
@pytest.mark.parametrize("variant", ["map", "mlp"])
def test_tanh_gelu_networks_agree_with_torch(irb120: Chain, variant: str, backend: str) -> None:
    from torch import nn

    network = _tiny(irb120, *TINY[variant])
    for module in network.modules():
        if isinstance(module, nn.GELU):
            module.approximate = "tanh"
    _check_agreement(network, irb120, network.selection, backend)


def test_limits_on_targets_are_the_network_module_s() -> None:
    from hik_sim.learning import network

    assert fast_network.MAX_TARGET_DISTANCE == network.MAX_TARGET_DISTANCE


@pytest.mark.parametrize("backend", BACKENDS)
def test_nan_weights_are_a_hik_error_not_nan_joints(irb120: Chain, backend: str) -> None:
    network = _tiny(irb120, *TINY["mlp"])
    with torch.no_grad():
        network.model.head.linear.bias[0] = float("nan")
    fast = FastIKNetwork.from_network(network, backend=backend)
    with pytest.raises(HikError, match="NaN"):
        fast.solve(np.array([0.3, 0.1, 0.4]), np.array([1.0, 0.0, 0.0, 0.0]))
