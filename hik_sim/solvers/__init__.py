"""IK solvers: every solver answers ``solve(pos, quat, q_init=None) -> IKResult``.

One concept a module:

- :mod:`~hik_sim.solvers.base`: ``IKResult``, the ``IKSolver`` and ``SingleTargetSolver`` protocols, the input checks;
- :mod:`~hik_sim.solvers.neural`: ``NeuralIK``, a network alone (open or closed loop);
- :mod:`~hik_sim.solvers.lm_rules`: the LM's damping, close-start damping, stopping and stall rules (``LMRules``), read
  by every LM in the package; :mod:`~hik_sim.solvers.lm`: ``LMRefiner``, the batched LM;
- :mod:`~hik_sim.solvers.restarts`: ``MultistartIK``, ``TableSeededIK``, the restart loop and its random streams;
- :mod:`~hik_sim.solvers.answers`: a network's answers as seeds (head order, first good answer);
- :mod:`~hik_sim.solvers.hybrid`: ``HybridIK`` and its ``HybridPlan``;
- :mod:`~hik_sim.solvers.single_target`: ``SingleTargetLM``, one target per call on MuJoCo's C kinematics
  (:mod:`~hik_sim.kinematics.mujoco_chain`); :mod:`~hik_sim.solvers.single_target_ik`: ``SingleTargetIK`` and its
  ``SingleTargetPlan``; :mod:`~hik_sim.solvers._lm_numba`: the compiled LM;
- :mod:`~hik_sim.solvers.pose_table`: ``PoseTable``, random configurations and their poses searched by pose;
- :mod:`~hik_sim.solvers.dm_control`: ``DmControlIK``;
- :mod:`~hik_sim.solvers.registry`: ``make_solver(name, robot)``, the one map from a name to a solver.

The names in ``__all__`` are importable from here (``from hik_sim.solvers import make_solver, HybridIK``); each is
imported from its module on first use, so importing the package imports neither torch nor MuJoCo.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hik_sim.solvers.base import IKResult, IKSolver, SingleTargetSolver
    from hik_sim.solvers.dm_control import DmControlIK
    from hik_sim.solvers.hybrid import HybridIK, HybridPlan
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.lm_rules import LMRules
    from hik_sim.solvers.neural import NeuralIK
    from hik_sim.solvers.pose_table import PoseTable
    from hik_sim.solvers.registry import SOLVER_NAMES, make_solver, solver_names
    from hik_sim.solvers.restarts import MultistartIK, TableSeededIK
    from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan

_HOMES: dict[str, str] = {
    "IKResult": "base", "IKSolver": "base", "SingleTargetSolver": "base",
    "NeuralIK": "neural", "LMRefiner": "lm", "LMRules": "lm_rules",
    "MultistartIK": "restarts", "TableSeededIK": "restarts",
    "HybridIK": "hybrid", "HybridPlan": "hybrid",
    "SingleTargetIK": "single_target_ik", "SingleTargetPlan": "single_target_ik",
    "DmControlIK": "dm_control", "PoseTable": "pose_table",
    "make_solver": "registry", "solver_names": "registry", "SOLVER_NAMES": "registry",
}

__all__ = ["make_solver", "solver_names", "SOLVER_NAMES", "IKResult", "IKSolver", "SingleTargetSolver", "NeuralIK", "LMRefiner",
           "LMRules", "MultistartIK", "TableSeededIK", "HybridIK", "HybridPlan", "SingleTargetIK", "SingleTargetPlan", "DmControlIK",
           "PoseTable"]


def __getattr__(name: str) -> Any:
    """The public name ``name``, imported from its module on first use (then cached in the package)."""
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'hik_sim.solvers' has no attribute {name!r}")
    value = getattr(importlib.import_module(f"hik_sim.solvers.{home}"), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
