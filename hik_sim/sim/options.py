"""How a scene is simulated: :class:`SceneOptions`."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from hik_sim.errors import HikError

__all__ = ["SceneOptions"]


@dataclass(frozen=True)
class SceneOptions:
    """How a scene is simulated.

    Attributes:
        timestep: physics step [s].
        natural_frequency: natural frequency of every joint's position servo [Hz].
        min_armature: smallest joint armature [kg·m²], standing for the reflected inertia of a
            geared motor; it damps the dynamic coupling between heavy and light links.
        shadow_size: shadow map size [px]; 1024 renders several times faster than 4096 in software GL.
        offscreen_size: largest offscreen render (width, height) [px].
    """

    timestep: float = 0.002
    natural_frequency: float = 20.0
    min_armature: float = 0.01
    shadow_size: int = 1024
    offscreen_size: tuple[int, int] = (1280, 960)

    def __post_init__(self) -> None:
        if not 0 < self.timestep <= 0.01:
            raise HikError(f"timestep must be in (0, 0.01] s, got {self.timestep}")
        if not 0 < self.natural_frequency <= 0.25 / self.timestep:
            raise HikError(f"natural_frequency must be in (0, {0.25 / self.timestep:g}] Hz for timestep {self.timestep}, got {self.natural_frequency}")
        if not 0 <= self.min_armature < math.inf:  # NaN passed and reached the compiled model
            raise HikError(f"min_armature must be finite and >= 0, got {self.min_armature}")
        if isinstance(self.shadow_size, bool) or not isinstance(self.shadow_size, (int, np.integer)) or self.shadow_size < 1:
            raise HikError(f"shadow_size must be a whole number of pixels >= 1, got {self.shadow_size!r}")
        size = self.offscreen_size
        if not (isinstance(size, (tuple, list)) and len(size) == 2
                and all(isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v >= 1 for v in size)):
            raise HikError(f"offscreen_size must be (width, height) in whole pixels >= 1, got {size!r}")

    @property
    def servo_lag(self) -> float:
        """How far a servo trails a target moving at constant speed, in time: 2/ω [s] (critical damping)."""
        return 2 / (2 * math.pi * self.natural_frequency)
