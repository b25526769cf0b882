"""What the scene changes in and adds to a robot's URDF, as a numbered list that is also the code.

MuJoCo Menagerie documents each model by its *derivation steps*: what was changed from the
source description, in order. :data:`DERIVATION` is that list for every hik_sim scene: each entry
is a function ``step(draft)`` on a :class:`~hik_sim.sim.draft.Draft` whose docstring's first
line is the list entry and whose body is the change. :func:`~hik_sim.sim.build_scene` runs
the steps in order; ``python -m hik_sim.scene --derivation`` prints the list.

Steps 1–4 rewrite the URDF's XML (parsed once, :func:`hik_sim.robots.urdf.load_urdf_tree`), step 5 lets
MuJoCo read it into an ``MjSpec``, steps 6–14 change the robot in the spec, step 15 measures it on
a first compile (:mod:`~hik_sim.sim.measure`), step 16 adds the servos
(:mod:`~hik_sim.sim.servos`), steps 17–21 dress the scene and compile it a second and last time
(:mod:`~hik_sim.sim.dressing`).
"""

from __future__ import annotations

import math
import re
import xml.etree.ElementTree as ET
from typing import Callable

import numpy as np

from hik_sim.errors import HikError, MeshError
from hik_sim.robots.meshes import mujoco_mesh
from hik_sim.sim.draft import Draft
from hik_sim.sim.dressing import add_cameras, add_floor_and_lights, add_home_keyframe, add_target, stand_on_floor
from hik_sim.sim.measure import measure_on_a_first_compile
from hik_sim.sim.servos import add_position_servos
from hik_sim.robots.urdf import resolve_mesh_uri

__all__ = ["DERIVATION", "RESERVED_NAMES", "Step", "describe", "mujoco_urdf", "repair_inertia", "URDF_STEPS"]

Step = Callable[[Draft], None]

# Names the scene gives its own elements, by element kind; a robot must not use them.
RESERVED_NAMES: dict[str, tuple[str, ...]] = {
    "body": ("target",),
    "geom": ("floor", "target", "target_axis_x", "target_axis_y", "target_axis_z"),
    "site": ("ee",),
    "camera": ("workspace", "overview"),
    "key": ("home",),
}


# 1–4: the URDF's XML


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


def repair_inertias(draft: Draft) -> None:
    """Invalid inertias are repaired; a moving link without an ``<inertial>`` gets 1 g.

    MuJoCo rejects a mass below its minimum and an inertia that is not positive definite or breaks
    the triangle inequality; :func:`repair_inertia` changes such values as little as it can. A
    massless link welded to its parent by fixed joints is left alone.
    """
    movable_children = {j.child for j in draft.urdf.joints if j.type != "fixed"}
    for link in draft.xml.findall("link"):
        _repair_link_inertial(link, link.get("name") in movable_children)


def drop_collision_geometry(draft: Draft) -> None:
    """Collision geometry is dropped from every link that has visual geometry.

    Contacts are off in hik_sim scenes (step 10), so collision meshes would only cost loading
    time; a link with no visual keeps its collision geometry as its picture.
    """
    for link in draft.xml.findall("link"):
        if link.find("visual") is not None:
            for collision in link.findall("collision"):
                link.remove(collision)


def convert_meshes(draft: Draft) -> None:
    """Meshes are resolved (``package://`` as ROS does) and converted to files MuJoCo reads.

    COLLADA and ASCII STL meshes are converted once into the mesh cache (:mod:`hik_sim.robots.meshes`);
    a visual mesh whose source carries a colour keeps it where the URDF gives no material.
    """
    robot, urdf = draft.robot, draft.urdf
    for link in draft.xml.findall("link"):
        for visual in link.findall("visual"):
            for mesh in visual.iter("mesh"):
                converted = mujoco_mesh(resolve_mesh_uri(mesh.get("filename", ""), urdf.path, dict(robot.package_dirs)))
                mesh.set("filename", str(converted.path))
                if converted.rgba is not None and visual.find("material") is None:
                    material = ET.SubElement(visual, "material", name=f"hik_{converted.path.stem}")
                    ET.SubElement(material, "color", rgba=" ".join(f"{c:g}" for c in converted.rgba))
        for collision in link.findall("collision"):
            for mesh in collision.iter("mesh"):
                source = resolve_mesh_uri(mesh.get("filename", ""), urdf.path, dict(robot.package_dirs))
                mesh.set("filename", str(mujoco_mesh(source).path))


