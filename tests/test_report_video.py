"""report.html and the rollout videos, on tiny frames and short episodes: the page names only files
that exist and parses; frames have the asked size; trails, the overlay and the camera change the
pixels they should; the side-by-side video is its tiles side by side."""

from __future__ import annotations

import base64
import json
import math
from html.parser import HTMLParser
from pathlib import Path

import gymnasium as gym
import imageio.v3 as iio
import numpy as np
import pytest

import hik_sim.envs  # noqa: F401  (registers the environments)
from hik_sim.errors import HikError, OutputError
from hik_sim.evaluation.evaluate import EvalConfig
from hik_sim.evaluation.evaluate import main as evaluate_main
from hik_sim.evaluation.report import VideoEntry, markdown_to_html, write_report_html
from hik_sim.sim.video import EE_TRAIL_RGBA, Recording, RolloutRenderer, VideoOptions, annotate, tile, write_rollout_videos

W, H = 128, 96  # tiny frames: the tests render on a shared CPU
VOID = {"meta", "img", "br", "hr", "link", "input", "source"}


class _Page(HTMLParser):
    """Tags, the files a page names, and whether its elements nest."""

    def __init__(self) -> None:
        super().__init__()
        self.stack: list[str] = []
        self.errors: list[str] = []
        self.refs: list[str] = []
        self.tags: dict[str, list[dict[str, str | None]]] = {}
        self.text: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        self.tags.setdefault(tag, []).append(dict(attrs))
        self.refs += [value for name, value in attrs if name in ("src", "href", "poster") and value]
        if tag not in VOID:
            self.stack.append(tag)

    def handle_endtag(self, tag: str) -> None:
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:] or 'nothing'}")
        else:
            self.stack.pop()

    def handle_data(self, data: str) -> None:
        self.text.append(data)


def _parse(page: Path) -> _Page:
    parser = _Page()
    parser.feed(page.read_text(encoding="utf-8"))
    parser.close()
    return parser


def _track_recording(policy: str, seconds: float = 1.2, phase: float = 0.0) -> tuple[Recording, object]:
    """A Track episode driven by a scripted joint motion (no IK: fast): the goal moves on its path,
    the arm sweeps its first joints."""
    env = gym.make("hik_sim/Track-v0", robot="irb120", trajectory="figure_eight", speed=0.3, size=0.15)
    obs, info = env.reset(seed=3)
    q0 = obs["joint_pos"].copy()
    recording = Recording(policy, "track")
    recording.capture(env, 0.0, info)
    dt = env.unwrapped.dt
    for step in range(1, int(seconds / dt) + 1):
        q = q0.copy()
        q[0] += 0.6 * math.sin(2 * math.pi * step * dt / seconds + phase)
        q[1] += 0.3 * step * dt / seconds
        obs, _, _, _, info = env.step(q)
        if step % 2 == 0:
            recording.capture(env, step * dt, info)
    scene = env.unwrapped.scene
    env.close()
    return recording, scene


@pytest.fixture(scope="module")
def track() -> tuple[Recording, object]:
    return _track_recording("scripted")


