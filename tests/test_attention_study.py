"""The attention study's record and what README and docs say of it (benchmarks/attention_ablation.py trains and
measures it, benchmarks/attention_summary.py summarises it)."""

from __future__ import annotations

import importlib.util
import json
import math
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORD = ROOT / "benchmarks" / "results" / "attention_ablation"
FIELDS = ("robot", "model", "seed", "params", "minutes", "steps", "pos_mean_mm", "rot_mean_deg", "success_5mm_2deg")


def _study(name: str = "attention_summary"):  # noqa: ANN202 - a benchmark script, loaded as a module
    spec = importlib.util.spec_from_file_location(name, ROOT / "benchmarks" / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_run_is_a_full_row_at_the_calibrated_budget() -> None:
    study = _study()
    record = json.loads((RECORD / "attention_ablation.json").read_text())
    rates = json.loads((RECORD / "calibration.json").read_text())["steps_per_second"]
    assert record["rows"] and record["test_seed"] == 2024
    for row in record["rows"]:
        assert all(key in row for key in FIELDS), row
        assert row["model"] in study.ARMS and row["robot"] in study.ROBOTS
        # equal time: the steps are the budget at the arm's calibrated rate on that robot
        assert row["steps"] == max(1, round(record["minutes"] * 60 * rates[row["robot"]][row["model"]]))
        assert math.isclose(row["minutes"], record["minutes"], rel_tol=0.01)
        assert 0.0 <= row["success_5mm_2deg"] <= 1.0 and row["pos_mean_mm"] > 0
        if row["model"] in ("harmoatt", "harmoatt_max_entropy", "harmoatt_dense"):
            blocks = row["fusion"]
            assert blocks and all(abs(sum(b["mean_weight"].values()) - 1) < 1e-6 for b in blocks)
    assert len({(r["robot"], r["model"], r["seed"]) for r in record["rows"]}) == len(record["rows"])


def test_readme_and_docs_state_the_studys_result_as_the_record_holds_it() -> None:
    study = _study()
    rows = json.loads((RECORD / "attention_ablation.json").read_text())["rows"]
    lines = [line.removeprefix("- ") for line in study.headline(rows)]
    paper_models = (ROOT / "docs" / "paper_models.md").read_text(encoding="utf-8")
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    papers = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    for line in lines:
        assert line in paper_models, line
    for line in lines[:2]:  # the attention removed, and CycleIK as published
        assert line in readme and line in papers, line
    for row in study.paper_rows(rows):  # the paper-style headline table, computed from the study
        assert row in papers, row
    assert f"{len(rows)} of {len(study.ARMS) * 3 * 5} runs" in readme


def test_the_prose_quotes_the_paired_differences_the_record_holds() -> None:
    study = _study()
    rows = json.loads((RECORD / "attention_ablation.json").read_text())["rows"]
    differences = study.paired_differences(rows)
    no_attention, half = differences["harmoatt_no_attention"]["pos_mean_mm"]
    dense, dense_half = differences["harmoatt_dense"]["pos_mean_mm"]
    networks = " ".join((ROOT / "docs" / "networks.md").read_text(encoding="utf-8").split())
    paper_models = " ".join((ROOT / "docs" / "paper_models.md").read_text(encoding="utf-8").split())
    assert f"misses by {-no_attention:.2f} ± {half:.2f} mm less" in networks
    assert f"beats the `dense` trunk by {dense:.2f} ± {dense_half:.2f} mm" in paper_models
    # "less in all N pairs": every pair has the network without the attention ahead
    pairs = {(r["robot"], r["seed"]): r["pos_mean_mm"] for r in rows if r["model"] == "harmoatt"}
    gaps = [pairs[(r["robot"], r["seed"])] - r["pos_mean_mm"] for r in rows if r["model"] == "harmoatt_no_attention"]
    assert f"misses by less in all {len(gaps)} robot × seed pairs ({min(gaps):.2f}–{max(gaps):.2f} mm)" in paper_models
