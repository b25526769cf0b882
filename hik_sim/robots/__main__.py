"""``python -m hik_sim.robots``: list the registered robots (name, DOF, chain, source, licence)."""

from __future__ import annotations

import argparse
import json
import sys

from hik_sim.robots.cli import add_robot_arguments, robot_from_args
from hik_sim.errors import HikError
from hik_sim.robots.registry import get_robot, robot_names


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hik_sim.robots", description=__doc__)
    parser.add_argument("--json", action="store_true", help="print JSON instead of a table")
    add_robot_arguments(parser, default=None)
    args = parser.parse_args(argv)
    try:
        if any(value is not None for value in (args.robot, args.urdf, args.base, args.ee)):
            robots = [robot_from_args(args)]
        else:
            robots = [get_robot(name) for name in robot_names()]
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    rows = [r.summary() for r in robots]
    if args.json:
        json.dump(rows, sys.stdout, indent=2)
        print()
        return 0
    print(f"{'name':8s} {'DOF':>3s}  {'chain (base → end-effector)':44s} {'licence':13s} source")
    for r in rows:
        chain = f"{r['base_link']} → {r['ee_link']}"
        print(f"{r['name']:8s} {r['dof']:3d}  {chain:44s} {r['licence']:13s} {r['source']}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
