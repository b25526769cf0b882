"""Gymnasium environments and the IK controller: spec conformance, determinism, vector envs, bad input."""

from __future__ import annotations

import math
import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest
from conftest import USER_URDF, reach_successes
from gymnasium.utils.env_checker import check_env

import hik_sim.envs
from hik_sim.envs.track import TrackEnv
from hik_sim.envs.trajectories import TRAJECTORIES, Trajectory
from hik_sim.errors import HikError
from hik_sim.policies.controller import IKController
from hik_sim.robots import robot_names


def test_every_robot_has_both_environments_registered() -> None:
    for robot in robot_names():
        assert f"hik_sim/Reach-{robot}-v0" in hik_sim.envs.ENV_IDS
        assert f"hik_sim/Track-{robot}-v0" in hik_sim.envs.ENV_IDS
    assert {"hik_sim/Reach-v0", "hik_sim/Track-v0"} <= set(hik_sim.envs.ENV_IDS)


def test_registering_does_not_import_torch() -> None:
    code = "import sys, gymnasium, hik_sim.envs; print('torch' in sys.modules)"
    assert subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip() == "False"


@pytest.mark.parametrize("env_id", [i for i in hik_sim.envs.ENV_IDS if i.count("-") == 2])
def test_check_env_passes_and_renders(env_id: str) -> None:
    env = gym.make(env_id, render_mode="rgb_array", width=96, height=72)
    check_env(env.unwrapped)  # the render check too: every declared mode (rgb_array) renders headless
    env.reset(seed=0)
    frame = env.render()
    assert frame.shape == (72, 96, 3) and frame.std() > 5
    env.close()


@pytest.mark.parametrize("env_id", ["hik_sim/Reach-irb120-v0", "hik_sim/Track-irb120-v0", "hik_sim/ReachGoal-irb120-v0"])
def test_observations_are_finite_boxes_and_human_rendering_goes_through_gymnasium(env_id: str) -> None:
    env = gym.make(env_id)
    for box in env.observation_space.spaces.values():
        assert np.isfinite(box.low).all() and np.isfinite(box.high).all()
    assert env.unwrapped.metadata["render_modes"] == ["rgb_array"]
    with pytest.raises(HikError, match=r"render_mode='human' is not built into.*gymnasium.make.*pygame.*python -m hik_sim.viewer"):
        type(env.unwrapped)(robot="irb120", render_mode="human")
    pytest.importorskip("pygame")
    with pytest.warns(UserWarning, match="HumanRendering wrapper"):
        human = gym.make(env_id, render_mode="human")  # no window until the first render
    assert isinstance(human, gym.wrappers.HumanRendering) and human.unwrapped.render_mode == "rgb_array"
    assert gym.make(env_id).unwrapped.metadata["render_modes"] == ["rgb_array"]  # the wrapper copied, not changed, ours
    human.close()


