"""Rendering a scene offscreen: headless GL and :func:`render_frame`."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

import numpy as np

from hik_sim.errors import HikError

if TYPE_CHECKING:
    from hik_sim.sim.model import Scene

__all__ = ["ensure_headless_gl", "render_frame"]


def ensure_headless_gl() -> None:
    """Choose EGL for offscreen rendering when no display and no ``MUJOCO_GL`` are set.

    Must run before ``mujoco`` first creates a GL context (before :class:`mujoco.Renderer`).
    """
    if "MUJOCO_GL" not in os.environ and not os.environ.get("DISPLAY") and not os.environ.get("WAYLAND_DISPLAY"):
        os.environ["MUJOCO_GL"] = "egl"
        os.environ.setdefault("PYOPENGL_PLATFORM", "egl")


def render_frame(scene: Scene, data, width: int = 640, height: int = 480, camera: str = "workspace") -> np.ndarray:  # noqa: ANN001
    """One RGB frame (height, width, 3) uint8 of the scene from a named camera.

    Raises:
        HikError: the size exceeds the scene's offscreen buffer or the camera is unknown.
    """
    import mujoco

    ensure_headless_gl()
    max_w, max_h = int(scene.model.vis.global_.offwidth), int(scene.model.vis.global_.offheight)
    if not (0 < width <= max_w and 0 < height <= max_h):
        raise HikError(f"render size {width}x{height} must be within 1..{max_w} x 1..{max_h} pixels")
    cameras = [scene.model.camera(i).name for i in range(scene.model.ncam)]
    if camera not in cameras:
        raise HikError(f"unknown camera {camera!r}; cameras are: {', '.join(cameras)}")
    try:
        renderer = mujoco.Renderer(scene.model, height=height, width=width)
    except mujoco.FatalError as exc:
        raise HikError(
            f"cannot create an OpenGL context ({exc}); with no display, set MUJOCO_GL=egl before Python "
            "imports mujoco (hik_sim's commands do this themselves)"
        ) from None
    with renderer:
        renderer.update_scene(data, camera=camera)
        return renderer.render().copy()
