"""dm_control's ``qpos_from_site_pose`` as an :class:`~hik_sim.solvers.base.IKSolver` (:class:`DmControlIK`),
as dm_control ships it (MuJoCo and dm_control are imported when one is built).
"""

from __future__ import annotations

import time
from dataclasses import replace

import torch

from hik_sim.kinematics.chain import Chain
from hik_sim.kinematics.rotations import quaternion_multiply
from hik_sim.kinematics.tolerances import Tolerance
from hik_sim.solvers.base import IKResult, _check_q_init, _result, check_targets

__all__ = ["DmControlIK"]


class DmControlIK:
    """dm_control's ``qpos_from_site_pose`` on the robot's scene, one target at a time, as dm_control ships it.

    dm_control ignores joint limits: answers outside them are counted in
    ``result.extra["limit_violations"]`` and then clamped into the limits (so the result, like every
    solver's, is a configuration the robot can take), with errors measured after clamping.

    Args:
        scene: the robot's :class:`~hik_sim.sim.model.Scene`.
        tolerance: success criterion.
        max_steps: dm_control's iteration cap.
        tol: dm_control's convergence tolerance on the residual norm.
    """

    def __init__(self, scene, tolerance: Tolerance | None = None, max_steps: int = 100, tol: float = 1e-14) -> None:  # noqa: ANN001
        import mujoco
        from dm_control import mujoco as dm_mujoco

        self.scene, self.chain = scene, Chain(scene.robot)
        self.tolerance, self.max_steps, self.tol = tolerance or Tolerance(), max_steps, tol
        self.physics = dm_mujoco.Physics.from_xml_string(scene.spec.to_xml())
        data = scene.make_data()
        self.base_pos, base_rot = scene.base_pose(data)
        self.base_rot = torch.from_numpy(base_rot)
        base_quat = torch.empty(4, dtype=torch.float64)
        mujoco.mju_mat2Quat(base_quat.numpy(), base_rot.reshape(-1))
        self.base_quat = base_quat
        self.home_qpos = data.qpos.copy()

    def solve(self, target_pos: torch.Tensor, target_quat: torch.Tensor, q_init: torch.Tensor | None = None) -> IKResult:
        """Solve each target from ``q_init`` (B, n) (default: home).

        Raises:
            HikError: bad targets or ``q_init``.
        """
        from dm_control.utils.inverse_kinematics import qpos_from_site_pose

        start = time.perf_counter()
        pos, quat = check_targets(target_pos, target_quat)
        batch, robot = pos.shape[0], self.scene.robot
        if q_init is not None:  # a wrong shape was a raw ValueError, NaN a LinAlgError from inside dm_control
            q_init = _check_q_init(q_init, batch, self.chain.dof)
        world_pos = torch.from_numpy(self.base_pos) + pos @ self.base_rot.T
        world_quat = quaternion_multiply(self.base_quat.expand(batch, 4), quat)
        q = torch.empty(batch, self.chain.dof, dtype=torch.float64)
        steps = torch.zeros(batch, dtype=torch.int64)
        for i in range(batch):
            self.physics.data.qpos[:] = self.home_qpos
            if q_init is not None:
                self.physics.data.qpos[self.scene.chain_qpos] = torch.as_tensor(q_init[i]).numpy()
            answer = qpos_from_site_pose(self.physics, "ee", target_pos=world_pos[i].numpy(), target_quat=world_quat[i].numpy(),
                                         joint_names=list(robot.joint_names), tol=self.tol, max_steps=self.max_steps, inplace=False)
            q[i] = torch.from_numpy(answer.qpos[self.scene.chain_qpos])
            steps[i] = answer.steps
        lower, upper = self.chain.limits(torch.float64)
        violations = int(((q < lower - 1e-9) | (q > upper + 1e-9)).any(dim=1).sum())
        result = _result(self.chain, self.chain.clamp(q), pos, quat, self.tolerance, steps, steps + 1, steps, start)
        return replace(result, extra={"limit_violations": violations})
