"""The README's quick start stays true: CI runs its test command, its pictures exist, its snippets run,
and every relative link in the README and docs/ reaches a file and heading that exist."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
README = (ROOT / "README.md").read_text(encoding="utf-8")


def _quick_start_commands() -> list[str]:
    section = README.split("## Quick start", 1)[1].split("\n## ", 1)[0]
    return [block.strip() for block in re.findall(r"```bash\n(.*?)```", section, flags=re.S)]


def test_quick_start_is_two_commands_and_ci_runs_the_test_command() -> None:
    main_job, tests = _quick_start_commands()[:2]  # the set-up commands; a scene check may follow
    assert "\n" not in main_job and "\n" not in tests
    assert "torch==2.13.0" in main_job and "torch==2.13.0" in tests  # never a multi-GB CUDA build
    assert main_job.endswith("python -m hik_sim.evaluate")  # the main job, on the default robot
    assert tests.endswith("python -m pytest -q") and '".[test]"' in tests
    ci_lines = (ROOT / ".ci" / "run").read_text().splitlines()
    assert tests in ci_lines


def test_readme_pictures_exist() -> None:
    for image in re.findall(r"\]\((docs/images/[^)]+)\)", README):
        assert (ROOT / image).is_file(), image


def test_readme_links_to_docs_pages_that_exist() -> None:
    for page in re.findall(r"\]\((docs/[^)#]+\.md)", README):
        assert (ROOT / page).is_file(), page


def _heading_anchors(page: Path) -> set[str]:
    """The anchors GitHub gives a page's headings: lower case, punctuation dropped, spaces as '-', repeats numbered."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    anchors: set[str] = set()
    seen: dict[str, int] = {}
    for heading in re.findall(r"^#{1,6} (.+)$", text, flags=re.M):
        slug = re.sub(r"[^\w\- ]", "", heading.replace("`", "").strip().lower()).replace(" ", "-")
        anchors.add(f"{slug}-{seen[slug]}" if slug in seen else slug)
        seen[slug] = seen.get(slug, 0) + 1
    return anchors


def _broken_links(page: Path) -> list[str]:
    """Relative links of a markdown page (outside code blocks) whose file or heading does not exist."""
    text = re.sub(r"```.*?```", "", page.read_text(encoding="utf-8"), flags=re.S)
    broken = []
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):  # https:, mailto:
            continue
        path, _, anchor = target.partition("#")
        linked = page.parent / path if path else page
        if not linked.exists() or (anchor and linked.suffix == ".md" and anchor not in _heading_anchors(linked)):
            broken.append(target)
    return broken


def test_links_in_readme_and_docs_reach_files_and_headings_that_exist(tmp_path: Path) -> None:
    for page in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        assert _broken_links(page) == [], page.name
    page = tmp_path / "page.md"  # the check itself finds a missing heading, a repeated one and a missing file
    page.write_text("# A `code` title, twice\n# A `code` title, twice\n[x](#a-code-title-twice-1) [y](#a-code-title-twice-2) [z](gone.md)\n")
    assert _broken_links(page) == ["#a-code-title-twice-2", "gone.md"]


@pytest.mark.slow
def test_readme_python_snippets_run(tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(snippets) == 2  # the environment with a controller, and the solvers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    for snippet in snippets:
        done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]


_RECORDS = ROOT / "benchmarks" / "results"


def _network_alone(robot: str) -> list[float]:
    rows = json.loads((_RECORDS / "shipped_networks.json").read_text())["rows"]
    test = next(row["test"] for row in rows if row["robot"] == robot and row["name"] == "harmoatt_4answers")
    return [test["pos_mean_mm"], test["rot_mean_deg"], 100 * test["success_5mm_2deg"]]


def _hybrid_success(robot: str) -> list[float]:
    rows = json.loads((_RECORDS / "success_rate.json").read_text())["rows"]
    return [next(100 * row["success_5mm_2deg"] for row in rows if row["robot"] == robot and row["restarts"] == 49)]


def _one_target(solver: str, robot: str) -> list[float]:
    """A single-target row of the peers' record (``solver`` a regular expression)."""
    record = json.loads((_RECORDS / "single_target_peers" / "peers_all.json").read_text())
    peer = next(row for row in record["peers"][robot] if re.fullmatch(solver, row["solver"]))
    return [100 * peer["success_5mm_2deg"]] if peer["success_5mm_2deg"] == 0 else [peer["median_ms"]]  # a peer that fails: "0.0 % solved"


