"""Run under ``torchrun --nproc_per_node 2``: train a tiny network with DDP and write what each rank
holds (its weights, its steps, its first batch, its batch generator's final state, its adaptive β
statistic) to ``<dir>/rank<R>.pt``, for the DDP tests in tests/test_training.py. Not a test module.

Usage: ``torchrun --nproc_per_node 2 tests/ddp_probe.py DIR STEPS [--minutes M] [--resume]``.
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path

import torch

import hik_sim.learning.train as train_module
from hik_sim.robots import get_robot
from hik_sim.learning.train import TrainConfig, train

seen: dict[str, object] = {}


class RecordedStream(train_module.FKStream):
    """The trainer's batch stream, remembering itself and its first batch."""

    def __next__(self):  # noqa: ANN204
        batch = super().__next__()
        seen.setdefault("first_q", batch.q.clone())
        seen["stream"] = self
        return batch


class RecordedLoss(train_module.CompositeLoss):
    """The trainer's loss, remembering itself."""

    def __init__(self, *args, **kwargs) -> None:  # noqa: ANN002, ANN003
        super().__init__(*args, **kwargs)
        seen["loss"] = self


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("folder", type=Path)
    parser.add_argument("steps", type=int)
    parser.add_argument("--minutes", type=float, default=None)
    parser.add_argument("--resume", action="store_true")
    args = parser.parse_args()
    train_module.FKStream, train_module.CompositeLoss = RecordedStream, RecordedLoss
    config = TrainConfig(model="mlp", steps=args.steps, minutes=args.minutes, batch=32, lr=3e-3, warmup_steps=2, device="cpu",
                         model_options=(("hidden", 16), ("layers", 2)), eval_size=64, eval_every=10**6,
                         normalizer_samples=2000)
    result = train(get_robot("irb120"), config, out=args.folder / "run.pt",
                   resume=args.folder / "run.pt" if args.resume else None, progress=False)
    torch.save({"state_dict": result.network.state_dict(), "steps": result.card.steps, "first_q": seen["first_q"],
                "generator": seen["stream"].generator.get_state(), "running_error": float(seen["loss"].running_error)},
               args.folder / f"rank{os.environ['RANK']}.pt")


if __name__ == "__main__":
    main()
