"""The evaluator on a tiny budget: report fields, videos that decode, plots, and a user robot end to end."""

from __future__ import annotations

import csv
import json

import imageio.v3 as iio
import pytest
import torch
from conftest import USER_URDF

from hik_sim.learning.data import make_eval_set
from hik_sim.errors import HikError
from hik_sim.evaluation.evaluate import EvalConfig, build_policy, summary_markdown
from hik_sim.kinematics.chain import Chain
from hik_sim.robots import get_robot
from hik_sim.evaluation.evaluate import main as evaluate_main
from hik_sim.learning.train_cli import main as train_main

TINY = ["--episodes", "1", "--track-episodes", "1", "--track-seconds", "1.5", "--ik-targets", "100", "--no-progress"]


@pytest.mark.slow
def test_evaluator_writes_report_videos_and_plots(tmp_path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "run"
    assert evaluate_main(["--robot", "irb120", "--policy", "harmoatt", "hybrid", "--videos", "all", "--video-size", "640x480",
                          "--out", str(out), *TINY]) == 0
    printed = capsys.readouterr().out
    assert "## Reach" in printed and "![" not in printed  # the tables, not Markdown image lines
    assert printed.rstrip().splitlines()[-1] == f"open {out / 'report.html'}"
    report = json.loads((out / "report.json").read_text(), parse_constant=lambda c: pytest.fail(f"{c} in report.json"))
    assert report["robot"]["name"] == "irb120" and set(report["policies"]) == {"harmoatt", "hybrid"}
    for name, entry in report["policies"].items():
        assert {"pos_mean_mm", "rot_mean_deg", "success_5mm_2deg", "success_10mm_20deg", "ms_per_target"} <= set(entry["ik"])
        assert {"success_5mm_2deg", "time_to_reach_s", "ik_latency_median_ms", "joint_limit_violations", "solver_failures"} <= set(entry["reach"])
        assert {"pos_rms_mm", "pos_p95_mm", "pos_max_mm", "rot_rms_deg"} <= set(entry["track"])
        assert entry["reach"]["joint_limit_violations"] == 0
    assert report["policies"]["hybrid"]["reach"]["success_5mm_2deg"] == 1.0
    assert report["policies"]["hybrid"]["ik"]["success_5mm_2deg"] > report["policies"]["harmoatt"]["ik"]["success_5mm_2deg"]
    for video, frames in report["video_frames"].items():
        decoded = list(iio.imiter(out / video))
        assert len(decoded) == frames > 0
        assert decoded[0].shape == (480, 640, 3)  # the size asked for
        assert (out / video).with_suffix(".gif").is_file()
    assert set(report["video_frames"]) == {"harmoatt_reach.mp4", "harmoatt_track.mp4", "hybrid_reach.mp4", "hybrid_track.mp4"}
    for plot in ("ik_errors.png", "reach_error.png", "track_error.png"):
        assert iio.imread(out / plot).shape[0] > 100
    rows = list(csv.DictReader((out / "metrics.csv").open()))
    assert {r["part"] for r in rows} == {"ik", "reach", "track"}
    assert "![ik_errors.png](ik_errors.png)" in (out / "summary.md").read_text()
    report["policies"]["harmoatt"]["reach"]["time_to_reach_s"] = None  # what a policy that never reaches gets
    row = next(line for line in summary_markdown(report).splitlines() if line.startswith("| harmoatt | 1 |"))
    assert row.split(" | ")[4] == "—"


@pytest.mark.slow
def test_user_robot_end_to_end_train_then_evaluate(tmp_path) -> None:  # noqa: ANN001
    checkpoint = tmp_path / "arm.pt"
    robot_args = ["--urdf", str(USER_URDF), "--base", "base", "--ee", "tool"]
    assert train_main([*robot_args, "--model", "mlp", "--steps", "20", "--batch", "128", "--eval-size", "64",
                       "--model-option", "hidden=32", "--no-progress", "--out", str(checkpoint)]) == 0
    out = tmp_path / "run"
    argv = [*robot_args, "--checkpoint", str(checkpoint), "--env", "reach", "--no-video", "--out", str(out), *TINY]
    assert evaluate_main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["policies"]) == {"mlp (arm.pt)", "multistart"}  # labelled by its card's model and its file
    assert report["policies"]["multistart"]["reach"]["success_5mm_2deg"] == 1.0
    # every policy a registered robot has where no shipped network is needed; hybrid seeded by --checkpoint
    out = tmp_path / "all"
    argv = [*robot_args, "--checkpoint", str(checkpoint), "--policy", "hybrid", "lm", "multistart", "--env", "reach", "--no-video",
            "--out", str(out), *TINY]
    assert evaluate_main(argv) == 0
    report = json.loads((out / "report.json").read_text())
    assert set(report["policies"]) == {"mlp (arm.pt)", "hybrid", "lm", "multistart"}
    for name in ("hybrid", "lm", "multistart"):
        entry = report["policies"][name]
        assert entry["ik"]["success_5mm_2deg"] > 0.9 and entry["reach"]["success_5mm_2deg"] == 1.0, name
    with pytest.raises(SystemExit):  # no shipped seed network and no --checkpoint
        evaluate_main([*robot_args, "--policy", "hybrid", "--out", str(tmp_path / "none"), *TINY])
    assert not (tmp_path / "none").exists()


