"""``python -m hik_sim.export``: an IK network as one ONNX graph, from a raw target pose to ranked joint answers.

The graph holds everything :meth:`IKNetwork.solve_all <hik_sim.learning.network.IKNetwork.solve_all>` does around the
torch model, so that a C++ (or any onnxruntime) caller feeds the pose as it has it and reads joint angles:

1. the quaternion normalised to unit length (any non-zero length and either sign is accepted);
2. for a ``canonical_turn`` network, the pose turned about the first joint's axis by its azimuth (with ``behind_turn``,
   by :func:`~hik_sim.kinematics.symmetry.range_turn` of it), the turn given as (cos, sin) where the network has
   ``turn_input``, and added back to the answers' first joint, wrapped and clamped into its range; a ``behind_turn``
   network asks a pose beyond its first joint's range both ways and keeps, head by head, the answer whose forward
   kinematics (FK) reaches the pose better (``turned="better"``, :meth:`IKNetwork.forward
   <hik_sim.learning.network.IKNetwork.forward>`'s default);
3. the input normalisation (position scaled to the workspace box, quaternion with w ≥ 0), the model;
4. the fixed joints filled in and every joint clamped into its limits;
5. the FK of every answer in the graph (the chain's joints as sin, cos and 3 × 3 products) and the answers ranked
   by position error / 5 mm + rotation error / 2° (:data:`~hik_sim.learning.network.CHOICE_TOLERANCE`), best first.

Inputs: ``pos`` (B, 3) [m] and ``quat`` (B, 4) wxyz, in the chain's base frame; the batch axis B is dynamic.
Outputs (:data:`OUTPUTS`): ``answers`` (B, H, n) [rad or m], every answer of the network, the chosen one first;
``scores`` (B, H) their ranking scores; ``heads`` (B, H) int64, the output head each answer came from; ``valid`` (B,)
bool, whether the pose passes :func:`~hik_sim.learning.network.as_targets`' checks and every answer is finite. A graph
cannot raise: a caller checks ``valid`` where :class:`~hik_sim.learning.network.IKNetwork` would refuse the pose.
The graph's metadata holds the robot, the chain's joint names and limits, the dtype and the ranking rule.

Usage::

    python -m hik_sim.export --robot irb120 --network harmoatt_4answers --out irb120.onnx
    python -m hik_sim.export --checkpoint runs/net.safetensors --out net.onnx --dtype float64
"""

from __future__ import annotations

import argparse
import copy
import io
import json
import math
import warnings
from pathlib import Path
from typing import TYPE_CHECKING, Any

from hik_sim.atomic import write_atomically
from hik_sim.errors import HikError, ModelError, OutputError

if TYPE_CHECKING:

    from hik_sim.kinematics.chain import Chain
    from hik_sim.learning.network import IKNetwork
    from hik_sim.robots import RobotSpec

__all__ = ["INPUTS", "OUTPUTS", "DTYPES", "OPSET", "export_onnx", "load_network", "main"]

INPUTS: tuple[str, ...] = ("pos", "quat")
"""The graph's inputs: positions (B, 3) [m] and quaternions (B, 4) wxyz."""
OUTPUTS: tuple[str, ...] = ("answers", "scores", "heads", "valid")
"""The graph's outputs: answers (B, H, n), scores (B, H), heads (B, H) int64, valid (B,) bool (module docstring)."""
DTYPES: tuple[str, ...] = ("float32", "float64")
"""The graph's float types: float32 (the network as trained) or float64 (every weight widened; the float64 forward pass)."""
OPSET = 17
"""The ONNX opset written (17: LayerNormalization, which the ``map`` trunk uses, is an operator)."""


