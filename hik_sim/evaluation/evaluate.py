"""``python -m hik_sim.evaluate``: how well IK policies reach and track on a robot — numbers, plots, videos.

For each policy (default: the shipped one-answer HarmoAtt-IK network and its MLP baseline, the
four-answer networks closed on their own error (``closed_loop``, no solver) and the hybrid network +
LM solver) it measures

1. **IK accuracy** (open loop) on fixed reachable targets: position and rotation error
   distributions, success at (5 mm, 2°) and (10 mm, 20°), solve time per target;
2. **Reach** episodes (``hik_sim/Reach``) with the policy as an :class:`~hik_sim.policies.IKController`:
   success (5 mm & 2° held), time to reach, IK latency per control step and per solve, joint-limit violations,
   solver failures (for policies whose solver can fail; a network alone answers every query);
3. **Track** episodes (``hik_sim/Track``, figure-eight at 0.1 m/s by default): position error
   RMS / p95 / max after the first second, rotation RMS (said where the arm never moved);

Latencies exclude each policy's first calls (compilation of numba kernels or loading them from numba's
cache, caches): both its batched solver and its controller are called once, untimed, before the timed
work, and those first calls' times are reported on a line of their own (:mod:`hik_sim.evaluation.policy`).

It writes a run folder: ``report.html`` (the page to open: tables, plots and videos; see
:mod:`hik_sim.evaluation.report`), ``report.json`` (with ``phases``: the seconds spent on episodes,
report files and videos), ``metrics.csv``, ``summary.md``, plots (``ik_errors.png``, ``reach_error.png``,
``track_error.png``) and rollout videos (:mod:`hik_sim.sim.video`): ``side_by_side_<env>.mp4``, all
policies on their first episode of that environment, tiled left to right under one camera, and its
last frame as a PNG poster; with ``--videos all`` also ``<policy>_<env>.mp4`` with a small ``.gif``
preview. Videos are rendered after the tables are written, with a progress bar of their own.

Run folders belong to one run (:mod:`hik_sim.evaluation.run_folder`): the default one,
``runs/eval/<robot>-<date>``, takes a ``-2``, ``-3``, … suffix when another run started in the same
second; an explicit ``--out`` must be new or empty, and the run locks it (a second run given the same
``--out`` while the first runs is refused). A run that fails removes what it wrote, and the folder if it
made it; a run interrupted (Ctrl-C, SIGTERM) before its tables were written does the same, one
interrupted while rendering videos removes the partial videos and writes ``INCOMPLETE`` with the reason.

A robot loaded from a URDF has no shipped networks: ``lm``, ``multistart`` and ``dm_control`` need
none (they are its default policies), ``hybrid`` is seeded by the ``--checkpoint`` network, and any
checkpoint trained for it is a policy by its path, labelled by its model and file name.

Episodes run through :func:`hik_sim.evaluation.rollout.rollout`, the loop the benchmarks, tests and
example share; metrics are defined in :mod:`hik_sim.evaluation.metrics` (Euclidean position error,
geodesic rotation error ``2·acos(|⟨q, q'⟩|)``; docs/design.md).

Examples::

    python -m hik_sim.evaluate                                   # irb120, shipped checkpoints (docs/report.md: its time)
    python -m hik_sim.evaluate --robot panda --policy hybrid multistart dm_control --episodes 10
    python -m hik_sim.evaluate --urdf arm.urdf --base base --ee tool --checkpoint runs/train/arm/harmoatt.pt
    python -m hik_sim.evaluate --suite paper                     # both seed papers' experiments
"""

from __future__ import annotations

import json
import platform
import sys
import time
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from hik_sim.errors import HikError
from hik_sim.evaluation.cli import _policies, read_arguments
from hik_sim.evaluation.config import NETWORK_FREE_POLICIES, POLICY_NAMES, EvalConfig
from hik_sim.evaluation.policy import WARM_UP_TARGETS, PolicySpec, build_policy, ik_accuracy
from hik_sim.evaluation.run_folder import Interrupted, RunFolder, claim, claim_run_folder, output_error
from hik_sim.evaluation.tables import summary_markdown
from hik_sim.robots import RobotSpec

__all__ = ["EvalConfig", "PolicySpec", "build_policy", "claim_run_folder", "evaluate", "ik_accuracy", "paper_suite",
           "summary_markdown", "main", "POLICY_NAMES", "NETWORK_FREE_POLICIES", "WARM_UP_TARGETS"]


