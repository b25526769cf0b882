"""Stable-Baselines3 SAC + HER on the IRB120's goal-conditioned Reach, acting through the IK network.

The action is an end-effector increment (``action_type="ee_delta"``: at most 2 cm and 0.1 rad a
step); the robot's shipped hybrid IK (HarmoAtt-IK seed + LM) turns it into joint targets. Goals are
drawn near home (``goal_spread``), rewards are sparse (0 within 5 mm and 2°, else -1), and HER
relabels them with the goals the arm did reach. Every ``--eval-every`` steps the policy runs
``--eval-episodes`` deterministic episodes; the success rate against environment steps is plotted.

    pip install -e ".[rl]"
    python examples/sb3_reach.py                       # 4,000 steps, writes sb3_reach.png
    python examples/sb3_reach.py --steps 20000 --out curve.png

On a shared 2-core CPU one step of SAC costs tens of ms, so 4,000 steps take a few minutes.
benchmarks/rl_reach.py compares these actions with joint-space ones at equal steps.
"""

from __future__ import annotations

import argparse

import gymnasium as gym
import numpy as np
import torch

import hik_sim.envs  # noqa: F401  (registers hik_sim/ReachGoal-<robot>-v0 and friends)


def evaluate(model, env: gym.Env, episodes: int, seed: int = 10_000) -> float:  # noqa: ANN001 - an SB3 model
    """Success rate of ``episodes`` deterministic episodes (success: within tolerance at the last step)."""
    successes = 0
    for episode in range(episodes):
        obs, info = env.reset(seed=seed + episode)
        done = False
        while not done:
            action, _ = model.predict(obs, deterministic=True)
            obs, _, terminated, truncated, info = env.step(action)
            done = terminated or truncated
        successes += bool(info["is_success"])
    return successes / episodes


def main() -> None:
    from stable_baselines3 import SAC
    from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--steps", type=int, default=4000, help="environment steps to train for")
    parser.add_argument("--eval-every", type=int, default=500, help="steps between evaluations")
    parser.add_argument("--eval-episodes", type=int, default=10, help="episodes per evaluation")
    parser.add_argument("--goal-spread", type=float, default=0.1, help="goals from home + spread × (uniform − home) in joint space")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default="sb3_reach.png", help="where the plot goes (PNG)")
    args = parser.parse_args()
    torch.set_num_threads(1)  # small networks: one thread is faster than two contended ones

    make = lambda: gym.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta", goal_spread=args.goal_spread)  # noqa: E731
    env, eval_env = make(), make()
    model = SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer,
                replay_buffer_kwargs={"n_sampled_goal": 4, "goal_selection_strategy": "future"},
                learning_rate=1e-3, gamma=0.95, tau=0.05, batch_size=128, learning_starts=500,
                policy_kwargs={"net_arch": [64, 64]}, seed=args.seed, device="cpu")
    steps, rates = [0], [evaluate(model, eval_env, args.eval_episodes)]
    while model.num_timesteps < args.steps:
        model.learn(total_timesteps=min(args.eval_every, args.steps - model.num_timesteps), reset_num_timesteps=False)
        steps.append(model.num_timesteps)
        rates.append(evaluate(model, eval_env, args.eval_episodes))
        print(f"{steps[-1]:>7} steps: success {100 * rates[-1]:.0f} %")

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 3.5))
    ax.plot(steps, 100 * np.asarray(rates), marker="o")
    ax.set(xlabel="environment steps", ylabel="success rate [%] (5 mm & 2°)", ylim=(-5, 105),
           title="SAC + HER, IRB120 ReachGoal, ee_delta actions through the hybrid IK")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(args.out, dpi=120)
    print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
