"""Joint-space against end-effector actions for SAC + HER on a goal-conditioned Reach, at equal environment steps.

Stable-Baselines3's SAC with its HER replay buffer trains on ``hik_sim/ReachGoal-<robot>-v0`` twice
per seed, once per action type:

- ``joint_normalized``: absolute joint targets in [-1, 1] (-1 a joint's lower limit, +1 its upper);
- ``ee_delta``: end-effector increments (at most 2 cm and 0.1 rad a step) turned into joint
  targets by the robot's shipped hybrid IK (HarmoAtt-IK seed + LM).

Everything else is the same: goals near home (``--goal-spread``), 50-step episodes, the reward
(``--reward dense``, the default: ``-(position error [m] + 0.1 m/rad × rotation error [rad])``;
``sparse``: 0 within the training tolerance, else -1, with ``--tolerance success``: 5 mm and 2°, the
project's success, or ``loose``: 10 mm and 20°, CycleIK's), SAC with the RL Zoo's FetchReach
settings scaled down for a CPU (64-64 networks, batch 128, learning rate 1e-3, gamma 0.95, tau 0.05,
500 random steps first; HER ``future`` with 4 sampled goals), one torch thread per run, and two
settings without which SAC did not learn this task in budgets like these: observations and goals
normalised by their running mean and deviation (Stable-Baselines3's ``VecNormalize``; a 5 mm error
is 0.005 in metres, a tenth of the goals' deviation), and an entropy coefficient that starts at 0.05
and is learned (``ent_coef="auto_0.05"``; from SAC's default of 1 the policy spends thousands of
steps unlearning its randomness while the sparse or small dense rewards barely move it). Every
``--eval-every`` steps (and before training) the deterministic policy runs ``--eval-episodes``
episodes on fixed evaluation goals: the success rates at the last step within 5 mm & 2° (the
project's) and within 10 mm & 20°, whatever the reward trained on, and the final position error [mm]
and rotation error [°] (medians). With the sparse reward, the share of 4,096 transitions sampled
from the HER buffer whose (mostly relabelled) reward is 0 says how much signal it gave.
Two scripted policies on the same goals calibrate the figures: ``hold`` (zero ``ee_delta`` actions:
the arm stays at home, its errors are the goals' distances) and ``proportional`` (``ee_delta``
actions ``clip(error / step bound)``: the task solved through the IK, the best a policy can expect).

Output in ``--out``: ``rl_reach.json`` (the provenance block first, with Stable-Baselines3's version and ``--jobs``;
then the configuration and every curve), ``rl_reach.md`` (the final table under the provenance line) and
``rl_reach.png`` (success rate and position error against environment steps).
``--jobs`` runs that many runs at once, each in its own process with one torch thread.

Usage::

    python benchmarks/rl_reach.py                                  # irb120, 3 seeds x 10,000 steps per action type
    python benchmarks/rl_reach.py --jobs 3                         # the record: 3 runs at once
    python benchmarks/rl_reach.py --reward sparse --tolerance loose --out /tmp/rl_loose   # sparse reward, 10 mm & 20°
    python benchmarks/rl_reach.py --steps 600 --seeds 0 --eval-every 300 --eval-episodes 3 --out /tmp/rl   # quick
"""

from __future__ import annotations

import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the shared harness, also when this file is loaded by its path
import harness  # noqa: E402
import hik_sim.envs  # noqa: F401,E402  (registration)
from hik_sim.kinematics.tolerances import LOOSE, SUCCESS  # noqa: E402

ACTION_TYPES = ("joint_normalized", "ee_delta")
SAC_SETTINGS: dict[str, Any] = {"learning_rate": 1e-3, "gamma": 0.95, "tau": 0.05, "batch_size": 128, "learning_starts": 500,
                                "ent_coef": "auto_0.05", "policy_kwargs": {"net_arch": [64, 64]}}
