"""A table of poses reached by random configurations, searched for the ones nearest a target: LM seeds for
the targets a network has no good answer for, where a random restart rarely reaches the target.

The table is made from the URDF alone, like a network's training data: ``size`` configurations drawn
uniformly inside the joint limits (the joints a selection holds fixed at their values) from their own
random stream (:func:`table_rng`, neither a target stream nor the restarts'), their poses by FK, and a
k-d tree (:class:`scipy.spatial.cKDTree`) over a key of each pose: its position [m] and its rotation
matrix (9 entries) scaled by ``rotation_weight / √2``, so that the distance between two keys is about
√(position distance² + (``rotation_weight`` × angle between them)²) for small angles (‖R₁ − R₂‖_F =
2√2·sin(θ/2)); the weight is the LM's (0.2 m a radian), so "near" means what the LM's cost means.
Its FK is spent once, when the table is built (with the solver, as a network is loaded with it: 0.3 s for
100,000 configurations; a table of the same chain, selection, size and seed is built once a process), as a
network's training FK is, not in the solves it seeds: :class:`~hik_sim.solvers.hybrid.HybridIK` counts the LM runs
from the seeds, not the table.

Measured (815 IRB120 validation targets that neither of the hybrid's networks has an answer
within 5 mm & 2° for): LM from the nearest of 100,000 entries ends exact (0.1 mm & 0.1°) for 72 % of them
at 15.8 evaluations, from the nearest of 1,000,000 for 77 % at 13.9; from a uniformly random configuration
for 22 % at 31.0; for the 271 of them whose best network answer's LM ended short of exact, 66 % against 17 %.
"""

from __future__ import annotations

import hashlib
import math
from collections import OrderedDict
from typing import TYPE_CHECKING

import numpy as np
import torch

from hik_sim.errors import SolverError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.data import JointSelection

if TYPE_CHECKING:
    from scipy.spatial import cKDTree

__all__ = ["PoseTable", "SEARCH_EPS", "TABLE_SIZE", "TABLE_STREAM", "table_rng"]

TABLE_SIZE = 100_000
"""Configurations in a :class:`PoseTable` by default (14 MB of keys and configurations, 0.3 s to build)."""

SEARCH_EPS = 0.5
"""The search's tolerance: the k-th entry returned is within (1 + eps) times the distance of the true k-th nearest
(:meth:`scipy.spatial.cKDTree.query`'s ``eps``; 0: exact). Chosen on 20,000 validation targets a robot:
0.5 searches 250 targets 2.7× faster than an exact search (2.2 against 6.0 ms; 98.8 % the same nearest entry) for the
same evaluations (the hybrid's IRB120 8.126 against 8.125 a target, the Panda 11.30 against 11.29, the G1 11.50
against 11.52); 1.0 is 4.6× faster but cost the G1 (11.89, one target short of exact)."""

TABLE_STREAM = 0x7AB1E5
"""The spawn key of :func:`table_rng`'s stream (the restarts' is :data:`hik_sim.solvers.restarts.RESTART_STREAM`)."""


def table_rng(seed: int) -> np.random.Generator:
    """The random stream of a pose table's configurations: numpy's PCG64 on ``SeedSequence(seed, spawn_key=(TABLE_STREAM,))``,
    another stream than the targets' (torch's Mersenne Twister), the environments' goals' and the restarts'."""
    return np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(TABLE_STREAM,)))


def _rotation_matrices(quat: np.ndarray) -> np.ndarray:
    """Unit quaternions (B, 4) wxyz → their rotation matrices, flattened row by row (B, 9): the NumPy twin of
    :func:`hik_sim.kinematics.rotations.quaternion_to_matrix`, kept for one target a call (17 µs against torch's 59)."""
    w, x, y, z = quat[:, 0], quat[:, 1], quat[:, 2], quat[:, 3]
    return np.stack((1 - 2 * (y * y + z * z), 2 * (x * y - w * z), 2 * (x * z + w * y),
                     2 * (x * y + w * z), 1 - 2 * (x * x + z * z), 2 * (y * z - w * x),
                     2 * (x * z - w * y), 2 * (y * z + w * x), 1 - 2 * (x * x + y * y)), axis=-1)


_BUILT: OrderedDict[tuple[object, ...], tuple[torch.Tensor, "cKDTree"]] = OrderedDict()
"""Tables built in this process (the latest :data:`_KEEP`), by chain geometry, limits, held joints, size, seed and weight."""
_KEEP = 8


