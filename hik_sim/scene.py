"""MuJoCo scenes of URDF robots, built with ``MjSpec``.

:func:`build_scene` turns a :class:`~hik_sim.robots.RobotSpec` into a simulated scene:

- the URDF is made MuJoCo-ready (:func:`mujoco_urdf`): ``package://`` meshes resolved, meshes MuJoCo
  cannot read converted (:mod:`hik_sim.meshes`), invalid inertias repaired, the tool frame kept
  (``fusestatic="false"``) and visual meshes kept;
- the robot stands on a floor (lifted so that its lowest point touches it), its base fixed in
  place (a floating base joint is removed), under two lights, with ideal gravity compensation and
  no self-contacts: an IK study where the commanded configuration is what the robot reaches;
- ideal position servos (no effort limits) on the chain joints (``ctrlrange`` = joint limits) and firm holds (position
  actuators named ``hold:<joint>``) on every other joint, stiffness and damping set from the
  largest joint-space inertia each joint sees over sampled configurations, so every joint
  responds at least at the same natural frequency and is never underdamped (smooth commands are
  tracked without crossing a limit; a step across the whole range can still push a light wrist
  joint past its limit for a moment through the dynamic coupling with heavy links, so
  controllers should send rate-limited targets); no dry friction, no effort limits;
- an ``ee`` site on the end-effector link, a mocap body ``target`` that shows the goal pose with
  its axes (x red, y green, z blue), a ``workspace`` camera that frames the arm's reachable
  workspace, an ``overview`` camera that frames the whole robot, and a ``home`` keyframe.

``python -m hik_sim.scene --robot NAME --xml OUT.xml --png OUT.png`` writes the MJCF (MuJoCo's
viewer opens it) and a rendered picture, and checks the scene: FK of the chain against MuJoCo,
hold of home over 2 s, warnings.
"""

from __future__ import annotations

import math
import os
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from hik_sim.errors import HikError, MeshError
from hik_sim.meshes import mujoco_mesh
from hik_sim.robots import RobotSpec
from hik_sim.urdf import load_urdf, resolve_mesh_uri

__all__ = ["SceneOptions", "Scene", "SceneCheck", "build_scene", "check_scene", "ensure_headless_gl", "mujoco_urdf", "render_frame", "repair_inertia"]


def ensure_headless_gl() -> None:
    """Choose EGL for offscreen rendering when no display and no ``MUJOCO_GL`` are set.

    Must run before ``mujoco`` first creates a GL context (before :class:`mujoco.Renderer`).
    """
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


@dataclass(frozen=True)
class SceneOptions:
    """How a scene is simulated.

    Attributes:
        timestep: physics step [s].
        natural_frequency: natural frequency of every joint's position servo [Hz].
        min_armature: smallest joint armature [kg·m²], standing for the reflected inertia of a
            geared motor; it damps the dynamic coupling between heavy and light links.
        shadow_size: shadow map size [px]; 1024 renders several times faster than 4096 in software GL.
        offscreen_size: largest offscreen render (width, height) [px].
    """

    timestep: float = 0.002
    natural_frequency: float = 20.0
    min_armature: float = 0.01
    shadow_size: int = 1024
    offscreen_size: tuple[int, int] = (1280, 960)

    def __post_init__(self) -> None:
        if not 0 < self.timestep <= 0.01:
            raise HikError(f"timestep must be in (0, 0.01] s, got {self.timestep}")
        if not 0 < self.natural_frequency <= 0.25 / self.timestep:
            raise HikError(f"natural_frequency must be in (0, {0.25 / self.timestep:g}] Hz for timestep {self.timestep}, got {self.natural_frequency}")
        if not 0 <= self.min_armature < math.inf:  # NaN passed and reached the compiled model
            raise HikError(f"min_armature must be finite and >= 0, got {self.min_armature}")
        if isinstance(self.shadow_size, bool) or not isinstance(self.shadow_size, (int, np.integer)) or self.shadow_size < 1:
            raise HikError(f"shadow_size must be a whole number of pixels >= 1, got {self.shadow_size!r}")
        size = self.offscreen_size
        if not (isinstance(size, (tuple, list)) and len(size) == 2
                and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in size)):
            raise HikError(f"offscreen_size must be (width, height) in whole pixels >= 1, got {size!r}")

    @property
    def servo_lag(self) -> float:
        """How far a servo trails a target moving at constant speed, in time: 2/ω [s] (critical damping)."""
        return 2 / (2 * math.pi * self.natural_frequency)


