"""The conventions users expect: ``import hik_sim`` registers every environment, torch-free; Gymnasium docstrings;
the code passes mypy under the settings pyproject.toml records."""

from __future__ import annotations

import inspect
import json
import subprocess
import sys
from pathlib import Path

import pytest

GYMNASIUM_SECTIONS = ("Description", "Action Space", "Observation Space", "Rewards", "Starting State", "Episode End",
                      "Arguments", "Version History")


def _in_fresh_interpreter(code: str) -> str:
    return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.strip()


def test_import_hik_sim_registers_every_id_without_torch_or_mujoco() -> None:
    code = ("import sys, json, hik_sim, gymnasium as gym; "
            "print(json.dumps({'torch': 'torch' in sys.modules, 'mujoco': 'mujoco' in sys.modules, "
            "'ids': [k for k in gym.registry if k.startswith('hik_sim')]}))")
    found = json.loads(_in_fresh_interpreter(code))
    from hik_sim.robots import robot_names

    expected = {f"hik_sim/{kind}-{robot}-v0" for robot in robot_names() for kind in ("Reach", "Track", "ReachGoal")}
    expected |= {"hik_sim/Reach-v0", "hik_sim/Track-v0", "hik_sim/ReachGoal-v0"}
    assert not found["torch"] and not found["mujoco"]
    assert set(found["ids"]) == expected


def test_envs_package_lists_the_ids_import_hik_sim_registered() -> None:
    import gymnasium as gym

    import hik_sim.envs

    registered = [env_id for env_id in gym.registry if env_id.startswith("hik_sim/")]
    assert sorted(registered) == sorted(hik_sim.envs.ENV_IDS)
    assert gym.registry["hik_sim/Reach-irb120-v0"].max_episode_steps == hik_sim.envs.REACH_STEPS
    assert gym.registry["hik_sim/Track-irb120-v0"].max_episode_steps == hik_sim.envs.TRACK_STEPS


def test_make_works_after_import_hik_sim_alone() -> None:
    code = ("import hik_sim, gymnasium as gym; env = gym.make('hik_sim/Reach-irb120-v0'); "
            "obs, info = env.reset(seed=0); obs, *_ = env.step(env.action_space.sample()); "
            "print(type(env.unwrapped).__name__, env.action_space.shape, sorted(obs)); env.close()")
    out = _in_fresh_interpreter(code)
    assert out.startswith("ReachEnv (6,)") and "'goal_pos'" in out


@pytest.mark.parametrize("name", ["ReachEnv", "TrackEnv", "ReachGoalEnv"])
def test_environment_docstrings_have_gymnasium_sections(name: str) -> None:
    from hik_sim.envs.goal import ReachGoalEnv
    from hik_sim.envs.reach import ReachEnv
    from hik_sim.envs.track import TrackEnv

    doc = inspect.getdoc({"ReachEnv": ReachEnv, "TrackEnv": TrackEnv, "ReachGoalEnv": ReachGoalEnv}[name])
    headings = [line[3:].strip() for line in doc.splitlines() if line.startswith("## ")]
    assert headings == list(GYMNASIUM_SECTIONS)


@pytest.mark.slow  # about 25 s of CPU on a first run (a new clone); under 10 s once .mypy_cache holds the last run
def test_mypy_passes(monkeypatch: pytest.MonkeyPatch) -> None:
    """``mypy`` from the repository's root (pyproject.toml's [tool.mypy]: the hik_sim package) finds nothing.

    mypy comes with the test extra (``pip install -e ".[test]"``); without it the test is skipped.
    Its cache is the default ``.mypy_cache`` (git-ignored), shared with a ``mypy`` run by hand, so a
    later run checks only what changed.
    """
    api = pytest.importorskip("mypy.api")
    monkeypatch.chdir(Path(__file__).resolve().parents[1])  # where pyproject.toml is
    stdout, stderr, status = api.run([])
    assert status == 0, f"mypy reports findings (docs/design.md):\n{stdout}{stderr}"
