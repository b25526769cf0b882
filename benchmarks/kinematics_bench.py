"""Speed of hik_sim's fast kinematics paths against pytorch-kinematics, measured side by side.

What is measured, per robot (each hik_sim path against the reference pytorch-kinematics
``SerialChain`` built by :func:`hik_sim.kinematics.chain.reference_chain`, in the same process, on the
same inputs):

1. ``fk_float32`` / ``fk_float64`` — batched forward kinematics of B configurations:
   ``reference.forward_kinematics(q).get_matrix()`` against :meth:`Chain.fk
   <hik_sim.kinematics.chain.Chain.fk>`. ``Chain.fk`` also converts the rotation to a quaternion, so
   hik_sim does slightly more work than the reference here. Reported as time per batch and
   configurations per second.
2. ``train_step_float32`` — the kinematic part of a training step: FK of B configurations with
   ``q.requires_grad``, a scalar loss on position and orientation, and ``loss.backward()``. Both
   sides compute the same function: position and unit quaternion (the reference's matrix goes
   through :func:`hik_sim.kinematics.rotations.matrix_to_quaternion`), loss
   ``mean ‖p − p*‖² + mean (1 − ⟨q, q*⟩²)`` against FK targets of other configurations.
3. ``jacobian_float64`` — batched geometric Jacobian: ``reference.jacobian(q)`` against
   :meth:`Chain.jacobian <hik_sim.kinematics.chain.Chain.jacobian>`.
4. ``single_target_float64`` — latency of one FK + Jacobian for one configuration, the
   control-rate case: the reference's ``jacobian`` and ``forward_kinematics`` on a (1, n) tensor,
   against :meth:`Chain.fk_and_jacobian <hik_sim.kinematics.chain.Chain.fk_and_jacobian>` on the same
   (1, n) tensor and :meth:`SingleTargetKinematics.fk_and_jacobian
   <hik_sim.solvers.single_target.SingleTargetKinematics.fk_and_jacobian>` on an (n,) array. Inputs are
   built before timing (no numpy → torch conversion is timed); calls cycle over a pool of distinct
   configurations.

How it is timed: every callable gets a few untimed warm-up calls, then each of ``--repeats``
calls (``--calls`` for the single-target rows) is timed alone with :func:`time.perf_counter`, the
garbage collector paused as :mod:`timeit` does. The reference and the hik_sim paths of a row take
turns (round robin: one call each for batched rows, blocks of 50 warm calls for single-target
rows), so noise from the machine hits both sides alike. The table reports the median (and the p95
for single-target rows); the JSON also holds the p95, the minimum and a speed-up of minima, which
is the steadier figure when other processes share the CPUs. The share of CPU time that other
processes used during the run is recorded (Linux), and a warning printed when it is above 5 %. ``torch.set_num_threads`` is left at its default and reported.

Agreement: each row also checks, in the same run, that the hik_sim path's output matches the
reference on the timed inputs — the largest position gap [m], geodesic orientation gap [rad],
Jacobian element gap, or relative gradient gap — so a fast but wrong path cannot look good. Note
that pytorch-kinematics 0.10 keeps the URDF's joint origins rounded to float32 even in a float64
chain (0.29 m is stored as 0.28999999165…), so float64 gaps of ~1e-8 m are the reference's
rounding, not hik_sim's.

Output: a Markdown table on stdout, progress bars on stderr, and the raw numbers with machine
information in ``<out>/kinematics_<robot>.json`` (``<out>/kinematics_all.json`` with ``--all``).

Usage::

    python benchmarks/kinematics_bench.py --robot irb120
    python benchmarks/kinematics_bench.py --all --batch 1024
    python benchmarks/kinematics_bench.py --urdf arm.urdf --base base_link --ee tool0 --quick
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np
import torch
from tqdm import tqdm

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from harness import Timing, time_side_by_side  # noqa: E402
from hik_sim.robots.cli import add_robot_arguments, robot_from_args
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain, reference_chain
from hik_sim.robots import RobotSpec, get_robot, robot_names
from hik_sim.kinematics.rotations import matrix_to_quaternion, rotation_error
from hik_sim.solvers.single_target import SingleTargetKinematics

__all__ = ["BenchConfig", "Timing", "Row", "time_side_by_side", "benchmark_robot", "markdown_table", "main"]

REFERENCE = "pytorch-kinematics"

# Other processes' share of the CPU time above which a run is flagged as noisy.
NOISY_SHARE = 0.05

# Largest gap to the reference that still counts as agreement, by dtype and kind: position [m],
# orientation [rad], Jacobian element [m or rad per joint unit], gradient (relative to its largest).
TOLERANCES: dict[str, dict[str, float]] = {
    "float64": {"pos_gap_m": 1e-6, "rot_gap_rad": 1e-5, "jac_gap": 1e-6, "grad_gap_rel": 1e-6},
    "float32": {"pos_gap_m": 1e-5, "rot_gap_rad": 1e-4, "jac_gap": 1e-5, "grad_gap_rel": 1e-4},
}


@dataclass(frozen=True)
class BenchConfig:
    """How much to measure.

    Attributes:
        batch: configurations per batched call B.
        repeats: timed calls per batched measurement.
        warmup: untimed calls before each batched measurement.
        calls: timed calls per single-target implementation.
        single_warmup: untimed calls before each single-target measurement.
        pool: distinct configurations the single-target calls cycle over.
        block: consecutive single-target calls of one implementation before the next takes its turn.
        seed: seed of the sampled configurations.
        quick: whether this is the ``--quick`` smoke configuration.
    """

    batch: int = 1024
    repeats: int = 30
    warmup: int = 3
    calls: int = 1000
    single_warmup: int = 20
    pool: int = 256
    block: int = 50
    seed: int = 0
    quick: bool = False

    def __post_init__(self) -> None:
        for name in ("batch", "repeats", "calls", "pool", "block"):
            if getattr(self, name) < 1:
                raise HikError(f"{name} must be at least 1, got {getattr(self, name)}")
        for name in ("warmup", "single_warmup"):
            if getattr(self, name) < 0:
                raise HikError(f"{name} must be 0 or more, got {getattr(self, name)}")


QUICK = BenchConfig(batch=64, repeats=5, warmup=2, calls=50, single_warmup=3, pool=16, block=10, quick=True)


@dataclass(frozen=True)
class Row:
    """One line of the result: a hik_sim path against the reference on one task.

    Attributes:
        robot: robot name.
        dof: joints in the chain n.
        measurement: row id, e.g. ``fk_float32``.
        description: what one timed call does.
        batch: configurations per call (1 for single-target rows).
        dtype: ``float32`` or ``float64``.
        implementation: the hik_sim path, e.g. ``Chain.fk``.
        reference: timing of pytorch-kinematics.
        hik_sim: timing of the hik_sim path.
        agreement: gap between the two outputs, by kind (``pos_gap_m``, ``rot_gap_rad``,
            ``jac_gap``, ``grad_gap_rel``).
    """

    robot: str
    dof: int
    measurement: str
    description: str
    batch: int
    dtype: str
    implementation: str
    reference: Timing
    hik_sim: Timing
    agreement: dict[str, float]

    @property
    def speedup(self) -> float:
        """Reference median time over the hik_sim median time."""
        return self.reference.median_s / self.hik_sim.median_s

    @property
    def agrees(self) -> bool:
        """Whether every agreement gap is within :data:`TOLERANCES` for the row's dtype."""
        limits = TOLERANCES[self.dtype]
        return all(value <= limits[key] for key, value in self.agreement.items())

    def to_json(self) -> dict[str, Any]:
        """The row as plain JSON data, with speed-up and configurations per second added."""
        data = asdict(self)
        data["speedup"] = self.speedup
        data["speedup_min"] = self.reference.min_s / self.hik_sim.min_s
        data["agrees"] = self.agrees
        data["tolerances"] = {key: TOLERANCES[self.dtype][key] for key in self.agreement}
        data["reference_configs_per_s"] = self.batch / self.reference.median_s
        data["hik_sim_configs_per_s"] = self.batch / self.hik_sim.median_s
        return data


