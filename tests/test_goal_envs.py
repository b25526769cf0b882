"""Goal-conditioned environments and the action interfaces: check_env without warnings, vectorised
rewards, end-effector increments through IK, joint limits, bad arguments, and a SAC + HER smoke run."""

from __future__ import annotations

import math
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import hik_sim.envs
from hik_sim.envs.actions import ACTION_TYPES, EE_DELTA_POSITION, EE_DELTA_ROTATION, rotate, rotation_angles
from hik_sim.errors import HikError
from hik_sim.kinematics.tolerances import SUCCESS, rotation_angle
from hik_sim.robots import robot_names

GOAL_IDS = [i for i in hik_sim.envs.ENV_IDS if i.startswith("hik_sim/ReachGoal-") and i.count("-") == 2]


def test_every_robot_has_a_goal_environment() -> None:
    assert [f"hik_sim/ReachGoal-{robot}-v0" for robot in robot_names()] == GOAL_IDS
    assert "hik_sim/ReachGoal-v0" in hik_sim.envs.ENV_IDS
    assert gym.spec(GOAL_IDS[0]).max_episode_steps == hik_sim.envs.REACH_GOAL_STEPS == 50


@pytest.mark.parametrize("env_id", GOAL_IDS)
def test_goal_env_passes_check_env_without_warnings(env_id: str) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make(env_id)
        check_env(env.unwrapped)  # the render check too: rgb_array, headless
        obs, info = env.reset(seed=0)
        for _ in range(3):
            obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
    assert [str(w.message) for w in caught] == []
    space = env.observation_space
    assert set(space.spaces) == {"observation", "achieved_goal", "desired_goal"}
    for box in space.spaces.values():
        assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
    assert np.all(env.action_space.low == -1.0) and np.all(env.action_space.high == 1.0) and env.action_space.shape == (env.unwrapped.robot.dof,)
    home_quat = env.unwrapped.home_quat
    assert space.contains(obs) and obs["achieved_goal"][3:] @ home_quat >= 0 and obs["desired_goal"][3:] @ home_quat >= 0
    assert reward in (0.0, -1.0) and info["is_success"] == (reward == 0.0)
    env.close()


def _goals(rng: np.random.Generator, size: int) -> np.ndarray:
    quat = rng.normal(size=(size, 4))
    return np.concatenate([rng.uniform(-0.5, 0.5, (size, 3)), quat / np.linalg.norm(quat, axis=1, keepdims=True)], axis=1)


@pytest.mark.parametrize("reward_type", ["sparse", "dense"])
def test_compute_reward_of_a_batch_equals_per_sample_calls(reward_type: str) -> None:
    env = gym.make("hik_sim/ReachGoal-irb120-v0", reward_type=reward_type).unwrapped
    rng = np.random.default_rng(0)
    desired = _goals(rng, 64)
    # achieved goals on both sides of 5 mm and 2 deg: position offsets 1-9 mm, rotations 0.5-3.5 deg, and a flipped quaternion sign
    directions = rng.normal(size=(64, 3))
    directions /= np.linalg.norm(directions, axis=1, keepdims=True)
    achieved = desired.copy()
    achieved[:, :3] += directions * rng.uniform(0.001, 0.009, (64, 1))
    angles = np.radians(rng.uniform(0.5, 3.5, 64))
    achieved[:, 3:] = [rotate(q, a * d) * (-1 if i % 2 else 1) for i, (q, a, d) in enumerate(zip(desired[:, 3:], angles, directions))]
    batch = env.compute_reward(achieved, desired, [{}] * 64)
    single = np.array([env.compute_reward(a, d, {}) for a, d in zip(achieved, desired)])
    assert batch.shape == (64,) and np.array_equal(batch, single)
    pos_err = np.linalg.norm(achieved[:, :3] - desired[:, :3], axis=1)
    rot_err = np.array([rotation_angle(a, d) for a, d in zip(achieved[:, 3:], desired[:, 3:])])
    assert np.allclose(rot_err, angles, atol=1e-9)
    if reward_type == "sparse":
        expected = np.where(SUCCESS.met(pos_err, rot_err), 0.0, -1.0)
        assert 10 < (expected == 0).sum() < 54  # both outcomes occur
    else:
        expected = -(pos_err + env.rotation_weight * rot_err)
    assert np.allclose(batch, expected, rtol=0, atol=1e-12)
    with pytest.raises(HikError, match=r"\(\.\.\., 7\)"):
        env.compute_reward(achieved[:, :6], desired[:, :6], {})


