"""The scene in the making: :class:`Draft`, the state every derivation step reads and changes."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from hik_sim.errors import HikError
from hik_sim.robots import RobotSpec
from hik_sim.sim.options import SceneOptions
from hik_sim.robots.urdf import UrdfModel, load_urdf_tree

__all__ = ["Draft", "Measurements", "compile_spec", "set_joints"]


@dataclass(frozen=True)
class Measurements:
    """What the first compile measured (:func:`hik_sim.sim.measure.measure_on_a_first_compile`); positions are in the
    world frame after the lift.

    Attributes:
        lift: how far the robot rises to stand on the floor [m].
        inertia: joint name → the largest joint-space inertia (diagonal of M) it sees [kg·m² or kg].
        held_ranges: held joint name → its range in MuJoCo's model, or ``None`` when unlimited.
        workspace_center: (3,) centre of the sampled end-effector positions [m].
        workspace_radius: radius of a ball around it holding them (at least 5 cm) [m].
        robot_center: (3,) centre of the robot's body origins at home [m].
        robot_radius: radius of a ball around it holding them, plus 10 cm [m].
        root_rotation: (3, 3) the root body's world orientation at home.
    """

    lift: float
    inertia: dict[str, float]
    held_ranges: dict[str, tuple[float, float] | None]
    workspace_center: np.ndarray
    workspace_radius: float
    robot_center: np.ndarray
    robot_radius: float
    root_rotation: np.ndarray


@dataclass
class Draft:
    """A robot's scene between its URDF and the compiled model.

    Attributes:
        robot: the robot.
        options: simulation options.
        workspace_samples: random chain configurations the measurement samples.
        urdf: the parsed URDF (parsed once, shared with the rest of hik_sim).
        xml: a private copy of the URDF's XML tree, rewritten by the URDF steps.
        spec: the ``MjSpec`` once MuJoCo has read the rewritten URDF.
        held: the held joints MuJoCo's model has, and their values [rad or m].
        home: every joint's home value: the held ones and the chain's.
        measured: what the first compile measured (:mod:`hik_sim.sim.measure`).
        model: the compiled scene, after the last step.
    """

    robot: RobotSpec
    options: SceneOptions
    workspace_samples: int
    urdf: UrdfModel
    xml: ET.Element = field(repr=False)
    spec: Any = field(default=None, repr=False)
    held: dict[str, float] = field(default_factory=dict)
    home: dict[str, float] = field(default_factory=dict)
    measured: Measurements | None = field(default=None, repr=False)
    model: Any = field(default=None, repr=False)

    @classmethod
    def start(cls, robot: RobotSpec, options: SceneOptions | None = None, workspace_samples: int = 512) -> Draft:
        """A draft of ``robot``'s scene: its URDF parsed (or taken from the parse cache), nothing changed yet.

        Raises:
            UrdfError: the URDF is malformed.
        """
        urdf, xml = load_urdf_tree(robot.urdf)
        return cls(robot, options or SceneOptions(), workspace_samples, urdf, xml)

    @property
    def measurements(self) -> Measurements:
        """What step 15 measured, for the steps after it (it is an error in the step order to ask before)."""
        assert self.measured is not None, "a step after the measurement ran before it"
        return self.measured


def compile_spec(spec, what: str):  # noqa: ANN001, ANN201 - mujoco.MjSpec -> mujoco.MjModel
    """``spec.compile()``, MuJoCo's compile errors as a :class:`~hik_sim.errors.HikError` naming ``what``."""
    try:
        return spec.compile()
    except ValueError as exc:  # MuJoCo reports compile errors as ValueError
        raise HikError(f"MuJoCo cannot compile {what}: {exc}") from None


def set_joints(model, data, values: dict[str, float]) -> None:  # noqa: ANN001 - mujoco.MjModel, mujoco.MjData
    """Write joint values [rad or m] into ``data.qpos`` by joint name (one-DOF joints)."""
    for name, value in values.items():
        data.qpos[model.joint(name).qposadr[0]] = value
