"""How much of each HarmoAtt-IK network is attention: parameters and multiply-adds a pose, per robot.

For the paper's network (CycleIK's generator with fusion blocks, ``trunk=cycleik``) and the shipped recipe's
feature-map network (``trunk=dense``), both four answers with the turn as input, and the default one-answer network:
the attention branches' and the weight-generation network's parameters and their share of the parameters and of the
forward multiply-adds (:func:`hik_sim.learning.describe.describe_network`, the numbers
``python -m hik_sim.train --describe`` prints).

Usage::

    python benchmarks/attention_share.py        # writes benchmarks/results/attention_share/attention_share.{json,md}
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from hik_sim.learning.describe import describe_network
from hik_sim.robots import get_robot, robot_names

OUT = Path(__file__).resolve().parent / "results" / "attention_share"
TURN = {"hypotheses": 4, "canonical_turn": True, "clamp_in_training": True, "turn_input": True}
NETWORKS = {
    "paper (trunk=cycleik), 4 answers": {"trunk": "cycleik", **TURN},
    "shipped recipe (trunk=dense), 4 answers": {"trunk": "dense", "channels": 16, "positions": 8, "feed_forward": 256,
                                                "embed_hidden": 64, **TURN},
    "default (trunk=dense), 1 answer": {},
}


def main() -> int:
    rows = []
    for robot in robot_names():
        joints = len(get_robot(robot).joint_names)
        for name, options in NETWORKS.items():
            rows.append({"robot": robot, "network": name, **describe_network("harmoatt", joints, options)})
    lines = ["# Attention's share of HarmoAtt-IK", "", "Command: `python benchmarks/attention_share.py`.", "",
             "| robot | network | parameters | attention branches | weight generation | share of parameters | share of multiply-adds |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for r in rows:
        lines.append(f"| {r['robot']} | {r['network']} | {r['parameters']:,} | {r['attention_branch_parameters']:,} | "
                     f"{r['weight_generation_parameters']:,} | {100 * r['attention_parameter_share']:.1f} % | "
                     f"{100 * r['attention_mac_share']:.1f} % |")
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "attention_share.json").write_text(json.dumps({"command": "python benchmarks/attention_share.py", "rows": rows}, indent=1))
    (OUT / "attention_share.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