def repair_inertia(mass: float, inertia: np.ndarray, min_mass: float = 1e-4, min_moment: float = 1e-8) -> tuple[float, np.ndarray, bool]:
    """A physically valid (mass, inertia) close to the given one.

    The inertia must be symmetric positive definite and its principal moments must satisfy the
    triangle inequality (A + B ≥ C). Eigenvalues are raised to ``min_moment`` and, where the
    triangle inequality fails, the largest moment is lowered to the sum of the other two; the
    principal axes are kept.

    Args:
        mass: [kg].
        inertia: (3, 3) about the centre of mass [kg·m²].
        min_mass: smallest accepted mass [kg].
        min_moment: smallest accepted principal moment [kg·m²].

    Returns:
        (mass, inertia, changed).
    """
    inertia = 0.5 * (np.asarray(inertia, dtype=float) + np.asarray(inertia, dtype=float).T)
    changed = False
    if not math.isfinite(mass) or mass < min_mass:
        mass, changed = min_mass, True
    if not np.all(np.isfinite(inertia)):
        inertia, changed = np.eye(3) * min_moment, True
    moments, axes = np.linalg.eigh(inertia)
    fixed = np.maximum(moments, min_moment)
    if fixed[2] > fixed[0] + fixed[1]:
        fixed[2] = fixed[0] + fixed[1]
    if np.any(np.abs(fixed - moments) > 1e-12 * max(1.0, float(np.abs(moments).max()))):
        changed = True
        inertia = axes @ np.diag(fixed) @ axes.T
    return mass, inertia, changed


def _repair_link_inertial(link: ET.Element, moving: bool) -> None:
    inertial = link.find("inertial")
    if inertial is None:
        if not moving:
            return  # a massless frame welded to its parent is fine
        inertial = ET.SubElement(link, "inertial")
        ET.SubElement(inertial, "mass", value="0.001")
        ET.SubElement(inertial, "inertia", ixx="1e-6", iyy="1e-6", izz="1e-6", ixy="0", ixz="0", iyz="0")
        return
    mass_el = inertial.find("mass")
    inertia_el = inertial.find("inertia")
    try:
        mass = float(mass_el.get("value", "0")) if mass_el is not None else 0.0
        v = {k: float(inertia_el.get(k, "0")) if inertia_el is not None else 0.0 for k in ("ixx", "iyy", "izz", "ixy", "ixz", "iyz")}
    except ValueError:
        raise HikError(f"link {link.get('name')!r} has a non-numeric mass or inertia") from None
    matrix = np.array([[v["ixx"], v["ixy"], v["ixz"]], [v["ixy"], v["iyy"], v["iyz"]], [v["ixz"], v["iyz"], v["izz"]]])
    mass, matrix, changed = repair_inertia(mass, matrix)
    if changed:
        if mass_el is None:
            mass_el = ET.SubElement(inertial, "mass")
        mass_el.set("value", repr(mass))
        if inertia_el is None:
            inertia_el = ET.SubElement(inertial, "inertia")
        for key, (i, j) in {"ixx": (0, 0), "iyy": (1, 1), "izz": (2, 2), "ixy": (0, 1), "ixz": (0, 2), "iyz": (1, 2)}.items():
            inertia_el.set(key, repr(float(matrix[i, j])))


