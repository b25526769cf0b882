"""``python -m hik_sim.export``: the ONNX graph against the torch network, for every model family."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch

pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from hik_sim.deploy.graph import Float64Gelu  # noqa: E402
from hik_sim.export import export_onnx, main  # noqa: E402
from hik_sim.kinematics.chain import Chain  # noqa: E402
from hik_sim.learning.data import JointSelection, PoseNormalizer  # noqa: E402
from hik_sim.learning.network import IKNetwork  # noqa: E402
from hik_sim.policies import load_pretrained  # noqa: E402
from hik_sim.robots import get_robot  # noqa: E402

TOLERANCE = 1e-5
"""[rad]: the largest joint gap allowed between onnxruntime's and torch's answers (float64 graphs agree to ~1e-12)."""
POSES = 1000

TINY: dict[str, tuple[str, dict[str, Any], dict[str, float]]] = {
    "harmoatt_dense_turn": ("harmoatt", {"trunk": "dense", "channels": 4, "positions": 4, "blocks": 1, "embed_hidden": 8,
                                         "feed_forward": 16, "hypotheses": 3, "canonical_turn": True, "turn_input": True,
                                         "behind_turn": True}, {}),
    "harmoatt_map_fixed": ("harmoatt", {"trunk": "map", "channels": 4, "positions": 4, "blocks": 2, "embed_hidden": 8,
                                        "head_hidden": 16, "hypotheses": 2}, {"joint_6": 0.5}),
    "harmoatt_cycleik": ("harmoatt", {"trunk": "cycleik", "width": 0.01, "positions": 4, "canonical_turn": True}, {}),
    "mlp_turn": ("mlp", {"hidden": 16, "layers": 2, "hypotheses": 2, "canonical_turn": True, "turn_input": True}, {}),
    "cycleik": ("cycleik", {"layers": [16, 8]}, {}),
    "regression_fixed": ("regression", {"hidden": 16, "layers": 2}, {"joint_4": -0.25}),
}
"""Tiny randomly initialised networks of every family (HarmoAtt-IK with each trunk), with the network options."""


@pytest.fixture(scope="module")
def chain() -> Chain:
    return Chain(get_robot("irb120"))


def _tiny(chain: Chain, name: str) -> IKNetwork:
    kind, options, fixed = TINY[name]
    torch.manual_seed(sorted(TINY).index(name))
    selection = JointSelection.for_chain(chain, fixed)
    normalizer = PoseNormalizer.measure(chain, selection, samples=2000)
    lower, upper = chain.limits(torch.float32)
    return IKNetwork(kind, lower, upper, normalizer, selection, options, chain).eval()


def _poses(chain: Chain, count: int = POSES, seed: int = 5) -> tuple[np.ndarray, np.ndarray]:
    """Poses from the FK of random configurations; every other quaternion negated and scaled (the graph normalises)."""
    pose = chain.fk(chain.sample(count, torch.Generator().manual_seed(seed), torch.float64))
    scale = torch.where(torch.arange(count) % 2 == 0, 1.0, -3.0)[:, None].double()
    return pose.pos.numpy(), (pose.quat * scale).numpy()


def _run(path: Path, pos: np.ndarray, quat: np.ndarray, threads: int = 1) -> list[np.ndarray]:
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    dtype = np.float32 if session.get_inputs()[0].type == "tensor(float)" else np.float64
    return session.run(None, {"pos": pos.astype(dtype), "quat": quat.astype(dtype)})


def _compare(network: IKNetwork, path: Path, chain: Chain, dtype: torch.dtype) -> float:
    """Largest gap between the graph's answers and the torch network's, head by head and as ranked; checks the ranking."""
    pos, quat = _poses(chain)
    answers, scores, heads, valid = _run(path, pos, quat)
    assert valid.all() and answers.shape == (POSES, network.hypotheses, chain.dof)
    net = network.to(dtype)
    reference = net.candidates(pos, quat).double().numpy()  # (B, H, n) in the heads' order
    by_head = np.empty_like(answers)
    np.put_along_axis(by_head, heads[:, :, None].repeat(chain.dof, axis=2), answers, axis=1)
    gap = float(np.abs(by_head - reference).max())
    assert (np.diff(scores, axis=1) >= 0).all()  # best first
    ranked = net.solve_all(pos, quat).double().numpy()
    assert float(np.abs(answers - ranked).max()) <= TOLERANCE  # the same choice as IKNetwork.solve_all
    lower, upper = (np.asarray(v) for v in (network.lower, network.upper))
    assert (answers >= lower).all() and (answers <= upper).all()
    return gap


SLOW_FLOAT64 = {"harmoatt_dense_turn", "harmoatt_map_fixed", "harmoatt_cycleik"}  # 15-30 s each on a busy 2-core machine


@pytest.mark.parametrize("name", [pytest.param(n, marks=pytest.mark.slow) if n in SLOW_FLOAT64 else n for n in sorted(TINY)])
def test_float64_graph_matches_torch_for_every_family(name: str, chain: Chain, tmp_path: Path) -> None:
    network = _tiny(chain, name)
    path = export_onnx(network, tmp_path / f"{name}.onnx", chain, dtype="float64")
    assert _compare(network, path, chain, torch.float64) <= TOLERANCE


@pytest.mark.parametrize("name", ["harmoatt_dense_turn", "mlp_turn", "cycleik"])
def test_float32_graph_matches_torch(name: str, chain: Chain, tmp_path: Path) -> None:
    network = _tiny(chain, name)
    path = export_onnx(network, tmp_path / f"{name}.onnx", chain)
    assert _compare(network, path, chain, torch.float32) <= TOLERANCE  # tiny networks: float32 rounding is not amplified


@pytest.mark.parametrize("shipped", ["mlp_seed", pytest.param("harmoatt_4answers", marks=pytest.mark.slow),
                                     pytest.param("harmoatt_q6fixed", marks=pytest.mark.slow),
                                     pytest.param("harmoatt_4answers_map", marks=pytest.mark.slow),
                                     pytest.param("cycleik", marks=pytest.mark.slow), pytest.param("regression", marks=pytest.mark.slow)])
def test_shipped_networks_float64_graph_matches_torch(shipped: str, tmp_path: Path) -> None:
    network = load_pretrained("irb120", shipped)
    chain = network.chain or Chain(get_robot("irb120"))
    path = export_onnx(network, tmp_path / "net.onnx", dtype="float64")
    assert _compare(network, path, chain, torch.float64) <= TOLERANCE


def test_graph_flags_bad_poses_and_keeps_every_answer_in_the_limits(chain: Chain, tmp_path: Path) -> None:
    network = _tiny(chain, "harmoatt_map_fixed")
    path = export_onnx(network, tmp_path / "net.onnx", chain)
    pos = np.array([[0.3, 0.0, 0.5], [50.0, -80.0, 20.0], [np.nan, 0, 0], [0.3, 0, 0.5], [2e4, 0, 0]])
    quat = np.array([[1, 0, 0, 0], [0.2, 0.9, -0.1, 0.3], [1, 0, 0, 0], [0, 0, 0, 0], [1, 0, 0, 0]], dtype=float)
    answers, _, _, valid = _run(path, pos, quat)
    assert valid.tolist() == [True, True, False, False, False]  # NaN, zero quaternion, 20 km away
    good = answers[:2]
    assert (good >= np.asarray(network.lower, dtype=np.float32)).all() and (good <= np.asarray(network.upper, dtype=np.float32)).all()
    assert (answers[:2, :, 5] == np.float32(0.5)).all()  # the fixed joint_6


def test_pose_on_the_first_joints_axis_is_answered_like_torch(chain: Chain, tmp_path: Path) -> None:
    network = _tiny(chain, "mlp_turn")
    assert network.symmetry is not None
    on_axis = network.symmetry.origin + 0.4 * network.symmetry.axis  # azimuth atan2(0, 0): torch 0, plain ONNX NaN
    pos, quat = on_axis[None], np.array([[0.0, 1.0, 0.0, 0.0]])
    for dtype in ("float32", "float64"):
        path = export_onnx(network, tmp_path / f"{dtype}.onnx", chain, dtype=dtype)
        answers, _, heads, valid = _run(path, pos, quat)
        reference = network.to(getattr(torch, dtype)).candidates(pos, quat).double().numpy()
        assert valid.all() and np.abs(answers[0] - reference[0, heads[0]]).max() <= TOLERANCE


def test_float64_gelu_matches_torch() -> None:
    x = torch.linspace(-12, 12, 20_001, dtype=torch.float64)
    assert float((Float64Gelu()(x) - torch.nn.functional.gelu(x)).abs().max()) < 1e-14


def test_metadata_names_the_chain(chain: Chain, tmp_path: Path) -> None:
    import onnx

    network = _tiny(chain, "regression_fixed")
    meta = {p.key: p.value for p in onnx.load(str(export_onnx(network, tmp_path / "m.onnx", chain))).metadata_props}
    assert json.loads(meta["hik_sim.joint_names"]) == list(chain.joint_names)
    assert json.loads(meta["hik_sim.lower"]) == pytest.approx(list(network.lower))
    assert json.loads(meta["hik_sim.fixed_joints"]) == {"joint_4": -0.25}
    assert meta["hik_sim.dtype"] == "float32" and meta["hik_sim.robot"] == "irb120"


def _cli(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str]:
    try:
        code = main(argv)
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_cli_exports_a_shipped_network_and_checks_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    out = tmp_path / "seed.onnx"
    code, text = _cli(["--robot", "irb120", "--network", "mlp_seed", "--out", str(out), "--verify", "200", "--dtype", "float64"], capsys)
    assert code == 0 and out.is_file() and "largest joint gap" in text
    gap = float(text.split("largest joint gap ")[1].split()[0])
    assert gap <= TOLERANCE
    code, _ = _cli(["--robot", "irb120", "--network", "mlp_seed", "--out", str(out), "--verify", "0"], capsys)
    assert code == 0  # an ONNX file is replaced without --force


def test_cli_exports_a_checkpoint_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from hik_sim.policies import pretrained_path

    out = tmp_path / "from_file.onnx"
    code, text = _cli(["--checkpoint", str(pretrained_path("irb120", "mlp_seed")), "--out", str(out), "--verify", "100"], capsys)
    assert code == 0 and out.is_file() and "irb120" in _metadata(out)["hik_sim.robot"]


def _metadata(path: Path) -> dict[str, str]:
    import onnx

    return {p.key: p.value for p in onnx.load(str(path)).metadata_props}


@pytest.mark.parametrize(("argv", "message"), [
    (["--robot", "irb120", "--network", "mlp_seed", "--dtype", "float16"], "--dtype must be one of float32, float64"),
    (["--robot", "irb120", "--network", "nope"], "no shipped checkpoint irb120/nope"),
    (["--robot", "irb120"], "give either --network NAME"),
    (["--robot", "irb120", "--network", "mlp_seed", "--checkpoint", "x.safetensors"], "not both or neither"),
    (["--network", "mlp_seed"], "give --robot NAME"),
    (["--robot", "irb120", "--network", "mlp_seed", "--turned", "sideways"], "turned must be one of better, range, azimuth"),
    (["--robot", "irb120", "--network", "mlp_seed", "--verify", "-1"], "--verify must be"),
])
def test_cli_refuses_bad_arguments(argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, text = _cli([*argv, "--out", str(tmp_path / "x.onnx")], capsys)
    assert code == 2 and message in text and "Traceback" not in text


def test_cli_refuses_to_overwrite_a_file_that_is_not_onnx(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    precious = tmp_path / "notes.onnx"
    precious.write_text("not a model")
    argv = ["--robot", "irb120", "--network", "mlp_seed", "--out", str(precious), "--verify", "0"]
    code, text = _cli(argv, capsys)
    assert code == 2 and "is not an ONNX model; give --force" in text and precious.read_text() == "not a model"
    code, text = _cli([*argv[:-2], "--out", str(tmp_path / "net.pt")], capsys)
    assert code == 2 and "--out must name a .onnx file" in text
    code, _ = _cli([*argv, "--force"], capsys)
    assert code == 0 and precious.read_bytes()[:2] != b"no"
