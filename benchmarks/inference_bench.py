"""Latency of the shipped IK networks at batch 1 and 1,024: torch, hik_sim's fast forward pass and onnxruntime, side by side.

What is measured, for every shipped network (``hik_sim/policies/pretrained/index.json``) or those named, in one run,
torch on one thread (``torch.set_num_threads(1)``; numba and NumPy run on the calling thread):

1. ``torch``: :meth:`IKNetwork.solve <hik_sim.learning.network.IKNetwork.solve>` on (1, 3), (1, 4)
   float32 tensors, the network as shipped. With several answers it includes the choice among
   them (FK of every answer).
2. ``numba`` / ``numpy``: :meth:`FastIKNetwork.solve <hik_sim.learning.fast_network.FastIKNetwork.solve>`
   on (3,), (4,) arrays: input checks, normalisation, the forward pass, clamping into the limits,
   and with several answers the choice among them (one FK per answer).
3. ``numba forward``: :meth:`FastIKNetwork.forward` alone on a normalised (7,) input: the network
   without the checks and without the choice.
4. ``onnxruntime f32 1 thread`` / ``onnxruntime f32 default threads`` / ``onnxruntime f64 1 thread`` (when onnx and
   onnxruntime are installed): the whole graph that ``python -m hik_sim.export`` writes (raw pose in; quaternion
   normalisation, canonical turn, input normalisation, fixed joints, clamping, every answer's FK and the ranking in
   the graph; answers (B, H, n) best first), run by an onnxruntime CPU session with one intra-op thread, or with
   onnxruntime's default (one per core), on (B, 3), (B, 4) arrays.

At batch 1,024 (``batch`` in the record): torch :meth:`IKNetwork.solve_all` on the whole batch, FastIKNetwork's
``solve_all`` once per pose (it has no batched call), onnxruntime's graph on the whole batch; the time is per batch.

How it is timed: warm-up first, untimed (``warmup`` calls per path at batch 1 and 2 batches per path at 1,024: numba's
compilation, onnxruntime's first-run allocations and torch's first call are never counted), then ``--calls`` timed
calls per path at batch 1, taking turns in blocks of 50 (each block starts with one untimed call), and ``--batches``
timed batches per path at 1,024, the garbage collector paused; the targets cycle over a pool of reachable poses
(``make_eval_set``). Median and p95 per call.

Agreement: every path's answers on the pool against the torch network in float64
(``copy.deepcopy(network).double()``), the largest joint gap [rad or m] of the chosen answer. The float32 network
itself is listed (``torch f32``): it differs from its own float64 forward pass by up to 1e-4 rad,
which is why the fast paths compute in float64 (see :mod:`hik_sim.learning.fast_network`), and why the float32 graph
is no closer; the float64 graph is. A fast path (numba, numpy, the float64 graph) passes at 1e-5.

Output: a Markdown table on stdout and ``<out>/inference_bench.json`` and ``<out>/inference_bench.md``.

Usage::

    python benchmarks/inference_bench.py --out benchmarks/results/inference
    python benchmarks/inference_bench.py --networks irb120/harmoatt irb120/mlp --calls 5000
    python benchmarks/inference_bench.py --quick
"""

from __future__ import annotations

import argparse
import copy
import gc
import json
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from harness import Timing  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.learning.fast_numpy import normalised_input
from hik_sim.learning.fast_network import FastIKNetwork, numba_available
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.models import parameter_count
from hik_sim.policies import PRETRAINED_DIR, load_pretrained, pretrained_names
from hik_sim.robots import get_robot

__all__ = ["BenchConfig", "Timing", "Row", "shipped_networks", "benchmark_network", "markdown_table", "main"]

TARGET_S = 60e-6
"""The goal: one pose through a shipped network in at most 60 µs, median, one thread."""
TOLERANCE = 1e-5
"""Largest joint gap [rad or m] to the float64 torch network for a fast path to agree."""
ONNX_PATHS = ("onnxruntime f32 1 thread", "onnxruntime f32 default threads", "onnxruntime f64 1 thread")
FAST_PATHS = ("numba", "numpy", "numba forward", *ONNX_PATHS)
AGREEING = ("numba", "numpy", "onnxruntime f64 1 thread")
BATCH = 1024
"""The large batch, beside batch 1."""
SEED = 11


