"""The robots hik_sim ships: the IRB120 (default), the Panda, and five humanoid arms.

The humanoids were chosen for kinematic diversity, so that an IK method is not tuned to one arm
layout. Each IK chain is one (left) arm from a named base link to a named hand/tool frame; every
other joint (legs, head, the other arm, fingers) is held at home.

======  ===  ======================================================================================
name    DOF  chain
======  ===  ======================================================================================
talos   9    base_link → gripper_left_base_link: torso yaw + pitch, 7-DOF arm (3-DOF shoulder,
             elbow, 3-DOF wrist yaw/roll/pitch); PAL Robotics TALOS, an industrial-size humanoid.
romeo   8    base_link → l_gripper: trunk yaw, 7-DOF arm with a yaw-roll-yaw-pitch elbow/wrist
             split (Aldebaran Romeo); a long forearm and a narrow wrist range.
icub    10   root_link → l_hand_dh_frame: 3-DOF torso (pitch, roll, yaw), 7-DOF arm whose shoulder
             axes are tilted by 15° (IIT iCub v2.7, child-sized); the longest, most coupled chain.
g1      7    torso_link → left_rubber_hand: no torso joint, 7-DOF arm with a spherical-like 3-DOF
             wrist roll/pitch/yaw (Unitree G1, 29-DOF variant); the plain anthropomorphic arm.
jvrc1   10   PELVIS_S → l_wrist: 3-DOF waist (yaw, pitch, roll) and a 7-DOF arm with an elbow-yaw
             joint and a 2-DOF wrist (roll, yaw) (JVRC-1, the virtual robotics challenge humanoid).
======  ===  ======================================================================================

URDFs come from pip packages that install offline: ``example-robot-data`` (talos, romeo, g1,
panda), ``icub-models`` (icub) and ``jvrc-description`` (jvrc1). Home configurations of the
chains follow the packages' reference postures (the SRDF "half_sitting" states where one exists).
"""

from __future__ import annotations

import math
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from hik_sim.errors import HikError, UnknownRobotError
from hik_sim.robots.spec import RobotSpec, robot_from_urdf

__all__ = ["DEFAULT_ROBOT", "HUMANOIDS", "robot_names", "get_robot"]

DEFAULT_ROBOT = "irb120"
HUMANOIDS: tuple[str, ...] = ("talos", "romeo", "icub", "g1", "jvrc1")


def _example_robot_data() -> Path:
    for entry in sys.path:
        candidate = Path(entry) / "cmeel.prefix" / "share" / "example-robot-data"
        if candidate.is_dir():
            return candidate
    raise HikError("this robot's URDF comes from the package example-robot-data: pip install example-robot-data")


def _erd(rel: str) -> tuple[Path, dict[str, Path]]:
    root = _example_robot_data()
    return root / "robots" / rel, {"example-robot-data": root}


def _icub() -> tuple[Path, dict[str, Path]]:
    try:
        import icub_models
    except ImportError:
        raise HikError("the icub URDF comes from the package icub-models: pip install icub-models") from None
    urdf = Path(icub_models.get_model_file("iCubGazeboV2_7"))
    return urdf, {"iCub": Path(icub_models.get_models_path()).parent}


def _jvrc() -> tuple[Path, dict[str, Path]]:
    try:
        import jvrc_description
    except ImportError:
        raise HikError("the jvrc1 URDF comes from the package jvrc-description: pip install jvrc-description") from None
    root = Path(jvrc_description.__file__).parent
    return root / "urdf" / "jvrc1.urdf", {"jvrc_description": root}


def _irb120() -> tuple[Path, dict[str, Path]]:
    return Path(__file__).parent / "irb120" / "irb120.urdf", {}


@dataclass(frozen=True)
class _Entry:
    locate: Callable[[], tuple[Path, dict[str, Path]]]
    base_link: str
    ee_link: str
    home: dict[str, float]
    description: str
    licence: str
    source: str
    front: tuple[float, float, float] = (1.0, 0.0, 0.0)


