"""How much of each HarmoAtt-IK network is attention: parameters and multiply-adds a pose, per robot.

For the paper's network (CycleIK's generator with fusion blocks, ``trunk=cycleik``) and the shipped recipe's
feature-map network (``trunk=dense``), both four answers with the turn as input, and the one-answer ``dense`` network at
its default size (the equal-time comparison's):
the attention branches' and the weight-generation network's parameters and their share of the parameters and of the
forward multiply-adds (:func:`hik_sim.learning.describe.describe_network`, the numbers
``python -m hik_sim.train --describe`` prints).

Usage::

    python benchmarks/attention_share.py        # writes benchmarks/results/attention_share/attention_share.{json,md}
    python benchmarks/attention_share.py --out /tmp/share
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
from hik_sim.learning.describe import describe_network
from hik_sim.robots import get_robot, robot_names

TURN = {"hypotheses": 4, "canonical_turn": True, "clamp_in_training": True, "turn_input": True}
NETWORKS = {
    "paper (trunk=cycleik), 4 answers": {"trunk": "cycleik", **TURN},
    "shipped recipe (trunk=dense), 4 answers": {"trunk": "dense", "channels": 16, "positions": 8, "feed_forward": 256,
                                                "embed_hidden": 64, **TURN},
    "default size (trunk=dense), 1 answer": {"trunk": "dense"},
}


def markdown(rows: list[dict[str, Any]]) -> str:
    """The table."""
    header = ["robot", "network", "parameters", "attention branches", "weight generation", "share of parameters",
              "share of multiply-adds"]
    cells = [[r["robot"], r["network"], f"{r['parameters']:,}", f"{r['attention_branch_parameters']:,}",
              f"{r['weight_generation_parameters']:,}", f"{100 * r['attention_parameter_share']:.1f} %",
              f"{100 * r['attention_mac_share']:.1f} %"] for r in rows]
    return harness.markdown_table(header, cells, "llrrrrr") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out=f"{harness.RESULTS}/attention_share")
    args = parser.parse_args(argv)
    rows = []
    for robot in robot_names():
        joints = len(get_robot(robot).joint_names)
        for name, options in NETWORKS.items():
            rows.append({"robot": robot, "network": name, **describe_network("harmoatt", joints, options)})
    table = markdown(rows)
    print(table)
    harness.write_record(args.out, "attention_share", {"rows": rows}, table, harness.provenance(__file__, argv),
                         title="Attention's share of HarmoAtt-IK")
    return 0

if __name__ == "__main__":
    sys.exit(main())
