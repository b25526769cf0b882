"""The rules of Levenberg–Marquardt, in one place for every LM in the package.

The batched :class:`~hik_sim.solvers.lm.LMRefiner` (torch and compiled), the one-target
:class:`~hik_sim.solvers.single_target.SingleTargetLM` (numpy on MuJoCo's C kinematics, and compiled) and
:mod:`~hik_sim.solvers._lm_numba` all read their damping, close-start damping, stopping and stall rules from here:
the constants below are their defaults, and :class:`LMRules` gathers them for :class:`~hik_sim.solvers.lm.LMRefiner`.
No torch, no MuJoCo.
"""

from __future__ import annotations

from dataclasses import dataclass

from hik_sim.errors import SolverError
from hik_sim.kinematics.tolerances import SUCCESS

__all__ = ["LMRules", "DAMPING", "CLOSE_DAMPING", "STALL_ITERATIONS", "STALL_PROGRESS", "STOP_POSITION", "STOP_ROTATION",
           "ROTATION_WEIGHT", "MAX_ITERATIONS", "check_stall", "check_close_damping", "close_arguments"]

DAMPING = 1e-3
"""The LM's initial Marquardt damping λ (a start farther than the success tolerance from its target)."""
STOP_POSITION = 1e-6
"""An LM run stops once its position error is below this [m] and its rotation error below :data:`STOP_ROTATION`
(far inside the success criterion, so successes are exact)."""
STOP_ROTATION = 1e-6
"""See :data:`STOP_POSITION` [rad]."""
ROTATION_WEIGHT = 0.2
"""Weight of the rotation residual [m/rad], so that position and rotation errors are comparable in length."""
MAX_ITERATIONS = 30
"""The LM's iteration cap per run."""
STALL_ITERATIONS = 8
"""The window of the LM's stall test [iterations] (:class:`~hik_sim.solvers.single_target.SingleTargetLM`, :class:`~hik_sim.solvers.lm.LMRefiner`)."""
STALL_PROGRESS = 0.01
"""An LM run whose cost fell by less than this fraction over the last :data:`STALL_ITERATIONS`
iterations has stalled and stops (a local minimum, often with a joint held at a limit)."""


CLOSE_DAMPING = 1e-5
"""The LM's initial damping λ for a start already within the success tolerance (5 mm & 2°: a network's good answer,
the joints of the step before while tracking); a start farther away begins at the usual ``damping`` (1e-3). Madsen,
Nielsen & Tingleff's advice for Levenberg–Marquardt ("Methods for non-linear least squares problems", 2004: τ = 1e-6
for a start believed good, 1e-3 otherwise): near a good start the Gauss–Newton step is trustworthy, and a
Marquardt-scaled λ of 1e-3 shortens it where JᵀJ is ill-conditioned (the IRB120's arm nearly stretched), so the run
crawls (λ falls only threefold a step). A random start is almost never that close, so multistart runs as before.
Chosen on validation targets (seeds 2026 and 2027, 5,000 each, never a benchmark's): the batched hybrid's evaluations
a target with 1e-4 / 1e-5 / 1e-6 / off: IRB120 (its 148 k network) 9.93 / 9.36 / 9.51 / 10.24, Panda 13.46 /
13.11 / 13.56 / 13.90, G1 19.58 / 18.80 / 19.49 / 19.59, and 1–4 % fewer on the other robots, the same success
(development measurements on the hybrid without its pose table)."""


def check_close_damping(close_damping: float | None) -> None:
    """Refuse a close-start damping that cannot work (None: off, every start begins at ``damping``).

    Raises:
        SolverError: ``close_damping`` neither None nor positive.
    """
    if close_damping is not None and not close_damping > 0:
        raise SolverError(f"close_damping must be positive, or None (off): got {close_damping}")


def check_stall(stall_iterations: int, stall_progress: float) -> None:
    """Refuse a stall test that cannot work.

    Raises:
        SolverError: ``stall_iterations`` < 0, or ``stall_progress`` outside [0, 1).
    """
    if not (isinstance(stall_iterations, int) and stall_iterations >= 0 and 0.0 <= stall_progress < 1.0):
        raise SolverError(f"stall_iterations must be an int >= 0 and stall_progress in [0, 1), got {stall_iterations!r}, "
                          f"{stall_progress!r}")


def close_arguments(damping: float, close_damping: float | None) -> tuple[float, float, float]:
    """The compiled LM's close-start arguments (:mod:`hik_sim.solvers._lm_numba`): (initial damping of a start within
    the success tolerance, that tolerance's position [m] and rotation [rad]); with ``close_damping`` None, a zero
    tolerance that no start meets."""
    if close_damping is None:
        return damping, 0.0, 0.0
    return close_damping, SUCCESS.position, SUCCESS.rotation


@dataclass(frozen=True)
class LMRules:
    """The research switches of the batched LM (:class:`~hik_sim.solvers.lm.LMRefiner`), defaults as shipped.

    Attributes:
        damping: initial Marquardt damping λ (:data:`DAMPING`).
        close_damping: initial λ of a start already within the success tolerance (5 mm & 2°; :data:`CLOSE_DAMPING`;
            None: every start begins at ``damping``).
        stall_iterations: the window of the stall test [iterations] (:data:`STALL_ITERATIONS`; 0: no stall test).
        stall_progress: a run whose cost fell by less than this fraction over the window stops (:data:`STALL_PROGRESS`).
        stop_position: convergence threshold [m] (:data:`STOP_POSITION`).
        stop_rotation: convergence threshold [rad] (:data:`STOP_ROTATION`).
        rotation_weight: weight of the rotation residual [m/rad] (:data:`ROTATION_WEIGHT`).

    Raises:
        SolverError: ``damping`` or ``rotation_weight`` not positive, a negative stop threshold, a bad stall test or
            close-start damping.
    """

    damping: float = DAMPING
    close_damping: float | None = CLOSE_DAMPING
    stall_iterations: int = STALL_ITERATIONS
    stall_progress: float = STALL_PROGRESS
    stop_position: float = STOP_POSITION
    stop_rotation: float = STOP_ROTATION
    rotation_weight: float = ROTATION_WEIGHT

    def __post_init__(self) -> None:
        if not (self.rotation_weight > 0 and self.damping > 0):
            raise SolverError(f"rotation_weight and damping must be positive, got rotation_weight={self.rotation_weight!r}, "
                              f"damping={self.damping!r}")
        if not (self.stop_position >= 0 and self.stop_rotation >= 0):
            raise SolverError(f"stop_position and stop_rotation must be >= 0, got {self.stop_position!r}, {self.stop_rotation!r}")
        check_stall(self.stall_iterations, self.stall_progress)
        check_close_damping(self.close_damping)
