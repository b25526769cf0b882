"""Training, checkpoints and the shipped networks, on tiny CPU configurations."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch
from conftest import USER_URDF, robot_by_id, user_robot

from hik_sim.learning.checkpoint import Card, load_checkpoint, read_checkpoint
from hik_sim.learning.data import make_eval_set
from hik_sim.errors import HikError
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.losses import LossConfig
from hik_sim.learning.network import IKNetwork
from hik_sim.kinematics.rotations import rotation_error
from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.learning.train import TrainConfig, train
from hik_sim.learning.train_cli import main as train_main

TINY = {
    "mlp": (("hidden", 64), ("layers", 2)),
    "harmoatt": (("trunk", "dense"), ("channels", 4), ("positions", 4), ("blocks", 1), ("embed_hidden", 16), ("feed_forward", 32)),
}


def tiny_config(model: str, steps: int = 40, **changes) -> TrainConfig:  # noqa: ANN003
    base = dict(model=model, steps=steps, batch=128, lr=3e-3, warmup_steps=5, model_options=TINY[model], eval_size=256,
                eval_every=20, normalizer_samples=5000, device="cpu")
    return TrainConfig(**(base | changes))


@pytest.mark.parametrize("model", ["mlp", "harmoatt"])
def test_a_tiny_model_lowers_its_error(model: str) -> None:
    result = train(robot_by_id("irb120"), tiny_config(model, steps=60), progress=False)
    first, last = result.history[0], result.history[-1]
    assert len(result.history) == 3 and last["step"] == 60
    assert last["pos_mean_mm"] < first["pos_mean_mm"]
    assert last["loss"] < first["loss"]
    # the card's metrics are what the network does on the validation set
    chain = Chain(robot_by_id("irb120"))
    again = evaluate_network(result.network, chain, make_eval_set(chain, 12345, 256))
    assert again["pos_mean_mm"] == pytest.approx(result.card.metrics["pos_mean_mm"], rel=1e-9)


def test_same_seed_same_weights_on_cpu() -> None:
    config = tiny_config("harmoatt", steps=15)
    a = train(robot_by_id("irb120"), config, progress=False).network.state_dict()
    b = train(robot_by_id("irb120"), config, progress=False).network.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    c = train(robot_by_id("irb120"), tiny_config("harmoatt", steps=15, seed=1), progress=False).network.state_dict()
    assert not all(torch.equal(a[k], c[k]) for k in a)


@pytest.mark.slow
def test_compiled_training_follows_the_eager_run(needs_inductor: None) -> None:
    eager = train(robot_by_id("irb120"), tiny_config("mlp", steps=20), progress=False)
    compiled = train(robot_by_id("irb120"), tiny_config("mlp", steps=20, compile=True), progress=False)
    assert compiled.card.config["compile"] is True
    for a, b in zip(eager.history, compiled.history):
        assert b["loss"] == pytest.approx(a["loss"], rel=1e-3)
        assert b["pos_mean_mm"] == pytest.approx(a["pos_mean_mm"], rel=1e-3)


def test_training_flushes_denormals_only_while_it_runs() -> None:
    train(robot_by_id("irb120"), tiny_config("mlp", steps=2), progress=False)
    assert float(torch.tensor([1e-40]) * 2) > 0  # the process-wide setting is back to IEEE


def test_checkpoint_round_trip_and_resume(tmp_path) -> None:  # noqa: ANN001
    robot = robot_by_id("irb120")
    path = tmp_path / "net.pt"
    result = train(robot, tiny_config("harmoatt", steps=20), out=path, progress=False)
    network, card = load_checkpoint(path, robot=robot)
    pos, quat = torch.randn(16, 3) * 0.3, torch.nn.functional.normalize(torch.randn(16, 4), dim=-1)
    assert torch.equal(network.solve(pos, quat), result.network.solve(pos, quat))
    assert card == result.card
    saved = json.loads(path.with_suffix(".json").read_text())
    assert saved["robot"] == "irb120" and saved["joint_names"] == list(robot.joint_names)
    for key in ("urdf_sha256", "lower", "upper", "fixed_joints", "pos_min", "pos_max", "config", "git_commit",
                "training_seconds", "device", "metrics", "eval_set"):
        assert key in saved
    assert TrainConfig.from_json(saved["config"]) == tiny_config("harmoatt", steps=20)
    resumed = train(robot, tiny_config("harmoatt", steps=30), out=tmp_path / "more.pt", resume=path, progress=False)
    assert resumed.card.steps == 30 and len(resumed.history) == len(result.history) + 1


def test_wrong_robot_and_corrupt_checkpoints_are_hik_errors(tmp_path) -> None:  # noqa: ANN001
    path = tmp_path / "net.pt"
    train(robot_by_id("irb120"), tiny_config("mlp", steps=2), out=path, progress=False)
    with pytest.raises(HikError, match="does not fit robot 'panda'"):
        load_checkpoint(path, robot=robot_by_id("panda"))
    corrupt = tmp_path / "corrupt.pt"
    corrupt.write_bytes(path.read_bytes()[:1000])
    with pytest.raises(HikError, match="not a readable hik_sim checkpoint"):
        load_checkpoint(corrupt)
    other = tmp_path / "other.pt"
    torch.save({"weights": torch.zeros(3)}, other)
    with pytest.raises(HikError, match="not a hik_sim checkpoint"):
        load_checkpoint(other)
    with pytest.raises(HikError, match="not found"):
        load_checkpoint(tmp_path / "missing.pt")
    payload = read_checkpoint(path)
    payload["state_dict"] = {k: v[..., :1] for k, v in payload["state_dict"].items()}
    torch.save(payload, tmp_path / "shapes.pt")
    with pytest.raises(HikError, match="do not fit"):
        load_checkpoint(tmp_path / "shapes.pt")
    with pytest.raises(HikError, match="not a hik_sim checkpoint card"):
        Card.from_json({"robot": "x"})


def test_fixed_joint_training_outputs_the_free_joints_only() -> None:
    result = train(robot_by_id("irb120"), tiny_config("mlp", steps=5, fixed_joints=(("joint_6", 0.25),)), progress=False)
    q = result.network.solve(torch.randn(8, 3) * 0.3, torch.nn.functional.normalize(torch.randn(8, 4), dim=-1))
    assert q.shape == (8, 6) and torch.all(q[:, 5] == 0.25)
    assert result.network.model.head.linear.out_features == 5


def test_config_validation() -> None:
    with pytest.raises(HikError, match="models are"):
        TrainConfig(model="cnn")
    with pytest.raises(HikError, match="steps"):
        TrainConfig(steps=0)
    with pytest.raises(HikError, match="device"):
        TrainConfig(device="tpu")
    with pytest.raises(HikError, match="positive"):
        LossConfig(position_tolerance=0)


def test_train_command_for_a_registered_and_a_user_robot(tmp_path, capsys) -> None:  # noqa: ANN001
    options = [arg for key, value in TINY["harmoatt"] for arg in ("--model-option", f"{key}={value}")]
    common = ["--model", "harmoatt", "--steps", "10", "--batch", "64", "--eval-size", "128", "--no-progress", *options]
    assert train_main(["--robot", "irb120", *common, "--out", str(tmp_path / "irb.pt")]) == 0
    assert "trained harmoatt for irb120: 10 steps" in capsys.readouterr().out
    argv = ["--urdf", str(USER_URDF), "--base", "base", "--ee", "tool", *common, "--out", str(tmp_path / "user.pt")]
    assert train_main(argv) == 0
    network, card = load_checkpoint(tmp_path / "user.pt", robot=user_robot())
    assert card.joint_names == ("yaw", "pitch", "extend", "roll")
    with pytest.raises(SystemExit):
        train_main(["--robot", "irb120", "--fix-joint", "joint_6"])
    with pytest.raises(SystemExit):
        train_main(["--robot", "irb120", "--fix-joint", "joint_9=0", "--steps", "1"])
    assert "chain joints are" in capsys.readouterr().err


def test_network_rejects_non_finite_and_misshapen_targets() -> None:
    network = train(robot_by_id("irb120"), tiny_config("mlp", steps=1), progress=False).network
    quat = torch.tensor([[1.0, 0.0, 0.0, 0.0]])
    with pytest.raises(HikError, match="finite"):
        network.solve(torch.tensor([[float("nan"), 0.0, 0.3]]), quat)
    with pytest.raises(HikError, match=r"\(B, 3\)"):
        network.solve(torch.zeros(1, 2), quat)


TEARDOWN_ABORT = "terminate called without an active exception"
"""What a torchrun rank prints when libtorch's gloo teardown aborts the process (SIGABRT, no Python error): rare, seen
on a loaded 2-core CPU, and outside what these tests check, so a run that ends this way is run once more from the
folder as it was before."""


def _two_ranks(cmd: list[str], folder: Path) -> str:
    """Run ``cmd`` (a torchrun command of two CPU ranks writing into ``folder``); its stdout. A run that ends in
    :data:`TEARDOWN_ABORT` is run once more from the folder as it was before."""
    import shutil
    import subprocess

    before = folder.with_name(folder.name + ".before")
    shutil.rmtree(before, ignore_errors=True)
    shutil.copytree(folder, before)
    done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    if done.returncode != 0 and TEARDOWN_ABORT in done.stderr:
        shutil.rmtree(folder)
        shutil.copytree(before, folder)
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stdout


def test_a_teardown_abort_reruns_once_from_the_folder_as_it_was(tmp_path) -> None:  # noqa: ANN001
    import sys

    folder = tmp_path / "run"
    folder.mkdir()
    (folder / "run.txt").write_text("0")
    script = ("import pathlib, sys; f = pathlib.Path(sys.argv[1]) / 'run.txt'; n = int(f.read_text()) + 1; f.write_text(str(n)); "
              "tries = pathlib.Path(sys.argv[1]).parent / 'tries'; t = len(tries.read_text()) if tries.exists() else 0; "
              f"tries.write_text('x' * (t + 1)); print(n); t or sys.exit('{TEARDOWN_ABORT}')")
    assert _two_ranks([sys.executable, "-c", script, str(folder)], folder).strip() == "1"  # the rerun saw run.txt as it was
    assert (tmp_path / "tries").read_text() == "xx"
    with pytest.raises(AssertionError, match="other failure"):  # any other failure fails at once
        _two_ranks([sys.executable, "-c", "import sys; open(sys.argv[1], 'a').write('x'); sys.exit('other failure')",
                    str(tmp_path / "others")], folder)
    assert (tmp_path / "others").read_text() == "x"


def _torchrun(folder: str, *args: str) -> str:
    """Run tests/ddp_probe.py on two CPU ranks with ``folder`` and ``args``; its stdout."""
    import sys

    probe = Path(__file__).with_name("ddp_probe.py")
    return _two_ranks([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", str(probe), folder, *args],
                      Path(folder))


def _ranks(folder) -> list[dict]:  # noqa: ANN001
    return [torch.load(folder / f"rank{r}.pt", weights_only=True) for r in (0, 1)]


def _same_weights(a: dict, b: dict) -> bool:
    return all(torch.equal(a["state_dict"][k], b["state_dict"][k]) for k in a["state_dict"])


@pytest.mark.slow
def test_distributed_training_with_torchrun_on_cpu(tmp_path) -> None:  # noqa: ANN001
    import sys

    out = tmp_path / "ddp.pt"
    cmd = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2", "-m", "hik_sim.train", "--robot", "irb120",
           "--model", "mlp", "--steps", "4", "--batch", "32", "--eval-size", "64", "--model-option", "hidden=16",
           "--device", "cpu", "--no-progress", "--out", str(out)]
    stdout = _two_ranks(cmd, tmp_path)
    assert stdout.count("trained mlp for irb120: 4 steps") == 1  # rank 0 alone reports and saves
    assert load_checkpoint(out)[1].device == "cpu x2"


@pytest.mark.slow
def test_ddp_ranks_draw_their_own_data_and_keep_identical_weights_and_beta(tmp_path) -> None:  # noqa: ANN001
    _torchrun(str(tmp_path), "12")
    zero, one = _ranks(tmp_path)
    assert zero["steps"] == one["steps"] == 12
    assert not torch.equal(zero["first_q"], one["first_q"])  # each rank its own batches
    assert _same_weights(zero, one)  # gradients averaged: the weights never drift apart
    assert zero["running_error"] == one["running_error"] > 0  # one β for all ranks
    saved = read_checkpoint(tmp_path / "run.pt")["resume"]["generators"]
    assert torch.equal(saved[0], zero["generator"]) and torch.equal(saved[1], one["generator"])
    # resuming continues every rank's own stream, and the ranks stay in step
    _torchrun(str(tmp_path), "20", "--resume")
    zero_r, one_r = _ranks(tmp_path)
    assert zero_r["steps"] == one_r["steps"] == 20 and _same_weights(zero_r, one_r)
    assert not torch.equal(zero_r["first_q"], one_r["first_q"])
    assert not torch.equal(zero_r["generator"], one_r["generator"])
    assert zero_r["running_error"] == one_r["running_error"]


@pytest.mark.slow
def test_ddp_ranks_stop_together_under_a_time_budget(tmp_path) -> None:  # noqa: ANN001
    _torchrun(str(tmp_path), "1000000", "--minutes", "0.1")
    zero, one = _ranks(tmp_path)
    assert zero["steps"] == one["steps"] > 10  # one agreed clock: the same stopping step on both ranks
    assert _same_weights(zero, one)
    card = load_checkpoint(tmp_path / "run.pt")[1]
    assert card.steps == zero["steps"] and 5.5 <= card.training_seconds < 30


def test_a_network_with_several_hypotheses_trains_chooses_by_fk_and_round_trips(tmp_path) -> None:  # noqa: ANN001
    robot = robot_by_id("irb120")
    path = tmp_path / "multi.pt"
    options = TINY["mlp"] + (("hypotheses", 3),)
    result = train(robot, tiny_config("mlp", steps=60, model_options=options), out=path, progress=False)
    assert result.history[-1]["pos_mean_mm"] < result.history[0]["pos_mean_mm"]
    chain = Chain(robot)
    targets = make_eval_set(chain, 5, 200).batch
    out = result.network(targets.pos.float(), targets.quat.float())
    assert out.candidates.shape == (200, 3, 6)
    # the answer is the candidate whose FK reaches the target best, in position/5 mm + rotation/2°
    reached = chain.fk(out.candidates.detach().double().reshape(600, 6))
    pos_err = (reached.pos.view(200, 3, 3) - targets.pos[:, None]).norm(dim=-1)
    rot_err = rotation_error(reached.quat.view(200, 3, 4), targets.quat[:, None].expand(200, 3, 4))
    best = (pos_err / 0.005 + rot_err / math.radians(2)).argmin(1)
    assert (out.q == out.candidates[torch.arange(200), best]).float().mean() > 0.97  # float32 FK may break near-ties
    assert len(set(best.tolist())) > 1  # more than one answer is in use
    # round trip, with the robot given or found in the registry by name
    for network, _ in (load_checkpoint(path, robot=robot), load_checkpoint(path)):
        assert torch.equal(network.solve(targets.pos, targets.quat), result.network.solve(targets.pos, targets.quat))
    with pytest.raises(HikError, match="needs the robot's chain"):
        IKNetwork("mlp", *chain.limits(), result.network.normalizer, result.network.selection, dict(options))


def test_a_run_can_start_from_another_checkpoint_and_grow_its_hypotheses(tmp_path) -> None:  # noqa: ANN001
    robot = robot_by_id("irb120")
    source = tmp_path / "source.pt"
    first = train(robot, tiny_config("harmoatt", steps=20), out=source, progress=False)
    grown = TINY["harmoatt"] + (("hypotheses", 3),)
    result = train(robot, tiny_config("harmoatt", steps=1, lr=1e-9, model_options=grown, init_from=str(source)),
                   progress=False)
    assert result.card.init["checkpoint"] == "source.pt" and result.card.init["steps"] == 20
    assert result.card.total_steps == 21
    chain = Chain(robot)
    targets = make_eval_set(chain, 5, 100).batch
    before = first.network.solve(targets.pos, targets.quat)
    candidates = result.network(targets.pos.float(), targets.quat.float()).candidates.detach()
    assert torch.allclose(candidates[:, 0], before, atol=1e-5)  # the first answer is the source's
    spread = (candidates[:, 1:] - before[:, None]).abs().max()
    assert 0 < spread < 0.2  # [rad] the new ones are near copies of it (1 % weight noise; joint 6 spans 14 rad)
    # it continues a lineage: a second start counts both runs
    train(robot, tiny_config("harmoatt", steps=1, model_options=grown, init_from=str(source)), out=tmp_path / "grown.pt",
          progress=False)
    again = train(robot, tiny_config("harmoatt", steps=2, model_options=grown, init_from=str(tmp_path / "grown.pt")),
                  progress=False)
    assert again.card.total_steps == 2 + 1 + 20
    with pytest.raises(HikError, match="only the number of hypotheses may differ"):
        train(robot, tiny_config("mlp", steps=1, init_from=str(source)), progress=False)
    with pytest.raises(HikError, match="at least as many"):
        train(robot, tiny_config("harmoatt", steps=1, init_from=str(tmp_path / "grown.pt")), progress=False)
    with pytest.raises(HikError, match="does not fit robot"):
        train(robot_by_id("panda"), tiny_config("harmoatt", steps=1, init_from=str(source)), progress=False)


def test_a_continued_run_ships_with_its_whole_lineage(tmp_path) -> None:  # noqa: ANN001
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "train_pretrained.py"
    spec = importlib.util.spec_from_file_location("train_pretrained", script)
    train_pretrained = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_pretrained)
    robot = robot_by_id("irb120")
    train(robot, tiny_config("mlp", steps=10), out=tmp_path / "first.pt", progress=False)
    continued = train(robot, tiny_config("mlp", steps=5, init_from=str(tmp_path / "first.pt")), out=tmp_path / "run.pt",
                      progress=False)
    assert "resume" in read_checkpoint(tmp_path / "run.pt")
    shipped = tmp_path / "shipped"
    assert train_pretrained.main(["--robots", "irb120", "--only", "mlp", "--ship", str(tmp_path / "run.pt"),
                                  "--out", str(shipped)]) == 0
    assert "resume" not in read_checkpoint(shipped / "irb120" / "mlp.safetensors")  # no optimiser state in what ships
    entry = json.loads((shipped / "index.json").read_text())["irb120/mlp"]
    assert entry["path"] == "irb120/mlp.safetensors" and entry["steps"] == 15 and entry["init"]["steps"] == 10
    assert entry["metrics"] == continued.card.metrics
    network, card = load_checkpoint(shipped / "irb120" / "mlp.safetensors", robot)
    targets = make_eval_set(Chain(robot), 3, 50).batch
    assert torch.equal(network.solve(targets.pos, targets.quat), continued.network.solve(targets.pos, targets.quat))
    for wrong in (["--robots", "irb120", "panda", "--only", "mlp"], ["--robots", "irb120", "--only", "harmoatt"],
                  ["--robots", "irb120", "--only", "mlp", "--hypotheses", "4"]):
        with pytest.raises(SystemExit):  # not one robot and one name, or not the network that name holds
            train_pretrained.main(wrong + ["--ship", str(tmp_path / "run.pt"), "--out", str(shipped)])
    assert json.loads((shipped / "index.json").read_text())["irb120/mlp"] == entry


@pytest.mark.parametrize("sampling", ["uniform", "hard"])  # hard: the replay pool is part of the resume state
def test_an_interrupted_run_resumed_ends_with_the_weights_of_an_uninterrupted_one(tmp_path, monkeypatch, sampling) -> None:  # noqa: ANN001
    import signal

    import hik_sim.learning.train as train_module

    robot = robot_by_id("irb120")
    config = tiny_config("harmoatt", steps=30, eval_every=10, sampling=sampling)
    whole = train(robot, config, progress=False)
    schedule = train_module._learning_rate

    def interrupted_at_step_13(config: TrainConfig, step: int, progress: float) -> float:
        if step == 13:
            signal.raise_signal(signal.SIGINT)  # as a user's Ctrl-C: the run ends after this step
        return schedule(config, step, progress)

    monkeypatch.setattr(train_module, "_learning_rate", interrupted_at_step_13)
    path = tmp_path / "run.pt"
    before = signal.getsignal(signal.SIGINT)  # Python's default_int_handler; SIG_IGN where a shell started pytest in the background
    stopped = train(robot, config, out=path, progress=False)
    assert stopped.stopped_by == "SIGINT" and stopped.card.steps == 14 and stopped.steps_this_run == 14
    assert read_checkpoint(path)["resume"]["step"] == 14
    assert signal.getsignal(signal.SIGINT) is before  # the handlers are put back
    monkeypatch.setattr(train_module, "_learning_rate", schedule)
    resumed = train(robot, config, out=path, resume=path, progress=False)
    assert resumed.stopped_by is None and resumed.card.steps == 30 and resumed.steps_this_run == 16
    a, b = whole.network.state_dict(), resumed.network.state_dict()
    assert all(torch.equal(a[k], b[k]) for k in a)
    assert [h["step"] for h in resumed.history] == [10, 14, 20, 30]
    again = train(robot, config, out=path, resume=path, progress=False)  # nothing left to do
    assert again.steps_this_run == 0 and again.card.steps == 30


@pytest.mark.slow
def test_ctrl_c_saves_a_checkpoint_and_prints_the_command_that_resumes_it(tmp_path, capsys) -> None:  # noqa: ANN001
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run.pt"
    argv = ["--robot", "irb120", "--model", "mlp", "--model-option", "hidden=16", "--steps", "1000000", "--batch", "32",
            "--eval-size", "64", "--eval-every", "1000000", "--checkpoint-minutes", "0.01", "--device", "cpu",
            "--no-progress", "--out", str(out)]
    run = subprocess.Popen([sys.executable, "-m", "hik_sim.train", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           text=True)
    try:
        deadline = time.monotonic() + 120
        while not out.exists() and time.monotonic() < deadline and run.poll() is None:
            time.sleep(0.2)
        assert out.exists(), "no periodic checkpoint was written while the run went on"
        periodic = read_checkpoint(out)["resume"]["step"]
        assert periodic > 0 and run.poll() is None
        run.send_signal(signal.SIGINT)
        stdout, stderr = run.communicate(timeout=60)
    finally:
        run.kill()
    assert run.returncode == 130, stderr[-2000:]
    assert "Traceback" not in stderr and "stopped by SIGINT" in stderr
    command = stderr.strip().splitlines()[-1].split()
    assert command[:3] == ["python", "-m", "hik_sim.train"] and command[-2:] == ["--resume", str(out)]
    steps = read_checkpoint(out)["resume"]["step"]
    assert steps >= periodic and f"{steps} steps" in stdout
    # the printed command continues the run; with --steps already reached it says there is nothing to do
    resume = command[3:]
    resume[resume.index("--steps") + 1] = str(steps)
    assert train_main(resume) == 0
    assert "nothing left to do" in capsys.readouterr().out
    resume[resume.index("--steps") + 1] = str(steps + 3)
    assert train_main(resume) == 0
    assert load_checkpoint(out)[1].steps == steps + 3


def test_a_bad_output_path_is_refused_before_the_first_step(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import hik_sim.learning.train as train_module
    from hik_sim.errors import CheckpointError

    def no_training(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("training started before the output path was checked")

    monkeypatch.setattr(train_module, "Chain", no_training)
    robot = robot_by_id("irb120")
    blocker = tmp_path / "a_file"
    blocker.write_text("x")
    (tmp_path / "folder.pt").mkdir()
    for bad, why in ((tmp_path / "model.json", "name of its card"), (tmp_path / "folder.pt", "is a folder"),
                     (blocker / "model.pt", "cannot be made or written")):
        with pytest.raises(CheckpointError, match=why):
            train(robot, tiny_config("mlp"), out=bad, progress=False)
    assert blocker.read_text() == "x"


def test_a_checkpoint_with_nan_weights_is_refused(tmp_path) -> None:  # noqa: ANN001
    from hik_sim.errors import CheckpointError

    path = tmp_path / "net.pt"
    train(robot_by_id("irb120"), tiny_config("mlp", steps=2), out=path, progress=False)
    payload = read_checkpoint(path)
    name = next(k for k in payload["state_dict"] if k.endswith("weight"))
    payload["state_dict"][name][0, 0] = float("nan")
    torch.save(payload, tmp_path / "nan.pt")
    with pytest.raises(CheckpointError, match="NaN or inf"):
        load_checkpoint(tmp_path / "nan.pt")


@pytest.mark.slow
def test_train_pretrained_trains_networks_side_by_side_with_a_summary(tmp_path) -> None:  # noqa: ANN001
    import importlib.util
    from pathlib import Path

    script = Path(__file__).resolve().parents[1] / "scripts" / "train_pretrained.py"
    spec = importlib.util.spec_from_file_location("train_pretrained", script)
    train_pretrained = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(train_pretrained)
    out, summary = tmp_path / "shipped", tmp_path / "summary"
    argv = ["--robots", "irb120", "g1", "--only", "harmoatt", "mlp", "--steps", "3", "--minutes", "5", "--parallel", "2",
            "--threads", "1", "--device", "cpu", "--out", str(out), "--summary", str(summary)]
    assert train_pretrained.main(argv) == 0
    index = json.loads((out / "index.json").read_text())
    assert set(index) == {"irb120/harmoatt", "irb120/mlp", "g1/harmoatt", "g1/mlp"}
    for name in index:
        robot_name, stem = name.split("/")
        network, card = load_checkpoint(out / robot_name / f"{stem}.safetensors", robot_by_id(robot_name))
        assert card.steps == 3 and card.config["minutes"] == 5 and card.model == stem
        assert "resume" not in read_checkpoint(out / robot_name / f"{stem}.safetensors")
    runs = json.loads(summary.with_suffix(".json").read_text())["runs"]
    assert sorted((r["robot"], r["network"]) for r in runs) == sorted(tuple(n.split("/")) for n in index)
    table = summary.with_suffix(".md").read_text()
    assert table.count("\n| ") == 4 and "| g1 | mlp | mlp |" in table


def test_a_compiled_training_step_breaks_only_at_the_beta_update() -> None:
    """The input checks of the network and the FK skip their data-dependent branches under torch.compile
    (they would cut the step into pieces); the adaptive β's update is kept out on purpose (losses.py)."""
    from hik_sim.learning.data import FKStream, JointSelection, PoseNormalizer
    from hik_sim.learning.losses import CompositeLoss

    chain = Chain(robot_by_id("irb120"))
    selection = JointSelection.for_chain(chain)
    lower, upper = chain.limits(torch.float32)
    network = IKNetwork("harmoatt", lower, upper, PoseNormalizer.measure(chain, selection, samples=1000), selection,
                        dict(TINY["harmoatt"]), chain)
    loss = CompositeLoss()
    loss.prepare_for_compile()  # as the trainer does before compiling

    def step(pos: torch.Tensor, quat: torch.Tensor) -> torch.Tensor:
        out = network(pos, quat, choose=False)
        reached = chain.fk(out.q)
        return loss(reached.pos, reached.quat, pos, quat, out.fusion_weights).total

    batch = next(FKStream(chain, 32, torch.Generator().manual_seed(0)))
    explained = torch._dynamo.explain(step)(batch.pos, batch.quat)
    assert explained.graph_break_count >= 1  # each frame that calls it breaks there, nowhere else
    assert all("compiler.disable" in str(r.reason) and r.user_stack[-1].filename.endswith("losses.py")
               for r in explained.break_reasons), [str(r.reason).splitlines()[0] for r in explained.break_reasons]
    with pytest.raises(HikError, match="finite"):  # eager calls still check
        network(batch.pos * float("nan"), batch.quat)
    with pytest.raises(HikError, match="finite"):
        chain.fk(torch.full((1, chain.dof), float("nan")))


