"""The compiled scene: :class:`Scene`, a MuJoCo model and the indices that tie it to the IK chain."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hik_sim.robots import RobotSpec

__all__ = ["Scene"]


@dataclass
class Scene:
    """A compiled scene and the indices that connect it to the robot's IK chain.

    Attributes:
        robot: the robot.
        model: the compiled MuJoCo model.
        spec: the ``MjSpec`` it was compiled from.
        chain_qpos: (n,) qpos addresses of the chain joints, chain order.
        chain_dof: (n,) dof addresses of the chain joints.
        chain_actuators: (n,) actuator ids of the chain joints' position servos.
        hold_actuators: actuator ids of the holds on all other joints.
        ee_site: id of the ``ee`` site.
        base_body: id of the chain's base link body.
        target_mocap: mocap index of the ``target`` body.
        home_key: id of the ``home`` keyframe.
        workspace_center: (3,) centre of the sampled end-effector workspace, world frame [m].
        workspace_radius: radius of a ball around the centre holding the samples [m].
    """

    robot: RobotSpec
    model: Any  # mujoco.MjModel (MuJoCo has no type information)
    spec: Any  # mujoco.MjSpec
    chain_qpos: np.ndarray
    chain_dof: np.ndarray
    chain_actuators: np.ndarray
    hold_actuators: np.ndarray
    ee_site: int
    base_body: int
    target_mocap: int
    home_key: int
    workspace_center: np.ndarray = field(repr=False)
    workspace_radius: float = 0.0

    def make_data(self):  # noqa: ANN201 - mujoco.MjData
        """A fresh ``MjData`` reset to the ``home`` keyframe, with kinematics computed."""
        import mujoco

        data = mujoco.MjData(self.model)
        mujoco.mj_resetDataKeyframe(self.model, data, self.home_key)
        mujoco.mj_forward(self.model, data)
        return data

    def base_pose(self, data) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
        """World position (3,) [m] and rotation matrix (3, 3) of the chain's base link."""
        return data.xpos[self.base_body].copy(), data.xmat[self.base_body].reshape(3, 3).copy()

    def ee_pose(self, data) -> tuple[np.ndarray, np.ndarray]:  # noqa: ANN001
        """End-effector position (3,) [m] and quaternion (4,) wxyz (w ≥ 0) in the base frame."""
        import mujoco

        base_pos, base_rot = self.base_pose(data)
        pos = base_rot.T @ (data.site_xpos[self.ee_site] - base_pos)
        rot = base_rot.T @ data.site_xmat[self.ee_site].reshape(3, 3)
        quat = np.empty(4)
        mujoco.mju_mat2Quat(quat, rot.reshape(-1))
        return pos, quat if quat[0] >= 0 else -quat

    def set_target(self, data, pos: np.ndarray, quat: np.ndarray) -> None:  # noqa: ANN001
        """Place the ``target`` marker at a pose given in the base frame (pos [m], quat wxyz)."""
        import mujoco

        base_pos, base_rot = self.base_pose(data)
        data.mocap_pos[self.target_mocap] = base_pos + base_rot @ np.asarray(pos, dtype=float)
        base_quat = np.empty(4)
        mujoco.mju_mat2Quat(base_quat, base_rot.reshape(-1))
        world = np.empty(4)
        mujoco.mju_mulQuat(world, base_quat, np.asarray(quat, dtype=float))
        data.mocap_quat[self.target_mocap] = world