def mujoco_urdf(robot: RobotSpec) -> str:
    """The robot's URDF, rewritten so that MuJoCo compiles it as the URDF means it.

    Meshes point to MuJoCo-readable files in the cache (with the source's colour where the URDF
    gives none), collision geometry is dropped where a link has visual geometry (contacts are off
    in hik_sim scenes), inertias are repaired (:func:`repair_inertia`), and a ``<mujoco>``
    element keeps fixed-joint frames and visual meshes.

    Raises:
        UrdfError: the URDF is malformed.
        MeshError: a mesh is missing or unreadable.
    """
    model = load_urdf(robot.urdf)
    tree = ET.parse(robot.urdf)
    root = tree.getroot()
    movable_children = {j.child for j in model.joints if j.type != "fixed"}
    for link in root.findall("link"):
        _repair_link_inertial(link, link.get("name") in movable_children)
        if link.find("visual") is not None:
            for collision in link.findall("collision"):
                link.remove(collision)
        for visual in link.findall("visual"):
            for mesh in visual.iter("mesh"):
                source = resolve_mesh_uri(mesh.get("filename", ""), model.path, dict(robot.package_dirs))
                converted = mujoco_mesh(source)
                mesh.set("filename", str(converted.path))
                if converted.rgba is not None and visual.find("material") is None:
                    material = ET.SubElement(visual, "material", name=f"hik_{converted.path.stem}")
                    ET.SubElement(material, "color", rgba=" ".join(f"{c:g}" for c in converted.rgba))
        for collision in link.findall("collision"):
            for mesh in collision.iter("mesh"):
                source = resolve_mesh_uri(mesh.get("filename", ""), model.path, dict(robot.package_dirs))
                mesh.set("filename", str(mujoco_mesh(source).path))
    for old in root.findall("mujoco"):
        root.remove(old)
    extension = ET.SubElement(root, "mujoco")
    ET.SubElement(extension, "compiler", fusestatic="false", discardvisual="false", strippath="false", balanceinertia="true")
    return ET.tostring(root, encoding="unicode")


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
    model: object
    spec: object
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


def _floor_and_lights(spec, radius: float, options: SceneOptions) -> None:  # noqa: ANN001
    import mujoco

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


def _add_target(spec, size: float) -> None:  # noqa: ANN001
    import mujoco

    body = spec.worldbody.add_body(name="target", mocap=True)
    body.add_geom(name="target", type=mujoco.mjtGeom.mjGEOM_SPHERE, size=[0.25 * size, 0, 0], rgba=[0.2, 0.85, 0.3, 0.45],
                  contype=0, conaffinity=0, group=2)
    for i, rgba in enumerate(([0.9, 0.15, 0.15, 0.8], [0.15, 0.8, 0.15, 0.8], [0.15, 0.3, 0.95, 0.8])):
        tip = [0.0, 0.0, 0.0]
        tip[i] = size
        body.add_geom(name=f"target_axis_{'xyz'[i]}", type=mujoco.mjtGeom.mjGEOM_CAPSULE, fromto=[0, 0, 0, *tip],
                      size=[0.06 * size, 0, 0], rgba=rgba, contype=0, conaffinity=0, group=2)


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


# Names the scene gives its own elements, by element kind; a robot must not use them.
RESERVED_NAMES: dict[str, tuple[str, ...]] = {
    "body": ("target",),
    "geom": ("floor", "target", "target_axis_x", "target_axis_y", "target_axis_z"),
    "site": ("ee",),
    "camera": ("workspace", "overview"),
    "key": ("home",),
}


def _check_reserved_names(spec, robot: RobotSpec) -> None:  # noqa: ANN001
    for kind, names in RESERVED_NAMES.items():
        for name in names:
            if getattr(spec, kind)(name) is not None:
                reserved = "; ".join(f"{k}: {', '.join(v)}" for k, v in RESERVED_NAMES.items())
                raise HikError(
                    f"{robot.urdf.name} already has a {kind} named {name!r}, a name hik_sim's scene gives its own "
                    f"elements; rename it in the URDF (reserved names, by kind: {reserved}; actuators: the chain's "
                    "joint names and hold:<joint>)"
                )


def _compile(spec, what: str):  # noqa: ANN001, ANN202
    try:
        return spec.compile()
    except ValueError as exc:  # MuJoCo reports compile errors as ValueError
        raise HikError(f"MuJoCo cannot compile {what}: {exc}") from None