# Feedback while a run trains, and hostile input to the trainer.

SMALL = dict(model="mlp", batch=32, lr=3e-3, warmup_steps=2, model_options=(("hidden", 16), ("layers", 2)), eval_size=32,
             normalizer_samples=1000, device="cpu")


def test_the_progress_bar_and_its_eta_follow_the_nearer_end_of_the_budget() -> None:
    from hik_sim.learning.train_progress import TrainingProgress, budget_fraction, eta_seconds

    # --minutes 0.5: 12 of 2,000 steps after 15 s is half the run, with 15 s left (not 12/2000 and 40 minutes)
    assert budget_fraction(12, 2000, 15.0, 30.0) == pytest.approx(0.5)
    assert eta_seconds(12, 2000, 15.0, 30.0, steps_this_run=12, seconds_this_run=15.0) == pytest.approx(15.0)
    # the steps end first: 50 of 100 steps in 10 s with 10 minutes to spare: half done, 10 s left
    assert budget_fraction(50, 100, 10.0, 600.0) == pytest.approx(0.5)
    assert eta_seconds(50, 100, 10.0, 600.0, steps_this_run=50, seconds_this_run=10.0) == pytest.approx(10.0)
    # a resumed run's rate is its own (40 steps in 20 s), not its lineage's
    assert eta_seconds(60, 100, 50.0, math.inf, steps_this_run=40, seconds_this_run=20.0) == pytest.approx(20.0)
    bar = TrainingProgress(2000, 30.0, first_step=0, elapsed_before=0.0, show=False, desc="irb120 mlp")
    assert bar.text(12, 15.0) == "step 12/2,000, 0:15/0:30, ETA 0:15, 0.8 step/s"
    bar.validated({"pos_mean_mm": 388.66, "rot_mean_deg": 78.0, "success_5mm_2deg": 0.0}, 3.2e-4)
    assert bar.text(24, 30.0).endswith("ETA 0:00, 0.8 step/s, val 388.7 mm 78.0° ok 0.0%, lr 3.2e-04")


