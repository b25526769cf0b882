"""Where a shipped IK network's mean error comes from: its tail, and the tail's places.

On the fixed test targets of the ablation (seed 2024, ``--targets``, default 10,000), for each
shipped network named: mean / median / p90 position error [mm], mean / median rotation error [°],
success at 5 mm & 2°, the share of the position mean made by the worst 10 % of targets, and the
places where IK solution branches meet and a continuous network must jump: answers with the first
joint within 0.01 rad of a limit (share of answers, their mean position error, their share of the
position mean), targets within 10 cm of the base's z axis (share, mean position error) and, for a
revolute first joint, targets whose azimuth about its axis lies beyond its range (share, mean position
error, success): an arm that faces azimuth 0 at first joint 0 (the IRB120, the Panda) reaches those
mostly bent back over its base (:func:`hik_sim.kinematics.symmetry.range_turn`), and these are split by
the configuration that made each target: bent back (its first joint within π/2 of the range turn) or
facing it (the tool reaching across the limit). For a network with several answers, how often each
answer is the one chosen.

Output: a Markdown table on stdout and in ``<out>/tail_<robot>.md``, raw numbers in ``tail_<robot>.json``.

Usage::

    python benchmarks/network_tail.py --robot irb120 --networks harmoatt harmoatt_4answers
    python benchmarks/network_tail.py --robot irb120 --networks harmoatt_4answers runs/a.best.pt   # a checkpoint too
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.data import make_eval_set
from hik_sim.evaluation.experiments import TEST_SEED
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.checkpoint import load_checkpoint
from hik_sim.policies import load_pretrained
from hik_sim.robots import get_robot
from hik_sim.kinematics.rotations import position_error, rotation_error
from hik_sim.kinematics.symmetry import FirstJointSymmetry, range_turn


def tail_row(robot_name: str, network_name: str, targets: int) -> dict[str, object]:
    """The tail figures of one shipped network (see the module docstring)."""
    chain = Chain(get_robot(robot_name))
    network = (load_checkpoint(network_name, get_robot(robot_name))[0] if network_name.endswith((".pt", ".safetensors"))
               else load_pretrained(robot_name, network_name))
    batch = make_eval_set(chain, TEST_SEED, targets).batch
    answers = network.solve_all(batch.pos, batch.quat).double()  # (B, H, n), the chosen one first
    q = answers[:, 0]
    pose = chain.fk(q)
    pos_mm = position_error(pose.pos, batch.pos) * 1000
    rot_deg = torch.rad2deg(rotation_error(pose.quat, batch.quat))
    lower, upper = chain.limits(torch.float64)
    at_limit = ((q[:, 0] - lower[0]).abs() < 0.01) | ((upper[0] - q[:, 0]).abs() < 0.01)
    near_axis = batch.pos[:, :2].norm(dim=1) < 0.1
    worst = pos_mm.sort(descending=True).values[: max(1, targets // 10)]
    row: dict[str, object] = {
        "robot": robot_name, "network": network_name, "answers": network.hypotheses, "targets": targets,
        "pos_mean_mm": float(pos_mm.mean()), "pos_median_mm": float(pos_mm.median()),
        "pos_p90_mm": float(pos_mm.quantile(0.9)), "rot_mean_deg": float(rot_deg.mean()),
        "rot_median_deg": float(rot_deg.median()),
        "success_5mm_2deg": float(((pos_mm < 5) & (rot_deg < 2)).double().mean()),
        "worst10_share_of_pos_mean": float(worst.sum() / pos_mm.sum()),
        "joint1_at_limit_share": float(at_limit.double().mean()),
        "joint1_at_limit_pos_mean_mm": float(pos_mm[at_limit].mean()) if at_limit.any() else 0.0,
        "joint1_at_limit_share_of_pos_mean": float(pos_mm[at_limit].sum() / pos_mm.sum()),
        "near_axis_share": float(near_axis.double().mean()),
        "near_axis_pos_mean_mm": float(pos_mm[near_axis].mean()) if near_axis.any() else 0.0,
    }
    symmetry = FirstJointSymmetry(chain)
    if symmetry.revolute:
        azimuth = symmetry.azimuth(batch.pos)
        turn = range_turn(azimuth, float(lower[0]), float(upper[0]))
        beyond = turn != azimuth
        made = torch.remainder(batch.q[:, 0] - turn + math.pi, 2 * math.pi) - math.pi  # the target's own first joint, turned
        solved = (pos_mm < 5) & (rot_deg < 2)
        for name, part in (("range", beyond), ("bent_back", beyond & (made.abs() < math.pi / 2)),
                           ("facing", beyond & (made.abs() >= math.pi / 2))):
            row[f"beyond_{name}_share"] = float(part.double().mean())
            row[f"beyond_{name}_pos_mean_mm"] = float(pos_mm[part].mean()) if part.any() else 0.0
            row[f"beyond_{name}_success"] = float(solved[part].double().mean()) if part.any() else 0.0
    if network.hypotheses > 1:  # which of the raw answers the choice took
        pos, quat = batch.pos.float(), batch.quat.float()
        raw = network(pos, quat, choose=False).candidates.detach()
        chosen = network.rank(raw, pos, quat)[:, 0]
        row["chosen_counts"] = torch.bincount(chosen, minlength=network.hypotheses).tolist()
    return row


BEYOND = ("beyond_range", "beyond_bent_back", "beyond_facing")


def markdown(rows: list[dict[str, object]]) -> str:
    """The table."""
    header = ["robot", "network", "answers", "pos mean / median / p90 [mm]", "rot mean / median [°]", "success 5 mm & 2°",
              "worst 10 % share of pos mean", "joint 1 at a limit: answers / their pos mean / share of pos mean",
              "targets < 10 cm from the base axis: share / pos mean", "targets beyond joint 1's range: share / pos mean / success",
              "of them made bent back: share / pos mean / success", "made facing: share / pos mean / success"]
    cells = []
    for r in rows:
        beyond = ([f"{100 * r[f'{k}_share']:.1f} % / {r[f'{k}_pos_mean_mm']:.1f} mm / {100 * r[f'{k}_success']:.1f} %" for k in BEYOND]
                  if "beyond_range_share" in r else ["—"] * len(BEYOND))
        cells.append([r["robot"], r["network"], r["answers"], f"{r['pos_mean_mm']:.2f} / {r['pos_median_mm']:.2f} / {r['pos_p90_mm']:.2f}",
                      f"{r['rot_mean_deg']:.2f} / {r['rot_median_deg']:.2f}", f"{100 * r['success_5mm_2deg']:.1f} %",
                      f"{100 * r['worst10_share_of_pos_mean']:.0f} %",
                      f"{100 * r['joint1_at_limit_share']:.1f} % / {r['joint1_at_limit_pos_mean_mm']:.1f} mm / "
                      f"{100 * r['joint1_at_limit_share_of_pos_mean']:.0f} %",
                      f"{100 * r['near_axis_share']:.1f} % / {r['near_axis_pos_mean_mm']:.1f} mm", *beyond])
    return harness.markdown_table(header, cells, "llrllrrlllll") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robot(parser, "irb120")
    parser.add_argument("--networks", nargs="+", default=["harmoatt"], help="shipped networks or checkpoint paths (default harmoatt)")
    parser.add_argument("--targets", type=harness.at_least(10), default=10_000, help="test targets (default 10000)")
    args = parser.parse_args(argv)
    rows = [tail_row(args.robot, name, args.targets) for name in args.networks]
    table = markdown(rows)
    print(table)
    harness.write_record(args.out, f"tail_{args.robot}", {"rows": rows}, table, harness.provenance(__file__, argv))
    return 0

if __name__ == "__main__":
    raise SystemExit(main())
