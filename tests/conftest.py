"""Shared fixtures: headless rendering, the registered robots, and the test arm URDF."""

from __future__ import annotations

from collections.abc import Iterable
import os
from pathlib import Path

os.environ.setdefault("MUJOCO_GL", "egl")  # before anything imports mujoco
os.environ.setdefault("PYOPENGL_PLATFORM", "egl")

import pytest

from hik_sim.robots import RobotSpec, get_robot, robot_from_urdf, robot_names

USER_URDF = Path(__file__).parent / "data" / "user_arm" / "urdf" / "user_arm.urdf"


def user_robot() -> RobotSpec:
    """The test arm loaded as a user would load any URDF."""
    return robot_from_urdf(USER_URDF, "base", "tool")


ALL_ROBOTS = (*robot_names(), "user_arm")


def robot_by_id(name: str) -> RobotSpec:
    """A registered robot, or the user test arm for ``user_arm``."""
    return user_robot() if name == "user_arm" else get_robot(name)


@pytest.fixture(params=ALL_ROBOTS)
def robot(request: pytest.FixtureRequest) -> RobotSpec:
    """Every registered robot and the user test arm."""
    return robot_by_id(request.param)


def reach_successes(env, controller, seeds: Iterable[int]) -> int:  # noqa: ANN001
    """Reach episodes run with a controller (:func:`hik_sim.evaluation.rollout.rollout`); how many ended with the goal held."""
    from hik_sim.evaluation.rollout import rollout

    return sum(rollout(env, controller, seed=seed).success for seed in seeds)
