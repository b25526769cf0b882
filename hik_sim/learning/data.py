"""FK training data generated from the URDF alone: no data collection.

- :class:`JointSelection`: which chain joints the network outputs and which are held at fixed
  values (the hybrid-IK paper's constrained scenario holds joint 6 fixed).
- :class:`FKStream`: an endless stream of (q, pose) batches, pose by batched FK, fresh every batch,
  reproducible from a ``torch.Generator``; q uniform in the joint limits, or with a share of each
  batch placed in the tails (:data:`SAMPLINGS`: near the joint limits, or replaying the previous
  batch's worst-served configurations).
- :class:`EvalSet`: a fixed evaluation set defined by (robot, seed, size, fixed joints), with a
  SHA-256 that checkpoints and benchmark reports record.
- :class:`PoseNormalizer`: the network's input, position scaled to the robot's workspace bounds
  (measured from samples, stored with the model) and the quaternion with a canonical sign (w ≥ 0).
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from typing import TYPE_CHECKING, Iterator, Mapping, NamedTuple

import torch

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import canonical_quaternion

if TYPE_CHECKING:
    from hik_sim.learning.models.regression import BranchRegion

__all__ = ["FKBatch", "JointSelection", "SAMPLINGS", "FKStream", "EvalSet", "make_eval_set", "PoseNormalizer"]


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


def _branch_region(chain: Chain) -> BranchRegion:
    from hik_sim.learning.models.regression import branch_region

    return branch_region(chain.robot.name)


def _sample(chain: Chain, selection: JointSelection, batch: int, generator: torch.Generator,
            dtype: torch.dtype, device: torch.device | str | None, one_branch: bool = False) -> FKBatch:
    q = _branch_region(chain).sample(chain, batch, generator, dtype, device) if one_branch else chain.sample(batch, generator, dtype, device)
    q = selection.expand(selection.free(q))
    pose = chain.fk(q)
    return FKBatch(q, pose.pos, pose.quat)


SAMPLINGS = ("uniform", "limits", "hard", "one_branch")
"""Where a training batch's configurations fall (:class:`FKStream`):

