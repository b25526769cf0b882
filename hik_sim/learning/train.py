"""Training IK networks from the URDF alone: ``python -m hik_sim.train``.

Every step draws a fresh batch of configurations uniform in the joint limits (or with a share in the
tails, ``--sampling``: :data:`~hik_sim.learning.data.SAMPLINGS`), computes their poses
by batched FK (:class:`~hik_sim.kinematics.chain.Chain`), asks the network for joints that reach those
poses, and minimises the :class:`~hik_sim.learning.losses.CompositeLoss` of the poses those joints reach
(FK again, differentiable). AdamW with a short warm-up and a cosine decay over the budget (steps or
minutes; ``--schedule constant`` keeps the peak rate). A progress bar shows the mean position [mm] and rotation [°] error on a fixed validation
set. The result is a checkpoint with its card (:mod:`hik_sim.learning.checkpoint`), resumable;
with ``--keep-best`` also the best validation's weights beside it (``<stem>.best.pt``).

Nothing is lost to an interruption: the output path is checked before the first step, the run
saves a resumable checkpoint every ``checkpoint_minutes``, and Ctrl-C (SIGINT) or SIGTERM ends it
after the current step with a checkpoint and the command that resumes it (a second Ctrl-C quits at
once). ``--resume`` continues to the requested ``--steps``/``--minutes``: an uninterrupted run and
an interrupted one resumed with the same command end with the same weights (on the CPU, with a
step budget).

Multi-GPU: ``torchrun --nproc_per_node N -m hik_sim.train ...`` trains with DistributedDataParallel
(gradients averaged; rank 0 validates and saves). Each process draws its own batches from its own
generator, and the checkpoint keeps every rank's generator state, so ``--resume`` with the same
number of processes continues every rank's stream. The ranks agree on one clock (the slowest
rank's elapsed time) for the learning-rate schedule, the ``--minutes`` budget and the periodic
checkpoints, and on stopping when any of them is signalled, so they always take the same steps;
the adaptive β's running error is averaged over the ranks after every step.

Objectives (``--objective``, by default chosen by the model kind): ``composite`` (the above; for
``harmoatt`` and ``mlp``), ``cycleik`` (CycleIK's own loss, :class:`~hik_sim.learning.losses.CycleIKLoss`,
with Adam at CycleIK's learning rate; the default for ``cycleik``) and ``regression`` (supervised
regression onto the sampled joints, :class:`~hik_sim.learning.losses.RegressionLoss`, no FK in the loss; the
default for ``regression``). docs/paper_models.md says where these follow their papers and where not.

Examples::

    python -m hik_sim.train --robot irb120 --model harmoatt --steps 200
    python -m hik_sim.train --robot irb120 --model mlp --minutes 15 --fix-joint joint_6=0
    python -m hik_sim.train --urdf arm.urdf --base base_link --ee tool0 --model harmoatt --steps 5000
    python -m hik_sim.train --robot irb120 --model harmoatt --model-option hypotheses=4 --steps 5000
    python -m hik_sim.train --robot panda --model cycleik --steps 5000
    python -m hik_sim.train --robot irb120 --model regression --fix-joint joint_6=0 --steps 5000
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import shlex
import signal
import subprocess
import sys
import threading
import time
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Iterator, NamedTuple

import torch

import hik_sim
from hik_sim.learning.checkpoint import Card, check_checkpoint_path, read_checkpoint, save_checkpoint
from hik_sim.learning.data import SAMPLINGS, FKStream, JointSelection, PoseNormalizer, make_eval_set
from hik_sim.errors import HikError, TrainingError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.losses import CompositeLoss, CycleIKLoss, LossConfig, LossTerms, RegressionLoss
from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.learning.models import CYCLEIK_PROFILES, MODEL_KINDS, parameter_count, size_options
from hik_sim.learning.models.cycleik import CycleIKProfile
from hik_sim.learning.network import IKNetwork
from hik_sim.robots import RobotSpec
from hik_sim.learning.training_log import TrainingLog, curve_paths
from hik_sim.kinematics.rotations import position_error, rotation_error

__all__ = ["TrainConfig", "TrainResult", "train", "train_to_checkpoint", "evaluate_network", "main", "OBJECTIVES"]

OBJECTIVES: tuple[str, ...] = ("composite", "cycleik", "regression")
"""What a run minimises: our composite loss, CycleIK's loss, or supervised joint regression."""

DEFAULT_OBJECTIVES: dict[str, str] = {"cycleik": "cycleik", "regression": "regression"}
"""A model kind's objective when none is given; any other kind: ``composite``."""

COMPOSITE_LR = 1e-3
"""The default peak learning rate of the composite and regression objectives."""

SCHEDULES: tuple[str, ...] = ("cosine", "constant")
"""The learning rate after the warm-up (:attr:`TrainConfig.schedule`)."""


