"""The solvers' names under one import, ``hik_sim.solvers.ik``, for user code that reaches them here; nothing is defined here.

Every name lives in one of :mod:`~hik_sim.solvers.base`, :mod:`~hik_sim.solvers.neural`, :mod:`~hik_sim.solvers.lm`,
:mod:`~hik_sim.solvers.restarts`, :mod:`~hik_sim.solvers.answers`, :mod:`~hik_sim.solvers.hybrid`,
:mod:`~hik_sim.solvers.single_target_ik` and :mod:`~hik_sim.solvers.dm_control`; tolerances in
:mod:`~hik_sim.kinematics.tolerances` and the LM rules in :mod:`~hik_sim.solvers.lm_rules`. The package's own code
imports each name from its module; new code should too, or take the public names from :mod:`hik_sim.solvers`.
"""

from __future__ import annotations

from hik_sim.kinematics.tolerances import REPORT_TOLERANCES, Tolerance
from hik_sim.solvers.answers import HEAD_ORDER_SAMPLES, _facing, _first_good, first_good_answers, head_order
from hik_sim.solvers.base import (
    _PER_TARGET,
    IKResult,
    IKSolver,
    SingleTargetSolver,
    _check_q_init,
    _merge,
    _result,
    _scatter,
    check_network_fits,
    check_targets,
    rotation_residual,
)
from hik_sim.solvers.dm_control import DmControlIK
from hik_sim.solvers.hybrid import HybridIK
from hik_sim.solvers.lm import LMRefiner, LMRun
from hik_sim.solvers.neural import (
    CLOSED_LOOP_BRANCHES,
    CLOSED_LOOP_CORRECTIONS,
    CLOSED_LOOP_FIRST_JOINT_TURNS,
    CLOSED_LOOP_NEAREST_FIRST,
    _OUTSIDE,
    NeuralIK,
    _Landed,
)
from hik_sim.solvers.restarts import (
    DISTINCT_SEEDS,
    RESTARTS,
    RESTART_STREAM,
    TABLE_SEEDS,
    _GOLDEN,
    MultistartIK,
    TableSeededIK,
    TargetStreams,
    _Added,
    _Choice,
    _random_configurations,
    _restarts,
    _splitmix64,
    restart_rng,
)
from hik_sim.solvers.single_target_ik import SINGLE_TARGET_RESTARTS, SingleTargetIK, _one_target_fast
from hik_sim.solvers.hybrid import HybridPlan
from hik_sim.solvers.lm_rules import CLOSE_DAMPING, STALL_ITERATIONS, STALL_PROGRESS, LMRules
from hik_sim.solvers.single_target_ik import SingleTargetPlan

__all__ = [
    "REPORT_TOLERANCES",
    "Tolerance",
    "HEAD_ORDER_SAMPLES",
    "_facing",
    "_first_good",
    "first_good_answers",
    "head_order",
    "_PER_TARGET",
    "IKResult",
    "IKSolver",
    "SingleTargetSolver",
    "_check_q_init",
    "_merge",
    "_result",
    "_scatter",
    "check_network_fits",
    "check_targets",
    "rotation_residual",
    "DmControlIK",
    "HybridIK",
    "LMRefiner",
    "LMRun",
    "CLOSED_LOOP_BRANCHES",
    "CLOSED_LOOP_CORRECTIONS",
    "CLOSED_LOOP_FIRST_JOINT_TURNS",
    "CLOSED_LOOP_NEAREST_FIRST",
    "_OUTSIDE",
    "NeuralIK",
    "_Landed",
    "DISTINCT_SEEDS",
    "RESTARTS",
    "RESTART_STREAM",
    "TABLE_SEEDS",
    "_GOLDEN",
    "MultistartIK",
    "TableSeededIK",
    "TargetStreams",
    "_Added",
    "_Choice",
    "_random_configurations",
    "_restarts",
    "_splitmix64",
    "restart_rng",
    "SINGLE_TARGET_RESTARTS",
    "SingleTargetIK",
    "_one_target_fast",
    "HybridPlan",
    "CLOSE_DAMPING",
    "STALL_ITERATIONS",
    "STALL_PROGRESS",
    "LMRules",
    "SingleTargetPlan",
]