def test_goal_quaternions_are_signed_towards_home_and_continuous_near_it() -> None:
    from hik_sim.envs.actions import canonical_quaternion
    from hik_sim.envs.goal import hemisphere_quaternion

    env = gym.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta", ik="lm", goal_spread=0.1)
    home_quat = env.unwrapped.home_quat
    assert abs(home_quat[0]) < 1e-6  # the IRB120's tool points down at home: w = 0, where "w >= 0" flips the sign
    rng = np.random.default_rng(0)
    jumps, w_flips = [], 0
    for episode in range(3):
        obs, _ = env.reset(seed=episode)
        assert obs["desired_goal"][3:] @ home_quat >= 0
        previous = obs["achieved_goal"][3:]
        for _ in range(30):
            obs, *_ = env.step(rng.uniform(-1, 1, 6))
            quat = obs["achieved_goal"][3:]
            assert quat @ home_quat >= 0 and np.allclose(obs["observation"][-4:], quat)
            jumps.append(np.linalg.norm(quat - previous))
            w_flips += canonical_quaternion(quat) @ canonical_quaternion(previous) < 0
            previous = quat
    # a step turns the tool by at most ~0.17 rad (0.1 rad per axis), a quaternion by half that: no jump from q to -q
    assert max(jumps) < 0.2 and w_flips > 0, (max(jumps), w_flips)  # where the w >= 0 sign would have jumped
    quat = _goals(rng, 50)[:, 3:]
    signed = hemisphere_quaternion(quat, home_quat)
    assert np.all(signed @ home_quat >= 0) and np.allclose(np.abs(signed), np.abs(quat))
    assert np.allclose(rotation_angles(signed, quat), 0.0, atol=1e-7)  # the same orientations


def test_batched_rotation_angles_match_the_single_pose_formula() -> None:
    rng = np.random.default_rng(1)
    a, b = _goals(rng, 100)[:, 3:], _goals(rng, 100)[:, 3:]
    assert np.allclose(rotation_angles(a, b), [rotation_angle(x, y) for x, y in zip(a, b)], rtol=0, atol=1e-12)


def test_step_reward_is_compute_reward_of_the_observation() -> None:
    env = gym.make("hik_sim/ReachGoal-irb120-v0", reward_type="dense", goal_spread=0.05)
    obs, _ = env.reset(seed=2)
    for _ in range(5):
        obs, reward, terminated, truncated, info = env.step(env.action_space.sample())
        assert reward == pytest.approx(float(env.unwrapped.compute_reward(obs["achieved_goal"], obs["desired_goal"], info)), abs=1e-12)
        assert reward == pytest.approx(-(info["pos_err"] + 0.1 * info["rot_err"]), abs=1e-12) and not terminated


def _settle(env: gym.Env, action: np.ndarray, hold: int = 15) -> tuple[dict, dict]:
    obs, _, _, _, info = env.step(action)
    for _ in range(hold):  # a zero increment holds the target while the servos catch up
        obs, _, _, _, info = env.step(np.zeros(6))
    return obs, info


@pytest.mark.parametrize(("env_id", "ik"), [("hik_sim/Reach-irb120-v0", "lm"), ("hik_sim/Reach-panda-v0", "lm"),
                                            ("hik_sim/Track-irb120-v0", "lm")])