def test_bad_evaluator_input() -> None:
    with pytest.raises(HikError, match="environments are"):
        EvalConfig(envs=("fly",))
    with pytest.raises(SystemExit):
        evaluate_main(["--robot", "irb120", "--policy", "transformer", *TINY])


def test_any_network_shipped_for_the_robot_is_a_policy() -> None:
    robot = get_robot("irb120")
    policy = build_policy("harmoatt_4answers", robot)
    assert policy.name == "harmoatt_4answers" and policy.card["model_options"]["hypotheses"] == 4
    targets = make_eval_set(Chain(robot), 7, 300).batch
    result = policy.solver.solve(targets.pos, targets.quat)
    assert float(result.pos_err.mean()) < 0.01 and bool(torch.isfinite(result.q).all())
    with pytest.raises(HikError, match="harmoatt_4answers"):  # the error names what the robot has
        build_policy("harmoatt_8answers", robot)
    with pytest.raises(HikError, match="unknown policy 'harmoatt_q6fixed'"):
        build_policy("harmoatt_q6fixed", get_robot("romeo"))  # shipped for the IRB120 only


def test_the_papers_hybrid_is_one_lm_run_from_the_networks_answer() -> None:
    """The paper's definition: one answer → LM, nothing after it (no restarts, no flip restarts): the same
    answers and the same evaluations as the LM run by hand from the network's answer."""
    from hik_sim.evaluation.experiments import paper_hybrid
    from hik_sim.kinematics.chain import Chain
    from hik_sim.learning.data import make_eval_set
    from hik_sim.policies import load_pretrained
    from hik_sim.robots import get_robot
    from hik_sim.solvers.lm import LMRefiner

    chain = Chain(get_robot("irb120"))
    targets = make_eval_set(chain, 777, 300).batch
    network = load_pretrained("irb120", "harmoatt")
    hybrid = paper_hybrid(network, LMRefiner(chain)).solve(targets.pos, targets.quat)
    by_hand = LMRefiner(chain).solve(targets.pos, targets.quat, chain.clamp(network.solve(targets.pos, targets.quat).double()))
    assert torch.equal(hybrid.function_evals, by_hand.function_evals) and torch.allclose(hybrid.q, by_hand.q)
    assert not bool(hybrid.success.all())  # one run leaves some targets unsolved: nothing retries them


