"""The first joint's symmetry: moving a chain's first joint moves its whole end-effector pose rigidly.

For any serial chain, ``FK(q + α·e₁) = M(α) · FK(q)``: the first joint's motion carries everything
after it. ``M(α)`` is the rotation by α about the first joint's axis through its origin (both in the
base frame) for a revolute first joint, the shift by α along its axis for a prismatic one. So a
pose T is reached with first joint ``q₁`` exactly when ``M(−α) T`` is reached with ``q₁ − α`` and
every other joint the same: an IK answer for the moved pose, with α added back to its first joint,
is an answer for T, as exact as the answer it came from.

:class:`~hik_sim.solvers.neural.NeuralIK` uses it to ask a network about a pose whose solution lies in
the middle of the first joint's range when the pose itself needs that joint near a limit, where
networks answer worst (the G1's shoulder pitch spans 5.76 rad; its two limits are 0.52 rad apart
the short way round, and every answer near either saturates; docs/networks.md).
:class:`~hik_sim.learning.network.IKNetwork` with ``canonical_turn`` uses it to take the turn out of
a network's input altogether: every pose is turned about the axis until its position lies in one
half-plane through it (:meth:`FirstJointSymmetry.azimuth`, :meth:`FirstJointSymmetry.move_each`), and
the turn is added back to the answer's first joint.
"""

from __future__ import annotations

import math

import numpy as np
import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import quaternion_multiply

__all__ = ["FirstJointSymmetry", "wrap_first_joint", "range_turn"]


def wrap_first_joint(first: torch.Tensor, lower: float, upper: float, clamp: bool = True) -> torch.Tensor:
    """Revolute first-joint values (any shape) [rad] wrapped into ``[lower, lower + 2π)``; with ``clamp``, a
    value beyond ``upper`` (the part of the circle outside the range) goes to the nearer limit round the circle."""
    first = lower + torch.remainder(first - lower, 2 * math.pi)
    if not clamp:
        return first
    return torch.where(first <= upper, first, torch.where(first - upper <= lower + 2 * math.pi - first,
                                                          first.new_tensor(upper), first.new_tensor(lower)))


def range_turn(azimuth: torch.Tensor, lower: float, upper: float) -> torch.Tensor:
    """The turns (any shape) [rad] of a ``behind_turn`` network for poses at ``azimuth`` [rad, (−π, π]]: each
    azimuth itself where it lies in the first joint's range [lower, upper] round the circle, else azimuth − π
    (into (−π, π]): such a pose is turned to the back half-plane, where an arm whose first joint cannot face
    it reaches it bent back over its base (the IRB120's and the Panda's joint 1 leave 30° and 28° of the
    circle out: 5.2 % and 7.7 % of their test targets).

    It assumes the arm faces the azimuth of the reference direction at first joint 0, as both do;
    for a chain whose end effector does not (a humanoid's hand off to the side of its waist), the turn is
    still a valid one, only not one that keeps the answer's first joint away from the limits."""
    inside = lower + torch.remainder(azimuth - lower, 2 * math.pi) <= upper
    return torch.where(inside, azimuth, torch.where(azimuth > 0, azimuth - math.pi, azimuth + math.pi))


