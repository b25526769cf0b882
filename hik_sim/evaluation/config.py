"""What the evaluator runs (:class:`EvalConfig`): policies, environments, budgets and videos, checked before any work."""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from hik_sim.errors import HikError
from hik_sim.solvers.registry import BASELINE_NAMES, SOLVER_NAMES

__all__ = ["EvalConfig", "DEFAULT_POLICIES", "LIMITS", "NETWORK_FREE_POLICIES", "POLICY_NAMES", "VIDEO_CHOICES"]

POLICY_NAMES: tuple[str, ...] = tuple(n for n in SOLVER_NAMES if n not in BASELINE_NAMES)
"""The policies' fixed names (harmoatt, mlp, closed_loop, hybrid, multistart, lm, dm_control; ``harmoatt``
and ``mlp``, the equal-time pair, from a checkout); every name of :func:`hik_sim.solvers.registry.make_solver`
is a policy: the baselines ``cycleik`` and ``regression`` where found, any shipped network such as
``harmoatt_4answers``, and a checkpoint path too."""
DEFAULT_POLICIES: tuple[str, ...] = ("harmoatt_4answers", "closed_loop", "hybrid", "lm")
"""The default policies of a robot with shipped networks: its HarmoAtt-IK network alone, that network
closed on its own error, the hybrid (HarmoAtt-IK seed + LM, the default controller) and the LM without
a network (what the network adds)."""
NETWORK_FREE_POLICIES: tuple[str, ...] = ("lm", "multistart")
"""The default policies of a robot no network is shipped for (``dm_control`` needs none either)."""
VIDEO_CHOICES: tuple[str, ...] = ("side-by-side", "all", "none")
"""``--videos``: the side-by-side video of each environment and its poster frame (the default), those
and each policy's own video with a GIF preview, or none."""
LIMITS: dict[str, tuple[str, float, float]] = {
    "episodes": ("--episodes", 1, 1000),
    "track_episodes": ("--track-episodes", 1, 1000),
    "track_seconds": ("--track-seconds", 1.0, 600.0),
    "ik_targets": ("--ik-targets", 1, 200_000),
    "fps": ("--video-fps", 1, 50),
}
"""Per setting: its command-line option and the smallest and largest value accepted (``track_seconds``
must also be above one second, the time Track errors are counted after). The largest keep one run
within hours on a laptop's CPU and its memory within a few hundred MB."""


@dataclass(frozen=True)
class EvalConfig:
    """What the evaluator runs.

    Attributes:
        policies: policy names (:data:`POLICY_NAMES`, a shipped network's name) or checkpoint paths; the
            default: :data:`DEFAULT_POLICIES`.
        envs: ``reach`` and/or ``track``.
        trajectory: Track's trajectory.
        speed: Track's speed [m/s].
        episodes: Reach episodes per policy.
        track_episodes: Track episodes per policy.
        track_seconds: simulated time per Track episode [s].
        ik_targets: fixed targets for the open-loop accuracy.
        seed: seed of targets and episodes.
        video: record the first episode of each policy and environment (False: ``videos`` is ``none``).
        videos: which videos (:data:`VIDEO_CHOICES`): ``side-by-side`` (all policies on one episode, and
            its last frame as a PNG poster), ``all`` (also each policy's own video and GIF preview), ``none``.
        width: video width [px] of one policy (even; the side-by-side video is one width per policy).
        height: video height [px] (even).
        fps: video frames per second (frames are the recorded control steps nearest that rate).
        quality: ``fast`` (no shadows, no anti-aliasing: a fraction of ``high``'s render time on a CPU)
            or ``high`` (shadows, 4 samples a pixel).
        device: where networks run.
        seed_network: a checkpoint (.safetensors) that seeds ``hybrid`` on a robot no network is shipped
            for (``--checkpoint``); a robot with shipped networks uses its own seed network.
    """

    policies: tuple[str, ...] = DEFAULT_POLICIES
    envs: tuple[str, ...] = ("reach", "track")
    trajectory: str = "figure_eight"
    speed: float = 0.1
    episodes: int = 5
    track_episodes: int = 2
    track_seconds: float = 10.0
    ik_targets: int = 2000
    seed: int = 0
    video: bool = True
    videos: str = "side-by-side"
    width: int = 400
    height: int = 300
    fps: int = 12
    quality: str = "fast"
    device: str = "cpu"
    seed_network: str | None = None

    def __post_init__(self) -> None:
        if not self.policies:
            raise HikError(f"give at least one policy: {', '.join(POLICY_NAMES)} or a checkpoint path")
        bad_envs = sorted(set(self.envs) - {"reach", "track"})
        if bad_envs:
            raise HikError(f"unknown environments {bad_envs}; environments are: reach, track")
        if self.episodes < 1 or self.track_episodes < 1 or self.ik_targets < 1 or not self.track_seconds > 1.0:
            raise HikError("episodes, track_episodes and ik_targets must be at least 1, track_seconds above 1 s")
        if not math.isfinite(self.track_seconds):  # inf passed the check above and failed as an OverflowError mid-run
            raise HikError(f"track_seconds must be finite, got {self.track_seconds}")
        for name, (option, low, high) in LIMITS.items():
            value = getattr(self, name)
            if not low <= value <= high:
                raise HikError(f"{name} ({option}) must be within {low:g} to {high:g}, got {value:g}")
        if self.seed < 0:  # gymnasium refused it only at the first episode, after the open-loop part had run
            raise HikError(f"seed must be >= 0, got {self.seed}")
        if self.quality not in ("fast", "high"):
            raise HikError(f"quality (--video-quality) must be fast or high, got {self.quality!r}")
        if self.videos not in VIDEO_CHOICES:
            raise HikError(f"videos (--videos) must be one of {', '.join(VIDEO_CHOICES)}, got {self.videos!r}")
        if not (self.device == "cpu" or re.fullmatch(r"cuda(:\d+)?", self.device)):  # else silently unused by network-free policies
            raise HikError(f"device must be cpu, cuda or cuda:N, got {self.device!r}")
        if self.recording:
            from hik_sim.sim.video import VideoOptions

            VideoOptions(width=self.width, height=self.height)  # an odd or tiny size, before any work

    @property
    def recording(self) -> bool:
        """Whether any video is written."""
        return self.video and self.videos != "none"