@pytest.mark.slow  # two policies, both environments, four videos and two side-by-side ones
def test_a_tiny_evaluation_writes_a_report_page_that_names_only_its_files(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--robot", "irb120", "--policy", "lm", "multistart", "--episodes", "1", "--track-episodes", "1", "--track-seconds", "1.2",
            "--ik-targets", "20", "--video-size", f"{W}x{H}", "--videos", "all", "--no-progress", "--out", str(out)]
    assert evaluate_main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    page = _parse(out / "report.html")
    assert not page.errors and not page.stack, (page.errors, page.stack)
    assert page.tags["title"] and "report.html" in report["files"]
    files = [ref for ref in page.refs if not ref.startswith(("data:", "#"))]
    assert files and all((out / ref).is_file() for ref in files), [ref for ref in files if not (out / ref).is_file()]
    # every video is on the page with controls and a relative src; every plot is embedded as a PNG equal to its file
    videos = {v["src"]: v for v in page.tags["video"]}
    assert set(videos) == set(report["video_frames"]) | set(report["side_by_side"]) and all("controls" in v for v in videos.values())
    assert set(report["video_frames"]) == {"lm_reach.mp4", "lm_track.mp4", "multistart_reach.mp4", "multistart_track.mp4"}
    assert set(report["side_by_side"]) == {"side_by_side_reach.mp4", "side_by_side_track.mp4"}
    embedded = [img["src"] for img in page.tags["img"]]
    assert len(embedded) == 3 and all(src.startswith("data:image/png;base64,") for src in embedded)
    plots = {base64.b64decode(src.split(",", 1)[1]) for src in embedded}
    assert plots == {(out / name).read_bytes() for name in ("ik_errors.png", "reach_error.png", "track_error.png")}
    # the tables carry report.json's numbers
    text = " ".join(page.text)
    assert len(page.tags["table"]) == 3
    for policy, entry in report["policies"].items():
        assert f"{entry['ik']['ms_per_target']:.3f}" in text and f"{entry['track']['pos_rms_mm']:.3f}" in text, policy
    # videos: the asked size, the frame counts reported, the side-by-side one tile per policy
    for name, frames in report["video_frames"].items():
        decoded = np.stack(list(iio.imiter(out / name)))
        assert decoded.shape == (frames, H, W, 3), name
    for name, frames in report["side_by_side"].items():
        decoded = np.stack(list(iio.imiter(out / name)))
        assert decoded.shape == (frames, H, 2 * W, 3)
        env = name[len("side_by_side_"):-4]
        left = np.stack(list(iio.imiter(out / f"lm_{env}.mp4")))
        n = min(len(left), frames)
        tile_error = np.abs(decoded[:n, :, :W].astype(float) - left[:n].astype(float)).mean()
        other_error = np.abs(decoded[:n, :, W:].astype(float) - left[:n].astype(float)).mean()
        assert tile_error < 6.0 and tile_error < other_error, (name, tile_error, other_error)  # the left tile is lm's video


