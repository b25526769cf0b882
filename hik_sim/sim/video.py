"""Rollout videos: an episode recorded as states, rendered with trails, an error overlay and a camera
that frames the motion; one video per policy and one side-by-side video of all policies.

An episode is kept as a :class:`Recording` (the joint state, the goal and the errors at each
recorded step: a few hundred bytes a step, not pixels), so the camera can frame the whole motion
before the first frame is drawn, and the policies' recordings of one episode can be drawn into one
side-by-side video in the same pass that writes each policy's own video.

A frame shows the robot in its scene (the goal marker with its axes), the goal's path (green) and the
end-effector's path (orange) up to that instant drawn as trails (capsules added to MuJoCo's scene
after ``update_scene``), and a text overlay: the policy, environment, time, and the position [mm] and
rotation [°] errors (green within the environment's tolerance). The camera is a free camera looking
from the scene's ``workspace`` camera's direction at the centre of the bounding box of the goal's and
end-effector's paths, at the distance that fits the box (never closer than fits
``min_extent`` × the robot's workspace radius, so a short reach still shows the arm around it).

Example::

    from hik_sim.sim.video import Recording, VideoOptions, write_rollout_videos
    recording = Recording("lm", "reach")
    recording.capture(env, 0.0, info)                # after reset, then after each step
    write_rollout_videos(env.unwrapped.scene, [recording], out, fps=25)
"""

from __future__ import annotations

import contextlib
import math
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np

from hik_sim.errors import HikError, SceneError

__all__ = ["VideoOptions", "Recording", "RolloutRenderer", "WrittenVideos", "annotate", "tile", "write_rollout_videos"]

GOAL_TRAIL_RGBA = (0.15, 0.8, 0.25, 1.0)
"""Colour of the goal's path (the goal marker's green)."""
EE_TRAIL_RGBA = (1.0, 0.45, 0.05, 1.0)
"""Colour of the end-effector's path (the ``ee`` site's orange)."""