class PoseTable:
    """Random configurations of a chain and the poses they reach, searched by pose (built when made).

    Args:
        chain: the robot's chain.
        selection: the joints held fixed (at their values in every configuration of the table).
        size: configurations in the table (≥ 1).
        seed: seed of the configurations (:func:`table_rng`).
        rotation_weight: metres a radian of rotation counts as in the search (the LM's weight).
        eps: the search's tolerance (:data:`SEARCH_EPS`).

    Raises:
        SolverError: ``size`` < 1, ``rotation_weight`` not positive or ``eps`` negative.
    """

    def __init__(self, chain: Chain, selection: JointSelection, size: int = TABLE_SIZE, seed: int = 0,
                 rotation_weight: float = 0.2, eps: float = SEARCH_EPS) -> None:
        if not (isinstance(size, int) and size >= 1) or not rotation_weight > 0 or not eps >= 0:
            raise SolverError(f"a pose table needs size >= 1, a positive rotation_weight and eps >= 0, got {size!r}, "
                              f"{rotation_weight!r}, {eps!r}")
        self.chain, self.selection, self.size, self.seed, self.eps = chain, selection, size, seed, eps
        self.scale = rotation_weight / math.sqrt(2.0)
        self._configurations, self._tree = self._build()

    def _keys(self, pos: np.ndarray, quat: np.ndarray) -> np.ndarray:
        """Search keys (B, 12) of poses (B, 3) [m], (B, 4) wxyz."""
        return np.concatenate((pos, self.scale * _rotation_matrices(quat)), axis=1)

    def _build(self) -> tuple[torch.Tensor, "cKDTree"]:
        """Draw the configurations (n, joints), reach their poses and index them; a table already built in this process
        for the same chain geometry, limits, held joints, size, seed and weight is reused; scipy.spatial (~0.14 s to
        import) is imported here rather than with the solvers."""
        from scipy.spatial import cKDTree

        from hik_sim.kinematics.flat_chain import flat_geometry as _flat_geometry

        chain = self.chain
        key = (hashlib.sha256(_flat_geometry(chain.geometry).tobytes()).hexdigest(), tuple(chain.robot.lower), tuple(chain.robot.upper),
               tuple(sorted(self.selection.fixed.items())), self.size, self.seed, self.scale)
        if key in _BUILT:
            _BUILT.move_to_end(key)
            return _BUILT[key]
        lower, upper = (np.asarray(v, dtype=np.float64) for v in (chain.robot.lower, chain.robot.upper))
        drawn = torch.from_numpy(table_rng(self.seed).uniform(lower, upper, size=(self.size, chain.dof)))
        configurations = self.selection.expand(self.selection.free(drawn))
        pose = chain.fk(configurations)
        _BUILT[key] = configurations, cKDTree(self._keys(pose.pos.numpy(), pose.quat.numpy()))
        while len(_BUILT) > _KEEP:
            _BUILT.popitem(last=False)
        return _BUILT[key]

    def _check_count(self, count: int) -> None:
        if not (isinstance(count, int) and 1 <= count <= self.size):
            raise SolverError(f"count must be an int in [1, {self.size}], got {count!r}")

    def nearest(self, pos: torch.Tensor, quat: torch.Tensor, count: int) -> torch.Tensor:
        """The ``count`` configurations whose poses are nearest each target, nearest first.

        Args:
            pos: (B, 3) target positions [m].
            quat: (B, 4) target unit quaternions wxyz.
            count: configurations a target (1 ≤ ``count`` ≤ the table's size).

        Returns:
            (B, count, n) float64 configurations inside the joint limits.
        """
        self._check_count(count)
        if pos.shape[0] == 0:
            return torch.zeros(0, count, self.chain.dof, dtype=torch.float64)
        _, index = self._tree.query(self._keys(pos.double().numpy(), quat.double().numpy()), k=count, eps=self.eps)
        index = torch.from_numpy(np.asarray(index, dtype=np.int64).reshape(pos.shape[0], count))
        return self._configurations[index]

    def nearest_one(self, pos: np.ndarray, quat: np.ndarray, count: int) -> np.ndarray:
        """:meth:`nearest` for one target, without torch (a control loop's path): ``pos`` (3,) [m], ``quat`` (4,) wxyz
        float64 → (count, n) float64 configurations, nearest first."""
        self._check_count(count)
        _, index = self._tree.query(self._keys(pos[None], quat[None])[0], k=count, eps=self.eps)
        return self._configurations.numpy()[np.atleast_1d(index)]
