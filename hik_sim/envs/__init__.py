"""Gymnasium environments: Reach and Track, for every registered robot and for any URDF.

Importing this module registers (string entry points, torch is not imported):

- ``hik_sim/Reach-<robot>-v0`` and ``hik_sim/Track-<robot>-v0`` for every registered robot
  (``hik_sim/Reach-irb120-v0``, ``hik_sim/Track-panda-v0``, ...);
- ``hik_sim/Reach-v0`` and ``hik_sim/Track-v0``, which take ``robot=NAME`` or
  ``urdf=PATH, base=LINK, ee=LINK``.

``gymnasium.make("hik_sim.envs:hik_sim/Reach-irb120-v0")`` imports and registers in one go.

Rendering needs an OpenGL backend chosen before MuJoCo is first imported: when no display and no
``MUJOCO_GL`` are set, importing this module sets ``MUJOCO_GL=egl`` (headless), as hik_sim's
commands do; set ``MUJOCO_GL`` yourself to choose otherwise.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from hik_sim.robots.registry import robot_names
from hik_sim.scene import ensure_headless_gl

__all__ = ["ENV_IDS", "REACH_STEPS", "TRACK_STEPS"]

REACH_STEPS = 250  # 5 s at the default 50 Hz control rate
TRACK_STEPS = 500  # 10 s

ENV_IDS: list[str] = []

ensure_headless_gl()


def _register(env_id: str, entry_point: str, steps: int, **kwargs: str) -> None:
    if env_id not in registry:
        register(id=env_id, entry_point=entry_point, max_episode_steps=steps, kwargs=kwargs)
    ENV_IDS.append(env_id)


for _robot in robot_names():
    _register(f"hik_sim/Reach-{_robot}-v0", "hik_sim.envs.reach:ReachEnv", REACH_STEPS, robot=_robot)
    _register(f"hik_sim/Track-{_robot}-v0", "hik_sim.envs.track:TrackEnv", TRACK_STEPS, robot=_robot)
_register("hik_sim/Reach-v0", "hik_sim.envs.reach:ReachEnv", REACH_STEPS)
_register("hik_sim/Track-v0", "hik_sim.envs.track:TrackEnv", TRACK_STEPS)
