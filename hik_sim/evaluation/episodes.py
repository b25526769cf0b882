"""The evaluator's measuring phase: each policy's open-loop accuracy, then its Reach and Track episodes.

Each policy's batched solver and controller are called once, untimed, before anything is timed
(:func:`~hik_sim.evaluation.policy.ik_accuracy`, :func:`~hik_sim.evaluation.policy.warm_up_controller`);
their first calls' times go into the report beside, not into, the latencies. The first episode of each
policy and environment is recorded as states for the videos (:class:`~hik_sim.sim.video.Recording`), at
the control steps nearest the video's frame rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from hik_sim.evaluation.config import EvalConfig
from hik_sim.evaluation.policy import PolicySpec, ik_accuracy, warm_up_controller
from hik_sim.robots import RobotSpec

__all__ = ["Episodes", "REACH_STEPS", "frame_every", "run_episodes"]

REACH_STEPS = 250
"""Control steps of a Reach episode at most (its time limit ends it first, or its success)."""


@dataclass
class Episodes:
    """What the measuring phase leaves for plots and videos.

    Attributes:
        curves: ``ik``: policy → (position errors [m], rotation errors [rad]); ``reach``/``track``: policy →
            its first :class:`~hik_sim.evaluation.rollout.Episode`.
        recordings: environment → each policy's first episode's :class:`~hik_sim.sim.video.Recording`.
        fps: environment → the recordings' frame rate [frames/s].
        slugs: policy name → its name in file names.
        scene: the scene the episodes ran in (None when nothing was recorded).
    """

    curves: dict[str, dict[str, Any]] = field(default_factory=lambda: {"ik": {}, "reach": {}, "track": {}})
    recordings: dict[str, list[Any]] = field(default_factory=lambda: {"reach": [], "track": []})
    fps: dict[str, float] = field(default_factory=dict)
    slugs: dict[str, str] = field(default_factory=dict)
    scene: Any = None


def frame_every(dt: float, fps: float) -> int:
    """Control steps between recorded frames for a video of about ``fps`` frames a second (control period ``dt`` [s])."""
    return max(1, round(1.0 / (fps * dt)))


def run_episodes(robot: RobotSpec, config: EvalConfig, policies: list[PolicySpec], report: dict[str, Any],
                 progress: bool) -> Episodes:
    """Measure every policy; fill ``report["policies"]``.

    Args:
        robot: the robot.
        config: what to run.
        policies: the built policies.
        report: the report, whose ``policies`` entry gets one entry per policy (``card``, ``first_call_s``,
            ``ik``, ``reach``, ``track``).
        progress: show a progress bar.

    Returns:
        The curves and recordings for plots and videos.
    """
    import gymnasium as gym
    from tqdm.auto import tqdm

    import hik_sim.envs  # noqa: F401  (registers the environments, picks headless GL)
    from hik_sim.envs.base import RobotGoalEnv
    from hik_sim.evaluation.metrics import reach_metrics, track_metrics
    from hik_sim.evaluation.rollout import rollout
    from hik_sim.sim.video import Recording

    made = Episodes()
    bar = tqdm(total=len(policies) * (1 + len(config.envs)), desc=f"evaluate {robot.name}", disable=not progress, unit="task")
    try:
        warm_env = gym.make("hik_sim/Reach-v0", robot=robot)
        for policy in policies:
            made.slugs[policy.name] = policy.slug
            entry: dict[str, Any] = {"card": {k: policy.card.get(k) for k in ("model", "steps", "training_seconds", "parameters")}
                                     if policy.card else None, "solver_can_fail": policy.can_fail}
            bar.set_postfix(policy=policy.name, task="IK accuracy")
            entry["ik"], pos, rot = ik_accuracy(policy, robot, config.ik_targets, config.seed)
            made.curves["ik"][policy.name] = (pos, rot)
            warm_up_controller(policy, warm_env, config.seed)
            entry["first_call_s"] = {"batched": policy.first_call_s, "controller": policy.controller_first_call_s}
            bar.update(1)
            for env_name in config.envs:
                bar.set_postfix(policy=policy.name, task=env_name)
                env = (gym.make("hik_sim/Reach-v0", robot=robot) if env_name == "reach"
                       else gym.make("hik_sim/Track-v0", robot=robot, trajectory=config.trajectory, speed=config.speed))
                base = env.unwrapped
                assert isinstance(base, RobotGoalEnv)  # both ids make one
                count, steps = ((config.episodes, REACH_STEPS) if env_name == "reach"
                                else (config.track_episodes, int(round(config.track_seconds / base.dt))))
                every = frame_every(base.dt, config.fps)
                try:
                    episodes = [rollout(env, policy.controller, config.seed + i, steps,
                                        Recording(policy.name, env_name) if config.recording and i == 0 else None, every)
                                for i in range(count)]
                finally:
                    env.close()
                row = reach_metrics(episodes) if env_name == "reach" else track_metrics(episodes)
                if not policy.can_fail:  # a network alone: its misses are in the errors, it has no failures to count
                    row["solver_failures"] = None
                entry[env_name] = row
                made.curves[env_name][policy.name] = episodes[0]
                if config.recording:
                    made.recordings[env_name].append(episodes[0].recording)
                    made.fps[env_name] = 1.0 / (every * base.dt)
                    made.scene = base.scene
                bar.update(1)
            report["policies"][policy.name] = entry
        warm_env.close()
    finally:
        bar.close()
    return made