_REGISTRY: dict[str, _Entry] = {
    "irb120": _Entry(
        _irb120, "base_link", "tool0",
        {"joint_5": math.pi / 2},
        "ABB IRB120, 6-DOF industrial arm (0.58 m reach), the hybrid IK paper's robot; URDF written "
        "here from the ROS-Industrial kinematics. Chain: 6 revolute joints with a spherical wrist, "
        "joint 6 with ±400°. Home: tool pointing down.",
        "BSD-3-Clause", "hik_sim/robots/irb120/irb120.urdf (this repository)",
    ),
    "panda": _Entry(
        lambda: _erd("panda_description/urdf/panda.urdf"), "panda_link0", "panda_hand",
        {"panda_joint2": -0.785398, "panda_joint4": -2.35619, "panda_joint6": 1.5708, "panda_joint7": 0.785398},
        "Franka Emika Panda, 7-DOF redundant arm, the common benchmark of CycleIK and IKFlow. "
        "Chain: panda_link0 → panda_hand (fingers held at home).",
        "Apache-2.0", "example-robot-data: robots/panda_description/urdf/panda.urdf",
    ),
    "talos": _Entry(
        lambda: _erd("talos_data/robots/talos_full_v2.urdf"), "base_link", "gripper_left_base_link",
        {"torso_2_joint": 0.006761, "arm_left_1_joint": 0.25847, "arm_left_2_joint": 0.173046,
         "arm_left_3_joint": -0.0002, "arm_left_4_joint": -0.525366, "arm_left_7_joint": 0.1,
         "arm_right_1_joint": -0.25847, "arm_right_2_joint": -0.173046, "arm_right_3_joint": 0.0002,
         "arm_right_4_joint": -0.525366, "arm_right_7_joint": 0.1},
        "PAL Robotics TALOS, 1.75 m humanoid. Chosen for its torso joints and a large 7-DOF arm. "
        "Chain (9): torso_1 (yaw), torso_2 (pitch), arm_left_1..7 (shoulder 3, elbow, wrist 3).",
        "Apache-2.0", "example-robot-data: robots/talos_data/robots/talos_full_v2.urdf",
    ),
    "romeo": _Entry(
        lambda: _erd("romeo_description/urdf/romeo.urdf"), "base_link", "l_gripper",
        {"LShoulderPitch": 1.5, "LShoulderYaw": 0.6, "LElbowRoll": -0.5, "LElbowYaw": -1.05,
         "LWristRoll": -0.4, "LWristYaw": -0.3, "LWristPitch": -0.2,
         "RShoulderPitch": 1.5, "RShoulderYaw": -0.6, "RElbowRoll": 0.5, "RElbowYaw": 1.05,
         "RWristRoll": 0.4},
        "Aldebaran Romeo, 1.4 m humanoid. Chosen for its single trunk joint and unusual "
        "yaw/roll elbow and 3-DOF wrist with narrow ranges. Chain (8): TrunkYaw, LShoulderPitch, "
        "LShoulderYaw, LElbowRoll, LElbowYaw, LWristRoll, LWristYaw, LWristPitch. Meshes are COLLADA.",
        "BSD-3-Clause", "example-robot-data: robots/romeo_description/urdf/romeo.urdf",
    ),
    "icub": _Entry(
        _icub, "root_link", "l_hand_dh_frame",
        {"l_shoulder_pitch": -0.4, "l_shoulder_roll": 0.4, "l_shoulder_yaw": 0.0, "l_elbow": 0.8,
         "r_shoulder_roll": 0.4, "r_elbow": 0.8},
        "IIT iCub v2.7, 1.04 m child-sized humanoid. Chosen for the longest chain, a 3-DOF torso "
        "and shoulder axes tilted by 15°. Chain (10): torso_pitch, torso_roll, torso_yaw, "
        "l_shoulder_pitch/roll/yaw, l_elbow, l_wrist_prosup, l_wrist_pitch, l_wrist_yaw.",
        "CC-BY-SA-4.0", "icub-models: iCub/robots/iCubGazeboV2_7/model.urdf", front=(-1.0, 0.0, 0.0),
    ),
    "g1": _Entry(
        lambda: _erd("g1_description/urdf/g1_29dof_rev_1_0.urdf"), "torso_link", "left_rubber_hand",
        {"left_shoulder_roll_joint": 0.3, "left_elbow_joint": 1.0, "right_shoulder_roll_joint": -0.3,
         "right_elbow_joint": 1.0},
        "Unitree G1 (29-DOF), 1.3 m humanoid. Chosen as the arm-only case: no torso joint in the "
        "chain. Chain (7): left_shoulder_pitch/roll/yaw, left_elbow, left_wrist_roll/pitch/yaw.",
        "BSD-3-Clause", "example-robot-data: robots/g1_description/urdf/g1_29dof_rev_1_0.urdf",
    ),
    "jvrc1": _Entry(
        _jvrc, "PELVIS_S", "l_wrist",
        {"L_SHOULDER_P": -0.3, "L_SHOULDER_R": 0.3, "L_ELBOW_P": -1.0,
         "R_ELBOW_P": -1.0},
        "JVRC-1, the 1.6 m humanoid of the Japan Virtual Robotics Challenge. Chosen for its 3-DOF "
        "waist and a wrist of only 2 DOF after an elbow-yaw joint. Chain (10): WAIST_Y/P/R, "
        "L_SHOULDER_P/R/Y, L_ELBOW_P, L_ELBOW_Y, L_WRIST_R, L_WRIST_Y. Meshes are COLLADA.",
        "Apache-2.0", "jvrc-description: jvrc_description/urdf/jvrc1.urdf",
    ),
}

_CACHE: dict[str, RobotSpec] = {}


def robot_names() -> tuple[str, ...]:
    """Names of every registered robot, the default first."""
    return tuple(_REGISTRY)


def get_robot(name: str) -> RobotSpec:
    """The registered robot called ``name``.

    Raises:
        UnknownRobotError: no robot has that name (the message lists the valid names).
        HikError: the package that ships its URDF is not installed.
    """
    if not isinstance(name, str) or name not in _REGISTRY:  # a list would be a raw TypeError (unhashable)
        raise UnknownRobotError(f"unknown robot {name!r}; registered robots are: {', '.join(_REGISTRY)}")
    if name not in _CACHE:
        entry = _REGISTRY[name]
        urdf, package_dirs = entry.locate()
        _CACHE[name] = robot_from_urdf(
            urdf, entry.base_link, entry.ee_link, name=name, home=entry.home,
            description=entry.description, licence=entry.licence, source=entry.source,
            package_dirs=package_dirs, front=entry.front,
        )
    return _CACHE[name]