@dataclass(frozen=True)
class TrainConfig:
    """How a network is trained.

    Attributes:
        model: ``harmoatt``, ``mlp``, ``cycleik`` or ``regression``.
        steps: optimiser steps (the budget when ``minutes`` is not set).
        minutes: wall-clock budget [min]; when set, training stops at whichever of steps and
            minutes comes first, and the learning rate follows the time.
        batch: configurations per step.
        lr: peak learning rate; default (``None``): CycleIK's config's rate for the ``cycleik``
            objective (the profile's, Panda 2.4e-4), else 1e-3.
        weight_decay: AdamW weight decay.
        warmup_steps: linear warm-up steps.
        final_lr_fraction: the cosine decay ends at this fraction of ``lr``.
        schedule: the learning rate after the warm-up: ``cosine`` (default; decays to
            ``final_lr_fraction`` over the budget, steps or minutes, whichever runs out first) or
            ``constant`` (``lr`` throughout; the recipe study's alternative).
        sampling: where the training configurations fall, one of :data:`hik_sim.learning.data.SAMPLINGS`
            (``uniform``, default; ``limits``; ``hard``: hard-example replay).
        tail_fraction: the share of each batch that ``limits`` or ``hard`` places in the tails.
        grad_clip: gradient-norm clip.
        seed: seed of the weights' initialisation and of the training batches.
        device: ``auto`` (CUDA when available), ``cpu``, ``cuda`` or ``cuda:N``.
        fixed_joints: joints held at fixed values; the network outputs the others.
        model_options: the model's constructor arguments.
        loss: the composite loss's switches.
        eval_size: validation targets.
        eval_seed: seed of the validation set.
        eval_every: steps between validations (also at the end).
        normalizer_samples: FK samples that measure the workspace bounds.
        init_from: a checkpoint whose weights start this run (not its optimiser: a fresh warm-up and
            schedule; unlike resuming, the budget and options may differ). It must be for the same
            robot, model, fixed joints and options, except ``hypotheses``, which may grow: the new
            answers start as copies of its answers with a little noise. The card records it
            (:attr:`~hik_sim.learning.checkpoint.Card.init`).
        objective: ``composite``, ``cycleik`` or ``regression`` (see the module docstring);
            ``auto`` (default): ``cycleik`` for the cycleik model, ``regression`` for the regression
            model, ``composite`` otherwise. The ``cycleik`` objective trains with Adam (betas
            0.9, 0.999, no weight decay), the others with AdamW.
        compile: compile the step's forward pass (network, FK, loss) with ``torch.compile``. On a
            2-core CPU, after ~30 s of compiling, a HarmoAtt-IK network starts at 19–20 steps/s
            against 14 eager, and slows as the run goes on (a 22,000-step run averaged 16.7 and
            ended near 14; the cause is not yet known). The shipped IRB120 pair was trained
            compiled before denormals were flushed (``_denormals_flushed``) and before β stopped
            causing recompiles, and slowed from 18 to 10 steps/s over its run.
        checkpoint_minutes: when writing a checkpoint, also save one (resumable) every this many
            minutes [min] of training, so that a killed run loses at most that much.
        keep_best: when writing a checkpoint, also keep the weights of the best validation so far
            (lowest :func:`validation_score`) as ``<stem>.best.pt`` with its card: early stopping on
            the validation set, for runs whose curve swings (a continuation at a high rate).
    """

    model: str = "harmoatt"
    steps: int = 2000
    minutes: float | None = None
    batch: int = 1024
    lr: float | None = None
    weight_decay: float = 1e-5
    warmup_steps: int = 100
    final_lr_fraction: float = 0.02
    schedule: str = "cosine"
    sampling: str = "uniform"
    tail_fraction: float = 0.25
    grad_clip: float = 1.0
    seed: int = 0
    device: str = "auto"
    fixed_joints: tuple[tuple[str, float], ...] = ()
    model_options: tuple[tuple[str, Any], ...] = ()
    loss: LossConfig = field(default_factory=LossConfig)
    eval_size: int = 2000
    eval_seed: int = 12345
    eval_every: int = 100
    normalizer_samples: int = 100_000
    compile: bool = False
    init_from: str | None = None
    checkpoint_minutes: float = 5.0
    objective: str = "auto"
    keep_best: bool = False

    def __post_init__(self) -> None:
        if self.model not in MODEL_KINDS:
            raise TrainingError(f"unknown model {self.model!r}; models are: {', '.join(MODEL_KINDS)}")
        if self.objective == "auto":
            object.__setattr__(self, "objective", DEFAULT_OBJECTIVES.get(self.model, "composite"))
        if self.objective not in OBJECTIVES:
            raise TrainingError(f"unknown objective {self.objective!r}; objectives are: auto, {', '.join(OBJECTIVES)}")
        hypotheses = dict(self.model_options).get("hypotheses", 1)
        if self.objective != "composite" and isinstance(hypotheses, (int, float)) and hypotheses > 1:
            raise TrainingError(f"the {self.objective} objective trains one answer per pose; several hypotheses need "
                           "the composite objective")
        lr = self.lr
        if lr is None:
            lr = float(cycleik_settings(self)["lr"] if self.objective == "cycleik" else COMPOSITE_LR)
            object.__setattr__(self, "lr", lr)
        if self.loss.limit_pull and not dict(self.model_options).get("clamp_in_training"):
            raise TrainingError(f"loss limit_pull ({self.loss.limit_pull:g}) pulls a clamp_in_training network's pinned answers "
                                "back to the limit; add --model-option clamp_in_training=true (with canonical_turn=true) or "
                                "leave it at 0")
        if self.steps < 1:
            raise TrainingError(f"steps must be at least 1, got {self.steps}")
        if self.minutes is not None and not self.minutes > 0:
            raise TrainingError(f"minutes must be positive, got {self.minutes}")
        if self.batch < 1 or self.eval_size < 1 or self.eval_every < 1 or self.normalizer_samples < 100:
            raise TrainingError("batch, eval_size and eval_every must be at least 1 and normalizer_samples at least 100")
        if not (0 < lr < math.inf and 0 < self.final_lr_fraction <= 1 and self.warmup_steps >= 0
                and 0 < self.grad_clip < math.inf):
            raise TrainingError(f"lr and grad_clip must be positive and finite, final_lr_fraction in (0, 1], warmup_steps >= 0; "
                           f"got lr={self.lr}, grad_clip={self.grad_clip}, final_lr_fraction={self.final_lr_fraction}, "
                           f"warmup_steps={self.warmup_steps}")
        if self.device != "auto" and not (self.device == "cpu" or self.device.startswith("cuda")):
            raise TrainingError(f"device must be auto, cpu, cuda or cuda:N, got {self.device!r}")
        if self.model == "harmoatt" and "trunk" not in dict(self.model_options):  # a card must say which trunk it holds
            object.__setattr__(self, "model_options", (("trunk", "dense"), *self.model_options))
        if self.schedule not in SCHEDULES:
            raise TrainingError(f"unknown schedule {self.schedule!r}; schedules are: {', '.join(SCHEDULES)}")
        if self.sampling not in SAMPLINGS:
            raise TrainingError(f"unknown sampling {self.sampling!r}; samplings are: {', '.join(SAMPLINGS)}")
        if not 0 <= self.tail_fraction < 1:
            raise TrainingError(f"tail_fraction must be in [0, 1), got {self.tail_fraction}")
        if not self.checkpoint_minutes > 0:
            raise TrainingError(f"checkpoint_minutes must be positive, got {self.checkpoint_minutes}")

    def to_json(self) -> dict[str, Any]:
        """A JSON-ready dict (recorded in the checkpoint's card)."""
        return json.loads(json.dumps(asdict(self), default=str))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "TrainConfig":
        """The config of a dict written by :meth:`to_json`."""
        data = dict(data)
        data["loss"] = LossConfig(**data.get("loss", {}))
        data["fixed_joints"] = tuple((str(k), float(v)) for k, v in data.get("fixed_joints", ()))
        data["model_options"] = tuple((str(k), v) for k, v in data.get("model_options", ()))
        return cls(**data)


