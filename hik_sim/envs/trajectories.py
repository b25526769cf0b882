"""Goal trajectories for the Track environment: circle, figure-eight, straight line, smooth random waypoints.

Each trajectory is an offset from a centre point in a plane spanned by two orthonormal vectors,
starting at the centre (offset 0 at t = 0), with a mean speed set by ``speed`` [m/s] and an
extent set by ``size`` [m]. :meth:`Trajectory.at` gives the offset and its velocity.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Literal

import numpy as np

from hik_sim.errors import EnvError

__all__ = ["TRAJECTORIES", "TrajectoryKind", "Trajectory"]

TrajectoryKind = Literal["circle", "figure_eight", "line", "waypoints"]
TRAJECTORIES: tuple[str, ...] = ("circle", "figure_eight", "line", "waypoints")


@dataclass(frozen=True)
class Trajectory:
    """A planar path through the origin.

    Attributes:
        kind: ``circle`` (radius ``size``), ``figure_eight`` (Gerono lemniscate of half-width
            ``size``), ``line`` (back and forth over ±``size``), ``waypoints`` (a closed loop through
            random points within ``size``, smoothly stopping at each).
        speed: mean speed along the path [m/s].
        size: extent [m].
        u: (3,) first in-plane unit vector.
        v: (3,) second in-plane unit vector, orthogonal to ``u``.
        waypoints: (K, 2) in-plane waypoints for ``waypoints`` (the first is the origin).
    """

    kind: str
    speed: float
    size: float
    u: np.ndarray = field(default_factory=lambda: np.array([0.0, 1.0, 0.0]))
    v: np.ndarray = field(default_factory=lambda: np.array([0.0, 0.0, 1.0]))
    waypoints: np.ndarray | None = None

    def __post_init__(self) -> None:
        if self.kind not in TRAJECTORIES:
            raise EnvError(f"unknown trajectory {self.kind!r}; trajectories are: {', '.join(TRAJECTORIES)}")
        if not (self.speed > 0 and self.size > 0 and math.isfinite(self.speed) and math.isfinite(self.size)):
            raise EnvError(f"trajectory speed and size must be positive and finite, got {self.speed} m/s and {self.size} m")
        if self.kind == "waypoints" and (self.waypoints is None or len(self.waypoints) < 2):
            raise EnvError("a waypoints trajectory needs at least two waypoints")

    @classmethod
    def random_waypoints(cls, speed: float, size: float, rng: np.random.Generator, count: int = 5,
                         u: np.ndarray | None = None, v: np.ndarray | None = None) -> "Trajectory":
        """A ``waypoints`` trajectory through ``count`` points drawn uniformly in a disc of radius ``size``."""
        radius = size * np.sqrt(rng.uniform(0, 1, count - 1))
        angle = rng.uniform(0, 2 * np.pi, count - 1)
        points = np.vstack(([0.0, 0.0], np.column_stack((radius * np.cos(angle), radius * np.sin(angle)))))
        plane = {name: axis for name, axis in (("u", u), ("v", v)) if axis is not None}  # the defaults for the others
        return cls("waypoints", speed, size, waypoints=points, **plane)

    def _planar(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        a, s = self.size, self.speed
        if self.kind == "circle":
            w = s / a
            return a * np.array([math.cos(w * t) - 1, math.sin(w * t)]), a * w * np.array([-math.sin(w * t), math.cos(w * t)])
        if self.kind == "figure_eight":
            w = s / (a * _LEMNISCATE_MEAN_SPEED)
            return (a * np.array([math.sin(w * t), math.sin(w * t) * math.cos(w * t)]),
                    a * w * np.array([math.cos(w * t), math.cos(2 * w * t)]))
        if self.kind == "line":
            w = math.pi * s / (2 * a)
            return a * np.array([math.sin(w * t), 0.0]), a * w * np.array([math.cos(w * t), 0.0])
        points = self.waypoints
        assert points is not None  # __post_init__: a waypoints trajectory has them
        loop = np.vstack((points, points[:1]))
        lengths = np.linalg.norm(np.diff(loop, axis=0), axis=1)
        durations = np.maximum(lengths / s, 1e-9)
        t = t % durations.sum()
        i = int(np.searchsorted(np.cumsum(durations), t, side="right"))
        i = min(i, len(durations) - 1)
        tau = (t - (np.cumsum(durations)[i] - durations[i])) / durations[i]
        shape, rate = (1 - math.cos(math.pi * tau)) / 2, math.pi * math.sin(math.pi * tau) / (2 * durations[i])
        delta = loop[i + 1] - loop[i]
        return loop[i] + delta * shape, delta * rate

    def at(self, t: float) -> tuple[np.ndarray, np.ndarray]:
        """Offset (3,) [m] and velocity (3,) [m/s] at time ``t`` [s]."""
        offset, velocity = self._planar(t)
        return offset[0] * self.u + offset[1] * self.v, velocity[0] * self.u + velocity[1] * self.v


def _lemniscate_mean_speed(samples: int = 4096) -> float:
    """Mean of |d/dt (sin t, sin t cos t)| over a period: the figure-eight's speed at a = ω = 1."""
    t = np.linspace(0, 2 * np.pi, samples, endpoint=False)
    return float(np.mean(np.hypot(np.cos(t), np.cos(2 * t))))


_LEMNISCATE_MEAN_SPEED = _lemniscate_mean_speed()
