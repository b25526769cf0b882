"""Training IK networks from the URDF alone: ``python -m hik_sim.train``.

Every step draws a fresh batch of configurations uniform in the joint limits (or with a share in the
tails, ``--sampling``: :data:`~hik_sim.learning.data.SAMPLINGS`), computes their poses
by batched FK (:class:`~hik_sim.kinematics.chain.Chain`), asks the network for joints that reach those
poses, and minimises the :class:`~hik_sim.learning.losses.CompositeLoss` of the poses those joints reach
(FK again, differentiable). AdamW with a short warm-up and a cosine decay over the budget (steps or
minutes; ``--schedule constant`` keeps the peak rate). A progress bar over the budget (steps or minutes,
whichever ends first: :mod:`~hik_sim.learning.train_progress`) shows the ETA and the mean position [mm] and
rotation [°] error on a fixed validation set, validated every ``eval_every`` steps and, in a timed run, by the
clock too; a run whose budget ends before its first step still validates once. The result is a
checkpoint with its card (:mod:`hik_sim.learning.checkpoint`), resumable;
with ``--keep-best`` also the best validation's weights beside it (``<stem>.best.pt``).

Nothing is lost to an interruption: the output path is checked before the first step, the run
saves a resumable checkpoint every ``checkpoint_minutes``, and Ctrl-C (SIGINT) or SIGTERM ends it
after the current step with a checkpoint and the command that resumes it (a second Ctrl-C quits at
once). ``--resume`` continues to the requested ``--steps``/``--minutes``: an uninterrupted run and
an interrupted one resumed with the same command end with the same weights (on the CPU, with a
step budget).

Every path is checked before the first step (:mod:`~hik_sim.learning.train_paths`: names too long, a file that
is not a checkpoint, the shipped networks' folder), a resumed or started-from checkpoint must fit the run
(:mod:`~hik_sim.learning.train_resume`), a loss that turns NaN or inf stops the run naming the learning rate,
and a checkpoint that cannot be written (a full disk) says which one is kept. The command line is
:mod:`~hik_sim.learning.train_cli`, the configuration :mod:`~hik_sim.learning.train_options`.

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
default for ``regression``). docs/papers.md says where these follow their papers and where not.

Examples of the command: :mod:`~hik_sim.learning.train_cli`.
"""

from __future__ import annotations

import math
import os
import sys
import time
from dataclasses import replace
from pathlib import Path
from typing import Any, NamedTuple

import torch

import hik_sim
from hik_sim.errors import HikError, TrainingError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.learning.accuracy import evaluate_network
from hik_sim.learning.checkpoint import Card, save_checkpoint
from hik_sim.learning.data import FKStream, JointSelection, PoseNormalizer, make_eval_set
from hik_sim.learning.losses import CompositeLoss, CycleIKLoss, LossTerms, RegressionLoss
from hik_sim.learning.models import parameter_count, size_options
from hik_sim.learning.network import IKNetwork
from hik_sim.learning.train_options import COMPOSITE_LR, OBJECTIVES, TrainConfig, best_path, cycleik_settings, validation_score
from hik_sim.learning.train_paths import check_run_paths, kept_checkpoint, non_finite_weights, written_or_explained
from hik_sim.learning.train_progress import TrainingProgress, ValidationClock
from hik_sim.learning.train_resume import initialise_from, rank_generator_state, read_resume
from hik_sim.learning.train_runtime import StopRequest, denormals_flushed, git_commit, training_device
from hik_sim.learning.training_log import TrainingLog
from hik_sim.robots import RobotSpec

__all__ = ["TrainConfig", "TrainResult", "train", "train_to_checkpoint", "evaluate_network", "OBJECTIVES",
           "cycleik_settings", "validation_score", "best_path"]


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