NORMALIZE_SETTINGS: dict[str, Any] = {"norm_obs": True, "norm_reward": False, "clip_obs": 10.0}
"""Stable-Baselines3's ``VecNormalize``: observations and goals scaled by running statistics, rewards as they are."""
HER_SETTINGS: dict[str, Any] = {"n_sampled_goal": 4, "goal_selection_strategy": "future"}
TOLERANCES = {"success": SUCCESS, "loose": LOOSE}
REWARD_TYPES = ("dense", "sparse")


def evaluate(model: Any, env: gym.Env, episodes: int, seed: int = 10_000, normalizer: Any = None) -> dict[str, float]:
    """The deterministic policy on ``episodes`` fixed goals: success rates within 5 mm & 2° (``success``) and
    10 mm & 20° (``success_loose``) at the last step, median final errors [mm, °], IK failures a step.

    ``normalizer``: the training's ``VecNormalize``, whose statistics scale the observations the policy sees.
    """
    pos, rot, failures, steps = [], [], 0, 0
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        done = False
        while not done:
            action, _ = model.predict(normalizer.normalize_obs(obs) if normalizer is not None else obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
            failures += bool(info["ik_failed"])
            steps += 1
        pos.append(info["pos_err"])
        rot.append(info["rot_err"])
    within = lambda tolerance: float(np.mean(tolerance.met(np.asarray(pos), np.asarray(rot))))  # noqa: E731
    return {"success": within(SUCCESS), "success_loose": within(LOOSE), "pos_err_mm": 1000 * statistics.median(pos),
            "rot_err_deg": math.degrees(statistics.median(rot)), "ik_failures_per_step": failures / steps}


def proportional_action(obs: dict[str, np.ndarray]) -> np.ndarray:
    """The ``ee_delta`` action (6,) that moves straight towards the desired goal, clipped to the step bounds."""
    from hik_sim.envs.actions import EE_DELTA_POSITION, EE_DELTA_ROTATION

    achieved, desired = obs["achieved_goal"], obs["desired_goal"]
    w1, x1, y1, z1 = desired[3:]
    w2, x2, y2, z2 = achieved[3:] * np.array([1.0, -1.0, -1.0, -1.0])  # the conjugate: desired ⊗ achieved* turns achieved into desired
    turn = np.array([w1 * w2 - x1 * x2 - y1 * y2 - z1 * z2, w1 * x2 + x1 * w2 + y1 * z2 - z1 * y2,
                     w1 * y2 - x1 * z2 + y1 * w2 + z1 * x2, w1 * z2 + x1 * y2 - y1 * x2 + z1 * w2])
    turn = turn if turn[0] >= 0 else -turn
    sine = float(np.linalg.norm(turn[1:]))
    rotation_vector = turn[1:] / sine * 2 * math.atan2(sine, turn[0]) if sine > 1e-12 else np.zeros(3)
    return np.clip(np.concatenate([(desired[:3] - achieved[:3]) / EE_DELTA_POSITION, rotation_vector / EE_DELTA_ROTATION]), -1, 1)


class Scripted:
    """A scripted policy with SB3's ``predict``: ``hold`` (zero actions) or ``proportional``."""

    def __init__(self, kind: str) -> None:
        self.kind = kind

    def predict(self, obs: dict[str, np.ndarray], deterministic: bool = True) -> tuple[np.ndarray, None]:
        return (np.zeros(6) if self.kind == "hold" else proportional_action(obs)), None


def references(robot: str, eval_episodes: int, env_kwargs: dict[str, Any]) -> dict[str, dict[str, float]]:
    """The scripted policies' evaluations on the runs' evaluation goals (``ee_delta``, the shipped hybrid IK)."""
    env = gym.make(f"hik_sim/ReachGoal-{robot}-v0", action_type="ee_delta", **env_kwargs)
    return {kind: evaluate(Scripted(kind), env, eval_episodes) for kind in ("hold", "proportional")}


def train(robot: str, action_type: str, seed: int, steps: int, eval_every: int, eval_episodes: int,
          env_kwargs: dict[str, Any]) -> dict[str, Any]:
    """One SAC + HER run (one torch thread); its evaluation curve, wall time and the training steps' IK latency."""
    import torch
    from stable_baselines3 import SAC
    from stable_baselines3.common.callbacks import BaseCallback
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

    torch.set_num_threads(1)  # 64-64 networks: one thread beats two contended ones on a shared CPU

    class IKTimes(BaseCallback):
        """Collects the training environment's ``info["ik_time"]`` [s]."""

        def __init__(self) -> None:
            super().__init__()
            self.times: list[float] = []

        def _on_step(self) -> bool:
            self.times.extend(float(info["ik_time"]) for info in self.locals["infos"])
            return True

    env_id = f"hik_sim/ReachGoal-{robot}-v0"
    env = VecNormalize(DummyVecEnv([lambda: gym.make(env_id, action_type=action_type, **env_kwargs)]), **NORMALIZE_SETTINGS)
    eval_env = gym.make(env_id, action_type=action_type, **env_kwargs)
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs=dict(HER_SETTINGS), seed=seed,
                device="cpu", **SAC_SETTINGS)
    ik_times = IKTimes()
    curve = [{"steps": 0, **evaluate(model, eval_env, eval_episodes, normalizer=env)}]
    start = time.perf_counter()
    while model.num_timesteps < steps:
        model.learn(total_timesteps=min(eval_every, steps - model.num_timesteps), reset_num_timesteps=False, callback=ik_times)
        curve.append({"steps": model.num_timesteps, **evaluate(model, eval_env, eval_episodes, normalizer=env)})
        print(f"{action_type:>16} seed {seed}: {curve[-1]['steps']:>6} steps, success {100 * curve[-1]['success']:5.1f} % "
              f"({100 * curve[-1]['success_loose']:5.1f} % within 10 mm & 20 deg), position {curve[-1]['pos_err_mm']:7.1f} mm, "
              f"rotation {curve[-1]['rot_err_deg']:5.1f} deg", file=sys.stderr, flush=True)
    wall = time.perf_counter() - start
    times = np.asarray(ik_times.times) if ik_times.times else np.zeros(1)
    assert model.replay_buffer is not None  # SAC builds its buffer in the constructor
    reached = None
    if env_kwargs.get("reward_type") == "sparse":
        reached = float((model.replay_buffer.sample(4096, env=env).rewards.numpy() == 0).mean())
    return {"action_type": action_type, "seed": seed, "curve": curve, "wall_s": wall, "her_rewards_at_zero": reached,
            "ik_time_median_ms": 1000 * float(np.median(times)), "ik_time_p95_ms": 1000 * float(np.percentile(times, 95))}


