"""Stable-Baselines3 SAC + HER on the IRB120's goal-conditioned Reach, acting through the IK network.

The action is an end-effector increment (``action_type="ee_delta"``: at most 2 cm and 0.1 rad a
step); the robot's shipped hybrid IK (HarmoAtt-IK seed + LM) turns it into joint targets. Goals are
drawn near home (``goal_spread``); the reward is dense by default (minus the position error [m] and
0.1 m/rad × the rotation error [rad]; ``--reward sparse``: 0 within 5 mm and 2°, else -1), and HER
relabels it with the goals the arm did reach. Observations and goals are normalised by running
statistics (``VecNormalize``) and SAC's entropy coefficient starts at 0.05: without either, SAC does
not learn this task in these budgets (benchmarks/rl_reach.py). Every ``--eval-every`` steps the
policy runs ``--eval-episodes`` deterministic episodes; the success rates at the last step within
5 mm & 2° (the project's criterion) and 10 mm & 20° are plotted against environment steps.

    pip install -e ".[rl]"
    python examples/sb3_reach.py                       # 8,000 steps, writes sb3_reach.png
    python examples/sb3_reach.py --steps 20000 --out curve.png

On a shared 2-core CPU one step of SAC costs tens of ms, so 8,000 steps take 5-15 minutes.
benchmarks/rl_reach.py compares these actions with joint-space ones at equal steps.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import torch

import hik_sim.envs  # noqa: F401  (registers hik_sim/ReachGoal-<robot>-v0 and friends)
from hik_sim.kinematics.tolerances import LOOSE, SUCCESS


def evaluate(model, env: gym.Env, normalizer, episodes: int, seed: int = 10_000) -> tuple[float, float]:  # noqa: ANN001 - SB3 objects
    """Success rates within 5 mm & 2° and within 10 mm & 20° at the last step of ``episodes`` deterministic episodes."""
    final = []
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        done = False
        while not done:
            action, _ = model.predict(normalizer.normalize_obs(obs), deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        final.append((info["pos_err"], info["rot_err"]))
    pos, rot = np.asarray(final).T
    return float(SUCCESS.met(pos, rot).mean()), float(LOOSE.met(pos, rot).mean())


def main() -> None:
    from stable_baselines3 import SAC
    from stable_baselines3.common.vec_env import DummyVecEnv, VecNormalize
    from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=8000, help="environment steps to train for")
    parser.add_argument("--eval-every", type=int, default=1000, help="steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=20, help="episodes per evaluation")
    parser.add_argument("--goal-spread", type=float, default=0.1, help="goals from home + spread × (uniform − home) in joint space")
    parser.add_argument("--reward", choices=("dense", "sparse"), default="dense", help="sparse: 0 within 5 mm & 2°, else -1")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="sb3_reach.png", help="where the plot goes (PNG)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small networks: one thread is faster than two contended ones

    make = lambda: gym.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta", goal_spread=args.goal_spread,  # noqa: E731
                            reward_type=args.reward)
    env, eval_env = VecNormalize(DummyVecEnv([make]), norm_obs=True, norm_reward=False, clip_obs=10.0), make()
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
                learning_rate=1e-3, gamma=0.95, tau=0.05, batch_size=128, learning_starts=500, ent_coef="auto_0.05",
                policy_kwargs={"net_arch": [64, 64]}, seed=args.seed, device="cpu")
    steps, rates = [0], [evaluate(model, eval_env, env, args.eval_episodes)]
    while model.num_timesteps < args.steps:
        model.learn(total_timesteps=min(args.eval_every, args.steps - model.num_timesteps), reset_num_timesteps=False)
        steps.append(model.num_timesteps)
        rates.append(evaluate(model, eval_env, env, args.eval_episodes))
        print(f"{steps[-1]:>7} steps: success {100 * rates[-1][0]:.0f} % within 5 mm & 2°, {100 * rates[-1][1]:.0f} % within 10 mm & 20°")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, [100 * r[0] for r in rates], marker="o", label="within 5 mm & 2°")
    ax.plot(steps, [100 * r[1] for r in rates], marker="o", linestyle="--", label="within 10 mm & 20°")
    ax.set(xlabel="environment steps", ylabel="success rate at the last step [%]", ylim=(-5, 105),
           title=f"SAC + HER ({args.reward} reward), IRB120 ReachGoal, ee_delta actions through the hybrid IK")
    ax.title.set_fontsize(8)
    ax.legend()
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
