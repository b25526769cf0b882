"""Steps 17–21: the robot on a floor, under lights, with a goal marker, two cameras and a home keyframe.

All sizes come from the measurements of step 15 (:mod:`~hik_sim.sim.measure`): the floor
and the lights scale with the robot, the ``target`` marker with the workspace, the ``workspace``
camera frames the end-effector's reachable workspace and the ``overview`` camera the whole
robot, both from the robot's front-left (``RobotSpec.front``). The last step compiles the scene.
"""

from __future__ import annotations

import math

import numpy as np

from hik_sim.sim.draft import Draft, compile_spec, set_joints

__all__ = ["add_cameras", "add_floor_and_lights", "add_home_keyframe", "add_target", "stand_on_floor"]


def stand_on_floor(draft: Draft) -> None:
    """The robot is lifted so that its lowest point at home touches the floor (z = 0)."""
    lift = draft.measurements.lift
    root = draft.spec.worldbody.first_body()
    if abs(lift) > 1e-9 and root is not None:
        root.pos = [root.pos[0], root.pos[1], root.pos[2] + lift]


def add_floor_and_lights(draft: Draft) -> None:
    """A checkered floor (no contacts), a gradient skybox, a key light that casts shadows and a fill light.

    The floor is at least 4 × the robot's radius wide and the lights as high; the shadow map and
    the offscreen buffer take ``SceneOptions.shadow_size`` and ``offscreen_size``.
    """
    import mujoco

    spec, options, measured = draft.spec, draft.options, draft.measurements
    radius = max(measured.workspace_radius, measured.robot_radius)
    spec.visual.quality.shadowsize = options.shadow_size
    spec.visual.global_.offwidth, spec.visual.global_.offheight = options.offscreen_size
    spec.visual.headlight.ambient = [0.35, 0.35, 0.35]
    spec.visual.headlight.diffuse = [0.45, 0.45, 0.45]
    spec.visual.headlight.specular = [0.05, 0.05, 0.05]
    spec.add_texture(name="hik_skybox", type=mujoco.mjtTexture.mjTEXTURE_SKYBOX, builtin=mujoco.mjtBuiltin.mjBUILTIN_GRADIENT,
                     rgb1=[0.55, 0.68, 0.82], rgb2=[0.08, 0.1, 0.14], width=512, height=512)
    spec.add_texture(name="hik_floor", type=mujoco.mjtTexture.mjTEXTURE_2D, builtin=mujoco.mjtBuiltin.mjBUILTIN_CHECKER,
                     rgb1=[0.24, 0.27, 0.31], rgb2=[0.31, 0.34, 0.38], mark=mujoco.mjtMark.mjMARK_EDGE,
                     markrgb=[0.5, 0.52, 0.55], width=300, height=300)
    material = spec.add_material(name="hik_floor", texrepeat=[4, 4], texuniform=True, reflectance=0.04)
    material.textures[mujoco.mjtTextureRole.mjTEXROLE_RGB] = "hik_floor"
    size = max(2.0, 4 * radius)
    spec.worldbody.add_geom(name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[size, size, 0.05], material="hik_floor",
                            contype=0, conaffinity=0)
    height = max(3.0, 4 * radius)
    spec.worldbody.add_light(name="hik_key", pos=[0.6 * height, -0.4 * height, height], dir=[-0.5, 0.35, -1.0],
                             type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, castshadow=True, diffuse=[0.6, 0.6, 0.6])
    spec.worldbody.add_light(name="hik_fill", pos=[-0.5 * height, 0.6 * height, height], dir=[0.4, -0.5, -1.0],
                             type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL, castshadow=False, diffuse=[0.25, 0.25, 0.28])