def keep_frames_and_visuals(draft: Draft) -> None:
    """A ``<mujoco><compiler>`` element keeps fixed-joint frames (the tool frame) and visual meshes.

    ``fusestatic="false"`` keeps every link a body, so the end-effector link exists;
    ``discardvisual="false"`` keeps the visual meshes; ``strippath="false"`` keeps the cache
    paths; ``balanceinertia="true"`` lets MuJoCo fix what step 1 left. A ``<mujoco>`` element the
    URDF already has is replaced.
    """
    root = draft.xml
    for old in root.findall("mujoco"):
        root.remove(old)
    extension = ET.SubElement(root, "mujoco")
    ET.SubElement(extension, "compiler", fusestatic="false", discardvisual="false", strippath="false", balanceinertia="true")


# 5: MuJoCo reads it


def read_into_mjspec(draft: Draft) -> None:
    """MuJoCo reads the rewritten URDF into an ``MjSpec`` (its own URDF importer).

    Raises:
        MeshError: MuJoCo cannot load a mesh.
        HikError: MuJoCo cannot load the URDF otherwise.
    """
    import mujoco

    try:
        draft.spec = mujoco.MjSpec.from_string(ET.tostring(draft.xml, encoding="unicode"))
    except ValueError as exc:
        message = str(exc)
        error = MeshError if "mesh" in message.lower() else HikError
        raise error(f"MuJoCo cannot load the URDF {draft.robot.urdf}: {message}") from None


# 6–14: the robot in the spec


def check_reserved_names(draft: Draft) -> None:
    """The robot must not use a name the scene gives its own elements (:data:`RESERVED_NAMES`).

    Raises:
        HikError: it does; the message names the element and every reserved name.
    """
    for kind, names in RESERVED_NAMES.items():
        for name in names:
            if getattr(draft.spec, kind)(name) is not None:
                reserved = "; ".join(f"{k}: {', '.join(v)}" for k, v in RESERVED_NAMES.items())
                raise HikError(
                    f"{draft.robot.urdf.name} already has a {kind} named {name!r}, a name hik_sim's scene gives its own "
                    f"elements; rename it in the URDF (reserved names, by kind: {reserved}; actuators: the chain's "
                    "joint names and hold:<joint>)"
                )


def set_name_and_integrator(draft: Draft) -> None:
    """The model takes the robot's name, the options' timestep and the implicit-fast integrator.

    ``implicitfast`` integrates the servos' damping implicitly, so stiff servos stay stable at the
    2 ms step.
    """
    import mujoco

    spec = draft.spec
    spec.modelname = draft.robot.name
    spec.option.timestep = draft.options.timestep
    spec.option.integrator = mujoco.mjtIntegrator.mjINT_IMPLICITFAST


def fix_base(draft: Draft) -> None:
    """A floating base joint is removed: the robot's root is fixed in place."""
    import mujoco

    for joint in list(draft.spec.joints):
        if joint.type == mujoco.mjtJoint.mjJNT_FREE:
            draft.spec.delete(joint)


def compensate_gravity(draft: Draft) -> None:
    """Every body is gravity-compensated (``gravcomp=1``): the commanded configuration is what it holds."""
    for body in draft.spec.bodies:
        if body.name != "world":
            body.gravcomp = 1.0


def disable_contacts(draft: Draft) -> None:
    """Contacts are off (``contype = conaffinity = 0``): no self-collision in an IK study."""
    for geom in draft.spec.geoms:
        geom.contype = 0
        geom.conaffinity = 0


def shell_mesh_inertia(draft: Draft) -> None:
    """Meshes are read as shells for inertia: visual meshes may be open or flat, and the URDF gives the inertias."""
    import mujoco

    for mesh in draft.spec.meshes:
        mesh.inertia = mujoco.mjtMeshInertia.mjMESH_INERTIA_SHELL


