"""The README's quick start stays true: CI runs its test command, its pictures exist."""

from __future__ import annotations

import re
from pathlib import Path

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
