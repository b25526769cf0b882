"""Success criteria and the single-pose rotation error, defined once (no torch).

- :data:`SUCCESS` (5 mm & 2°): the hybrid-IK paper's criterion, used for success everywhere in
  hik_sim (solvers, networks' answer choice, environments, the trainer's loss units, the tables).
- :data:`LOOSE` (10 mm & 20°): CycleIK's coarser criterion, reported beside it.
- :data:`REPORT_TOLERANCES`: the criteria the solver tables report (5 mm & 2°, 1 mm & 1°, and
  0.1 mm & 0.1° for "exact").
- :func:`rotation_angle`: the geodesic angle between two orientations for one pose (numpy), the
  same formula as the batched :func:`hik_sim.kinematics.rotations.rotation_error` (torch):
  ``2·atan2(‖vec(q*⊗q')‖, |w(q*⊗q')|)``, accurate near zero where ``2·acos(|⟨q, q'⟩|)`` is not
  (acos loses about half the digits there: a 1e-8 rad error reads as 0 or 2e-8).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from hik_sim.errors import HikError

__all__ = ["Tolerance", "SUCCESS", "LOOSE", "EXACT", "REPORT_TOLERANCES", "rotation_angle"]


@dataclass(frozen=True)
class Tolerance:
    """A success criterion: both errors strictly below their thresholds.

    Attributes:
        position: [m] (default 5 mm, the hybrid-IK paper's).
        rotation: [rad] (default 2°).
    """

    position: float = 0.005
    rotation: float = math.radians(2.0)

    def __post_init__(self) -> None:
        if not (self.position > 0 and self.rotation > 0):
            raise HikError(f"tolerances must be positive, got {self.position} m and {self.rotation} rad")

    def met(self, pos_err: Any, rot_err: Any) -> Any:
        """Which errors are within this tolerance: (B,) bool for tensors or arrays, a bool for floats."""
        return (pos_err < self.position) & (rot_err < self.rotation)


SUCCESS = Tolerance(0.005, math.radians(2.0))
"""5 mm & 2°: success, everywhere in hik_sim (the hybrid-IK paper's criterion)."""
LOOSE = Tolerance(0.010, math.radians(20.0))
"""10 mm & 20°: CycleIK's coarser criterion, reported beside :data:`SUCCESS`."""
EXACT = Tolerance(0.0001, math.radians(0.1))
"""0.1 mm & 0.1°: an "exact" solution in the solver tables."""
REPORT_TOLERANCES: dict[str, Tolerance] = {"5mm_2deg": SUCCESS, "1mm_1deg": Tolerance(0.001, math.radians(1.0)), "0.1mm_0.1deg": EXACT}
"""The criteria of the solver tables, by the suffix of their ``success_…`` column."""


def rotation_angle(quat: np.ndarray, target_quat: np.ndarray) -> float:
    """Geodesic angle [rad] in [0, π] between two orientations, unit quaternions (4,) wxyz; sign-invariant."""
    w1, x1, y1, z1 = (float(v) for v in quat)
    w2, x2, y2, z2 = (float(v) for v in target_quat)
    # q* ⊗ q'
    w = w1 * w2 + x1 * x2 + y1 * y2 + z1 * z2
    x = w1 * x2 - x1 * w2 - y1 * z2 + z1 * y2
    y = w1 * y2 + x1 * z2 - y1 * w2 - z1 * x2
    z = w1 * z2 - x1 * y2 + y1 * x2 - z1 * w2
    return 2.0 * math.atan2(math.sqrt(x * x + y * y + z * z), abs(w))

