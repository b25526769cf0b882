"""``python -m hik_sim.viewer``: drag a goal in a browser (viser) or in MuJoCo's viewer; a policy drives the robot live.

Examples::

    python -m hik_sim.viewer                                  # irb120, hybrid policy, http://localhost:8080
    python -m hik_sim.viewer --robot panda --policy harmoatt --port 8081
    python -m hik_sim.viewer --urdf arm.urdf --base base --ee tool --policy lm
    python -m hik_sim.viewer --backend mujoco                 # MuJoCo's own window (needs a display)
"""

from __future__ import annotations

import argparse
import sys

from hik_sim.errors import HikError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.viewer``: an interactive IK viewer."""
    from hik_sim.robots.cli import add_robot_arguments, robot_from_args
    from hik_sim.sim import ensure_headless_gl

    parser = argparse.ArgumentParser(prog="python -m hik_sim.viewer", description=main.__doc__,
                                     epilog="policies: harmoatt, mlp, closed_loop, hybrid, multistart, lm, dm_control, any other "
                                            "network shipped for the robot, or a checkpoint path (.pt)")
    add_robot_arguments(parser)
    parser.add_argument("--policy", default=None, help="the IK policy (default: hybrid where a network is shipped for the robot, "
                                                       "else lm); switch it live in the page's dropdown")
    parser.add_argument("--checkpoint", default=None, help="a checkpoint (.pt) that seeds hybrid/closed_loop on a --urdf robot")
    parser.add_argument("--backend", choices=["viser", "mujoco"], default="viser",
                        help="viser: a web page (default; works without a display); mujoco: MuJoCo's own viewer (needs a display)")
    parser.add_argument("--host", default="0.0.0.0", help="viser: interface to serve on (default 0.0.0.0, reachable from other machines)")
    parser.add_argument("--port", type=int, default=8080, help="viser: port (default 8080; a free one if taken)")
    parser.add_argument("--device", default="cpu", help="where networks run (default cpu)")
    args = parser.parse_args(argv)
    if not 0 <= args.port <= 65535:
        parser.exit(2, f"error: --port must be in 0..65535, got {args.port}\n")
    try:
        from hik_sim.viewer.mujoco_backend import require_display, run_mujoco_viewer
        from hik_sim.viewer.session import LiveSim

        if args.backend == "mujoco":
            require_display()  # before any work
        else:
            from hik_sim.viewer.viser_backend import import_viser

            import_viser()
            ensure_headless_gl()
        robot = robot_from_args(args)
        sim = LiveSim(robot, policy=args.policy, device=args.device, checkpoint=args.checkpoint)
        if args.backend == "mujoco":
            print(f"MuJoCo viewer: {robot.name}, policy {sim.policy_name}. Double-click the target, Ctrl+right-drag to move it, "
                  "Ctrl+left-drag to turn it; close the window to quit.", flush=True)
            run_mujoco_viewer(sim)
            return 0
        from hik_sim.viewer.viser_backend import ViserViewer

        viewer = ViserViewer(sim, host=args.host, port=args.port)
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    urls = viewer.urls()
    print(f"hik_sim viewer: {robot.name}, policy {sim.policy_name}", flush=True)
    print(f"  open {urls[0]}" + (f"  (from another machine: {urls[1]}, or ssh -L {viewer.port}:localhost:{viewer.port} "
                                 "to this machine and open the first)" if len(urls) > 1 else ""), flush=True)
    print("  Ctrl+C to stop", flush=True)
    try:
        viewer.run()
    except KeyboardInterrupt:
        pass
    finally:
        viewer.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
