"""The one episode loop (hik_sim.evaluation.rollout) and the Reach / Track metrics computed from its episodes."""

from __future__ import annotations

import dataclasses

import math

import gymnasium as gym
import numpy as np
import pytest

import hik_sim.envs  # noqa: F401  (registers the environments)
from hik_sim.errors import HikError
from hik_sim.evaluation.metrics import reach_metrics, track_metrics
from hik_sim.evaluation.rollout import LIMIT_SLACK, Episode, rollout
from hik_sim.policies.controller import IKController


def _manual_episode(env: gym.Env, controller: IKController, seed: int) -> tuple[list[float], list[float], bool]:
    """The plain Gymnasium loop, written out: the position errors, rotation errors and is_success."""
    obs, info = env.reset(seed=seed)
    controller.reset()
    pos, rot = [info["pos_err"]], [info["rot_err"]]
    terminated = truncated = False
    while not (terminated or truncated):
        obs, _, terminated, truncated, info = env.step(controller(obs))
        pos.append(info["pos_err"])
        rot.append(info["rot_err"])
    return pos, rot, info["is_success"]


def test_rollout_records_the_episode_the_gymnasium_loop_runs() -> None:
    env = gym.make("hik_sim/Reach-irb120-v0")
    controller = IKController.pretrained("irb120", "lm")
    episode = rollout(env, controller, seed=3)
    # a fresh env and controller (the solver's random restarts draw from its own generator)
    pos, rot, success = _manual_episode(gym.make("hik_sim/Reach-irb120-v0"), IKController.pretrained("irb120", "lm"), seed=3)
    np.testing.assert_allclose(episode.pos_err, pos, rtol=0, atol=1e-12)  # the same seed, the same episode, every step
    np.testing.assert_allclose(episode.rot_err, rot, rtol=0, atol=1e-12)
    assert episode.success is success is True and episode.terminated and not episode.truncated
    dt = env.unwrapped.dt
    assert episode.steps == len(episode.ik_time) == len(episode.time) - 1
    np.testing.assert_allclose(episode.time, dt * np.arange(episode.steps + 1))
    assert episode.time_to_reach == pytest.approx(episode.steps * dt)
    assert episode.pos_err[-1] < 0.005 and episode.rot_err[-1] < math.radians(2)  # held within 5 mm & 2° at the end
    assert episode.pos_err[0] > 0.005  # and it started away from the goal
    # the solver's wall time per step [s], not ms (the median: a loaded machine may pause any one step)
    assert np.all(episode.ik_time > 0) and np.median(episode.ik_time) < 0.1
    assert episode.joint_limit_violations == 0 and episode.solver_failures == 0
    assert 0.0 <= episode.limit_excess <= LIMIT_SLACK  # no step ended outside a limit by more than the slack
    row = reach_metrics([episode])
    assert row["success_5mm_2deg"] == 1.0 and row["time_to_reach_s"] == pytest.approx(episode.time[-1])
    assert row["final_pos_mean_mm"] == pytest.approx(1000 * episode.pos_err[-1])


def test_rollout_stops_at_max_steps_and_checks_its_arguments() -> None:
    env = gym.make("hik_sim/Track-irb120-v0", trajectory="circle", speed=0.05)
    controller = IKController.pretrained("irb120", "lm")
    episode = rollout(env, controller, seed=0, max_steps=60)
    assert episode.steps == 60 and episode.truncated and not episode.terminated and episode.time_to_reach is None
    assert episode.success  # Track's is_success: within 5 mm & 2° at the last step
    assert episode.reset_info["size"] > 0  # Track's reset info travels with the episode
    row = track_metrics([episode])
    after = episode.pos_err[episode.time > 1.0]
    assert len(after) == 60 - 50  # 50 Hz: steps 51..60 come after the first second
    assert row["pos_rms_mm"] == pytest.approx(1000 * np.sqrt(np.mean(after**2)))
    for bad in ({"max_steps": 0}, {"frame_every": 0}):
        with pytest.raises(HikError, match="at least 1"):
            rollout(env, controller, seed=0, **bad)
    with pytest.raises(HikError, match="rollout runs hik_sim environments"):
        rollout(gym.make("CartPole-v1"), controller, seed=0)


def _episode(pos: list[float], rot: list[float], success: bool, dt: float = 0.5, failures: int = 0, violations: int = 0,
             excess: float = 0.0) -> Episode:
    steps = len(pos) - 1
    return Episode(time=dt * np.arange(steps + 1), pos_err=np.array(pos), rot_err=np.array(rot), ik_time=np.full(steps, 0.002),
                   joint_limit_violations=violations, solver_failures=failures, success=success, terminated=success,
                   truncated=not success, limit_excess=excess)


def test_reach_and_track_metrics_on_known_episodes() -> None:
    reached = _episode([0.1, 0.01, 0.001], [0.5, 0.1, 0.01], success=True)  # held after 1 s
    near = _episode([0.1, 0.02, 0.008], [0.5, 0.2, 0.1], success=False, failures=2, violations=1,  # 8 mm, 5.7°: only the loose tolerance
                    excess=0.003)
    row = reach_metrics([reached, near])
    assert row["episodes"] == 2 and row["success_5mm_2deg"] == 0.5 and row["success_10mm_20deg"] == 1.0
    assert row["time_to_reach_s"] == 1.0
    assert row["final_pos_mean_mm"] == pytest.approx(4.5) and row["final_rot_mean_deg"] == pytest.approx(math.degrees(0.055))
    assert row["ik_latency_median_ms"] == pytest.approx(2.0) and row["ik_latency_p95_ms"] == pytest.approx(2.0)
    assert row["ik_solve_median_ms"] == pytest.approx(2.0) and row["ik_repeated_share"] == 0.0  # episodes that do not say: all solves
    # steps answered from the last result (a repeated query) count per step, not per solve
    looked_up = dataclasses.replace(reached, ik_time=np.array([0.004, 0.00001]), ik_repeated=np.array([False, True]))
    per_solve = reach_metrics([looked_up])
    assert per_solve["ik_latency_median_ms"] == pytest.approx(2.005) and per_solve["ik_solve_median_ms"] == pytest.approx(4.0)
    assert per_solve["ik_solve_p95_ms"] == pytest.approx(4.0) and per_solve["ik_repeated_share"] == 0.5
    assert row["joint_limit_violations"] == 1 and row["solver_failures"] == 2 and row["joint_limit_excess_max_rad"] == 0.003
    assert reach_metrics([near])["time_to_reach_s"] is None
    track = track_metrics([_episode([0.5, 0.5, 0.003, 0.004], [1.0, 1.0, 0.0, 0.02], success=False)])  # t = 0, 0.5, 1.0, 1.5 s
    assert track["pos_rms_mm"] == pytest.approx(4.0) and track["pos_max_mm"] == pytest.approx(4.0)  # only t = 1.5 s counts
    assert track["rot_rms_deg"] == pytest.approx(math.degrees(0.02))
    with pytest.raises(HikError, match="longer than"):
        track_metrics([_episode([0.1, 0.1], [0.1, 0.1], success=False)])
    with pytest.raises(HikError, match="at least one episode"):
        reach_metrics([])