def export_onnx(network: IKNetwork, path: str | Path, chain: Chain | None = None, dtype: str = "float32",
                turned: str = "better", force: bool = False) -> Path:
    """Write ``network`` as one ONNX graph (module docstring): raw pose in, ranked joint answers out.

    Args:
        network: the network (any model kind; its training-only options play no part).
        path: the ``.onnx`` file to write (atomically). An existing ONNX model there is replaced; any other file only
            with ``force``.
        chain: the robot's chain, for the answers' FK; default the network's own, else its card's registered robot's.
        dtype: ``float32`` or ``float64`` (:data:`DTYPES`): the inputs', outputs' and weights' type.
        turned: a ``behind_turn`` network's answer for a pose beyond its first joint's range
            (:data:`~hik_sim.learning.network.TURNED`: ``better``, ``range``, ``azimuth``).
        force: replace a file that is not an ONNX model.

    Returns:
        The path written.

    Raises:
        HikError: not an IKNetwork, an unknown dtype or ``turned``, a path without the ``.onnx`` suffix or in a folder that
            does not exist, a file that is not an ONNX model (without ``force``), no chain to rank with, or the
            ``onnx`` package missing (``pip install hik_sim[onnx]``).
    """
    import torch

    from hik_sim.learning.models import MODEL_KINDS
    from hik_sim.learning.network import TURNED, IKNetwork

    if not isinstance(network, IKNetwork):
        raise ModelError(f"export_onnx takes an IKNetwork (load_pretrained, load_checkpoint), got {type(network).__name__}")
    if network.kind not in MODEL_KINDS:
        raise ModelError(f"cannot export model {network.kind!r}: the models are {', '.join(MODEL_KINDS)}")
    if dtype not in DTYPES:
        raise ModelError(f"dtype must be one of {', '.join(DTYPES)}, got {dtype!r}")
    if turned not in TURNED:
        raise ModelError(f"turned must be one of {', '.join(TURNED)}, got {turned!r}")
    target = _check_out(path, force)
    onnx = _onnx()
    chain = chain or network.chain or _card_chain(network)
    if tuple(chain.joint_names) != tuple(network.selection.joint_names):
        raise ModelError(f"the chain's joints {chain.joint_names} are not the network's {network.selection.joint_names}")
    torch_dtype = torch.float32 if dtype == "float32" else torch.float64
    from hik_sim.deploy.graph import atan2_symbolic, float64_gelus, graph_module

    network = copy.deepcopy(network).to(dtype=torch_dtype).eval()  # the caller's network stays as it was
    if dtype == "float64":
        float64_gelus(network.model)
    graph = graph_module(network, chain, turned)
    example = chain.fk(chain.sample(3, torch.Generator().manual_seed(0), torch_dtype))
    buffer = io.BytesIO()
    torch.onnx.register_custom_op_symbolic("aten::atan2", atan2_symbolic, OPSET)
    try:
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")  # the tracer's notes on the chain's finiteness check (a bool of a tensor)
            # the TorchScript exporter writes to any binary file object; its hints name paths only
            torch.onnx.export(graph, (example.pos, example.quat), buffer, input_names=list(INPUTS),  # type: ignore[arg-type]
                              output_names=list(OUTPUTS), dynamic_axes={name: {0: "batch"} for name in (*INPUTS, *OUTPUTS)},
                              opset_version=OPSET, dynamo=False)
    finally:
        torch.onnx.unregister_custom_op_symbolic("aten::atan2", OPSET)
    model = onnx.load_from_string(buffer.getvalue())
    for key, value in _metadata(network, chain, dtype, turned).items():
        entry = model.metadata_props.add()
        entry.key, entry.value = key, value
    model.producer_name = "hik_sim"
    model.doc_string = "hik_sim IK network: pose (pos [m], quat wxyz) -> answers (B, H, n), best first; metadata: hik_sim.*"
    onnx.checker.check_model(model)
    write_atomically(target, lambda tmp: tmp.write_bytes(model.SerializeToString()))
    return target