def test_ee_delta_moves_the_end_effector_by_the_commanded_increment(env_id: str, ik: str) -> None:
    env = gym.make(env_id, action_type="ee_delta", ik=ik)
    base = env.unwrapped
    assert env.action_space.shape == (6,)
    obs, _ = env.reset(seed=0)
    for action in (np.array([0.5, -0.3, 0.2, 0.0, 0.0, 0.0]), np.array([0.0, 0.0, 0.0, 0.0, 0.0, 1.0]),
                   np.array([0.0, 0.0, 0.0, 0.4, -0.6, 0.0])):
        pos0, quat0 = base.fk(base.joint_target)  # the pose the joint targets reach: the increment's origin
        obs, info = _settle(env, action)
        assert not info["ik_failed"] and info["ik_time"] > 0  # the zero increments are solved too
        moved = obs["ee_pos"] - pos0
        assert np.allclose(moved, EE_DELTA_POSITION * action[:3], atol=1e-3), moved  # within 1 mm of the asked 0-12 mm
        expected = rotate(quat0, EE_DELTA_ROTATION * action[3:])
        assert rotation_angle(obs["ee_quat"], expected) < math.radians(0.3)  # of an asked 0.1 rad (5.7 deg)
        assert rotation_angle(obs["ee_quat"], quat0) == pytest.approx(EE_DELTA_ROTATION * np.linalg.norm(action[3:]), abs=5e-3)


def test_ee_delta_with_the_shipped_hybrid_reports_its_latency() -> None:
    env = gym.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta")  # ik=None: the shipped hybrid
    env.reset(seed=0)
    pos0 = env.unwrapped.fk(env.unwrapped.joint_target)[0]
    _, _, _, _, info = env.step(np.array([1.0, 0, 0, 0, 0, 0]))
    assert 0 < info["ik_time"] < 1.0 and info["ik_failed"] is False
    assert np.allclose(env.unwrapped.fk(env.unwrapped.joint_target)[0] - pos0, [EE_DELTA_POSITION, 0, 0], atol=1e-4)


@pytest.mark.parametrize("action_type", ["joint_normalized", "ee_delta"])
def test_random_and_extreme_actions_never_leave_the_joint_limits(action_type: str) -> None:
    env = gym.make("hik_sim/Reach-irb120-v0", action_type=action_type, ik="lm" if action_type == "ee_delta" else None)
    base = env.unwrapped
    obs, _ = env.reset(seed=0)
    rng = np.random.default_rng(0)
    failures = 0
    for step in range(80):
        action = rng.uniform(-1, 1, env.action_space.shape) if step % 2 else np.sign(rng.normal(size=env.action_space.shape)) * 3.0
        obs, reward, terminated, truncated, info = env.step(action)  # 3.0: outside the space, clipped into it
        ctrl = base.data.ctrl[base.scene.chain_actuators]
        assert np.all(base.joint_target >= base.lower) and np.all(base.joint_target <= base.upper)
        assert np.all(ctrl >= base.lower) and np.all(ctrl <= base.upper)
        assert np.all(obs["joint_pos"] >= base.lower - 5e-3) and np.all(obs["joint_pos"] <= base.upper + 5e-3)
        assert np.isfinite(reward) and base.observation_space.contains(obs)
        failures += info["ik_failed"]
    if action_type == "ee_delta":  # 40 steps of up to 3.5 cm outwards: the arm runs into its limits and reach
        assert np.linalg.norm(obs["ee_pos"] - base.fk(np.asarray(base.robot.home))[0]) > 0.1


def test_joint_normalized_maps_minus_one_and_one_to_the_limits() -> None:
    env = gym.make("hik_sim/Reach-panda-v0", action_type="joint_normalized", max_joint_speed=None)
    base = env.unwrapped
    env.reset(seed=0)
    env.step(-np.ones(7))
    assert np.allclose(base.joint_target, base.lower)
    env.step(np.linspace(-1, 1, 7))
    assert np.allclose(base.joint_target, base.lower + np.linspace(0, 1, 7) * (base.upper - base.lower))


