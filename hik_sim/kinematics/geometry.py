"""The constant geometry of a robot's IK chain, in numpy: no torch needed.

:class:`ChainGeometry` folds the URDF chain from a robot's base link to its end-effector link into
one constant transform per movable joint (the URDF origins of all fixed joints in between, folded
together), the joint axes and types, and the constant tool transform after the last joint. The
batched torch :class:`~hik_sim.kinematics.chain.Chain` and the single-target MuJoCo path
(:mod:`hik_sim.solvers.single_target`) both evaluate it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hik_sim.errors import HikError
from hik_sim.robots import RobotSpec

__all__ = ["ChainGeometry", "rpy_matrix", "skew"]


def rpy_matrix(rpy: tuple[float, float, float] | np.ndarray) -> np.ndarray:
    """Rotation matrix of URDF fixed-axis roll, pitch, yaw: ``Rz(yaw) @ Ry(pitch) @ Rx(roll)``.

    Args:
        rpy: (3,) [rad].

    Returns:
        (3, 3) float64.
    """
    r, p, y = (float(v) for v in rpy)
    cr, sr, cp, sp, cy, sy = math.cos(r), math.sin(r), math.cos(p), math.sin(p), math.cos(y), math.sin(y)
    return np.array(
        [
            [cy * cp, cy * sp * sr - sy * cr, cy * sp * cr + sy * sr],
            [sy * cp, sy * sp * sr + cy * cr, sy * sp * cr - cy * sr],
            [-sp, cp * sr, cp * cr],
        ]
    )


def skew(v: np.ndarray) -> np.ndarray:
    """Cross-product matrix (3, 3) of a vector (3,)."""
    return np.array([[0.0, -v[2], v[1]], [v[2], 0.0, -v[0]], [-v[1], v[0], 0.0]])


@dataclass(frozen=True)
class ChainGeometry:
    """The constant geometry of an IK chain, in float64 numpy.

    Attributes:
        joint_names: the n movable joints, base → tip.
        rotations: (n, 3, 3) rotation from the previous joint's moving frame (the base frame for
            the first joint) to this joint's frame at zero displacement.
        translations: (n, 3) [m] origin of this joint's frame in the previous moving frame.
        axes: (n, 3) unit joint axes in the joint's frame.
        revolute: (n,) True for revolute/continuous, False for prismatic joints.
        tool_rotation: (3, 3) rotation from the last joint's moving frame to the end-effector frame.
        tool_translation: (3,) [m] end-effector origin in the last joint's moving frame.
    """

    joint_names: tuple[str, ...]
    rotations: np.ndarray
    translations: np.ndarray
    axes: np.ndarray
    revolute: np.ndarray
    tool_rotation: np.ndarray
    tool_translation: np.ndarray

    @classmethod
    def from_robot(cls, robot: RobotSpec) -> "ChainGeometry":
        """Fold the URDF chain of ``robot`` into per-joint constant transforms."""
        joints = robot.urdf_model().chain(robot.base_link, robot.ee_link)
        rot, trans = np.eye(3), np.zeros(3)  # accumulated fixed transform since the last movable joint
        rotations, translations, axes, revolute, names = [], [], [], [], []
        for joint in joints:
            r_origin = rpy_matrix(joint.rpy)
            trans = trans + rot @ np.asarray(joint.xyz)
            rot = rot @ r_origin
            if joint.movable:
                names.append(joint.name)
                rotations.append(rot)
                translations.append(trans)
                axes.append(np.asarray(joint.axis))
                revolute.append(joint.type != "prismatic")
                rot, trans = np.eye(3), np.zeros(3)
        if tuple(names) != robot.joint_names:
            raise HikError(
                f"robot {robot.name!r}: its joint_names {robot.joint_names} differ from the URDF chain "
                f"{tuple(names)} between {robot.base_link!r} and {robot.ee_link!r}"
            )
        return cls(tuple(names), np.stack(rotations), np.stack(translations), np.stack(axes),
                   np.asarray(revolute), rot, trans)

    @property
    def dof(self) -> int:
        """Number of movable joints n."""
        return len(self.joint_names)
