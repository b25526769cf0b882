"""``python -m hik_sim.evaluate``: how well IK policies reach and track on a robot — numbers, plots, videos.

For each policy (default: the shipped one-answer HarmoAtt-IK network and its MLP baseline, the
four-answer networks closed on their own error (``closed_loop``, no solver) and the hybrid network +
LM solver) it measures

1. **IK accuracy** (open loop) on fixed reachable targets: position and rotation error
   distributions, success at (5 mm, 2°) and (10 mm, 20°), solve time per target;
2. **Reach** episodes (``hik_sim/Reach``) with the policy as an :class:`~hik_sim.policies.IKController`:
   success (5 mm & 2° held), time to reach, IK latency per control step and per solve, joint-limit violations,
   solver failures;
3. **Track** episodes (``hik_sim/Track``, figure-eight at 0.1 m/s by default): position error
   RMS / p95 / max after the first second, rotation RMS;

and writes a run folder: ``report.html`` (the page to open: tables, plots and videos; see
:mod:`hik_sim.evaluation.report`), ``report.json``, ``metrics.csv``, ``summary.md``, plots (``ik_errors.png``,
``reach_error.png``, ``track_error.png``) and rollout videos (:mod:`hik_sim.sim.video`):
``<policy>_<env>.mp4`` (640 × 480 by default, with a small ``.gif`` preview) of each policy's first
episode, framed on the motion, with the goal's and end-effector's paths as trails and the errors
overlaid, and ``side_by_side_<env>.mp4`` (with its last frame as a PNG): all policies on that same
episode, tiled left to right.

Run folders belong to one run (:func:`claim_run_folder`): the default one,
``runs/eval/<robot>-<date>``, takes a ``-2``, ``-3``, … suffix when another run started in the same
second; an explicit ``--out`` must be new or empty (a folder holding another run's files is refused,
so a report never sits beside stale videos it does not list); a run that fails removes what it
wrote, and the folder if it made it.

A robot loaded from a URDF has no shipped networks: ``lm``, ``multistart`` and ``dm_control`` need
none (they are its default policies), ``hybrid`` is seeded by the ``--checkpoint`` network, and any
checkpoint trained for it is a policy by its path.

Episodes run through :func:`hik_sim.evaluation.rollout.rollout`, the loop the benchmarks, tests and
example share; metrics are defined in :mod:`hik_sim.evaluation.metrics` (Euclidean position error,
geodesic rotation error ``2·acos(|⟨q, q'⟩|)``; docs/conventions.md).

Examples::

    python -m hik_sim.evaluate                                   # irb120, shipped checkpoints, under 3 min
    python -m hik_sim.evaluate --robot panda --policy hybrid multistart dm_control --episodes 10
    python -m hik_sim.evaluate --urdf arm.urdf --base base --ee tool --checkpoint runs/train/arm/harmoatt.pt
    python -m hik_sim.evaluate --suite paper                     # both seed papers' experiments
"""

from __future__ import annotations

import argparse
import csv
import json
import math
import os
import platform
import re
import shutil
import tempfile
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from hik_sim.errors import HikError, OutputError
from hik_sim.robots import RobotSpec
from hik_sim.solvers.registry import BASELINE_NAMES, SOLVER_NAMES

if TYPE_CHECKING:
    from hik_sim.policies.controller import IKController
    from hik_sim.solvers.ik import IKSolver

__all__ = ["EvalConfig", "PolicySpec", "build_policy", "claim_run_folder", "evaluate", "paper_suite", "summary_markdown", "main"]

POLICY_NAMES: tuple[str, ...] = tuple(n for n in SOLVER_NAMES if n not in BASELINE_NAMES)
"""The policies every robot with shipped networks runs (harmoatt, mlp, closed_loop, hybrid, multistart,
lm, dm_control); every name of :func:`hik_sim.solvers.registry.make_solver` is a policy, the baselines
``cycleik`` and ``regression`` where shipped, any other shipped network and a checkpoint path too."""
NETWORK_FREE_POLICIES: tuple[str, ...] = ("lm", "multistart")
"""The default policies of a robot no network is shipped for (``dm_control`` needs none either)."""
REPORT_SUFFIXES: tuple[str, ...] = (".json", ".md", ".csv", ".txt", ".pt", ".png", ".mp4", ".gif")
"""Suffixes of files a run writes: an ``--out`` ending in one is a file name given where a folder is meant."""