def test_ik_argument_takes_a_solver_a_network_or_a_name() -> None:
    from hik_sim.policies import load_pretrained
    from hik_sim.solvers.registry import make_solver

    for ik in (make_solver("lm", "irb120"), load_pretrained("irb120", "mlp"), "multistart"):
        env = gym.make("hik_sim/Reach-irb120-v0", action_type="ee_delta", ik=ik)
        env.reset(seed=0)
        pos0 = env.unwrapped.fk(env.unwrapped.joint_target)[0]
        *_, info = env.step(np.array([0.0, 0.5, 0.0, 0, 0, 0]))
        assert not info["ik_failed"]
        assert np.allclose(env.unwrapped.fk(env.unwrapped.joint_target)[0] - pos0, [0, 0.01, 0], atol=1e-3)
    with pytest.raises(HikError, match="unknown controller kind 'nope'"):
        gym.make("hik_sim/Reach-irb120-v0", action_type="ee_delta", ik="nope")
    with pytest.raises(HikError, match="ik must be"):
        gym.make("hik_sim/Reach-irb120-v0", action_type="ee_delta", ik=3)
    with pytest.raises(HikError, match="ee_delta"):
        gym.make("hik_sim/Reach-irb120-v0", ik="lm")


@pytest.mark.parametrize("env_id", ["hik_sim/Reach-v0", "hik_sim/Track-v0", "hik_sim/ReachGoal-v0"])
def test_bad_action_type_lists_the_valid_ones(env_id: str) -> None:
    with pytest.raises(HikError, match="action types are: joint, joint_normalized, ee_delta"):
        gym.make(env_id, robot="irb120", action_type="torque")
    assert ACTION_TYPES == ("joint", "joint_normalized", "ee_delta")


def test_bad_reward_type_and_goal_spread_say_what_is_valid() -> None:
    with pytest.raises(HikError, match="reward types are: sparse, dense"):
        gym.make("hik_sim/ReachGoal-irb120-v0", reward_type="shaped")
    with pytest.raises(HikError, match=r"goal_spread must be in \(0, 1\]"):
        gym.make("hik_sim/ReachGoal-irb120-v0", goal_spread=0.0)


def test_goal_spread_draws_goals_nearer_home() -> None:
    def mean_distance(spread: float) -> float:
        env = gym.make("hik_sim/ReachGoal-irb120-v0", goal_spread=spread)
        distances = []
        for seed in range(20):
            obs, _ = env.reset(seed=seed)
            distances.append(np.linalg.norm(obs["achieved_goal"][:3] - obs["desired_goal"][:3]))
        return float(np.mean(distances))

    near, far = mean_distance(0.05), mean_distance(1.0)
    assert near < 0.05 and far > 0.3, (near, far)


def test_terminate_on_success_ends_at_the_goal() -> None:
    env = gym.make("hik_sim/ReachGoal-irb120-v0", terminate_on_success=True, goal_spread=0.02, action_type="ee_delta", ik="lm")
    obs, _ = env.reset(seed=0)
    assert env.unwrapped.compute_terminated(obs["desired_goal"], obs["desired_goal"], {})
    terminated = False
    for _ in range(50):
        error = obs["desired_goal"][:3] - obs["achieved_goal"][:3]
        goal_quat, quat = obs["desired_goal"][3:], obs["achieved_goal"][3:]
        # rotation vector taking the achieved orientation to the goal: q_goal ⊗ q*
        w, x, y, z = goal_quat
        cw, cx, cy, cz = quat[0], -quat[1], -quat[2], -quat[3]
        delta = np.array([w * cw - x * cx - y * cy - z * cz, w * cx + x * cw + y * cz - z * cy,
                          w * cy - x * cz + y * cw + z * cx, w * cz + x * cy - y * cx + z * cw])
        delta *= np.sign(delta[0]) or 1.0
        angle = 2 * math.atan2(np.linalg.norm(delta[1:]), delta[0])
        rotvec = delta[1:] / max(np.linalg.norm(delta[1:]), 1e-12) * angle
        action = np.concatenate([error / EE_DELTA_POSITION, rotvec / EE_DELTA_ROTATION])
        obs, reward, terminated, truncated, info = env.step(np.clip(action, -1, 1))
        if terminated:
            break
    assert terminated and reward == 0.0 and info["is_success"]


def test_ee_delta_passes_check_env_with_record_ik_time_off() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        env = gym.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta", ik="lm", record_ik_time=False)
        check_env(env.unwrapped)
    assert [str(w.message) for w in caught] == []