def table(runs: list[dict[str, Any]], scripted: dict[str, dict[str, float]], reward: str) -> str:
    """Markdown: per action type, the last evaluation averaged over seeds (and each seed's); the scripted policies.

    ``reward``: what the runs trained on, as the table's second column says it (e.g. ``dense``).
    """
    header = ["actions", "trained on", "steps", "seeds", "success 5 mm & 2° (mean)", "per seed", "success 10 mm & 20° (mean)",
              "per seed", "position error [mm] (median, mean of seeds)", "rotation error [°]", "IK failures a step",
              "IK time a step, median / p95 [ms]", "buffer rewards at 0", "wall time a run [s]"]
    rows: list[list[str]] = []
    for action_type in ACTION_TYPES:
        mine = [r for r in runs if r["action_type"] == action_type]
        if not mine:
            continue
        last = [r["curve"][-1] for r in mine]
        mean = lambda key, last=last: statistics.fmean(x[key] for x in last)  # noqa: E731
        per_seed = lambda key, last=last: ", ".join(f"{100 * x[key]:.0f} %" for x in last)  # noqa: E731
        buffer = [r["her_rewards_at_zero"] for r in mine if r["her_rewards_at_zero"] is not None]
        rows.append([f"`{action_type}`", reward, f"{last[0]['steps']:,}", str(len(mine)), f"{100 * mean('success'):.0f} %",
                     per_seed("success"), f"{100 * mean('success_loose'):.0f} %", per_seed("success_loose"),
                     f"{mean('pos_err_mm'):.1f}", f"{mean('rot_err_deg'):.1f}", f"{mean('ik_failures_per_step'):.3f}",
                     f"{statistics.fmean(r['ik_time_median_ms'] for r in mine):.2f} / {statistics.fmean(r['ik_time_p95_ms'] for r in mine):.2f}",
                     f"{100 * statistics.fmean(buffer):.1f} %" if buffer else "–", f"{statistics.fmean(r['wall_s'] for r in mine):.0f}"])
    for kind, result in scripted.items():
        rows.append([f"scripted `{kind}` (`ee_delta`)", "–", "–", "–", f"{100 * result['success']:.0f} %", "–",
                     f"{100 * result['success_loose']:.0f} %", "–", f"{result['pos_err_mm']:.1f}", f"{result['rot_err_deg']:.1f}",
                     f"{result['ik_failures_per_step']:.3f}", "–", "–", "–"])
    return harness.markdown_table(header, rows, "llrrrlrlrrrrrr")


