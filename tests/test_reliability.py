"""Reliability: concurrent writers, run folders, user robots, and bad input that must be a HikError."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_malformed_urdf import TETRA_ASCII_STL

from hik_sim import meshes


def test_two_processes_converting_one_mesh_do_not_clash(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import trimesh

    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "cache"))
    source = tmp_path / "part.stl"
    source.write_text(TETRA_ASCII_STL)  # ASCII STL: converted, not linked
    export = trimesh.Trimesh.export

    def export_while_another_process_converts(self, path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        written = export(self, path, *args, **kwargs)  # this process's file is written, not yet renamed ...
        monkeypatch.setattr(trimesh.Trimesh, "export", export)
        meshes.mujoco_mesh(source)  # ... when another process converts the same mesh from start to end
        return written

    monkeypatch.setattr(trimesh.Trimesh, "export", export_while_another_process_converts)
    converted = meshes.mujoco_mesh(source)
    assert meshes._is_binary_stl(converted.path)  # whole, as written by one of the two
    assert sorted(p.suffix for p in converted.path.parent.iterdir()) == [".json", ".stl"]  # no temporary left behind


def test_the_evaluators_multistart_does_not_replay_its_targets() -> None:
    # `evaluate --robot irb120 --policy multistart --ik-targets 500` at the default seed 0 said 100.0 %, 0.000 mm
    from hik_sim.evaluate import EvalConfig, build_policy, ik_accuracy
    from hik_sim.robots import get_robot

    robot = get_robot("irb120")
    metrics, pos_err, _ = ik_accuracy(build_policy("multistart", robot), robot, 500, EvalConfig().seed)
    assert 0.9 < metrics["success_5mm_2deg"] < 1.0
    assert not (pos_err == 0).any()


# Run folders: one per run, never mixed with another run's files, nothing left by a failed run.


def test_two_runs_started_in_the_same_second_get_a_folder_each(tmp_path: Path) -> None:
    from hik_sim.evaluate import claim_run_folder

    name = tmp_path / "runs" / "irb120-20250101-120000"
    first, made_first = claim_run_folder(name, unique=True)
    second, made_second = claim_run_folder(name, unique=True)
    assert first == name and second == name.with_name(name.name + "-2") and made_first and made_second
    assert first.is_dir() and second.is_dir()


def test_an_explicit_out_must_be_a_new_or_empty_writable_folder(tmp_path: Path) -> None:
    from hik_sim.errors import OutputError
    from hik_sim.evaluate import claim_run_folder

    used = tmp_path / "used"
    used.mkdir()
    (used / "hybrid_reach.mp4").write_bytes(b"stale")
    with pytest.raises(OutputError, match=r"already holds files \(hybrid_reach.mp4\).*new or empty folder"):
        claim_run_folder(used)
    (tmp_path / "report.txt").write_text("x")
    with pytest.raises(OutputError, match="is an existing file; give --out a new or empty folder"):
        claim_run_folder(tmp_path / "report.txt")
    with pytest.raises(OutputError, match=r"cannot create run folder .*\(Not a directory\); give --out a folder that can be written"):
        claim_run_folder(tmp_path / "report.txt" / "run")
    empty = tmp_path / "empty"
    empty.mkdir()
    assert claim_run_folder(empty) == (empty, False)


def test_the_evaluator_cli_reports_a_bad_out_and_a_failed_run_leaves_no_folder(tmp_path: Path, capsys,  # noqa: ANN001
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    from hik_sim.evaluate import main

    (tmp_path / "taken").write_text("x")
    with pytest.raises(SystemExit) as exited:
        main(["--robot", "irb120", "--policy", "lm", "--out", str(tmp_path / "taken"), "--no-progress"])
    assert exited.value.code == 2 and "is an existing file" in capsys.readouterr().err
    monkeypatch.chdir(tmp_path)  # the default run folder is runs/eval/<robot>-<date> under the working folder
    with pytest.raises(SystemExit):
        main(["--robot", "irb120", "--policy", "transformer", "--no-progress"])
    assert "unknown policy 'transformer'" in capsys.readouterr().err
    assert not (tmp_path / "runs").exists()  # neither the run folder nor the parents it made
    with pytest.raises(SystemExit):
        main(["--robot", "irb120", "--policy", "transformer", "--no-progress", "--out", str(tmp_path / "mine")])
    assert not (tmp_path / "mine").exists()


def test_a_six_joint_user_robot_tracks_with_the_policies_that_need_no_network(tmp_path: Path) -> None:
    import json

    from hik_sim.evaluate import main
    from hik_sim.robots import get_robot

    out = tmp_path / "run"  # the IRB120's URDF loaded as a user would: robot 'abb_irb120', no shipped network
    argv = ["--urdf", str(get_robot("irb120").urdf), "--base", "base_link", "--ee", "tool0", "--env", "track", "--no-video",
            "--ik-targets", "100", "--track-episodes", "1", "--track-seconds", "3", "--no-progress", "--out", str(out)]
    assert main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert report["robot"]["name"] == "abb_irb120" and set(report["policies"]) == {"lm", "multistart"}  # the defaults
    for name, entry in report["policies"].items():
        assert entry["track"]["pos_max_mm"] < 20, name  # warm-started from the current joints: no jumps between branches


def test_a_controller_for_any_robot_spec() -> None:
    import gymnasium as gym
    from conftest import reach_successes, user_robot

    import hik_sim.envs  # noqa: F401
    from hik_sim.errors import HikError
    from hik_sim.policies.controller import IKController

    robot = user_robot()
    env = gym.make("hik_sim/Reach-v0", robot=robot)
    assert reach_successes(env, IKController.pretrained(robot, "lm"), range(3)) == 3
    assert reach_successes(env, IKController.pretrained(robot, "multistart"), range(2)) == 2
    with pytest.raises(HikError, match="needs a network, and none is shipped for robot 'user_arm'; kinds without a network: "
                                       "multistart, lm, dm_control"):
        IKController.pretrained(robot, "hybrid")


# Bad input that used to end in a raw traceback.


def test_scene_check_with_no_samples_is_a_clear_error(capsys) -> None:  # noqa: ANN001
    from hik_sim.scene import main

    with pytest.raises(SystemExit) as exited:
        main(["--robot", "irb120", "--samples", "0"])
    assert exited.value.code == 2
    assert "needs at least 1 sample" in capsys.readouterr().err


def test_an_env_too_wide_for_the_offscreen_buffer_fails_when_made() -> None:
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.errors import SceneError

    with pytest.raises(SceneError, match=r"render size 5000x240 px is outside the scene's offscreen buffer: width must be 1\.\.1280"):
        gym.make("hik_sim/Reach-irb120-v0", render_mode="rgb_array", width=5000, height=240)
    with pytest.raises(SceneError, match=r"render size 320x0 px .* height 1\.\.960 px"):
        gym.make("hik_sim/Track-irb120-v0", render_mode="rgb_array", width=320, height=0)
    gym.make("hik_sim/Reach-irb120-v0", width=5000).close()  # nothing is rendered without a render mode


def test_names_longer_than_the_os_allows_are_clear_errors(tmp_path: Path) -> None:
    from hik_sim.errors import OutputError, UrdfError
    from hik_sim.evaluate import claim_run_folder
    from hik_sim.robots import robot_from_urdf

    too_long = "u" * 300  # the mesh names inside a URDF: see test_malformed_urdf's mesh-name-too-long
    with pytest.raises(UrdfError, match=r"cannot be used \(File name too long\); each name in a path may be at most \d+ bytes"):
        robot_from_urdf(tmp_path / f"{too_long}.urdf", "base", "tool")
    with pytest.raises(OutputError, match=r"cannot create run folder .*\(File name too long\)"):
        claim_run_folder(tmp_path / too_long)
