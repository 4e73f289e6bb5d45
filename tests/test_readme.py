"""The README's first commands: what a fresh machine runs, and what CI runs."""

from __future__ import annotations

import itertools
import re
import shlex
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


def marker_expression(arguments: list[str]) -> str:
    """The expression of the last ``-m`` in a pytest command's ``arguments`` (a later one wins)."""
    return arguments[len(arguments) - arguments[::-1].index("-m")]


def test_ci_then_runs_exactly_the_tests_the_readmes_command_leaves_out():
    """The default run (the README's command with pyproject.toml's addopts) and CI's marked run
    split the suite: whatever markers a test has, exactly one of the two runs it."""
    pytest_options = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["pytest"]
    default = marker_expression(shlex.split(pytest_options["ini_options"]["addopts"]))
    ci_lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    marked_runs = [line for line in ci_lines if line.startswith("python -m pytest")]
    assert len(marked_runs) == 1 and ci_lines.index(marked_runs[0]) > ci_lines.index(first_commands()[1])
    marked = marker_expression(shlex.split(marked_runs[0]))
    names = [line.split(":")[0] for line in pytest_options["ini_options"]["markers"]]
    for values in itertools.product([False, True], repeat=len(names)):
        markers = dict(zip(names, values))  # the expressions are pytest's -m syntax, a subset of Python's
        assert eval(default, {"__builtins__": {}}, markers) != eval(marked, {"__builtins__": {}}, markers), markers


def test_the_readmes_commands_name_extras_the_distribution_has():
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["name"] == "rankkit-llm"  # PyPI's `rankkit` is an unrelated project
    assert any(d.startswith("httpx") for d in project["dependencies"])  # hosted judges after the first command
    for command in first_commands():
        for extras in re.findall(r'-e "\.\[([a-z,]+)\]"', command):
            assert set(extras.split(",")) <= set(project["optional-dependencies"]), command