@dataclass(frozen=True)
class VideoOptions:
    """How rollout videos look.

    Attributes:
        width: frame width [px] of one policy's video (even: H.264 needs it).
        height: frame height [px] (even).
        trails: draw the goal's and end-effector's paths.
        overlay: write the policy, time and errors on the frame.
        shadows: render shadows (about half the render time on a CPU).
        max_trail_segments: most capsules per trail (older points are thinned, not dropped).
        min_extent: smallest radius the camera frames, as a fraction of the robot's workspace radius.
        margin: space around the framed paths (1 = the paths' bounding sphere touches the frame).
        hold_seconds: how long each video holds its last frame [s] (a Reach episode can be over in a
            fraction of a second).
        multisamples: anti-aliasing samples per pixel (0: none, edges a little jagged, rendered much
            faster on a CPU); None: the scene's own setting (4).
    """

    width: int = 640
    height: int = 480
    trails: bool = True
    overlay: bool = True
    shadows: bool = True
    max_trail_segments: int = 200
    min_extent: float = 0.25
    margin: float = 1.2
    hold_seconds: float = 1.0
    multisamples: int | None = None

    def __post_init__(self) -> None:
        for name in ("width", "height"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < 16 or value % 2:
                raise HikError(f"video {name} must be an even whole number of pixels >= 16 (H.264 needs even sizes), got {value!r}")
        if self.max_trail_segments < 1 or not (math.isfinite(self.min_extent) and self.min_extent > 0):
            raise HikError("max_trail_segments must be >= 1 and min_extent positive and finite")
        if not (math.isfinite(self.margin) and self.margin >= 1.0):
            raise HikError(f"margin must be finite and >= 1, got {self.margin}")
        if not (math.isfinite(self.hold_seconds) and self.hold_seconds >= 0):
            raise HikError(f"hold_seconds must be finite and >= 0, got {self.hold_seconds}")
        if self.multisamples is not None and not 0 <= self.multisamples <= 16:
            raise HikError(f"multisamples must be None or within 0 to 16, got {self.multisamples}")


@dataclass
class Recording:
    """One episode as states: what its video is rendered from.

    Attributes:
        policy: the policy's name (the overlay's title).
        env: the environment's name.
        time: (N,) simulated time of each recorded step [s].
        qpos: per step, the scene's whole ``qpos``.
        goal_pos: per step, the goal position, chain base frame [m].
        goal_quat: per step, the goal quaternion wxyz, base frame.
        pos_err: per step, the position error [m].
        rot_err: per step, the rotation error [rad].
        tolerance: the environment's success tolerances (position [m], rotation [rad]).
    """

    policy: str
    env: str
    time: list[float] = field(default_factory=list)
    qpos: list[np.ndarray] = field(default_factory=list)
    goal_pos: list[np.ndarray] = field(default_factory=list)
    goal_quat: list[np.ndarray] = field(default_factory=list)
    pos_err: list[float] = field(default_factory=list)
    rot_err: list[float] = field(default_factory=list)
    tolerance: tuple[float, float] = (0.005, math.radians(2.0))

    def capture(self, env: Any, time: float, info: dict[str, Any]) -> None:
        """Record the environment's state now.

        Args:
            env: a ``hik_sim`` environment (wrapped or not).
            time: simulated time [s].
            info: the ``info`` of the last ``reset`` or ``step`` (``pos_err`` [m], ``rot_err`` [rad]).
        """
        base = env.unwrapped
        self.time.append(float(time))
        self.qpos.append(base.data.qpos.copy())
        self.goal_pos.append(np.array(base.goal_pos, dtype=float))
        self.goal_quat.append(np.array(base.goal_quat, dtype=float))
        self.pos_err.append(float(info["pos_err"]))
        self.rot_err.append(float(info["rot_err"]))
        self.tolerance = (float(base.position_tolerance), float(base.rotation_tolerance))

    def __len__(self) -> int:
        return len(self.time)


@dataclass(frozen=True)
class WrittenVideos:
    """What :func:`write_rollout_videos` wrote (file names in the folder).

    Attributes:
        videos: each policy's video → its frame count.
        side_by_side: the side-by-side video → its frame count (empty when not asked for).
        extras: the GIF previews and the side-by-side video's last frame (PNG).
    """

    videos: dict[str, int]
    side_by_side: dict[str, int]
    extras: tuple[str, ...]


def _font(size: int):  # noqa: ANN202 - PIL.ImageFont
    from PIL import ImageFont

    try:
        from matplotlib import font_manager

        return ImageFont.truetype(font_manager.findfont("DejaVu Sans"), size)
    except Exception:  # noqa: BLE001 - no TrueType font or no FreeType: PIL's own bitmap font still draws
        return ImageFont.load_default()


def annotate(frame: np.ndarray, title: str, lines: list[tuple[str, tuple[int, int, int]]],
             legend: list[tuple[str, tuple[int, int, int]]] = ()) -> np.ndarray:  # type: ignore[assignment]
    """Write a title and coloured lines on a frame's top-left, and a colour legend on its bottom-left.

    Args:
        frame: (H, W, 3) uint8.
        title: first line, larger.
        lines: (text, RGB) below it.
        legend: (text, RGB) entries drawn as a coloured bar and its text.

    Returns:
        A new (H, W, 3) uint8 frame.
    """
    from PIL import Image, ImageDraw

    image = Image.fromarray(frame).convert("RGBA")
    layer = Image.new("RGBA", image.size, (0, 0, 0, 0))
    draw = ImageDraw.Draw(layer)
    size = max(9, image.height // 28)
    big, small = _font(round(1.3 * size)), _font(size)
    pad = max(3, size // 3)
    rows = [(title, (255, 255, 255), big)] + [(text, colour, small) for text, colour in lines]
    heights = [draw.textbbox((0, 0), text, font=font)[3] + pad for text, _, font in rows]
    widths = [draw.textlength(text, font=font) for text, _, font in rows]
    draw.rectangle((0, 0, min(image.width, max(widths) + 3 * pad), sum(heights) + 2 * pad), fill=(0, 0, 0, 160))
    y: float = pad  # text boxes are measured in float pixels
    for (text, colour, font), h in zip(rows, heights):
        draw.text((2 * pad, y), text, fill=(*colour, 255), font=font)
        y += h
    if legend:
        bar = 2 * size
        legend_heights = [draw.textbbox((0, 0), text, font=small)[3] + pad for text, _ in legend]
        top = image.height - sum(legend_heights) - 2 * pad
        width = max(draw.textlength(text, font=small) for text, _ in legend) + bar + 5 * pad
        draw.rectangle((0, top, min(image.width, width), image.height), fill=(0, 0, 0, 160))
        y = top + pad
        for (text, colour), h in zip(legend, legend_heights):
            middle = y + h // 2
            draw.rectangle((2 * pad, middle - max(1, size // 6), 2 * pad + bar, middle + max(1, size // 6)), fill=(*colour, 255))
            draw.text((3 * pad + bar, y), text, fill=(255, 255, 255, 255), font=small)
            y += h
    return np.asarray(Image.alpha_composite(image, layer).convert("RGB"))


def tile(frames: list[np.ndarray]) -> np.ndarray:
    """Frames of equal height side by side: (H, ΣW, 3)."""
    return np.concatenate(frames, axis=1)


class RolloutRenderer:
    """Renders a :class:`Recording`'s frames in a robot's scene (one offscreen context; ``close`` it).

    Args:
        scene: the robot's :class:`~hik_sim.sim.Scene` (the one its environment ran in).
        options: size and looks.

    Raises:
        SceneError: the frame is larger than the scene's offscreen buffer.
    """

    def __init__(self, scene: Any, options: VideoOptions = VideoOptions()) -> None:
        import mujoco

        from hik_sim.sim import ensure_headless_gl

        self.scene, self.options, self.model = scene, options, scene.model
        max_w, max_h = int(self.model.vis.global_.offwidth), int(self.model.vis.global_.offheight)
        if not (options.width <= max_w and options.height <= max_h):
            raise SceneError(f"video size {options.width}x{options.height} px is outside the scene's offscreen buffer: width must be "
                             f"<= {max_w} and height <= {max_h} px (SceneOptions.offscreen_size sets the buffer)")
        ensure_headless_gl()
        self.data = mujoco.MjData(self.model)
        mujoco.mj_resetDataKeyframe(self.model, self.data, scene.home_key)
        mujoco.mj_forward(self.model, self.data)
        quality = self.model.vis.quality
        samples = quality.offsamples
        if options.multisamples is not None:  # read when the context is made: set for this renderer only
            quality.offsamples = options.multisamples
        try:
            self._renderer = mujoco.Renderer(self.model, height=options.height, width=options.width, max_geom=10_000)
        finally:
            quality.offsamples = samples
        camera = self.model.camera("workspace").id
        forward = -self.data.cam_xmat[camera].reshape(3, 3)[:, 2]
        self._azimuth = math.degrees(math.atan2(forward[1], forward[0]))
        self._elevation = math.degrees(math.asin(float(np.clip(forward[2], -1.0, 1.0))))

    def close(self) -> None:
        """Release the offscreen context."""
        if self._renderer is not None:
            self._renderer.close()
            self._renderer = None

    def __enter__(self) -> RolloutRenderer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _pose(self, recording: Recording, index: int) -> None:
        import mujoco

        self.data.qpos[:] = recording.qpos[index]
        mujoco.mj_kinematics(self.model, self.data)
        self.scene.set_target(self.data, recording.goal_pos[index], recording.goal_quat[index])
        mujoco.mj_kinematics(self.model, self.data)

    def paths(self, recording: Recording) -> tuple[np.ndarray, np.ndarray]:
        """The goal's and the end-effector's world positions at each recorded step: (N, 3), (N, 3) [m]."""
        goal, ee = np.empty((len(recording), 3)), np.empty((len(recording), 3))
        for i in range(len(recording)):
            self._pose(recording, i)
            goal[i] = self.data.mocap_pos[self.scene.target_mocap]
            ee[i] = self.data.site_xpos[self.scene.ee_site]
        return goal, ee

    def camera(self, points: np.ndarray) -> Any:
        """A free camera (``mujoco.MjvCamera``) that frames world points (K, 3) [m] from the
        ``workspace`` camera's direction: looking at their bounding box's centre, from the distance at
        which the box's bounding sphere (at least ``min_extent`` × the workspace radius) fits the view."""
        import mujoco

        points = np.asarray(points, dtype=float).reshape(-1, 3)
        low, high = points.min(axis=0), points.max(axis=0)
        radius = max(0.5 * float(np.linalg.norm(high - low)), self.options.min_extent * float(self.scene.workspace_radius), 1e-3)
        half_fov = math.radians(float(self.model.vis.global_.fovy) / 2)
        aspect = self.options.width / self.options.height
        half_fov = min(half_fov, math.atan(aspect * math.tan(half_fov)))  # a portrait frame is narrower than tall
        camera = mujoco.MjvCamera()
        camera.type = mujoco.mjtCamera.mjCAMERA_FREE
        camera.lookat[:] = 0.5 * (low + high)
        camera.distance = self.options.margin * radius / math.sin(half_fov)
        camera.azimuth, camera.elevation = self._azimuth, self._elevation
        return camera

    def _trail(self, points: np.ndarray, rgba: tuple[float, ...], width: float) -> None:
        import mujoco

        scene = self._renderer.scene
        if len(points) > self.options.max_trail_segments + 1:  # thin evenly, always keeping the newest point
            keep = np.unique(np.linspace(0, len(points) - 1, self.options.max_trail_segments + 1).round().astype(int))
            points = points[keep]
        colour = np.asarray(rgba, dtype=np.float32)
        for a, b in zip(points[:-1], points[1:]):
            if np.linalg.norm(b - a) < 1e-6 or scene.ngeom >= scene.maxgeom:
                continue
            geom = scene.geoms[scene.ngeom]
            mujoco.mjv_initGeom(geom, mujoco.mjtGeom.mjGEOM_CAPSULE, np.zeros(3), np.zeros(3), np.eye(3).ravel(), colour)
            mujoco.mjv_connector(geom, mujoco.mjtGeom.mjGEOM_CAPSULE, width, a, b)
            scene.ngeom += 1

    def render(self, recording: Recording, index: int, camera: Any, paths: tuple[np.ndarray, np.ndarray] | None = None) -> np.ndarray:
        """Frame ``index`` of a recording: (height, width, 3) uint8.

        Args:
            recording: the episode.
            index: the recorded step.
            camera: from :meth:`camera`.
            paths: from :meth:`paths` (computed here when not given and trails are on).
        """
        import mujoco

        self._pose(recording, index)
        self._renderer.update_scene(self.data, camera=camera)
        flags = self._renderer.scene.flags
        flags[mujoco.mjtRndFlag.mjRND_SHADOW] = int(self.options.shadows)
        flags[mujoco.mjtRndFlag.mjRND_REFLECTION] = 0
        if self.options.trails:
            goal, ee = paths if paths is not None else self.paths(recording)
            width = 0.006 * camera.distance  # about 2 px at any zoom
            self._trail(goal[: index + 1], GOAL_TRAIL_RGBA, width)
            self._trail(ee[: index + 1], EE_TRAIL_RGBA, width)
        frame = self._renderer.render().copy()
        if not self.options.overlay:
            return frame
        pos_mm, rot_deg = 1000 * recording.pos_err[index], math.degrees(recording.rot_err[index])
        within = recording.pos_err[index] < recording.tolerance[0] and recording.rot_err[index] < recording.tolerance[1]
        lines = [(f"{recording.env}   t = {recording.time[index]:.2f} s", (220, 220, 220)),
                 (f"position error {pos_mm:.2f} mm", (120, 235, 120) if within else (255, 210, 120)),
                 (f"rotation error {rot_deg:.2f}°", (120, 235, 120) if within else (255, 210, 120))]
        legend = [("goal path", _rgb(GOAL_TRAIL_RGBA)), ("end-effector path", _rgb(EE_TRAIL_RGBA))] if self.options.trails else []
        return annotate(frame, recording.policy, lines, legend)


def _rgb(rgba: tuple[float, ...]) -> tuple[int, int, int]:
    """An RGBA colour in [0, 1] as 8-bit RGB."""
    return int(255 * rgba[0]), int(255 * rgba[1]), int(255 * rgba[2])


def _writer(path: Path, width: int, height: int, fps: float):  # noqa: ANN202 - a started imageio_ffmpeg generator
    import imageio_ffmpeg

    writer = imageio_ffmpeg.write_frames(str(path), (width, height), fps=fps, codec="libx264", macro_block_size=1, quality=7,
                                         ffmpeg_log_level="error", output_params=["-movflags", "+faststart"])
    writer.send(None)
    return writer


def write_rollout_videos(scene: Any, recordings: list[Recording], folder: Path, fps: float, options: VideoOptions = VideoOptions(),
                         side_by_side: str | None = None, previews: bool = True, own_videos: bool = True,
                         progress: Callable[[int], object] | None = None, names: list[str] | None = None) -> WrittenVideos:
    """Write ``<policy>_<env>.mp4`` for each recording of one episode and, with ``side_by_side``, one
    video of them all tiled left to right (each tile labelled with its policy), in one rendering pass.

    All videos share one camera, which frames every recording's goal and end-effector paths. Each
    video holds its last frame for ``options.hold_seconds``; in the side-by-side video a recording
    shorter than the longest holds its last frame until the longest ends.

    Args:
        scene: the robot's scene (the environments' ``unwrapped.scene``).
        recordings: the policies' recordings of the same episode, each with at least one step.
        folder: where to write.
        fps: frames per second.
        options: size and looks.
        side_by_side: file name of the side-by-side video (``.mp4``); ``None``: none. Its last frame
            is also written as a PNG of the same name.
        previews: also write a small ``.gif`` preview beside each policy's video.
        own_videos: write each policy's video (``False``: the side-by-side video alone, which must then be asked for).
        progress: called with the number of frames drawn since its last call (for a progress bar).
        names: each policy's video's file name (default ``<policy>_<env>.mp4``).

    Returns:
        The files written.

    Raises:
        HikError: no recording, an empty one, ``fps`` below 1, or no video asked for.
        SceneError: the frame is larger than the scene's offscreen buffer.
    """
    import imageio.v3 as iio

    if not recordings or any(len(r) == 0 for r in recordings):
        raise HikError("write_rollout_videos needs at least one recording, each with at least one recorded step")
    if not fps >= 1:
        raise HikError(f"fps must be >= 1, got {fps}")
    if not own_videos and not side_by_side:
        raise HikError("write_rollout_videos with own_videos=False needs side_by_side: a file name for the one video it writes")
    previews = previews and own_videos
    folder = Path(folder)
    names = list(names) if names is not None else [f"{r.policy}_{r.env}.mp4" for r in recordings]
    if len(names) != len(recordings):
        raise HikError(f"names must give one file name per recording ({len(recordings)}), got {len(names)}")
    hold = round(options.hold_seconds * fps)
    counts = [len(r) + hold for r in recordings]
    length = max(counts)
    preview_every = max(1, length // 40)
    gifs: list[list[np.ndarray]] = [[] for _ in recordings]
    with RolloutRenderer(scene, options) as renderer:
        paths = [renderer.paths(r) for r in recordings]
        camera = renderer.camera(np.concatenate([p for pair in paths for p in pair]))
        writers = [_writer(folder / name, options.width, options.height, fps) for name in names] if own_videos else []
        tiled = _writer(folder / side_by_side, options.width * len(recordings), options.height, fps) if side_by_side else None
        last = None
        drawn: list[tuple[int, np.ndarray] | None] = [None] * len(recordings)  # a held frame is drawn once
        try:
            for i in range(length):
                frames = []
                for j, (recording, path) in enumerate(zip(recordings, paths)):
                    index = min(i, len(recording) - 1)
                    held = drawn[j]
                    if held is None or held[0] != index:
                        held = drawn[j] = (index, renderer.render(recording, index, camera, path))
                        if progress is not None:
                            progress(1)
                    frames.append(held[1])
                for j, (writer, frame) in enumerate(zip(writers, frames)):
                    if i < counts[j]:
                        writer.send(np.ascontiguousarray(frame))
                        if previews and i % preview_every == 0:
                            gifs[j].append(frame[::2, ::2])
                if tiled is not None:
                    last = tile(frames)
                    tiled.send(np.ascontiguousarray(last))
        except BaseException:  # Ctrl-C also stops the ffmpeg encoders: closing them then must not hide the interrupt
            for writer in writers + ([tiled] if tiled is not None else []):
                with contextlib.suppress(Exception):
                    writer.close()
            raise
        for writer in writers + ([tiled] if tiled is not None else []):
            writer.close()
    extras: list[str] = []
    if previews:
        for name, frames in zip(names, gifs):
            iio.imwrite(folder / Path(name).with_suffix(".gif"), np.stack(frames), duration=100, loop=0)
            extras.append(str(Path(name).with_suffix(".gif")))
    if side_by_side and last is not None:
        still = Path(side_by_side).with_suffix(".png")
        iio.imwrite(folder / still, last)
        extras.append(str(still))
    return WrittenVideos(videos=dict(zip(names, counts)) if own_videos else {},
                         side_by_side={side_by_side: length} if side_by_side else {}, extras=tuple(extras))
