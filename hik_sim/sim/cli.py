"""``python -m hik_sim.scene``: build a robot's scene, check it, write MJCF and a picture; ``--derivation``
prints the numbered list of what the scene changes and adds to the URDF."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from hik_sim.errors import HikError
from hik_sim.sim.build import build_scene
from hik_sim.sim.checks import check_scene
from hik_sim.sim.derivation import DERIVATION, describe
from hik_sim.sim.render import ensure_headless_gl, render_frame

__all__ = ["main"]


def _write_output(path: Path, flag: str, write) -> None:  # noqa: ANN001 - write(path) writes the file
    """Make ``path``'s folders and write it; an OS refusal (a file where a folder should be, no
    permission, a name too long) is an :class:`~hik_sim.errors.OutputError` naming the path."""
    from hik_sim.errors import OutputError

    blocking = next((parent for parent in path.parents if parent.is_file()), None)
    if blocking is not None:
        raise OutputError(f"cannot write {flag} {str(path)!r}: {str(blocking)!r} is a file, not a folder; "
                          "give a file path in a folder that can be written")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        write(path)
    except OSError as exc:
        raise OutputError(f"cannot write {flag} {str(path)!r} ({exc.strerror or exc}); give a file path in a folder that "
                          "can be written") from exc


def main(argv: list[str] | None = None) -> int:
    """``python -m hik_sim.scene``: build a robot's scene, check it, write MJCF and a picture."""
    import argparse

    from hik_sim.robots.cli import add_robot_arguments, robot_from_args

    ensure_headless_gl()
    parser = argparse.ArgumentParser(prog="python -m hik_sim.scene", description=main.__doc__)
    add_robot_arguments(parser)
    parser.add_argument("--xml", type=Path, default=None, help="write the scene's MJCF here (opens in MuJoCo's viewer)")
    parser.add_argument("--png", type=Path, default=None, help="write a rendered picture here")
    parser.add_argument("--camera", default="workspace", help="camera for --png: workspace (default) or overview")
    parser.add_argument("--size", default="640x480", help="picture size WxH [px] (default 640x480)")
    parser.add_argument("--samples", type=int, default=1000, help="configurations for the FK check (default 1000)")
    parser.add_argument("--derivation", action="store_true",
                        help="print the numbered list of what the scene changes and adds to the URDF, and exit")
    args = parser.parse_args(argv)
    if args.derivation:
        print(describe(DERIVATION))
        return 0
    try:
        width, height = (int(v) for v in args.size.lower().split("x"))
    except ValueError:
        parser.exit(2, f"error: --size must look like 640x480, got {args.size!r}\n")
    if width < 1 or height < 1:
        parser.exit(2, f"error: --size must be at least 1x1 pixels, got {args.size!r}\n")
    if args.png is not None and args.png.suffix.lower() != ".png":
        parser.exit(2, f"error: --png writes a PNG picture: give a path ending in .png, got {str(args.png)!r}\n")
    try:
        robot = robot_from_args(args)
        scene = build_scene(robot)
        check = check_scene(scene, samples=args.samples)
        if args.xml:
            _write_output(args.xml, "--xml", lambda path: path.write_text(scene.spec.to_xml()))
        if args.png:
            import imageio.v3 as iio

            frame = render_frame(scene, scene.make_data(), width, height, args.camera)
            _write_output(args.png, "--png", lambda path: iio.imwrite(path, frame))
    except HikError as exc:
        parser.exit(2, f"error: {exc}\n")
    m = scene.model
    print(f"robot        {robot.name}: {robot.dof} DOF, {robot.base_link} → {robot.ee_link} ({robot.source})")
    print(f"scene        {m.nbody} bodies, {m.njnt} joints, {m.nu} actuators ({len(scene.hold_actuators)} holds), {m.ngeom} geoms, {m.nmesh} meshes")
    print(f"FK check     {check.samples} configurations: max {check.fk_pos_err_max:.2e} m, {check.fk_rot_err_max:.2e} rad (Chain vs MuJoCo)")
    print(f"hold check   {check.hold_seconds:g} s at home: max drift {check.hold_err_max:.2e} rad; warnings: {', '.join(check.warnings) or 'none'}")
    print(f"workspace    centre {np.round(scene.workspace_center, 3).tolist()} m, radius {scene.workspace_radius:.3f} m")
    for label, path in (("MJCF", args.xml), ("picture", args.png)):
        if path:
            print(f"{label:12s} {path}")
    print("result       " + ("OK" if check.ok else "FAILED: outside 1e-6 m / 1e-5 rad / 1 mrad or warnings"))
    return 0 if check.ok else 1