@pytest.mark.slow  # a process under Xvfb: about 10 s
def test_human_rendering_under_xvfb_exits_cleanly(tmp_path) -> None:  # noqa: ANN001
    import shutil

    pytest.importorskip("pygame")
    if shutil.which("xvfb-run") is None:
        pytest.skip("xvfb-run is not installed (apt-get install xvfb)")
    script = tmp_path / "human.py"
    script.write_text("import gymnasium as gym, hik_sim\n"
                      "env = gym.make('hik_sim/Reach-irb120-v0', render_mode='human', width=160, height=120)\n"
                      "obs, _ = env.reset(seed=0)\n"
                      "for _ in range(5):\n    env.step(obs['joint_pos'])\n"
                      "env.close()\nprint('closed')\n")
    env = {k: v for k, v in __import__("os").environ.items() if k not in ("MUJOCO_GL", "PYOPENGL_PLATFORM", "DISPLAY")}
    done = subprocess.run(["xvfb-run", "-a", sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=env)
    assert done.returncode == 0 and "closed" in done.stdout, done.stderr[-2000:]


def test_observations_are_clipped_into_their_bounds() -> None:
    env = gym.make("hik_sim/Reach-irb120-v0", max_joint_speed=None)
    base = env.unwrapped
    obs, _ = env.reset(seed=0)
    assert base.position_bound == pytest.approx(1.5 * base.max_reach) and np.linalg.norm(obs["ee_pos"]) < base.max_reach + 1e-6
    for step in range(6):  # jumps across the whole range: the fastest joints the servos produce
        obs, *_ = env.step(base.upper if step % 2 else base.lower)
        assert env.observation_space.contains(obs)
    base.data.qvel[base.scene.chain_dof] = 1e3  # a velocity no servo produces reads as the bound
    assert np.allclose(base._observation()["joint_vel"], 50.0)


@pytest.mark.parametrize("kind", ["Reach", "Track"])
def test_generic_environments_take_a_robot_or_a_urdf(kind: str) -> None:
    env = gym.make(f"hik_sim/{kind}-v0", robot="panda")
    check_env(env.unwrapped, skip_render_check=True)
    if kind == "Reach":
        user = gym.make("hik_sim/Reach-v0", urdf=str(USER_URDF), base="base", ee="tool")
        check_env(user.unwrapped, skip_render_check=True)
        assert user.action_space.shape == (4,)
    else:  # the 4-joint test arm cannot hold an orientation along a path
        with pytest.raises(HikError, match="at least 6 joints"):
            gym.make("hik_sim/Track-v0", urdf=str(USER_URDF), base="base", ee="tool")
    with pytest.raises(HikError, match="registered robots are: irb120"):
        gym.make(f"hik_sim/{kind}-v0", robot="nope")
    with pytest.raises(HikError, match="robot=NAME"):
        gym.make(f"hik_sim/{kind}-v0")


def _rollout(env: gym.Env, seed: int, steps: int = 20) -> list[np.ndarray]:
    obs, _ = env.reset(seed=seed)
    rng = np.random.default_rng(0)
    out = [np.concatenate(list(obs.values()))]
    for _ in range(steps):
        obs, reward, *_ = env.step(env.action_space.low + rng.uniform(0, 1, env.action_space.shape) * (env.action_space.high - env.action_space.low))
        out.append(np.concatenate([*obs.values(), [reward]]))
    return out


@pytest.mark.parametrize("env_id", ["hik_sim/Reach-irb120-v0", "hik_sim/Track-talos-v0"])
def test_same_seed_same_episode(env_id: str) -> None:
    a, b = _rollout(gym.make(env_id), 3), _rollout(gym.make(env_id), 3)
    assert all(np.array_equal(x, y) for x, y in zip(a, b))
    c = _rollout(gym.make(env_id), 4)
    assert not np.array_equal(a[0], c[0])


def test_bad_actions_raise_and_out_of_range_is_clipped() -> None:
    env = gym.make("hik_sim/Reach-irb120-v0")
    env.reset(seed=0)
    with pytest.raises(HikError, match="finite"):
        env.step(np.full(6, np.nan))
    with pytest.raises(HikError, match="6 joint targets"):
        env.step(np.zeros(5))
    env.step(np.full(6, 100.0))
    ctrl = env.unwrapped.data.ctrl[env.unwrapped.scene.chain_actuators]
    assert np.all(ctrl <= env.unwrapped.upper)  # on its way to the upper limits, at the joint-speed limit
    unlimited = gym.make("hik_sim/Reach-irb120-v0", max_joint_speed=None)
    unlimited.reset(seed=0)
    unlimited.step(np.full(6, 100.0))
    assert np.allclose(unlimited.unwrapped.data.ctrl[unlimited.unwrapped.scene.chain_actuators], unlimited.unwrapped.upper)


@pytest.mark.parametrize("robot", robot_names())
def test_servo_targets_move_at_the_joint_speed_limit_and_joints_stay_inside_their_limits(robot: str) -> None:
    """A policy that jumps from one end of the range to the other: the servo targets follow at
    ``max_joint_speed`` and reach the action; the joints end no more than a few mrad outside their
    limits (MuJoCo's limits are soft). Without the limit TALOS's wrist overshot by 0.1 rad."""
    from hik_sim.envs.base import MAX_JOINT_SPEED

    env = gym.make(f"hik_sim/Reach-{robot}-v0")
    base = env.unwrapped
    obs, _ = env.reset(seed=0)
    lower, upper = base.lower, base.upper
    actuators = base.scene.chain_actuators
    worst = 0.0
    for step in range(60):
        target = np.where(np.arange(len(lower)) % 2 == (step // 20) % 2, upper, lower)  # alternating ends, every 20 steps
        before = base.data.ctrl[actuators].copy()
        obs, *_ = env.step(target)
        moved = np.abs(base.data.ctrl[actuators] - before)
        assert np.all(moved <= MAX_JOINT_SPEED * base.dt + 1e-9)
        worst = max(worst, float(np.max(np.maximum(lower - obs["joint_pos"], obs["joint_pos"] - upper))))
    assert worst < 5e-3, f"{robot}: a joint ended {worst:.4f} rad outside its limits"


def test_reach_goals_are_reachable_by_construction_or_marked_unreachable() -> None:
    env = gym.make("hik_sim/Reach-irb120-v0", unreachable_probability=0.5)
    reach = env.unwrapped.max_reach
    seen = set()
    for seed in range(30):
        obs, info = env.reset(seed=seed)
        seen.add(info["reachable"])
        if info["reachable"]:
            pos, quat = env.unwrapped.fk(env.unwrapped.goal_q)
            assert np.allclose(pos, obs["goal_pos"]) and np.allclose(quat, obs["goal_quat"])
        else:
            assert np.linalg.norm(obs["goal_pos"]) > 1.15 * reach
    assert seen == {True, False}


def test_lm_controller_reaches_and_holds() -> None:
    env = gym.make("hik_sim/Reach-irb120-v0")
    assert reach_successes(env, IKController.pretrained("irb120", "lm"), range(5)) == 5
    assert env.unwrapped.steps_in_tolerance >= env.unwrapped.hold_steps  # ended by holding the goal


def test_unreachable_goal_holds_a_safe_command_and_never_leaves_the_limits() -> None:
    env = gym.make("hik_sim/Reach-irb120-v0", unreachable_probability=1.0)
    controller = IKController.pretrained("irb120", "lm", joint_velocity_limit=2.0, dt=env.unwrapped.dt)
    obs, info = env.reset(seed=0)
    lower, upper = env.unwrapped.lower, env.unwrapped.upper
    for _ in range(50):
        action = controller(obs)
        assert np.all(action >= lower) and np.all(action <= upper)
        assert np.all(np.abs(action - obs["joint_pos"]) <= 2.0 * env.unwrapped.dt + 1e-12)
        obs, reward, terminated, truncated, info = env.step(action)
        assert np.isfinite(reward) and not terminated
    assert controller.failures > 0


@pytest.mark.parametrize("vector", [gym.vector.SyncVectorEnv, gym.vector.AsyncVectorEnv])
def test_vector_envs_of_four_with_a_batched_controller(vector) -> None:  # noqa: ANN001
    envs = vector([lambda: gym.make("hik_sim/Reach-irb120-v0") for _ in range(4)])
    controller = IKController.pretrained("irb120", "lm")
    obs, _ = envs.reset(seed=0)
    for _ in range(30):
        actions = controller(obs)
        assert actions.shape == (4, 6)
        obs, rewards, terminated, truncated, infos = envs.step(actions)
    assert rewards.shape == (4,) and np.isfinite(rewards).all()
    envs.close()


def test_record_video_wrapper(tmp_path) -> None:  # noqa: ANN001
    import imageio.v3 as iio

    env = gym.wrappers.RecordVideo(gym.make("hik_sim/Reach-irb120-v0", render_mode="rgb_array", width=96, height=72),
                                   str(tmp_path), episode_trigger=lambda episode: True, disable_logger=True)
    env.reset(seed=0)
    for _ in range(12):
        env.step(env.action_space.sample())
    env.close()
    (video,) = tmp_path.glob("*.mp4")
    assert len(list(iio.imiter(video))) >= 12


@pytest.mark.parametrize("kind", TRAJECTORIES)
def test_trajectories_start_at_the_centre_and_have_the_asked_speed(kind: str) -> None:
    rng = np.random.default_rng(0)
    trajectory = Trajectory.random_waypoints(0.1, 0.1, rng) if kind == "waypoints" else Trajectory(kind, 0.1, 0.1)
    offset, _ = trajectory.at(0.0)
    assert np.allclose(offset, 0.0)
    times = np.linspace(0.0, 20.0, 20001)
    points = np.array([trajectory.at(t)[0] for t in times])
    velocities = np.array([trajectory.at(t)[1] for t in times])
    assert np.allclose(np.gradient(points, times, axis=0)[5:-5], velocities[5:-5], atol=2e-3)  # velocity is the derivative
    assert np.abs(np.linalg.norm(velocities, axis=1).mean() - 0.1) < 0.01
    assert np.linalg.norm(points, axis=1).max() <= 2 * 0.1 + 1e-9
    with pytest.raises(HikError, match="trajectories are"):
        Trajectory("spiral", 0.1, 0.1)


@pytest.mark.parametrize("kind", TRAJECTORIES)
def test_track_goal_moves_with_its_velocity(kind: str) -> None:
    env = gym.make("hik_sim/Track-irb120-v0", trajectory=kind, speed=0.1, size=0.08)
    obs, info = env.reset(seed=1)
    assert info["pos_err"] < 1e-4 and info["size"] <= 0.08
    previous = obs["goal_pos"]
    obs, *_ = env.step(obs["joint_pos"])
    dt = env.unwrapped.dt
    assert np.allclose((obs["goal_pos"] - previous) / dt, obs["goal_vel"], atol=0.02)
    assert math.isclose(np.linalg.norm(obs["goal_quat"]), 1.0)


def test_track_step_before_reset_says_so() -> None:
    env = TrackEnv(robot="irb120")  # unwrapped: gym.make's order check would answer first
    with pytest.raises(HikError, match=r"call reset\(\) before step\(\)"):
        env.step(np.zeros(6))
    env.close()
