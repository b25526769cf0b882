"""The environments' action interfaces: joint targets, normalised joint targets, or end-effector increments through IK.

- ``joint``: position targets for the chain's joints [rad, or m for a prismatic joint], bounded by
  the joint limits (Reach and Track's default).
- ``joint_normalized``: the same targets scaled to [-1, 1]: -1 is a joint's lower limit, +1 its
  upper limit (the goal environment's default).
- ``ee_delta``: an end-effector pose increment in [-1, 1]^6, scaled to at most
  :data:`EE_DELTA_POSITION` (2 cm) per axis of the position and :data:`EE_DELTA_ROTATION` (0.1 rad)
  per component of a rotation vector, both in the chain's base frame. The increment is applied to
  the pose the last joint targets reach (their forward kinematics), not to the measured pose, so a
  zero action holds the arm's target and the servos' lag does not shrink the increments; an IK
  controller (:class:`~hik_sim.policies.IKController`, the robot's shipped ``hybrid`` by default)
  turns the new pose into joint targets, warm-started from the last ones. A failed solve keeps the
  last targets unless its answer is closer to the asked pose (the controller's rule).

No torch is imported here; an IK controller imports it when it is built.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import numpy as np

from hik_sim.errors import EnvError
from hik_sim.robots import RobotSpec

if TYPE_CHECKING:
    from hik_sim.policies.controller import IKController

__all__ = ["ACTION_TYPES", "EE_DELTA_POSITION", "EE_DELTA_ROTATION", "check_action_type", "make_ik_controller",
           "rotate", "canonical_quaternion", "rotation_angles", "EndEffectorDelta"]

ACTION_TYPES: tuple[str, ...] = ("joint", "joint_normalized", "ee_delta")
"""The ``action_type`` values every environment takes."""
EE_DELTA_POSITION = 0.02
"""[m]: the position increment an ``ee_delta`` action of 1 asks on one axis, per step."""
EE_DELTA_ROTATION = 0.1
"""[rad]: the rotation-vector increment an ``ee_delta`` action of 1 asks on one axis, per step."""


def check_action_type(action_type: Any) -> str:
    """``action_type`` itself, checked.

    Raises:
        EnvError: not one of :data:`ACTION_TYPES` (the message lists them).
    """
    if not isinstance(action_type, str) or action_type not in ACTION_TYPES:
        raise EnvError(f"unknown action_type {action_type!r}; action types are: {', '.join(ACTION_TYPES)}")
    return action_type


def make_ik_controller(robot: RobotSpec, ik: Any = None) -> IKController:
    """The IK controller an ``ee_delta`` environment uses.

    Args:
        robot: the environment's robot.
        ik: ``None`` (``hybrid`` where a network is shipped for the robot, else ``lm``); a name
            :func:`~hik_sim.solvers.registry.make_solver` takes (``hybrid``, ``lm``, ``harmoatt``, a
            checkpoint path, ...); an :class:`~hik_sim.solvers.base.IKSolver`; an
            :class:`~hik_sim.learning.network.IKNetwork` (it seeds the single-target hybrid, LM after
            the network); or an :class:`~hik_sim.policies.IKController`.

    Raises:
        HikError: an unknown name, a network not shipped for the robot, or an object that is none of these.
    """
    from hik_sim.learning.network import IKNetwork
    from hik_sim.policies.controller import IKController
    from hik_sim.solvers.base import IKSolver
    from hik_sim.solvers.registry import make_solver, shipped_networks

    if ik is None:
        ik = "hybrid" if shipped_networks(robot) else "lm"
    if isinstance(ik, IKController):
        return ik
    if isinstance(ik, IKNetwork):
        return IKController(make_solver("hybrid", robot, network=ik))
    if isinstance(ik, str):
        return IKController.pretrained(robot, ik)
    if isinstance(ik, IKSolver):
        return IKController(ik)
    raise EnvError(f"ik must be a solver's name (e.g. 'hybrid', 'lm'), an IKSolver, an IKNetwork or an IKController, got "
                   f"{type(ik).__name__}")


def rotate(quat: np.ndarray, rotation_vector: np.ndarray) -> np.ndarray:
    """``exp(rotation_vector) ⊗ quat``: an orientation (4,) wxyz turned by a rotation vector (3,) [rad] about base-frame axes."""
    angle = float(np.linalg.norm(rotation_vector))
    if angle < 1e-12:
        return np.asarray(quat, dtype=np.float64).copy()
    axis = rotation_vector / angle
    w1, (x1, y1, z1) = np.cos(angle / 2), np.sin(angle / 2) * axis
    w2, x2, y2, z2 = (float(v) for v in quat)
    out = np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                    w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
    return out / np.linalg.norm(out)


def canonical_quaternion(quat: np.ndarray) -> np.ndarray:
    """Unit quaternions (..., 4) wxyz with w >= 0 (q and -q are one orientation; this picks one)."""
    quat = np.asarray(quat, dtype=np.float64)
    return np.where(quat[..., :1] < 0, -quat, quat)


def rotation_angles(quat: np.ndarray, target_quat: np.ndarray) -> np.ndarray:
    """Geodesic angles [rad] (...,) between orientations (..., 4) wxyz, sign-invariant: the batched
    twin of :func:`hik_sim.kinematics.tolerances.rotation_angle` (the same formula, ``2·atan2(‖vec‖, |w|)``)."""
    w1, x1, y1, z1 = np.moveaxis(np.asarray(quat, dtype=np.float64), -1, 0)
    w2, x2, y2, z2 = np.moveaxis(np.asarray(target_quat, dtype=np.float64), -1, 0)
    w = w1 * w2 + x1 * x2 + y1 * y2 + z1 * z2
    x = w1 * x2 - x1 * w2 - y1 * z2 + z1 * y2
    y = w1 * y2 + x1 * z2 - y1 * w2 - z1 * x2
    z = w1 * z2 - x1 * y2 + y1 * x2 - z1 * w2
    return np.asarray(2.0 * np.arctan2(np.sqrt(x * x + y * y + z * z), np.abs(w)))


class EndEffectorDelta:
    """``ee_delta`` actions → joint targets, through an IK controller.

    Args:
        controller: the IK controller (:func:`make_ik_controller`).
        fk: forward kinematics of the chain: joints (n,) → position (3,) [m], quaternion (4,) wxyz.
    """

    def __init__(self, controller: IKController, fk: Any) -> None:
        self.controller, self.fk = controller, fk

    def reset(self) -> None:
        """Forget the controller's held target (at every episode's start)."""
        self.controller.reset()

    def __call__(self, action: np.ndarray, joint_target: np.ndarray) -> tuple[np.ndarray, dict[str, Any]]:
        """Joint targets (n,) for an action (6,) in [-1, 1] from the last joint targets (n,), and the IK's info.

        Returns:
            The new joint targets (inside the joint limits) and ``{"ik_time": [s], "ik_failed": bool,
            "ee_target_pos": (3,) [m], "ee_target_quat": (4,) wxyz}``.
        """
        pos, quat = self.fk(joint_target)
        target_pos = pos + EE_DELTA_POSITION * action[:3]
        target_quat = rotate(quat, EE_DELTA_ROTATION * action[3:])
        observation = {"joint_pos": joint_target, "ee_pos": pos, "ee_quat": quat, "goal_pos": target_pos, "goal_quat": target_quat}
        start = time.perf_counter()
        q = self.controller.act(observation)
        elapsed = time.perf_counter() - start
        failed = not bool(self.controller.last_result[0].success[0])
        return q, {"ik_time": elapsed, "ik_failed": failed, "ee_target_pos": target_pos, "ee_target_quat": target_quat}
