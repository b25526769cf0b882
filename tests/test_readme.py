"""The README's quick start stays true: CI runs its test command, its pictures exist, its snippets run."""

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


@pytest.mark.slow
def test_readme_python_snippets_run(tmp_path: Path) -> None:
    snippets = re.findall(r"```python\n(.*?)```", README, flags=re.S)
    assert len(snippets) == 2  # the environment with a controller, and the solvers
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH", "")]))}
    for snippet in snippets:
        done = subprocess.run([sys.executable, "-c", snippet], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