@dataclass(frozen=True)
class EvalConfig:
    """What the evaluator runs.

    Attributes:
        policies: policy names (``harmoatt``, ``mlp``, ``closed_loop``, ``hybrid``, ``multistart``, ``lm``,
            ``dm_control``) or checkpoint paths. The default: the paper's pair (the one-answer HarmoAtt-IK
            network and its parameter-matched MLP, each alone), the product's network-alone controller
            (``closed_loop``: the four-answer networks closed on their own error) and the hybrid.
        envs: ``reach`` and/or ``track``.
        trajectory: Track's trajectory.
        speed: Track's speed [m/s].
        episodes: Reach episodes per policy.
        track_episodes: Track episodes per policy.
        track_seconds: simulated time per Track episode [s].
        ik_targets: fixed targets for the open-loop accuracy.
        seed: seed of targets and episodes.
        video: record the first episode of each policy and environment.
        width: video width [px] of one policy (even; the side-by-side video is one width per policy).
        height: video height [px] (even).
        device: where networks run.
        seed_network: a checkpoint (.pt) that seeds ``hybrid`` on a robot no network is shipped
            for (``--checkpoint``); a robot with shipped networks uses its own seed network.
    """

    policies: tuple[str, ...] = ("harmoatt", "mlp", "closed_loop", "hybrid")
    envs: tuple[str, ...] = ("reach", "track")
    trajectory: str = "figure_eight"
    speed: float = 0.1
    episodes: int = 5
    track_episodes: int = 2
    track_seconds: float = 10.0
    ik_targets: int = 2000
    seed: int = 0
    video: bool = True
    width: int = 640
    height: int = 480
    device: str = "cpu"
    seed_network: str | None = None

    def __post_init__(self) -> None:
        if not self.policies:
            raise HikError(f"give at least one policy: {', '.join(POLICY_NAMES)} or a checkpoint path")
        bad_envs = sorted(set(self.envs) - {"reach", "track"})
        if bad_envs:
            raise HikError(f"unknown environments {bad_envs}; environments are: reach, track")
        if self.episodes < 1 or self.track_episodes < 1 or self.ik_targets < 1 or not self.track_seconds > 1.0:
            raise HikError("episodes, track_episodes and ik_targets must be at least 1, track_seconds above 1 s")
        if not math.isfinite(self.track_seconds):  # inf passed the check above and failed as an OverflowError mid-run
            raise HikError(f"track_seconds must be finite, got {self.track_seconds}")
        if self.seed < 0:  # gymnasium refused it only at the first episode, after the open-loop part had run
            raise HikError(f"seed must be >= 0, got {self.seed}")
        if not (self.device == "cpu" or re.fullmatch(r"cuda(:\d+)?", self.device)):  # else silently unused by network-free policies
            raise HikError(f"device must be cpu, cuda or cuda:N, got {self.device!r}")
        if self.video:
            from hik_sim.sim.video import VideoOptions

            VideoOptions(width=self.width, height=self.height)  # an odd or tiny size, before any work


@dataclass
class PolicySpec:
    """A policy, built for one robot: its batch solver (open loop) and its controller (closed loop)."""

    name: str
    solver: IKSolver
    controller: IKController
    card: dict[str, Any] = field(default_factory=dict)


