"""scripts/train_paper_trunk.py: each robot's paper-trunk run is its ``dense`` network's recipe with the paper's trunk, as
many weights, and the ``dense`` network's time in steps; benchmarks/paper_trunk.py decides which ships, and what ships
is that decision's network."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest
import torch

from hik_sim.learning.models import build_model, parameter_count
from hik_sim.robots import get_robot, robot_names

ROOT = Path(__file__).resolve().parent.parent


def _script():  # noqa: ANN202 - the script, loaded by its path
    spec = importlib.util.spec_from_file_location("train_paper_trunk", ROOT / "scripts" / "train_paper_trunk.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.parametrize("robot", robot_names())
def test_a_run_is_the_shipped_recipe_with_the_papers_trunk_at_the_shipped_time(robot: str, tmp_path: Path) -> None:
    script = _script()
    rate = json.loads(script.CALIBRATION.read_text())["steps_per_second"][robot]
    argv = script.command(robot, tmp_path / "run.safetensors", 0, rate)
    options = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--model-option")
    dense = script.budget(robot, rate)[0]
    assert dense.model_options["trunk"] == "dense"
    # the dense network's options, the dense trunk's sizes replaced by the paper's trunk
    assert options.pop("trunk") == "cycleik" and "width" in options
    expected = {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in dense.model_options.items()
                if k not in script.DENSE_ONLY}
    assert {k: v for k, v in options.items() if k != "width"} == expected
    # as many weights as the dense network (within 2 %: the widths at the blocks move in steps of 8 features)
    values = {k: (v == "true") if v in ("true", "false") else int(v) if v.isdigit() else float(v) for k, v in options.items()}
    model_options = {k: v for k, v in values.items() if k in ("width", "hypotheses")}
    joints = get_robot(robot).dof
    model = build_model("harmoatt", -torch.ones(joints), torch.ones(joints), trunk="cycleik",
                        position_inputs=5 if values.get("turn_input") else 3, **model_options)
    assert abs(parameter_count(model) - dense.parameters) <= 0.02 * dense.parameters
    # the dense network's lineage of steps, scaled by the two trunks' measured step rates
    steps = int(argv[argv.index("--steps") + 1])
    assert steps == round(dense.total_steps * rate["harmoatt"] / rate["harmoatt_dense"])
    assert "--keep-best" in argv and "--resume" not in argv and argv[argv.index("--batch") + 1] == "256"


def test_the_comparison_decides_on_validation_and_only_for_a_finished_run() -> None:
    spec = importlib.util.spec_from_file_location("paper_trunk", ROOT / "benchmarks" / "paper_trunk.py")
    assert spec is not None and spec.loader is not None
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    dense = {"validation": {"pos_mean_mm": 2.0, "rot_mean_deg": 1.0, "success_5mm_2deg": 0.9}}
    better = {"validation": {"pos_mean_mm": 1.5, "rot_mean_deg": 0.9, "success_5mm_2deg": 0.92}, "done": 1.0}
    worse = {"validation": {"pos_mean_mm": 2.5, "rot_mean_deg": 0.9, "success_5mm_2deg": 0.95}, "done": 1.0}
    assert compare.decision(dense, better) == "ship the paper trunk"
    assert compare.decision(dense, worse) == "keep dense"  # 2.5/5 + 0.9/2 > 2.0/5 + 1.0/2, whatever the success
    assert compare.decision(dense, {**better, "done": 0.4}) == "not finished (40 % of its steps)"


def test_the_docs_quote_the_comparisons_record() -> None:
    spec = importlib.util.spec_from_file_location("paper_trunk", ROOT / "benchmarks" / "paper_trunk.py")
    assert spec is not None and spec.loader is not None
    compare = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compare)
    rows = json.loads((ROOT / "benchmarks" / "results" / "paper_trunk" / "paper_trunk.json").read_text())["rows"]
    assert [row["network"] for row in rows[:2]] == ["dense", "paper trunk (cycleik)"] and len(rows) % 2 == 0
    lines = compare.summary(rows).splitlines()
    assert len(lines) == len(rows) // 2
    docs = (ROOT / "docs" / "paper_models.md").read_text(encoding="utf-8")
    for line in lines:
        assert line in docs, line


def test_the_docs_quote_jvrc1s_divergence_from_its_curve_and_card() -> None:
    import csv

    run = ROOT / "benchmarks" / "results" / "paper_trunk" / "runs" / "jvrc1"
    curve = {int(row["step"]): row for row in csv.DictReader((run / "harmoatt_4answers.curve.csv").open())}
    final = json.loads((run / "harmoatt_4answers.json").read_text())["metrics"]
    docs = (ROOT / "docs" / "paper_models.md").read_text(encoding="utf-8")
    quoted = (f"training loss rose from {float(curve[84000]['loss']):.2f} to {float(curve[88000]['loss']):.2f} and its "
              f"validation mean error from {float(curve[84000]['pos_mean_mm']):.2f} to {float(curve[88000]['pos_mean_mm']):.2f} mm")
    assert quoted in " ".join(docs.split())
    assert f"({final['pos_mean_mm']:.2f} mm mean, {final['pos_median_mm']:.2f} mm median)" in docs


@pytest.mark.parametrize("robot", robot_names())
def test_each_robot_ships_the_network_its_comparison_chose(robot: str) -> None:
    """Where the record says "ship the paper trunk" the shipped ``harmoatt_4answers`` has the run's best weights and the
    run's options; everywhere else it is, byte for byte, the ``dense`` reference the comparison measured."""
    from safetensors.torch import load_file

    from hik_sim.learning.checkpoint import read_checkpoint
    from hik_sim.learning.train_options import best_path
    from hik_sim.policies import PRETRAINED_DIR

    script = _script()
    rows = json.loads((ROOT / "benchmarks" / "results" / "paper_trunk" / "paper_trunk.json").read_text())["rows"]
    decided = {row["robot"]: row["decision"] for row in rows if "decision" in row}
    shipped = PRETRAINED_DIR / robot / f"{script.NAME}.safetensors"
    card = json.loads(shipped.with_suffix(".json").read_text())
    if decided.get(robot) != "ship the paper trunk":
        dense = script.DENSE / robot / f"{script.NAME}.safetensors"
        assert shipped.read_bytes() == dense.read_bytes() and card["model_options"]["trunk"] == "dense"
        return
    run = script.RUNS / robot / f"{script.NAME}.safetensors"
    best = load_file(best_path(run))
    weights = load_file(shipped)
    assert set(weights) <= set(best) and all(torch.equal(weights[k], best[k]) for k in weights)
    rate = json.loads(script.CALIBRATION.read_text())["steps_per_second"][robot]
    argv = script.command(robot, run, 0, rate)
    options = dict(argv[i + 1].split("=", 1) for i, a in enumerate(argv) if a == "--model-option")
    assert {k: str(v).lower() if isinstance(v, bool) else str(v) for k, v in card["model_options"].items()} == options
    assert card["model_options"] == read_checkpoint(best_path(run))["card"]["model_options"]
