"""``python -m hik_sim.viewer``: try an IK policy by hand — drag a goal, watch the robot follow it live.

Two backends:

- ``viser`` (default): a web page (:class:`~hik_sim.viewer.viser_backend.ViserViewer`) with the
  robot's MuJoCo scene, a goal gizmo and a panel (policy, errors, IK latency, HarmoAtt-IK fusion
  weights and temperatures). Works offline and without a display; served on 127.0.0.1 unless told
  otherwise, it takes from the page only the policies it lists (:mod:`hik_sim.viewer.access`); needs
  ``pip install 'hik_sim[viewer]'``.
- ``mujoco``: MuJoCo's own viewer (:func:`~hik_sim.viewer.mujoco_backend.run_mujoco_viewer`),
  the goal being the scene's ``target`` mocap body; needs a display.

Both run a :class:`~hik_sim.viewer.session.LiveSim`: the scene of :func:`hik_sim.sim.build_scene`
driven by the controller :func:`hik_sim.evaluation.evaluate.build_policy` builds, one control step at a time.
Importing this package imports neither viser nor torch.
"""

from __future__ import annotations

from hik_sim.viewer.mujoco_backend import has_display, require_display, run_mujoco_viewer
from hik_sim.viewer.session import LiveSim, Readout, default_policy, policy_choices
from hik_sim.viewer.viser_backend import ViserViewer

__all__ = ["LiveSim", "Readout", "ViserViewer", "default_policy", "has_display", "policy_choices", "require_display",
           "run_mujoco_viewer"]