def test_validation_by_the_clock_takes_a_tenth_of_the_budget_or_three_validations_time() -> None:
    from hik_sim.learning.train_progress import ValidationClock

    clock = ValidationClock(None, budget_s=30.0, now=0.0)
    assert clock.interval() == pytest.approx(3.0) and not clock.due(2.9) and clock.due(3.0)
    clock.done(3.0, 5.0)  # a validation of 2 s: the next one 6 s after it ends
    assert clock.interval() == pytest.approx(6.0) and not clock.due(10.9) and clock.due(11.0)
    clock.done(11.0, 11.5, until=14.0)  # 0.5 s validating, then 2.5 s writing the curve: 3 s from 14 s
    assert clock.interval() == pytest.approx(3.0) and not clock.due(16.9) and clock.due(17.0)
    assert ValidationClock(None, budget_s=math.inf, now=0.0).interval() == math.inf  # a step budget: by steps only
    assert ValidationClock(0.5, budget_s=math.inf, now=0.0).interval() == pytest.approx(0.5)


def test_a_short_timed_run_draws_its_validation_curve() -> None:
    result = train(robot_by_id("irb120"), TrainConfig(steps=10**6, minutes=0.05, eval_every=10**6, **SMALL), progress=False)
    steps = [int(h["step"]) for h in result.history]
    assert len(steps) >= 3, steps  # 3 s at one validation per 0.3 s (or per three validations' time)
    assert steps == sorted(set(steps)) and steps[-1] == result.card.steps < 10**6
    begun = [h["elapsed_s"] for h in result.history[:-1]]  # the last is the end of the budget
    assert all(b - a >= 0.3 for a, b in zip(begun, begun[1:])), begun