# The results table's columns after robot and DOF: the record each cell links to, and its figures in the order shown.
_COLUMNS = [
    ("shipped_networks.json", _network_alone),
    ("success_rate.json", _hybrid_success),
    ("single_target_peers/peers_all.json", lambda robot: _one_target(r"hik_sim single-target \(harmoatt_4answers seed → LM\)", robot)),
    ("single_target_peers/peers_all.json", lambda robot: _one_target(r"TRAC-IK \(pytracik, Speed, 5 ms\)", robot)),
]


def _results_rows(readme: str) -> list[list[str]]:
    section = readme.split("## Results", 1)[1].split("\n## ", 1)[0]
    return [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines() if line.startswith("| `")]


def _figure_mismatches(readme: str) -> list[str]:
    """Cells of README's results table that link elsewhere than their record or show a figure it does not hold at the rounding shown."""
    mismatches = []
    for robot_cell, _dof, *cells in _results_rows(readme):
        robot = robot_cell.strip("`")
        for cell, (record, figures) in zip(cells, _COLUMNS, strict=True):
            link = re.fullmatch(r"\[(.+)\]\(benchmarks/results/([^)]+)\)", cell)
            if link is None or link.group(2) != record:
                mismatches.append(f"{robot}: {cell} does not link to benchmarks/results/{record}")
                continue
            shown = re.findall(r"\d+\.\d+|\d+", link.group(1))
            expected = figures(robot)
            rounded = [f"{value:.{len(text.partition('.')[2])}f}" for text, value in zip(shown, expected)]
            if len(shown) != len(expected) or rounded != shown:
                mismatches.append(f"{robot}: {cell} shows {shown}, {record} holds {rounded or expected}")
    return mismatches


def test_readme_results_table_figures_match_their_records() -> None:
    rows = _results_rows(README)
    assert [row[0].strip("`") for row in rows] == ["irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"]
    assert _figure_mismatches(README) == []
    # the check itself finds a figure off by one in its last digit, and a link to another record
    trac = next(line for line in README.splitlines() if line.startswith("| `irb120`")).rsplit("](", 1)[0].rsplit("[", 1)[1]
    wrong = README.replace("[1.84 / 0.87 / 90.9 %]", "[1.84 / 0.88 / 90.9 %]").replace(
        f"[{trac}](benchmarks/results/single_target_peers/peers_all.json)", f"[{trac}](benchmarks/results/paper.json)")
    assert len(_figure_mismatches(wrong)) == 2


def _record_rows_missing(page: str, record: str) -> list[str]:
    """Rows of the page's tables that copy a record's rows (first cell ``paper``, ``ours``, a robot, or a comparison)
    but are not, verbatim, lines of that record."""
    robots = {"irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"}
    lines = set(record.splitlines())
    copied = [line for line in page.splitlines() if line.startswith("| ")
              and (line.split("|")[1].strip() in robots | {"paper", "ours"} or re.match(r"\| (our|paper's|ours,) ", line))]
    return [line for line in copied if line not in lines]


def test_papers_md_tables_are_rows_of_the_paper_record() -> None:
    page = (ROOT / "docs" / "papers.md").read_text(encoding="utf-8")
    # the paper suite's rows, and the headline rows the attention study computes in its own record
    record = (_RECORDS / "paper.md").read_text(encoding="utf-8") + "\n" + (
        _RECORDS / "attention_ablation" / "attention_ablation.md").read_text(encoding="utf-8")
    assert len(_record_rows_missing(page, record)) == 0
    assert len([line for line in page.splitlines() if line.startswith(("| paper |", "| ours |", "| talos |"))]) >= 14
    changed = page.replace("| 82.35 % |", "| 82.53 % |", 1)  # the check itself finds a figure that is not the record's
    assert len(_record_rows_missing(changed, record)) == 1


def _ik_all_hybrid_figures(robot: str) -> list[float]:
    """results.md's batched hybrid row, in its order: hybrid evaluations, ms; multistart-10 (ours) evaluations, ms;
    against ours: evaluation reduction [%], speed-up; against the paper's: the same."""
    table = next(t for t in json.loads((_RECORDS / "ik_all.json").read_text())["tables"] if t["robot"] == robot)
    rows = {row["solver"]: row for row in table["rows"]}
    hybrid, multistart = rows["hybrid: network + LM"], rows["multistart-10 LM"]
    ours, paper = table["hybrid_vs_multistart"], table["hybrid_vs_paper_multistart"]
    return [hybrid["function_evals"], hybrid["ms_per_target"], multistart["function_evals"], multistart["ms_per_target"],
            ours["evals_reduction_pct"], ours["time_speedup"], paper["evals_reduction_pct"], paper["time_speedup"]]


