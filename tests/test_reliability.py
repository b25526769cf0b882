"""Reliability: concurrent writers, run folders, user robots, and bad input that must be a HikError."""

from __future__ import annotations

from pathlib import Path

import pytest
from test_malformed_urdf import TETRA_ASCII_STL

from hik_sim.robots import meshes


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


def test_an_empty_or_relative_cache_variable_falls_back_to_the_default_cache(tmp_path: Path,
                                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.chdir(tmp_path)  # a cache in the current folder would land here
    default = tmp_path / "home" / ".cache" / "hik_sim"
    for variables in ({"HIK_SIM_CACHE": "", "XDG_CACHE_HOME": ""}, {"HIK_SIM_CACHE": "  ", "XDG_CACHE_HOME": "relative"}):
        for name, value in variables.items():
            monkeypatch.setenv(name, value)
        assert meshes.cache_root() == default
        assert meshes.cache_dir() == default / "meshes" and not (tmp_path / "meshes").exists()
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert meshes.cache_root() == tmp_path / "xdg" / "hik_sim"
    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "own"))
    assert meshes.cache_root() == tmp_path / "own"


def test_a_mesh_cache_that_cannot_be_written_is_a_mesh_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    from hik_sim.errors import MeshError

    source = tmp_path / "part.stl"
    source.write_text(TETRA_ASCII_STL)  # ASCII STL: converted into the cache

    def disk_full(target: Path, write) -> None:  # noqa: ANN001
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "cache"))
    monkeypatch.setattr(meshes, "write_atomically", disk_full)
    with pytest.raises(MeshError, match=r"cannot write the mesh cache .*cache/meshes: No space left on device; free space "
                                        r"there or set HIK_SIM_CACHE to a writable folder"):
        meshes.mujoco_mesh(source)
    (tmp_path / "a_file").write_text("x")
    monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "a_file"))
    with pytest.raises(MeshError, match=r"cannot write the mesh cache .*a_file/meshes: (Not a directory|File exists)"):
        meshes.mujoco_mesh(source)
    with pytest.raises(MeshError, match=r"cannot read mesh .*missing.stl: No such file"):
        meshes.mujoco_mesh(tmp_path / "missing.stl")