def cycleik_settings(config: TrainConfig) -> CycleIKProfile:
    """CycleIK's published config (loss weights, learning rate) for a run: its model's ``profile`` (default Panda)."""
    profile = str(dict(config.model_options).get("profile", "panda")) if config.model == "cycleik" else "panda"
    if profile not in CYCLEIK_PROFILES:
        raise TrainingError(f"unknown CycleIK profile {profile!r}; profiles are: {', '.join(CYCLEIK_PROFILES)}")
    return CYCLEIK_PROFILES[profile]


class TrainResult(NamedTuple):
    """What :func:`train` returns.

    Attributes:
        network: the trained network (eval mode, on the training device).
        card: its card.
        path: the checkpoint written, or ``None``.
        history: one dict per validation (step, elapsed [s], loss, metrics).
        steps_this_run: optimiser steps taken by this call (0 when a resumed run had nothing left to do).
        stopped_by: the signal that ended the run early (``"SIGINT"``, ``"SIGTERM"``), or ``None``.
    """

    network: IKNetwork
    card: Card
    path: Path | None
    history: list[dict[str, float]]
    steps_this_run: int = 0
    stopped_by: str | None = None


class _StopRequest:
    """Turns SIGINT/SIGTERM into a request to stop after the current step, while a run lasts.

    A second SIGINT raises :class:`KeyboardInterrupt` at once (a user who insists). Handlers can
    only be installed from the main thread; elsewhere the run simply cannot be stopped this way.
    """

    SIGNALS = (signal.SIGINT, signal.SIGTERM)

    def __init__(self) -> None:
        self.signal: str | None = None
        self._previous: dict[int, Any] = {}

    def _handle(self, signum: int, frame: Any) -> None:  # noqa: ARG002
        if self.signal is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt
        self.signal = signal.Signals(signum).name

    def __enter__(self) -> "_StopRequest":
        if threading.current_thread() is threading.main_thread():
            for signum in self.SIGNALS:
                self._previous[signum] = signal.signal(signum, self._handle)
        return self

    def __exit__(self, *exc: object) -> None:
        for signum, handler in self._previous.items():
            signal.signal(signum, handler)