def build_scene(robot: RobotSpec, options: SceneOptions | None = None, workspace_samples: int = 512) -> Scene:
    """Build and compile the MuJoCo scene of a robot.

    Args:
        robot: the robot.
        options: simulation options.
        workspace_samples: random chain configurations used to find the workspace the
            ``workspace`` camera frames (seeded: the scene is deterministic).

    Returns:
        The :class:`Scene`.

    Raises:
        UrdfError, MeshError: the URDF or a mesh is unusable.
        HikError: ``robot`` is not a RobotSpec, or MuJoCo cannot compile the robot.
    """
    if not isinstance(robot, RobotSpec):  # a robot's name was a raw AttributeError
        raise HikError(f"build_scene takes a RobotSpec (hik_sim.robots.get_robot(name) or robot_from_urdf(...)), got {robot!r}")
    ensure_headless_gl()  # before the first import of mujoco, so that the scene can be rendered headless
    import mujoco

    options = options or SceneOptions()
    try:
        spec = mujoco.MjSpec.from_string(mujoco_urdf(robot))
    except ValueError as exc:
        message = str(exc)
        error = MeshError if "mesh" in message.lower() else HikError
        raise error(f"MuJoCo cannot load the URDF {robot.urdf}: {message}") from None
    _check_reserved_names(spec, robot)
    spec.modelname = robot.name
    spec.option.timestep = options.timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST
    for joint in list(spec.joints):
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            spec.delete(joint)  # a floating base is fixed in place
    for body in spec.bodies:
        if body.name != "world":
            body.gravcomp = 1.0
    for geom in spec.geoms:
        geom.contype = 0
        geom.conaffinity = 0
    for mesh in spec.meshes:  # visual meshes may be open or flat: no volume needed, inertias come from the URDF
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL
    for joint in spec.joints:
        joint.armature = max(joint.armature, options.min_armature)
        joint.actfrclimited = False  # ideal servos: URDF effort limits would saturate the stiff PD
        joint.frictionloss = 0.0  # dry friction would leave a steady-state error of friction / kp
        joint.solref_limit = [2 * options.timestep, 1.0]  # joint limits as stiff as the step allows
    names = {j.name for j in spec.joints}
    missing = [j for j in robot.joint_names if j not in names]
    if missing:
        raise HikError(f"MuJoCo's model of {robot.urdf.name} lacks chain joints {missing}")
    ee_body = spec.body(robot.ee_link)
    if ee_body is None:
        raise HikError(f"MuJoCo's model of {robot.urdf.name} has no body for end-effector link {robot.ee_link!r}")
    ee_body.add_site(name="ee", size=[0.008, 0, 0], rgba=[0.95, 0.3, 0.1, 0.9], group=2)
    held = {name: value for name, value in robot.held_joints.items() if name in names}
    home = {**held, **dict(zip(robot.joint_names, robot.home))}

    # First compile: lift the robot onto the floor, then measure inertia and workspace.
    model = _compile(spec, robot.urdf.name)
    data = mujoco.MjData(model)
    for name, value in home.items():
        data.qpos[model.joint(name).qposadr[0]] = value
    mujoco.mj_forward(model, data)
    lift = -_lowest_point(model, data)
    root = spec.worldbody.first_body()
    if abs(lift) > 1e-9 and root is not None:
        root.pos = [root.pos[0], root.pos[1], root.pos[2] + lift]
    # Sample the chain's configuration space: the workspace (for the camera) and the largest
    # joint-space inertia each joint sees (for servos that are never underdamped).
    rng = np.random.default_rng(0)
    qadr = np.array([model.joint(n).qposadr[0] for n in robot.joint_names])
    ee_id = model.site("ee").id
    lower, upper = np.asarray(robot.lower), np.asarray(robot.upper)
    full_inertia = np.zeros((model.nv, model.nv))
    mujoco.mj_fullM(model, data, full_inertia)
    max_inertia = np.diag(full_inertia).copy()
    points = []
    for _ in range(workspace_samples):
        data.qpos[qadr] = rng.uniform(lower, upper)
        mujoco.mj_fwdPosition(model, data)
        points.append(data.site_xpos[ee_id].copy())
        mujoco.mj_fullM(model, data, full_inertia)
        np.maximum(max_inertia, np.diag(full_inertia), out=max_inertia)
    # kp = I_max·ω², kv = 2·I_max·ω: critically damped at the largest inertia, overdamped below it.
    omega = 2 * math.pi * options.natural_frequency
    for name in (*robot.joint_names, *held):
        joint = model.joint(name)
        if name in robot.joint_names:
            lo, hi = robot.lower[robot.joint_names.index(name)], robot.upper[robot.joint_names.index(name)]
        else:
            lo, hi = model.jnt_range[joint.id] if model.jnt_limited[joint.id] else (-math.pi, math.pi)
        inertia = max(float(max_inertia[joint.dofadr[0]]), 1e-8)
        actuator = spec.add_actuator(name=name if name in robot.joint_names else f"hold:{name}", target=name,
                                     trntype=mujoco.mjtTrn.mjTRN_JOINT)
        actuator.set_to_position(kp=inertia * omega**2, kv=2 * inertia * omega)
        actuator.ctrllimited = True
        actuator.ctrlrange = [float(lo), float(hi)]

    points = np.asarray(points) + [0.0, 0.0, lift]
    center = 0.5 * (points.min(axis=0) + points.max(axis=0))
    radius = max(float(np.linalg.norm(points - center, axis=1).max()), 0.05)  # an end-effector that never moves
    data.qpos[qadr] = robot.home
    mujoco.mj_forward(model, data)
    body_points = data.xpos[1:] + [0.0, 0.0, lift]
    whole_center = 0.5 * (body_points.min(axis=0) + body_points.max(axis=0))
    whole_radius = float(np.linalg.norm(body_points - whole_center, axis=1).max()) + 0.1

    _floor_and_lights(spec, max(radius, whole_radius), options)
    _add_target(spec, size=max(0.04, 0.12 * radius))
    front = data.xmat[1].reshape(3, 3) @ np.asarray(robot.front, dtype=float)  # root body's frame
    front = front / max(np.linalg.norm(front[:2]), 1e-9)
    side = np.array([-front[1], front[0], 0.0])  # the robot's left
    view = np.array([front[0], front[1], 0.0]) + 0.75 * side + [0.0, 0.0, 0.6]
    _add_camera(spec, "workspace", center, radius, view)
    _add_camera(spec, "overview", whole_center, whole_radius, view)

    model = _compile(spec, robot.urdf.name)
    data = mujoco.MjData(model)
    for name, value in home.items():
        data.qpos[model.joint(name).qposadr[0]] = value
    chain_actuators = np.array([model.actuator(n).id for n in robot.joint_names])
    hold_actuators = np.array([model.actuator(f"hold:{n}").id for n in held], dtype=int)
    for act in range(model.nu):
        data.ctrl[act] = data.qpos[model.jnt_qposadr[model.actuator_trnid[act, 0]]]
    mujoco.mj_forward(model, data)
    target = model.body("target")
    key = spec.add_key(name="home", qpos=data.qpos.tolist(), ctrl=data.ctrl.tolist(),
                       mpos=data.site_xpos[model.site("ee").id].tolist(),
                       mquat=_site_quat(data, model.site("ee").id).tolist())
    del key
    model = _compile(spec, robot.urdf.name)
    return Scene(
        robot=robot,
        model=model,
        spec=spec,
        chain_qpos=np.array([model.joint(n).qposadr[0] for n in robot.joint_names]),
        chain_dof=np.array([model.joint(n).dofadr[0] for n in robot.joint_names]),
        chain_actuators=chain_actuators,
        hold_actuators=hold_actuators,
        ee_site=model.site("ee").id,
        base_body=model.body(robot.base_link).id,
        target_mocap=int(model.body_mocapid[target.id]),
        home_key=model.key("home").id,
        workspace_center=center,
        workspace_radius=radius,
    )