def build_policy(name: str, robot: RobotSpec, device: str = "cpu", seed_network: str | None = None) -> PolicySpec:
    """The solver and controller a policy name stands for, both from
    :func:`hik_sim.solvers.registry.make_solver`: one of :data:`~hik_sim.solvers.registry.SOLVER_NAMES`
    (:data:`POLICY_NAMES` for every robot with shipped networks), any other network shipped for
    ``robot`` (e.g. ``harmoatt_4answers`` on the IRB120), or a checkpoint path. The solver is the
    batched one (``hybrid``: :class:`~hik_sim.solvers.ik.HybridIK`), the controller runs the one-target
    one (``hybrid``: :class:`~hik_sim.solvers.ik.SingleTargetIK` on the same network).

    Args:
        name: the policy.
        robot: the robot, registered or loaded from a URDF.
        device: where networks run.
        seed_network: a checkpoint (.pt) that seeds ``hybrid`` and ``closed_loop`` where no network is shipped for ``robot``.

    Raises:
        HikError: unknown policy, or a policy that needs a network no one ships for the robot (then
            give a checkpoint path, or ``seed_network`` for ``hybrid``).
    """
    from hik_sim.policies import IKController
    from hik_sim.sim import SceneOptions
    from hik_sim.solvers.registry import SEEDED_NAMES, NetworkNotShippedError, UnknownSolverError, is_checkpoint, make_solver, shipped_networks

    seeded = name in SEEDED_NAMES
    seed = seed_network if seeded and not shipped_networks(robot) else None  # a robot with shipped networks uses its own seed
    try:
        solver = make_solver(name, robot, device=device, batched=True, network=seed)
        network = getattr(solver, "network", None)
        # the controller's solver, one target a call: the hybrid's SingleTargetIK on the same network; else the same solver
        single = make_solver(name, robot, device=device, network=network) if name == "hybrid" else solver
    except UnknownSolverError as exc:
        others = [n for n in exc.shipped if n not in SOLVER_NAMES]
        raise HikError(f"unknown policy {name!r}; policies are: {', '.join(SOLVER_NAMES)}"
                       + (f", the networks shipped for {robot.name} ({', '.join(others)})" if others else "")
                       + ", or a checkpoint path (.pt)") from None
    except NetworkNotShippedError as exc:
        if exc.shipped:
            raise HikError(f"policy {name!r} needs the {name} network, and none is shipped for robot {robot.name!r} "
                           f"(shipped: {', '.join(exc.shipped)}): give a checkpoint trained for it (the path as a policy)") from None
        raise HikError(f"policy {name!r} needs a network, and none is shipped for robot {robot.name!r}: "
                       + ("give the seed network trained for it (--checkpoint PATH.pt)" if seeded
                          else "give a checkpoint trained for it (--checkpoint PATH.pt, or the path as a policy)")
                       + f", or a policy without a network: {', '.join(NETWORK_FREE_POLICIES)}, dm_control") from None
    label = Path(name).stem if is_checkpoint(name) else name
    card = getattr(network, "card", None)
    return PolicySpec(label, solver, IKController(single, lead_time=SceneOptions().servo_lag), card.to_json() if card is not None else {})


WARM_UP_TARGETS = 8
"""Targets solved, untimed, before :func:`ik_accuracy` times a policy's solve."""


def ik_accuracy(policy: PolicySpec, robot: RobotSpec, targets: int, seed: int) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Open-loop accuracy: metrics and the per-target errors (position [m], rotation [rad]).

    ``ms_per_target`` times the solve of all targets after an untimed solve of the first few: a
    fresh install compiles (numba) or loads the solvers' kernels on their first call (a development
    check, session 20: the hybrid's first call in a fresh clone read 7.3 ms a target over 2,000 targets,
    the second 0.42).
    """
    from hik_sim.learning.data import make_eval_set
    from hik_sim.kinematics.chain import Chain
    from hik_sim.evaluation.metrics import accuracy_metrics

    batch = make_eval_set(Chain(robot), seed, targets).batch
    policy.solver.solve(batch.pos[:WARM_UP_TARGETS], batch.quat[:WARM_UP_TARGETS])  # compiles and loads, untimed
    result = policy.solver.solve(batch.pos, batch.quat)
    metrics = accuracy_metrics(result.pos_err, result.rot_err) | {"ms_per_target": 1000 * result.wall_time / targets}
    return metrics, result.pos_err.numpy(), result.rot_err.numpy()


def claim_run_folder(out: Path, unique: bool = False) -> tuple[Path, bool]:
    """Make ``out`` this run's folder, before any work.

    Args:
        out: the folder.
        unique: where ``out`` exists, take ``out-2``, ``out-3``, … instead (for default folders named
            by the second a run starts: two runs started in one second get a folder each). Each
            is created with ``mkdir(exist_ok=False)``, so two runs never both take one.

    Returns:
        The folder, and whether this call created it (``False``: it was an empty folder).

    Raises:
        OutputError: ``out`` is a file, a folder that already holds files (a report beside another
            run's files would not list them), or a folder that cannot be created or written.
    """
    names = [out] + ([out.with_name(f"{out.name}-{i}") for i in range(2, 1000)] if unique else [])
    for folder in names:
        try:
            folder.mkdir(parents=True, exist_ok=False)
            return folder, True
        except FileExistsError:
            if unique:
                continue
        except OSError as exc:
            raise OutputError(f"cannot create run folder {folder} ({exc.strerror}); give --out a folder that can be written") from None
        if not folder.is_dir():
            raise OutputError(f"run folder {folder} is an existing file; give --out a new or empty folder")
        held = sorted(p.name for p in folder.iterdir())
        if held:
            raise OutputError(f"run folder {folder} already holds files ({', '.join(held[:5])}{', …' if len(held) > 5 else ''}); "
                              "a new report beside them would mix this run with another's: give --out a new or empty folder")
        try:
            handle, probe = tempfile.mkstemp(dir=folder)
            os.close(handle)
            os.unlink(probe)
        except OSError as exc:
            raise OutputError(f"cannot write in run folder {folder} ({exc.strerror}); give --out a folder that can be written") from None
        return folder, False
    raise OutputError(f"run folders {names[0]} to {names[-1]} are all taken; give --out a new folder")


def _discard_run(folder: Path, created: bool, new_parents: list[Path]) -> None:
    """Remove what a failed run wrote: its folder if it made it (and the parents it made, where
    still empty), else the folder's contents (empty when claimed)."""
    if created:
        shutil.rmtree(folder, ignore_errors=True)
        for parent in new_parents:  # deepest first; one another run has written into since stays
            try:
                parent.rmdir()
            except OSError:
                break
        return
    for entry in folder.iterdir():
        if entry.is_dir():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)