def make_joints_ideal(draft: Draft) -> None:
    """Joints get at least the minimum armature, no effort limit, no dry friction and stiff limits.

    The armature (``SceneOptions.min_armature``) stands for a geared motor's reflected inertia
    and damps the coupling between heavy and light links; URDF effort limits would saturate the
    stiff servos; dry friction would leave a steady-state error of friction / kp; joint limits are
    as stiff as the step allows (``solref = (2·timestep, 1)``).
    """
    options = draft.options
    for joint in draft.spec.joints:
        joint.armature = max(joint.armature, options.min_armature)
        joint.actfrclimited = False
        joint.frictionloss = 0.0
        joint.solref_limit = [2 * options.timestep, 1.0]


def find_chain_joints(draft: Draft) -> None:
    """The chain's joints must be in MuJoCo's model; every other movable joint is held at its home value.

    Raises:
        HikError: MuJoCo's model lacks a chain joint.
    """
    robot = draft.robot
    names = {j.name for j in draft.spec.joints}
    missing = [j for j in robot.joint_names if j not in names]
    if missing:
        raise HikError(f"MuJoCo's model of {robot.urdf.name} lacks chain joints {missing}")
    draft.held = {name: value for name, value in robot.held_joints.items() if name in names}
    draft.home = {**draft.held, **dict(zip(robot.joint_names, robot.home))}


def add_ee_site(draft: Draft) -> None:
    """An ``ee`` site marks the end-effector link's frame (the pose IK reaches).

    Raises:
        HikError: MuJoCo's model has no body for the end-effector link.
    """
    robot = draft.robot
    ee_body = draft.spec.body(robot.ee_link)
    if ee_body is None:
        raise HikError(f"MuJoCo's model of {robot.urdf.name} has no body for end-effector link {robot.ee_link!r}")
    ee_body.add_site(name="ee", size=[0.008, 0, 0], rgba=[0.95, 0.3, 0.1, 0.9], group=2)


URDF_STEPS: tuple[Step, ...] = (repair_inertias, drop_collision_geometry, convert_meshes, keep_frames_and_visuals)
"""Steps 1–4, on the URDF's XML (what :func:`mujoco_urdf` applies)."""

DERIVATION: tuple[Step, ...] = (
    *URDF_STEPS,
    read_into_mjspec,
    check_reserved_names,
    set_name_and_integrator,
    fix_base,
    compensate_gravity,
    disable_contacts,
    shell_mesh_inertia,
    make_joints_ideal,
    find_chain_joints,
    add_ee_site,
    measure_on_a_first_compile,
    add_position_servos,
    stand_on_floor,
    add_floor_and_lights,
    add_target,
    add_cameras,
    add_home_keyframe,
)
"""Every change from the URDF to the compiled scene, in the order :func:`~hik_sim.sim.build_scene` applies them."""


def describe(steps: tuple[Step, ...] = DERIVATION) -> str:
    """The steps as a numbered list: each docstring's first line and where the step lives."""
    lines = []
    for number, step in enumerate(steps, 1):
        summary = (step.__doc__ or step.__name__).strip().splitlines()[0]
        summary = re.sub(r":\w+:`~?([^`]*)`", r"\1", summary).replace("``", "")  # reST markup to plain text
        lines.append(f"{number:2d}. {summary}  [{step.__module__.rsplit('.', 1)[-1]}.{step.__name__}]")
    return "\n".join(lines)


def mujoco_urdf(robot) -> str:  # noqa: ANN001 - RobotSpec
    """The robot's URDF after steps 1–4: what MuJoCo reads in step 5.

    Meshes point to MuJoCo-readable files in the cache (with the source's colour where the URDF
    gives none), collision geometry is dropped where a link has visual geometry (contacts are off
    in hik_sim scenes), inertias are repaired (:func:`repair_inertia`), and a ``<mujoco>``
    element keeps fixed-joint frames and visual meshes.

    Raises:
        UrdfError: the URDF is malformed.
        MeshError: a mesh is missing or unreadable.
    """
    draft = Draft.start(robot)
    for step in URDF_STEPS:
        step(draft)
    return ET.tostring(draft.xml, encoding="unicode")
