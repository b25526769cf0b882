"""The command line of ``python -m hik_sim.evaluate``: its parser and the checks on its arguments (:func:`read_arguments`);
the command is :func:`hik_sim.evaluation.evaluate.main`.

Bad input and unusable output paths exit with status 2 and one ``error:`` line; an interrupted run
(Ctrl-C, SIGTERM) says what it left and exits with 130 (SIGINT) or 143 (SIGTERM). The last lines
printed name the run folder and the page to open.
"""

from __future__ import annotations

import argparse
import errno
import os
import re
from pathlib import Path

__all__ = ["read_arguments"]

_DESCRIPTION = "``python -m hik_sim.evaluate``: evaluate IK policies on a robot and write a run folder."

REPORT_SUFFIXES: tuple[str, ...] = (".json", ".md", ".csv", ".txt", ".pt", ".png", ".mp4", ".gif")
"""Suffixes of files a run writes: an ``--out`` ending in one is a file name given where a folder is meant."""


def _video_size(text: str) -> tuple[int, int]:
    """``--video-size``: ``WxH`` in pixels."""
    match = re.fullmatch(r"\s*(\d+)\s*[xX×]\s*(\d+)\s*", text)
    if not match:
        raise argparse.ArgumentTypeError(f"give WIDTHxHEIGHT in pixels such as 640x480, got {text!r}")
    return int(match.group(1)), int(match.group(2))


def _path_error(option: str, value: str | os.PathLike[str] | None) -> str | None:
    """Why a path given to ``option`` cannot be a file name here (a name longer than the OS allows), or None."""
    if value is None:
        return None
    limit = os.pathconf(".", "PC_NAME_MAX") if hasattr(os, "pathconf") else 255
    for part in Path(value).parts:
        if len(os.fsencode(part)) > limit:
            return (f"{option} {str(value)[:80]}… cannot be used ({os.strerror(errno.ENAMETOOLONG)}): each name in a path may be "
                    f"at most {limit} bytes, {part[:20]}… has {len(os.fsencode(part))}")
    return None


def _parser() -> argparse.ArgumentParser:
    from hik_sim.envs.trajectories import TRAJECTORIES
    from hik_sim.evaluation.config import LIMITS, NETWORK_FREE_POLICIES, POLICY_NAMES, VIDEO_CHOICES, EvalConfig
    from hik_sim.robots.cli import add_robot_arguments

    parser = argparse.ArgumentParser(prog="python -m hik_sim.evaluate", description=_DESCRIPTION)
    add_robot_arguments(parser)
    defaults = EvalConfig()

    def limit(name: str) -> str:
        return f"{LIMITS[name][1]:g} to {LIMITS[name][2]:g}"

    parser.add_argument("--policy", nargs="+", default=None, metavar="POLICY",
                        help=f"policies: {', '.join(POLICY_NAMES)}, a network shipped for the robot (e.g. "
                             f"harmoatt_4answers, mlp_seed) or checkpoint paths (default: {' '.join(defaults.policies)}; "
                             f"for a robot with no shipped network: {' '.join(NETWORK_FREE_POLICIES)})")
    parser.add_argument("--checkpoint", default=None, help="a trained checkpoint (.safetensors) to evaluate, labelled by its model and file; "
                                                           "compared with the robot's shipped HarmoAtt-IK network and hybrid where it has "
                                                           "them, and multistart; it also seeds --policy hybrid on a robot with no "
                                                           "shipped network")
    parser.add_argument("--env", nargs="+", default=list(defaults.envs), choices=["reach", "track"])
    parser.add_argument("--trajectory", default=defaults.trajectory, choices=TRAJECTORIES)
    parser.add_argument("--speed", type=float, default=defaults.speed, help="Track speed [m/s] (default 0.1)")
    parser.add_argument("--episodes", type=int, default=defaults.episodes,
                        help=f"Reach episodes per policy ({limit('episodes')}, default {defaults.episodes})")
    parser.add_argument("--track-episodes", type=int, default=defaults.track_episodes,
                        help=f"Track episodes per policy ({limit('track_episodes')}, default {defaults.track_episodes})")
    parser.add_argument("--track-seconds", type=float, default=defaults.track_seconds,
                        help=f"Track episode length [s] (above 1, at most {LIMITS['track_seconds'][2]:g}; default {defaults.track_seconds:g})")
    parser.add_argument("--ik-targets", type=int, default=defaults.ik_targets,
                        help=f"open-loop targets ({limit('ik_targets')}, default {defaults.ik_targets})")
    parser.add_argument("--seed", type=int, default=defaults.seed)
    parser.add_argument("--video", action=argparse.BooleanOptionalAction, default=True, help="record rollout videos (default on)")
    parser.add_argument("--videos", choices=VIDEO_CHOICES, default=defaults.videos,
                        help="side-by-side: all policies on one episode per environment, and its poster frame (default); "
                             "all: each policy's own video and GIF preview too; none: no videos (as --no-video)")
    parser.add_argument("--video-size", type=_video_size, default=(defaults.width, defaults.height), metavar="WxH",
                        help=f"size of one policy's video frame, even numbers of pixels (default {defaults.width}x{defaults.height}; "
                             "the side-by-side video is one width per policy)")
    parser.add_argument("--video-fps", type=int, default=defaults.fps,
                        help=f"video frames per second ({limit('fps')}, default {defaults.fps}; played in real time)")
    parser.add_argument("--video-quality", choices=["fast", "high"], default=defaults.quality,
                        help="fast: no shadows, no anti-aliasing (default); high: shadows and 4 samples a pixel, "
                             "several times the render time on a CPU")
    parser.add_argument("--out", type=Path, default=None, help="run folder, new or empty (default runs/eval/<robot>-<date>, "
                                                                "with a -2, -3, … suffix where another run took that name)")
    parser.add_argument("--device", default="cpu", help="where networks run (default cpu)")
    parser.add_argument("--suite", choices=["paper"], default=None,
                        help="paper: both seed papers' experiments with the shipped checkpoints (--ik-targets per robot)")
    parser.add_argument("--no-progress", action="store_true")
    return parser


