"""Open-loop accuracy of a network: its answers' position and rotation errors on an evaluation set, summarised.

Errors are the Euclidean position error and the geodesic rotation error, measured by float64 FK of the
network's answers. Success at (5 mm, 2°) is the hybrid-IK paper's criterion; (10 mm, 20°) is CycleIK's
coarser one. A metric's name carries its display unit (``pos_mean_mm``, ``rot_p95_deg``).

The trainer's validation (:mod:`hik_sim.learning.train`) and the evaluator's accuracy tables
(:mod:`hik_sim.evaluation.metrics`, which hands these names on) measure with the same functions.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.tolerances import LOOSE, SUCCESS

if TYPE_CHECKING:
    from hik_sim.kinematics.chain import Chain
    from hik_sim.learning.data import EvalSet
    from hik_sim.learning.network import IKNetwork

__all__ = ["SUCCESS_THRESHOLDS", "accuracy_metrics", "evaluate_network"]

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


@torch.no_grad()
def evaluate_network(network: IKNetwork, chain: Chain, eval_set: EvalSet, batch: int = 8192) -> dict[str, float]:
    """Accuracy of a network on an evaluation set (float64 FK of its float32 answers).

    Returns:
        :func:`accuracy_metrics` of the set.
    """
    errors_pos, errors_rot = [], []
    target = eval_set.batch
    for start in range(0, eval_set.size, batch):
        stop = start + batch
        q = network.solve(target.pos[start:stop], target.quat[start:stop]).double().cpu()
        pose = chain.fk(q)
        errors_pos.append(position_error(pose.pos, target.pos[start:stop]))
        errors_rot.append(rotation_error(pose.quat, target.quat[start:stop]))
    return accuracy_metrics(torch.cat(errors_pos), torch.cat(errors_rot))
