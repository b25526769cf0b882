"""``python -m hik_sim.evaluate``: how well IK policies reach and track on a robot — numbers, plots, videos.

For each policy (default: the shipped HarmoAtt-IK network, the MLP baseline and the hybrid
network + LM solver) it measures

1. **IK accuracy** (open loop) on fixed reachable targets: position and rotation error
   distributions, success at (5 mm, 2°) and (10 mm, 20°), solve time per target;
2. **Reach** episodes (``hik_sim/Reach``) with the policy as an :class:`~hik_sim.policies.IKController`:
   success (5 mm & 2° held), time to reach, IK latency per control step, joint-limit violations,
   solver failures;
3. **Track** episodes (``hik_sim/Track``, figure-eight at 0.1 m/s by default): position error
   RMS / p95 / max after the first second, rotation RMS;

and writes a run folder: ``report.json``, ``metrics.csv``, ``summary.md``, plots (``ik_errors.png``,
``reach_error.png``, ``track_error.png``) and rollout videos (``<policy>_<env>.mp4`` with a small
``.gif`` preview) whose frames show the goal marker and the current error.

Metrics are defined in :mod:`hik_sim.metrics` and in the README: Euclidean position error,
geodesic rotation error ``2·acos(|⟨q, q'⟩|)``.

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
import platform
import statistics
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import numpy as np

from hik_sim.errors import HikError
from hik_sim.robots import RobotSpec

__all__ = ["EvalConfig", "PolicySpec", "build_policy", "evaluate", "paper_suite", "summary_markdown", "main"]

POLICY_NAMES: tuple[str, ...] = ("harmoatt", "mlp", "hybrid", "multistart", "dm_control")
LIMIT_SLACK = 1e-4  # [rad]: MuJoCo's joint limits are stiff but soft; smaller excursions are not counted


@dataclass(frozen=True)
class EvalConfig:
    """What the evaluator runs.

    Attributes:
        policies: policy names (``harmoatt``, ``mlp``, ``hybrid``, ``multistart``, ``dm_control``) or
            checkpoint paths.
        envs: ``reach`` and/or ``track``.
        trajectory: Track's trajectory.
        speed: Track's speed [m/s].
        episodes: Reach episodes per policy.
        track_episodes: Track episodes per policy.
        track_seconds: simulated time per Track episode [s].
        ik_targets: fixed targets for the open-loop accuracy.
        seed: seed of targets and episodes.
        video: record the first episode of each policy and environment.
        width: video width [px].
        height: video height [px].
        device: where networks run.
    """

    policies: tuple[str, ...] = ("harmoatt", "mlp", "hybrid")
    envs: tuple[str, ...] = ("reach", "track")
    trajectory: str = "figure_eight"
    speed: float = 0.1
    episodes: int = 5
    track_episodes: int = 2
    track_seconds: float = 10.0
    ik_targets: int = 2000
    seed: int = 0
    video: bool = True
    width: int = 320
    height: int = 240
    device: str = "cpu"

    def __post_init__(self) -> None:
        if not self.policies:
            raise HikError(f"give at least one policy: {', '.join(POLICY_NAMES)} or a checkpoint path")
        bad_envs = sorted(set(self.envs) - {"reach", "track"})
        if bad_envs:
            raise HikError(f"unknown environments {bad_envs}; environments are: reach, track")
        if self.episodes < 1 or self.track_episodes < 1 or self.ik_targets < 1 or not self.track_seconds > 1.0:
            raise HikError("episodes, track_episodes and ik_targets must be at least 1, track_seconds above 1 s")


@dataclass
class PolicySpec:
    """A policy, built for one robot: its batch solver (open loop) and its controller (closed loop)."""

    name: str
    solver: Any
    controller: Any
    card: dict[str, Any] = field(default_factory=dict)


def build_policy(name: str, robot: RobotSpec, device: str = "cpu") -> PolicySpec:
    """The solver and controller a policy name stands for: one of :data:`POLICY_NAMES`, any other
    network shipped for ``robot`` (e.g. ``harmoatt_4answers`` on the IRB120), or a checkpoint path.

    Raises:
        HikError: unknown policy, or no shipped checkpoint for the robot (then give a path).
    """
    from hik_sim.checkpoint import load_checkpoint
    from hik_sim.kinematics import Chain
    from hik_sim.policies import IKController, hybrid_seed_name, load_pretrained, pretrained_names
    from hik_sim.scene import SceneOptions
    from hik_sim.solvers import DmControlIK, HybridIK, LMRefiner, MultistartIK, NeuralIK, SingleTargetIK

    chain = Chain(robot)
    lead = SceneOptions().servo_lag
    shipped = [n.split("/", 1)[1] for n in pretrained_names() if n.startswith(f"{robot.name}/")]
    if name in ("harmoatt", "mlp") or name in shipped or Path(name).suffix == ".pt":
        if Path(name).suffix == ".pt":
            network, card = load_checkpoint(name, robot=robot, map_location=device)
            label = Path(name).stem
        else:
            network = load_pretrained(robot.name, name, map_location=device)
            card, label = network.card, name
        solver = NeuralIK(network, chain)
        return PolicySpec(label, solver, IKController(solver, lead_time=lead), card.to_json())
    if name == "hybrid":
        network = load_pretrained(robot.name, hybrid_seed_name(robot.name), map_location=device)
        return PolicySpec(name, HybridIK(network, LMRefiner(chain)), IKController(SingleTargetIK(chain, network), lead_time=lead),
                          network.card.to_json())
    if name == "multistart":
        solver = MultistartIK(LMRefiner(chain), starts=10)
        return PolicySpec(name, solver, IKController(solver, lead_time=lead))
    if name == "dm_control":
        from hik_sim.scene import build_scene

        solver = DmControlIK(build_scene(robot))
        return PolicySpec(name, solver, IKController(solver, lead_time=lead))
    others = sorted(set(shipped) - set(POLICY_NAMES))
    raise HikError(f"unknown policy {name!r}; policies are: {', '.join(POLICY_NAMES)}"
                   + (f", the networks shipped for {robot.name} ({', '.join(others)})" if others else "")
                   + ", or a checkpoint path (.pt)")


def _annotate(frame: np.ndarray, lines: list[str]) -> np.ndarray:
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame)
    draw = ImageDraw.Draw(image)
    height = 12 * len(lines) + 6
    draw.rectangle((0, 0, image.width, height), fill=(0, 0, 0))
    for i, line in enumerate(lines):
        draw.text((4, 3 + 12 * i), line, fill=(255, 255, 255))
    return np.asarray(image)


def _write_video(frames: list[np.ndarray], path: Path, fps: int) -> None:
    import imageio.v3 as iio

    iio.imwrite(path, np.stack(frames), fps=fps, codec="libx264", macro_block_size=1)
    preview = [f[::2, ::2] for f in frames[:: max(1, len(frames) // 40)]]
    iio.imwrite(path.with_suffix(".gif"), np.stack(preview), duration=100, loop=0)


def ik_accuracy(policy: PolicySpec, robot: RobotSpec, targets: int, seed: int) -> tuple[dict[str, float], np.ndarray, np.ndarray]:
    """Open-loop accuracy: metrics and the per-target errors (position [m], rotation [rad])."""
    from hik_sim.data import make_eval_set
    from hik_sim.kinematics import Chain
    from hik_sim.metrics import accuracy_metrics

    batch = make_eval_set(Chain(robot), seed, targets).batch
    result = policy.solver.solve(batch.pos, batch.quat)
    metrics = accuracy_metrics(result.pos_err, result.rot_err) | {"ms_per_target": 1000 * result.wall_time / targets}
    return metrics, result.pos_err.numpy(), result.rot_err.numpy()


def _episode(env, policy: PolicySpec, seed: int, record: bool, max_steps: int, label: str, frame_every: int):  # noqa: ANN001, ANN202
    """One episode: per-step errors, latencies, limit violations, and every ``frame_every``-th frame."""
    controller = policy.controller
    obs, info = env.reset(seed=seed)
    controller.reset()
    base = env.unwrapped
    failures_before = controller.failures
    pos_err, rot_err, latency, times, frames = [info["pos_err"]], [info["rot_err"]], [], [0.0], []
    violations, terminated = 0, False
    for step in range(1, max_steps + 1):
        action = controller(obs)
        latency.append(1000 * controller.last_result[0].wall_time)
        obs, reward, terminated, truncated, info = env.step(action)
        q = obs["joint_pos"]
        violations += int(np.any(q < base.lower - LIMIT_SLACK) or np.any(q > base.upper + LIMIT_SLACK))
        pos_err.append(info["pos_err"])
        rot_err.append(info["rot_err"])
        times.append(step * base.dt)
        if record and step % frame_every == 0:
            frames.append(_annotate(env.render(), [f"{policy.name} | {label} | t = {times[-1]:.2f} s",
                                                   f"position error {1000 * info['pos_err']:.2f} mm, rotation {math.degrees(info['rot_err']):.2f} deg"]))
        if terminated or truncated:
            break
    return {"pos_err": np.asarray(pos_err), "rot_err": np.asarray(rot_err), "time": np.asarray(times), "latency": latency,
            "violations": violations, "failures": controller.failures - failures_before, "success": bool(info.get("is_success", False)),
            "terminated": terminated, "frames": frames}


def evaluate(robot: RobotSpec, config: EvalConfig, out: Path, progress: bool = True) -> dict[str, Any]:
    """Run the evaluation and write the run folder.

    Returns:
        The report (also written to ``out/report.json``).
    """
    import gymnasium as gym
    from tqdm.auto import tqdm

    import hik_sim.envs  # noqa: F401  (registers the environments, picks headless GL)

    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    policies = [build_policy(name, robot, config.device) for name in config.policies]
    tasks = len(policies) * (1 + len(config.envs))
    bar = tqdm(total=tasks, desc=f"evaluate {robot.name}", disable=not progress, unit="task")
    report: dict[str, Any] = {"robot": robot.summary(), "config": asdict(config), "policies": {}, "files": [], "video_frames": {}}
    curves: dict[str, dict[str, Any]] = {"ik": {}, "reach": {}, "track": {}}
    render = "rgb_array" if config.video else None
    env_kwargs = {"render_mode": render, "width": config.width, "height": config.height}
    for policy in policies:
        entry: dict[str, Any] = {"card": {k: policy.card.get(k) for k in ("model", "steps", "training_seconds", "parameters")} if policy.card else None}
        bar.set_postfix(policy=policy.name, task="IK accuracy")
        entry["ik"], pos, rot = ik_accuracy(policy, robot, config.ik_targets, config.seed)
        curves["ik"][policy.name] = (pos, rot)
        bar.update(1)
        for env_name in config.envs:
            bar.set_postfix(policy=policy.name, task=env_name)
            if env_name == "reach":
                env = gym.make("hik_sim/Reach-v0", robot=robot, **env_kwargs)
                count, steps, frame_every = config.episodes, 250, 1
            else:
                env = gym.make("hik_sim/Track-v0", robot=robot, trajectory=config.trajectory, speed=config.speed, **env_kwargs)
                count, steps, frame_every = config.track_episodes, int(round(config.track_seconds / env.unwrapped.dt)), 2
            episodes = [_episode(env, policy, config.seed + i, config.video and i == 0, steps, env_name, frame_every)
                        for i in range(count)]
            env.close()
            entry[env_name] = _reach_metrics(episodes) if env_name == "reach" else _track_metrics(episodes)
            curves[env_name][policy.name] = episodes[0]
            if config.video:
                path = out / f"{policy.name}_{env_name}.mp4"
                _write_video(episodes[0]["frames"], path, int(round(1 / (frame_every * env.unwrapped.dt))))
                report["files"] += [path.name, path.with_suffix(".gif").name]
                report["video_frames"][path.name] = len(episodes[0]["frames"])
            bar.update(1)
        report["policies"][policy.name] = entry
    bar.close()
    report["files"] += _plots(curves, out)
    report["seconds"] = time.perf_counter() - started
    report["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["platform"] = platform.platform()
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    _write_csv(report, out / "metrics.csv")
    (out / "summary.md").write_text(summary_markdown(report))
    return report


def _reach_metrics(episodes: list[dict[str, Any]]) -> dict[str, float]:
    successes = [e for e in episodes if e["success"]]
    latency = [x for e in episodes for x in e["latency"]]
    final_pos = np.array([e["pos_err"][-1] for e in episodes])
    final_rot = np.array([e["rot_err"][-1] for e in episodes])
    return {
        "episodes": len(episodes),
        "success_5mm_2deg": len(successes) / len(episodes),
        "success_10mm_20deg": float(np.mean((final_pos < 0.010) & (final_rot < math.radians(20)))),
        "time_to_reach_s": statistics.fmean(e["time"][-1] for e in successes) if successes else None,  # None: none reached
        "final_pos_mean_mm": float(1000 * final_pos.mean()),
        "final_rot_mean_deg": float(np.degrees(final_rot.mean())),
        "ik_latency_median_ms": statistics.median(latency),
        "ik_latency_p95_ms": float(np.percentile(latency, 95)),
        "joint_limit_violations": sum(e["violations"] for e in episodes),
        "solver_failures": sum(e["failures"] for e in episodes),
    }


def _track_metrics(episodes: list[dict[str, Any]]) -> dict[str, float]:
    pos = np.concatenate([e["pos_err"][e["time"] > 1.0] for e in episodes]) * 1000
    rot = np.degrees(np.concatenate([e["rot_err"][e["time"] > 1.0] for e in episodes]))
    latency = [x for e in episodes for x in e["latency"]]
    return {
        "episodes": len(episodes),
        "pos_rms_mm": float(np.sqrt(np.mean(pos**2))), "pos_p95_mm": float(np.percentile(pos, 95)), "pos_max_mm": float(pos.max()),
        "rot_rms_deg": float(np.sqrt(np.mean(rot**2))),
        "ik_latency_median_ms": statistics.median(latency), "ik_latency_p95_ms": float(np.percentile(latency, 95)),
        "joint_limit_violations": sum(e["violations"] for e in episodes),
        "solver_failures": sum(e["failures"] for e in episodes),
    }


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
            ax.plot(episode["time"], np.maximum(1000 * episode["pos_err"], 1e-4), label=name)
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
                  "| IK latency median / p95 [ms] | limit violations | solver failures |", "|---|---:|---:|---:|---:|---|---:|---:|"]
        for name, e in report["policies"].items():
            if "reach" in e:
                m = e["reach"]
                lines.append(f"| {name} | {m['episodes']} | {100 * m['success_5mm_2deg']:.0f} % | {100 * m['success_10mm_20deg']:.0f} % "
                             f"| {_seconds(m['time_to_reach_s'])} | {m['ik_latency_median_ms']:.2f} / {m['ik_latency_p95_ms']:.2f} "
                             f"| {m['joint_limit_violations']} | {m['solver_failures']} |")
    if any("track" in e for e in report["policies"].values()):
        lines += ["", f"## Track ({report['config']['trajectory']}, {report['config']['speed']} m/s; errors after the first second)", "",
                  "| policy | episodes | position RMS / p95 / max [mm] | rotation RMS [°] | IK latency median [ms] | limit violations | solver failures |",
                  "|---|---:|---|---:|---:|---:|---:|"]
        for name, e in report["policies"].items():
            if "track" in e:
                m = e["track"]
                lines.append(f"| {name} | {m['episodes']} | {m['pos_rms_mm']:.3f} / {m['pos_p95_mm']:.3f} / {m['pos_max_mm']:.3f} "
                             f"| {m['rot_rms_deg']:.3f} | {m['ik_latency_median_ms']:.2f} | {m['joint_limit_violations']} | {m['solver_failures']} |")
    pictures = [f for f in report["files"] if f.endswith((".png", ".gif"))]
    if pictures:
        lines += ["", "## Plots and videos", ""] + [f"![{f}]({f})" for f in pictures]
    lines += ["", f"Run time {report['seconds']:.0f} s on {report['platform']}, {report['date']}."]
    return "\n".join(lines) + "\n"


def paper_suite(out: Path, targets: int = 10_000, progress: bool = True) -> dict[str, Any]:
    """Both seed papers' experiments with the shipped checkpoints; writes ``paper.json`` and ``paper.md``.

    (a) HarmoAtt-IK against the MLP baseline on the five humanoids; (b) the IRB120 network in the
    full joint space, with q6 fixed, the hybrid and multistart-10, beside the hybrid-IK paper's
    published figures. The HarmoAtt-IK paper's per-robot figures are not in this repository (its
    humanoids and training budgets differ from ours), so (a) shows hik_sim's own measurements.
    """
    from tqdm.auto import tqdm

    from hik_sim.experiments import PAPER_IRB120, compare_networks, hybrid_table, shipped_pair
    from hik_sim.robots import HUMANOIDS, get_robot

    out.mkdir(parents=True, exist_ok=True)
    humanoids = [compare_networks(get_robot(name), shipped_pair(get_robot(name)), targets)
                 for name in tqdm(HUMANOIDS, desc="HarmoAtt-IK vs MLP", disable=not progress)]
    irb120 = hybrid_table(get_robot("irb120"), targets)
    lines = [f"# The seed papers' experiments ({targets} targets per robot)", "",
             "## (a) HarmoAtt-IK vs the MLP baseline on five humanoids (equal parameters and budget)", "",
             "| robot | DOF | HarmoAtt-IK pos / rot | MLP pos / rot | position error reduction | rotation error reduction "
             "| success 5 mm & 2° (H / MLP) | 10 mm & 20° (H / MLP) |", "|---|---:|---|---|---:|---:|---|---|"]
    for row in humanoids:
        h, m, r = row["metrics"]["harmoatt"], row["metrics"]["mlp"], row["reductions"]
        lines.append(f"| {row['robot']} | {row['dof']} | {h['pos_mean_mm']:.2f} mm / {h['rot_mean_deg']:.2f}° "
                     f"| {m['pos_mean_mm']:.2f} mm / {m['rot_mean_deg']:.2f}° | {r['pos_mean_reduction_pct']:+.1f} % "
                     f"| {r['rot_mean_reduction_pct']:+.1f} % | {100 * h['success_5mm_2deg']:.1f} / {100 * m['success_5mm_2deg']:.1f} % "
                     f"| {100 * h['success_10mm_20deg']:.1f} / {100 * m['success_10mm_20deg']:.1f} % |")
    lines += ["", "Published per-robot figures of the HarmoAtt-IK paper: not in this repository (different robots and budgets).",
              "", "## (b) IRB120: network, q6 fixed, hybrid, multistart-10 (hybrid-IK paper)", "",
              "| solver | pos mean [mm] | rot mean [°] | success 5 mm & 2° | evals / target | ms / target |", "|---|---:|---:|---:|---:|---:|"]
    for row in irb120["rows"]:
        lines.append(f"| {row['solver']} | {row['pos_mean_mm']:.3f} | {row['rot_mean_deg']:.3f} | {100 * row['success_5mm_2deg']:.2f} % "
                     f"| {row['function_evals']:.1f} | {row['ms_per_target']:.3f} |")
    paper = PAPER_IRB120
    lines.append(f"| *published hybrid* | *{paper['hybrid']['pos_mean_mm']}* | *{paper['hybrid']['rot_mean_deg']}* "
                 f"| *{100 * paper['hybrid']['success_5mm_2deg']:.1f} %* | | |")
    r = irb120["hybrid_vs_multistart"]
    lines += ["", f"Hybrid vs multistart-10: {-r['evals_reduction_pct']:+.1f} % function evaluations, "
              f"{-r['time_reduction_pct']:+.1f} % time (published: −{paper['evals_reduction_pct']} %, −{paper['time_reduction_pct']} %)."]
    text = "\n".join(lines) + "\n"
    record = {"targets": targets, "humanoids": humanoids, "irb120": irb120, "published_irb120": paper}
    (out / "paper.json").write_text(json.dumps(record, indent=2, default=float) + "\n")
    (out / "paper.md").write_text(text)
    return {"text": text, **record}


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.evaluate``: evaluate IK policies on a robot and write a run folder."""
    from hik_sim.cli import add_robot_arguments, robot_from_args
    from hik_sim.envs.trajectories import TRAJECTORIES

    parser = argparse.ArgumentParser(prog="python -m hik_sim.evaluate", description=main.__doc__)
    add_robot_arguments(parser)
    defaults = EvalConfig()
    parser.add_argument("--policy", nargs="+", default=None, metavar="POLICY",
                        help=f"policies: {', '.join(POLICY_NAMES)}, a network shipped for the robot (e.g. "
                             "harmoatt_4answers on the irb120) or checkpoint paths (default: harmoatt mlp hybrid)")
    parser.add_argument("--checkpoint", default=None, help="a trained checkpoint (.pt) to evaluate (for a --urdf robot)")
    parser.add_argument("--env", nargs="+", default=list(defaults.envs), choices=["reach", "track"])
    parser.add_argument("--trajectory", default=defaults.trajectory, choices=TRAJECTORIES)
    parser.add_argument("--speed", type=float, default=defaults.speed, help="Track speed [m/s] (default 0.1)")
    parser.add_argument("--episodes", type=int, default=defaults.episodes, help="Reach episodes per policy (default 5)")
    parser.add_argument("--track-episodes", type=int, default=defaults.track_episodes, help="Track episodes per policy (default 2)")
    parser.add_argument("--track-seconds", type=float, default=defaults.track_seconds, help="Track episode length [s] (default 10)")
    parser.add_argument("--ik-targets", type=int, default=defaults.ik_targets, help="open-loop targets (default 2000)")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="record rollout videos (default on)")
    parser.add_argument("--out", type=Path, default=None, help="run folder (default runs/eval/<robot>-<date>)")
    parser.add_argument("--device", default="cpu", help="where networks run (default cpu)")
    parser.add_argument("--suite", choices=["paper"], default=None,
                        help="paper: both seed papers' experiments with the shipped checkpoints (--ik-targets per robot)")
    parser.add_argument("--no-progress", action="store_true")
    args = parser.parse_args(argv)
    if args.suite == "paper":
        out = args.out or Path("runs") / "eval" / f"paper-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
        print(paper_suite(out, args.ik_targets if args.ik_targets != defaults.ik_targets else 10_000, not args.no_progress)["text"])
        print(f"run folder   {out}")
        return 0
    try:
        robot = robot_from_args(args)
        policies = list(args.policy) if args.policy else ([args.checkpoint, "multistart"] if args.checkpoint else list(defaults.policies))
        if args.checkpoint and args.policy:
            policies.append(args.checkpoint)
        config = EvalConfig(policies=tuple(policies), envs=tuple(args.env), trajectory=args.trajectory, speed=args.speed,
                            episodes=args.episodes, track_episodes=args.track_episodes, track_seconds=args.track_seconds,
                            ik_targets=args.ik_targets, seed=args.seed, video=args.video, device=args.device)
        out = args.out or Path("runs") / "eval" / f"{robot.name}-{datetime.now().strftime('%Y%m%d-%H%M%S')}"
        report = evaluate(robot, config, out, progress=not args.no_progress)
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    print(summary_markdown(report))
    print(f"run folder   {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
