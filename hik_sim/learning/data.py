"""FK training data generated from the URDF alone: no data collection.

- :class:`JointSelection`: which chain joints the network outputs and which are held at fixed
  values (the hybrid-IK paper's constrained scenario holds joint 6 fixed).
- :class:`FKStream`: an endless stream of (q, pose) batches, q uniform in the joint limits, pose by
  batched FK, fresh every batch, reproducible from a ``torch.Generator``.
- :class:`EvalSet`: a fixed evaluation set defined by (robot, seed, size, fixed joints), with a
  SHA-256 that checkpoints and benchmark reports record.
- :class:`PoseNormalizer`: the network's input, position scaled to the robot's workspace bounds
  (measured from samples, stored with the model) and the quaternion with a canonical sign (w ≥ 0).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import Iterator, Mapping, NamedTuple

import torch

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import canonical_quaternion

__all__ = ["FKBatch", "JointSelection", "FKStream", "EvalSet", "make_eval_set", "PoseNormalizer"]


class FKBatch(NamedTuple):
    """Configurations and their end-effector poses.

    Attributes:
        q: (B, n) full chain configurations [rad or m].
        pos: (B, 3) [m], base frame.
        quat: (B, 4) wxyz, w ≥ 0.
    """

    q: torch.Tensor
    pos: torch.Tensor
    quat: torch.Tensor


@dataclass(frozen=True)
class JointSelection:
    """The chain's joints split into free ones (the network's output) and fixed ones.

    Attributes:
        joint_names: all chain joints, base → tip.
        fixed: joint name → value [rad or m] for the joints held fixed.
    """

    joint_names: tuple[str, ...]
    fixed: Mapping[str, float]

    def __post_init__(self) -> None:
        unknown = sorted(set(self.fixed) - set(self.joint_names))
        if unknown:
            raise HikError(f"cannot fix joints {unknown}: not in the chain; chain joints are: {', '.join(self.joint_names)}")
        if len(self.fixed) == len(self.joint_names):
            raise HikError("every chain joint is fixed; at least one joint must stay free")
        for name, value in self.fixed.items():
            if not math.isfinite(value):
                raise HikError(f"fixed value of joint {name!r} must be finite, got {value}")
        object.__setattr__(self, "fixed", dict(self.fixed))

    @classmethod
    def for_chain(cls, chain: Chain, fixed: Mapping[str, float] | None = None) -> "JointSelection":
        """A selection for ``chain``; fixed values must lie inside the joint limits.

        Raises:
            HikError: an unknown joint, a value outside its limits, or every joint fixed.
        """
        fixed = dict(fixed or {})
        selection = cls(chain.joint_names, fixed)
        robot = chain.robot
        for name, value in fixed.items():
            i = robot.joint_names.index(name)
            if not robot.lower[i] <= value <= robot.upper[i]:
                raise HikError(f"fixed value {value} of joint {name!r} is outside its limits [{robot.lower[i]}, {robot.upper[i]}]")
        return selection

    @property
    def free_names(self) -> tuple[str, ...]:
        """Names of the free joints, chain order."""
        return tuple(n for n in self.joint_names if n not in self.fixed)

    @property
    def free_index(self) -> list[int]:
        """Positions of the free joints in the chain."""
        return [i for i, n in enumerate(self.joint_names) if n not in self.fixed]

    def expand(self, q_free: torch.Tensor) -> torch.Tensor:
        """Full configurations (B, n) from free-joint values (B, n_free), fixed joints filled in."""
        if not self.fixed:
            return q_free
        full = q_free.new_empty((q_free.shape[0], len(self.joint_names)))
        full[:, self.free_index] = q_free
        for i, name in enumerate(self.joint_names):
            if name in self.fixed:
                full[:, i] = self.fixed[name]
        return full

    def free(self, q: torch.Tensor) -> torch.Tensor:
        """The free joints' values (B, n_free) of full configurations (B, n)."""
        return q[:, self.free_index] if self.fixed else q


def _sample(chain: Chain, selection: JointSelection, batch: int, generator: torch.Generator,
            dtype: torch.dtype, device: torch.device | str | None) -> FKBatch:
    q = chain.sample(batch, generator, dtype, device)
    q = selection.expand(selection.free(q))
    pose = chain.fk(q)
    return FKBatch(q, pose.pos, pose.quat)


