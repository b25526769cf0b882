"""The command line of the trainer, ``python -m hik_sim.train`` (:mod:`hik_sim.learning.train` trains).

The parser needs neither torch nor the models, so ``--help`` and argument errors answer at once; the trainer is
imported once the arguments are read. Every path is checked before the first step
(:func:`hik_sim.learning.train_paths.check_run_paths`), and every error a user can cause is one ``error:`` line and
exit status 2, no traceback.

Examples::

    python -m hik_sim.train --robot irb120 --model harmoatt --steps 200
    python -m hik_sim.train --robot irb120 --model mlp --minutes 15 --fix-joint joint_6=0
    python -m hik_sim.train --urdf arm.urdf --base base_link --ee tool0 --model harmoatt --steps 5000
    python -m hik_sim.train --robot irb120 --model harmoatt --model-option hypotheses=4 --steps 5000
    python -m hik_sim.train --robot irb120 --model harmoatt --model-option trunk=dense --steps 5000
    python -m hik_sim.train --robot panda --model cycleik --steps 5000
    python -m hik_sim.train --robot irb120 --model regression --fix-joint joint_6=0 --steps 5000
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import os
import shlex
import signal
import sys
from pathlib import Path
from typing import Any

from hik_sim.errors import HikError, TrainingError
from hik_sim.learning.train_options import COMPOSITE_LR, OBJECTIVES, SCHEDULES, TrainConfig

__all__ = ["main", "build_parser", "LOSS_DEFAULTS"]

LOSS_DEFAULTS: dict[str, float] = {"entropy_weight": 0.01, "hypothesis_mix": 0.05, "limit_pull": 0.0}
"""The loss weights' defaults as ``--help`` shows them; :class:`~hik_sim.learning.losses.LossConfig` decides (an
option left out is not passed; a test keeps the two equal)."""


def _key_value(text: str, what: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name or not value:
        raise argparse.ArgumentTypeError(f"{what} must look like NAME=VALUE, got {text!r}")
    return name, value


def _joint_value(name: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise TrainingError(f"--fix-joint {name}={text}: the value must be a number [rad, or m for a prismatic joint]") from None


def _option_value(text: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        return text


def _defaults() -> Any:
    """:class:`TrainConfig`'s field defaults, read without making a config (which imports the models)."""
    values = {f.name: f.default for f in dataclasses.fields(TrainConfig) if f.default is not dataclasses.MISSING}
    return argparse.Namespace(**values)