def test_results_md_hybrid_table_matches_the_ik_all_record() -> None:
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = page.split("## The hybrid, batched", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| (irb120|panda|talos|romeo|icub|g1|jvrc1) \|", line)]
    assert [row[0] for row in rows] == ["irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"]
    for robot, *cells in rows:
        shown = re.findall(r"\d+\.\d+", " ".join(cells))
        assert len(shown) == 8, robot
        expected = [f"{value:.{len(text.partition('.')[2])}f}" for text, value in zip(shown, _ik_all_hybrid_figures(robot))]
        assert shown == expected, robot


def test_readme_single_target_against_trac_ik_matches_the_record() -> None:
    """The README's "0.xx–0.yy× TRAC-IK's median" is the record's range, and the cold HarmoAtt-IK-seeded
    single-target solve stays at or below half of TRAC-IK's median on every robot where TRAC-IK works."""
    ratios = json.loads((_RECORDS / "single_target_peers" / "peers_all.json").read_text())["cold_single_target_over_trac_ik"]
    assert len(ratios) >= 6 and max(ratios.values()) <= 0.5
    shown = re.search(r"(\d\.\d\d)–(\d\.\d\d)× TRAC-IK's median", README)
    assert shown is not None
    assert [shown.group(1), shown.group(2)] == [f"{min(ratios.values()):.2f}", f"{max(ratios.values()):.2f}"]


def _one_target_row(robot: str) -> list[str]:
    """results.md's one-target row for a robot, as the record gives it: cold HarmoAtt-IK median / p95, cold mlp_seed,
    warm, no network, TRAC-IK, optik-py (a solver that solves nothing: "fails every target")."""
    rows = {row["solver"]: row for row in json.loads((_RECORDS / "single_target_peers" / "peers_all.json").read_text())["peers"][robot]}

    def median(solver: str) -> str:
        return "fails every target" if rows[solver]["success_5mm_2deg"] == 0 else f"{rows[solver]['median_ms']:.3f}"

    seeded = rows["hik_sim single-target (harmoatt_4answers seed → LM)"]
    return [robot, f"{seeded['median_ms']:.3f} / {seeded['p95_ms']:.3f}", median("hik_sim single-target (mlp_seed seed → LM)"),
            median("hik_sim single-target, warm start (tracking)"), median("hik_sim single-target, no network (home → LM → random restarts)"),
            median("TRAC-IK (pytracik, Speed, 5 ms)"), median("optik-py")]


def test_results_md_one_target_table_matches_the_peers_record() -> None:
    page = (ROOT / "docs" / "results.md").read_text(encoding="utf-8")
    section = page.split("## One target per call", 1)[1].split("\n## ", 1)[0]
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in section.splitlines()
            if re.match(r"\| (irb120|panda|talos|romeo|icub|g1|jvrc1) \|", line)]
    assert [row[0] for row in rows] == ["irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"]
    assert rows == [_one_target_row(row[0]) for row in rows]


def test_networks_md_closed_loop_table_matches_the_closed_loop_record() -> None:
    """networks.md's closed-loop table: open loop, five corrections and the policy's success, the policy's FK per target
    and ms per 1,000 targets, each the closed_loop record's row at the rounding shown."""
    rows = json.loads((_RECORDS / "closed_loop.json").read_text())["rows"]
    page = (ROOT / "docs" / "networks.md").read_text(encoding="utf-8")
    shown = [[cell.strip() for cell in line.strip("|").split("|")] for line in page.splitlines()
             if re.match(r"\| (irb120|panda|talos|romeo|icub|g1|jvrc1) \| [\d.]+ % \| [\d.]+ % \| [\d.]+ % \|", line)]
    assert [row[0] for row in shown] == ["irb120", "panda", "talos", "romeo", "icub", "g1", "jvrc1"]
    for robot, *cells in shown:
        mine = [r for r in rows if r["robot"] == robot and r["branches"] == 1]
        open_loop = next(r for r in mine if r["corrections"] == 0 and r["network"] == "harmoatt_4answers")
        corrected = next(r for r in mine if r["corrections"] == 5 and r["network"] == "harmoatt_4answers")
        policy = next(r for r in mine if r["corrections"] == 5 and "+" in r["network"] and r["network"].endswith("turned"))
        expected = [f"{100 * open_loop['success_5mm_2deg']:.1f} %", f"{100 * corrected['success_5mm_2deg']:.1f} %",
                    f"{100 * policy['success_5mm_2deg']:.1f} %", f"{policy['fk_per_target']:.2f}", f"{policy['ms_per_1000']:.0f}"]
        assert cells == expected, robot