def _pose_error(pos: torch.Tensor, quat: torch.Tensor, target_pos: torch.Tensor, target_quat: torch.Tensor) -> torch.Tensor:
    """Position error [m] plus rotation error [rad] × 0.1 m, (...,): one number per pose to rank them by."""
    return position_error(pos, target_pos) + 0.1 * rotation_error(quat, target_quat)


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
          tensorboard: str | os.PathLike[str] | None = None, force: bool = False) -> TrainResult:
    """Train an IK network for ``robot``.

    Args:
        robot: the robot.
        config: the training configuration.
        out: where to write the checkpoint (and its ``.json`` card) and, beside it, the validation
            curve (``<stem>.curve.csv`` and ``.png``, updated after every validation:
            :class:`~hik_sim.learning.training_log.TrainingLog`); ``None``: write nothing.
        resume: a checkpoint to continue from (same robot, model, options, fixed joints and objective).
        progress: show a progress bar over the budget (steps or minutes) with its ETA.
        tensorboard: also log every validation to this TensorBoard directory (needs ``tensorboard``).
        force: let ``out`` overwrite a file that is not a checkpoint, or lie in the shipped networks' folder
            (:func:`~hik_sim.learning.train_paths.check_output_path`).

    Returns:
        :class:`TrainResult`.

    Raises:
        HikError: bad configuration, paths, fixed joints, device, or resume checkpoint; a loss that became NaN or
            inf (the learning rate); a checkpoint that could not be written (naming the one that is kept); memory
            exhausted by the batch, validation set or network size.
    """
    rank = int(os.environ.get("RANK", "0"))
    if rank == 0:  # before any work, not after it
        out = check_run_paths(out, resume, config.init_from, tensorboard, force=force, keep_best=config.keep_best)
    try:
        return _train(robot, config, None if out is None or rank != 0 else Path(out), resume, progress, tensorboard)
    except (torch.OutOfMemoryError, MemoryError, RuntimeError) as exc:
        if isinstance(exc, RuntimeError) and not isinstance(exc, torch.OutOfMemoryError) and "allocate" not in str(exc):
            raise
        raise TrainingError(f"out of memory training {config.model} (batch {config.batch}, eval_size {config.eval_size}, "
                            f"model options {dict(config.model_options)}): lower --batch, --eval-size or the network's "
                            f"size (--model-option) ({str(exc)[:160]})") from None


