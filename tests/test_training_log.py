"""The trainer's validation curve: CSV and PNG beside the checkpoint as it trains, whole after a resume, TensorBoard on request."""

from __future__ import annotations

import csv
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import robot_by_id

from hik_sim.errors import OutputError
from hik_sim.evaluation.metrics import evaluate_network
from hik_sim.kinematics.chain import Chain
from hik_sim.learning.checkpoint import load_checkpoint
from hik_sim.learning.data import make_eval_set
from hik_sim.learning.train import TrainConfig, best_path, train, validation_score
from hik_sim.learning.training_log import CURVE_COLUMNS, TrainingLog, curve_paths

TINY = dict(model="mlp", batch=64, model_options=(("hidden", 32), ("layers", 2)), eval_size=64, eval_every=2,
            normalizer_samples=1000, device="cpu")


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open() as handle:
        return list(csv.DictReader(handle))


def test_the_curve_holds_every_validation_with_the_cards_final_figures(tmp_path: Path) -> None:
    result = train(robot_by_id("irb120"), TrainConfig(steps=6, **TINY), out=tmp_path / "net.pt", progress=False)
    csv_path, png_path = curve_paths(tmp_path / "net.pt")
    assert csv_path == tmp_path / "net.curve.csv" and png_path.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    rows = _rows(csv_path)
    assert [int(r["step"]) for r in rows] == [2, 4, 6]
    assert list(rows[0]) == list(CURVE_COLUMNS)
    assert float(rows[-1]["pos_mean_mm"]) == pytest.approx(result.card.metrics["pos_mean_mm"], rel=1e-5)
    assert float(rows[-1]["success_5mm_2deg"]) == pytest.approx(result.card.metrics["success_5mm_2deg"], abs=1e-6)
    assert [float(r["elapsed_s"]) for r in rows] == sorted(float(r["elapsed_s"]) for r in rows)
    assert not list(tmp_path.glob(".partial-*"))  # written atomically, nothing left behind


def test_a_checkpoint_path_without_a_suffix_is_written_and_read(tmp_path: Path) -> None:
    result = train(robot_by_id("irb120"), TrainConfig(steps=2, **TINY), out=tmp_path / "net", progress=False)
    assert result.path == tmp_path / "net" and load_checkpoint(tmp_path / "net", robot=robot_by_id("irb120"))[1].steps == 2
    assert not list(tmp_path.glob(".partial-*"))


def test_a_resumed_run_writes_the_whole_history(tmp_path: Path) -> None:
    first = train(robot_by_id("irb120"), TrainConfig(steps=4, **TINY), out=tmp_path / "net.pt", progress=False)
    train(robot_by_id("irb120"), TrainConfig(steps=8, **TINY), out=tmp_path / "net.pt", resume=first.path, progress=False)
    assert [int(r["step"]) for r in _rows(tmp_path / "net.curve.csv")] == [2, 4, 6, 8]


def test_keep_best_keeps_the_weights_of_the_best_validation_with_their_card(tmp_path: Path) -> None:
    robot = robot_by_id("irb120")
    config = TrainConfig(steps=12, lr=3e-2, keep_best=True, **TINY)  # a high rate: the curve is not monotone
    result = train(robot, config, out=tmp_path / "net.pt", progress=False)
    best_row = min(result.history, key=validation_score)
    network, card = load_checkpoint(best_path(tmp_path / "net.pt"), robot=robot)
    assert best_path(tmp_path / "net.pt") == tmp_path / "net.best.pt"
    assert card.steps == best_row["step"] and card.metrics["pos_mean_mm"] == pytest.approx(best_row["pos_mean_mm"], rel=1e-6)
    again = evaluate_network(network, Chain(robot), make_eval_set(Chain(robot), config.eval_seed, config.eval_size))
    assert again["pos_mean_mm"] == pytest.approx(best_row["pos_mean_mm"], rel=1e-4)  # the weights are that validation's
    assert again["rot_mean_deg"] == pytest.approx(best_row["rot_mean_deg"], rel=1e-4)
    assert validation_score(card.metrics) <= min(validation_score(r) for r in result.history) + 1e-9
    train(robot, TrainConfig(steps=4, **TINY), out=tmp_path / "plain.pt", progress=False)
    assert not best_path(tmp_path / "plain.pt").exists()  # off by default


def test_tensorboard_gets_every_validation_or_a_clear_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    history = [{"step": s, "elapsed_s": float(s), "loss": 1.0 / s, "pos_mean_mm": 10.0 / s, "rot_mean_deg": 5.0 / s,
                "success_5mm_2deg": 0.1 * s, "success_10mm_20deg": 0.2 * s} for s in (1, 2, 3)]
    try:
        from tensorboard.backend.event_processing.event_accumulator import EventAccumulator
    except ImportError:
        EventAccumulator = None
    if EventAccumulator is not None:
        log = TrainingLog(None, tmp_path / "tb")
        log.update(history[:2])
        log.update(history)  # only the new row is added
        log.close()
        events = EventAccumulator(str(tmp_path / "tb"))
        events.Reload()
        values = [(e.step, e.value) for e in events.Scalars("validation/pos_mean_mm")]
        assert values == [(1, pytest.approx(10.0)), (2, pytest.approx(5.0)), (3, pytest.approx(10 / 3))]
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", None)  # as if tensorboard were not installed
    with pytest.raises(OutputError, match="pip install tensorboard"):
        TrainingLog(None, tmp_path / "tb2")


def test_the_cli_prints_where_the_curve_is(tmp_path: Path) -> None:
    out = tmp_path / "cli.pt"
    done = subprocess.run([sys.executable, "-m", "hik_sim.train", "--robot", "irb120", "--model", "mlp", "--steps", "2",
                           "--batch", "32", "--eval-size", "32", "--eval-every", "1", "--model-option", "hidden=16",
                           "--no-progress", "--out", str(out)], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert f"curve        {tmp_path / 'cli.curve.csv'}" in done.stdout
    assert [int(r["step"]) for r in _rows(tmp_path / "cli.curve.csv")] == [1, 2]


def test_a_curve_or_tensorboard_folder_that_cannot_be_written_is_an_output_error(tmp_path: Path,
                                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    import errno
    import os

    import hik_sim.learning.training_log as training_log

    history = [{"step": 1, "elapsed_s": 1.0, "pos_mean_mm": 10.0, "rot_mean_deg": 5.0, "success_5mm_2deg": 0.1,
                "success_10mm_20deg": 0.2}]

    def disk_full(target: Path, write) -> None:  # noqa: ANN001
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(training_log, "write_atomically", disk_full)
    with pytest.raises(OutputError, match=r"cannot write the validation curve .*net.curve.\*: No space left on device"):
        TrainingLog(tmp_path / "net.pt").update(history)
    (tmp_path / "README.md").write_text("x")
    monkeypatch.setitem(sys.modules, "torch.utils.tensorboard", type(sys)("fake_tensorboard"))  # no package needed
    sys.modules["torch.utils.tensorboard"].SummaryWriter = object  # type: ignore[attr-defined]
    with pytest.raises(OutputError, match=r"cannot write tensorboard .*README.md/tb: Not a directory"):
        TrainingLog(None, tmp_path / "README.md" / "tb")
