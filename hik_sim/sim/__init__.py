"""MuJoCo scenes of URDF robots, built with ``MjSpec``, in named steps.

:func:`build_scene` turns a :class:`~hik_sim.robots.RobotSpec` into a simulated :class:`Scene` by
running :data:`DERIVATION`, the numbered list of what is changed in and added to the URDF
(``python -m hik_sim.scene --derivation`` prints it). In short:

- the URDF is made MuJoCo-ready (steps 1–5, :mod:`~hik_sim.sim.derivation`): meshes resolved
  and converted (:mod:`hik_sim.robots.meshes`), invalid inertias repaired, the tool frame and visual
  meshes kept;
- the robot is fixed in place, gravity-compensated, without contacts, with ideal joints and an
  ``ee`` site (steps 6–14): an IK study where the commanded configuration is what it reaches;
- one compile measures it (step 15, :mod:`~hik_sim.sim.measure`), and position servos and
  ``hold:<joint>`` holds are tuned on the largest inertia each joint sees (step 16,
  :mod:`~hik_sim.sim.servos`);
- it stands on a floor under two lights, with a mocap ``target`` showing the goal pose, a
  ``workspace`` and an ``overview`` camera and a ``home`` keyframe (steps 17–21,
  :mod:`~hik_sim.sim.dressing`), and the scene is compiled a second and last time.

:func:`check_scene` (:mod:`~hik_sim.sim.checks`) compares the chain's FK with MuJoCo and checks
that home holds; :func:`render_frame` renders a camera; ``python -m hik_sim.scene --robot NAME
--xml OUT.xml --png OUT.png`` (:mod:`~hik_sim.sim.cli`) writes the MJCF and a picture after
the checks.

The package imports no MuJoCo until a scene is built, so :func:`ensure_headless_gl` can choose EGL first.
"""

from hik_sim.sim.build import build_scene
from hik_sim.sim.checks import SceneCheck, check_scene
from hik_sim.sim.cli import main
from hik_sim.sim.derivation import DERIVATION, RESERVED_NAMES, describe, mujoco_urdf, repair_inertia
from hik_sim.sim.draft import Draft
from hik_sim.sim.model import Scene
from hik_sim.sim.options import SceneOptions
from hik_sim.sim.render import ensure_headless_gl, render_frame

__all__ = [
    "DERIVATION",
    "RESERVED_NAMES",
    "Draft",
    "Scene",
    "SceneCheck",
    "SceneOptions",
    "build_scene",
    "check_scene",
    "describe",
    "ensure_headless_gl",
    "main",
    "mujoco_urdf",
    "render_frame",
    "repair_inertia",
]