def evaluate(robot: RobotSpec, config: EvalConfig, out: Path, progress: bool = True, unique: bool = False) -> dict[str, Any]:
    """Run the evaluation and write the run folder (see :func:`claim_run_folder`).

    Args:
        robot: the robot.
        config: what to run.
        out: the run folder: new, or an empty folder.
        progress: show a progress bar.
        unique: where ``out`` exists, write to ``out-2``, ``out-3``, … instead.

    Returns:
        The report (also written to ``report.json`` in the run folder, whose path is ``report["run_folder"]``).

    Raises:
        OutputError: ``out`` cannot be this run's folder.
        HikError: a bad policy or environment setting. A run that fails removes what it wrote.
    """
    new_parents = [parent for parent in Path(out).parents if not parent.exists()]
    out, created = claim_run_folder(Path(out), unique)
    try:
        return _evaluate(robot, config, out, progress)
    except BaseException:
        _discard_run(out, created, new_parents)
        raise


def _evaluate(robot: RobotSpec, config: EvalConfig, out: Path, progress: bool) -> dict[str, Any]:
    import gymnasium as gym
    from tqdm.auto import tqdm

    import hik_sim.envs  # noqa: F401  (registers the environments, picks headless GL)
    from hik_sim.envs.base import RobotGoalEnv
    from hik_sim.evaluation.metrics import reach_metrics, track_metrics
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.sim.video import Recording

    started = time.perf_counter()
    if config.video:  # a frame larger than the scene's offscreen buffer fails here, not after every episode ran
        from hik_sim.envs.base import cached_scene

        vis = cached_scene(robot).model.vis.global_
        if config.width > vis.offwidth or config.height > vis.offheight:
            raise HikError(f"video size {config.width}x{config.height} px is outside the scene's offscreen buffer "
                           f"({vis.offwidth}x{vis.offheight} px); give a smaller --video-size")
    policies = [build_policy(name, robot, config.device, config.seed_network) for name in config.policies]
    tasks = len(policies) * (1 + len(config.envs))
    bar = tqdm(total=tasks, desc=f"evaluate {robot.name}", disable=not progress, unit="task")
    report: dict[str, Any] = {"robot": robot.summary(), "config": asdict(config), "run_folder": str(out), "policies": {}, "files": [],
                              "video_frames": {}, "side_by_side": {}}
    curves: dict[str, dict[str, Any]] = {"ik": {}, "reach": {}, "track": {}}
    recordings: dict[str, list[Any]] = {"reach": [], "track": []}  # each policy's first episode, rendered after all ran
    fps: dict[str, int] = {}
    for policy in policies:
        entry: dict[str, Any] = {"card": {k: policy.card.get(k) for k in ("model", "steps", "training_seconds", "parameters")} if policy.card else None}
        bar.set_postfix(policy=policy.name, task="IK accuracy")
        entry["ik"], pos, rot = ik_accuracy(policy, robot, config.ik_targets, config.seed)
        curves["ik"][policy.name] = (pos, rot)
        bar.update(1)
        for env_name in config.envs:
            bar.set_postfix(policy=policy.name, task=env_name)
            env = (gym.make("hik_sim/Reach-v0", robot=robot) if env_name == "reach"
                   else gym.make("hik_sim/Track-v0", robot=robot, trajectory=config.trajectory, speed=config.speed))
            base = env.unwrapped
            assert isinstance(base, RobotGoalEnv)  # both ids make one
            if env_name == "reach":
                count, steps, frame_every = config.episodes, 250, 1
            else:
                count, steps, frame_every = config.track_episodes, int(round(config.track_seconds / base.dt)), 2
            episodes = [rollout(env, policy.controller, config.seed + i, steps,
                                Recording(policy.name, env_name) if config.video and i == 0 else None, frame_every)
                        for i in range(count)]
            env.close()
            entry[env_name] = reach_metrics(episodes) if env_name == "reach" else track_metrics(episodes)
            curves[env_name][policy.name] = episodes[0]
            if config.video:
                recordings[env_name].append(episodes[0].recording)
                fps[env_name] = int(round(1 / (frame_every * base.dt)))
                scene = base.scene
            bar.update(1)
        report["policies"][policy.name] = entry
    if config.video:
        bar.set_postfix(task="videos")
        report["files"] += _videos(scene, recordings, fps, config, out, report)
    bar.close()
    report["files"] += _plots(curves, out)
    report["seconds"] = time.perf_counter() - started
    report["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["platform"] = platform.platform()
    report["files"].append("report.html")
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    _write_csv(report, out / "metrics.csv")
    (out / "summary.md").write_text(summary_markdown(report))
    _report_page(report, out)
    return report


def _videos(scene: Any, recordings: dict[str, list[Any]], fps: dict[str, int], config: EvalConfig, out: Path,
            report: dict[str, Any]) -> list[str]:
    """Each policy's video and, with two policies or more, the side-by-side video of each environment
    (see :mod:`hik_sim.sim.video`); records their frame counts in ``report``; returns the files written."""
    from hik_sim.sim.video import VideoOptions, write_rollout_videos

    options = VideoOptions(width=config.width, height=config.height)
    files: list[str] = []
    for env_name, episode in recordings.items():
        if not episode:
            continue
        side = f"side_by_side_{env_name}.mp4" if len(episode) > 1 else None
        written = write_rollout_videos(scene, episode, out, fps[env_name], options, side_by_side=side)
        report["video_frames"].update(written.videos)
        report["side_by_side"].update(written.side_by_side)
        for video in written.videos:
            files += [video, str(Path(video).with_suffix(".gif"))]
        files += list(written.side_by_side) + [f for f in written.extras if not f.endswith(".gif")]
    return files


def _report_page(report: dict[str, Any], out: Path) -> Path:
    """``report.html``: the tables of ``summary.md``, the plots, the side-by-side and per-policy videos."""
    from hik_sim.evaluation.report import VideoEntry, write_report_html

    files = report["files"]
    featured = [VideoEntry(name, f"{', '.join(report['policies'])} on {name[len('side_by_side_'):-4]}'s first episode, "
                                 f"left to right ({report['side_by_side'][name]} frames)", str(Path(name).with_suffix(".png")))
                for name in report["side_by_side"]]
    videos = [VideoEntry(name, f"{name[:-4]} ({frames} frames)", str(Path(name).with_suffix(".gif")))
              for name, frames in report["video_frames"].items()]
    plots = [f for f in files if f.endswith(".png") and not f.startswith("side_by_side_")]
    downloads = ["report.json", "metrics.csv", "summary.md"] + list(report["side_by_side"]) + list(report["video_frames"])
    return write_report_html(out, summary_markdown({**report, "files": []}), plots=plots, videos=videos, featured=featured,
                             downloads=downloads)


def _plots(curves: dict[str, dict[str, Any]], out: Path) -> list[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    files = []
    if curves["ik"]:
        fig, axes = plt.subplots(1, 2, figsize=(10, 3.8))
        for name, (pos, rot) in curves["ik"].items():
            for ax, values, scale in ((axes[0], pos, 1000), (axes[1], rot, 180 / math.pi)):
                v = np.sort(np.maximum(values * scale, 1e-6))
                ax.plot(v, np.arange(1, len(v) + 1) / len(v), label=name)
        for ax, label, tol in ((axes[0], "position error [mm]", 5.0), (axes[1], "rotation error [°]", 2.0)):
            ax.set_xscale("log")
            ax.axvline(tol, color="grey", linestyle="--", linewidth=1)
            ax.set_xlabel(label)
            ax.set_ylabel("fraction of targets")
            ax.grid(alpha=0.3)
        axes[0].legend()
        fig.suptitle("IK accuracy: cumulative distribution of errors (dashed: 5 mm, 2°)")
        fig.tight_layout()
        fig.savefig(out / "ik_errors.png", dpi=110)
        plt.close(fig)
        files.append("ik_errors.png")
    for env in ("reach", "track"):
        if not curves[env]:
            continue
        fig, ax = plt.subplots(figsize=(8, 3.5))
        for name, episode in curves[env].items():
            ax.plot(episode.time, np.maximum(1000 * episode.pos_err, 1e-4), label=name)
        ax.set_yscale("log")
        ax.set_xlabel("time [s]")
        ax.set_ylabel("position error [mm]")
        ax.axhline(5.0, color="grey", linestyle="--", linewidth=1)
        ax.grid(alpha=0.3)
        ax.legend()
        ax.set_title(f"{env.capitalize()}: position error over the first episode")
        fig.tight_layout()
        fig.savefig(out / f"{env}_error.png", dpi=110)
        plt.close(fig)
        files.append(f"{env}_error.png")
    return files


def _seconds(value: float | None) -> str:
    """A time for a table [s]; "—" where there is none (no episode reached its goal)."""
    return "—" if value is None else f"{value:.2f}"


def _write_csv(report: dict[str, Any], path: Path) -> None:
    rows = []
    for policy, entry in report["policies"].items():
        for part in ("ik", "reach", "track"):
            if part in entry:
                rows += [{"policy": policy, "part": part, "metric": k, "value": v} for k, v in entry[part].items()]
    with path.open("w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=["policy", "part", "metric", "value"])
        writer.writeheader()
        writer.writerows(rows)


def summary_markdown(report: dict[str, Any]) -> str:
    """The run's tables, as Markdown."""
    from hik_sim.evaluation.metrics import limit_violations_text

    lines = [f"# Evaluation of {report['robot']['name']} ({report['robot']['dof']} DOF)", "",
             "## IK accuracy (open loop)", "",
             "| policy | pos mean / median / p95 [mm] | rot mean / median / p95 [°] | success 5 mm & 2° | 10 mm & 20° | ms / target |",
             "|---|---|---|---:|---:|---:|"]
    for name, e in report["policies"].items():
        m = e["ik"]
        lines.append(f"| {name} | {m['pos_mean_mm']:.3f} / {m['pos_median_mm']:.3f} / {m['pos_p95_mm']:.3f} "
                     f"| {m['rot_mean_deg']:.3f} / {m['rot_median_deg']:.3f} / {m['rot_p95_deg']:.3f} "
                     f"| {100 * m['success_5mm_2deg']:.1f} % | {100 * m['success_10mm_20deg']:.1f} % | {m['ms_per_target']:.3f} |")
    if any("reach" in e for e in report["policies"].values()):
        lines += ["", "## Reach", "", "| policy | episodes | success (5 mm & 2° held) | 10 mm & 20° | time to reach [s] "
                  "| IK latency median / p95 [ms] | per solve median / p95 [ms] | limit violations (steps; largest [mrad]) | solver failures |",
                  "|---|---:|---:|---:|---:|---|---|---:|---:|"]
        for name, e in report["policies"].items():
            if "reach" in e:
                m = e["reach"]
                lines.append(f"| {name} | {m['episodes']} | {100 * m['success_5mm_2deg']:.0f} % | {100 * m['success_10mm_20deg']:.0f} % "
                             f"| {_seconds(m['time_to_reach_s'])} | {m['ik_latency_median_ms']:.2f} / {m['ik_latency_p95_ms']:.2f} "
                             f"| {m['ik_solve_median_ms']:.2f} / {m['ik_solve_p95_ms']:.2f} | {limit_violations_text(m)} | {m['solver_failures']} |")
    if any("track" in e for e in report["policies"].values()):
        lines += ["", f"## Track ({report['config']['trajectory']}, {report['config']['speed']} m/s; errors after the first second)", "",
                  "| policy | episodes | position RMS / p95 / max [mm] | rotation RMS [°] | IK latency median [ms] "
                  "| limit violations (steps; largest [mrad]) | solver failures |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for name, e in report["policies"].items():
            if "track" in e:
                m = e["track"]
                lines.append(f"| {name} | {m['episodes']} | {m['pos_rms_mm']:.3f} / {m['pos_p95_mm']:.3f} / {m['pos_max_mm']:.3f} "
                             f"| {m['rot_rms_deg']:.3f} | {m['ik_latency_median_ms']:.2f} | {limit_violations_text(m)} | {m['solver_failures']} |")
    pictures = [f for f in report["files"] if f.endswith((".png", ".gif"))]
    if pictures:
        lines += ["", "## Plots and videos", ""] + [f"![{f}]({f})" for f in pictures]
    lines += ["", f"Run time {report['seconds']:.0f} s on {report['platform']}, {report['date']}."]
    return "\n".join(lines) + "\n"


def paper_suite(out: Path, targets: int = 10_000, progress: bool = True, unique: bool = False) -> dict[str, Any]:
    """Both seed papers' experiments with the shipped checkpoints; writes ``paper.json``, ``paper.md``
    and ``report.html`` (the tables as a page) into a run folder claimed as :func:`evaluate` claims it (``unique``: take ``out-2``, … where ``out`` exists).

    (a) HarmoAtt-IK against CycleIK (the paper's baseline, where shipped) and the parameter-matched
    MLP on the five humanoids, with the abstract's headline figures beside ours; (b) the IRB120
    table of the hybrid-IK paper with its definitions (regression DNN, one-answer hybrid without
    restarts, multistart that runs all 10 starts) beside its published figures, then our variants.
    See :mod:`hik_sim.evaluation.experiments`.

    Raises:
        OutputError: ``out`` cannot be this run's folder. A run that fails removes what it wrote.
    """
    new_parents = [parent for parent in Path(out).parents if not parent.exists()]
    out, created = claim_run_folder(Path(out), unique)
    try:
        record = _paper_suite(out, targets, progress)
        from hik_sim.evaluation.report import write_report_html

        write_report_html(out, record["text"], downloads=["paper.json", "paper.md"])  # the page to open, as evaluate writes
        return record
    except BaseException:
        _discard_run(out, created, new_parents)
        raise


def _paper_suite(out: Path, targets: int, progress: bool) -> dict[str, Any]:
    from tqdm.auto import tqdm

    from hik_sim.evaluation.experiments import PAPER_HARMOATT, PAPER_IRB120, compare_networks, hybrid_table, paper_markdown, shipped_pair
    from hik_sim.policies import pretrained_names
    from hik_sim.robots import HUMANOIDS, get_robot

    shipped = set(pretrained_names())
    humanoids = [compare_networks(get_robot(name), shipped_pair(get_robot(name), ("cycleik", "mlp") if f"{name}/cycleik" in shipped
                                                                else ("mlp",)), targets)
                 for name in tqdm(HUMANOIDS, desc="HarmoAtt-IK vs CycleIK and the MLP", disable=not progress)]
    irb120 = hybrid_table(get_robot("irb120"), targets)
    text = paper_markdown(humanoids, irb120, targets)
    record = {"targets": targets, "run_folder": str(out), "humanoids": humanoids, "irb120": irb120,
              "published_irb120": PAPER_IRB120, "published_harmoatt": PAPER_HARMOATT}
    (out / "paper.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
    (out / "paper.md").write_text(text)
    return {"text": text, **record}


def _video_size(text: str) -> tuple[int, int]:
    """``--video-size``: ``WxH`` in pixels."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"give WIDTHxHEIGHT in pixels such as 640x480, got {text!r}")
    return int(match.group(1)), int(match.group(2))


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.evaluate``: evaluate IK policies on a robot and write a run folder."""
    from hik_sim.robots.cli import add_robot_arguments, robot_from_args
    from hik_sim.envs.trajectories import TRAJECTORIES
    from hik_sim.policies import pretrained_names

    parser = argparse.ArgumentParser(prog="python -m hik_sim.evaluate", description=main.__doc__)
    add_robot_arguments(parser)
    defaults = EvalConfig()
    parser.add_argument("--policy", nargs="+", default=None, metavar="POLICY",
                        help=f"policies: {', '.join(POLICY_NAMES)}, a network shipped for the robot (e.g. "
                             f"harmoatt_4answers on the irb120) or checkpoint paths (default: {' '.join(defaults.policies)}; "
                             f"for a robot with no shipped network: {' '.join(NETWORK_FREE_POLICIES)})")
    parser.add_argument("--checkpoint", default=None, help="a trained checkpoint (.pt) to evaluate (for a --urdf robot); it also "
                                                           "seeds --policy hybrid on a robot with no shipped network")
    parser.add_argument("--env", nargs="+", default=list(defaults.envs), choices=["reach", "track"])
    parser.add_argument("--trajectory", default=defaults.trajectory, choices=TRAJECTORIES)
    parser.add_argument("--speed", type=float, default=defaults.speed, help="Track speed [m/s] (default 0.1)")
    parser.add_argument("--episodes", type=int, default=defaults.episodes, help="Reach episodes per policy (default 5)")
    parser.add_argument("--track-episodes", type=int, default=defaults.track_episodes, help="Track episodes per policy (default 2)")
    parser.add_argument("--track-seconds", type=float, default=defaults.track_seconds, help="Track episode length [s] (default 10)")
    parser.add_argument("--ik-targets", type=int, default=defaults.ik_targets, help="open-loop targets (default 2000)")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="record rollout videos (default on)")
    parser.add_argument("--video-size", type=_video_size, default=(defaults.width, defaults.height), metavar="WxH",
                        help=f"size of one policy's video frame, even numbers of pixels (default {defaults.width}x{defaults.height}; "
                             "the side-by-side video is one width per policy)")
    parser.add_argument("--out", type=Path, default=None, help="run folder, new or empty (default runs/eval/<robot>-<date>, "
                                                                "with a -2, -3, … suffix where another run took that name)")
    parser.add_argument("--device", default="cpu", help="where networks run (default cpu)")
    parser.add_argument("--suite", choices=["paper"], default=None,
                        help="paper: both seed papers' experiments with the shipped checkpoints (--ik-targets per robot)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.out is not None and args.out.suffix.lower() in REPORT_SUFFIXES and not args.out.exists():  # an existing one: see claim_run_folder
        parser.exit(2, f"error: --out is the run folder that report.json and the rest go into, and {str(args.out)!r} "
                       f"looks like a file name; give a folder such as {str(args.out.with_suffix(''))!r}\n")
    if args.checkpoint is not None and Path(args.checkpoint).suffix != ".pt":
        parser.exit(2, f"error: --checkpoint takes a checkpoint file (.pt) written by python -m hik_sim.train, "
                       f"got {args.checkpoint!r}\n")
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    if args.suite == "paper":
        try:
            record = paper_suite(args.out or Path("runs") / "eval" / f"paper-{stamp}",
                                 args.ik_targets if args.ik_targets != defaults.ik_targets else 10_000, not args.no_progress,
                                 unique=args.out is None)
        except HikError as exc:
            parser.exit(2, f"error: {exc}\n")
        print(record["text"])
        print(f"run folder   {record['run_folder']}")
        return 0
    try:
        robot = robot_from_args(args)
        shipped = any(n.startswith(f"{robot.name}/") for n in pretrained_names())
        default = list(defaults.policies) if shipped else list(NETWORK_FREE_POLICIES)
        policies = list(args.policy) if args.policy else ([args.checkpoint, "multistart"] if args.checkpoint else default)
        if args.checkpoint and args.policy:
            policies.append(args.checkpoint)
        config = EvalConfig(policies=tuple(policies), envs=tuple(args.env), trajectory=args.trajectory, speed=args.speed,
                            episodes=args.episodes, track_episodes=args.track_episodes, track_seconds=args.track_seconds,
                            ik_targets=args.ik_targets, seed=args.seed, video=args.video, device=args.device,
                            seed_network=args.checkpoint, width=args.video_size[0], height=args.video_size[1])
        report = evaluate(robot, config, args.out or Path("runs") / "eval" / f"{robot.name}-{stamp}", progress=not args.no_progress,
                          unique=args.out is None)
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    print(summary_markdown(report))
    print(f"run folder   {report['run_folder']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