def test_help_answers_without_importing_torch() -> None:
    import subprocess
    import sys
    import time

    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-X", "importtime", "-m", "hik_sim.train", "--help"], capture_output=True,
                          text=True, timeout=60)
    seconds = time.perf_counter() - started
    assert done.returncode == 0 and "--minutes" in done.stdout and "--force" in done.stdout
    imported = [line.rsplit("|", 1)[-1].strip() for line in done.stderr.splitlines() if line.startswith("import time:")]
    assert "hik_sim.learning.train_cli" in imported
    assert not [name for name in imported if name.split(".")[0] in ("torch", "mujoco")], "--help imported torch or mujoco"
    assert seconds < 10  # under 2 s on an idle machine (about 1 s measured); generous for a loaded CI runner


def test_the_command_line_lists_the_loss_defaults_the_loss_has() -> None:
    from hik_sim.learning.train_cli import LOSS_DEFAULTS

    assert {name: getattr(LossConfig(), name) for name in LOSS_DEFAULTS} == LOSS_DEFAULTS


def test_a_budget_that_ends_before_the_first_step_still_validates_once(tmp_path, capsys) -> None:  # noqa: ANN001
    notes = tmp_path / "notes.txt"
    notes.write_text("mine")
    argv = ["--robot", "irb120", "--model", "mlp", "--model-option", "hidden=16", "--model-option", "layers=2",
            "--eval-size", "32", "--device", "cpu", "--no-progress", "--minutes", "1e-12", "--out", str(notes)]
    with pytest.raises(SystemExit) as exited:  # a text file is not overwritten ...
        train_main(argv)
    assert exited.value.code == 2 and "which is not written by a hik_sim run" in capsys.readouterr().err
    assert notes.read_text() == "mine"
    assert train_main(argv + ["--force"]) == 0  # ... unless forced
    printed = capsys.readouterr()
    assert "ended before the first step" in printed.err and "validation (32 targets): position" in printed.out
    card = read_checkpoint(notes)["card"]
    assert card["steps"] == 0 and 1.0 < card["metrics"]["pos_mean_mm"] < 5000.0  # an untrained network, validated


