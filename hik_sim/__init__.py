"""hik_sim: neural inverse kinematics for any URDF robot, in MuJoCo and Gymnasium.

Importing the package registers the Gymnasium environments and does nothing else: every
``hik_sim/...`` id below is then known to ``gymnasium.make``. Registration uses string entry
points, so neither torch nor MuJoCo is imported until an environment is made:

- ``hik_sim/Reach-<robot>-v0``, ``hik_sim/Track-<robot>-v0`` and ``hik_sim/ReachGoal-<robot>-v0``
  (goal-conditioned) for every registered robot (``hik_sim/Reach-irb120-v0``, ``hik_sim/Track-panda-v0``, ...);
- ``hik_sim/Reach-v0``, ``hik_sim/Track-v0`` and ``hik_sim/ReachGoal-v0``, which take ``robot=NAME`` or
  ``urdf=PATH, base=LINK, ee=LINK``.

The environments are documented in :mod:`hik_sim.envs`. The public API lives in three subpackages, each importing
its names on first use (neither torch nor MuJoCo is imported until one that needs them is used):
``from hik_sim.solvers import make_solver, HybridIK, IKResult``, ``from hik_sim.kinematics import Chain`` and
``from hik_sim.policies import IKController, load_pretrained``; ``hik_sim.solvers`` and the others are also attributes
of the package.
"""

from hik_sim.errors import ChainError, HikError, MeshError, UnknownRobotError, UrdfError

__version__ = "0.1.0"
__all__ = ["ChainError", "HikError", "MeshError", "UnknownRobotError", "UrdfError", "__version__", "kinematics", "policies",
           "solvers"]

_SUBPACKAGES = ("kinematics", "policies", "solvers")
"""The public subpackages, imported on first use as attributes (``hik_sim.solvers.make_solver``)."""


def __getattr__(name: str) -> object:
    """A public subpackage, imported on first use (each imports its own names lazily too)."""
    if name in _SUBPACKAGES:
        import importlib

        return importlib.import_module(f"hik_sim.{name}")
    raise AttributeError(f"module 'hik_sim' has no attribute {name!r}")

_REACH_STEPS = 250  # 5 s at the default 50 Hz control rate
_TRACK_STEPS = 500  # 10 s
_REACH_GOAL_STEPS = 50  # 1 s: goal-conditioned learners replay short episodes (Gymnasium-Robotics' Fetch tasks: 50)


def _register_environments() -> tuple[str, ...]:
    """Register every ``hik_sim/...`` id with Gymnasium (once; ids already registered are kept).

    Returns:
        The ids, per-robot ones first.
    """
    from gymnasium.envs.registration import register, registry

    from hik_sim.robots.registry import robot_names

    entries = []
    for robot in robot_names():
        entries.append((f"hik_sim/Reach-{robot}-v0", "hik_sim.envs.reach:ReachEnv", _REACH_STEPS, {"robot": robot}))
        entries.append((f"hik_sim/Track-{robot}-v0", "hik_sim.envs.track:TrackEnv", _TRACK_STEPS, {"robot": robot}))
        entries.append((f"hik_sim/ReachGoal-{robot}-v0", "hik_sim.envs.goal:ReachGoalEnv", _REACH_GOAL_STEPS, {"robot": robot}))
    entries.append(("hik_sim/Reach-v0", "hik_sim.envs.reach:ReachEnv", _REACH_STEPS, {}))
    entries.append(("hik_sim/Track-v0", "hik_sim.envs.track:TrackEnv", _TRACK_STEPS, {}))
    entries.append(("hik_sim/ReachGoal-v0", "hik_sim.envs.goal:ReachGoalEnv", _REACH_GOAL_STEPS, {}))
    for env_id, entry_point, steps, kwargs in entries:
        if env_id not in registry:
            register(id=env_id, entry_point=entry_point, max_episode_steps=steps, kwargs=kwargs)
    return tuple(env_id for env_id, *_ in entries)


_ENV_IDS = _register_environments()
