"""Check the web viewer in a real headless browser and save its screenshot (docs/images/viewer.png).

Starts ``hik_sim.viewer``'s :class:`~hik_sim.viewer.ViserViewer` in this process, moves the goal to
a reachable pose away from home (the end-effector pose of a bent configuration) and lets the policy
drive the arm there, then opens the page in headless Chromium (Debian's ``chromium``; software
WebGL through SwiftShader) and takes a screenshot after the scene has streamed in. The picture is
then checked against a second screenshot of the same page with the robot and the gizmo hidden: the
picture is not blank (pixel spread), hiding the robot changes a good part of it (its grey,
unsaturated pixels), and the gizmo's red, green and blue handles are among what changed.

    python scripts/viewer_screenshot.py                      # irb120, hybrid → docs/images/viewer.png
    python scripts/viewer_screenshot.py --robot panda --policy harmoatt --out /tmp/panda.png

Exit status: 0 the check passed; 1 the screenshot failed the check; 2 no browser (then it says
how to install one: ``apt-get install chromium``).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
BROWSERS = ("chromium", "chromium-browser", "google-chrome", "chrome")
GIZMO_HUES = {"red": (320.0, 380.0), "green": (90.0, 170.0), "blue": (190.0, 250.0)}
"""Hue ranges [°] of the transform gizmo's handles (x red/pink, y green, z blue)."""


def find_browser() -> str | None:
    """A Chromium-family browser: $HIK_SIM_CHROMIUM, else the first of :data:`BROWSERS` on PATH."""
    override = os.environ.get("HIK_SIM_CHROMIUM")
    if override:
        return override
    for name in BROWSERS:
        path = shutil.which(name)
        if path:
            return path
    return None


def screenshot(browser: str, url: str, out: Path, width: int, height: int, wait_ms: int) -> None:
    """Headless Chromium's screenshot of ``url`` after ``wait_ms`` of (virtual) time."""
    with tempfile.TemporaryDirectory(prefix="hik_sim_chromium_") as profile:
        command = [browser, "--headless=new", "--no-sandbox", "--disable-gpu-sandbox", "--use-angle=swiftshader",
                   "--enable-unsafe-swiftshader", "--ignore-gpu-blocklist", "--hide-scrollbars", "--no-first-run",
                   "--disable-extensions", "--disable-background-networking", "--disable-dev-shm-usage", f"--user-data-dir={profile}",
                   f"--window-size={width},{height}", f"--virtual-time-budget={wait_ms}", f"--screenshot={out}", url]
        result = subprocess.run(command, capture_output=True, text=True, timeout=wait_ms / 1000 + 120)
    if result.returncode != 0 or not out.is_file():
        raise RuntimeError(f"{Path(browser).name} exited with {result.returncode} and no screenshot:\n{result.stderr[-2000:]}")


def check_pictures(shown: Path, hidden: Path) -> dict[str, float]:
    """Numbers that say whether the screenshot shows the scene, the robot and the gizmo.

    ``shown`` is the page as it is; ``hidden`` the same page with the robot, the end-effector
    marker and the gizmo hidden. What differs between the two is what they drew: its grey,
    unsaturated part is the robot (and its shadow), its saturated red, green and blue parts the
    gizmo's handles.

    Returns:
        ``pixel_std`` (spread of the picture, 0–255), ``scene_changed`` (fraction of pixels the
        robot and the gizmo drew), ``robot`` (fraction of unsaturated changed pixels), and
        ``gizmo_red``/``gizmo_green``/``gizmo_blue`` (fractions of changed pixels of those hues).
    """
    from PIL import Image

    a = Image.open(shown).convert("RGB")
    b = Image.open(hidden).convert("RGB")
    if a.size != b.size:
        raise RuntimeError(f"the two screenshots differ in size: {a.size} and {b.size}")
    rgb_a, rgb_b = np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64)
    hsv = np.asarray(a.convert("HSV"), dtype=np.float64)
    changed = np.abs(rgb_a - rgb_b).sum(axis=-1) > 40
    saturated = hsv[..., 1] > 60
    hue = hsv[..., 0] * 360.0 / 255.0
    found = {"pixel_std": float(rgb_a.std()), "scene_changed": float(changed.mean()),
             "robot": float((changed & ~saturated).mean())}
    for name, (lo, hi) in GIZMO_HUES.items():
        in_range = ((hue >= lo) & (hue < hi)) | ((hue + 360.0 >= lo) & (hue + 360.0 < hi))
        found[f"gizmo_{name}"] = float((changed & saturated & in_range).mean())
    return found