@dataclass
class _Progress:
    """What a run has finished, for the clean-up of an interrupted one."""

    tables: bool = False
    phase: str = "setup"
    phases: dict[str, float] = field(default_factory=dict)


def evaluate(robot: RobotSpec, config: EvalConfig, out: Path, progress: bool = True, unique: bool = False) -> dict[str, Any]:
    """Run the evaluation and write the run folder (see :mod:`hik_sim.evaluation.run_folder`).

    Args:
        robot: the robot.
        config: what to run.
        out: the run folder: new, or an empty folder.
        progress: show progress bars.
        unique: where ``out`` exists, write to ``out-2``, ``out-3``, … instead.

    Returns:
        The report (also written to ``report.json`` in the run folder, whose path is ``report["run_folder"]``).

    Raises:
        OutputError: ``out`` cannot be this run's folder (a file, another run's or locked by one), or
            writing in it failed (disk full, a name too long): the message names the path.
        HikError: a bad policy or environment setting. A run that fails removes what it wrote.
        KeyboardInterrupt, Interrupted: the run was stopped; see the module's description for what it leaves.
    """
    folder = claim(Path(out), unique)
    state = _Progress()
    try:
        report = _evaluate(robot, config, folder.path, progress, state)
    except (KeyboardInterrupt, Interrupted) as exc:
        _interrupted(folder, state, exc)
        raise
    except OSError as exc:
        folder.discard()
        raise output_error(exc, exc.filename or folder.path) from None
    except BaseException:
        folder.discard()
        raise
    folder.release()
    return report


def _interrupted(folder: RunFolder, state: _Progress, exc: BaseException) -> None:
    """Clean up after a stopped run: discard it before its tables exist, else keep them and mark the folder incomplete."""
    signal_name = exc.signal_name if isinstance(exc, Interrupted) else "SIGINT (Ctrl-C)"
    if not state.tables:
        folder.discard()
        return
    folder.mark_incomplete(f"interrupted by {signal_name} during {state.phase}",
                           "The tables, plots and report.html are complete; the videos are missing.")


def _evaluate(robot: RobotSpec, config: EvalConfig, out: Path, progress: bool, state: _Progress) -> dict[str, Any]:
    started = time.perf_counter()
    if config.recording:  # a frame larger than the scene's offscreen buffer fails here, not after every episode ran
        from hik_sim.envs.base import cached_scene

        vis = cached_scene(robot).model.vis.global_
        if config.width > vis.offwidth or config.height > vis.offheight:
            raise HikError(f"video size {config.width}x{config.height} px is outside the scene's offscreen buffer "
                           f"({vis.offwidth}x{vis.offheight} px); give a smaller --video-size")
    state.phase = "episodes"
    policies = [build_policy(name, robot, config.device, config.seed_network) for name in config.policies]
    _unique_names(policies)
    report: dict[str, Any] = {"robot": robot.summary(), "config": asdict(config), "run_folder": str(out), "policies": {}, "files": [],
                              "video_frames": {}, "side_by_side": {}}
    from hik_sim.evaluation.episodes import run_episodes

    episodes = run_episodes(robot, config, policies, report, progress)
    state.phases["episodes"] = time.perf_counter() - started
    state.phase = "report"
    mark = time.perf_counter()
    from hik_sim.evaluation.tables import write_plots

    plots = write_plots(episodes.curves, out)
    report["files"] += plots
    _write_report(report, out, started, state)
    state.tables = True
    state.phases["report"] = time.perf_counter() - mark
    if config.recording and episodes.scene is not None:
        state.phase = "videos"
        mark = time.perf_counter()
        from hik_sim.evaluation.videos import write_videos

        report["files"] = [f for f in report["files"] if f not in plots] + write_videos(episodes, config, out, report, progress) + plots
        state.phases["videos"] = time.perf_counter() - mark
        mark = time.perf_counter()
        _write_report(report, out, started, state)
        state.phases["report"] += time.perf_counter() - mark
    report["seconds"], report["phases"] = time.perf_counter() - started, dict(state.phases)
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float) + "\n")  # with every phase's time
    return report


def _unique_names(policies: list[PolicySpec]) -> None:
    """Policies given twice or two checkpoints of one label: a ``-2``, ``-3``, … suffix, so no row or file is overwritten."""
    seen: dict[str, int] = {}
    for policy in policies:
        count = seen[policy.name] = seen.get(policy.name, 0) + 1
        if count > 1:
            policy.name = f"{policy.name}-{count}"
            policy.slug = f"{policy.slug}-{count}"


