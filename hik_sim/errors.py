"""One exception hierarchy for hik_sim.

Every error a user can cause is a :class:`HikError`, so ``except HikError`` catches all of them,
and every message says what was wrong and what would have been valid.
"""

from __future__ import annotations

__all__ = ["HikError", "UnknownRobotError", "UrdfError", "ChainError", "MeshError", "CheckpointError", "TrainingError",
           "SolverError", "OutputError", "SceneError"]


class HikError(Exception):
    """Base class of every error hik_sim raises on bad input."""


class UnknownRobotError(HikError, KeyError):
    """A robot name that is not in the registry."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0]) if self.args else ""


class UrdfError(HikError):
    """A URDF that cannot be read: missing file, not XML, or not a valid robot description."""


class ChainError(HikError):
    """A base/end-effector pair that does not define a usable kinematic chain."""


class MeshError(HikError):
    """A mesh that a URDF names but that cannot be found or converted."""


class CheckpointError(HikError):
    """A checkpoint that cannot be read, written or used: a bad path, a corrupt file, another robot's network."""


class TrainingError(HikError):
    """A training run that cannot start or continue: a bad configuration or resume state."""


class SolverError(HikError):
    """A solver or controller asked to do something it cannot: bad targets or starting joints, a
    network paired with another robot's chain, an unknown controller kind."""


class ModelError(HikError):
    """An IK network that cannot be built or run as asked: unknown kind or options, bad input poses."""


class EnvError(HikError):
    """A Gymnasium environment used outside its contract: bad actions, arguments or trajectories."""


class OutputError(HikError):
    """A place to write results that cannot be used: an existing file, an unwritable or non-empty folder."""


class SceneError(HikError):
    """A scene or environment that cannot be built as asked: e.g. a render size beyond MuJoCo's buffer."""
