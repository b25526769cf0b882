"""Flip symmetries of a chain: three joints that reach every pose two ways.

Three consecutive revolute joints i, i+1, i+2 whose axes form a roll–pitch–roll triple (the
outer two parallel when the middle one is at zero, the middle one perpendicular to both, all
three through one point: an industrial arm's spherical wrist, the Panda's shoulder) give every
pose a second configuration:

    FK(…, q_i + π, −q_{i+1}, q_{i+2} + π, …) = FK(…, q_i, q_{i+1}, q_{i+2}, …)

(Euler angles: R_z(α) R_y(β) R_z(γ) = R_z(α + π) R_y(−β) R_z(γ + π)). Where the flipped values lie
inside the joint limits, the flip is another exact answer, often on the far side of a limit that
held a local solver back. :class:`~hik_sim.solvers.hybrid.HybridIK` starts LM from the flip of a run
that ended short of exact, before any further seed: on the IRB120 the wrist flip of such a run
pinned at a wrist limit reaches exact for about 6 in 10 of the targets whose four network answers
all fail, at ~12 evaluations against the ~20 each random restart costs (docs/solvers.md).

The triples are found numerically, not from joint names or URDF conventions: a triple is a flip
when the identity holds to :data:`FLIP_TOLERANCE` at configurations drawn across the limits, so
any URDF is covered and a near-miss geometry (offset axes) is not taken for one; and when the
flip of at least one of them lies inside the limits (Romeo's LElbowRoll–LElbowYaw–LWristRoll
is a roll–pitch–roll triple, but its middle joint spans [−π/2, 0], so no flip of it is inside).

A revolute joint whose range spans more than a whole turn (the IRB120's sixth, ±400°) gives a
second, trivial symmetry: ``q_j ± 2π`` reaches the same pose. A local solver that ran such a joint
into its limit stops there though the same pose lies a turn back, inside the range;
:meth:`JointFlips.turn` gives that configuration (on the IRB120: the network answers that end at its sixth
joint's limit).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import position_error, rotation_error

__all__ = ["JointFlips", "FLIP_TOLERANCE", "FLIP_SAMPLES"]

FLIP_TOLERANCE = 1e-9
"""[m] and [rad]: how closely the flipped configuration's pose must match at every sample."""
FLIP_SAMPLES = 32
"""Configurations (uniform inside the limits, seed 0) at which a flip is checked."""


class JointFlips:
    """The flip symmetries of a chain, and the flipped configurations.

    Args:
        chain: the robot's chain.
        free: indices of the joints a solver may move (default all); a flip that would move
            another joint is left out.

    Attributes:
        triples: the first joint index i of each flip (joints i, i+1, i+2), base → tip; empty when
            the chain has none (the G1, TALOS and the iCub, for example).
    """

    def __init__(self, chain: Chain, free: Sequence[int] | None = None) -> None:
        self.chain = chain
        movable = set(range(chain.dof) if free is None else free)
        lower, upper = chain.limits(torch.float64)
        self._lower, self._upper = lower, upper
        generator = torch.Generator().manual_seed(0)
        q = lower + (upper - lower) * torch.rand(FLIP_SAMPLES, chain.dof, generator=generator, dtype=torch.float64)
        reached = chain.fk(q)
        revolute = chain.geometry.revolute
        triples = []
        for i in range(chain.dof - 2):
            if not (all(revolute[i:i + 3]) and {i, i + 1, i + 2} <= movable):
                continue
            flipped = q.clone()
            flipped[:, i] += math.pi
            flipped[:, i + 1] *= -1
            flipped[:, i + 2] += math.pi
            other = chain.fk(flipped)
            if (float(position_error(other.pos, reached.pos).max()) < FLIP_TOLERANCE
                    and float(rotation_error(other.quat, reached.quat).max()) < FLIP_TOLERANCE
                    and self._fits(q, i).any()):
                triples.append(i)
        self.triples: tuple[int, ...] = tuple(triples)
        span = upper - lower
        self.turns: tuple[int, ...] = tuple(j for j in range(chain.dof) if revolute[j] and j in movable
                                            and float(span[j]) > 2 * math.pi)

    def _fits(self, q: torch.Tensor, first: int) -> torch.Tensor:
        """(B,) whether the flip of each configuration (B, n) about joints ``first``..+2 lies inside the limits."""
        lower, upper = self._lower.to(q), self._upper.to(q)
        middle = -q[:, first + 1]
        fits = (middle >= lower[first + 1]) & (middle <= upper[first + 1])
        for j in (first, first + 2):
            fits &= (q[:, j] + math.pi <= upper[j]) | (q[:, j] - math.pi >= lower[j])
        return fits

    def flip(self, q: torch.Tensor, first: int) -> torch.Tensor:
        """Configurations (B, n) → their flips about joints ``first``, +1, +2 (a new tensor, same dtype).

        Joints ``first`` and ``first + 2`` turn half a turn, up where that stays inside the joint's
        limits, else down, else (a range under a half turn either way) clamped; joint ``first + 1``
        is negated and clamped. The result is inside the limits; it reaches the same pose where no
        value was clamped.

        Raises:
            ValueError: ``first`` is not one of :attr:`triples`.
        """
        if first not in self.triples:
            raise ValueError(f"joints {first}..{first + 2} are not a flip of this chain; flips start at {list(self.triples)}")
        lower, upper = self._lower.to(q), self._upper.to(q)
        out = q.clone()
        out[:, first + 1] = -q[:, first + 1]
        for j in (first, first + 2):
            up, down = q[:, j] + math.pi, q[:, j] - math.pi
            out[:, j] = torch.where(up <= upper[j], up, torch.where(down >= lower[j], down, up))
        return torch.maximum(torch.minimum(out, upper), lower)

    def at_limit(self, q: torch.Tensor, joint: int) -> torch.Tensor:
        """(B,) whether joint ``joint`` of configurations (B, n) is at (or beyond) one of its limits."""
        return (q[:, joint] <= self._lower[joint].to(q)) | (q[:, joint] >= self._upper[joint].to(q))

    def turn(self, q: torch.Tensor, joint: int) -> torch.Tensor:
        """Configurations (B, n) → the same poses with joint ``joint`` a whole turn (2π) towards the middle of
        its range (a new tensor): down from above the middle, up from below it; inside the limits (a value a
        turn from both limits stays where it is).

        Raises:
            ValueError: ``joint`` is not one of :attr:`turns`.
        """
        if joint not in self.turns:
            raise ValueError(f"joint {joint} does not span a whole turn; joints that do: {list(self.turns)}")
        lower, upper = self._lower[joint].to(q), self._upper[joint].to(q)
        value = q[:, joint]
        turned = torch.where(value > (lower + upper) / 2, value - 2 * math.pi, value + 2 * math.pi)
        out = q.clone()
        out[:, joint] = torch.where((turned >= lower) & (turned <= upper), turned, value)
        return out