@pytest.mark.slow
def test_paper_suite_on_a_few_targets(tmp_path) -> None:  # noqa: ANN001
    from hik_sim.evaluation.evaluate import paper_suite
    from hik_sim.evaluation.experiments import PAPER_HYBRID, PAPER_MULTISTART, TABLE_LM
    from hik_sim.policies import pretrained_names
    from hik_sim.robots import HUMANOIDS

    record = paper_suite(tmp_path, targets=200, progress=False)
    assert [row["robot"] for row in record["humanoids"]] == list(HUMANOIDS)
    for row in record["humanoids"]:
        expected = {"harmoatt", "mlp"} | ({"cycleik"} if f"{row['robot']}/cycleik" in pretrained_names() else set())
        assert set(row["metrics"]) == expected and set(row["reductions_vs"]) == expected - {"harmoatt"}
    rows = record["irb120"]["rows"]
    paper = [row["solver"] for row in rows if row["definition"] == "paper"]
    ours = [row["solver"] for row in rows if row["definition"] == "ours"]
    assert rows[:len(paper)] == [row for row in rows if row["definition"] == "paper"]  # the paper's definitions first
    if "irb120/regression" in pretrained_names():
        assert paper == ["regression DNN (paper; full joint space)", "regression DNN (paper; q6 fixed)", PAPER_HYBRID, PAPER_MULTISTART]
        assert "paper_hybrid_vs_multistart" in record["irb120"]
    else:
        assert paper == [PAPER_MULTISTART]
    assert ours == ["network (full joint space)", "network (q6 fixed)",
                    "hybrid, paper's definition on the cycle-trained network (1 answer → LM, no restarts)",
                    "network, 4 answers (full joint space)", "hybrid: 1-answer network + LM", "hybrid: network + LM", TABLE_LM,
                    "hybrid: mlp_seed + LM", "multistart-10 LM"]
    by_name = {row["solver"]: row for row in rows}
    hybrid, multistart, paper_multistart = by_name["hybrid: network + LM"], by_name["multistart-10 LM"], by_name[PAPER_MULTISTART]
    assert hybrid["function_evals"] < multistart["function_evals"] < paper_multistart["function_evals"]
    assert hybrid["success_5mm_2deg"] >= multistart["success_5mm_2deg"]
    # without its network (the pose table's nearest first) the hybrid costs more, still less than the multistart
    assert hybrid["function_evals"] < by_name[TABLE_LM]["function_evals"] < multistart["function_evals"]
    # the paper's multistart runs all 10 starts: at least 10 LM runs' worth of evaluations per target (its random
    # starts after the first round differ from the early-stopping one's, so neither is always the more successful)
    assert paper_multistart["function_evals"] >= 10 * 2
    assert paper_multistart["success_5mm_2deg"] >= 0.9
    # the 4-answer network's evaluations count the FK that chooses among its answers
    # (and the behind_turn network's own 8 FK for the poses beyond joint 1's range, a few % of them)
    assert 4 < by_name["network, 4 answers (full joint space)"]["function_evals"] < 4 + 8 * 0.15
    text = (tmp_path / "paper.md").read_text()
    assert "*published*" in text and "76.4 %" in text and "−95.1 %" in text


# Limits, labels, first calls, a still arm, the run folder's lock and an interrupted run.

TINY_NO_VIDEO = ["--robot", "irb120", "--episodes", "1", "--track-episodes", "1", "--track-seconds", "1.5", "--ik-targets", "50",
                 "--no-video", "--no-progress"]


@pytest.mark.parametrize(("option", "value", "message"), [
    ("--ik-targets", "1000000", r"ik_targets \(--ik-targets\) must be within 1 to 200000, got 1e\+06"),
    ("--episodes", "5000", r"episodes \(--episodes\) must be within 1 to 1000, got 5000"),
    ("--track-episodes", "1001", r"track_episodes \(--track-episodes\) must be within 1 to 1000, got 1001"),
    ("--track-seconds", "3600", r"track_seconds \(--track-seconds\) must be within 1 to 600, got 3600"),
    ("--video-fps", "0", r"fps \(--video-fps\) must be within 1 to 50, got 0"),
])
def test_budgets_have_upper_limits_named_on_the_command_line(option: str, value: str, message: str, tmp_path, capsys) -> None:  # noqa: ANN001
    with pytest.raises(SystemExit) as exited:
        evaluate_main([*TINY_NO_VIDEO, option, value, "--out", str(tmp_path / "run")])
    assert exited.value.code == 2
    import re

    assert re.search(message, capsys.readouterr().err)
    assert not (tmp_path / "run").exists()  # refused before the folder is made
    EvalConfig(ik_targets=200_000, episodes=1000, track_seconds=600.0)  # the limits themselves are allowed


