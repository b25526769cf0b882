"""Which networks the ``closed_loop`` policy asks, chosen on validation episodes.

The ``closed_loop`` policy is a network alone, closed on its own error (``NeuralIK`` with goal-shift corrections,
the answer nearest the last target first). Where all of one network's answers miss, another network's may not, so
the policy may ask a second one. This script compares, per robot, on *validation* episodes (Reach and Track seeds
from ``--first-seed``, 1000 by default; the test episodes that docs/results.md reports are seeds 0-199 and 0-9):

- ``four``: the four-answer HarmoAtt-IK (``harmoatt_4answers``; on the IRB120 with its map network, its hybrid
  fallback) alone;
- ``four+harmoatt``: with the one-answer HarmoAtt-IK of the equal-time comparison (~653 k weights, 2.6 MB; a
  checkout's ``benchmarks/checkpoints``);
- ``four+mlp_seed``: with the small ``mlp_seed`` MLP (~35 k weights, 0.14 MB; shipped).

Each variant is built as ``make_solver("closed_loop", ...)`` builds the policy (the same corrections, answer order
and turned queries), inside the controller ``IKController.pretrained`` gives. Reported per robot and variant: Reach
success (5 mm & 2° held), Track figure-eight (0.1 m/s) position RMS and max [mm].

Usage::

    python benchmarks/closed_loop_networks.py                        # every robot, 100 Reach and 10 Track episodes
    python benchmarks/closed_loop_networks.py --robots panda --reach-episodes 5 --track-episodes 1 --out /tmp/cl
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path

import gymnasium as gym  # noqa: E402
import torch  # noqa: E402

import harness  # noqa: E402
import hik_sim.envs  # noqa: E402,F401  (registration)
from hik_sim.evaluation.metrics import reach_metrics, track_metrics  # noqa: E402
from hik_sim.evaluation.rollout import rollout  # noqa: E402
from hik_sim.kinematics.chain import Chain  # noqa: E402
from hik_sim.kinematics.symmetry import FirstJointSymmetry  # noqa: E402
from hik_sim.policies import IKController, hybrid_fallback_name, load_pretrained  # noqa: E402
from hik_sim.robots import get_robot  # noqa: E402
from hik_sim.sim.options import SceneOptions  # noqa: E402
from hik_sim.solvers.neural import (CLOSED_LOOP_BRANCHES, CLOSED_LOOP_CORRECTIONS, CLOSED_LOOP_FIRST_JOINT_TURNS,  # noqa: E402
                                    CLOSED_LOOP_NEAREST_FIRST, NeuralIK)

SECOND_NETWORKS: dict[str, str | None] = {"four": None, "four+harmoatt": "harmoatt", "four+mlp_seed": "mlp_seed"}
"""Each variant's second network (besides the four-answer one and, on the IRB120, its map network)."""


def controller(robot: str, second: str | None) -> IKController:
    """The closed-loop controller on ``harmoatt_4answers``, the robot's hybrid fallback network and ``second``."""
    chain = Chain(get_robot(robot))
    main = load_pretrained(robot, "harmoatt_4answers")
    names = [n for n in (hybrid_fallback_name(robot), second) if n is not None]
    extra = tuple(load_pretrained(robot, name) for name in names)
    turned_helps = not all(getattr(n, "canonical_turn", False) for n in (main, *extra))
    turns = FirstJointSymmetry(chain).default_turns if CLOSED_LOOP_FIRST_JOINT_TURNS and turned_helps else ()
    solver = NeuralIK(main, chain, corrections=CLOSED_LOOP_CORRECTIONS, branches=CLOSED_LOOP_BRANCHES,
                      nearest_first=CLOSED_LOOP_NEAREST_FIRST, extra_networks=extra, first_joint_turns=turns)
    return IKController(solver, lead_time=SceneOptions().servo_lag)


def measure(robot: str, second: str | None, reach_episodes: int, track_episodes: int, first_seed: int) -> dict[str, Any]:
    """Reach success and Track errors of one variant on the validation episodes."""
    env = gym.make(f"hik_sim/Reach-{robot}-v0")
    reach = reach_metrics([rollout(env, controller(robot, second), seed=first_seed + i) for i in range(reach_episodes)])
    env.close()
    env = gym.make(f"hik_sim/Track-{robot}-v0", trajectory="figure_eight", speed=0.1)
    track = track_metrics([rollout(env, controller(robot, second), seed=first_seed + i) for i in range(track_episodes)])
    env.close()
    return {"reach_success_5mm_2deg": reach["success_5mm_2deg"], "track_pos_rms_mm": track["pos_rms_mm"],
            "track_pos_max_mm": track["pos_max_mm"], "track_rot_rms_deg": track["rot_rms_deg"]}


def markdown(rows: list[dict[str, Any]]) -> str:
    """One row per robot and variant."""
    return harness.markdown_table(
        ["robot", "networks", "Reach: held within 5 mm & 2°", "Track: RMS / max [mm]", "Track: rotation RMS [°]"],
        [(r["robot"], r["variant"], f"{100 * r['reach_success_5mm_2deg']:.1f} %", f"{r['track_pos_rms_mm']:.2f} / {r['track_pos_max_mm']:.1f}",
          f"{r['track_rot_rms_deg']:.2f}") for r in rows], "llrrr") + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0], out="benchmarks/results/closed_loop_networks")
    harness.add_robots(parser, None)
    parser.add_argument("--reach-episodes", type=harness.at_least(1), default=100, help="Reach episodes a variant (default 100)")
    parser.add_argument("--track-episodes", type=harness.at_least(1), default=10, help="Track episodes a variant (default 10)")
    parser.add_argument("--first-seed", type=harness.at_least(0), default=1000, help="the first episode's seed (default 1000: validation)")
    args = parser.parse_args(argv)
    torch.set_num_threads(1)
    rows = []
    for robot in args.robots:
        for variant, second in SECOND_NETWORKS.items():
            rows.append({"robot": robot, "variant": variant, **measure(robot, second, args.reach_episodes, args.track_episodes, args.first_seed)})
            print(markdown(rows[-1:]).splitlines()[-1], flush=True)
    info = harness.provenance(__file__, argv, reach_episodes=args.reach_episodes, track_episodes=args.track_episodes,
                              first_seed=args.first_seed)
    harness.write_record(args.out, "closed_loop_networks", {"rows": rows}, markdown(rows), info,
                         title="The closed-loop policy's networks, on validation episodes")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
