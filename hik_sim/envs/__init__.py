"""Gymnasium environments: Reach, Track and goal-conditioned ReachGoal, for every registered robot and any URDF.

``import hik_sim`` registers them (string entry points; torch and MuJoCo are not imported until an
environment is made):

- ``hik_sim/Reach-<robot>-v0``, ``hik_sim/Track-<robot>-v0`` and ``hik_sim/ReachGoal-<robot>-v0``
  for every registered robot (``hik_sim/Reach-irb120-v0``, ``hik_sim/ReachGoal-panda-v0``, ...);
- ``hik_sim/Reach-v0``, ``hik_sim/Track-v0`` and ``hik_sim/ReachGoal-v0``, which take ``robot=NAME`` or
  ``urdf=PATH, base=LINK, ee=LINK``.

Each environment's class docstring follows Gymnasium's sections (Description, Action Space,
Observation Space, Rewards, Starting State, Episode End, Arguments, Version History):
:class:`~hik_sim.envs.reach.ReachEnv`, :class:`~hik_sim.envs.track.TrackEnv`,
:class:`~hik_sim.envs.goal.ReachGoalEnv`. Every one takes ``action_type`` (joint targets, normalised
joint targets, or end-effector increments through IK: :mod:`hik_sim.envs.actions`); docs/environments.md
is the guide.
``gymnasium.make("hik_sim.envs:hik_sim/Reach-irb120-v0")`` imports and registers in one go.

Rendering needs an OpenGL backend chosen before MuJoCo is first imported: when no display and no
``MUJOCO_GL`` are set, importing this module (which ``gymnasium.make`` does before it imports an
environment's module) sets ``MUJOCO_GL=egl`` (headless), as hik_sim's commands do; set
``MUJOCO_GL`` yourself to choose otherwise.
"""

from __future__ import annotations

from hik_sim import _ENV_IDS, _REACH_GOAL_STEPS, _REACH_STEPS, _TRACK_STEPS
from hik_sim.sim import ensure_headless_gl

__all__ = ["ENV_IDS", "REACH_STEPS", "TRACK_STEPS", "REACH_GOAL_STEPS"]

REACH_STEPS = _REACH_STEPS  # 5 s at the default 50 Hz control rate
TRACK_STEPS = _TRACK_STEPS  # 10 s
REACH_GOAL_STEPS = _REACH_GOAL_STEPS  # 1 s

ENV_IDS: list[str] = list(_ENV_IDS)
"""Every registered ``hik_sim/...`` id (registered by ``import hik_sim``)."""

ensure_headless_gl()