def _write_report(report: dict[str, Any], out: Path, started: float, state: _Progress) -> None:
    """``report.json``, ``metrics.csv``, ``summary.md`` and ``report.html`` as the report stands."""
    from hik_sim.evaluation.report import VideoEntry, write_report_html
    from hik_sim.evaluation.tables import write_csv

    report["seconds"] = time.perf_counter() - started
    report["phases"] = dict(state.phases)
    report["date"] = datetime.now(timezone.utc).isoformat(timespec="seconds")
    report["platform"] = platform.platform()
    if "report.html" not in report["files"]:
        report["files"].append("report.html")
    (out / "report.json").write_text(json.dumps(report, indent=2, default=float) + "\n")
    write_csv(report, out / "metrics.csv")
    (out / "summary.md").write_text(summary_markdown(report))
    files = report["files"]
    featured = [VideoEntry(name, f"{', '.join(report['policies'])} on {name[len('side_by_side_'):-4]}'s first episode, "
                                 f"left to right ({report['side_by_side'][name]} frames)", str(Path(name).with_suffix(".png")))
                for name in report["side_by_side"]]
    videos = [VideoEntry(name, f"{name[:-4]} ({frames} frames)", str(Path(name).with_suffix(".gif")))
              for name, frames in report["video_frames"].items()]
    plots = [f for f in files if f.endswith(".png") and not f.startswith("side_by_side_")]
    downloads = ["report.json", "metrics.csv", "summary.md"] + list(report["side_by_side"]) + list(report["video_frames"])
    write_report_html(out, summary_markdown({**report, "files": []}), plots=plots, videos=videos, featured=featured,
                      downloads=downloads)


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
    folder = claim(Path(out), unique)
    try:
        record = _paper_suite(folder.path, targets, progress)
        from hik_sim.evaluation.report import write_report_html

        write_report_html(folder.path, record["text"], downloads=["paper.json", "paper.md"])  # the page to open, as evaluate writes
    except OSError as exc:
        folder.discard()
        raise output_error(exc, exc.filename or folder.path) from None
    except BaseException:
        folder.discard()
        raise
    folder.release()
    return record


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


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.evaluate``: evaluate IK policies on a robot and write a run folder (arguments: :mod:`hik_sim.evaluation.cli`)."""
    from hik_sim.evaluation.run_folder import terminate_as_interrupt
    from hik_sim.policies import pretrained_names
    from hik_sim.robots.cli import robot_from_args

    parser, args = read_arguments(argv)
    defaults = EvalConfig()
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    try:
        with terminate_as_interrupt():
            if args.suite == "paper":
                record = paper_suite(args.out or Path("runs") / "eval" / f"paper-{stamp}",
                                     args.ik_targets if args.ik_targets != defaults.ik_targets else 10_000, not args.no_progress,
                                     unique=args.out is None)
                print(record["text"])
                print(f"run folder   {record['run_folder']}")
                print(f"open {Path(record['run_folder']) / 'report.html'}")
                return 0
            robot = robot_from_args(args)
            policies = _policies(args, robot.name, set(pretrained_names()), defaults.policies)
            config = EvalConfig(policies=tuple(policies), envs=tuple(args.env), trajectory=args.trajectory, speed=args.speed,
                                episodes=args.episodes, track_episodes=args.track_episodes, track_seconds=args.track_seconds,
                                ik_targets=args.ik_targets, seed=args.seed, video=args.video, videos=args.videos,
                                device=args.device, seed_network=args.checkpoint, width=args.video_size[0],
                                height=args.video_size[1], fps=args.video_fps, quality=args.video_quality)
            report = evaluate(robot, config, args.out or Path("runs") / "eval" / f"{robot.name}-{stamp}",
                              progress=not args.no_progress, unique=args.out is None)
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    except (KeyboardInterrupt, Interrupted) as exc:
        name = exc.signal_name if isinstance(exc, Interrupted) else "SIGINT"
        print(f"\ninterrupted ({name}): the run folder's partial files were removed "
              "(a run stopped after its tables were written keeps them, with INCOMPLETE saying what is missing)", file=sys.stderr)
        return 143 if name == "SIGTERM" else 130
    print(summary_markdown(report, pictures=False))
    folder = Path(report["run_folder"])
    print(f"run folder   {folder}")
    print(f"open {folder / 'report.html'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
