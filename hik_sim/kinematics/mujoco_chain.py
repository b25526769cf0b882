"""Fast FK and Jacobian for one configuration at a time: the control-rate path.

At one target per control step, torch's per-call overhead (tens of operations of a few µs each)
and pytorch-kinematics' (milliseconds) dominate. :class:`SingleTargetKinematics` instead compiles
the IK chain alone, as a bare MuJoCo model (one body per joint, no geometry), from the same
:class:`~hik_sim.kinematics.geometry.ChainGeometry` that :class:`~hik_sim.kinematics.chain.Chain` uses, and asks
MuJoCo's C functions (``mj_kinematics``, ``mj_comPos``, ``mj_jacSite``) for the answer, in float64
numpy, with the same conventions: base frame, quaternion wxyz with w ≥ 0, Jacobian rows
(linear; angular).
"""

from __future__ import annotations

from typing import NamedTuple

import numpy as np

from hik_sim.errors import SolverError
from hik_sim.kinematics.geometry import ChainGeometry
from hik_sim.robots import RobotSpec

__all__ = ["SingleTargetKinematics", "SinglePose"]


class SinglePose(NamedTuple):
    """One end-effector pose in the base frame.

    Attributes:
        pos: (3,) [m].
        quat: (4,) wxyz, w ≥ 0.
    """

    pos: np.ndarray
    quat: np.ndarray


def _mat_quat(rot: np.ndarray) -> list[float]:
    import mujoco

    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.ascontiguousarray(rot).reshape(-1))
    return quat.tolist()


class SingleTargetKinematics:
    """FK and Jacobian of one configuration, through MuJoCo's C kinematics.

    Args:
        robot: the robot.
        geometry: the chain's geometry, when already at hand (saves re-reading the URDF).
    """

    def __init__(self, robot: RobotSpec, geometry: ChainGeometry | None = None) -> None:
        import mujoco

        self.robot = robot
        g = geometry or ChainGeometry.from_robot(robot)
        spec = mujoco.MjSpec()
        spec.modelname = f"{robot.name}_chain"
        parent = spec.worldbody
        for i, name in enumerate(g.joint_names):
            parent = parent.add_body(name=f"link{i}", pos=g.translations[i].tolist(), quat=_mat_quat(g.rotations[i]),
                                     mass=1.0, inertia=[1e-3, 1e-3, 1e-3])
            joint_type = mujoco.mjtJoint.mjJNT_HINGE if g.revolute[i] else mujoco.mjtJoint.mjJNT_SLIDE
            parent.add_joint(name=name, type=joint_type, axis=g.axes[i].tolist())
        parent.add_site(name="ee", pos=g.tool_translation.tolist(), quat=_mat_quat(g.tool_rotation))
        self.model = spec.compile()
        self.data = mujoco.MjData(self.model)
        self._mujoco = mujoco
        self._jacp = np.zeros((3, self.model.nv))
        self._jacr = np.zeros((3, self.model.nv))
        self._quat = np.zeros(4)
        self.dof = g.dof

    def _set(self, q: np.ndarray) -> None:
        q = np.asarray(q, dtype=float)
        if q.shape != (self.dof,):
            raise SolverError(f"joint values must have shape ({self.dof},) for {self.robot.name!r}, got {q.shape}")
        if not np.isfinite(q).all():
            raise SolverError(f"joint values must be finite, got {q}")
        self.data.qpos[:] = q
        self._mujoco.mj_kinematics(self.model, self.data)

    def _pose(self) -> SinglePose:
        self._mujoco.mju_mat2Quat(self._quat, self.data.site_xmat[0])
        quat = self._quat.copy() if self._quat[0] >= 0 else -self._quat
        return SinglePose(self.data.site_xpos[0].copy(), quat)

    def fk(self, q: np.ndarray) -> SinglePose:
        """End-effector pose of one configuration ``q`` (n,) [rad or m]."""
        self._set(q)
        return self._pose()

    def fk_and_jacobian(self, q: np.ndarray) -> tuple[SinglePose, np.ndarray]:
        """End-effector pose and geometric Jacobian (6, n) of one configuration ``q`` (n,)."""
        self._set(q)
        self._mujoco.mj_comPos(self.model, self.data)
        self._mujoco.mj_jacSite(self.model, self.data, self._jacp, self._jacr, 0)
        return self._pose(), np.vstack((self._jacp, self._jacr))