def build_parser() -> argparse.ArgumentParser:
    """The trainer's argument parser (imports neither torch nor the models)."""
    from hik_sim.robots.cli import add_robot_arguments

    parser = argparse.ArgumentParser(prog="python -m hik_sim.train", description=main.__doc__)
    add_robot_arguments(parser)
    defaults = _defaults()
    parser.add_argument("--model", default=defaults.model, metavar="KIND",
                        help="network: harmoatt (default; the paper's trunk, or --model-option trunk=dense / trunk=map), mlp, "
                             "cycleik or regression (hik_sim.learning.models.MODEL_KINDS)")
    parser.add_argument("--describe", action="store_true",
                        help="print the network's size and the attention's share of its parameters and multiply-adds, "
                             "then stop (nothing is trained)")
    parser.add_argument("--steps", type=int, default=defaults.steps, help=f"optimiser steps (default {defaults.steps})")
    parser.add_argument("--minutes", type=float, default=None,
                        help="wall-clock budget [min]; stops at steps or minutes, whichever comes first (the progress bar "
                             "and its ETA follow the nearer end)")
    parser.add_argument("--batch", type=int, default=defaults.batch, help=f"batch size (default {defaults.batch})")
    parser.add_argument("--lr", type=float, default=None,
                        help=f"peak learning rate (default {COMPOSITE_LR:g}; CycleIK's config's for the cycleik objective)")
    parser.add_argument("--objective", choices=("auto", *OBJECTIVES), default="auto",
                        help="what to minimise (default auto: cycleik for --model cycleik, regression for --model "
                             "regression, composite otherwise)")
    parser.add_argument("--schedule", choices=SCHEDULES, default=defaults.schedule,
                        help="learning rate after the warm-up (default cosine over the budget; constant: the peak rate)")
    parser.add_argument("--warmup-steps", type=int, default=defaults.warmup_steps,
                        help=f"steps of the linear warm-up to the peak rate (default {defaults.warmup_steps}); a run "
                             "--init-from a trained network starts with a fresh optimiser, see docs/training.md")
    parser.add_argument("--sampling", default=defaults.sampling, metavar="NAME",
                        help="where training configurations fall (default uniform; limits: a share near the joint limits; "
                             "hard: a share replays the previous batch's worst-served configurations; one_branch: every "
                             "configuration, and the validation targets, from one IK branch, hik_sim.learning.models.regression)")
    parser.add_argument("--tail-fraction", type=float, default=defaults.tail_fraction,
                        help=f"share of each batch in the tails with --sampling limits/hard (default {defaults.tail_fraction:g})")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed (default 0)")
    parser.add_argument("--device", default=defaults.device, help="auto (default: cuda when available), cpu, cuda, cuda:N")
    parser.add_argument("--fix-joint", action="append", default=[], metavar="NAME=VALUE",
                        type=lambda t: _key_value(t, "--fix-joint"), help="hold a chain joint at VALUE [rad]; repeatable")
    parser.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda t: _key_value(t, "--model-option"),
                        help="model constructor argument, e.g. hidden=512 (mlp) or trunk=dense (harmoatt); repeatable")
    parser.add_argument("--no-adaptive-beta", action="store_true", help="plain Smooth-L1 on position (ablation)")
    parser.add_argument("--no-sign-invariant", action="store_true", help="plain quaternion loss (ablation)")
    parser.add_argument("--entropy-weight", type=float, default=None,
                        help=f"fusion-entropy weight λ in [-10, 10], 0 = off, negative: rewards a spread fusion "
                             f"(default {LOSS_DEFAULTS['entropy_weight']})")
    parser.add_argument("--hypothesis-mix", type=float, default=None,
                        help="with several hypotheses: weight ε of all answers' mean loss beside the winner's "
                             f"(default {LOSS_DEFAULTS['hypothesis_mix']}; 0 = pure winner-takes-all)")
    parser.add_argument("--limit-pull", type=float, default=None,
                        help="with --model-option clamp_in_training=true: weight of the first joint's distance outside its "
                             "range before the clamp [tolerance units per rad], which pulls pinned answers back to the limit "
                             f"(default {LOSS_DEFAULTS['limit_pull']:g}: off)")
    parser.add_argument("--eval-size", type=int, default=defaults.eval_size, help="validation targets (default 2000)")
    parser.add_argument("--eval-every", type=int, default=defaults.eval_every, help="steps between validations (default 100)")
    parser.add_argument("--eval-seconds", type=float, default=None,
                        help="also validate every this many seconds of training (default: with --minutes, a tenth of the "
                             "budget, at least three times a validation's own time; without, by steps only)")
    parser.add_argument("--out", type=Path, default=None, help="checkpoint path (default runs/train/<robot>/<model>.safetensors)")
    parser.add_argument("--resume", type=Path, default=None, help="continue from this checkpoint")
    parser.add_argument("--init-from", type=Path, default=None,
                        help="start from this checkpoint's weights with a fresh optimiser and schedule "
                             "(same robot and network; hypotheses may grow)")
    parser.add_argument("--compile", action="store_true",
                        help="torch.compile the forward pass (faster on a CPU after ~30 s; see TrainConfig.compile)")
    parser.add_argument("--tensorboard", type=Path, default=None, metavar="DIR",
                        help="also log the validation curve to this TensorBoard directory (needs tensorboard); the CSV and "
                             "PNG curve beside the checkpoint are always written")
    parser.add_argument("--checkpoint-minutes", type=float, default=defaults.checkpoint_minutes,
                        help=f"save a resumable checkpoint every this many minutes (default {defaults.checkpoint_minutes:g})")
    parser.add_argument("--keep-best", action="store_true",
                        help="also keep the best validation's weights as <out stem>.best.pt (lowest mean position error / 5 mm "
                             "+ rotation error / 2°): early stopping for runs whose curve swings")
    parser.add_argument("--force", action="store_true",
                        help="overwrite --out even where it holds a file that is not a hik_sim checkpoint, or lies in the "
                             "package's shipped networks")
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    return parser


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.train``: train an IK network and write its checkpoint and card."""
    parser = build_parser()
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    from hik_sim.learning.losses import LossConfig
    from hik_sim.learning.train import train
    from hik_sim.learning.train_paths import check_run_paths
    from hik_sim.learning.training_log import curve_paths
    from hik_sim.robots.cli import robot_from_args

    try:
        robot = robot_from_args(args)
        fixed = tuple((name, _joint_value(name, value)) for name, value in args.fix_joint)
        if args.describe:
            from hik_sim.learning.describe import describe_network, describe_text

            options = {k: _option_value(v) for k, v in args.model_option}
            print(describe_text(describe_network(args.model, len(robot.joint_names) - len(fixed), options)))
            return 0
        weights = {k: getattr(args, k) for k in LOSS_DEFAULTS if getattr(args, k) is not None}
        loss = LossConfig(adaptive_beta=not args.no_adaptive_beta, sign_invariant=not args.no_sign_invariant, **weights)
        config = TrainConfig(model=args.model, steps=args.steps, minutes=args.minutes, batch=args.batch, lr=args.lr,
                             seed=args.seed, device=args.device, fixed_joints=fixed,
                             model_options=tuple((k, _option_value(v)) for k, v in args.model_option), loss=loss,
                             eval_size=args.eval_size, eval_every=args.eval_every, compile=args.compile,
                             init_from=str(args.init_from) if args.init_from is not None else None,
                             checkpoint_minutes=args.checkpoint_minutes, objective=args.objective,
                             schedule=args.schedule, sampling=args.sampling, tail_fraction=args.tail_fraction,
                             warmup_steps=args.warmup_steps, keep_best=args.keep_best, eval_seconds=args.eval_seconds)
        out = args.out or Path("runs") / "train" / robot.name / f"{args.model}.safetensors"
        if int(os.environ.get("RANK", "0")) == 0:
            check_run_paths(out, args.resume, args.init_from, args.tensorboard, force=args.force, keep_best=args.keep_best,
                            names={"out": "--out", "resume": "--resume", "init_from": "--init-from", "tensorboard": "--tensorboard"})
        result = train(robot, config, out=out, resume=args.resume, progress=not args.no_progress, tensorboard=args.tensorboard,
                       force=args.force)
    except ValueError as exc:  # float("x") in --fix-joint
        parser.exit(2, f"error: {exc}\n")
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    if int(os.environ.get("RANK", "0")) != 0:
        return 0  # rank 0 reports
    m, card = result.card.metrics, result.card
    if args.resume is not None and result.steps_this_run == 0:
        print(f"nothing left to do: {args.resume} has {card.steps} steps and {card.training_seconds / 60:.1f} min of training, "
              f"and this run asks for {config.steps} steps" + (f" or {config.minutes:g} min" if config.minutes else "")
              + "; raise --steps (or --minutes) to train further")
    if args.resume is None and result.steps_this_run == 0 and result.stopped_by is None:
        print(f"the --minutes budget ({config.minutes or 0:g} min) ended before the first step: the network below is untrained; "
              "give more --minutes", file=sys.stderr)
    print(f"trained {card.model} for {card.robot}: {card.steps} steps in {card.training_seconds:.1f} s "
          f"({m['steps_per_second']:.1f} steps/s) on {card.device}, {card.parameters:,} parameters")
    if card.init:
        print(f"started from {card.init['checkpoint']} ({card.init['steps']} steps before): {card.total_steps} steps in all")
    print(f"validation ({card.eval_set['size']} targets): position {m['pos_mean_mm']:.2f} mm mean / {m['pos_median_mm']:.2f} median, "
          f"rotation {m['rot_mean_deg']:.2f}° mean / {m['rot_median_deg']:.2f} median, "
          f"success {100 * m['success_5mm_2deg']:.1f}% (5 mm, 2°), {100 * m['success_10mm_20deg']:.1f}% (10 mm, 20°)")
    if result.path:
        curve_csv, curve_png = curve_paths(result.path)
        print(f"checkpoint   {result.path}\ncard         {result.path.with_suffix('.json')}\ncurve        {curve_csv}, {curve_png}")
    if result.stopped_by is not None:
        print(f"stopped by {result.stopped_by} at step {card.steps} of {config.steps}; resume with:\n"
              f"  python -m hik_sim.train {shlex.join(_resume_arguments(argv, out))}", file=sys.stderr)
        return 128 + int(signal.Signals[result.stopped_by])  # the shell's convention for a run ended by a signal
    return 0


def _resume_arguments(argv: list[str], checkpoint: Path) -> list[str]:
    """``argv`` with any ``--resume`` replaced by ``--resume checkpoint``: the command that continues a run."""
    kept, skip = [], False
    for arg in argv:
        if skip:
            skip = False
        elif arg == "--resume":
            skip = True
        elif not arg.startswith("--resume="):
            kept.append(arg)
    return kept + ["--resume", str(checkpoint)]


if __name__ == "__main__":
    raise SystemExit(main())
