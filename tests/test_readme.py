"""The README's quick start stays true: CI runs its test command, its pictures exist, its snippets run,
and every relative link in the README and docs/ reaches a file and heading that exist."""

from __future__ import annotations

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