def _metadata(network: IKNetwork, chain: Chain, dtype: str, turned: str) -> dict[str, str]:
    """The graph's metadata: what a caller needs to use and to check the answers (all values strings)."""
    from hik_sim.learning.network import CHOICE_TOLERANCE

    card = getattr(network, "card", None)
    data: dict[str, Any] = {
        "robot": chain.robot.name, "base_link": chain.robot.base_link, "ee_link": chain.robot.ee_link,
        "urdf_sha256": chain.robot.urdf_sha256(), "joint_names": list(chain.joint_names),
        "lower": list(network.lower), "upper": list(network.upper), "fixed_joints": dict(network.selection.fixed),
        "model": network.kind, "model_options": network.model_options, "hypotheses": network.hypotheses, "dtype": dtype,
        "turned": turned if network.behind_turn else "",
        "ranking": f"position error / {CHOICE_TOLERANCE[0]} m + rotation error / {CHOICE_TOLERANCE[1]} rad, ascending",
        "card_steps": card.total_steps if card is not None else 0,
    }
    return {f"hik_sim.{key}": value if isinstance(value, str) else json.dumps(value) for key, value in data.items()}


def _onnx() -> Any:
    """The ``onnx`` module, or a HikError that says how to get it."""
    try:
        import onnx
    except ImportError:
        raise HikError("exporting to ONNX needs the onnx package: pip install 'hik_sim[onnx]' (onnx and onnxruntime)") from None
    return onnx


def _card_chain(network: IKNetwork) -> Chain:
    """The chain of the registered robot that the network's card names."""
    from hik_sim.kinematics.chain import Chain
    from hik_sim.robots import get_robot, robot_names

    card = getattr(network, "card", None)
    if card is None or card.robot not in robot_names():
        raise ModelError("the graph ranks answers by the chain's FK: give chain=Chain(robot) for a network without a "
                         "registered robot's card")
    return Chain(get_robot(card.robot))


def _is_onnx_model(path: Path) -> bool:
    """Whether the file at ``path`` parses as an ONNX model."""
    onnx = _onnx()
    try:
        onnx.load(str(path), load_external_data=False)
    except Exception:  # noqa: BLE001 - protobuf raises several types for a file that is not a model
        return False
    return True


def _check_out(path: str | Path, force: bool) -> Path:
    """``path`` as the output file, checked: ``.onnx`` suffix, an existing folder, no other file clobbered."""
    target = Path(path)
    if target.suffix != ".onnx":
        raise OutputError(f"--out must name a .onnx file, got {str(path)!r}")
    if not target.parent.is_dir():
        raise OutputError(f"--out {str(path)!r}: the folder {str(target.parent)!r} does not exist")
    if target.is_dir():
        raise OutputError(f"--out {str(path)!r} is a folder; name a .onnx file")
    if target.exists() and not force and not _is_onnx_model(target):
        raise OutputError(f"--out {str(path)!r} exists and is not an ONNX model; give --force to replace it")
    return target


def load_network(robot: RobotSpec | None, network: str | None = None, checkpoint: str | Path | None = None) -> IKNetwork:
    """A shipped network of a registered robot (``network``) or a trained checkpoint's (``checkpoint``), eval mode.

    Raises:
        HikError: neither or both of ``network`` and ``checkpoint``, a shipped name without a registered robot, or what
            :func:`~hik_sim.policies.load_pretrained` and :func:`~hik_sim.learning.checkpoint.load_checkpoint` raise.
    """
    from hik_sim.robots import get_robot, robot_names

    if (network is None) == (checkpoint is None):
        raise HikError("give either --network NAME (a shipped network of --robot) or --checkpoint PATH, not both or neither")
    if network is not None:
        from hik_sim.learning.pretrained import load_pretrained

        if robot is None or robot.name not in robot_names() or get_robot(robot.name).urdf_sha256() != robot.urdf_sha256():
            raise HikError(f"--network names a shipped network of a registered robot ({', '.join(robot_names())}): give --robot NAME; "
                           "for a network trained on another URDF give --checkpoint PATH")
        return load_pretrained(robot.name, network)
    from hik_sim.learning.checkpoint import load_checkpoint

    loaded, card = load_checkpoint(str(checkpoint), robot=robot)
    loaded.card = card
    return loaded


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    from hik_sim.robots.cli import add_robot_arguments

    parser = argparse.ArgumentParser(prog="python -m hik_sim.export", description="Export an IK network as one ONNX graph: "
                                     "raw pose (pos [m], quat wxyz) in, every answer (B, H, n) [rad] ranked by FK out.")
    add_robot_arguments(parser, default=None)
    source = parser.add_argument_group("network")
    source.add_argument("--network", default=None, help="a shipped network of --robot (e.g. harmoatt_4answers, mlp_seed, cycleik)")
    source.add_argument("--checkpoint", default=None, help="a trained checkpoint file (instead of --network)")
    parser.add_argument("--out", required=True, help="the .onnx file to write")
    parser.add_argument("--dtype", default="float32", help=f"the graph's float type: {', '.join(DTYPES)} (default float32)")
    parser.add_argument("--turned", default="better", help="a behind_turn network's answer beyond its first joint's range: "
                        "better, range or azimuth (default better)")
    parser.add_argument("--force", action="store_true", help="replace --out even if it is not an ONNX model")
    parser.add_argument("--verify", type=int, default=1000, metavar="N",
                        help="check the file with onnxruntime against the torch network on N poses from the chain's FK (default 1000; 0: no check)")
    return parser