class FirstJointSymmetry:
    """``M(α)``, the rigid motion of the end-effector pose when a chain's first joint moves by α.

    Args:
        chain: the robot's chain.

    Attributes:
        axis: (3,) unit axis of the first joint, base frame.
        origin: (3,) [m] a point on that axis (the joint's origin), base frame.
        revolute: True for a revolute first joint (α in rad), False for a prismatic one (α in m).
    """

    def __init__(self, chain: Chain) -> None:
        g = chain.geometry
        axis = g.rotations[0] @ g.axes[0]
        self.axis = axis / np.linalg.norm(axis)
        self.origin = np.array(g.translations[0], dtype=np.float64)
        self.revolute = bool(g.revolute[0])
        self.span = float(chain.robot.upper[0] - chain.robot.lower[0])
        """Range of the first joint [rad or m]."""
        self._rotations: dict[float, tuple[np.ndarray, np.ndarray]] = {}
        reference = np.eye(3)[int(np.argmin(np.abs(self.axis)))]  # the base axis least aligned with the joint's
        u = reference - (reference @ self.axis) * self.axis
        self.reference = u / np.linalg.norm(u)
        """(3,) unit vector ⊥ ``axis``: the direction of azimuth 0 (base frame)."""

    @property
    def default_turns(self) -> tuple[float, float]:
        """A third of the first joint's range either way (at most a third of a turn) [rad or m]
        (a chain joint's range is finite and non-empty: the URDF loader checks it).

        A pose that needs the first joint at one end of its range is asked about a third of the
        range inside it. Measured on the G1 (3,000 poses from their own seed, not the evaluation's):
        ±0.5, ±1.0 and ±2.0 rad lifted the closed loop from 87.6 % to 91.2, 93.4 and 95.6 %; a third
        of its 5.76 rad range is 1.92 (docs/networks.md).
        """
        third = min(self.span, 2 * math.pi) / 3 if self.revolute else self.span / 3
        return third, -third

    def _rotation(self, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """(3, 3) rotation matrix and (4,) wxyz quaternion of the turn by α about the axis (cached by α)."""
        if alpha in self._rotations:
            return self._rotations[alpha]
        k = np.array([[0.0, -self.axis[2], self.axis[1]], [self.axis[2], 0.0, -self.axis[0]],
                      [-self.axis[1], self.axis[0], 0.0]])
        matrix = np.eye(3) + math.sin(alpha) * k + (1 - math.cos(alpha)) * (k @ k)
        quat = np.concatenate([[math.cos(alpha / 2)], math.sin(alpha / 2) * self.axis])
        self._rotations[alpha] = matrix, quat
        return matrix, quat

    def move(self, pos: torch.Tensor, quat: torch.Tensor, alpha: float) -> tuple[torch.Tensor, torch.Tensor]:
        """``M(α)`` applied to poses: positions (B, 3) [m] and orientations (B, 4) wxyz, base frame → the same shapes and dtype."""
        if not self.revolute:
            return pos + pos.new_tensor(alpha * self.axis), quat
        matrix, turn = self._rotation(alpha)
        origin = pos.new_tensor(self.origin)
        moved = origin + (pos - origin) @ pos.new_tensor(matrix).T
        return moved, quaternion_multiply(quat.new_tensor(turn).expand_as(quat), quat)

    def azimuth(self, pos: torch.Tensor) -> torch.Tensor:
        """Positions (B, 3) [m] → (B,) their angle [rad, in (−π, π]] about the axis, from :attr:`reference`.

        Turning a pose by ``−azimuth`` (:meth:`move_each`) puts its position in the half-plane of
        ``reference`` (on the axis itself, where the angle is undefined, atan2(0, 0) = 0: no turn).
        A revolute first joint only.
        """
        offset = pos - pos.new_tensor(self.origin)
        u = pos.new_tensor(self.reference)
        v = torch.linalg.cross(pos.new_tensor(self.axis).expand_as(offset), u.expand_as(offset))
        return torch.atan2((offset * v).sum(-1), (offset * u).sum(-1))

    def move_each(self, pos: torch.Tensor, quat: torch.Tensor, alpha: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """``M(α_b)`` applied to each pose b: positions (B, 3) [m], orientations (B, 4) wxyz, turns (B,) [rad]
        → moved poses of the same shapes and dtype (Rodrigues' formula; a revolute first joint)."""
        axis = pos.new_tensor(self.axis)
        origin = pos.new_tensor(self.origin)
        offset = pos - origin
        cos, sin = torch.cos(alpha)[:, None], torch.sin(alpha)[:, None]
        along = (offset @ axis)[:, None] * axis
        moved = origin + offset * cos + torch.linalg.cross(axis.expand_as(offset), offset) * sin + along * (1 - cos)
        half = alpha[:, None] / 2
        turn = torch.cat((torch.cos(half), torch.sin(half) * axis), dim=-1)
        return moved, quaternion_multiply(turn, quat)

    def face(self, q: torch.Tensor, reached: torch.Tensor, target: torch.Tensor, lower: float, upper: float) -> torch.Tensor:
        """Configurations (B, n) with the first joint turned so that the position each reaches, ``reached``
        (B, 3) [m], comes round the axis to the azimuth of ``target`` (B, 3) [m]: the same arm shape,
        facing the target. The turned joint is wrapped into its limits ``lower``, ``upper`` [rad] (beyond
        them: the nearer limit, where the arm faces the target only partly). A revolute first joint only."""
        turned = q.clone()
        turned[:, 0] = wrap_first_joint(q[:, 0] + self.azimuth(target) - self.azimuth(reached), lower, upper)
        return turned

    def move_one(self, pos: np.ndarray, quat: np.ndarray, alpha: float) -> tuple[np.ndarray, np.ndarray]:
        """:meth:`move` for one pose: (3,) [m], (4,) wxyz as NumPy float64 arrays."""
        if not self.revolute:
            return pos + alpha * self.axis, quat
        import mujoco  # here, not at import: the solvers import this module and need MuJoCo only for one pose

        matrix, turn = self._rotation(alpha)
        product = np.empty(4)
        mujoco.mju_mulQuat(product, turn, np.asarray(quat, dtype=np.float64))
        return self.origin + matrix @ (pos - self.origin), product
