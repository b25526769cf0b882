"""``python -m hik_sim.viewer``: drag a goal in a browser (viser) or in MuJoCo's viewer; a policy drives the robot live.

Examples::

    python -m hik_sim.viewer                                  # irb120, hybrid policy, http://127.0.0.1:8080 (this machine only)
    python -m hik_sim.viewer --robot panda --policy harmoatt_4answers --port 8081
    python -m hik_sim.viewer --urdf arm.urdf --base base --ee tool --policy lm
    python -m hik_sim.viewer --backend mujoco                 # MuJoCo's own window (needs a display)
    python -m hik_sim.viewer --host 0.0.0.0                   # every interface: anyone who reaches the port drives it

The page offers the policies of the dropdown only; a checkpoint becomes one through ``--policy PATH.safetensors``
or ``--checkpoint PATH.safetensors`` here, never from the page.
"""

from __future__ import annotations

import argparse
import logging
import sys

from hik_sim.errors import HikError

__all__ = ["main"]


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.viewer``: an interactive IK viewer."""
    from hik_sim.robots.cli import add_robot_arguments, robot_from_args
    from hik_sim.sim import ensure_headless_gl

    parser = argparse.ArgumentParser(prog="python -m hik_sim.viewer", description=main.__doc__,
                                     epilog="policies: closed_loop, hybrid, multistart, lm, dm_control, a network shipped for the robot "
                                            "(harmoatt_4answers, mlp_seed; from a checkout also harmoatt, mlp, cycleik), or a "
                                            "checkpoint path (.safetensors)")
    add_robot_arguments(parser)
    parser.add_argument("--policy", default=None, help="the IK policy (default: hybrid where a network is shipped for the robot, "
                                                       "else lm); switch it live in the page's dropdown")
    parser.add_argument("--checkpoint", default=None, help="a checkpoint (.safetensors) that seeds hybrid/closed_loop on a --urdf robot")
    parser.add_argument("--backend", choices=["viser", "mujoco"], default="viser",
                        help="viser: a web page (default; works without a display); mujoco: MuJoCo's own viewer (needs a display)")
    parser.add_argument("--host", default=None,
                        help="viser: interface to serve on (default 127.0.0.1: this machine only, reach it from another "
                             "with ssh -L); another, e.g. 0.0.0.0, lets anyone who can reach the port drive the viewer")
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
        from hik_sim.viewer.access import DEFAULT_HOST, remote_warning
        from hik_sim.viewer.viser_backend import ViserViewer

        host = DEFAULT_HOST if args.host is None else args.host
        viewer = ViserViewer(sim, host=host, port=args.port)
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    logging.basicConfig(format="hik_sim viewer: %(levelname)s: %(message)s")  # errors the viewer catches and goes on after
    urls = viewer.urls()
    print(f"hik_sim viewer: {robot.name}, policy {sim.policy_name}", flush=True)
    print(f"  open {urls[0]}", flush=True)
    warning = remote_warning(host, viewer.port) if args.host is not None else None
    if warning:
        if len(urls) > 1:
            print(f"  from another machine: {urls[1]}", flush=True)
        print(warning, file=sys.stderr, flush=True)
    else:
        print(f"  served on this machine only: from another one, ssh -L {viewer.port}:localhost:{viewer.port} to this "
              "machine and open the address above there", flush=True)
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