def verify(path: str | Path, network: IKNetwork, chain: Chain, count: int, seed: int = 0) -> float:
    """The largest gap [rad or m] between the graph's answers (onnxruntime) and the torch network's
    (:meth:`IKNetwork.candidates <hik_sim.learning.network.IKNetwork.candidates>`, each head's answer) on ``count``
    poses from the FK of configurations uniform in the limits.

    Raises:
        HikError: onnxruntime is missing, or a pose the network accepts is not ``valid`` in the graph.
    """
    import numpy as np
    import torch

    try:
        import onnxruntime
    except ImportError:
        raise HikError("verifying needs onnxruntime: pip install 'hik_sim[onnx]', or give --verify 0") from None
    session = onnxruntime.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    dtype = np.float32 if session.get_inputs()[0].type == "tensor(float)" else np.float64
    poses = chain.fk(chain.sample(count, torch.Generator().manual_seed(seed), torch.float64))
    answers, _, heads, valid = session.run(None, {"pos": poses.pos.numpy().astype(dtype), "quat": poses.quat.numpy().astype(dtype)})
    if not bool(valid.all()):
        raise HikError(f"the graph marked {int((~valid).sum())} of {count} reachable poses invalid")
    reference = copy.deepcopy(network).to(torch.float32 if dtype == np.float32 else torch.float64).candidates(poses.pos, poses.quat)
    by_head = np.empty_like(answers)
    np.put_along_axis(by_head, heads[:, :, None].repeat(answers.shape[2], axis=2), answers, axis=1)
    return float(np.abs(by_head.astype(np.float64) - reference.double().numpy()).max())


def main(argv: list[str] | None = None) -> int:
    """Export the network that the arguments name; exit 2 with the message on bad input."""
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        from hik_sim.robots.cli import robot_from_args

        given = any(value is not None for value in (args.robot, args.urdf, args.base, args.ee))
        robot = robot_from_args(args) if given else None
        if args.verify < 0:
            raise HikError(f"--verify must be a number of poses >= 0, got {args.verify}")
        if args.dtype not in DTYPES:
            raise HikError(f"--dtype must be one of {', '.join(DTYPES)}, got {args.dtype!r}")
        _check_out(args.out, args.force)  # before loading a network: a bad --out fails fast
        network = load_network(robot, args.network, args.checkpoint)
        from hik_sim.kinematics.chain import Chain

        chain = network.chain or (Chain(robot) if robot is not None else _card_chain(network))
        path = export_onnx(network, args.out, chain, args.dtype, args.turned, args.force)
        gap = verify(path, network, chain, args.verify) if args.verify else math.nan
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    print(f"wrote {path}: {network.kind} {network.model_options or ''}, {network.hypotheses} answer(s) of {len(network.lower)} joints "
          f"({', '.join(network.selection.joint_names)}), {args.dtype}")
    if args.verify:
        print(f"onnxruntime against torch on {args.verify} poses from the chain's FK: largest joint gap {gap:.2e} rad")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