def _device(name: str, local_rank: int) -> torch.device:
    if name == "auto":
        name = "cuda" if torch.cuda.is_available() else "cpu"
    if name.startswith("cuda"):
        if not torch.cuda.is_available():
            raise TrainingError("device cuda asked for, but torch sees no CUDA device; use --device cpu")
        return torch.device("cuda", local_rank) if name == "cuda" else torch.device(name)
    return torch.device("cpu")


def _git_commit() -> str:
    try:
        out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=Path(hik_sim.__file__).parent, capture_output=True,
                             text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return "unknown"
    return out.stdout.strip() if out.returncode == 0 else "unknown"


@contextlib.contextmanager
def _denormals_flushed(device: torch.device) -> Iterator[None]:
    """Flush denormal floats to zero on the CPU for the duration of the block.

    As a network converges, denormal values (below ~1e-38) turn up in its gradients and optimiser
    state, and CPU arithmetic on them is many times slower: measured here over 3,000 steps, a
    compiled HarmoAtt-IK run slowed from 20 to 17 steps/s, and held 19–20 with denormals flushed.
    The setting is process-wide, so it is restored after.
    """
    flush = device.type == "cpu" and torch.set_flush_denormal(True)
    try:
        yield
    finally:
        if flush:
            torch.set_flush_denormal(False)


def _initialise_from(network: IKNetwork, config: TrainConfig, robot: RobotSpec, path: Path) -> dict[str, Any]:
    """Load the weights of checkpoint ``path`` into ``network`` (see ``TrainConfig.init_from``); its lineage for the card.

    Raises:
        HikError: the checkpoint is unreadable, for another robot, or for another network.
    """
    payload = read_checkpoint(path)
    card = Card.from_json(payload["card"])
    card.check_robot(robot)
    options = {k: v for k, v in card.model_options.items() if k != "hypotheses"}
    wanted = {k: v for k, v in dict(config.model_options).items() if k != "hypotheses"}
    if card.model != config.model or dict(card.fixed_joints) != dict(config.fixed_joints) or options != wanted:
        raise TrainingError(f"{path} holds a {card.model!r} network with fixed joints {dict(card.fixed_joints)} and options "
                       f"{card.model_options}; this run trains {config.model!r} with {dict(config.fixed_joints)} and "
                       f"{dict(config.model_options)}: only the number of hypotheses may differ")
    assert card.hypotheses is not None  # Card.__post_init__ fills it in (from model_options, for a card older than the field)
    have, want = card.hypotheses, network.hypotheses
    if want < have:
        raise TrainingError(f"{path} has {have} hypotheses; a network started from it needs at least as many, got {want}")
    state = dict(payload["state_dict"])
    if want > have:  # the new answers start as noisy copies of the old ones
        generator = torch.Generator().manual_seed(config.seed + 7)
        weight, bias = state["model.head.linear.weight"], state["model.head.linear.bias"]
        copies = [(k % have) for k in range(want)]
        free = weight.shape[0] // have
        rows = torch.cat([torch.arange(c * free, (c + 1) * free) for c in copies])
        noise = 0.01 * float(weight.std()) * torch.randn(want * free, weight.shape[1], generator=generator)
        state["model.head.linear.weight"] = weight[rows] + noise * (torch.arange(want * free) >= have * free)[:, None]
        state["model.head.linear.bias"] = bias[rows]
    try:
        network.load_state_dict(state)
    except RuntimeError as exc:
        raise TrainingError(f"{path}: its weights do not fit this run's network ({str(exc)[:300]})") from None
    return {"checkpoint": path.name, "steps": card.total_steps, "training_seconds": round(card.total_training_seconds, 2),
            "git_commit": card.git_commit}


def _pose_error(pos: torch.Tensor, quat: torch.Tensor, target_pos: torch.Tensor, target_quat: torch.Tensor) -> torch.Tensor:
    """Position error [m] plus rotation error [rad] × 0.1 m, (...,): one number per pose to rank them by."""
    return position_error(pos, target_pos) + 0.1 * rotation_error(quat, target_quat)


def validation_score(metrics: dict[str, float]) -> float:
    """One number for a validation (lower is better): mean position error / 5 mm + mean rotation
    error / 2°, the weighting a multi-answer network ranks its answers by."""
    return metrics["pos_mean_mm"] / 5.0 + metrics["rot_mean_deg"] / 2.0


