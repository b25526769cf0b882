"""IK accuracy metrics, defined once: Euclidean position error and geodesic rotation error.

Success at (5 mm, 2°) is the hybrid-IK paper's criterion; (10 mm, 20°) is CycleIK's coarser one.
"""

from __future__ import annotations

import torch

from hik_sim.kinematics.tolerances import LOOSE, SUCCESS

__all__ = ["SUCCESS_THRESHOLDS", "accuracy_metrics"]

# (name, position tolerance [m], rotation tolerance [rad]): hik_sim.kinematics.tolerances' SUCCESS and LOOSE
SUCCESS_THRESHOLDS: tuple[tuple[str, float, float], ...] = (
    ("success_5mm_2deg", SUCCESS.position, SUCCESS.rotation),
    ("success_10mm_20deg", LOOSE.position, LOOSE.rotation),
)


def accuracy_metrics(pos_err: torch.Tensor, rot_err: torch.Tensor) -> dict[str, float]:
    """Summary of per-target errors.

    Args:
        pos_err: (B,) position errors [m].
        rot_err: (B,) rotation errors [rad].

    Returns:
        ``pos_mean_mm``, ``pos_median_mm``, ``pos_p95_mm``, ``rot_mean_deg``, ``rot_median_deg``,
        ``rot_p95_deg`` and a success rate in [0, 1] per entry of :data:`SUCCESS_THRESHOLDS`.
    """
    pos_mm = pos_err.detach().double().cpu() * 1000
    rot_deg = torch.rad2deg(rot_err.detach().double().cpu())
    out = {}
    for name, values in (("pos", pos_mm), ("rot", rot_deg)):
        unit = "mm" if name == "pos" else "deg"
        out[f"{name}_mean_{unit}"] = float(values.mean())
        out[f"{name}_median_{unit}"] = float(values.median())
        out[f"{name}_p95_{unit}"] = float(torch.quantile(values, 0.95))
    for name, pos_tol, rot_tol in SUCCESS_THRESHOLDS:
        out[name] = float(((pos_err.detach().cpu() < pos_tol) & (rot_err.detach().cpu() < rot_tol)).double().mean())
    return out