# --- agreement -----------------------------------------------------------------------------------


def position_gap(pos: torch.Tensor | np.ndarray, ref_pos: torch.Tensor) -> float:
    """Largest Euclidean distance between positions (B, 3) [m]."""
    pos = torch.as_tensor(pos, dtype=torch.float64).reshape(-1, 3)
    return float(torch.linalg.vector_norm(pos - ref_pos.to(torch.float64).reshape(-1, 3), dim=-1).max())


def orientation_gap(quat: torch.Tensor | np.ndarray, ref_rot: torch.Tensor) -> float:
    """Largest geodesic angle [rad] between quaternions (B, 4) wxyz and reference matrices (B, 3, 3)."""
    quat = torch.as_tensor(quat, dtype=torch.float64).reshape(-1, 4)
    ref_quat = matrix_to_quaternion(ref_rot.to(torch.float64).reshape(-1, 3, 3))
    return float(rotation_error(quat, ref_quat).max())


def max_abs_gap(a: torch.Tensor | np.ndarray, b: torch.Tensor | np.ndarray) -> float:
    """Largest element-wise absolute difference, in float64."""
    a = torch.as_tensor(a, dtype=torch.float64)
    b = torch.as_tensor(b, dtype=torch.float64)
    return float((a - b.reshape(a.shape)).abs().max())