def test_resume_names_the_options_that_differ_and_no_run_starts_from_non_finite_weights(tmp_path) -> None:  # noqa: ANN001
    from hik_sim.errors import TrainingError

    robot, path = robot_by_id("irb120"), tmp_path / "net.pt"
    train(robot, TrainConfig(steps=2, **SMALL), out=path, progress=False)
    wider = TrainConfig(steps=4, **(SMALL | {"model_options": (("hidden", 24), ("layers", 2))}))
    with pytest.raises(TrainingError, match=r"resume \(--resume\) .* \(model option hidden: checkpoint 16, this run 24\)"):
        train(robot, wider, resume=path, progress=False)
    fixed = TrainConfig(steps=4, fixed_joints=(("joint_6", 0.0),), **SMALL)
    with pytest.raises(TrainingError, match=r"fixed joint joint_6: checkpoint -, this run 0.0"):
        train(robot, fixed, resume=path, progress=False)
    payload = read_checkpoint(path)
    name = next(k for k in payload["state_dict"] if k.endswith("weight"))
    payload["state_dict"][name][0, 0] = float("inf")
    torch.save(payload, tmp_path / "inf.pt")
    for config, resume in ((TrainConfig(steps=4, **SMALL), tmp_path / "inf.pt"),
                           (TrainConfig(steps=4, init_from=str(tmp_path / "inf.pt"), **SMALL), None)):
        with pytest.raises(TrainingError, match=rf"\(--(resume|init-from)\) .*inf.pt: its weights hold NaN or inf \({name}\)"):
            train(robot, config, resume=resume, progress=False)


