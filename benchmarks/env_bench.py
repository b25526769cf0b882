"""Closed-loop reaching and tracking with IK controllers in the hik_sim environments.

Reach: ``--episodes`` episodes (default 200) of ``hik_sim/Reach-<robot>-v0``, each a new reachable
goal from home; success = the errors stay within 5 mm and 2° for 5 steps before the 5 s limit.
Reported: success rate, mean time to reach [s], IK latency per control step (median, p95) [ms] and per
solve (the same without the steps at which a network policy answered a repeated query from its last
result: the same goal from the same last target; ``IKController``),
solver failures per episode, joint-limit violations (control steps ending outside a limit; the largest excess [mrad]) (the JSON: :func:`hik_sim.evaluation.metrics.reach_metrics`, totals).

Track: ``--track-episodes`` episodes (default 10) of ``hik_sim/Track-<robot>-v0`` with a
figure-eight (and the other trajectories with ``--all-trajectories``) at ``--speed`` (0.1 m/s);
position error RMS / p95 / max [mm] after the first second, rotation RMS [°], IK latency per control step
(:func:`hik_sim.evaluation.metrics.track_metrics`). Episodes run through
:func:`hik_sim.evaluation.rollout.rollout`, as in the evaluator.

Controllers: ``hybrid`` (shipped HarmoAtt-IK seed + LM, warm-started from the controller's last command) by
default; add ``lm``, ``closed_loop``, ``dm_control``, a shipped network's name (``harmoatt_4answers``), … with
``--controllers``, and parts of the ``closed_loop`` policy, to measure what each part buys: ``closed_loop_best_answer``
(its four-answer network alone, following the best answer at every step) and
``closed_loop_four_answers`` (that network alone, the answer nearest the last target first; the
policy adds its further networks' answers to these: ``closed_loop_extra_names``) and ``closed_loop_unturned``
(the policy with all its networks, without the queries turned about the first joint).
Output: a Markdown table on stdout and in ``<out>/env_<robot>.md`` under the run's provenance line, raw numbers in
``env_<robot>.json`` (the provenance block first).

Usage::

    python benchmarks/env_bench.py --robot irb120
    python benchmarks/env_bench.py --robot irb120 --controllers hybrid lm dm_control --episodes 50
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path

import gymnasium as gym  # noqa: E402
from tqdm.auto import tqdm  # noqa: E402

import harness  # noqa: E402
import hik_sim.envs  # noqa: E402,F401  (registration)
from hik_sim.evaluation.metrics import limit_violations_text, reach_metrics, track_metrics  # noqa: E402
from hik_sim.evaluation.rollout import rollout  # noqa: E402
from hik_sim.envs.trajectories import TRAJECTORIES  # noqa: E402
from hik_sim.policies import closed_loop_network_name, load_pretrained  # noqa: E402
from hik_sim.policies.controller import CONTROLLER_KINDS, IKController  # noqa: E402
from hik_sim.sim import SceneOptions  # noqa: E402
from hik_sim.robots import get_robot  # noqa: E402
from hik_sim.solvers.registry import make_solver, solver_names  # noqa: E402

BEST_ANSWER, FOUR_ANSWERS, UNTURNED = "closed_loop_best_answer", "closed_loop_four_answers", "closed_loop_unturned"
VARIANTS = (BEST_ANSWER, FOUR_ANSWERS, UNTURNED)
"""The ``closed_loop`` policy as it was: on its four-answer network alone, following the best answer
or the answer nearest its last target first (without the ensemble), and with the ensemble but without the
turned queries."""


def make_controller(robot: str, kind: str) -> IKController:
    """The controller of one of :data:`CONTROLLER_KINDS` or :data:`VARIANTS` for a registered robot."""
    if kind in VARIANTS:
        if kind == UNTURNED:
            solver = make_solver("closed_loop", robot)
        else:
            network = load_pretrained(robot, closed_loop_network_name(robot))
            solver = make_solver("closed_loop", robot, network=network)  # a given network: that network alone
            solver.nearest_first = kind == FOUR_ANSWERS
        solver.first_joint_turns = ()
        return IKController(solver, lead_time=SceneOptions().servo_lag)  # the lead IKController.pretrained gives
    return IKController.pretrained(robot, kind)


def reach(robot: str, kind: str, episodes: int, progress: bool) -> dict[str, object]:
    """Reach episodes with one controller: :func:`hik_sim.evaluation.metrics.reach_metrics`."""
    env = gym.make(f"hik_sim/Reach-{robot}-v0")
    controller = make_controller(robot, kind)
    runs = [rollout(env, controller, seed=episode) for episode in tqdm(range(episodes), desc=f"reach {kind}", disable=not progress, file=sys.stderr)]
    env.close()
    return {"controller": kind, **reach_metrics(runs)}


def track(robot: str, kind: str, trajectory: str, episodes: int, speed: float, progress: bool) -> dict[str, object]:
    """Track episodes with one controller and trajectory: :func:`hik_sim.evaluation.metrics.track_metrics` (errors after the first second)."""
    env = gym.make(f"hik_sim/Track-{robot}-v0", trajectory=trajectory, speed=speed)
    controller = make_controller(robot, kind)
    runs = [rollout(env, controller, seed=episode)
            for episode in tqdm(range(episodes), desc=f"track {trajectory} {kind}", disable=not progress, file=sys.stderr)]
    env.close()
    return {"controller": kind, "trajectory": trajectory, "speed_m_s": speed,
            "mean_size_m": statistics.fmean(run.reset_info["size"] for run in runs), **track_metrics(runs)}


def markdown(robot: str, reach_rows: list[dict[str, object]], track_rows: list[dict[str, object]]) -> str:
    """Both tables."""
    reach_table = harness.markdown_table(
        ["robot", "controller", "Reach episodes", "success (5 mm & 2° held)", "time to reach [s]", "IK latency median / p95 [ms]",
         "per solve median / p95 [ms]", "solver failures / episode", "limit violations (steps; largest [mrad])"],
        [(robot, r["controller"], r["episodes"], f"{100 * r['success_5mm_2deg']:.1f} %",
          "—" if r["time_to_reach_s"] is None else f"{r['time_to_reach_s']:.2f}",  # —: none reached
          f"{r['ik_latency_median_ms']:.2f} / {r['ik_latency_p95_ms']:.2f}", f"{r['ik_solve_median_ms']:.2f} / {r['ik_solve_p95_ms']:.2f}",
          f"{r['solver_failures'] / r['episodes']:.2f}", limit_violations_text(r)) for r in reach_rows], "llrrrllrr")
    track_table = harness.markdown_table(
        ["robot", "controller", "trajectory", "speed [m/s]", "size [m]", "position RMS / p95 / max [mm]", "rotation RMS [°]",
         "IK latency median / p95 [ms]", "limit violations (steps; largest [mrad])"],
        [(robot, r["controller"], r["trajectory"], f"{r['speed_m_s']:.2f}", f"{r['mean_size_m']:.3f}",
          f"{r['pos_rms_mm']:.3f} / {r['pos_p95_mm']:.3f} / {r['pos_max_mm']:.3f}", f"{r['rot_rms_deg']:.3f}",
          f"{r['ik_latency_median_ms']:.2f} / {r['ik_latency_p95_ms']:.2f}", limit_violations_text(r)) for r in track_rows], "lllrrlrlr")
    return reach_table + "\n\n" + track_table + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.splitlines()[0])
    harness.add_robot(parser)
    parser.add_argument("--controllers", nargs="+", default=["hybrid"], metavar="KIND",
                        help=f"controllers (default hybrid): {', '.join(CONTROLLER_KINDS)}, a network shipped for the robot, "
                             f"or {', '.join(VARIANTS)}")
    parser.add_argument("--episodes", type=harness.at_least(1), default=200, help="Reach episodes per controller (default 200)")
    parser.add_argument("--track-episodes", type=harness.at_least(1), default=10, help="Track episodes per controller (default 10)")
    parser.add_argument("--speed", type=float, default=0.1, help="Track speed [m/s] (default 0.1)")
    parser.add_argument("--all-trajectories", action="store_true", help="all trajectories, not only the figure-eight")
    harness.add_progress(parser)
    args = parser.parse_args(argv)
    valid = (*solver_names(get_robot(args.robot)), *VARIANTS)
    if unknown := [kind for kind in args.controllers if kind not in valid]:
        parser.error(f"unknown controllers {unknown} for {args.robot}; valid: {', '.join(valid)}")
    trajectories = TRAJECTORIES if args.all_trajectories else ("figure_eight",)
    progress = not args.no_progress
    reach_rows = [reach(args.robot, kind, args.episodes, progress) for kind in args.controllers]
    track_rows = [track(args.robot, kind, t, args.track_episodes, args.speed, progress) for kind in args.controllers for t in trajectories]
    text = markdown(args.robot, reach_rows, track_rows)
    print(text)
    info = harness.provenance(__file__, argv)
    harness.write_record(args.out, f"env_{args.robot}", {"robot": args.robot, "reach": reach_rows, "track": track_rows}, text, info)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