def _site_quat(data, site: int) -> np.ndarray:  # noqa: ANN001
    import mujoco

    quat = np.empty(4)
    mujoco.mju_mat2Quat(quat, data.site_xmat[site])
    return quat


def render_frame(scene: Scene, data, width: int = 640, height: int = 480, camera: str = "workspace") -> np.ndarray:  # noqa: ANN001
    """One RGB frame (height, width, 3) uint8 of the scene from a named camera.

    Raises:
        HikError: the size exceeds the scene's offscreen buffer or the camera is unknown.
    """
    import mujoco

    ensure_headless_gl()
    max_w, max_h = int(scene.model.vis.global_.offwidth), int(scene.model.vis.global_.offheight)
    if not (0 < width <= max_w and 0 < height <= max_h):
        raise HikError(f"render size {width}x{height} must be within 1..{max_w} x 1..{max_h} pixels")
    cameras = [scene.model.camera(i).name for i in range(scene.model.ncam)]
    if camera not in cameras:
        raise HikError(f"unknown camera {camera!r}; cameras are: {', '.join(cameras)}")
    try:
        renderer = mujoco.Renderer(scene.model, height=height, width=width)
    except mujoco.FatalError as exc:
        raise HikError(
            f"cannot create an OpenGL context ({exc}); with no display, set MUJOCO_GL=egl before Python "
            "imports mujoco (hik_sim's commands do this themselves)"
        ) from None
    with renderer:
        renderer.update_scene(data, camera=camera)
        return renderer.render().copy()


