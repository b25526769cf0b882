""":func:`build_scene`: a robot's URDF through the derivation steps to a compiled :class:`Scene`."""

from __future__ import annotations

import numpy as np

from hik_sim.errors import HikError
from hik_sim.robots import RobotSpec
from hik_sim.sim.derivation import DERIVATION
from hik_sim.sim.draft import Draft
from hik_sim.sim.model import Scene
from hik_sim.sim.options import SceneOptions
from hik_sim.sim.render import ensure_headless_gl

__all__ = ["build_scene"]


def build_scene(robot: RobotSpec, options: SceneOptions | None = None, workspace_samples: int = 512) -> Scene:
    """Build and compile the MuJoCo scene of a robot: the steps of :data:`~hik_sim.sim.derivation.DERIVATION` in order.

    The URDF is parsed once (and not at all when the robot's URDF was parsed before, unchanged);
    MuJoCo compiles twice: once to measure the robot, once for the finished scene.

    Args:
        robot: the robot.
        options: simulation options.
        workspace_samples: random chain configurations used to find the workspace the
            ``workspace`` camera frames and the inertias the servos are tuned on (seeded: the
            scene is deterministic).

    Returns:
        The :class:`Scene`.

    Raises:
        UrdfError, MeshError: the URDF or a mesh is unusable.
        HikError: ``robot`` is not a RobotSpec, or MuJoCo cannot compile the robot.
    """
    if not isinstance(robot, RobotSpec):  # a robot's name was a raw AttributeError
        raise HikError(f"build_scene takes a RobotSpec (hik_sim.robots.get_robot(name) or robot_from_urdf(...)), got {robot!r}")
    ensure_headless_gl()  # before the first import of mujoco, so that the scene can be rendered headless
    draft = Draft.start(robot, options, workspace_samples)
    for step in DERIVATION:
        step(draft)
    model, measured = draft.model, draft.measurements
    return Scene(
        robot=robot,
        model=model,
        spec=draft.spec,
        chain_qpos=np.array([model.joint(n).qposadr[0] for n in robot.joint_names]),
        chain_dof=np.array([model.joint(n).dofadr[0] for n in robot.joint_names]),
        chain_actuators=np.array([model.actuator(n).id for n in robot.joint_names]),
        hold_actuators=np.array([model.actuator(f"hold:{n}").id for n in draft.held], dtype=int),
        ee_site=model.site("ee").id,
        base_body=model.body(robot.base_link).id,
        target_mocap=int(model.body_mocapid[model.body("target").id]),
        home_key=model.key("home").id,
        workspace_center=measured.workspace_center,
        workspace_radius=measured.workspace_radius,
    )