def test_a_checkpoint_is_labelled_by_model_and_file_and_compared_with_the_shipped_networks(tmp_path) -> None:  # noqa: ANN001
    from hik_sim.evaluation.cli import _parser, _policies
    from hik_sim.evaluation.policy import checkpoint_label
    from hik_sim.learning.checkpoint import save_checkpoint
    from hik_sim.policies import load_pretrained, pretrained_names

    checkpoint = tmp_path / "p.pt"
    network = load_pretrained("irb120", "harmoatt_4answers")
    save_checkpoint(checkpoint, network, network.card)
    policy = build_policy(str(checkpoint), get_robot("irb120"))
    assert policy.name == "harmoatt_4answers (p.pt)" and policy.slug == "harmoatt_4answers_p.pt"
    assert not policy.can_fail  # a network alone: no solver failures to count
    assert build_policy("lm", get_robot("irb120")).can_fail
    assert checkpoint_label("runs/arm.pt", {"model": "mlp", "model_options": {"hidden": 32}}) == "mlp (arm.pt)"
    assert checkpoint_label("runs/x.pt", {}) == "x.pt"
    shipped = set(pretrained_names())
    args = _parser().parse_args(["--checkpoint", str(checkpoint)])
    assert _policies(args, "irb120", shipped, ("harmoatt",)) == [str(checkpoint), "harmoatt_4answers", "hybrid", "multistart"]
    assert _policies(args, "user_arm", shipped, ("harmoatt",)) == [str(checkpoint), "multistart"]  # nothing shipped to compare with
    args = _parser().parse_args(["--checkpoint", str(checkpoint), "--policy", "lm"])
    assert _policies(args, "irb120", shipped, ("harmoatt",)) == ["lm", str(checkpoint)]


class _StillPolicy:
    """A controller that always commands the joints where they are: the arm never moves."""

    def __init__(self) -> None:
        from hik_sim.solvers.base import IKResult

        self.failures, self.last_result = 0, {}
        self._result = IKResult(torch.zeros(1, 6), torch.zeros(1), torch.zeros(1), torch.ones(1, dtype=torch.bool),
                                torch.zeros(1), torch.zeros(1), torch.zeros(1), 1e-5)

    def reset(self) -> None:
        self.last_result.clear()

    def __call__(self, observation: dict) -> object:
        self.last_result[0] = self._result
        return observation["joint_pos"].copy()


def test_a_track_episode_that_never_moved_the_arm_is_not_shown_as_perfect() -> None:
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.evaluation.metrics import track_metrics
    from hik_sim.evaluation.rollout import STILL, rollout
    from hik_sim.evaluation.tables import summary_markdown as tables

    env = gym.make("hik_sim/Track-v0", robot="irb120", trajectory="figure_eight", speed=0.1)
    episode = rollout(env, _StillPolicy(), seed=0, max_steps=75)  # 1.5 s
    env.close()
    assert not episode.moved and episode.joint_travel < STILL
    row = track_metrics([episode])
    assert row["episodes_never_moved"] == 1 and row["joint_travel_max_rad"] < STILL
    # the goal keeps the start's orientation: the still arm's rotation error is ~0, its position error the path's distance
    assert row["rot_rms_deg"] < 0.05 and row["pos_rms_mm"] > 5.0
    report = {"robot": {"name": "irb120", "dof": 6}, "config": {"trajectory": "figure_eight", "speed": 0.1}, "files": [],
              "seconds": 1.0, "platform": "x", "date": "d",
              "policies": {"still": {"ik": dict.fromkeys(("pos_mean_mm", "pos_median_mm", "pos_p95_mm", "rot_mean_deg", "rot_median_deg",
                                                          "rot_p95_deg", "success_5mm_2deg", "success_10mm_20deg", "ms_per_target"), 0.0),
                                     "track": row | {"solver_failures": None}}}}
    line = [x for x in tables(report).splitlines() if x.startswith("| still |")][-1]  # the Track table's row
    assert f"| {row['rot_rms_deg']:.3f} (arm never moved) |" in line and line.endswith("| — |")