@dataclass(frozen=True)
class SceneCheck:
    """What :func:`check_scene` measured.

    Attributes:
        fk_pos_err_max: largest position gap between :class:`~hik_sim.kinematics.Chain` FK and
            MuJoCo's ``ee`` site over the samples [m].
        fk_rot_err_max: largest rotation gap over the samples [rad].
        hold_err_max: largest joint drift from home after ``hold_seconds`` of simulation [rad or m].
        warnings: MuJoCo warnings raised while stepping, as "name: count".
        samples: random configurations compared.
        hold_seconds: simulated time at home [s].
    """

    fk_pos_err_max: float
    fk_rot_err_max: float
    hold_err_max: float
    warnings: tuple[str, ...]
    samples: int
    hold_seconds: float

    @property
    def ok(self) -> bool:
        """Within the toolkit's tolerances: 1e-6 m, 1e-5 rad, 1 mrad hold, no warnings."""
        return self.fk_pos_err_max < 1e-6 and self.fk_rot_err_max < 1e-5 and self.hold_err_max < 1e-3 and not self.warnings


def _warnings(data) -> tuple[str, ...]:  # noqa: ANN001
    import mujoco

    return tuple(
        f"{mujoco.mjtWarning(i).name}: {data.warning[i].number}" for i in range(len(data.warning)) if data.warning[i].number
    )


def check_scene(scene: Scene, samples: int = 1000, hold_seconds: float = 2.0, seed: int = 0) -> SceneCheck:
    """Compare the chain's FK with MuJoCo and check that the scene holds home.

    Args:
        scene: the scene.
        samples: random in-limit chain configurations to compare (at least 1).
        hold_seconds: how long to simulate at home [s].
        seed: seed of the configurations.

    Returns:
        The measurements.

    Raises:
        HikError: fewer than 1 sample, or a negative hold time.
    """
    import mujoco
    import torch

    from hik_sim.kinematics import Chain
    from hik_sim.rotations import rotation_error

    if samples < 1 or not hold_seconds >= 0:
        raise HikError(f"the scene check needs at least 1 sample and a hold time >= 0 s, got {samples} samples and {hold_seconds} s")
    chain = Chain(scene.robot)
    q = chain.sample(samples, torch.Generator().manual_seed(seed), torch.float64)
    expected = chain.fk(q)
    data = scene.make_data()
    got_pos, got_quat = np.empty((samples, 3)), np.empty((samples, 4))
    for i, qi in enumerate(q.numpy()):
        data.qpos[scene.chain_qpos] = qi
        mujoco.mj_kinematics(scene.model, data)
        got_pos[i], got_quat[i] = scene.ee_pose(data)
    pos_err = float((expected.pos - torch.from_numpy(got_pos)).norm(dim=-1).max())
    rot_err = float(rotation_error(expected.quat, torch.from_numpy(got_quat)).max())
    data = scene.make_data()
    start = data.qpos.copy()
    for _ in range(int(round(hold_seconds / scene.model.opt.timestep))):
        mujoco.mj_step(scene.model, data)
    hold = float(np.abs(data.qpos - start).max()) if scene.model.nq else 0.0
    return SceneCheck(pos_err, rot_err, hold, _warnings(data), samples, hold_seconds)