def test_written_files_get_the_umasks_permissions_so_a_shared_cache_is_readable(tmp_path: Path,
                                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    import os
    import stat

    from hik_sim.atomic import write_atomically

    def mode(path: Path) -> int:
        return stat.S_IMODE(path.stat().st_mode)

    previous = os.umask(0o027)
    try:
        write_atomically(tmp_path / "new.txt", lambda path: path.write_text("x"))
        assert mode(tmp_path / "new.txt") == 0o640  # as open() would make it (mkstemp alone: 0o600)
        (tmp_path / "new.txt").chmod(0o604)
        write_atomically(tmp_path / "new.txt", lambda path: path.write_text("y"))
        assert mode(tmp_path / "new.txt") == 0o604  # a rewritten file keeps its mode
        os.umask(0o022)
        monkeypatch.setenv("HIK_SIM_CACHE", str(tmp_path / "cache"))
        source = tmp_path / "part.stl"
        source.write_text(TETRA_ASCII_STL)
        converted = meshes.mujoco_mesh(source)
        assert mode(converted.path) == 0o644 and mode(converted.path.with_suffix(".json")) == 0o644
    finally:
        os.umask(previous)


def test_every_file_a_training_run_writes_gets_the_umasks_permissions(tmp_path: Path) -> None:
    import os
    import stat

    from conftest import robot_by_id

    from hik_sim.learning.train import TrainConfig, train

    previous = os.umask(0o022)
    try:
        config = TrainConfig(model="mlp", steps=2, batch=32, eval_size=32, eval_every=1, normalizer_samples=1000, device="cpu",
                             model_options=(("hidden", 16), ("layers", 2)), keep_best=True)
        train(robot_by_id("irb120"), config, out=tmp_path / "run" / "net.pt", progress=False)
    finally:
        os.umask(previous)
    modes = {path.name: stat.S_IMODE(path.stat().st_mode) for path in (tmp_path / "run").iterdir()}
    written = ("net.pt", "net.json", "net.curve.csv", "net.curve.png", "net.best.pt", "net.best.json")
    assert modes == dict.fromkeys(written, 0o644)


def test_the_evaluators_multistart_does_not_replay_its_targets() -> None:
    # `evaluate --robot irb120 --policy multistart --ik-targets 500` at the default seed 0 said 100.0 %, 0.000 mm
    from hik_sim.evaluation.evaluate import EvalConfig, build_policy, ik_accuracy
    from hik_sim.robots import get_robot

    robot = get_robot("irb120")
    metrics, pos_err, _ = ik_accuracy(build_policy("multistart", robot), robot, 500, EvalConfig().seed)
    assert 0.9 < metrics["success_5mm_2deg"] < 1.0
    assert not (pos_err == 0).any()


# Run folders: one per run, never mixed with another run's files, nothing left by a failed run.


def test_two_runs_started_in_the_same_second_get_a_folder_each(tmp_path: Path) -> None:
    from hik_sim.evaluation.evaluate import claim_run_folder

    name = tmp_path / "runs" / "irb120-20250101-120000"
    first, made_first = claim_run_folder(name, unique=True)
    second, made_second = claim_run_folder(name, unique=True)
    assert first == name and second == name.with_name(name.name + "-2") and made_first and made_second
    assert first.is_dir() and second.is_dir()


def test_an_explicit_out_must_be_a_new_or_empty_writable_folder(tmp_path: Path) -> None:
    from hik_sim.errors import OutputError
    from hik_sim.evaluation.evaluate import claim_run_folder

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
    from hik_sim.evaluation.evaluate import main

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


@pytest.mark.slow
def test_a_six_joint_user_robot_tracks_with_the_policies_that_need_no_network(tmp_path: Path) -> None:
    import json

    from hik_sim.evaluation.evaluate import main
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
    from hik_sim.sim import main

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
    from hik_sim.evaluation.evaluate import claim_run_folder
    from hik_sim.robots import robot_from_urdf

    too_long = "u" * 300  # the mesh names inside a URDF: see test_malformed_urdf's mesh-name-too-long
    with pytest.raises(UrdfError, match=r"cannot be used \(File name too long\); each name in a path may be at most \d+ bytes"):
        robot_from_urdf(tmp_path / f"{too_long}.urdf", "base", "tool")
    with pytest.raises(OutputError, match=r"cannot create run folder .*\(File name too long\)"):
        claim_run_folder(tmp_path / too_long)


def test_a_training_run_overwrites_only_what_a_run_wrote(tmp_path: Path) -> None:
    from hik_sim.errors import CheckpointError, OutputError
    from hik_sim.learning.train_paths import check_output_path, check_run_paths

    (tmp_path / "notes.json").write_text('{"mine": true}')  # the card of notes.pt would replace it
    with pytest.raises(CheckpointError, match=r"out .*notes.pt: the run would overwrite .*notes.json, which is not written"):
        check_output_path(tmp_path / "notes.pt")
    (tmp_path / "plot.curve.csv").write_text("x,y\n1,2\n")  # so would its curve
    with pytest.raises(CheckpointError, match=r"would overwrite .*plot.curve.csv, which is not"):
        check_output_path(tmp_path / "plot.pt")
    assert check_output_path(tmp_path / "notes.pt", force=True) == tmp_path / "notes.pt"
    assert (tmp_path / "notes.json").read_text() == '{"mine": true}'  # checking writes nothing
    with pytest.raises(CheckpointError, match=r"^out .*: the name 'o+…o+\.pt' is 304 bytes long"):
        check_run_paths(tmp_path / ("o" * 301 + ".pt"))
    with pytest.raises(OutputError, match=r"cannot write tensorboard .*notes.json/tb: it lies under .*notes.json, which is a file"):
        check_run_paths(None, tensorboard=tmp_path / "notes.json" / "tb")


# ---------------------------------------------------------------------------------------------------------------------
# A corpus of hostile input, per entry point. Each entry: what is given, and what the HikError (or, from the command
# line, the one `error:` line with exit code 2) must say. Add a row to extend it. Rows marked KNOWN are bugs in files
# this suite's author could not change (see docs/reliability.md); they are strict xfails, so fixing one shows up here.
# ---------------------------------------------------------------------------------------------------------------------

import math  # noqa: E402

import numpy as np  # noqa: E402
import torch  # noqa: E402

from hik_sim.errors import HikError  # noqa: E402


def KNOWN(reason: str):  # noqa: ANN201, N802 - a corpus row that fails today, in a file outside this suite's reach
    return pytest.mark.xfail(strict=True, reason=reason)


# Command lines: module, argv (after the module's safe defaults), and a regex the error line must match.

TRAIN_DEFAULTS = ["--steps", "1", "--eval-size", "10", "--no-progress"]  # nothing below may get as far as training
EVAL_DEFAULTS = ["--policy", "lm", "--no-video", "--ik-targets", "10", "--episodes", "1", "--track-episodes", "1",
                 "--track-seconds", "1.5", "--no-progress"]
SCENE_DEFAULTS = ["--samples", "10"]

CLI_CORPUS = [
    ("train", ["--robot", "nope"], r"unknown robot 'nope'; registered robots are: irb120"),
    ("train", ["--robot", ""], r"give --robot NAME \(irb120, panda"),
    ("train", ["--steps", "0"], r"steps must be at least 1, got 0"),
    ("train", ["--steps", "abc"], r"argument --steps: invalid int value: 'abc'"),
    ("train", ["--batch", "-3"], r"batch, eval_size and eval_every must be at least 1"),
    ("train", ["--eval-size", "0"], r"eval_size .* must be at least 1"),
    ("train", ["--lr", "nan"], r"lr and grad_clip must be positive"),
    ("train", ["--lr", "-1"], r"lr and grad_clip must be positive"),
    ("train", ["--lr", "inf"], r"lr .*finite"),
    ("train", ["--warmup-steps", "-1"], r"warmup_steps >= 0; .*warmup_steps=-1"),
    ("train", ["--minutes", "nan"], r"minutes must be positive, got nan"),
    ("train", ["--minutes", "-5"], r"minutes must be positive, got -5"),
    ("train", ["--checkpoint-minutes", "0"], r"checkpoint_minutes must be positive"),
    ("train", ["--entropy-weight", "nan"], r"entropy_weight finite"),
    ("train", ["--hypothesis-mix", "2"], r"hypothesis_mix must be in \[0, 1\], got 2.0"),
    ("train", ["--device", "tpu"], r"device must be auto, cpu, cuda or cuda:N, got 'tpu'"),
    ("train", ["--seed", "nan"], r"argument --seed: invalid int value: 'nan'"),
    ("train", ["--fix-joint", "joint_1=nan"], r"fixed value of joint 'joint_1' must be finite, got nan"),
    ("train", ["--fix-joint", "nope=0"], r"cannot fix joints \['nope'\]: not in the chain; chain joints are: joint_1"),
    ("train", ["--fix-joint", "joint_1"], r"--fix-joint must look like NAME=VALUE, got 'joint_1'"),
    ("train", ["--fix-joint", "joint_1=99"], r"fixed value 99.0 of joint 'joint_1' is outside its limits"),
    ("train", ["--fix-joint", "joint_1=abc"], r"--fix-joint"),
    ("train", ["--model-option", "nope=1"], r"bad options for model 'harmoatt' .*unexpected keyword argument 'nope'"),
    ("train", ["--model-option", "hypotheses=0"], r"hypotheses must be at least 1, got 0"),
    ("train", ["--model-option", "hypotheses=nan"], r"hypotheses must be"),
    ("train", ["--model", "mlp", "--model-option", "hidden=0"], r"hidden"),
    ("train", ["--model", "mlp", "--model-option", "layers=-1"], r"layers"),
    ("train", ["--out", "{tmp}/model.json"], r"ends in .json, the name of its card: the card would overwrite the weights"),
    ("train", ["--out", "{tmp}"], r"is a folder; give a file path such as"),
    ("train", ["--out", "{tmp}/file.txt/model.pt"], r"cannot write checkpoint .*cannot be made or written"),
    ("train", ["--resume", "{tmp}/missing.pt"], r"checkpoint not found: .*missing.pt"),
    ("train", ["--resume", "{tmp}/file.txt"], r"is not a readable hik_sim checkpoint"),
    ("train", ["--init-from", "{tmp}/missing.pt"], r"checkpoint not found"),
    ("train", ["--urdf", "{tmp}/missing.urdf", "--base", "a", "--ee", "b"], r"URDF file not found: .*missing.urdf"),
    ("train", ["--urdf", "{tmp}/file.txt", "--base", "a", "--ee", "b"], r"file.txt"),
    ("train", ["--out", "{tmp}/" + "a" * 300 + ".pt"], r"--out .*: the name 'a+…a+\.pt' is 303 bytes long; this file system "
                                                      r"allows \d+ per name, less 32 for the files written beside it"),
    ("train", ["--resume", "{tmp}/" + "r" * 300 + ".pt"], r"--resume .*: the name 'r+…r+\.pt' is 303 bytes long"),
    ("train", ["--init-from", "{tmp}/" + "i" * 300 + ".pt"], r"--init-from .*: the name 'i+…i+\.pt' is 303 bytes long"),
    ("train", ["--tensorboard", "{tmp}/" + "t" * 300], r"--tensorboard .*: the name 't+…t+' is 300 bytes long"),
    ("train", ["--out", "{tmp}/file.txt"], r"--out .*file.txt: the run would overwrite .*file.txt, which is not written by a "
                                           r"hik_sim run; give another path, or add --force"),
    ("train", ["--out", "{pretrained}/irb120/mlp.pt"], r"--out .*mlp.pt is inside the package's shipped networks .* or add --force"),
    ("train", ["--tensorboard", "{tmp}/file.txt/tb"], r"cannot write --tensorboard .*tb: it lies under .*file.txt, which is a "
                                                      r"file, not a folder"),
    ("train", ["--batch", "1e9"], r"argument --batch: invalid int value: '1e9'"),
    ("train", ["--batch", "1000000000"], r"batch \(--batch\) must be in \[1, 1,048,576\], got 1,000,000,000"),
    ("train", ["--eval-size", "1000000000"], r"eval_size \(--eval-size\) must be in \[1, 1,000,000\], got 1,000,000,000"),
    ("train", ["--model-option", "blocks=1000000000"], r"model option blocks \(--model-option blocks=N\) must be at most 64, "
                                                       r"got 1,000,000,000"),
    ("train", ["--model", "mlp", "--model-option", "hidden=1e9"], r"model option hidden .* must be at most 16,384"),
    ("train", ["--model", "cycleik", "--model-option", "layers=[64, 1000000]"], r"model option layers .* at most 16,384 each"),
    ("train", ["--lr", "1e30"], r"lr \(--lr\) must be in \(0, 1\], got 1e\+30"),
    ("train", ["--entropy-weight", "-11"], r"entropy_weight \(--entropy-weight\) must be in \[-10, 10\], got -11"),
    ("train", ["--eval-seconds", "0"], r"eval_seconds must be positive and finite, got 0.0"),
    ("evaluate", ["--robot", "nope"], r"unknown robot 'nope'; registered robots are"),
    ("evaluate", ["--episodes", "0"], r"episodes, track_episodes and ik_targets must be at least 1"),
    ("evaluate", ["--ik-targets", "-5"], r"ik_targets must be at least 1"),
    ("evaluate", ["--ik-targets", "nan"], r"argument --ik-targets: invalid int value: 'nan'"),
    ("evaluate", ["--track-seconds", "nan"], r"track_seconds above 1 s"),
    ("evaluate", ["--track-seconds", "inf"], r"track_seconds must be finite, got inf"),
    ("evaluate", ["--speed", "nan", "--env", "track"], r"trajectory speed and size must be positive and finite, got nan m/s"),
    ("evaluate", ["--speed", "-1", "--env", "track"], r"trajectory speed and size must be positive and finite, got -1.0 m/s"),
    ("evaluate", ["--seed", "-1"], r"seed must be >= 0, got -1"),
    ("evaluate", ["--device", "tpu"], r"device must be cpu, cuda or cuda:N, got 'tpu'"),
    ("evaluate", ["--trajectory", "nope"], r"argument --trajectory: invalid choice: 'nope'"),
    ("evaluate", ["--policy", "transformer"], r"unknown policy 'transformer'; policies are: harmoatt, mlp, closed_loop, hybrid"),
    ("evaluate", ["--policy", "{tmp}/missing.pt"], r"checkpoint not found: .*missing.pt"),
    ("evaluate", ["--checkpoint", "{tmp}/missing.pt"], r"checkpoint not found: .*missing.pt"),
    ("evaluate", ["--checkpoint", "{tmp}/file.txt"], r"--checkpoint takes a checkpoint file \(.pt\)"),
    ("evaluate", ["--policy", "{pretrained}/g1/mlp_seed.safetensors"], r"checkpoint for robot 'g1' does not fit robot 'irb120'"),
    ("evaluate", ["--out", "{tmp}/file.txt"], r"is an existing file; give --out a new or empty folder"),
    ("evaluate", ["--out", "{tmp}/run/report.json"], r"--out is the run folder .* looks like a file name"),
    ("evaluate", ["--suite", "paper", "--out", "{tmp}/paper.md"], r"--out is the run folder .* looks like a file name"),
    ("evaluate", ["--urdf", "{irb120_urdf}", "--base", "base_link", "--ee", "tool0", "--policy", "hybrid"],
     r"policy 'hybrid' needs a network, and none is shipped for robot 'abb_irb120': give the seed network"),
    ("scene", ["--robot", "nope"], r"unknown robot 'nope'"),
    ("scene", ["--size", "0x0"], r"--size must be at least 1x1 pixels, got '0x0'"),
    ("scene", ["--size", "axb"], r"--size must look like 640x480, got 'axb'"),
    ("scene", ["--size", "5000x5000", "--png", "{tmp}/a.png"], r"render size 5000x5000 must be within 1..1280 x 1..960"),
    ("scene", ["--samples", "0"], r"needs at least 1 sample"),
    ("scene", ["--samples", "nan"], r"argument --samples: invalid int value: 'nan'"),
    ("scene", ["--camera", "nope", "--png", "{tmp}/b.png"], r"unknown camera 'nope'; cameras are: workspace, overview"),
    ("scene", ["--png", "{tmp}/picture.json"], r"--png writes a PNG picture: give a path ending in .png"),
    ("scene", ["--xml", "{tmp}/file.txt/scene.xml"], r"cannot write --xml .*file.txt' is a file, not a folder"),
    ("scene", ["--png", "{tmp}/file.txt/scene.png"], r"cannot write --png .*file.txt' is a file, not a folder"),
    ("robots", ["--robot", "nope"], r"unknown robot 'nope'"),
    ("robots", ["--robot", ""], r"give --robot NAME \(irb120, panda"),
    ("robots", ["--urdf", "{tmp}/missing.urdf", "--base", "a", "--ee", "b"], r"URDF file not found"),
    ("robots", ["--urdf", "{tmp}", "--base", "a", "--ee", "b"], r"is a folder, not a URDF file"),
    ("robots", ["--urdf", "", "--base", "a", "--ee", "b"], r"the URDF path must be a file path .* got ''"),
    ("robots", ["--urdf", "{tmp}/arm.urdf"], r"--urdf needs --base LINK and --ee LINK"),
    ("robots", ["--base", "a"], r"--base and --ee go with --urdf PATH"),
    ("robots", ["--urdf", "{irb120_urdf}", "--base", "base_link", "--ee", "nope"], r"end-effector link 'nope' is not a link .*links are"),
]

CLI_MAIN = {"train": "hik_sim.learning.train_cli", "evaluate": "hik_sim.evaluation.evaluate", "scene": "hik_sim.sim", "robots": "hik_sim.robots.__main__"}
CLI_DEFAULTS = {"train": TRAIN_DEFAULTS, "evaluate": EVAL_DEFAULTS, "scene": SCENE_DEFAULTS, "robots": []}


@pytest.mark.parametrize(("command", "argv", "message"), CLI_CORPUS,
                         ids=lambda v: " ".join(v) if isinstance(v, list) else (v if len(v) < 20 else ""))
def test_a_command_given_bad_arguments_exits_2_with_one_error_line(command: str, argv: list[str], message: str, tmp_path: Path,
                                                                   capsys, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    import importlib
    import re

    from hik_sim.policies import PRETRAINED_DIR
    from hik_sim.robots import get_robot

    monkeypatch.chdir(tmp_path)  # any default run folder lands here
    (tmp_path / "file.txt").write_text("not a checkpoint, not a URDF")
    where = {"tmp": str(tmp_path), "pretrained": str(PRETRAINED_DIR), "irb120_urdf": str(get_robot("irb120").urdf)}
    argv = [arg.format(**where) for arg in argv]
    defaults = CLI_DEFAULTS[command] + (["--out", str(tmp_path / "out" / "m.pt")] if command == "train" else [])
    defaults += ["--out", str(tmp_path / "eval")] if command == "evaluate" else []
    with pytest.raises(SystemExit) as exited:
        importlib.import_module(CLI_MAIN[command]).main(defaults + argv)  # argparse: the case's own value comes last and wins
    err = capsys.readouterr().err
    assert exited.value.code == 2, err
    assert "Traceback" not in err
    errors = [line for line in err.splitlines() if re.match(r"^(error:|python -m [\w.]+: error:)", line)]
    assert len(errors) == 1, err
    assert re.search(message, errors[0]), errors[0]


# Python API: every solver and the network's own solve, given targets that are not targets.

HOSTILE_TARGETS = [
    ("position (3,)", lambda: (torch.tensor([0.4, 0.0, 0.5]), torch.tensor([1.0, 0, 0, 0])), r"targets must be positions \(B, 3\)"),
    ("position (1, 4)", lambda: (torch.zeros(1, 4), torch.tensor([[1.0, 0, 0, 0]])), r"must be positions \(B, 3\) .*got \(1, 4\)"),
    ("quaternion (1, 3)", lambda: (torch.zeros(1, 3), torch.zeros(1, 3)), r"quaternions \(B, 4\), got \(1, 3\) and \(1, 3\)"),
    ("batch sizes differ", lambda: (torch.zeros(2, 3), torch.tensor([[1.0, 0, 0, 0]])), r"got \(2, 3\) and \(1, 4\)"),
    ("3-D batch", lambda: (torch.zeros(1, 1, 3), torch.zeros(1, 1, 4)), r"got \(1, 1, 3\) and \(1, 1, 4\)"),
    ("NaN position", lambda: (torch.tensor([[math.nan, 0, 0.5]]), torch.tensor([[1.0, 0, 0, 0]])), r"must be finite"),
    ("inf quaternion", lambda: (torch.tensor([[0.4, 0, 0.5]]), torch.tensor([[math.inf, 0, 0, 0]])), r"must be finite"),
    ("zero quaternion", lambda: (torch.tensor([[0.4, 0, 0.5]]), torch.zeros(1, 4)), r"quaternions must be non-zero \(rows \[0\]"),
    ("1e-20 quaternion", lambda: (torch.tensor([[0.4, 0, 0.5]]), torch.full((1, 4), 1e-20)), r"must be non-zero"),
    ("position 1e30 m", lambda: (torch.tensor([[1e30, 0, 0]]), torch.tensor([[1.0, 0, 0, 0]])), r"within 10000 m of the chain's base"),
    ("position 1e300 m", lambda: (torch.tensor([[1e300, 0, 0]], dtype=torch.float64), torch.tensor([[1.0, 0, 0, 0]])), r"within 10000 m"),
    ("strings", lambda: ([["a", "b", "c"]], [[1.0, 0, 0, 0]]), r"target positions must be an array of real numbers, got list"),
    ("ragged lists", lambda: ([[0.4, 0.0], [0.1]], [[1.0, 0, 0, 0]]), r"target positions must be an array of real numbers"),
    ("None", lambda: (None, None), r"target positions must be an array of real numbers, got NoneType"),
    ("booleans", lambda: (torch.ones(1, 3, dtype=torch.bool), torch.ones(1, 4, dtype=torch.bool)), r"real numbers .*got dtype torch.bool"),
    ("complex", lambda: (torch.ones(1, 3, dtype=torch.complex64), torch.ones(1, 4, dtype=torch.complex64)), r"got dtype torch.complex64"),
]
SOLVER_NAMES = ["NeuralIK", "closed_loop", "HybridIK", "MultistartIK", "LMRefiner", "SingleTargetIK", "network.solve", "network.solve_all"]


@pytest.fixture(scope="module")
def solvers() -> dict[str, object]:
    from hik_sim.kinematics.chain import Chain
    from hik_sim.policies import load_pretrained
    from hik_sim.robots import get_robot
    from hik_sim.solvers.hybrid import HybridIK, HybridPlan
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.neural import NeuralIK
    from hik_sim.solvers.restarts import MultistartIK
    from hik_sim.solvers.single_target_ik import SingleTargetIK, SingleTargetPlan

    chain = Chain(get_robot("irb120"))
    one, four = load_pretrained("irb120", "harmoatt"), load_pretrained("irb120", "harmoatt_4answers")
    return {"NeuralIK": NeuralIK(one, chain).solve, "closed_loop": NeuralIK(four, chain, corrections=2).solve,
            "HybridIK": HybridIK(four, LMRefiner(chain), plan=HybridPlan(restarts=1)).solve, "MultistartIK": MultistartIK(LMRefiner(chain), starts=2).solve,
            "LMRefiner": LMRefiner(chain).solve, "SingleTargetIK": SingleTargetIK(chain, four, plan=SingleTargetPlan(restarts=1)).solve,
            "network.solve": one.solve, "network.solve_all": four.solve_all, "chain": chain}


@pytest.mark.parametrize("solver", SOLVER_NAMES)
@pytest.mark.parametrize(("case", "targets", "message"), HOSTILE_TARGETS, ids=[c[0] for c in HOSTILE_TARGETS])
def test_a_solver_given_bad_targets_raises_a_hik_error_naming_them(solvers: dict, solver: str, case: str, targets,  # noqa: ANN001
                                                                   message: str) -> None:
    with pytest.raises(HikError, match=message):
        solvers[solver](*targets())


ODD_BUT_VALID_TARGETS = [  # each must be answered, finite and inside the limits
    ("nested lists", lambda: ([[0.4, 0.0, 0.5]], [[1.0, 0, 0, 0]])),
    ("numpy arrays", lambda: (np.array([[0.4, 0.0, 0.5]]), np.array([[1.0, 0, 0, 0]]))),
    ("integer tensors", lambda: (torch.tensor([[0, 0, 1]]), torch.tensor([[1, 0, 0, 0]]))),
    ("float16", lambda: (torch.tensor([[0.4, 0.0, 0.5]], dtype=torch.float16), torch.tensor([[1.0, 0, 0, 0]], dtype=torch.float16))),
    ("quaternion of length 1e300", lambda: (torch.tensor([[0.4, 0.0, 0.5]], dtype=torch.float64),  # |q|² overflowed to a zero quaternion
                                            torch.tensor([[1e300, 1e300, 0, 0]], dtype=torch.float64))),
    ("unreachable, 1 km away", lambda: (torch.tensor([[1000.0, 0, 0]]), torch.tensor([[1.0, 0, 0, 0]]))),
    ("empty batch", lambda: (torch.zeros(0, 3), torch.zeros(0, 4))),
]


@pytest.mark.parametrize("solver", SOLVER_NAMES)
@pytest.mark.parametrize(("case", "targets"), ODD_BUT_VALID_TARGETS, ids=[c[0] for c in ODD_BUT_VALID_TARGETS])
def test_a_solver_answers_odd_but_valid_targets_inside_the_limits(solvers: dict, solver: str, case: str, targets) -> None:  # noqa: ANN001
    pos, quat = targets()
    answer = solvers[solver](pos, quat)
    q = answer if isinstance(answer, torch.Tensor) else answer.q
    q = q.reshape(-1, q.shape[-1])
    lower, upper = solvers["chain"].limits(q.dtype)  # a network answers in float32, inside the limits rounded to float32
    assert q.shape[0] == len(pos) * (4 if solver == "network.solve_all" else 1)
    assert bool(torch.isfinite(q).all()) and bool(((q >= lower) & (q <= upper)).all())
    if not isinstance(answer, torch.Tensor):
        assert bool(torch.isfinite(answer.pos_err).all() & torch.isfinite(answer.rot_err).all())
        if case == "quaternion of length 1e300" and bool(answer.success.all()):  # success must mean the real target: (w, x) = (1, 1)/√2
            reached = solvers["chain"].fk(answer.q).quat
            assert abs(abs(float(reached[0, 0])) - math.sqrt(0.5)) < 0.05
        if case == "unreachable, 1 km away":
            assert not bool(answer.success.any())


def _solver_constructions() -> list:
    from hik_sim.errors import SolverError

    def chain(name: str = "irb120"):  # noqa: ANN202
        from hik_sim.kinematics.chain import Chain
        from hik_sim.robots import get_robot

        return Chain(get_robot(name))

    def network(robot: str = "irb120", name: str = "harmoatt"):  # noqa: ANN202
        from hik_sim.policies import load_pretrained

        return load_pretrained(robot, name)

    from hik_sim.kinematics.chain import Chain
    from hik_sim.kinematics.tolerances import Tolerance
    from hik_sim.solvers.hybrid import HybridIK, HybridPlan
    from hik_sim.solvers.lm import LMRefiner
    from hik_sim.solvers.lm_rules import LMRules
    from hik_sim.solvers.neural import NeuralIK
    from hik_sim.solvers.restarts import MultistartIK
    from hik_sim.solvers.single_target_ik import SingleTargetIK

    def _dm_control():  # noqa: ANN202
        from hik_sim.evaluation.evaluate import build_policy
        from hik_sim.robots import get_robot

        return build_policy("dm_control", get_robot("irb120")).solver

    return [
        ("Tolerance(-1 m)", lambda: Tolerance(-1.0), HikError, r"tolerances must be positive"),
        ("Tolerance(NaN)", lambda: Tolerance(0.005, math.nan), HikError, r"tolerances must be positive"),
        ("LMRefiner(max_iterations=0)", lambda: LMRefiner(chain(), max_iterations=0), HikError, r"max_iterations must be >= 1"),
        ("LMRules(damping=NaN)", lambda: LMRefiner(chain(), rules=LMRules(damping=math.nan)), HikError, r"damping must be positive"),
        ("MultistartIK(starts=0)", lambda: MultistartIK(LMRefiner(chain()), starts=0), HikError, r"starts must be at least 1, got 0"),
        ("NeuralIK(corrections=-1)", lambda: NeuralIK(network(), chain(), corrections=-1), HikError, r"corrections must be >= 0"),
        ("HybridPlan(restarts=-1)", lambda: HybridIK(network(), LMRefiner(chain()), plan=HybridPlan(restarts=-1)), HikError, r"restarts must be >= 0"),
        ("NeuralIK(g1 network, irb120 chain)", lambda: NeuralIK(network("g1"), chain()), SolverError,
         r"the network does not fit the chain of robot 'irb120': its joints are \['left_shoulder_pitch_joint'"),
        ("HybridIK(irb120 network, g1 chain)", lambda: HybridIK(network(), LMRefiner(chain("g1"))), SolverError, r"does not fit the chain of robot 'g1'"),
        ("SingleTargetIK(q6-fixed network)", lambda: SingleTargetIK(chain(), network(name="harmoatt_q6fixed")), HikError,
         r"give it a network without fixed joints"),
        ("LMRefiner q_init of strings", lambda: LMRefiner(chain()).solve([[0.4, 0, 0.5]], [[1.0, 0, 0, 0]], [["a"] * 6]), HikError,
         r"q_init must be an array of real numbers"),
        ("LMRefiner q_init (1, 5)", lambda: LMRefiner(chain()).solve([[0.4, 0, 0.5]], [[1.0, 0, 0, 0]], torch.zeros(1, 5)), HikError,
         r"q_init must be finite with shape \(1, 6\), got \(1, 5\)"),
        ("MultistartIK q_init NaN", lambda: MultistartIK(LMRefiner(chain())).solve([[0.4, 0, 0.5]], [[1.0, 0, 0, 0]],
                                                                                  torch.full((1, 6), math.nan)), HikError, r"q_init must be finite"),
        ("SingleTargetIK.solve_one position (2,)", lambda: SingleTargetIK(chain()).solve_one([0.4, 0.0], [1.0, 0, 0, 0]), HikError,
         r"targets must be positions \(B, 3\)"),
        ("SingleTargetIK.solve_one strings", lambda: SingleTargetIK(chain()).solve_one("abc", [1.0, 0, 0, 0]), HikError,
         r"target position must be an array of real numbers, got str"),
        ("SingleTargetIK.solve_one q_init None-filled", lambda: SingleTargetIK(chain()).solve_one([0.4, 0, 0.5], [1.0, 0, 0, 0], [None] * 6),
         HikError, r"q_init must be an array of real numbers"),
        ("DmControlIK q_init (1, 5)", lambda: _dm_control().solve([[0.4, 0, 0.5]], [[1.0, 0, 0, 0]], torch.zeros(1, 5)), HikError,
         r"q_init must be finite with shape \(1, 6\), got \(1, 5\)"),
        ("DmControlIK q_init NaN", lambda: _dm_control().solve([[0.4, 0, 0.5]], [[1.0, 0, 0, 0]], torch.full((1, 6), math.nan)),
         HikError, r"q_init must be finite"),
        ("Chain of a robot's name", lambda: Chain("irb120"), HikError, r"Chain takes a RobotSpec .*got 'irb120'"),
        ("build_scene of a robot's name", lambda: __import__("hik_sim.sim", fromlist=["build_scene"]).build_scene("irb120"), HikError,
         r"build_scene takes a RobotSpec .*got 'irb120'"),
        ("Chain.sample(-1)", lambda: chain().sample(-1, torch.Generator()), HikError, r"batch must be a whole number >= 0, got -1"),
        ("Chain.fk of a list", lambda: chain().fk([[0.0] * 6]), HikError, r"joint angles must be a torch.Tensor of shape \(B, 6\)"),
        ("Chain.fk of NaN", lambda: chain().fk(torch.full((2, 6), math.nan)), HikError, r"joint values must be finite"),
        ("Chain.fk of integers", lambda: chain().fk(torch.zeros(2, 6, dtype=torch.int64)), HikError, r"must be float32 or float64"),
    ]


@pytest.mark.parametrize(("case", "make", "error", "message"), _solver_constructions(), ids=[c[0] for c in _solver_constructions()])
def test_a_solver_built_or_called_wrongly_raises_a_hik_error(case: str, make, error: type, message: str) -> None:  # noqa: ANN001
    with pytest.raises(error, match=message):
        make()


URDF_ARGUMENTS = [
    ("path None", lambda urdf: (None, "base_link", "tool0"), r"the URDF path must be a file path .* got None"),
    ("path 3", lambda urdf: (3, "base_link", "tool0"), r"the URDF path must be a file path .* got 3"),
    ("path ''", lambda urdf: ("", "base_link", "tool0"), r"got ''"),
    ("a folder", lambda urdf: (urdf.parent, "base_link", "tool0"), r"is a folder, not a URDF file"),
    ("missing file", lambda urdf: (urdf.with_name("missing.urdf"), "base_link", "tool0"), r"URDF file not found"),
    ("unknown base link", lambda urdf: (urdf, "nope", "tool0"), r"base link 'nope' is not a link of irb120.urdf; links are: base_link"),
    ("base None", lambda urdf: (urdf, None, "tool0"), r"base link None is not a link"),
    ("base = end-effector", lambda urdf: (urdf, "base_link", "base_link"), r"both 'base_link'"),
    ("base below the end-effector", lambda urdf: (urdf, "tool0", "base_link"), r"is not an ancestor of end-effector link"),
]


@pytest.mark.parametrize(("case", "arguments", "message"), URDF_ARGUMENTS, ids=[c[0] for c in URDF_ARGUMENTS])
def test_robot_from_urdf_given_bad_arguments_raises_a_hik_error(case: str, arguments, message: str) -> None:  # noqa: ANN001
    from hik_sim.robots import get_robot, robot_from_urdf

    with pytest.raises(HikError, match=message):
        robot_from_urdf(*arguments(get_robot("irb120").urdf))


def test_robot_from_urdf_refuses_bad_keyword_values() -> None:
    from hik_sim.robots import get_robot, robot_from_urdf

    urdf = get_robot("irb120").urdf
    for home, message in (([0.0], r"home must map joint names"), ({"joint_1": "x"}, r"must be a number"),
                          ({"joint_1": math.nan}, r"must be finite"), ({"nope": 0.0}, r"home names unknown joints \['nope'\]")):
        with pytest.raises(HikError, match=message):
            robot_from_urdf(urdf, "base_link", "tool0", home=home)


@pytest.mark.parametrize(("options", "message"), [({"shadow_size": 0}, r"shadow_size must be a whole number of pixels >= 1, got 0"),
                                                  ({"offscreen_size": (0, 0)}, r"offscreen_size must be \(width, height\) .* got \(0, 0\)"),
                                                  ({"offscreen_size": (100,)}, r"got \(100,\)"),
                                                  ({"min_armature": math.nan}, r"min_armature must be finite and >= 0, got nan"),
                                                  ({"timestep": math.nan}, r"timestep must be in \(0, 0.01\] s, got nan"),
                                                  ({"natural_frequency": math.inf}, r"natural_frequency must be in \(0, 125\] Hz")])
def test_scene_options_out_of_range_raise_a_hik_error(options: dict, message: str) -> None:
    from hik_sim.sim import SceneOptions

    with pytest.raises(HikError, match=message):
        SceneOptions(**options)


# Environments: keyword arguments at gymnasium.make, and actions (documented: out-of-range values are clipped into the
# limits; NaN/inf, a wrong shape or anything but real numbers raise a HikError).

ENV_KWARGS = [
    ({"robot": "nope"}, r"unknown robot 'nope'; registered robots are"),
    ({"robot": ["irb120"]}, r"unknown robot \['irb120'\]; registered robots are"),
    ({"robot": None}, r"give robot=NAME \(a registered robot\) or urdf=PATH"),
    ({"foo": 1}, r"unknown keyword arguments \['foo'\] for ReachEnv; keywords are: robot, urdf, base, ee, hold_steps"),
    ({"frame_skip": 0}, r"frame_skip must be >= 1"),
    ({"frame_skip": 1.5}, r"frame_skip must be a whole number of physics steps >= 1, got 1.5"),
    ({"max_joint_speed": 0.0}, r"max_joint_speed must be a positive finite speed \[rad/s\] or None \(no limit\), got 0.0"),
    ({"max_joint_speed": math.nan}, r"max_joint_speed must be a positive finite speed .*got nan"),
    ({"max_joint_speed": "fast"}, r"max_joint_speed must be .*got 'fast'"),
    ({"max_joint_speed": True}, r"max_joint_speed must be .*got True"),
    ({"position_tolerance": -1.0}, r"tolerances positive"),
    ({"rotation_weight": math.nan}, r"rotation_weight >= 0"),
    ({"hold_steps": 0}, r"hold_steps must be >= 1"),
    ({"unreachable_probability": math.nan}, r"unreachable_probability in \[0, 1\]"),
    ({"start_noise": math.inf}, r"start_noise finite and >= 0, got 5, 0.0 and inf"),
    ({"render_mode": "nope"}, r"render_mode must be one of \['rgb_array'\] or None, got 'nope'"),
    ({"render_mode": "rgb_array", "camera": "nope"}, r"unknown camera 'nope'; cameras are: workspace, overview"),
    ({"render_mode": "rgb_array", "width": -1}, r"render size -1x360 px is outside the scene's offscreen buffer"),
    ({"robot": None, "urdf": "/nope/arm.urdf", "base": "a", "ee": "b"}, r"URDF file not found"),
]


@pytest.mark.parametrize(("kwargs", "message"), ENV_KWARGS, ids=[str(k) for k, _ in ENV_KWARGS])
def test_an_env_made_with_bad_keywords_raises_a_hik_error(kwargs: dict, message: str) -> None:
    import warnings

    import gymnasium as gym

    import hik_sim.envs  # noqa: F401

    with warnings.catch_warnings(), pytest.raises(HikError, match=message):
        warnings.simplefilter("ignore")  # gymnasium warns about an unknown render mode before the env refuses it
        gym.make("hik_sim/Reach-v0", **({"robot": "irb120"} | kwargs)).reset(seed=0)


@pytest.mark.parametrize(("kwargs", "message"), [({"speed": math.nan}, r"speed and size must be positive and finite, got nan m/s"),
                                                 ({"size": math.inf}, r"got 0.1 m/s and inf m"),
                                                 ({"trajectory": "nope"}, r"unknown trajectory 'nope'; trajectories are: circle")])
def test_a_track_env_made_with_bad_keywords_raises_a_hik_error(kwargs: dict, message: str) -> None:
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401

    with pytest.raises(HikError, match=message):
        gym.make("hik_sim/Track-irb120-v0", **kwargs).reset(seed=0)


BAD_ACTIONS = [
    ("NaN", np.full(6, np.nan), r"action must be finite"),
    ("inf", np.full(6, -np.inf), r"action must be finite"),
    ("5 joints", np.zeros(5), r"action must be 6 joint targets \[rad\] for 'irb120', got shape \(5,\)"),
    ("(1, 6)", np.zeros((1, 6)), r"got shape \(1, 6\)"),
    ("a scalar", 0.0, r"got shape \(\)"),
    ("None", None, r"real joint targets .*got NoneType of dtype object"),
    ("strings", ["a"] * 6, r"real joint targets .*got list of dtype <U1"),
    ("booleans", np.ones(6, dtype=bool), r"got ndarray of dtype bool"),
    ("complex", np.ones(6, dtype=complex), r"got ndarray of dtype complex128"),
]


@pytest.fixture(scope="module")
def reach_env():  # noqa: ANN201
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401

    env = gym.make("hik_sim/Reach-irb120-v0")
    env.reset(seed=0)
    yield env
    env.close()


@pytest.mark.parametrize(("case", "action", "message"), BAD_ACTIONS, ids=[c[0] for c in BAD_ACTIONS])
def test_a_bad_action_raises_a_hik_error(reach_env, case: str, action, message: str) -> None:  # noqa: ANN001
    with pytest.raises(HikError, match=message):
        reach_env.step(action)


@pytest.mark.parametrize("action", [np.full(6, 100.0), np.full(6, -1e300), [0.0] * 6, np.zeros(6, dtype=np.int32)],
                         ids=["100 rad", "-1e300 rad", "a list", "integers"])
def test_an_out_of_range_or_plain_action_is_clipped_into_the_limits(reach_env, action) -> None:  # noqa: ANN001
    obs, reward, *_ = reach_env.step(action)
    base = reach_env.unwrapped
    ctrl = base.data.ctrl[base.scene.chain_actuators]
    assert np.all(ctrl >= base.lower) and np.all(ctrl <= base.upper)  # clipped, as documented
    assert np.isfinite(reward) and all(np.isfinite(v).all() for v in obs.values())


# Controllers: observations that are not an environment's.

CONTROLLER_OBSERVATIONS = [
    ("None", lambda obs: None, r"an observation must be a hik_sim environment's: a dict with joint_pos, .*got NoneType"),
    ("a list", lambda obs: [1.0, 2.0], r"got list"),
    ("no goal", lambda obs: {k: v for k, v in obs.items() if k != "goal_pos"}, r"got \['ee_pos', 'ee_quat', 'goal_quat'"),
    ("NaN goal", lambda obs: obs | {"goal_pos": np.array([np.nan, 0.0, 0.5])}, r"targets must be finite"),
    ("zero goal quaternion", lambda obs: obs | {"goal_quat": np.zeros(4)}, r"quaternions must be non-zero"),
    ("goal 1e9 m away", lambda obs: obs | {"goal_pos": np.array([1e9, 0.0, 0.0])}, r"within 10000 m"),
    ("5 joints", lambda obs: obs | {"joint_pos": np.zeros(5)}, r"joint_pos must hold the 6 chain joints of 'irb120', got shape \(5,\)"),
]


@pytest.mark.parametrize("kind", ["lm", "multistart", "harmoatt"])
@pytest.mark.parametrize(("case", "observation", "message"), CONTROLLER_OBSERVATIONS, ids=[c[0] for c in CONTROLLER_OBSERVATIONS])
def test_a_controller_given_a_bad_observation_raises_a_hik_error(reach_env, kind: str, case: str, observation,  # noqa: ANN001
                                                                message: str) -> None:
    from hik_sim.policies.controller import IKController

    obs, _ = reach_env.reset(seed=0)
    with pytest.raises(HikError, match=message):
        IKController.pretrained("irb120", kind)(observation(obs))


@pytest.mark.parametrize(("robot", "kind", "message"), [(None, "lm", r"robot must be a registered robot's name or a RobotSpec, got None"),
                                                        ("nope", "lm", r"unknown robot 'nope'"),
                                                        ("irb120", "transformer", r"unknown controller kind 'transformer'; kinds are: hybrid")])
def test_a_controller_for_a_bad_robot_or_kind_raises_a_hik_error(robot, kind: str, message: str) -> None:  # noqa: ANN001
    from hik_sim.policies.controller import IKController

    with pytest.raises(HikError, match=message):
        IKController.pretrained(robot, kind)


# Checkpoints: files that are not what they claim. Each maker writes one into a folder and returns its path.


def _payload() -> dict:
    from hik_sim.learning.checkpoint import read_checkpoint
    from hik_sim.policies import pretrained_path

    return read_checkpoint(pretrained_path("irb120", "mlp"))


def _saved(folder: Path, name: str, payload: object) -> Path:
    torch.save(payload, folder / name)
    return folder / name


class _Exploit:  # what a malicious checkpoint carries: unpickling it would run a command
    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self):  # noqa: ANN204
        import os

        return (os.system, (f"touch {self.marker}",))


def _with_card(**changes: object):  # noqa: ANN202
    def make(folder: Path) -> Path:
        payload = _payload()
        payload["card"] = dict(payload["card"]) | changes
        return _saved(folder, "card.pt", payload)

    return make


def _with_weight(value: float):  # noqa: ANN202
    def make(folder: Path) -> Path:
        payload = _payload()
        name = next(k for k, v in payload["state_dict"].items() if v.is_floating_point() and v.numel() > 1)
        payload["state_dict"][name] = payload["state_dict"][name].clone()
        payload["state_dict"][name].view(-1)[1] = value
        return _saved(folder, "weights.pt", payload)

    return make


def _truncated(folder: Path) -> Path:
    from hik_sim.policies import pretrained_path

    (folder / "cut.pt").write_bytes(pretrained_path("irb120", "mlp").read_bytes()[:2000])
    return folder / "cut.pt"


def _written(name: str, data: bytes):  # noqa: ANN202
    def make(folder: Path) -> Path:
        (folder / name).write_bytes(data)
        return folder / name

    return make


def _pickled_exploit(folder: Path) -> Path:
    payload = _payload()
    payload["extra"] = _Exploit(folder / "EXPLOITED")
    return _saved(folder, "exploit.pt", payload)


def _raw_pickle_exploit(folder: Path) -> Path:
    import pickle

    (folder / "raw.pt").write_bytes(pickle.dumps(_Exploit(folder / "EXPLOITED")))
    return folder / "raw.pt"


def _another_robots(folder: Path) -> Path:
    from hik_sim.policies import pretrained_path

    return pretrained_path("g1", "mlp")


CHECKPOINT_CORPUS = [
    ("truncated", _truncated, r"cut.pt is not a readable hik_sim checkpoint"),
    ("empty file", _written("empty.pt", b""), r"is not a readable hik_sim checkpoint"),
    ("text", _written("text.pt", b"hello"), r"is not a readable hik_sim checkpoint"),
    ("a card, not the weights", _written("model.json", b"{}"), r"is not a readable hik_sim checkpoint"),
    ("another format", lambda folder: _saved(folder, "other.pt", _payload() | {"format": "other/1"}),
     r"is not a hik_sim checkpoint \(expected format 'hik_sim.ik_network/1'\)"),
    ("torch tensors only", lambda folder: _saved(folder, "plain.pt", {"weights": torch.zeros(3)}), r"is not a hik_sim checkpoint"),
    ("a pickled exploit beside the weights", _pickled_exploit, r"exploit.pt is not a readable hik_sim checkpoint \(UnpicklingError"),
    ("a pickled exploit alone", _raw_pickle_exploit, r"raw.pt is not a readable hik_sim checkpoint \(UnpicklingError"),
    ("NaN weights", _with_weight(math.nan), r"weights hold NaN or inf \(\S+\); the network would answer NaN"),
    ("inf weights", _with_weight(math.inf), r"weights hold NaN or inf"),
    ("empty weights", lambda folder: _saved(folder, "none.pt", _payload() | {"state_dict": {}}),
     r"the weights do not fit the network its card describes"),
    ("card of another model kind", _with_card(model="cnn"), r"unknown model 'cnn'; models are: harmoatt, mlp"),
    ("card with NaN workspace bounds", _with_card(pos_min=[math.nan] * 3), r"workspace bounds must be two \(3,\) tensors"),
    ("card that is a string", lambda folder: _saved(folder, "s.pt", _payload() | {"card": "x"}), r"not a hik_sim checkpoint card"),
    ("another robot's checkpoint", _another_robots, r"checkpoint for robot 'g1' does not fit robot 'irb120'"),
    ("missing", lambda folder: folder / "missing.pt", r"checkpoint not found: .*missing.pt"),
    ("weights that are a list", lambda folder: _saved(folder, "list.pt", _payload() | {"state_dict": [1, 2]}),
                 r"weights"),
    ("card limits that are a string", _with_card(lower="abc"), r"lower"),
    ("path None", lambda folder: None, r"checkpoint"),
]


@pytest.mark.parametrize(("case", "make", "message"), CHECKPOINT_CORPUS, ids=[getattr(c, "values", c)[0] for c in CHECKPOINT_CORPUS])
def test_a_bad_checkpoint_raises_a_hik_error_naming_the_problem(case: str, make, message: str, tmp_path: Path) -> None:  # noqa: ANN001
    import warnings

    from hik_sim.learning.checkpoint import load_checkpoint
    from hik_sim.robots import get_robot

    path = make(tmp_path)
    with warnings.catch_warnings(), pytest.raises(HikError, match=message):
        warnings.simplefilter("ignore")  # torch warns about the pickle protocol of a raw pickle
        load_checkpoint(path, robot=get_robot("irb120"))
    assert not (tmp_path / "EXPLOITED").exists()  # torch.load(weights_only=True) never ran the payload
