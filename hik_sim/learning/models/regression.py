"""The hybrid paper's DNN: a plain MLP trained by supervised regression from a pose to joint values.

The hybrid learning + optimisation IK paper (ABB IRB120) trains a feed-forward network on
(pose, joints) pairs with a joint-space regression loss, in the full joint space and with q6
held fixed, and shows that plain regression fails on the multi-valued pose → joints map (it
averages IK branches) while fixing q6 or refining with nonlinear least squares repairs it.

Here (``hik_sim.learning.losses.RegressionLoss``, selected by the trainer for this kind): every step
samples configurations q uniform in the limits (the fixed joints at their values), computes their
poses by FK, and minimises the mean squared error [rad²] between the network's free joints and
the sampled ones. There is no FK in the loss, so nothing tells the network which of a pose's IK
solutions to give: exactly the weakness the paper measures.

Which configurations the training data holds is a reading of the paper (its abstract does not say
how they were sampled), and two are implemented:

- uniform in the whole joint box (``--sampling uniform``, the default; the shipped ``regression`` and
  ``regression_q6fixed``): a pose has up to eight configurations there (shoulder front/back, elbow
  up/down, wrist flipped or not) and joint 6's ±400° adds whole turns, so the regression averages
  branches (IRB120: hundreds of millimetres off in the full joint space);
- one IK branch (``--sampling one_branch``, :class:`BranchRegion`, :data:`BRANCH_REGIONS`): configurations
  uniform in one branch, where a pose has one configuration, so the regression is well posed; the
  test targets of the same reading are drawn from the same branch (``make_eval_set(..., one_branch=True)``),
  and the evaluation reports the full-space targets beside them, since some full-space targets have no
  configuration in the branch (:func:`hik_sim.evaluation.experiments.one_branch_table`).

Architecture — our reading, not the paper's exact layer sizes: 4 hidden layers of equal width
with GELU, and the tanh head mapped onto the joint limits that every network here has (so answers
stay inside the limits). The default width matches the parameter count of the default HarmoAtt-IK
for the same joints (within 1 %), so the comparison is at the same budget as the other networks.
It is laid out as :class:`~hik_sim.learning.models.mlp.MLPIK` (a subclass), so the fast inference path and
the tooling serve it unchanged.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Mapping

import torch

from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import quaternion_to_matrix
from hik_sim.learning.models.mlp import MLPIK

__all__ = ["BRANCH_REGIONS", "BranchRegion", "IRB120_ELBOW_STRETCHED", "RegressionIK", "branch_region"]


class RegressionIK(MLPIK):
    """Pose (B, 7) → joint values (B, m), for supervised regression.

    Args:
        lower: (m,) lower limits of the output joints.
        upper: (m,) upper limits.
        hidden: width of each hidden layer; default: the width that matches the parameter count of
            :data:`~hik_sim.learning.models.MATCHED_REFERENCE` (HarmoAtt-IK's dense trunk) for m joints
            (:func:`~hik_sim.learning.models.matched_mlp_hidden`).
        layers: number of hidden layers (4).
        in_features: input width (7).
        hypotheses: answers per pose (beyond the paper, for the composite objective only; the
            regression objective refuses more than one).

    Raises:
        HikError: ``hidden`` or ``layers`` below 1.
    """

    def __init__(self, lower: torch.Tensor, upper: torch.Tensor, hidden: int | None = None, layers: int = 4,
                 in_features: int = 7, hypotheses: int = 1) -> None:
        if hidden is None:
            from hik_sim.learning.models import MATCHED_REFERENCE, matched_mlp_hidden

            hidden = matched_mlp_hidden(lower.numel(), layers, **MATCHED_REFERENCE,
                                        **({"hypotheses": hypotheses} if hypotheses != 1 else {}))
        super().__init__(lower, upper, hidden=hidden, layers=layers, in_features=in_features, hypotheses=hypotheses)


@dataclass(frozen=True)
class BranchRegion:
    """One IK branch of a 6R arm with a spherical wrist, as a region of its joint space.

    A configuration is in the region when every joint named in ``ranges`` lies in its range
    (intersected with the joint limits) and, with ``front``, its wrist centre lies in front of the
    joint-1 axis: its horizontal distance from that axis, measured along the direction joint 1
    faces, is positive. Inside the region a pose has at most one configuration, so the map from
    pose to joints that supervised regression fits is a function.

    Attributes:
        ranges: joint name → (lower, upper) [rad], each within the joint's limits where it matters.
        wrist_offset: distance from the wrist centre to the end effector along its approach axis [m].
        approach_axis: the column (0, 1, 2 for x, y, z) of the end effector's rotation matrix that is its approach axis.
        front: keep only configurations whose wrist centre is in front of the joint-1 axis.
    """

    ranges: Mapping[str, tuple[float, float]]
    wrist_offset: float
    approach_axis: int = 2
    front: bool = True

    def box(self, chain: Chain, dtype: torch.dtype = torch.float64,
            device: torch.device | str = "cpu") -> tuple[torch.Tensor, torch.Tensor]:
        """The joint box (lower, upper), each (n,) [rad]: the joint limits narrowed by :attr:`ranges`.

        Raises:
            HikError: a range names a joint not in the chain, or leaves a joint no room.
        """
        lower, upper = (t.clone() for t in chain.limits(dtype, device))
        for name, (lo, hi) in self.ranges.items():
            if name not in chain.joint_names:
                raise HikError(f"branch region names joint {name!r}, not in the chain; chain joints are: {', '.join(chain.joint_names)}")
            i = chain.joint_names.index(name)
            lower[i], upper[i] = max(float(lower[i]), lo), min(float(upper[i]), hi)
            if not lower[i] < upper[i]:
                raise HikError(f"branch region's range {(lo, hi)} for joint {name!r} misses its limits")
        return lower, upper

    def wrist_centre(self, chain: Chain, q: torch.Tensor) -> torch.Tensor:
        """(B, n) configurations → (B, 3) wrist centres [m], base frame."""
        pose = chain.fk(q)
        return pose.pos - self.wrist_offset * quaternion_to_matrix(pose.quat)[..., :, self.approach_axis]

    def contains(self, chain: Chain, q: torch.Tensor, slack: float = 0.0) -> torch.Tensor:
        """(B,) bool: which configurations (B, n) lie in the region (``slack`` [rad] of tolerance on the box)."""
        lower, upper = self.box(chain, q.dtype, q.device)
        inside = ((q >= lower - slack) & (q <= upper + slack)).all(-1)
        if self.front:
            inside &= self.reach(chain, q) > 0
        return inside

    def reach(self, chain: Chain, q: torch.Tensor) -> torch.Tensor:
        """(B,) the wrist centre's horizontal distance in front of the joint-1 axis [m] (negative: behind it)."""
        centre = self.wrist_centre(chain, q)
        return torch.cos(q[:, 0]) * centre[:, 0] + torch.sin(q[:, 0]) * centre[:, 1]

    def sample(self, chain: Chain, batch: int, generator: torch.Generator, dtype: torch.dtype = torch.float32,
               device: torch.device | str | None = None) -> torch.Tensor:
        """``batch`` configurations (B, n) drawn uniformly in the region: uniform in :meth:`box`, those
        behind the joint-1 axis rejected (with ``front``); reproducible from ``generator``.

        Raises:
            HikError: ``batch`` below 1.
        """
        if batch < 1:
            raise HikError(f"batch must be at least 1, got {batch}")
        device = generator.device if device is None else torch.device(device)
        lower, upper = self.box(chain, dtype, device)
        kept: list[torch.Tensor] = []
        count = 0
        while count < batch:
            draw = (8 * (batch - count)) // 5 + 64  # about two thirds of the IRB120's narrowed box lies in front
            u = torch.rand((draw, len(lower)), generator=generator, dtype=dtype, device=device)
            q = lower + u * (upper - lower)
            if self.front:
                q = q[self.reach(chain, q) > 0]
            kept.append(q)
            count += len(q)
        return torch.cat(kept)[:batch]


IRB120_ELBOW_STRETCHED = -math.atan2(0.302, 0.070)
"""The IRB120's joint 3 with the arm stretched (−76.95°): the elbow singularity between its two elbow
branches (upper arm 0.270 m; forearm 0.302 m along, 0.070 m across, from the URDF)."""

BRANCH_REGIONS: dict[str, BranchRegion] = {
    "irb120": BranchRegion(ranges={"joint_3": (IRB120_ELBOW_STRETCHED, math.inf), "joint_5": (0.0, math.inf),
                                   "joint_6": (-math.pi, math.pi)}, wrist_offset=0.072, approach_axis=2, front=True)}
"""The one-branch reading of the regression DNN's training data, per robot.

The IRB120's (our reading; the abstract does not state how its configurations were sampled): the
shoulder in front (the wrist centre in front of the joint-1 axis, which leaves joint 1 its whole
±165° and the pose → joint-1 map continuous), the elbow up (joint 3 above the stretched arm's
−76.95°, the larger side: every elbow-down configuration's mirror, 2·(−76.95°) − q3, is within
joint 3's limits), the wrist not flipped (joint 5 > 0), and joint 6 within one turn (±180° of its
±400°). Each of these removes one of the ambiguities of the pose → joints map (the shoulder's
front/back, the elbow's up/down, the wrist's flip, joint 6's whole turns); 12.3 % of the
IRB120's joint box satisfies all four."""


def branch_region(robot: str) -> BranchRegion:
    """The one-branch region of a robot (:data:`BRANCH_REGIONS`).

    Raises:
        HikError: the robot has none.
    """
    if robot not in BRANCH_REGIONS:
        raise HikError(f"no one-branch region is defined for robot {robot!r}; robots with one: {', '.join(BRANCH_REGIONS)}")
    return BRANCH_REGIONS[robot]