def _train(robot: RobotSpec, config: TrainConfig, out: Path | None, resume: str | os.PathLike[str] | None, progress: bool,
           tensorboard: str | os.PathLike[str] | None) -> TrainResult:
    world = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    curve: TrainingLog | None = TrainingLog(out, tensorboard if rank == 0 else None, title=f"{robot.name} {config.model}") \
        if rank == 0 and (out is not None or tensorboard is not None) else None
    device = training_device(config.device, local_rank)
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
    eval_set = make_eval_set(chain, config.eval_seed, config.eval_size, selection, one_branch=config.sampling == "one_branch")
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
        init = initialise_from(network, config, robot, Path(config.init_from))
    assert config.lr is not None  # TrainConfig.__post_init__ fills it in
    if config.objective == "cycleik":  # CycleIK's optimiser: Adam, betas (0.9, 0.999), no weight decay
        optimizer: torch.optim.Optimizer = torch.optim.Adam(network.parameters(), lr=config.lr, betas=(0.9, 0.999))
    else:
        optimizer = torch.optim.AdamW(network.parameters(), lr=config.lr, weight_decay=config.weight_decay)
    generator = torch.Generator(device=device).manual_seed(config.seed + 1000 * rank)
    step, elapsed_before, history = 0, 0.0, []
    stream_state: dict[str, Any] | None = None
    if resume is not None:
        resumed = read_resume(resume, config, robot, device)
        try:
            network.load_state_dict(resumed.state_dict)
            optimizer.load_state_dict(resumed.resume["optimizer"])
            loss_fn.load_state_dict(resumed.resume["loss"])
        except (RuntimeError, ValueError, KeyError) as exc:
            raise TrainingError(f"resume (--resume) {resume}: its state does not fit this run ({str(exc)[:300]})") from None
        init = resumed.init
        generator.set_state(rank_generator_state(resumed.resume, rank, world, resume))
        stream_state = resumed.resume.get("stream")
        step, elapsed_before = int(resumed.resume["step"]), float(resumed.resume["elapsed"])
        history = list(resumed.resume["history"])
    first_step = step
    model: torch.nn.Module = network  # what the steps call: the network, or its DistributedDataParallel wrapper
    if world > 1:
        model = torch.nn.parallel.DistributedDataParallel(network, device_ids=[device.index] if device.type == "cuda" else None)
    stream = FKStream(chain, config.batch, generator, selection, torch.float32, device, sampling=config.sampling,
                      tail_fraction=config.tail_fraction)
    if resume is not None and stream_state is not None:  # the hard-example pool (rank 0's: the ranks' pools differ only by batch)
        stream.load_state_dict(stream_state)
    budget_s = config.minutes * 60 if config.minutes is not None else math.inf
    bar = TrainingProgress(config.steps, budget_s, step, elapsed_before, progress and rank == 0, f"{robot.name} {config.model}")
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
            device=str(device) + (f" x{world}" if world > 1 else ""), git_commit=git_commit(),
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
        return written_or_explained(out, lambda: save_checkpoint(out, network, card, resume_state), step, out)

    def agreed(now: float, stopping: bool) -> tuple[float, bool]:
        """The slowest rank's clock [s], and whether any rank was asked to stop: the same on every rank."""
        if world == 1:
            return now, stopping
        flags = torch.tensor([now, float(stopping)], dtype=torch.float64, device=device)
        torch.distributed.all_reduce(flags, op=torch.distributed.ReduceOp.MAX)
        collective_tensors[:1] = [flags]  # the last one; see collective_tensors
        return float(flags[0]), bool(flags[1] > 0)

    diverged = torch.zeros((), dtype=torch.bool, device=device)  # a step's loss was NaN or inf (no sync per step)

    def diverged_error(lr: float, what: str = "the loss became NaN or inf") -> TrainingError:
        return TrainingError(f"{what} by step {step} at learning rate {lr:.3g} (peak lr {config.lr:g}): lower lr (--lr; "
                             f"the default is {COMPOSITE_LR:g}) or grad_clip; {kept_checkpoint(out)}")

    def check_finite(lr: float) -> None:
        """Stop with a TrainingError once a loss was not finite; every rank calls it at the same steps."""
        flag = diverged.to(torch.float64).reshape(1)
        if world > 1:
            torch.distributed.all_reduce(flag, op=torch.distributed.ReduceOp.MAX)
            collective_tensors.append(flag)
        if bool(flag[0] > 0):
            raise diverged_error(lr)

    def validate(terms: LossTerms | None, lr: float | None, final: bool) -> None:
        nonlocal metrics, curve
        begun = elapsed()
        losses = {} if terms is None else {"loss": float(terms.total.detach()), "beta": float(terms.beta),
                                           "entropy": float(terms.entropy.detach())}
        metrics = {"step": step, "elapsed_s": begun, **losses, **evaluate_network(network, chain, eval_set)}
        evaluated = elapsed()  # the validation's own time, without the curve's plot (redrawn at most every 30 s)
        network.train()
        history.append(metrics)
        if config.keep_best and out is not None and validation_score(metrics) <= min(map(validation_score, history)):
            best = best_path(out)  # weights and card only: a run resumes from `out`
            written_or_explained(best, lambda: save_checkpoint(best, network, card_now()), step, out)
        if curve is not None:
            try:
                curve.update(history, final=final)
            except HikError as exc:  # a full disk: the checkpoints matter more than the curve
                print(f"warning: {exc}; the run goes on without its curve", file=sys.stderr)
                curve = None
        clock.done(begun, evaluated, elapsed())
        bar.validated(metrics, lr if lr is not None else math.nan)

    if config.compile and isinstance(loss_fn, CompositeLoss):
        loss_fn.prepare_for_compile()
    step_loss = torch.compile(batch_loss) if config.compile else batch_loss
    terms: LossTerms | None = None
    lr: float | None = None
    with denormals_flushed(device), StopRequest() as stop:
        now, stopping = agreed(elapsed(), False)
        saved_at = now
        clock = ValidationClock(config.eval_seconds, budget_s, now)
        try:
            while step < config.steps and now < budget_s and not stopping:
                batch = next(stream)
                lr = _learning_rate(config, step, max(step / config.steps, now / budget_s))
                for group in optimizer.param_groups:
                    group["lr"] = lr
                try:
                    terms, pose_error = step_loss(batch.pos, batch.quat, batch.q)
                except HikError:  # on the run's own samples only answers that are not finite: the weights diverged
                    if step > first_step or non_finite_weights(network.state_dict()):
                        raise diverged_error(lr, "the weights became NaN or inf") from None
                    raise
                if pose_error is not None:
                    stream.observe(batch.q, pose_error)
                optimizer.zero_grad(set_to_none=True)
                terms.total.backward()
                torch.nn.utils.clip_grad_norm_(network.parameters(), config.grad_clip)
                optimizer.step()
                diverged |= ~torch.isfinite(terms.total.detach())
                if world > 1 and isinstance(loss_fn, CompositeLoss):  # one β for all ranks: average the running error each rank folded its own batch into
                    torch.distributed.all_reduce(loss_fn.running_error)
                    loss_fn.running_error.div_(world)
                step += 1
                now, stopping = agreed(elapsed(), stop.signal is not None)
                last = step >= config.steps or now >= budget_s or stopping
                by_steps = step % config.eval_every == 0 or last
                save_due = not last and now - saved_at >= 60 * config.checkpoint_minutes  # the agreed clock
                by_time = rank == 0 and clock.due(now)
                if by_steps or save_due or (by_time and world == 1):
                    check_finite(lr)
                if rank == 0 and (by_steps or by_time):
                    validate(terms, lr, last)
                bar.update(step, elapsed())
                if save_due:  # every rank gathers
                    save(card_now())
                    saved_at = now
            if lr is not None:
                check_finite(lr)
            if rank == 0 and (not history or history[-1]["step"] != step):  # a budget that ended before its first step
                validate(terms, lr, True)
        finally:
            bar.close(step, elapsed(), finished=step >= config.steps or elapsed() >= budget_s)
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