def best_path(out: str | os.PathLike[str]) -> Path:
    """Where :attr:`TrainConfig.keep_best` keeps the best validation's weights: ``<stem>.best.pt``."""
    out = Path(out)
    return out.with_name(out.stem + ".best.pt")


def _learning_rate(config: TrainConfig, step: int, progress: float) -> float:
    peak = config.lr
    assert peak is not None  # TrainConfig.__post_init__ fills it in
    if step < config.warmup_steps:
        return peak * (step + 1) / config.warmup_steps
    if config.schedule == "constant":
        return peak
    floor = config.final_lr_fraction
    return peak * (floor + (1 - floor) * 0.5 * (1 + math.cos(math.pi * min(progress, 1.0))))


def train(robot: RobotSpec, config: TrainConfig, out: str | os.PathLike[str] | None = None,
          resume: str | os.PathLike[str] | None = None, progress: bool = True,
          tensorboard: str | os.PathLike[str] | None = None) -> TrainResult:
    """Train an IK network for ``robot``.

    Args:
        robot: the robot.
        config: the training configuration.
        out: where to write the checkpoint (and its ``.json`` card) and, beside it, the validation
            curve (``<stem>.curve.csv`` and ``.png``, updated after every validation:
            :class:`~hik_sim.learning.training_log.TrainingLog`); ``None``: write nothing.
        resume: a checkpoint to continue from (its config must match ``config``'s model).
        progress: show a tqdm progress bar.
        tensorboard: also log every validation to this TensorBoard directory (needs ``tensorboard``).

    Returns:
        :class:`TrainResult`.

    Raises:
        HikError: bad configuration, fixed joints, device, or resume checkpoint.
    """
    from tqdm.auto import tqdm

    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    out = check_checkpoint_path(out) if out is not None and rank == 0 else None  # before any work, not after it
    curve = TrainingLog(out, tensorboard if rank == 0 else None, title=f"{robot.name} {config.model}") \
        if rank == 0 and (out is not None or tensorboard is not None) else None
    device = _device(config.device, local_rank)
    started_group = world > 1 and not torch.distributed.is_initialized()
    if world > 1 and device.type == "cuda":
        torch.cuda.set_device(device)  # NCCL collectives run on the current device: one per rank
    if started_group:
        torch.distributed.init_process_group("nccl" if device.type == "cuda" else "gloo")
    chain = Chain(robot)
    selection = JointSelection.for_chain(chain, dict(config.fixed_joints))
    options = size_options(config.model, len(selection.free_index), dict(config.model_options))
    if options != dict(config.model_options):  # the card records the size the model chose by default
        config = replace(config, model_options=tuple(options.items()))
    normalizer = PoseNormalizer.measure(chain, selection, samples=config.normalizer_samples, seed=config.seed)
    eval_set = make_eval_set(chain, config.eval_seed, config.eval_size, selection)
    lower, upper = chain.limits(torch.float32)
    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(config.seed)
        network = IKNetwork(config.model, lower, upper, normalizer, selection, dict(config.model_options), chain)
    network.to(device)
    loss_fn: torch.nn.Module
    if config.objective == "cycleik":
        settings = cycleik_settings(config)
        loss_fn = CycleIKLoss(settings["position_weight"], settings["orientation_weight"]).to(device)
    elif config.objective == "regression":
        loss_fn = RegressionLoss().to(device)
    else:
        loss_fn = CompositeLoss(config.loss).to(device)
    free_index = torch.as_tensor(selection.free_index, dtype=torch.long, device=device)
    init: dict[str, Any] = {}
    if config.init_from is not None:
        init = _initialise_from(network, config, robot, Path(config.init_from))
    assert config.lr is not None  # TrainConfig.__post_init__ fills it in
    if config.objective == "cycleik":  # CycleIK's optimiser: Adam, betas (0.9, 0.999), no weight decay
        optimizer: torch.optim.Optimizer = torch.optim.Adam(network.parameters(), lr=config.lr, betas=(0.9, 0.999))
    else:
        optimizer = torch.optim.AdamW(network.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator(device=device).manual_seed(config.seed + 1000 * rank)
    step, elapsed_before, history = 0, 0.0, []
    stream_state: dict[str, Any] | None = None
    if resume is not None:
        payload = read_checkpoint(resume, map_location=device)
        state = payload.get("resume")
        if state is None:
            raise TrainingError(f"{resume} holds no training state to resume from (it was saved without it, e.g. a shipped "
                                "network); use --init-from to start a new run from its weights")
        Card.from_json(payload["card"]).check_robot(robot)
        if payload["card"]["model"] != config.model:
            raise TrainingError(f"{resume} is a {payload['card']['model']!r} model, the config asks for {config.model!r}")
        trained_objective = TrainConfig.from_json(payload["card"]["config"]).objective
        if trained_objective != config.objective:
            raise TrainingError(f"{resume} was trained with the {trained_objective!r} objective, this run asks for {config.objective!r}")
        network.load_state_dict(payload["state_dict"])
        init = dict(payload["card"].get("init", {}))
        optimizer.load_state_dict(state["optimizer"])
        loss_fn.load_state_dict(state["loss"])
        generator.set_state(_rank_generator_state(state, rank, world, resume))
        stream_state = state.get("stream")
        step, elapsed_before, history = int(state["step"]), float(state["elapsed"]), list(state["history"])
    first_step = step
    model: torch.nn.Module = network  # what the steps call: the network, or its DistributedDataParallel wrapper
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(network, device_ids=[device.index] if device.type == "cuda" else None)
    stream = FKStream(chain, config.batch, generator, selection, torch.float32, device, sampling=config.sampling,
                      tail_fraction=config.tail_fraction)
    if resume is not None and stream_state is not None:  # the hard-example pool (rank 0's: the ranks' pools differ only by batch)
        stream.load_state_dict(stream_state)
    budget_s = config.minutes * 60 if config.minutes is not None else math.inf
    show = progress and rank == 0
    bar = tqdm(total=config.steps, initial=step, disable=not show, desc=f"{robot.name} {config.model}", unit="step",
               dynamic_ncols=True)
    start = time.perf_counter()
    metrics: dict[str, float] = history[-1] if history else {}
    network.train()

    def elapsed() -> float:
        return elapsed_before + time.perf_counter() - start

    replay = config.sampling == "hard"  # only hard-example replay needs each pose's error

    def batch_loss(pos: torch.Tensor, quat: torch.Tensor, q: torch.Tensor) -> tuple[LossTerms, torch.Tensor | None]:
        """The loss terms and, for hard-example replay, each pose's error (B,): position [m] plus rotation
        [rad] × 0.1 m (the best answer's, with several), or the joint error [rad] for regression."""
        out_net = model(pos, quat, choose=False)
        if config.objective == "regression":  # the sampled joints are the targets: no FK
            predicted, target = out_net.q[:, free_index], q[:, free_index]
            error = torch.linalg.vector_norm(predicted.detach() - target, dim=-1) if replay else None
            return loss_fn(predicted, target), error
        if out_net.candidates is None:
            reached = chain.fk(out_net.q)
            terms = loss_fn(reached.pos, reached.quat, pos, quat, out_net.fusion_weights, out_net.outside)
            return terms, _pose_error(reached.pos.detach(), reached.quat.detach(), pos, quat) if replay else None
        batch, hypotheses, n = out_net.candidates.shape
        reached = chain.fk(out_net.candidates.reshape(batch * hypotheses, n))
        reached_pos, reached_quat = reached.pos.view(batch, hypotheses, 3), reached.quat.view(batch, hypotheses, 4)
        terms = loss_fn(reached_pos, reached_quat, pos, quat, out_net.fusion_weights, out_net.outside)
        if not replay:
            return terms, None
        error = _pose_error(reached_pos.detach(), reached_quat.detach(), pos[:, None], quat[:, None])
        return terms, error.min(dim=1).values

    def card_now() -> Card:
        seconds = elapsed()
        return Card(
            robot=robot.name, urdf_sha256=robot.urdf_sha256(), base_link=robot.base_link, ee_link=robot.ee_link,
            joint_names=robot.joint_names, lower=robot.lower, upper=robot.upper, fixed_joints=dict(config.fixed_joints),
            model=config.model, model_options=dict(config.model_options), parameters=parameter_count(network.model),
            pos_min=tuple(normalizer.pos_min.tolist()), pos_max=tuple(normalizer.pos_max.tolist()),
            config=config.to_json(), steps=step, training_seconds=round(seconds, 2),
            device=str(device) + (f" x{world}" if world > 1 else ""), git_commit=_git_commit(),
            metrics={k: v for k, v in metrics.items() if k not in ("step",)} | {"steps_per_second": step / max(seconds, 1e-9)},
            eval_set={"seed": config.eval_seed, "size": config.eval_size, "sha256": eval_set.sha256},
            versions={"hik_sim": hik_sim.__version__, "torch": torch.__version__}, init=init,
        )

    # Tensors that took part in a collective stay referenced until the process group is gone: if the
    # group's worker thread held the last reference to one, it would need the GIL to free it while the
    # main thread, holding the GIL, waits for that thread in the group's destructor (a deadlock seen
    # with gloo at the end of a run).
    collective_tensors: list[torch.Tensor] = [torch.empty(0)]

    def save(card: Card) -> Path | None:
        """Rank 0 writes the checkpoint; every rank must call it (the generator states are gathered)."""
        generators = [generator.get_state()]
        if world > 1:  # every rank's state (same size on every rank), through the collective's own device
            mine = generator.get_state().to(device)
            gathered = [torch.empty_like(mine) for _ in range(world)]
            torch.distributed.all_gather(gathered, mine)
            collective_tensors.extend([mine, *gathered])
            generators = [g.cpu() for g in gathered]
        if out is None:
            return None
        resume_state = {"optimizer": optimizer.state_dict(), "loss": loss_fn.state_dict(), "generator": generators[0],
                        "generators": generators, "step": step, "elapsed": card.training_seconds, "history": history,
                        "stream": stream.state_dict()}
        return save_checkpoint(out, network, card, resume_state)

    def agreed(now: float, stopping: bool) -> tuple[float, bool]:
        """The slowest rank's clock [s], and whether any rank was asked to stop: the same on every rank."""
        if world == 1:
            return now, stopping
        flags = torch.tensor([now, float(stopping)], dtype=torch.float64, device=device)
        torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
        collective_tensors[:1] = [flags]  # the last one; see collective_tensors
        return float(flags[0]), bool(flags[1] > 0)

    step_loss = torch.compile(batch_loss) if config.compile else batch_loss

    with _denormals_flushed(device), _StopRequest() as stop:
        now, stopping = agreed(elapsed(), False)
        saved_at = now
        while step < config.steps and now < budget_s and not stopping:
            batch = next(stream)
            lr = _learning_rate(config, step, max(step / config.steps, now / budget_s))
            for group in optimizer.param_groups:
                group["lr"] = lr
            terms, pose_error = step_loss(batch.pos, batch.quat, batch.q)
            if pose_error is not None:
                stream.observe(batch.q, pose_error)
            optimizer.zero_grad(set_to_none=True)
            terms.total.backward()
            torch.nn.utils.clip_grad_norm_(network.parameters(), config.grad_clip)
            optimizer.step()
            if world > 1 and isinstance(loss_fn, CompositeLoss):  # one β for all ranks: average the running error each rank folded its own batch into
                torch.distributed.all_reduce(loss_fn.running_error)
                loss_fn.running_error.div_(world)
            step += 1
            bar.update(1)
            now, stopping = agreed(elapsed(), stop.signal is not None)
            last = step >= config.steps or now >= budget_s or stopping
            if rank == 0 and (step % config.eval_every == 0 or last):
                metrics = {"step": step, "elapsed_s": elapsed(), "loss": float(terms.total.detach()), "beta": float(terms.beta),
                           "entropy": float(terms.entropy.detach()), **evaluate_network(network, chain, eval_set)}
                network.train()
                history.append(metrics)
                if config.keep_best and out is not None and validation_score(metrics) <= min(map(validation_score, history)):
                    save_checkpoint(best_path(out), network, card_now())  # weights and card only: a run resumes from `out`
                if curve is not None:
                    curve.update(history, final=last)
                bar.set_postfix(pos=f"{metrics['pos_mean_mm']:.1f}mm", rot=f"{metrics['rot_mean_deg']:.1f}°",
                                ok=f"{100 * metrics['success_5mm_2deg']:.1f}%", lr=f"{lr:.1e}")
            if not last and now - saved_at >= 60 * config.checkpoint_minutes:  # the agreed clock: every rank gathers
                save(card_now())
                saved_at = now
        bar.close()
        if curve is not None:
            curve.close()
        network.eval()
        card = card_now()
        path = save(card)  # still under the handlers: a signal now cannot cut the final save short
    if world > 1:
        torch.distributed.barrier()
        del step_loss, batch_loss, model  # the DDP wrapper holds the group: let it go before the group ends
    if started_group:
        torch.distributed.destroy_process_group()
    collective_tensors.clear()
    # a rank that was not signalled itself stops with the others (torchrun forwards a signal to every rank)
    return TrainResult(network, card, path, history, steps_this_run=step - first_step,
                       stopped_by=stop.signal or ("SIGTERM" if stopping else None))


def _rank_generator_state(state: dict[str, Any], rank: int, world: int, resume: str | os.PathLike[str]) -> torch.Tensor:
    """The batch generator state of ``rank`` in a checkpoint's resume state.

    Raises:
        TrainingError: the run was trained with another number of processes.
    """
    generators = state.get("generators")
    if generators is None:  # written before per-rank states were kept: rank 0's alone
        if world > 1:
            raise TrainingError(f"{resume} keeps the batch generator of one process only; resume it with one process, "
                                "or start a new run from its weights with --init-from")
        return state["generator"].cpu()
    if len(generators) != world:
        raise TrainingError(f"{resume} was trained by {len(generators)} process(es); resume it with as many "
                            f"(torchrun --nproc_per_node {len(generators)}), not {world}")
    return generators[rank].cpu()


def train_to_checkpoint(robot: str, config: dict[str, Any], path: str, threads: int | None = None) -> str:
    """Train a registered robot's network and write it to ``path`` without optimiser state: a worker
    process's job (``scripts/train_pretrained.py --parallel``), so every argument is plain data.

    Args:
        robot: registered robot name.
        config: :meth:`TrainConfig.to_json` of the run.
        path: the checkpoint to write.
        threads: torch threads for this process (default: torch's).

    Returns:
        ``path``.
    """
    from hik_sim.robots import get_robot

    if threads is not None:
        torch.set_num_threads(threads)
    result = train(get_robot(robot), TrainConfig.from_json(config), out=None, progress=False)
    save_checkpoint(path, result.network.cpu(), result.card)
    return path


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


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.train``: train an IK network and write its checkpoint and card."""
    from hik_sim.robots.cli import add_robot_arguments, robot_from_args

    parser = argparse.ArgumentParser(prog="python -m hik_sim.train", description=main.__doc__)
    add_robot_arguments(parser)
    defaults = TrainConfig()
    parser.add_argument("--model", choices=MODEL_KINDS, default=defaults.model, help="network (default harmoatt)")
    parser.add_argument("--steps", type=int, default=defaults.steps, help=f"optimiser steps (default {defaults.steps})")
    parser.add_argument("--minutes", type=float, default=None, help="wall-clock budget [min]; stops at steps or minutes")
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
    parser.add_argument("--sampling", choices=SAMPLINGS, default=defaults.sampling,
                        help="where training configurations fall (default uniform; limits: a share near the joint limits; "
                             "hard: a share replays the previous batch's worst-served configurations)")
    parser.add_argument("--tail-fraction", type=float, default=defaults.tail_fraction,
                        help=f"share of each batch in the tails with --sampling limits/hard (default {defaults.tail_fraction:g})")
    parser.add_argument("--seed", type=int, default=defaults.seed, help="seed (default 0)")
    parser.add_argument("--device", default=defaults.device, help="auto (default: cuda when available), cpu, cuda, cuda:N")
    parser.add_argument("--fix-joint", action="append", default=[], metavar="NAME=VALUE",
                        type=lambda t: _key_value(t, "--fix-joint"), help="hold a chain joint at VALUE [rad]; repeatable")
    parser.add_argument("--model-option", action="append", default=[], metavar="KEY=VALUE",
                        type=lambda t: _key_value(t, "--model-option"),
                        help="model constructor argument, e.g. hidden=512 (mlp) or channels=16 (harmoatt); repeatable")
    parser.add_argument("--no-adaptive-beta", action="store_true", help="plain Smooth-L1 on position (ablation)")
    parser.add_argument("--no-sign-invariant", action="store_true", help="plain quaternion loss (ablation)")
    parser.add_argument("--entropy-weight", type=float, default=defaults.loss.entropy_weight,
                        help=f"fusion-entropy weight λ, 0 = off (default {defaults.loss.entropy_weight})")
    parser.add_argument("--hypothesis-mix", type=float, default=defaults.loss.hypothesis_mix,
                        help="with several hypotheses: weight ε of all answers' mean loss beside the winner's "
                             f"(default {defaults.loss.hypothesis_mix}; 0 = pure winner-takes-all)")
    parser.add_argument("--limit-pull", type=float, default=defaults.loss.limit_pull,
                        help="with --model-option clamp_in_training=true: weight of the first joint's distance outside its "
                             "range before the clamp [tolerance units per rad], which pulls pinned answers back to the limit "
                             f"(default {defaults.loss.limit_pull:g}: off)")
    parser.add_argument("--eval-size", type=int, default=defaults.eval_size, help="validation targets (default 2000)")
    parser.add_argument("--eval-every", type=int, default=defaults.eval_every, help="steps between validations (default 100)")
    parser.add_argument("--out", type=Path, default=None, help="checkpoint path (default runs/train/<robot>/<model>.pt)")
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
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    argv = list(sys.argv[1:] if argv is None else argv)
    args = parser.parse_args(argv)
    try:
        robot = robot_from_args(args)
        fixed = tuple((name, _joint_value(name, value)) for name, value in args.fix_joint)
        loss = LossConfig(adaptive_beta=not args.no_adaptive_beta, sign_invariant=not args.no_sign_invariant,
                          entropy_weight=args.entropy_weight, hypothesis_mix=args.hypothesis_mix, limit_pull=args.limit_pull)
        config = TrainConfig(model=args.model, steps=args.steps, minutes=args.minutes, batch=args.batch, lr=args.lr,
                             seed=args.seed, device=args.device, fixed_joints=fixed,
                             model_options=tuple((k, _option_value(v)) for k, v in args.model_option), loss=loss,
                             eval_size=args.eval_size, eval_every=args.eval_every, compile=args.compile,
                             init_from=str(args.init_from) if args.init_from is not None else None,
                             checkpoint_minutes=args.checkpoint_minutes, objective=args.objective,
                             schedule=args.schedule, sampling=args.sampling, tail_fraction=args.tail_fraction,
                             warmup_steps=args.warmup_steps, keep_best=args.keep_best)
        out = args.out or Path("runs") / "train" / robot.name / f"{args.model}.pt"
        result = train(robot, config, out=out, resume=args.resume, progress=not args.no_progress, tensorboard=args.tensorboard)
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
