"""Kinematics of a robot's chain, after :mod:`hik_sim.robots` and before everything that moves it.

- :mod:`~hik_sim.kinematics.geometry`: ``ChainGeometry``, the URDF chain folded into one constant
  transform per joint (numpy, no torch);
- :mod:`~hik_sim.kinematics.chain`: ``Chain``, batched FK and Jacobian in torch;
- :mod:`~hik_sim.kinematics.rotations`: quaternions, rotation matrices, position and rotation errors (torch);
- :mod:`~hik_sim.kinematics.tolerances`: the success criteria and the one-pose rotation error (no torch);
- :mod:`~hik_sim.kinematics.symmetry`: ``FirstJointSymmetry``, the rigid motion of the end-effector
  pose when the first joint moves (torch and NumPy);
- :mod:`~hik_sim.kinematics.flips`: ``JointFlips``, the chain's flip symmetries;
- :mod:`~hik_sim.kinematics.mujoco_chain`: ``SingleTargetKinematics``, FK and Jacobian of one configuration through
  MuJoCo's C kinematics (numpy, no torch).

The names in ``__all__`` are importable from here (``from hik_sim.kinematics import Chain, Tolerance``); each is imported
from its module on first use, so importing the package imports nothing, and the torch-free modules stay torch-free.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hik_sim.kinematics.chain import Chain, Pose, reference_fk
    from hik_sim.kinematics.flips import FLIP_SAMPLES, FLIP_TOLERANCE, JointFlips
    from hik_sim.kinematics.geometry import ChainGeometry, rpy_matrix, skew
    from hik_sim.kinematics.rotations import (
        axis_angle_to_quaternion,
        canonical_quaternion,
        matrix_to_quaternion,
        position_error,
        quaternion_invert,
        quaternion_multiply,
        quaternion_to_axis_angle,
        quaternion_to_matrix,
        rotation_error,
    )
    from hik_sim.kinematics.symmetry import FirstJointSymmetry, range_turn, wrap_first_joint
    from hik_sim.kinematics.tolerances import EXACT, LOOSE, REPORT_TOLERANCES, SUCCESS, Tolerance, rotation_angle

_HOMES: dict[str, str] = {
    **dict.fromkeys(("ChainGeometry", "rpy_matrix", "skew"), "geometry"),
    **dict.fromkeys(("Tolerance", "SUCCESS", "LOOSE", "EXACT", "REPORT_TOLERANCES", "rotation_angle"), "tolerances"),
    **dict.fromkeys(
        (
            "canonical_quaternion",
            "matrix_to_quaternion",
            "quaternion_invert",
            "quaternion_multiply",
            "quaternion_to_matrix",
            "axis_angle_to_quaternion",
            "quaternion_to_axis_angle",
            "position_error",
            "rotation_error",
        ),
        "rotations",
    ),
    **dict.fromkeys(("Chain", "Pose", "reference_fk"), "chain"),
    **dict.fromkeys(("FirstJointSymmetry", "wrap_first_joint", "range_turn"), "symmetry"),
    **dict.fromkeys(("JointFlips", "FLIP_TOLERANCE", "FLIP_SAMPLES"), "flips"),
}
"""Each public name's module."""

__all__ = [
    "ChainGeometry",
    "rpy_matrix",
    "skew",
    "Tolerance",
    "SUCCESS",
    "LOOSE",
    "EXACT",
    "REPORT_TOLERANCES",
    "rotation_angle",
    "canonical_quaternion",
    "matrix_to_quaternion",
    "quaternion_invert",
    "quaternion_multiply",
    "quaternion_to_matrix",
    "axis_angle_to_quaternion",
    "quaternion_to_axis_angle",
    "position_error",
    "rotation_error",
    "Chain",
    "Pose",
    "reference_fk",
    "FirstJointSymmetry",
    "wrap_first_joint",
    "range_turn",
    "JointFlips",
    "FLIP_TOLERANCE",
    "FLIP_SAMPLES",
]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use (then cached in the package)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hik_sim.kinematics' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hik_sim.kinematics.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