# --- the four measurements ------------------------------------------------------------------------


@dataclass
class Subjects:
    """Everything measured for one robot, built once.

    Attributes:
        robot: the robot.
        chain: hik_sim's batched chain.
        single: hik_sim's MuJoCo single-target kinematics.
        reference: pytorch-kinematics chains by dtype.
    """

    robot: RobotSpec
    chain: Chain
    single: SingleTargetKinematics
    reference: dict[torch.dtype, Any]

    @classmethod
    def build(cls, robot: RobotSpec) -> "Subjects":
        """Build the hik_sim paths and the float32/float64 reference chains of ``robot``."""
        chain = Chain(robot)
        single = SingleTargetKinematics(robot, chain.geometry)
        reference = {dtype: reference_chain(robot, dtype) for dtype in (torch.float32, torch.float64)}
        return cls(robot, chain, single, reference)

    def sample(self, batch: int, dtype: torch.dtype, seed: int) -> torch.Tensor:
        """``batch`` in-limit configurations (batch, n), reproducible from ``seed``."""
        return self.chain.sample(batch, torch.Generator().manual_seed(seed), dtype)


def _row(subjects: Subjects, measurement: str, description: str, batch: int, dtype: torch.dtype,
         implementation: str, reference: Timing, fast: Timing, agreement: dict[str, float]) -> Row:
    return Row(subjects.robot.name, subjects.chain.dof, measurement, description, batch, _dtype_name(dtype),
               implementation, reference, fast, agreement)


def _dtype_name(dtype: torch.dtype) -> str:
    return str(dtype).removeprefix("torch.")


def measure_fk(subjects: Subjects, dtype: torch.dtype, cfg: BenchConfig) -> Row:
    """Row 1: batched FK, reference ``get_matrix()`` against ``Chain.fk``."""
    ref, chain = subjects.reference[dtype], subjects.chain
    q = subjects.sample(cfg.batch, dtype, cfg.seed)
    ref_timing, fast_timing = time_side_by_side(
        [(lambda x: ref.forward_kinematics(x).get_matrix(), [q]), (chain.fk, [q])], cfg.repeats, cfg.warmup)
    ref_matrix = ref.forward_kinematics(q).get_matrix()
    pose = chain.fk(q)
    agreement = {"pos_gap_m": position_gap(pose.pos, ref_matrix[:, :3, 3]),
                 "rot_gap_rad": orientation_gap(pose.quat, ref_matrix[:, :3, :3])}
    name = _dtype_name(dtype)
    return _row(subjects, f"fk_{name}", f"batched FK {name}, B={cfg.batch}", cfg.batch, dtype, "Chain.fk",
                ref_timing, fast_timing, agreement)