@pytest.mark.slow  # 16 s on the shared 2-core machine, most of it SAC's gradient steps
def test_sac_with_her_runs_on_the_goal_env_and_relabels_with_compute_reward() -> None:
    sb3 = pytest.importorskip("stable_baselines3")
    import torch
    from stable_baselines3.her.her_replay_buffer import HerReplayBuffer

    threads = torch.get_num_threads()
    torch.set_num_threads(1)  # two threads on a shared 2-core machine are several times slower per gradient step
    try:
        env = gym.make("hik_sim/ReachGoal-irb120-v0", action_type="ee_delta", ik="lm", goal_spread=0.1)
        model = sb3.SAC("MultiInputPolicy", env, replay_buffer_class=HerReplayBuffer, replay_buffer_kwargs={"n_sampled_goal": 4},
                        learning_starts=150, batch_size=32, policy_kwargs={"net_arch": [32, 32]}, seed=0, device="cpu")
        model.learn(total_timesteps=250)
    finally:
        torch.set_num_threads(threads)
    assert model.num_timesteps == 250 and model.replay_buffer.size() == 250
    batch = model.replay_buffer.sample(256)  # 4 of 5 goals relabelled with achieved ones (HER's "future" strategy)
    expected = env.unwrapped.compute_reward(batch.next_observations["achieved_goal"].numpy(), batch.observations["desired_goal"].numpy(), {})
    assert np.array_equal(batch.rewards.numpy().ravel(), expected.astype(np.float32))
    assert set(np.unique(expected)) <= {0.0, -1.0}
    obs, _ = env.reset(seed=1)
    action, _ = model.predict(obs, deterministic=True)
    assert action.shape == (6,) and np.all(np.abs(action) <= 1)


@pytest.mark.slow  # two short SAC runs in two processes and their evaluations: about 40 s on the shared 2-core machine
def test_rl_reach_benchmark_quick_run_writes_its_record(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import importlib
    import json
    from pathlib import Path

    from hik_sim.kinematics.tolerances import LOOSE

    pytest.importorskip("stable_baselines3")
    monkeypatch.syspath_prepend(str(Path(__file__).parent.parent / "benchmarks"))  # --jobs' processes import it by name too
    bench = importlib.import_module("rl_reach")
    args = ["--steps", "60", "--seeds", "0", "--eval-every", "60", "--eval-episodes", "1", "--reward", "sparse", "--jobs", "2"]
    assert bench.main([*args, "--out", str(tmp_path)]) == 0
    record = json.loads((tmp_path / "rl_reach.json").read_text())
    assert [r["action_type"] for r in record["runs"]] == ["joint_normalized", "ee_delta"]
    for run in record["runs"]:
        assert [p["steps"] for p in run["curve"]] == [0, 60]
        assert all(0 <= p["success"] <= p["success_loose"] <= 1 and p["pos_err_mm"] > 0 for p in run["curve"])
        assert 0 <= run["her_rewards_at_zero"] <= 1  # the sparse reward's share of zeros in the HER buffer
    assert record["reward"] == "sparse" and record["sac"]["ent_coef"] == "auto_0.05" and record["normalize"]["norm_obs"]
    assert record["tolerance"] == {"name": "success", "position_m": SUCCESS.position, "rotation_rad": SUCCESS.rotation}
    assert record["evaluated_at"]["success_loose"] == {"position_m": LOOSE.position, "rotation_rad": LOOSE.rotation}
    hold, proportional = record["scripted"]["hold"], record["scripted"]["proportional"]
    assert proportional["success"] == 1.0 and proportional["pos_err_mm"] < 1.0  # the task is solvable through the ee_delta IK
    assert hold["success"] == 0.0 and hold["pos_err_mm"] > 10.0  # and holding home does not solve it
    joint, ee = record["runs"]
    assert joint["ik_time_median_ms"] == 0.0 and ee["ik_time_median_ms"] > 0  # only the ee_delta run solves IK
    markdown = (tmp_path / "rl_reach.md").read_text()
    assert "| `ee_delta` | sparse reward, success tolerance | 60 | 1 |" in markdown and (tmp_path / "rl_reach.png").stat().st_size > 10_000