def plot(runs: list[dict[str, Any]], scripted: dict[str, dict[str, float]], path: Path, title: str) -> None:
    """Success rates (5 mm & 2°, and 10 mm & 20° dashed; the mean of seeds) and the final position error against
    environment steps; thin lines are the seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 5))
    colours = {"joint_normalized": "tab:blue", "ee_delta": "tab:orange"}
    for action_type in ACTION_TYPES:
        mine = [r for r in runs if r["action_type"] == action_type]
        if not mine:
            continue
        colour, steps = colours[action_type], [p["steps"] for p in mine[0]["curve"]]
        for run in mine:
            left.plot(steps, [100 * p["success"] for p in run["curve"]], color=colour, alpha=0.3, linewidth=0.8)
            right.plot(steps, [p["pos_err_mm"] for p in run["curve"]], color=colour, alpha=0.3, linewidth=0.8)
        for key, style, label in (("success", "-", "5 mm & 2°"), ("success_loose", "--", "10 mm & 20°")):
            mean = [100 * statistics.fmean(r["curve"][k][key] for r in mine) for k in range(len(steps))]
            left.plot(steps, mean, style, marker="o", markersize=3, color=colour, label=f"{action_type}, {label} (mean of {len(mine)} seeds)")
        right.plot(steps, [statistics.fmean(r["curve"][k]["pos_err_mm"] for r in mine) for k in range(len(steps))], marker="o",
                   markersize=3, color=colour, label=f"{action_type} (mean of {len(mine)} seeds)")
    for kind, style in (("hold", ":"), ("proportional", "-.")):
        if kind in scripted:
            left.axhline(100 * scripted[kind]["success"], color="grey", linestyle=style, label=f"scripted {kind} (5 mm & 2°)")
            if scripted[kind]["pos_err_mm"] >= 0.1:  # the proportional policy's ~0 mm would squash the log scale
                right.axhline(scripted[kind]["pos_err_mm"], color="grey", linestyle=style, label=f"scripted {kind}")
    left.set(xlabel="environment steps", ylabel="success rate at the last step [%]", ylim=(-5, 105))
    right.set(xlabel="environment steps", ylabel="final position error [mm] (median)", yscale="log")
    for ax in (left, right):
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.14), ncol=2)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main(argv: list[str] | None = None) -> int:
    parser = harness.make_parser(__file__, __doc__.split("\n\n")[0], out="benchmarks/results/rl_reach")
    harness.add_robot(parser)
    parser.add_argument("--steps", type=harness.at_least(1), default=10_000, help="environment steps per run (default 10000)")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2], help="training seeds (default 0 1 2)")
    parser.add_argument("--eval-every", type=harness.at_least(1), default=1000, help="environment steps between evaluations (default 1000)")
    parser.add_argument("--eval-episodes", type=harness.at_least(1), default=20, help="episodes an evaluation (default 20)")
    parser.add_argument("--goal-spread", type=float, default=0.1, help="goal configurations drawn towards home: home + spread × (random − home) (default 0.1)")
    parser.add_argument("--reward", choices=REWARD_TYPES, default="dense", help="dense: minus the weighted errors; sparse: 0 within --tolerance, else -1")
    parser.add_argument("--tolerance", choices=tuple(TOLERANCES), default="success",
                        help="the sparse reward's tolerance: success (5 mm & 2°) or loose (10 mm & 20°); not used by the dense reward")
    parser.add_argument("--action-types", nargs="+", choices=ACTION_TYPES, default=list(ACTION_TYPES))
    parser.add_argument("--jobs", type=harness.at_least(1), default=1, help="runs at once, one process and one torch thread each")
    args = parser.parse_args(argv)
    import torch

    torch.set_num_threads(1)  # the scripted policies' IK, and every run when --jobs is 1
    tolerance = TOLERANCES[args.tolerance]
    env_kwargs = {"goal_spread": args.goal_spread, "reward_type": args.reward, "position_tolerance": tolerance.position,
                  "rotation_tolerance": tolerance.rotation}
    scripted = references(args.robot, args.eval_episodes, env_kwargs)
    jobs = [(args.robot, action_type, seed, args.steps, args.eval_every, args.eval_episodes, env_kwargs)
            for seed in args.seeds for action_type in args.action_types]
    if args.jobs == 1:
        runs = [train(*job) for job in jobs]
    else:
        import multiprocessing
        from concurrent.futures import ProcessPoolExecutor

        with ProcessPoolExecutor(args.jobs, mp_context=multiprocessing.get_context("spawn")) as pool:
            runs = list(pool.map(train, *zip(*jobs)))
    import stable_baselines3

    trained_on = "dense reward" if args.reward == "dense" else f"sparse reward, {args.tolerance} tolerance"
    info = harness.provenance(__file__, argv, stable_baselines3=stable_baselines3.__version__, jobs=args.jobs)
    record = {"robot": args.robot, "steps": args.steps, "seeds": args.seeds, "eval_every": args.eval_every,
              "eval_episodes": args.eval_episodes, "goal_spread": args.goal_spread, "reward": args.reward,
              "tolerance": {"name": args.tolerance, "position_m": tolerance.position, "rotation_rad": tolerance.rotation},
              "evaluated_at": {"success": {"position_m": SUCCESS.position, "rotation_rad": SUCCESS.rotation},
                               "success_loose": {"position_m": LOOSE.position, "rotation_rad": LOOSE.rotation}},
              "sac": SAC_SETTINGS, "her": HER_SETTINGS, "normalize": NORMALIZE_SETTINGS, "scripted": scripted, "runs": runs}
    title = (f"SAC + HER on hik_sim/ReachGoal-{args.robot}-v0 (goal_spread {args.goal_spread}, {trained_on}): "
             f"joint-space against end-effector actions, {args.steps:,} steps a run")
    markdown = (f"Stable-Baselines3 {stable_baselines3.__version__}, one torch thread a run, {args.jobs} at once. "
                f"Trained on the {trained_on}; success is measured at the last step of {args.eval_episodes} deterministic "
                f"episodes on fixed goals per run, within 5 mm & 2° (the project's criterion) and within 10 mm & 20°.\n\n"
                f"{table(runs, scripted, trained_on)}\n")
    _, md_path = harness.write_record(args.out, "rl_reach", record, markdown, info, title)
    plot(runs, scripted, args.out / "rl_reach.png", title)
    print(md_path.read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