def _pose_loss(pos: torch.Tensor, quat: torch.Tensor, target_pos: torch.Tensor, target_quat: torch.Tensor) -> torch.Tensor:
    """``mean ‖p − p*‖² + mean (1 − ⟨q, q*⟩²)``: a scalar on position [m²] and orientation."""
    return ((pos - target_pos) ** 2).sum(-1).mean() + (1 - (quat * target_quat).sum(-1) ** 2).mean()


def measure_train_step(subjects: Subjects, cfg: BenchConfig) -> Row:
    """Row 2: float32 FK + scalar pose loss + backward, reference against ``Chain.fk``."""
    ref, chain = subjects.reference[torch.float32], subjects.chain
    q0 = subjects.sample(cfg.batch, torch.float32, cfg.seed)
    with torch.no_grad():
        target = chain.fk(subjects.sample(cfg.batch, torch.float32, cfg.seed + 1))

    def reference_step(q_init: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = q_init.clone().requires_grad_(True)
        matrix = ref.forward_kinematics(q).get_matrix()
        pos = matrix[:, :3, 3]
        _pose_loss(pos, matrix_to_quaternion(matrix[:, :3, :3]), target.pos, target.quat).backward()
        return pos.detach(), q.grad

    def fast_step(q_init: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        q = q_init.clone().requires_grad_(True)
        pose = chain.fk(q)
        _pose_loss(pose.pos, pose.quat, target.pos, target.quat).backward()
        return pose.pos.detach(), q.grad

    ref_timing, fast_timing = time_side_by_side([(reference_step, [q0]), (fast_step, [q0])], cfg.repeats, cfg.warmup)
    ref_pos, ref_grad = reference_step(q0)
    pos, grad = fast_step(q0)
    agreement = {"pos_gap_m": position_gap(pos, ref_pos),
                 "grad_gap_rel": max_abs_gap(grad, ref_grad) / max(float(ref_grad.abs().max()), 1e-30)}
    return _row(subjects, "train_step_float32", f"FK + loss + backward float32, B={cfg.batch}", cfg.batch,
                torch.float32, "Chain.fk + backward", ref_timing, fast_timing, agreement)


def measure_jacobian(subjects: Subjects, cfg: BenchConfig) -> Row:
    """Row 3: batched float64 Jacobian, reference ``jacobian`` against ``Chain.jacobian``."""
    ref, chain = subjects.reference[torch.float64], subjects.chain
    q = subjects.sample(cfg.batch, torch.float64, cfg.seed)
    ref_timing, fast_timing = time_side_by_side([(ref.jacobian, [q]), (chain.jacobian, [q])], cfg.repeats, cfg.warmup)
    agreement = {"jac_gap": max_abs_gap(chain.jacobian(q), ref.jacobian(q))}
    return _row(subjects, "jacobian_float64", f"batched Jacobian float64, B={cfg.batch}", cfg.batch,
                torch.float64, "Chain.jacobian", ref_timing, fast_timing, agreement)


def measure_single_target(subjects: Subjects, cfg: BenchConfig) -> list[Row]:
    """Row 4: one FK + Jacobian per call, float64: reference against Chain (1, n) and MuJoCo (n,)."""
    ref, chain, single = subjects.reference[torch.float64], subjects.chain, subjects.single
    pool = subjects.sample(cfg.pool, torch.float64, cfg.seed)
    as_tensors = [pool[i : i + 1].clone() for i in range(cfg.pool)]  # (1, n) each
    as_arrays = [row.numpy().copy() for row in pool]  # (n,) each

    def reference_call(q: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        return ref.jacobian(q), ref.forward_kinematics(q).get_matrix()

    ref_timing, chain_timing, single_timing = time_side_by_side(
        [(reference_call, as_tensors), (chain.fk_and_jacobian, as_tensors), (single.fk_and_jacobian, as_arrays)],
        cfg.calls, cfg.single_warmup, block=cfg.block)

    ref_matrix, ref_jac = ref.forward_kinematics(pool).get_matrix(), ref.jacobian(pool)
    chain_out = [chain.fk_and_jacobian(q) for q in as_tensors]
    single_out = [single.fk_and_jacobian(q) for q in as_arrays]

    def agreement(poses: Sequence[Any], jacobians: Sequence[Any]) -> dict[str, float]:
        pos = np.stack([np.asarray(p.pos, dtype=float).reshape(3) for p in poses])
        quat = np.stack([np.asarray(p.quat, dtype=float).reshape(4) for p in poses])
        jac = np.stack([np.asarray(j, dtype=float).reshape(6, -1) for j in jacobians])
        return {"pos_gap_m": position_gap(pos, ref_matrix[:, :3, 3]),
                "rot_gap_rad": orientation_gap(quat, ref_matrix[:, :3, :3]),
                "jac_gap": max_abs_gap(jac, ref_jac)}

    description = "one FK + Jacobian per call, float64"
    return [
        _row(subjects, "single_target_float64", description, 1, torch.float64, "Chain.fk_and_jacobian (1,n)", ref_timing,
             chain_timing, agreement([p for p, _ in chain_out], [j for _, j in chain_out])),
        _row(subjects, "single_target_float64", description, 1, torch.float64,
             "SingleTargetKinematics.fk_and_jacobian",
             ref_timing, single_timing, agreement([p for p, _ in single_out], [j for _, j in single_out])),
    ]


MEASUREMENTS: tuple[tuple[str, Callable[[Subjects, BenchConfig], Row | list[Row]]], ...] = (
    ("fk_float32", lambda s, c: measure_fk(s, torch.float32, c)),
    ("fk_float64", lambda s, c: measure_fk(s, torch.float64, c)),
    ("train_step_float32", measure_train_step),
    ("jacobian_float64", measure_jacobian),
    ("single_target_float64", measure_single_target),
)


def benchmark_robot(robot: RobotSpec, cfg: BenchConfig, progress: bool = True) -> list[Row]:
    """Every measurement for one robot.

    Args:
        robot: the robot.
        cfg: sizes and repeats.
        progress: show a tqdm bar over the measurements on stderr.

    Returns:
        The rows, in :data:`MEASUREMENTS` order (the single-target measurement gives two).
    """
    subjects = Subjects.build(robot)
    rows: list[Row] = []
    bar = tqdm(MEASUREMENTS, desc=robot.name, unit="row", leave=False, file=sys.stderr, disable=not progress)
    for name, measure in bar:
        bar.set_postfix_str(name)
        result = measure(subjects, cfg)
        rows.extend(result if isinstance(result, list) else [result])
    return rows


# --- reporting ------------------------------------------------------------------------------------


def machine_info(argv: Sequence[str] | None) -> dict[str, Any]:
    """The provenance block (:func:`harness.provenance`) with what the timings here also depend on: the CPUs this process
    may use, torch's inter-op threads, pytorch-kinematics' version."""
    affinity = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else None
    return harness.provenance(__file__, argv, cpus_usable=affinity, torch_interop_threads=torch.get_num_interop_threads(),
                              pytorch_kinematics=harness.version("pytorch-kinematics"))


class CpuShare:
    """The share of the machine's CPU time that other processes used while this one ran.

    Reads ``/proc/stat`` (Linux) at :meth:`start` and :meth:`stop` and subtracts this process's own
    CPU time; elsewhere the share is ``None``. Other processes on the CPUs inflate and scatter the
    timings.
    """

    def __init__(self) -> None:
        self._start: tuple[float, float, float] | None = None

    @staticmethod
    def _sample() -> tuple[float, float, float] | None:
        try:
            fields = [int(v) for v in Path("/proc/stat").read_text().split("\n", 1)[0].split()[1:]]
            tick = os.sysconf("SC_CLK_TCK")
        except (OSError, ValueError, IndexError):
            return None
        idle = fields[3] + fields[4]  # idle + iowait
        return (sum(fields[:8]) - idle) / tick, sum(fields[:8]) / tick, time.process_time()

    def start(self) -> None:
        """Begin the window."""
        self._start = self._sample()

    def stop(self) -> float | None:
        """End the window: other processes' share of all CPU time in it, 0–1 (``None`` if unknown)."""
        end = self._sample()
        if self._start is None or end is None or end[1] <= self._start[1]:
            return None
        busy, total, own = (e - s for e, s in zip(end, self._start))
        return min(max((busy - own) / total, 0.0), 1.0)


def format_seconds(seconds: float) -> str:
    """A duration with a readable unit: µs below 1 ms, ms below 1 s, else s."""
    if seconds < 1e-3:
        return f"{seconds * 1e6:.1f} µs"
    if seconds < 1.0:
        return f"{seconds * 1e3:.2f} ms"
    return f"{seconds:.2f} s"


def _format_rate(per_second: float) -> str:
    if per_second >= 1e6:
        return f"{per_second / 1e6:.2f} M cfg/s"
    return f"{per_second / 1e3:.1f} k cfg/s"


def _timing_cell(timing: Timing, batch: int) -> str:
    if batch == 1:
        return f"{format_seconds(timing.median_s)} (p95 {format_seconds(timing.p95_s)})"
    return f"{format_seconds(timing.median_s)} ({_format_rate(batch / timing.median_s)})"


_AGREEMENT_LABELS = {"pos_gap_m": ("pos", "m"), "rot_gap_rad": ("rot", "rad"), "jac_gap": ("J", ""),
                     "grad_gap_rel": ("grad", "rel")}


def _agreement_cell(row: Row) -> str:
    parts = []
    for key, value in row.agreement.items():
        label, unit = _AGREEMENT_LABELS.get(key, (key, ""))
        parts.append(f"{label} {value:.1e}" + (f" {unit}" if unit else ""))
    return ", ".join(parts) + ("" if row.agrees else " **MISMATCH**")


def markdown_table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table: robot, measurement, reference, hik_sim, speed-up, agreement."""
    header = ["robot", "measurement", f"reference ({REFERENCE})", "hik_sim", "speed-up", "agreement (max gap)"]
    cells = [[row.robot, f"{row.description}: `{row.implementation}`", _timing_cell(row.reference, row.batch), _timing_cell(row.hik_sim, row.batch),
              f"{row.speedup:.1f}×", _agreement_cell(row)] for row in rows]
    return harness.markdown_table(header, cells, "llllrl")


def machine_line(info: dict[str, Any]) -> str:
    """:func:`machine_info` in one line for the console: the provenance line, pytorch-kinematics' version and the other
    processes' share of the CPU time."""
    others = info.get("other_processes_cpu_share")
    share = "unknown" if others is None else f"{others:.0%}"
    return (f"{harness.provenance_line(info)} · pytorch-kinematics {info['pytorch_kinematics']} · "
            f"other processes' CPU share during the run: {share}")


# --- command line ---------------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    """The command-line parser."""
    parser = harness.make_parser(__file__, "Time hik_sim's FK/Jacobian paths against pytorch-kinematics and check that they agree.")
    add_robot_arguments(parser)
    parser.add_argument("--all", action="store_true", help=f"every registered robot: {', '.join(robot_names())}")
    parser.add_argument("--batch", type=int, default=None, help=f"configurations per batched call (default {BenchConfig.batch}; --quick {QUICK.batch})")
    parser.add_argument("--repeats", type=int, default=None, help=f"timed calls per batched measurement (default {BenchConfig.repeats}; --quick {QUICK.repeats})")
    parser.add_argument("--calls", type=int, default=None, help=f"timed single-target calls per implementation (default {BenchConfig.calls}; --quick {QUICK.calls})")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sampled configurations (default 0)")
    harness.add_quick(parser, "a tiny configuration for a smoke test (a few seconds)")
    harness.add_progress(parser)
    return parser


def config_from_args(args: argparse.Namespace) -> BenchConfig:
    """The :class:`BenchConfig` of parsed arguments (``--quick`` sets the defaults that are not given)."""
    base = QUICK if args.quick else BenchConfig()
    return BenchConfig(
        batch=args.batch if args.batch is not None else base.batch,
        repeats=args.repeats if args.repeats is not None else base.repeats,
        warmup=base.warmup,
        calls=args.calls if args.calls is not None else base.calls,
        single_warmup=base.single_warmup,
        pool=base.pool,
        block=base.block,
        seed=args.seed,
        quick=args.quick,
    )


def robots_from_args(args: argparse.Namespace) -> tuple[list[RobotSpec], dict[str, str]]:
    """The robots to measure, and for ``--all`` those skipped (name → reason) because they cannot load."""
    if not args.all:
        return [robot_from_args(args)], {}
    if args.robot or args.urdf or args.base or args.ee:
        raise HikError("--all measures every registered robot; do not combine it with --robot or --urdf")
    robots, skipped = [], {}
    for name in robot_names():
        try:
            robots.append(get_robot(name))
        except HikError as error:
            skipped[name] = str(error)
    return robots, skipped


def output_path(out: Path, robots: Sequence[RobotSpec], every: bool) -> Path:
    """``<out>/kinematics_all.json`` for ``--all``, else ``<out>/kinematics_<robot>.json``."""
    stem = "all" if every else re.sub(r"[^A-Za-z0-9_.-]", "_", robots[0].name)
    return out / f"kinematics_{stem}.json"


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the Markdown table and write the JSON.

    Args:
        argv: command-line arguments (default ``sys.argv[1:]``).

    Returns:
        The exit status: 0, or 1 when a hik_sim path disagrees with the reference beyond
        :data:`TOLERANCES` (the results are written either way).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        cfg = config_from_args(args)
        robots, skipped = robots_from_args(args)
    except HikError as error:
        parser.error(str(error))
    for name, reason in skipped.items():
        print(f"skipping {name}: {reason}", file=sys.stderr)
    if not robots:
        parser.error("no robot could be loaded")

    info = machine_info(argv)
    cpu_share = CpuShare()
    cpu_share.start()
    rows: list[Row] = []
    for robot in tqdm(robots, desc="robots", unit="robot", file=sys.stderr, disable=args.no_progress or len(robots) == 1):
        rows.extend(benchmark_robot(robot, cfg, progress=not args.no_progress))

    others = cpu_share.stop()
    info["other_processes_cpu_share"] = others
    if others is not None and others > NOISY_SHARE:
        print(f"warning: other processes used {others:.0%} of the CPU time during this run: "
              "timings are inflated and noisy; rerun on a quiet machine", file=sys.stderr)
    print(machine_line(info))
    print(f"B={cfg.batch}, median of {cfg.repeats} timed calls (single target: {cfg.calls} calls, median and p95)\n")
    print(markdown_table(rows))

    record = {
        "provenance": info,
        "benchmark": "kinematics",
        "reference": REFERENCE,
        "config": asdict(cfg),
        "robots": [{"name": r.name, "dof": len(r.joint_names), "urdf": str(r.urdf), "source": r.source} for r in robots],
        "skipped": skipped,
        "rows": [row.to_json() for row in rows],
    }
    path = harness.write_json(output_path(args.out, robots, args.all), record)
    print(f"\nwrote {path}")
    wrong = [f"{row.robot} {row.measurement} ({row.implementation})" for row in rows if not row.agrees]
    if wrong:
        print(f"error: outside the agreement tolerances: {'; '.join(wrong)}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