def _policies(args: argparse.Namespace, robot_name: str, shipped: set[str], defaults: tuple[str, ...]) -> list[str]:
    """The policies to run: ``--policy`` (with ``--checkpoint`` added), else with ``--checkpoint`` the network against the
    robot's shipped HarmoAtt-IK network and hybrid (where it has them) and multistart, else the defaults."""
    from hik_sim.evaluation.config import NETWORK_FREE_POLICIES
    from hik_sim.policies import hybrid_seed_name

    has_networks = any(n.startswith(f"{robot_name}/") for n in shipped)
    if args.policy:
        return list(args.policy) + ([args.checkpoint] if args.checkpoint else [])
    if args.checkpoint:
        seed = hybrid_seed_name(robot_name)
        peers = ([seed] if f"{robot_name}/{seed}" in shipped else []) + (["hybrid"] if has_networks else [])
        return [args.checkpoint, *peers, "multistart"]
    return list(defaults) if has_networks else list(NETWORK_FREE_POLICIES)


def read_arguments(argv: list[str] | None = None) -> tuple[argparse.ArgumentParser, argparse.Namespace]:
    """The parser and the arguments of ``argv`` (default: ``sys.argv[1:]``); a path that cannot be used exits with status 2."""
    parser = _parser()
    args = parser.parse_args(argv)
    for option, value in (("--out", args.out), ("--checkpoint", args.checkpoint), *(("--policy", p) for p in args.policy or [])):
        problem = _path_error(option, value)
        if problem:
            parser.exit(2, f"error: {problem}\n")
    if args.out is not None and args.out.suffix.lower() in REPORT_SUFFIXES and not args.out.exists():  # an existing one: see claim_run_folder
        parser.exit(2, f"error: --out is the run folder that report.json and the rest go into, and {str(args.out)!r} "
                       f"looks like a file name; give a folder such as {str(args.out.with_suffix(''))!r}\n")
    if args.checkpoint is not None and Path(args.checkpoint).suffix not in (".pt", ".safetensors"):
        parser.exit(2, f"error: --checkpoint takes a checkpoint file (.pt) or a .safetensors file written by python -m hik_sim.train, "
                       f"got {args.checkpoint!r}\n")
    return parser, args
