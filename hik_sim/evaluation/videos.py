"""The evaluator's videos: the recorded first episodes rendered (:mod:`hik_sim.sim.video`), with a progress bar.

By default (``--videos side-by-side``) each environment gets one video, ``side_by_side_<env>.mp4``: every
policy's first episode tiled left to right under one camera, and its last frame as a PNG poster; a
single policy gets its own video instead. ``--videos all`` writes each policy's video
(``<policy>_<env>.mp4``) and GIF preview too; the frames are rendered once for both.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from hik_sim.evaluation.config import EvalConfig
from hik_sim.evaluation.episodes import Episodes

__all__ = ["write_videos"]


def write_videos(episodes: Episodes, config: EvalConfig, out: Path, report: dict[str, Any], progress: bool) -> list[str]:
    """Render and write the videos; record their frame counts in ``report`` (``video_frames``,
    ``side_by_side``); return the files written.

    Rendering runs on the CPU where there is no GPU: the frames drawn are counted on a progress bar.
    """
    from tqdm.auto import tqdm

    from hik_sim.sim.video import VideoOptions, write_rollout_videos

    high = config.quality == "high"
    options = VideoOptions(width=config.width, height=config.height, shadows=high, multisamples=None if high else 0)
    total = sum(len(r) for recordings in episodes.recordings.values() for r in recordings)
    files: list[str] = []
    with tqdm(total=total, desc="render videos", unit="frame", disable=not progress) as bar:
        for env_name, recordings in episodes.recordings.items():
            if not recordings:
                continue
            several = len(recordings) > 1
            own = config.videos == "all" or not several
            side = f"side_by_side_{env_name}.mp4" if several else None
            bar.set_postfix(env=env_name)
            written = write_rollout_videos(episodes.scene, recordings, out, episodes.fps[env_name], options, side_by_side=side,
                                           own_videos=own, previews=own, progress=bar.update,
                                           names=[f"{episodes.slugs.get(r.policy, r.policy)}_{env_name}.mp4" for r in recordings])
            report["video_frames"].update(written.videos)
            report["side_by_side"].update(written.side_by_side)
            for video in written.videos:
                files += [video, str(Path(video).with_suffix(".gif"))]
            files += list(written.side_by_side) + [f for f in written.extras if not f.endswith(".gif")]
    return files
