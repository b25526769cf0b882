"""MuJoCo's own viewer as the second backend: the goal is the scene's ``target`` mocap body.

:func:`run_mujoco_viewer` opens ``mujoco.viewer.launch_passive`` on the live simulation. The user
moves the goal as any mocap body in MuJoCo's viewer: double-click the target (the small sphere
with red/green/blue axes) to select it, then Ctrl+right-drag to move it and Ctrl+left-drag to
rotate it. Every control step reads the mocap pose as the goal, steps the controller and the
physics, and shows the error and the IK latency in the viewer's corner (once a second). It needs a
display.
"""

from __future__ import annotations

import os
import sys
import threading
import time

import numpy as np

from hik_sim.errors import HikError
from hik_sim.viewer.session import LiveSim

__all__ = ["has_display", "require_display", "run_mujoco_viewer"]

TEXT_PERIOD = 1.0
"""Seconds between updates of the error/latency text in the window's corner."""


def has_display() -> bool:
    """Whether a window can be opened: a DISPLAY or WAYLAND_DISPLAY on Linux (macOS and Windows always have one)."""
    if sys.platform in ("darwin", "win32"):
        return True
    return bool(os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"))


def require_display() -> None:
    """Raise the no-display error where no window can be opened.

    Raises:
        HikError: no display (the message suggests ``--backend viser``).
    """
    if not has_display():
        raise HikError("--backend mujoco opens MuJoCo's own window and needs a display, and none is set (DISPLAY and "
                       "WAYLAND_DISPLAY are empty); on a machine without a display use --backend viser, which serves the "
                       "viewer as a web page (open its URL from any browser, or forward the port over ssh)")


def run_mujoco_viewer(sim: LiveSim, max_seconds: float | None = None) -> None:
    """Drive ``sim`` in MuJoCo's passive viewer until the window is closed (or ``max_seconds`` of wall time).

    Raises:
        HikError: no display to open a window on.
    """
    require_display()
    import mujoco
    import mujoco.viewer

    mocap = sim.scene.target_mocap
    start = time.perf_counter()
    with mujoco.viewer.launch_passive(sim.model, sim.data) as viewer:
        done = threading.Event()
        texts = threading.Thread(target=_show_texts, args=(viewer, sim, done), daemon=True)
        texts.start()
        try:
            next_time = time.perf_counter()
            while viewer.is_running() and (max_seconds is None or time.perf_counter() - start < max_seconds):
                with viewer.lock():
                    sim.set_goal_world(np.array(sim.data.mocap_pos[mocap]), np.array(sim.data.mocap_quat[mocap]))
                    sim.step()
                viewer.sync()
                next_time += sim.dt
                delay = next_time - time.perf_counter()
                if delay > 0:
                    time.sleep(delay)
                else:
                    next_time = time.perf_counter()
        finally:
            done.set()
            texts.join(timeout=5.0)


def _show_texts(viewer, sim: LiveSim, done: threading.Event) -> None:  # noqa: ANN001 - mujoco.viewer.Handle
    """The error and latency text in the window's corner, from a thread of its own: ``set_texts``
    waits for the window's next frame (0.6 s and more under software GL), which must not hold up
    the control loop."""
    import mujoco

    if not hasattr(viewer, "set_texts"):  # an older MuJoCo
        return
    while not done.wait(TEXT_PERIOD):
        readout = sim.last
        viewer.set_texts((None, mujoco.mjtGridPos.mjGRID_BOTTOMRIGHT, f"{readout.policy}\nposition error\nrotation error\nIK latency",
                          f"\n{readout.pos_err_mm:.2f} mm\n{readout.rot_err_deg:.2f}°\n{readout.ik_latency_ms:.2f} ms"))
