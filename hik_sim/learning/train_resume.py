"""Starting a run from a checkpoint: resuming it (``--resume``) or taking its weights (``--init-from``).

Both check the checkpoint before using it, and say what differs instead of failing inside torch: the robot, the
model, its options (``--model-option``), the fixed joints (``--fix-joint``), the objective; weights holding NaN or inf
are refused (a run from them would only ever answer NaN).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Mapping, NamedTuple

import torch

from hik_sim.errors import TrainingError
from hik_sim.learning.checkpoint import Card, read_checkpoint
from hik_sim.learning.network import IKNetwork
from hik_sim.learning.train_options import TrainConfig
from hik_sim.learning.train_paths import non_finite_weights
from hik_sim.robots import RobotSpec

__all__ = ["ResumeState", "read_resume", "initialise_from", "option_differences", "rank_generator_state"]


class ResumeState(NamedTuple):
    """What a resumed run continues from.

    Attributes:
        state_dict: the network's weights.
        resume: the checkpoint's resume state (optimiser, loss, generators, step, elapsed, history, stream).
        init: the lineage its card records (:attr:`~hik_sim.learning.checkpoint.Card.init`).
    """

    state_dict: dict[str, torch.Tensor]
    resume: dict[str, Any]
    init: dict[str, Any]


def _plain(value: Any) -> Any:
    return json.loads(json.dumps(value, default=str))


def option_differences(have: Mapping[str, Any], want: Mapping[str, Any]) -> list[str]:
    """``name: checkpoint A, this run B`` for every option whose value differs (absent: ``-``)."""
    have, want = _plain(dict(have)), _plain(dict(want))
    return [f"{key}: checkpoint {have.get(key, '-')}, this run {want.get(key, '-')}"
            for key in sorted(set(have) | set(want)) if have.get(key, "-") != want.get(key, "-")]


def _check_finite(state: Mapping[str, Any], path: str | os.PathLike[str], what: str) -> None:
    broken = non_finite_weights(state)
    if broken:
        raise TrainingError(f"{what} {path}: its weights hold NaN or inf ({', '.join(broken[:3])}"
                            f"{', …' if len(broken) > 3 else ''}); a run from them would answer NaN: use an earlier "
                            "checkpoint, or train from scratch")


def read_resume(path: str | os.PathLike[str], config: TrainConfig, robot: RobotSpec, device: torch.device) -> ResumeState:
    """Read and check the checkpoint a run resumes (``config`` with its model's sizes filled in).

    Raises:
        HikError: the checkpoint is unreadable, holds no resume state or non-finite weights, or was trained for
            another robot, model, objective, model options or fixed joints (the message lists what differs).
    """
    what = "resume (--resume)"
    payload = read_checkpoint(path, map_location=device)
    state = payload.get("resume")
    if state is None:
        raise TrainingError(f"{path} holds no training state to resume from (it was saved without it, e.g. a shipped "
                            "network); use --init-from to start a new run from its weights")
    card = Card.from_json(payload["card"])
    card.check_robot(robot)
    if card.model != config.model:
        raise TrainingError(f"{path} is a {card.model!r} model, the config asks for {config.model!r}")
    trained_objective = TrainConfig.from_json(card.config).objective
    if trained_objective != config.objective:
        raise TrainingError(f"{path} was trained with the {trained_objective!r} objective, this run asks for {config.objective!r}")
    differences = [f"model option {d}" for d in option_differences(card.model_options, dict(config.model_options))]
    differences += [f"fixed joint {d}" for d in option_differences(card.fixed_joints, dict(config.fixed_joints))]
    if differences:
        raise TrainingError(f"{what} {path} was trained with another network than this run asks for ({'; '.join(differences)}): "
                            "resume with its --model-option and --fix-joint values, or start a new run from its weights "
                            "with --init-from (only hypotheses may grow there)")
    _check_finite(payload["state_dict"], path, what)
    return ResumeState(dict(payload["state_dict"]), state, dict(card.init))


def initialise_from(network: IKNetwork, config: TrainConfig, robot: RobotSpec, path: Path) -> dict[str, Any]:
    """Load the weights of checkpoint ``path`` into ``network`` (see ``TrainConfig.init_from``); its lineage for the card.

    Raises:
        HikError: the checkpoint is unreadable, for another robot, or for another network.
    """
    payload = read_checkpoint(path)
    card = Card.from_json(payload["card"])
    card.check_robot(robot)
    _check_finite(payload["state_dict"], path, "init_from (--init-from)")
    options = {k: v for k, v in card.model_options.items() if k != "hypotheses"}
    wanted = {k: v for k, v in dict(config.model_options).items() if k != "hypotheses"}
    if card.model != config.model or dict(card.fixed_joints) != dict(config.fixed_joints) or options != wanted:
        raise TrainingError(f"init_from (--init-from) {path} holds a {card.model!r} network with fixed joints {dict(card.fixed_joints)} and options "
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




def rank_generator_state(state: dict[str, Any], rank: int, world: int, resume: str | os.PathLike[str]) -> torch.Tensor:
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