class FKStream:
    """Endless (q, pose) batches: q uniform in the limits (fixed joints at their values), pose by FK.

    Args:
        chain: the robot's chain.
        batch: configurations per batch.
        generator: the source of randomness; the stream is reproducible from its seed.
        selection: fixed joints (none by default).
        dtype: float32 or float64.
        device: where batches live (the generator's device by default).
    """

    def __init__(self, chain: Chain, batch: int, generator: torch.Generator, selection: JointSelection | None = None,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None) -> None:
        if batch < 1:
            raise HikError(f"batch must be at least 1, got {batch}")
        self.chain, self.batch, self.generator = chain, batch, generator
        self.selection = selection or JointSelection(chain.joint_names, {})
        self.dtype, self.device = dtype, device

    def __iter__(self) -> Iterator[FKBatch]:
        return self

    def __next__(self) -> FKBatch:
        with torch.no_grad():
            return _sample(self.chain, self.selection, self.batch, self.generator, self.dtype, self.device)


@dataclass(frozen=True)
class EvalSet:
    """A fixed set of reachable targets.

    Attributes:
        robot: robot name.
        seed: generator seed.
        size: number of targets.
        fixed: fixed joints and values.
        batch: the targets (float64, CPU).
        sha256: hash of the robot's URDF, the definition and the targets' bytes.
    """

    robot: str
    seed: int
    size: int
    fixed: Mapping[str, float]
    batch: FKBatch
    sha256: str


def make_eval_set(chain: Chain, seed: int, size: int, selection: JointSelection | None = None) -> EvalSet:
    """The evaluation set defined by (robot, seed, size, fixed joints); always the same targets.

    Sampled in float64 on the CPU with its own generator, so it does not depend on the training
    device or dtype.
    """
    if size < 1:
        raise HikError(f"evaluation set size must be at least 1, got {size}")
    selection = selection or JointSelection(chain.joint_names, {})
    batch = _sample(chain, selection, size, torch.Generator().manual_seed(seed), torch.float64, "cpu")
    digest = hashlib.sha256()
    digest.update(chain.robot.urdf_sha256().encode())
    digest.update(repr((chain.robot.name, seed, size, sorted(selection.fixed.items()))).encode())
    for tensor in batch:
        digest.update(tensor.numpy().tobytes())
    return EvalSet(chain.robot.name, seed, size, dict(selection.fixed), batch, digest.hexdigest())


class PoseNormalizer(torch.nn.Module):
    """Network input from a pose: position scaled to [-1, 1] over the workspace bounds, quaternion w ≥ 0.

    Args:
        pos_min: (3,) lower workspace bound [m].
        pos_max: (3,) upper workspace bound [m].
    """

    def __init__(self, pos_min: torch.Tensor, pos_max: torch.Tensor) -> None:
        super().__init__()
        if pos_min.shape != (3,) or pos_max.shape != (3,) or not bool((pos_max > pos_min).all()):
            raise HikError(f"workspace bounds must be two (3,) tensors with max > min, got {pos_min} and {pos_max}")
        self.register_buffer("pos_min", pos_min.detach().clone().float())
        self.register_buffer("pos_max", pos_max.detach().clone().float())

    @classmethod
    def measure(cls, chain: Chain, selection: JointSelection | None = None, samples: int = 100_000, seed: int = 0,
                margin: float = 0.02) -> "PoseNormalizer":
        """Bounds of the reachable positions, from ``samples`` FK samples, widened by ``margin`` of the span."""
        batch = _sample(chain, selection or JointSelection(chain.joint_names, {}), samples,
                        torch.Generator().manual_seed(seed), torch.float64, "cpu")
        low, high = batch.pos.min(0).values, batch.pos.max(0).values
        span = (high - low).clamp_min(1e-3)
        return cls(low - margin * span, high + margin * span)

    @property
    def scale(self) -> float:
        """Half the diagonal of the workspace box [m]: the position scale for losses."""
        return float((self.pos_max - self.pos_min).norm() / 2)

    def forward(self, pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        """(B, 3) [m] and (B, 4) wxyz → (B, 7) network input."""
        pos_min, pos_max = self.pos_min.to(pos.dtype), self.pos_max.to(pos.dtype)
        scaled = 2 * (pos - pos_min) / (pos_max - pos_min) - 1
        return torch.cat((scaled, canonical_quaternion(quat)), dim=-1)