def test_by_default_one_side_by_side_video_and_its_poster_with_a_progress_bar(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "run"
    argv = ["--robot", "irb120", "--policy", "lm", "multistart", "--env", "reach", "--episodes", "1", "--ik-targets", "20",
            "--video-size", f"{W}x{H}", "--video-fps", "10", "--out", str(out)]
    assert evaluate_main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["video_frames"] == {} and set(report["side_by_side"]) == {"side_by_side_reach.mp4"}
    assert sorted(p.name for p in out.glob("*.mp4")) == ["side_by_side_reach.mp4"] and not list(out.glob("*.gif"))
    assert iio.imread(out / "side_by_side_reach.png").shape == (H, 2 * W, 3)  # the poster: the last frame, both tiles
    decoded = np.stack(list(iio.imiter(out / "side_by_side_reach.mp4")))
    assert decoded.shape == (report["side_by_side"]["side_by_side_reach.mp4"], H, 2 * W, 3)
    assert iio.immeta(out / "side_by_side_reach.mp4")["fps"] == pytest.approx(10.0)  # every 5th 50 Hz control step, played in real time
    assert set(report["phases"]) == {"episodes", "report", "videos"}
    err = capsys.readouterr().err
    assert "render videos" in err and "frame" in err  # the video phase's progress bar
    page = _parse(out / "report.html")
    assert {v["src"] for v in page.tags["video"]} == {"side_by_side_reach.mp4"} and page.tags["video"][0]["poster"] == "side_by_side_reach.png"


def test_without_videos_the_page_has_tables_and_plots_only(tmp_path: Path) -> None:
    out = tmp_path / "run"
    argv = ["--robot", "irb120", "--policy", "lm", "--env", "reach", "--episodes", "1", "--ik-targets", "20", "--no-video",
            "--no-progress", "--out", str(out)]
    assert evaluate_main(argv) == 0
    page = _parse(out / "report.html")
    assert "video" not in page.tags and len(page.tags["img"]) == 2 and not page.errors
    assert all((out / ref).is_file() for ref in page.refs if not ref.startswith(("data:", "#")))


def test_frames_have_the_asked_size_and_the_trails_draw_the_paths(track: tuple[Recording, object]) -> None:
    recording, scene = track
    last = len(recording) - 1
    with RolloutRenderer(scene, VideoOptions(W, H, overlay=False, shadows=False)) as trails, \
            RolloutRenderer(scene, VideoOptions(W, H, overlay=False, shadows=False, trails=False)) as plain:
        paths = trails.paths(recording)
        camera = trails.camera(np.concatenate(paths))
        first = [r.render(recording, 0, camera, paths) for r in (trails, plain)]
        final = [r.render(recording, last, camera, paths) for r in (trails, plain)]
    assert first[0].shape == final[0].shape == (H, W, 3) and first[0].dtype == np.uint8
    assert np.array_equal(first[0], first[1])  # no path yet at the first step
    changed = np.any(np.abs(final[0].astype(int) - final[1].astype(int)) > 30, axis=2)
    assert changed.sum() > 0.01 * W * H, changed.sum()  # the trails are drawn at the last step
    drawn = final[0][changed].astype(float).mean(axis=0)
    assert drawn[1] > drawn[2] and drawn[0] > drawn[2], drawn  # orange and green trails: little blue
    # the camera frames the motion: the trails span a good part of the frame and stay inside it
    rows, cols = np.nonzero(changed)
    assert cols.max() - cols.min() > 0.3 * W or rows.max() - rows.min() > 0.3 * H
    assert cols.min() > 0 and rows.min() > 0 and cols.max() < W - 1 and rows.max() < H - 1
    # the end-effector path: the frame's orange pixels
    orange = np.asarray(EE_TRAIL_RGBA[:3]) * 255
    assert (np.linalg.norm(final[0][changed].astype(float) - orange, axis=1) < 90).sum() > 10


def test_the_camera_distance_follows_the_motions_extent(track: tuple[Recording, object]) -> None:
    _, scene = track
    with RolloutRenderer(scene, VideoOptions(W, H)) as renderer:
        centre = np.array([0.3, 0.1, 0.5])
        small = renderer.camera(centre + np.array([[-0.01, 0, 0], [0.01, 0, 0]]))
        big = renderer.camera(centre + np.array([[-0.5, 0, 0], [0.5, 0, 0]]))
        bigger = renderer.camera(centre + np.array([[-1.0, 0, 0], [1.0, 0, 0]]))
    assert np.allclose(big.lookat, centre) and np.allclose(bigger.lookat, centre)
    assert bigger.distance == pytest.approx(2 * big.distance)  # proportional to the extent
    floor = VideoOptions().min_extent * scene.workspace_radius  # a tiny motion is framed with the arm around it
    assert small.distance == pytest.approx(VideoOptions().margin * floor / math.sin(math.radians(scene.model.vis.global_.fovy / 2)))


def test_the_overlay_writes_the_errors_in_the_corner_only() -> None:
    frame = np.full((H * 4, W * 4, 3), 90, dtype=np.uint8)
    one = annotate(frame, "lm", [("position error 1.00 mm", (255, 255, 255))])
    two = annotate(frame, "lm", [("position error 7.00 mm", (255, 255, 255))])
    assert one.shape == frame.shape
    assert not np.array_equal(one, two)  # the numbers are drawn, not a fixed banner
    rows, cols = np.nonzero(np.any(one != frame, axis=2))
    assert rows.max() < frame.shape[0] // 3 and cols.max() < frame.shape[1] // 2  # top-left corner
    assert np.array_equal(one[-10:, -10:], frame[-10:, -10:])


def test_the_side_by_side_video_is_its_tiles(tmp_path: Path, track: tuple[Recording, object]) -> None:
    first, scene = track
    second, _ = _track_recording("other", seconds=0.8, phase=1.0)
    options = VideoOptions(W, H, shadows=False, hold_seconds=0.2)
    written = write_rollout_videos(scene, [first, second], tmp_path, fps=25, options=options, side_by_side="both.mp4")
    hold = round(0.2 * 25)
    assert written.videos == {"scripted_track.mp4": len(first) + hold, "other_track.mp4": len(second) + hold}
    assert written.side_by_side == {"both.mp4": max(len(first), len(second)) + hold}
    assert set(written.extras) == {"scripted_track.gif", "other_track.gif", "both.png"}
    both = np.stack(list(iio.imiter(tmp_path / "both.mp4")))
    assert both.shape == (len(first) + hold, H, 2 * W, 3)
    for name, columns in (("scripted_track.mp4", slice(0, W)), ("other_track.mp4", slice(W, 2 * W))):
        alone = np.stack(list(iio.imiter(tmp_path / name)))
        assert alone.shape == (written.videos[name], H, W, 3)
        assert np.abs(both[: len(alone), :, columns].astype(float) - alone.astype(float)).mean() < 6.0
    # the shorter episode holds its last frame until the longer one ends
    right = both[:, :, W:].astype(float)
    assert np.abs(right[-1] - right[len(second) + hold - 1]).mean() < 3.0
    still = iio.imread(tmp_path / "both.png")
    assert still.shape == (H, 2 * W, 3) and np.array_equal(tile([still[:, :W], still[:, W:]]), still)


def test_the_side_by_side_video_alone_counts_its_frames_and_renders_each_once(tmp_path: Path, track: tuple[Recording, object]) -> None:
    recording, scene = track
    drawn: list[int] = []
    options = VideoOptions(width=W, height=H, multisamples=0, shadows=False)
    written = write_rollout_videos(scene, [recording, recording], tmp_path, fps=25, options=options, side_by_side="both.mp4",
                                   own_videos=False, progress=drawn.append)
    assert written.videos == {} and sorted(p.name for p in tmp_path.iterdir()) == ["both.mp4", "both.png"]
    assert sum(drawn) == 2 * len(recording)  # each recorded step of each tile drawn once; held frames are not redrawn
    with pytest.raises(HikError, match="needs side_by_side"):
        write_rollout_videos(scene, [recording], tmp_path, fps=25, options=options, own_videos=False)

    def ctrl_c(_: int) -> None:
        raise KeyboardInterrupt

    (tmp_path / "stopped").mkdir()
    with pytest.raises(KeyboardInterrupt):  # not hidden by closing the encoders
        write_rollout_videos(scene, [recording, recording], tmp_path / "stopped", fps=25, options=options, side_by_side="stopped.mp4",
                             progress=ctrl_c)
    with pytest.raises(HikError, match="multisamples must be None or within 0 to 16"):
        VideoOptions(multisamples=32)
    assert scene.model.vis.quality.offsamples == 4  # the renderer's setting did not leak into the scene


def test_sizes_are_checked_before_any_work() -> None:
    with pytest.raises(HikError, match="even whole number"):
        VideoOptions(width=641)
    with pytest.raises(HikError, match="even whole number"):
        EvalConfig(height=8)
    EvalConfig(width=641, video=False)  # no video: the size is not used
    with pytest.raises(SystemExit):
        evaluate_main(["--video-size", "big"])


def test_a_frame_larger_than_the_offscreen_buffer_fails_before_the_episodes(tmp_path: Path, capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as exited:
        evaluate_main(["--robot", "irb120", "--policy", "lm", "--video-size", "4000x3000", "--no-progress", "--out", str(tmp_path / "r")])
    assert exited.value.code == 2 and "outside the scene's offscreen buffer" in capsys.readouterr().err
    assert not (tmp_path / "r").exists()


def test_markdown_tables_become_html_tables_and_a_page_never_names_a_missing_file(tmp_path: Path) -> None:
    html = markdown_to_html("# Title\n\n| a | b [mm] |\n|---|---:|\n| x <y> | 1.50 |\n\nText with `code` and *em*.\n")
    assert "<h1>Title</h1>" in html and '<td class="num">1.50</td>' in html and "<td>x &lt;y&gt;</td>" in html
    assert "<code>code</code>" in html and "<em>em</em>" in html
    with pytest.raises(OutputError, match="missing.mp4"):
        write_report_html(tmp_path, "# Run\n", videos=[VideoEntry("missing.mp4", "a video")])
    assert not (tmp_path / "report.html").exists()


def test_the_paper_suite_folder_gets_a_page_too(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import hik_sim.evaluation.evaluate as evaluate

    def tiny_suite(out: Path, targets: int, progress: bool) -> dict:
        text = "# The seed papers' experiments\n\n| solver | pos mean [mm] |\n|---|---:|\n| hybrid | 0.012 |\n| *published hybrid* | *0.5* |\n"
        (out / "paper.md").write_text(text)
        (out / "paper.json").write_text("{}")
        return {"text": text, "run_folder": str(out)}

    monkeypatch.setattr(evaluate, "_paper_suite", tiny_suite)  # the real suite takes minutes; this checks the page's wiring
    evaluate.paper_suite(tmp_path / "paper", targets=10, progress=False)
    page = _parse(tmp_path / "paper" / "report.html")
    assert not page.errors and {"paper.json", "paper.md"} <= set(page.refs)
    assert "0.012" in " ".join(page.text) and page.tags["em"]
