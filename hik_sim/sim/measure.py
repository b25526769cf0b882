"""Step 15: measure the robot on a first compile, for the servos, the floor and the cameras.

One compile of the robot as steps 1–14 left it. At home, the lowest point of its geometry (the
robot is lifted onto the floor by that much). Over seeded random chain configurations, the
end-effector's workspace (for the ``workspace`` camera) and the largest joint-space inertia each
joint sees (for servos that are never underdamped). At home again, the bounds of the whole robot
(for the ``overview`` camera and the floor's size).
"""

from __future__ import annotations

import math

import numpy as np

from hik_sim.sim.draft import Draft, Measurements, compile_spec, set_joints

__all__ = ["Measurements", "measure_on_a_first_compile"]


def _lowest_point(model, data) -> float:  # noqa: ANN001
    """Lowest world z of any robot geom's bounding box [m]."""
    zmin = math.inf
    for g in range(model.ngeom):
        if model.geom_bodyid[g] == 0:
            continue
        rot = data.geom_xmat[g].reshape(3, 3)
        center = data.geom_xpos[g] + rot @ model.geom_aabb[g, :3]
        zmin = min(zmin, center[2] - np.abs(rot[2]) @ model.geom_aabb[g, 3:])
    return 0.0 if zmin == math.inf else float(zmin)


def measure_on_a_first_compile(draft: Draft) -> None:
    """The robot is compiled once and measured: its lowest point, its workspace, each joint's largest inertia.

    The chain's configurations are sampled with a fixed seed (``workspace_samples`` of them), so
    the scene is deterministic. This is the first of the scene's two compiles.
    """
    import mujoco

    robot = draft.robot
    model = compile_spec(draft.spec, robot.urdf.name)
    data = mujoco.MjData(model)
    set_joints(model, data, draft.home)
    mujoco.mj_forward(model, data)
    lift = -_lowest_point(model, data)
    rng = np.random.default_rng(0)
    qadr = np.array([model.joint(n).qposadr[0] for n in robot.joint_names])
    ee_id = model.site("ee").id
    lower, upper = np.asarray(robot.lower), np.asarray(robot.upper)
    full_inertia = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full_inertia)
    max_inertia = np.diag(full_inertia).copy()
    points = []
    for _ in range(draft.workspace_samples):
        data.qpos[qadr] = rng.uniform(lower, upper)
        mujoco.mj_fwdPosition(model, data)
        points.append(data.site_xpos[ee_id].copy())
        mujoco.mj_fullM(model, data, full_inertia)
        np.maximum(max_inertia, np.diag(full_inertia), out=max_inertia)
    inertia = {name: float(max_inertia[model.joint(name).dofadr[0]]) for name in (*robot.joint_names, *draft.held)}
    held_ranges = {}
    for name in draft.held:
        joint = model.joint(name).id
        held_ranges[name] = tuple(model.jnt_range[joint]) if model.jnt_limited[joint] else None

    ee_points = np.asarray(points) + [0.0, 0.0, lift]
    center = 0.5 * (ee_points.min(axis=0) + ee_points.max(axis=0))
    radius = max(float(np.linalg.norm(ee_points - center, axis=1).max()), 0.05)  # an end-effector that never moves
    data.qpos[qadr] = robot.home
    mujoco.mj_forward(model, data)
    body_points = data.xpos[1:] + [0.0, 0.0, lift]
    whole_center = 0.5 * (body_points.min(axis=0) + body_points.max(axis=0))
    whole_radius = float(np.linalg.norm(body_points - whole_center, axis=1).max()) + 0.1
    draft.measured = Measurements(lift, inertia, held_ranges, center, radius, whole_center, whole_radius,
                                  data.xmat[1].reshape(3, 3).copy())
