"""Metrics, defined once: open-loop IK accuracy, Reach and Track episodes.

Errors are the Euclidean position error and the geodesic rotation error. Success at (5 mm, 2°) is
the hybrid-IK paper's criterion; (10 mm, 20°) is CycleIK's coarser one. Values are SI inside; a
metric's name carries its display unit (``pos_mean_mm``, ``rot_rms_deg``, ``time_to_reach_s``,
``ik_latency_median_ms``).

- :func:`accuracy_metrics`: per-target errors → ``pos_mean_mm`` … ``success_10mm_20deg``;
  :func:`evaluate_network`: a network's :func:`accuracy_metrics` on an evaluation set (both defined in
  :mod:`hik_sim.learning.accuracy`, where the trainer's validation measures with them too).
- :func:`reach_metrics`, :func:`track_metrics`: :class:`~hik_sim.evaluation.rollout.Episode` records
  → the Reach and Track tables of the evaluator and ``benchmarks/env_bench.py``.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Any, Mapping, Sequence

import numpy as np

from hik_sim.errors import HikError
from hik_sim.kinematics.tolerances import LOOSE
from hik_sim.learning.accuracy import SUCCESS_THRESHOLDS, accuracy_metrics, evaluate_network

if TYPE_CHECKING:
    from hik_sim.evaluation.rollout import Episode

__all__ = ["SUCCESS_THRESHOLDS", "TRACK_SETTLE", "accuracy_metrics", "evaluate_network", "limit_violations_text", "reach_metrics", "track_metrics"]

TRACK_SETTLE = 1.0
"""[s]: Track errors count after this time, once the end-effector has caught up with the moving goal."""


def _control_metrics(episodes: Sequence[Episode]) -> dict[str, float]:
    """What every closed-loop table reports: IK latency per control step, and per solve (the steps at which
    the controller did not answer a repeated query from its last result), limit violations (steps, and
    the largest excess [rad]), solver failures."""
    latency_ms = 1000 * np.concatenate([e.ik_time for e in episodes])
    repeated = np.concatenate([e.ik_repeated if len(e.ik_repeated) == len(e.ik_time) else np.zeros(len(e.ik_time), dtype=bool)
                               for e in episodes])
    solves_ms = latency_ms[~repeated] if (~repeated).any() else latency_ms
    return {
        "ik_latency_median_ms": float(np.median(latency_ms)),
        "ik_latency_p95_ms": float(np.percentile(latency_ms, 95)),
        "ik_solve_median_ms": float(np.median(solves_ms)),
        "ik_solve_p95_ms": float(np.percentile(solves_ms, 95)),
        "ik_repeated_share": float(repeated.mean()),
        "joint_limit_violations": sum(e.joint_limit_violations for e in episodes),
        "joint_limit_excess_max_rad": max(e.limit_excess for e in episodes),
        "solver_failures": sum(e.solver_failures for e in episodes),
    }


def limit_violations_text(row: Mapping[str, Any]) -> str:
    """A table cell for a closed-loop row's limit violations: control steps that ended outside a
    limit, and the largest excess [mrad] (``"3; 1.2"``; 0 where a row predates the excess)."""
    return f"{row['joint_limit_violations']}; {1000 * float(row.get('joint_limit_excess_max_rad', 0.0)):.1f}"


def _check(episodes: Sequence[Episode]) -> None:
    if not episodes or not all(e.steps for e in episodes):
        raise HikError("metrics need at least one episode, and at least one control step in each")


def reach_metrics(episodes: Sequence[Episode]) -> dict[str, float | int | None]:
    """The Reach table's row.

    Returns:
        ``episodes``; ``success_5mm_2deg`` (the episode ended with the goal held, Reach's success, in
        [0, 1]); ``success_10mm_20deg`` (the last errors within 10 mm & 20°); ``time_to_reach_s`` (mean
        over the successful episodes, None if none); ``final_pos_mean_mm``, ``final_rot_mean_deg``;
        ``ik_latency_median_ms``, ``ik_latency_p95_ms``; ``joint_limit_violations`` and
        ``solver_failures`` (totals over the episodes); ``joint_limit_excess_max_rad`` (the farthest
        a joint was outside its limits, over the episodes).

    Raises:
        HikError: no episodes, or an episode without a step.
    """
    _check(episodes)
    reached = [e.time_to_reach for e in episodes if e.time_to_reach is not None]
    final_pos = np.array([e.pos_err[-1] for e in episodes])
    final_rot = np.array([e.rot_err[-1] for e in episodes])
    return {
        "episodes": len(episodes),
        "success_5mm_2deg": len(reached) / len(episodes),
        "success_10mm_20deg": float(np.mean(LOOSE.met(final_pos, final_rot))),
        "time_to_reach_s": statistics.fmean(reached) if reached else None,
        "final_pos_mean_mm": float(1000 * final_pos.mean()),
        "final_rot_mean_deg": float(np.degrees(final_rot.mean())),
        **_control_metrics(episodes),
    }


def track_metrics(episodes: Sequence[Episode], settle: float = TRACK_SETTLE) -> dict[str, float | int | None]:
    """The Track table's row: errors after ``settle`` [s].

    Returns:
        ``episodes``; ``pos_rms_mm``, ``pos_p95_mm``, ``pos_max_mm``, ``rot_rms_deg`` over every step
        after ``settle`` of every episode (the goal's pose against the end-effector's, whether or not it
        moved: Track's goal keeps the start's orientation, so an arm that never moves shows 0° here);
        ``episodes_never_moved`` (episodes whose joints stayed within
        :data:`~hik_sim.evaluation.rollout.STILL` of the reset) and ``joint_travel_max_rad`` (the farthest
        a joint got from its reset position); ``ik_latency_median_ms``, ``ik_latency_p95_ms``;
        ``joint_limit_violations`` and ``solver_failures`` (totals); ``joint_limit_excess_max_rad``.

    Raises:
        HikError: no episodes, an episode without a step, or none longer than ``settle``.
    """
    _check(episodes)
    pos_mm = 1000 * np.concatenate([e.pos_err[e.time > settle] for e in episodes])
    rot_deg = np.degrees(np.concatenate([e.rot_err[e.time > settle] for e in episodes]))
    if not len(pos_mm):
        raise HikError(f"no episode lasted longer than the {settle} s that Track errors are counted after")
    travels = [float(e.joint_travel) for e in episodes if np.isfinite(e.joint_travel)]
    return {
        "episodes": len(episodes),
        "pos_rms_mm": float(np.sqrt(np.mean(pos_mm**2))),
        "pos_p95_mm": float(np.percentile(pos_mm, 95)),
        "pos_max_mm": float(pos_mm.max()),
        "rot_rms_deg": float(np.sqrt(np.mean(rot_deg**2))),
        "episodes_never_moved": sum(not e.moved for e in episodes),
        "joint_travel_max_rad": max(travels) if travels else None,
        **_control_metrics(episodes),
    }