def main(argv: list[str] | None = None) -> int:
    """Run the viewer, screenshot it in headless Chromium, check the picture."""
    parser = argparse.ArgumentParser(description=main.__doc__)
    parser.add_argument("--robot", default="irb120")
    parser.add_argument("--policy", default=None, help="default: hybrid where a network is shipped, else lm")
    parser.add_argument("--out", type=Path, default=ROOT / "docs" / "images" / "viewer.png")
    parser.add_argument("--port", type=int, default=0, help="default: any free port")
    parser.add_argument("--width", type=int, default=1280)
    parser.add_argument("--height", type=int, default=800)
    parser.add_argument("--wait", type=float, default=15.0, help="browser time before the screenshot [s] (default 15)")
    args = parser.parse_args(argv)
    browser = find_browser()
    if browser is None:
        print("no headless browser found: install Debian's chromium (apt-get install -y chromium) or set HIK_SIM_CHROMIUM; "
              "the README keeps the last screenshot", file=sys.stderr)
        return 2
    os.environ.setdefault("MUJOCO_GL", "egl")
    import mujoco

    from hik_sim.robots import get_robot
    from hik_sim.viewer import LiveSim, ViserViewer

    sim = LiveSim(get_robot(args.robot), policy=args.policy)
    model = sim.model
    viewer = ViserViewer(sim, host="127.0.0.1", port=args.port)
    stop = threading.Event()
    try:
        # A goal the arm can reach, away from home: the end-effector pose of a bent configuration.
        home = sim.data.qpos[sim.scene.chain_qpos].copy()
        bent = np.clip(home + 0.35 * (sim.upper - sim.lower) * np.resize([0.35, 0.25, -0.2, 0.4, -0.45, 0.3], home.size),
                       sim.lower, sim.upper)
        saved = sim.data.qpos.copy()
        sim.data.qpos[sim.scene.chain_qpos] = bent
        mujoco.mj_forward(model, sim.data)
        goal_pos, goal_quat = sim.ee_world()
        sim.data.qpos[:] = saved
        mujoco.mj_forward(model, sim.data)
        viewer.goal.position, viewer.goal.wxyz = goal_pos, goal_quat
        for _ in range(300):
            readout = viewer.step()
            if readout.pos_err < 1e-3 and readout.rot_err < 0.01:
                break
        print(f"goal reached by {readout.policy}: {readout.pos_err_mm:.2f} mm, {readout.rot_err_deg:.2f}° after {readout.steps} steps")
        thread = threading.Thread(target=viewer.run, args=(stop,), daemon=True)
        thread.start()
        args.out.parent.mkdir(parents=True, exist_ok=True)
        started = time.perf_counter()
        screenshot(browser, viewer.url, args.out, args.width, args.height, int(1000 * args.wait))
        print(f"{Path(browser).name}: screenshot of {viewer.url} in {time.perf_counter() - started:.1f} s -> {args.out}")
        viewer.show(robot=False, goal=False)
        hidden = Path(tempfile.mkdtemp(prefix="hik_sim_viewer_")) / "hidden.png"
        screenshot(browser, viewer.url, hidden, args.width, args.height, int(1000 * args.wait))
    finally:
        stop.set()
        time.sleep(0.1)
        viewer.close()
    found = check_pictures(args.out, hidden)
    shutil.rmtree(hidden.parent, ignore_errors=True)
    print("  " + ", ".join(f"{k} {v:.1f}" if k == "pixel_std" else f"{k} {100 * v:.3f} %" for k, v in found.items()))
    failures = []
    if found["pixel_std"] < 10:
        failures.append("the picture is blank (pixel spread below 10)")
    if found["robot"] < 0.005:
        failures.append("no robot: hiding it changed under 0.5 % of the picture")
    failures += [f"no {k[6:]} gizmo handle" for k, v in found.items() if k.startswith("gizmo_") and v < 1e-4]
    if failures:
        print("FAILED: " + "; ".join(failures), file=sys.stderr)
        return 1
    from PIL import Image

    picture = Image.open(args.out).convert("RGB")  # 256 colours: a third of the size, no visible change
    picture.quantize(colors=256, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.FLOYDSTEINBERG).save(args.out, optimize=True)
    print("ok: the page shows the scene, the goal gizmo and the robot")
    return 0


if __name__ == "__main__":
    sys.exit(main())
