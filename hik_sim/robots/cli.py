"""Command-line plumbing shared by every hik_sim command: choosing a robot."""

from __future__ import annotations

import argparse

from hik_sim.errors import HikError
from hik_sim.robots import DEFAULT_ROBOT, RobotSpec, get_robot, robot_from_urdf, robot_names

__all__ = ["add_robot_arguments", "robot_from_args"]


def add_robot_arguments(parser: argparse.ArgumentParser, default: str | None = DEFAULT_ROBOT) -> None:
    """Add ``--robot NAME`` and ``--urdf PATH --base LINK --ee LINK`` to a parser."""
    group = parser.add_argument_group("robot", "a registered robot, or any URDF with its chain's base and end-effector links")
    group.add_argument("--robot", default=None, help=f"registered robot: {', '.join(robot_names())}"
                       + (f" (default: {default})" if default else ""))
    group.add_argument("--urdf", default=None, help="path to a URDF file (instead of --robot)")
    group.add_argument("--base", default=None, help="with --urdf: the chain's base link")
    group.add_argument("--ee", default=None, help="with --urdf: the chain's end-effector link")
    parser.set_defaults(_default_robot=default)


def robot_from_args(args: argparse.Namespace) -> RobotSpec:
    """The RobotSpec that parsed ``--robot``/``--urdf`` arguments name.

    Raises:
        HikError: both or neither of ``--robot`` and ``--urdf`` given (with no default), or
            ``--urdf`` without ``--base`` and ``--ee``; or the robot cannot be loaded.
    """
    if args.urdf is not None:  # an empty --urdf "" is a bad path, not a missing flag
        if args.robot:
            raise HikError("give either --robot NAME or --urdf PATH --base LINK --ee LINK, not both")
        if not args.base or not args.ee:
            raise HikError("--urdf needs --base LINK and --ee LINK: the chain's base and end-effector links")
        return robot_from_urdf(args.urdf, args.base, args.ee)
    if args.base is not None or args.ee is not None:
        raise HikError("--base and --ee go with --urdf PATH; a registered --robot has its own chain")
    name = args.robot if args.robot is not None else getattr(args, "_default_robot", None)  # --robot "" is unknown, not the default
    if not name:
        raise HikError(f"give --robot NAME ({', '.join(robot_names())}) or --urdf PATH --base LINK --ee LINK")
    return get_robot(name)
