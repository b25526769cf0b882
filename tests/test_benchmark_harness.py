"""benchmarks/harness.py, what every benchmark script shares: options, provenance, tables, records, timings."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType

import pytest
import torch

from hik_sim.errors import HikError

HARNESS = Path(__file__).resolve().parents[1] / "benchmarks" / "harness.py"


@pytest.fixture(scope="module")
def harness() -> ModuleType:
    spec = importlib.util.spec_from_file_location("harness", HARNESS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)  # dataclasses resolve annotations through sys.modules
    spec.loader.exec_module(module)
    return module


def test_the_parser_has_the_record_folder_and_the_shared_options(harness: ModuleType, tmp_path: Path) -> None:
    parser = harness.make_parser("benchmarks/some_bench.py", "What it measures.", out="benchmarks/results/some")
    harness.add_robots(parser, ["irb120"])
    harness.add_quick(parser)
    harness.add_progress(parser)
    parser.add_argument("--targets", type=harness.at_least(1), default=10)
    assert parser.prog == "some_bench"
    args = parser.parse_args([])
    assert (args.out, args.robots, args.quick, args.no_progress, args.targets) == (Path("benchmarks/results/some"), ["irb120"], False,
                                                                                 False, 10)
    args = parser.parse_args(["--out", str(tmp_path), "--robots", "panda", "g1", "--quick", "--no-progress", "--targets", "3"])
    assert (args.out, args.robots, args.quick, args.no_progress, args.targets) == (tmp_path, ["panda", "g1"], True, True, 3)
    for bad in (["--robots", "no_such_robot"], ["--targets", "0"], ["--targets", "many"]):
        with pytest.raises(SystemExit) as excinfo:
            parser.parse_args(bad)
        assert excinfo.value.code == 2, bad


def test_robots_default_to_every_registered_robot(harness: ModuleType) -> None:
    from hik_sim.robots import robot_names

    parser = harness.make_parser("benchmarks/x.py", "x")
    harness.add_robots(parser, None, nargs="*")
    harness.add_robot(parser, "panda")
    args = parser.parse_args([])
    assert args.robots == list(robot_names()) and args.robot == "panda"
    assert parser.parse_args(["--robots"]).robots == []


def test_provenance_names_the_command_the_date_the_machine_and_the_versions(harness: ModuleType) -> None:
    info = harness.provenance("/anywhere/benchmarks/some_bench.py", ["--robots", "irb120", "--out", "/tmp/a b"], extra_version="1.0")
    assert info["command"] == "python benchmarks/some_bench.py --robots irb120 --out '/tmp/a b'"
    assert info["date"].endswith("+00:00") and info["torch"] == torch.__version__ and info["date"] <= harness.utc_now()
    assert info["torch_threads"] == torch.get_num_threads() and info["cpu_count"] >= 1
    for key in ("platform", "cpu_model", "python", "mujoco", "numpy"):
        assert info[key] and info[key] != "not installed", key
    assert list(info)[-1] == "extra_version"
    line = harness.provenance_line(info)
    assert line.startswith(f"`{info['command']}` · {info['date']} · ") and f"torch {info['torch']} (" in line
    with harness.torch_threads(1):
        assert harness.provenance("x.py", []).get("torch_threads") == 1
        assert "(1 thread)" in harness.provenance_line(harness.provenance("x.py", []))


def test_markdown_table_aligns_the_columns_and_refuses_a_ragged_row(harness: ModuleType) -> None:
    table = harness.markdown_table(["robot", "success"], [["irb120", "99.0 %"], ("g1", 1.5)], "lr")
    assert table == "| robot | success |\n|---|---:|\n| irb120 | 99.0 % |\n| g1 | 1.5 |"
    with pytest.raises(HikError, match="row 0 has 1 cells for 2 columns"):
        harness.markdown_table(["robot", "success"], [["irb120"]], "lr")
    with pytest.raises(HikError, match="align"):
        harness.markdown_table(["robot", "success"], [], "lc")


def test_write_record_puts_the_provenance_first_in_both_files(harness: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    info = harness.provenance("benchmarks/some_bench.py", ["--quick"])
    json_path, md_path = harness.write_record(tmp_path / "new", "some", {"rows": [{"a": 1}]}, "| a |\n|---|\n| 1 |\n", info)
    record = json.loads(json_path.read_text())
    assert list(record) == ["provenance", "rows"] and record["provenance"] == info and record["rows"] == [{"a": 1}]
    assert md_path.read_text() == harness.provenance_line(info) + "\n\n| a |\n|---|\n| 1 |\n"
    assert str(json_path) in capsys.readouterr().err
    _, md_path = harness.write_record(tmp_path, "titled", {}, "text", info, title="What it measures")
    assert md_path.read_text() == f"# What it measures\n\n{harness.provenance_line(info)}\n\ntext\n"
    alone = harness.write_markdown(tmp_path / "deeper" / "alone.md", "| a |\n\n\n", info)
    assert alone.read_text() == f"{harness.provenance_line(info)}\n\n| a |\n"
    with pytest.raises(HikError, match="provenance"):
        harness.write_record(tmp_path, "some", {"provenance": {}}, "", info)


def test_timing_summarises_the_calls(harness: ModuleType) -> None:
    timing = harness.Timing.from_samples([0.003, 0.001, 0.002, 0.010])
    assert (timing.median_s, timing.min_s, timing.calls) == (0.0025, 0.001, 4)
    assert timing.median_s <= timing.p95_s <= 0.010
    with pytest.raises(HikError):
        harness.Timing.from_samples([])


def test_time_side_by_side_times_every_candidate_in_turns(harness: ModuleType) -> None:
    calls: list[tuple[str, int]] = []
    fast, slow = harness.time_side_by_side([(lambda x: calls.append(("fast", x)), [0, 1]),
                                            (lambda x: calls.append(("slow", x)) or sum(range(20_000)), [2])], calls=6, warmup=1, block=3)
    assert fast.calls == slow.calls == 6 and fast.median_s < slow.median_s
    # one warm-up call each, then blocks of 3 timed calls, each block after one untimed call
    assert calls[:2] == [("fast", 0), ("slow", 2)] and calls[2:6] == [("fast", 0), ("fast", 0), ("fast", 1), ("fast", 0)]
    assert len(calls) == 2 + 2 * (2 * (1 + 3))
    with pytest.raises(HikError):
        harness.time_side_by_side([(print, [0])], calls=0, warmup=0)


def test_torch_threads_restores_the_callers_count(harness: ModuleType) -> None:
    before = torch.get_num_threads()
    with pytest.raises(RuntimeError), harness.torch_threads(1):
        assert torch.get_num_threads() == 1
        raise RuntimeError
    assert torch.get_num_threads() == before


SCRIPTS = sorted(path for path in HARNESS.parent.glob("*.py") if path != HARNESS and "import harness" in path.read_text(encoding="utf-8"))


@pytest.mark.parametrize("script", SCRIPTS, ids=[path.stem for path in SCRIPTS])
def test_every_script_on_the_harness_builds_its_command_line(script: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A script's parser, as ``--help`` prints it: the record folder among its options (and the import of the harness
    works when the script is loaded by its path)."""
    spec = importlib.util.spec_from_file_location(script.stem, script)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules.setdefault(spec.name, module)
    spec.loader.exec_module(module)
    with pytest.raises(SystemExit) as excinfo:
        module.main(["--help"])
    assert excinfo.value.code == 0
    text = " ".join(capsys.readouterr().out.split())  # argparse wraps the lines at the terminal's width
    assert text.startswith(f"usage: {script.stem} ") and "--out OUT record folder (default " in text


def test_every_script_is_on_the_harness() -> None:
    scripts = sorted(path for path in HARNESS.parent.glob("*.py") if path != HARNESS)
    assert len(scripts) >= 21 and SCRIPTS == scripts, sorted(path.stem for path in set(scripts) - set(SCRIPTS))