- ``uniform``: every configuration uniform in the joint limits (CycleIK's and the default);
- ``limits``: a share of each batch (``tail_fraction``) with each free joint, with probability ½,
  within ``limit_band`` of its range from one of its limits (the rest uniform): the answers a
  network must give at its output's saturation;
- ``hard``: a share of each batch replays the previous batch's configurations with the largest
  error (as reported by :meth:`FKStream.observe`), each joint moved by Gaussian noise
  (``replay_noise`` [rad]) and kept in the limits: hard-example mining, which finds the tails
  wherever they are (solution-branch boundaries, near the base axis, joint limits) without naming them;
- ``one_branch``: every configuration uniform in one IK branch of the robot
  (:func:`hik_sim.learning.models.regression.branch_region`; the IRB120's: shoulder in front, elbow up, wrist
  not flipped, joint 6 within one turn), where a pose has one answer: the training data under which the
  hybrid paper's supervised regression is well posed.
"""


class FKStream:
    """Endless (q, pose) batches: q in the limits (fixed joints at their values), pose by FK.

    Args:
        chain: the robot's chain.
        batch: configurations per batch.
        generator: the source of randomness; the stream is reproducible from its seed (and, for
            ``hard``, from the errors it was shown).
        selection: fixed joints (none by default).
        dtype: float32 or float64.
        device: where batches live (the generator's device by default).
        sampling: one of :data:`SAMPLINGS`.
        tail_fraction: the share of each batch placed in the tails (``limits``, ``hard``), in [0, 1).
        limit_band: ``limits``: the band next to a limit, as a fraction of the joint's range.
        replay_noise: ``hard``: the standard deviation of the noise added to replayed joints [rad].

    Raises:
        HikError: a batch under 1, an unknown sampling, or a fraction or band outside its range.
    """

    def __init__(self, chain: Chain, batch: int, generator: torch.Generator, selection: JointSelection | None = None,
                 dtype: torch.dtype = torch.float32, device: torch.device | str | None = None, sampling: str = "uniform",
                 tail_fraction: float = 0.25, limit_band: float = 0.02, replay_noise: float = 0.02) -> None:
        if batch < 1:
            raise HikError(f"batch must be at least 1, got {batch}")
        if sampling not in SAMPLINGS:
            raise HikError(f"unknown sampling {sampling!r}; samplings are: {', '.join(SAMPLINGS)}")
        if not 0 <= tail_fraction < 1 or not 0 < limit_band <= 0.5 or not replay_noise >= 0:
            raise HikError(f"tail_fraction must be in [0, 1), limit_band in (0, 0.5] and replay_noise >= 0; got "
                           f"{tail_fraction}, {limit_band}, {replay_noise}")
        self.chain, self.batch, self.generator = chain, batch, generator
        self.selection = selection or JointSelection(chain.joint_names, {})
        self.dtype, self.device = dtype, device
        self.sampling, self.limit_band, self.replay_noise = sampling, limit_band, replay_noise
        self.tail = 0 if sampling in ("uniform", "one_branch") else round(tail_fraction * batch)
        self.region = _branch_region(chain) if sampling == "one_branch" else None
        self.hard: torch.Tensor | None = None  # (tail, n): the configurations the next batch replays

    def __iter__(self) -> Iterator[FKBatch]:
        return self

    def __next__(self) -> FKBatch:
        with torch.no_grad():
            q = self.chain.sample(self.batch, self.generator, self.dtype, self.device) if self.region is None \
                else self.region.sample(self.chain, self.batch, self.generator, self.dtype, self.device)
            if self.tail and self.sampling == "limits":
                q[:self.tail] = self._near_limits(q[:self.tail])
            elif self.tail and self.sampling == "hard" and self.hard is not None:
                q[:len(self.hard)] = self._replayed(self.hard.to(q))
            q = self.selection.expand(self.selection.free(q))
            pose = self.chain.fk(q)
            return FKBatch(q, pose.pos, pose.quat)

    def observe(self, q: torch.Tensor, error: torch.Tensor) -> None:
        """Show the stream how well its last batch was served (``hard`` keeps the worst; others ignore it).

        Args:
            q: (B, n) the batch's configurations.
            error: (B,) each configuration's error, any unit where larger is worse.
        """
        if self.sampling == "hard" and self.tail:
            worst = error.detach().topk(min(self.tail, len(error))).indices
            self.hard = q.detach()[worst].clone()

    def state_dict(self) -> dict[str, torch.Tensor | None]:
        """What a resumed run needs to continue the stream (the replay pool; the generator is saved apart)."""
        return {"hard": None if self.hard is None else self.hard.cpu()}

    def load_state_dict(self, state: dict[str, torch.Tensor | None]) -> None:
        """Restore :meth:`state_dict`."""
        hard = state.get("hard")
        self.hard = None if hard is None else hard.to(dtype=self.dtype, device=self.device)

    def _near_limits(self, q: torch.Tensor) -> torch.Tensor:
        """``q`` with each joint, with probability ½, moved into the band next to a random one of its limits."""
        lower, upper = self.chain.limits(q.dtype, q.device)
        u = torch.rand(q.shape + (3,), generator=self.generator, dtype=q.dtype, device=q.device)
        depth = u[..., 0] * self.limit_band * (upper - lower)
        near = torch.where(u[..., 1] < 0.5, lower + depth, upper - depth)
        return torch.where(u[..., 2] < 0.5, near, q)

    def _replayed(self, q: torch.Tensor) -> torch.Tensor:
        """``q`` moved by Gaussian noise (``replay_noise`` [rad]) and kept in the limits."""
        noise = torch.randn(q.shape, generator=self.generator, dtype=q.dtype, device=q.device) * self.replay_noise
        return self.chain.clamp(q + noise)


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


def make_eval_set(chain: Chain, seed: int, size: int, selection: JointSelection | None = None,
                  one_branch: bool = False) -> EvalSet:
    """The evaluation set defined by (robot, seed, size, fixed joints); always the same targets.

    Sampled in float64 on the CPU with its own generator, so it does not depend on the training
    device or dtype. ``one_branch``: configurations from the robot's one-branch region (sampling
    ``one_branch``) instead of the whole joint box; the hash records it.
    """
    if size < 1:
        raise HikError(f"evaluation set size must be at least 1, got {size}")
    selection = selection or JointSelection(chain.joint_names, {})
    batch = _sample(chain, selection, size, torch.Generator().manual_seed(seed), torch.float64, "cpu", one_branch)
    digest = hashlib.sha256()
    digest.update(chain.robot.urdf_sha256().encode())
    digest.update(repr((chain.robot.name, seed, size, sorted(selection.fixed.items()))).encode())
    if one_branch:
        digest.update(b"one_branch")
    for tensor in batch:
        digest.update(tensor.numpy().tobytes())
    return EvalSet(chain.robot.name, seed, size, dict(selection.fixed), batch, digest.hexdigest())


class PoseNormalizer(torch.nn.Module):
    """Network input from a pose: position scaled to [-1, 1] over the workspace bounds, quaternion w ≥ 0.

    Args:
        pos_min: (3,) lower workspace bound [m].
        pos_max: (3,) upper workspace bound [m].
    """

    pos_min: torch.Tensor  # registered buffers
    pos_max: torch.Tensor

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