def test_a_failed_final_save_keeps_the_last_periodic_checkpoint_and_says_where(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import errno
    import os
    import re

    import hik_sim.learning.train as train_module
    from hik_sim.errors import CheckpointError

    save, saves = train_module.save_checkpoint, []

    def disk_full_at_the_third_save(path, *args, **kwargs):  # noqa: ANN001, ANN002, ANN003, ANN202
        saves.append(path)
        if len(saves) >= 3:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC), str(path))
        return save(path, *args, **kwargs)

    monkeypatch.setattr(train_module, "save_checkpoint", disk_full_at_the_third_save)
    path = tmp_path / "net.pt"
    config = TrainConfig(steps=3, checkpoint_minutes=1e-9, **SMALL)  # a periodic checkpoint after every step
    with pytest.raises(CheckpointError, match=rf"cannot write checkpoint {re.escape(str(path))} at step 3: No space left on "
                                              rf"device \(the disk is full\); the last checkpoint written, of step 2, is kept"):
        train(robot_by_id("irb120"), config, out=path, progress=False)
    assert read_checkpoint(path)["card"]["steps"] == 2 and read_checkpoint(path)["resume"]["step"] == 2


def test_a_loss_that_turns_non_finite_stops_the_run_naming_the_learning_rate(tmp_path, monkeypatch) -> None:  # noqa: ANN001
    import hik_sim.learning.train as train_module
    from hik_sim.errors import TrainingError

    monkeypatch.setattr(train_module, "_learning_rate", lambda config, step, progress: 1e30)  # past TrainConfig's bound
    with pytest.raises(TrainingError, match=r"(loss|weights) became NaN or inf by step \d+ at learning rate 1e\+30 .*lower lr "
                                            r"\(--lr; the default is 0.001\).*no checkpoint of this run was written"):
        train(robot_by_id("irb120"), TrainConfig(steps=30, eval_every=5, **SMALL), out=tmp_path / "net.pt", progress=False)
    assert not (tmp_path / "net.pt").exists()  # no NaN weights saved


def test_a_negative_entropy_weight_is_a_bounded_research_setting() -> None:
    from hik_sim.errors import TrainingError

    assert TrainConfig(loss=LossConfig(entropy_weight=-0.01)).loss.entropy_weight == -0.01  # rewards a spread fusion
    with pytest.raises(TrainingError, match=r"entropy_weight \(--entropy-weight\) must be in \[-10, 10\], got -11"):
        TrainConfig(loss=LossConfig(entropy_weight=-11.0))
