"""Robots: the :class:`RobotSpec` record, the registry of shipped robots, and user URDFs."""

from hik_sim.robots.registry import DEFAULT_ROBOT, HUMANOIDS, get_robot, robot_names
from hik_sim.robots.spec import RobotSpec, robot_from_urdf

__all__ = ["DEFAULT_ROBOT", "HUMANOIDS", "RobotSpec", "get_robot", "robot_from_urdf", "robot_names"]