def _write_output(path: Path, flag: str, write) -> None:  # noqa: ANN001 - write(path) writes the file
    """Make ``path``'s folders and write it; an OS refusal (a file where a folder should be, no
    permission, a name too long) is an :class:`~hik_sim.errors.OutputError` naming the path."""
    from hik_sim.errors import OutputError

    blocking = next((parent for parent in path.parents if parent.is_file()), None)
    if blocking is not None:
        raise OutputError(f"cannot write {flag} {str(path)!r}: {str(blocking)!r} is a file, not a folder; "
                          "give a file path in a folder that can be written")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as exc:
        raise OutputError(f"cannot write {flag} {str(path)!r} ({exc.strerror or exc}); give a file path in a folder that "
                          "can be written") from exc


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.scene``: build a robot's scene, check it, write MJCF and a picture."""
    import argparse

    from hik_sim.cli import add_robot_arguments, robot_from_args

    ensure_headless_gl()
    parser = argparse.ArgumentParser(prog="python -m hik_sim.scene", description=main.__doc__)
    add_robot_arguments(parser)
    parser.add_argument("--xml", type=Path, default=None, help="write the scene's MJCF here (opens in MuJoCo's viewer)")
    parser.add_argument("--png", type=Path, default=None, help="write a rendered picture here")
    parser.add_argument("--camera", default="workspace", help="camera for --png: workspace (default) or overview")
    parser.add_argument("--size", default="640x480", help="picture size WxH [px] (default 640x480)")
    parser.add_argument("--samples", type=int, default=1000, help="configurations for the FK check (default 1000)")
    args = parser.parse_args(argv)
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.exit(2, f"error: --size must look like 640x480, got {args.size!r}\n")
    if width < 1 or height < 1:
        parser.exit(2, f"error: --size must be at least 1x1 pixels, got {args.size!r}\n")
    if args.png is not None and args.png.suffix.lower() != ".png":
        parser.exit(2, f"error: --png writes a PNG picture: give a path ending in .png, got {str(args.png)!r}\n")
    try:
        robot = robot_from_args(args)
        scene = build_scene(robot)
        check = check_scene(scene, samples=args.samples)
        if args.xml:
            _write_output(args.xml, "--xml", lambda path: path.write_text(scene.spec.to_xml()))
        if args.png:
            import imageio.v3 as iio

            frame = render_frame(scene, scene.make_data(), width, height, args.camera)
            _write_output(args.png, "--png", lambda path: iio.imwrite(path, frame))
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    m = scene.model
    print(f"robot        {robot.name}: {robot.dof} DOF, {robot.base_link} → {robot.ee_link} ({robot.source})")
    print(f"scene        {m.nbody} bodies, {m.njnt} joints, {m.nu} actuators ({len(scene.hold_actuators)} holds), {m.ngeom} geoms, {m.nmesh} meshes")
    print(f"FK check     {check.samples} configurations: max {check.fk_pos_err_max:.2e} m, {check.fk_rot_err_max:.2e} rad (Chain vs MuJoCo)")
    print(f"hold check   {check.hold_seconds:g} s at home: max drift {check.hold_err_max:.2e} rad; warnings: {', '.join(check.warnings) or 'none'}")
    print(f"workspace    centre {np.round(scene.workspace_center, 3).tolist()} m, radius {scene.workspace_radius:.3f} m")
    for label, path in (("MJCF", args.xml), ("picture", args.png)):
        if path:
            print(f"{label:12s} {path}")
    print("result       " + ("OK" if check.ok else "FAILED: outside 1e-6 m / 1e-5 rad / 1 mrad or warnings"))
    return 0 if check.ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