@dataclass(frozen=True)
class BenchConfig:
    """How much to measure.

    Attributes:
        calls: timed calls per path and network.
        warmup: untimed calls per path first.
        block: consecutive calls of one path before the next takes its turn.
        pool: distinct target poses the calls cycle over (also the agreement check's targets).
        batches: timed batches of :data:`BATCH` poses per path.
        quick: whether this is the ``--quick`` smoke configuration.
    """

    calls: int = 2000
    warmup: int = 20
    block: int = 50
    pool: int = 300
    batches: int = 10
    quick: bool = False

    def __post_init__(self) -> None:
        for name in ("calls", "block", "pool", "batches"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be at least 1, got {getattr(self, name)}")


QUICK = BenchConfig(calls=30, warmup=2, block=10, pool=20, batches=2, quick=True)


@dataclass(frozen=True)
class Row:
    """One network's measurements.

    Attributes:
        network: ``robot/name``.
        model: ``harmoatt`` or ``mlp``.
        model_options: the card's model options (a HarmoAtt-IK card without ``trunk`` is a ``map`` trunk).
        parameters: trainable parameters.
        hypotheses: answers per pose H.
        fixed: fixed joints.
        dof: chain joints n.
        timings: path → :class:`Timing` at batch 1 (``torch``, ``numba``, ``numpy``, ``numba forward``, :data:`ONNX_PATHS`).
        gaps: path → largest joint gap to the float64 torch network on the pool [rad or m].
        batch: path → :class:`Timing` of one batch of :data:`BATCH` poses.
    """

    network: str
    model: str
    model_options: dict[str, Any]
    parameters: int
    hypotheses: int
    fixed: dict[str, float]
    dof: int
    timings: dict[str, Timing]
    gaps: dict[str, float]
    batch: dict[str, Timing]

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        torch_median = self.timings["torch"].median_s
        data["speedup"] = {path: torch_median / t.median_s for path, t in self.timings.items() if path != "torch"}
        data["meets_target"] = {path: t.median_s <= TARGET_S for path, t in self.timings.items() if path != "torch"}
        data["agrees"] = {path: gap <= TOLERANCE for path, gap in self.gaps.items() if path in AGREEING}
        data["batch_speedup"] = {path: self.batch["torch"].median_s / t.median_s for path, t in self.batch.items() if path != "torch"}
        return data


def shipped_networks() -> list[str]:
    """Every shipped network as ``robot/name``, in the index's order."""
    return list(json.loads((PRETRAINED_DIR / "index.json").read_text(encoding="utf-8")))


def time_batches(paths: Sequence[tuple[Callable[[Any], object], Any]], cfg: BenchConfig) -> list[Timing]:
    """Time whole batches, the paths taking turns batch by batch, after two untimed batches each."""
    for fn, inputs in paths:
        for _ in range(2):
            fn(inputs)
    samples: list[list[float]] = [[] for _ in paths]
    gc.collect()
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        for _ in range(cfg.batches):
            for (fn, inputs), times in zip(paths, samples):
                start = time.perf_counter()
                fn(inputs)
                times.append(time.perf_counter() - start)
    finally:
        if was_enabled:
            gc.enable()
    return [Timing.from_samples(times) for times in samples]


def _onnx_sessions(network: Any, folder: Path) -> dict[str, Any]:
    """The onnxruntime sessions of the network's exported graph (``hik_sim.export``) by path name; none without onnx(runtime)."""
    try:
        import onnx  # noqa: F401 - the export needs it
        import onnxruntime
    except ImportError:
        return {}
    from hik_sim.export import export_onnx

    sessions = {}
    for name in ONNX_PATHS:
        dtype = "float64" if "f64" in name else "float32"
        path = folder / f"{dtype}.onnx"
        if not path.exists():
            export_onnx(network, path, dtype=dtype)
        options = onnxruntime.SessionOptions()
        if "1 thread" in name:
            options.intra_op_num_threads = 1
            options.inter_op_num_threads = 1
        sessions[name] = onnxruntime.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    return sessions


def benchmark_network(name: str, cfg: BenchConfig) -> Row:
    """Time and check every path on one shipped network."""
    import tempfile

    robot_name, model_name = name.split("/")
    network = load_pretrained(robot_name, model_name).eval()
    chain = network.chain or Chain(get_robot(robot_name))
    targets = make_eval_set(chain, SEED, max(cfg.pool, BATCH), network.selection).batch
    pos64, quat64 = targets.pos[:cfg.pool], targets.quat[:cfg.pool]
    reference = copy.deepcopy(network).double().solve(pos64, quat64).numpy()

    paths: dict[str, tuple[Callable[[Any], object], list[Any]]] = {}
    tensors = [(pos64[i:i + 1].float(), quat64[i:i + 1].float()) for i in range(cfg.pool)]
    arrays = [(pos64[i].numpy().copy(), quat64[i].numpy().copy()) for i in range(cfg.pool)]
    paths["torch"] = (lambda pq: network.solve(*pq), tensors)
    fast = {backend: FastIKNetwork.from_network(network, backend=backend)
            for backend in (("numba", "numpy") if numba_available() else ("numpy",))}
    for backend, solver in fast.items():
        paths[backend] = (lambda pq, s=solver: s.solve(*pq), arrays)
    first = fast.get("numba", fast["numpy"])
    normalised = []  # the forward pass alone is timed: its inputs made beforehand, as the network makes them
    for p, q in arrays:
        x = np.empty(7)
        normalised_input(x, p, q, first._pos_min, first._pos_span)  # noqa: SLF001
        normalised.append(x)
    if "numba" in fast:
        paths["numba forward"] = (fast["numba"]._forward, normalised)  # noqa: SLF001
    with tempfile.TemporaryDirectory() as folder:
        sessions = _onnx_sessions(network, Path(folder))
    feeds: dict[str, list[dict[str, np.ndarray]]] = {}
    for path_name, session in sessions.items():
        dtype = np.float64 if "f64" in path_name else np.float32
        feeds[path_name] = [{"pos": p[None].astype(dtype), "quat": q[None].astype(dtype)} for p, q in arrays]
        paths[path_name] = (lambda feed, s=session: s.run(["answers"], feed), feeds[path_name])

    timings = dict(zip(paths, harness.time_side_by_side(list(paths.values()), cfg.calls, cfg.warmup, cfg.block)))

    big_pos, big_quat = targets.pos[:BATCH], targets.quat[:BATCH]
    big_arrays = [(big_pos[i].numpy().copy(), big_quat[i].numpy().copy()) for i in range(BATCH)]
    batch_paths: dict[str, tuple[Callable[[Any], object], Any]] = {"torch": (lambda pq: network.solve_all(*pq), (big_pos.float(), big_quat.float()))}
    for backend, solver in fast.items():
        batch_paths[backend] = (lambda poses, s=solver: [s.solve_all(p, q) for p, q in poses], big_arrays)
    for path_name, session in sessions.items():
        dtype = np.float64 if "f64" in path_name else np.float32
        feed = {"pos": big_pos.numpy().astype(dtype), "quat": big_quat.numpy().astype(dtype)}
        batch_paths[path_name] = (lambda f, s=session: s.run(["answers"], f), feed)
    batch = dict(zip(batch_paths, time_batches(list(batch_paths.values()), cfg)))

    gaps = {"torch f32": float(np.abs(network.solve(pos64.float(), quat64.float()).double().numpy() - reference).max())}
    for backend, solver in fast.items():
        gaps[backend] = float(np.abs(np.stack([solver.solve(*pq) for pq in arrays]) - reference).max())
    for path_name, session in sessions.items():
        dtype = np.float64 if "f64" in path_name else np.float32
        answers = session.run(["answers"], {"pos": pos64.numpy().astype(dtype), "quat": quat64.numpy().astype(dtype)})[0]
        gaps[path_name] = float(np.abs(answers[:, 0].astype(np.float64) - reference).max())
    card = network.card
    return Row(name, card.model, dict(card.model_options), parameter_count(network.model), network.hypotheses,
               dict(network.selection.fixed), chain.dof, timings, gaps, batch)


def _us(seconds: float) -> str:
    return f"{seconds * 1e6:.0f} µs" if seconds >= 1e-4 else f"{seconds * 1e6:.1f} µs"


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds >= 1e-3 else f"{seconds * 1e3:.2f} ms"


def markdown_table(rows: Sequence[Row]) -> str:
    """Batch 1: one line per network, median (p95) per path and the largest gap to the float64 torch network;
    then batch 1,024: median time of a whole batch per path."""
    present = [p for p in FAST_PATHS if any(p in row.timings for row in rows)]
    header = ["network", "params", "H", "torch `IKNetwork.solve`", *present, "max gap to float64 torch [rad]"]
    cells = []
    for row in rows:
        timings = [row.timings.get(path) for path in present]
        cells.append([row.network, f"{row.parameters / 1e3:.0f} k", row.hypotheses,
                      f"{_us(row.timings['torch'].median_s)} ({_us(row.timings['torch'].p95_s)})",
                      *("—" if t is None else f"{_us(t.median_s)} ({_us(t.p95_s)})" + (" ✓" if t.median_s <= TARGET_S else "") for t in timings),
                      ", ".join(f"{path} {gap:.1e}" for path, gap in row.gaps.items())])
    batch_paths = [p for p in ("torch", "numba", "numpy", *ONNX_PATHS) if any(p in row.batch for row in rows)]
    batch_cells = [[row.network, *(_ms(row.batch[p].median_s) if p in row.batch else "—" for p in batch_paths)] for row in rows]
    return (harness.markdown_table(header, cells, "lrrr" + "r" * len(present) + "l") + "\n\n"
            f"Batch {BATCH:,}: median time of one batch (torch `IKNetwork.solve_all` on the batch, FastIKNetwork "
            "`solve_all` pose by pose, onnxruntime's graph on the batch)\n\n"
            + harness.markdown_table(["network", *batch_paths], batch_cells, "l" + "r" * len(batch_paths)))


def machine_info(argv: Sequence[str] | None) -> dict[str, Any]:
    """The provenance block (:func:`harness.provenance`) with the versions of the other paths' libraries."""
    return harness.provenance(__file__, argv, numba=harness.version("numba"), onnxruntime=harness.version("onnxruntime"),
                              scipy=harness.version("scipy"))


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = harness.make_parser(__file__, "Latency of the shipped networks at batch 1 and 1,024: torch, hik_sim.learning.fast_network and "
                                 "onnxruntime, with their agreement.", out=f"{harness.RESULTS}/inference")
    parser.add_argument("--networks", nargs="+", default=None, metavar="ROBOT/NAME",
                        help="shipped networks to measure (default: every shipped network)")
    parser.add_argument("--calls", type=int, default=None, help=f"timed calls per path (default {BenchConfig.calls}; --quick {QUICK.calls})")
    parser.add_argument("--batches", type=int, default=None,
                        help=f"timed batches of {BATCH} poses per path (default {BenchConfig.batches}; --quick {QUICK.batches})")
    parser.add_argument("--pool", type=int, default=None, help=f"target poses (default {BenchConfig.pool}; --quick {QUICK.pool})")
    harness.add_quick(parser, "a tiny configuration for a smoke test")
    harness.add_progress(parser)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the tables, write ``<out>/inference_bench.json`` and ``.md``.

    Returns:
        0, or 1 when a fast path (:data:`AGREEING`) disagrees with the float64 torch network beyond :data:`TOLERANCE`
        (the results are written either way).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    base = QUICK if args.quick else BenchConfig()
    try:
        cfg = BenchConfig(calls=args.calls or base.calls, warmup=base.warmup, block=base.block, pool=args.pool or base.pool,
                          batches=args.batches or base.batches, quick=args.quick)
    except ValueError as error:
        parser.error(str(error))
    shipped = shipped_networks()
    names = args.networks or shipped
    known = set(shipped) | set(pretrained_names())  # the papers' baselines (benchmarks/checkpoints) too, from a checkout
    unknown = [n for n in names if n not in known]
    if unknown:
        parser.error(f"not shipped: {', '.join(unknown)}; networks: {', '.join(sorted(known))}")
    with harness.torch_threads(1):  # the caller's count restored after: a test session keeps its threads
        info = machine_info(argv)
        rows = [benchmark_network(name, cfg) for name in tqdm(names, desc="networks", file=sys.stderr, disable=args.no_progress)]
    head = (f"numba {info['numba']} · onnxruntime {info['onnxruntime']}; batch 1, median (p95) of {cfg.calls} calls per path after "
            f"{cfg.warmup} untimed (warm-up: compilation and first calls excluded); ✓: within {TARGET_S * 1e6:.0f} µs; batch {BATCH:,}: "
            f"median of {cfg.batches} batches after 2 untimed\n")
    table = markdown_table(rows)
    print(harness.provenance_line(info) + "\n\n" + head)
    print(table)
    record = {"benchmark": "inference", "target_s": TARGET_S, "tolerance": TOLERANCE, "batch": BATCH, "config": asdict(cfg),
              "rows": [row.to_json() for row in rows]}
    harness.write_record(args.out, "inference_bench", record, f"{head}\n{table}\n", info)
    wrong = [f"{row.network} {path}" for row in rows for path, gap in row.gaps.items()
             if path in AGREEING and gap > TOLERANCE]
    if wrong:
        print(f"error: fast paths outside {TOLERANCE:g} of the float64 network: {'; '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