def test_the_latencies_leave_out_first_calls_which_are_reported_apart(tmp_path, capsys) -> None:  # noqa: ANN001
    out = tmp_path / "run"
    assert evaluate_main([*TINY_NO_VIDEO, "--policy", "harmoatt", "lm", "--env", "reach", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    report = json.loads((out / "report.json").read_text())
    for name in ("harmoatt", "lm"):
        first = report["policies"][name]["first_call_s"]
        assert first["batched"] >= 0 and first["controller"] >= 0
        assert report["policies"][name]["ik"]["first_call_s"] == first["batched"]
    assert "First calls (compilation, caches" in printed
    rows = {line.split(" | ")[0][2:]: line for line in printed.splitlines() if line.startswith("| ") and " | 1 | " in line}
    assert rows["harmoatt"].endswith("| — |") and rows["lm"].endswith("| 0 |")  # failures only where the solver can fail
    assert report["policies"]["harmoatt"]["reach"]["solver_failures"] is None
    assert set(report["phases"]) == {"episodes", "report"} and report["phases"]["episodes"] > 0
    assert printed.rstrip().splitlines()[-1] == f"open {out / 'report.html'}"
    assert not (out / ".evaluation.lock").exists()  # released at the end


def test_the_controller_warm_up_leaves_no_trace() -> None:
    import gymnasium as gym

    import hik_sim.envs  # noqa: F401
    from hik_sim.evaluation.policy import warm_up_controller

    policy = build_policy("lm", get_robot("irb120"))
    env = gym.make("hik_sim/Reach-v0", robot="irb120")
    seconds = warm_up_controller(policy, env, seed=0)
    env.close()
    assert seconds > 0 and policy.controller_first_call_s == seconds
    assert policy.controller.failures == 0 and not policy.controller.last_result and not policy.controller.last_target


def test_one_run_per_folder_a_second_is_refused_naming_it(tmp_path, capsys) -> None:  # noqa: ANN001
    import os
    import subprocess
    import sys

    from hik_sim.errors import OutputError
    from hik_sim.evaluation.run_folder import LOCK_NAME, claim_run_folder

    out = tmp_path / "shared"
    folder, created = claim_run_folder(out)
    assert created and (out / LOCK_NAME).read_text().startswith(f"pid={os.getpid()}\n")
    with pytest.raises(OutputError, match=rf"run folder {out} is locked .*another evaluation \(process {os.getpid()}"):
        claim_run_folder(out)
    with pytest.raises(SystemExit) as exited:
        evaluate_main([*TINY_NO_VIDEO, "--policy", "lm", "--out", str(out)])
    assert exited.value.code == 2 and f"run folder {out} is locked" in capsys.readouterr().err
    assert (out / LOCK_NAME).exists()  # the refused run leaves the holder's lock alone
    # a lock left by a run killed outright: its process is gone, and the message says what to do
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True, check=True)
    (out / LOCK_NAME).write_text(f"pid={dead.stdout.strip()}\nhost={__import__('socket').gethostname()}\n")
    with pytest.raises(OutputError, match=rf"no longer running.*remove the folder \(rm -r {out}\) or give another --out"):
        claim_run_folder(out)


def test_disk_full_and_long_names_are_errors_naming_the_path(tmp_path, capsys, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    import errno

    import hik_sim.evaluation.tables as tables
    from hik_sim.errors import OutputError
    from hik_sim.evaluation.evaluate import evaluate

    def full(curves: dict, out) -> list:  # noqa: ANN001
        raise OSError(errno.ENOSPC, "No space left on device", str(out / "ik_errors.png"))

    monkeypatch.setattr(tables, "write_plots", full)
    config = EvalConfig(policies=("lm",), envs=("reach",), episodes=1, ik_targets=20, video=False)
    with pytest.raises(OutputError, match=r"cannot write .*run/ik_errors.png \(No space left on device\); free some space"):
        evaluate(get_robot("irb120"), config, tmp_path / "run", progress=False)
    assert not (tmp_path / "run").exists()
    for option in ("--out", "--checkpoint", "--policy"):
        with pytest.raises(SystemExit) as exited:
            evaluate_main([*TINY_NO_VIDEO, option, str(tmp_path / ("x" * 300 + ".pt")), *(["--out", str(tmp_path / "r")] if option != "--out" else [])])
        err = capsys.readouterr().err
        assert exited.value.code == 2 and f"error: {option} " in err and "File name too long" in err, err


INTERRUPTED_RUN = """
import os, sys, time
from pathlib import Path
import hik_sim.evaluation.evaluate as evaluate
import hik_sim.evaluation.episodes as episodes
import hik_sim.evaluation.videos as videos

out, phase = Path(sys.argv[1]), sys.argv[2]

def stalled(*args, **kwargs):
    (out / "lm_reach.mp4").write_bytes(b"half a video")      # what a renderer leaves mid-way
    (out.parent / "ready").write_text("ready")
    time.sleep(60)

if phase == "episodes":
    episodes.run_episodes = stalled
else:
    videos.write_videos = stalled
sys.exit(evaluate.main(["--robot", "irb120", "--policy", "lm", "--env", "reach", "--episodes", "1", "--ik-targets", "20",
                        "--video-size", "64x48", "--no-progress", "--out", str(out)]))
"""


@pytest.mark.slow  # two subprocesses, each importing torch and MuJoCo
@pytest.mark.parametrize("phase", ["episodes", "videos"])
def test_sigterm_removes_partial_videos_and_leaves_a_folder_that_says_so(phase: str, tmp_path) -> None:  # noqa: ANN001
    import signal
    import subprocess
    import sys
    import time

    out = tmp_path / "run"
    process = subprocess.Popen([sys.executable, "-c", INTERRUPTED_RUN, str(out), phase], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    deadline = time.monotonic() + 120
    while not (tmp_path / "ready").exists() and time.monotonic() < deadline and process.poll() is None:
        time.sleep(0.1)
    assert (tmp_path / "ready").exists(), process.communicate()
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 143 and "interrupted (SIGTERM)" in err and "Traceback" not in err, err
    if phase == "episodes":  # nothing finished: nothing kept, the folder can be given again
        assert not out.exists()
        return
    assert not list(out.glob("*.mp4")) and not (out / ".evaluation.lock").exists()
    assert (out / "INCOMPLETE").read_text().startswith("interrupted by SIGTERM during videos")
    assert {"report.html", "report.json", "summary.md"} <= {p.name for p in out.iterdir()}  # the tables were finished
    from hik_sim.errors import OutputError
    from hik_sim.evaluation.run_folder import claim_run_folder

    with pytest.raises(OutputError, match=rf"holds an interrupted run \(INCOMPLETE: interrupted by SIGTERM during videos\); "
                                          rf"remove the folder \(rm -r {out}\) to reuse it"):
        claim_run_folder(out)


def test_ctrl_c_while_rendering_keeps_the_tables_and_says_what_is_missing(tmp_path, monkeypatch: pytest.MonkeyPatch) -> None:  # noqa: ANN001
    import hik_sim.evaluation.videos as videos
    from hik_sim.evaluation.evaluate import evaluate

    def interrupted(episodes, config, out, report, progress) -> list:  # noqa: ANN001
        (out / "side_by_side_reach.mp4").write_bytes(b"half a video")
        raise KeyboardInterrupt

    monkeypatch.setattr(videos, "write_videos", interrupted)
    config = EvalConfig(policies=("lm",), envs=("reach",), episodes=1, ik_targets=20, width=64, height=48)
    with pytest.raises(KeyboardInterrupt):
        evaluate(get_robot("irb120"), config, tmp_path / "run", progress=False)
    out = tmp_path / "run"
    assert (out / "INCOMPLETE").read_text().splitlines()[:2] == [
        "interrupted by SIGINT (Ctrl-C) during videos", "The tables, plots and report.html are complete; the videos are missing."]
    assert not list(out.glob("*.mp4")) and not (out / ".evaluation.lock").exists()
    assert json.loads((out / "report.json").read_text())["policies"]["lm"]["reach"]["episodes"] == 1