def add_target(draft: Draft) -> None:
    """A mocap body ``target`` shows the goal pose: a translucent green ball and its x, y, z axes in red, green, blue.

    It has no contacts and no effect on the robot; its size is 12 % of the workspace radius (at least 4 cm).
    """
    import mujoco

    size = max(0.04, 0.12 * draft.measurements.workspace_radius)
    body = draft.spec.worldbody.add_body(name="target", mocap=True)
    body.add_geom(name="target", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.25 * size, 0, 0], rgba=[0.2, 0.85, 0.3, 0.45],
                  contype=0, conaffinity=0, group=2)
    for i, rgba in enumerate(([0.9, 0.15, 0.15, 0.8], [0.15, 0.8, 0.15, 0.8], [0.15, 0.3, 0.95, 0.8])):
        tip = [0.0, 0.0, 0.0]
        tip[i] = size
        body.add_geom(name=f"target_axis_{'xyz'[i]}", type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, *tip],
                      size=[0.06 * size, 0, 0], rgba=rgba, contype=0, conaffinity=0, group=2)


def _look_at_quat(pos: np.ndarray, center: np.ndarray) -> np.ndarray:
    import mujoco

    forward = center - pos
    forward /= np.linalg.norm(forward)
    right = np.cross(forward, [0.0, 0.0, 1.0])
    right /= np.linalg.norm(right)
    up = np.cross(right, forward)
    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, np.column_stack((right, up, -forward)).reshape(-1))
    return quat


def _add_camera(spec, name: str, center: np.ndarray, radius: float, direction: np.ndarray, fovy: float = 45.0) -> None:  # noqa: ANN001
    direction = direction / np.linalg.norm(direction)
    distance = 0.95 * radius / math.sin(math.radians(fovy) / 2)
    pos = center + distance * direction
    spec.worldbody.add_camera(name=name, pos=pos.tolist(), quat=_look_at_quat(pos, center).tolist(), fovy=fovy)


def add_cameras(draft: Draft) -> None:
    """A ``workspace`` camera frames the end-effector's workspace and an ``overview`` camera the whole robot.

    Both look from the robot's front-left and slightly above (``RobotSpec.front`` in the root
    body's frame), with a 45° field of view, far enough for the ball around what they frame.
    """
    measured = draft.measurements
    front = measured.root_rotation @ np.asarray(draft.robot.front, dtype=float)
    front = front / max(np.linalg.norm(front[:2]), 1e-9)
    side = np.array([-front[1], front[0], 0.0])  # the robot's left
    view = np.array([front[0], front[1], 0.0]) + 0.75 * side + [0.0, 0.0, 0.6]
    _add_camera(draft.spec, "workspace", measured.workspace_center, measured.workspace_radius, view)
    _add_camera(draft.spec, "overview", measured.robot_center, measured.robot_radius, view)


def add_home_keyframe(draft: Draft) -> None:
    """A ``home`` keyframe holds the robot at home, every servo commanding it and the target on the end-effector; the scene is compiled.

    This is the second and last compile. The keyframe's values are read from the compiled scene
    itself (a keyframe changes nothing else in a compile), then written into both the model and
    the spec, so that ``spec.to_xml()`` and the model agree.
    """
    import mujoco

    spec = draft.spec
    key = spec.add_key(name="home")
    model = compile_spec(spec, draft.robot.urdf.name)
    data = mujoco.MjData(model)
    set_joints(model, data, draft.home)
    for act in range(model.nu):
        data.ctrl[act] = data.qpos[model.jnt_qposadr[model.actuator_trnid[act, 0]]]
    mujoco.mj_forward(model, data)
    ee = model.site("ee").id
    mquat = np.empty(4)
    mujoco.mju_mat2Quat(mquat, data.site_xmat[ee])
    values = {"qpos": data.qpos.tolist(), "ctrl": data.ctrl.tolist(), "mpos": data.site_xpos[ee].tolist(), "mquat": mquat.tolist()}
    index = model.key("home").id
    for field, value in values.items():
        setattr(key, field, value)
        getattr(model, f"key_{field}")[index] = value
    draft.model = model
