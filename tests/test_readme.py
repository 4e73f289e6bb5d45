"""The README's first commands: what a fresh machine runs, and what CI runs."""

from __future__ import annotations

import re
from pathlib import Path

import tomllib

ROOT = Path(__file__).resolve().parents[1]


def first_commands() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    block = re.search(r"```bash\n(.*?)```", readme, flags=re.S).group(1)
    return block.strip().splitlines()


def test_ci_runs_exactly_the_readmes_test_command():
    main_job, tests = first_commands()
    assert "rankkit compare" in main_job and tests.endswith("python -m pytest -q")
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    assert tests in ci_lines


def test_the_readmes_commands_name_extras_the_distribution_has():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "rankkit-llm"  # PyPI's `rankkit` is an unrelated project
    assert any(d.startswith("httpx") for d in project["dependencies"])  # hosted judges after the first command
    for command in first_commands():
        for extras in re.findall(r'-e "\.\[([a-z,]+)\]"', command):
            assert set(extras.split(",")) <= set(project["optional-dependencies"]), command
