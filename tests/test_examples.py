"""The examples under ``examples/`` run as their docstrings say, and print their result as scripts."""

from __future__ import annotations

import doctest
import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("*.py"))

#: What each example prints when run as a script: lines that only its real result contains.
PRINTED = {
    "callable_judge.py": ["1. b: 'Paris, on the Seine.'", "2. a: 'Paris.'", "3. c: 'Lyon'"],
    "round_robin_strategy.py": [
        "6 bundled sample tasks",
        "round_robin   48 comparisons",
        "knockout      21 comparisons",
    ],
}


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_doctests_pass(path):
    spec = importlib.util.spec_from_file_location(f"example_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    result = doctest.testmod(module)
    assert result.attempted > 0 and result.failed == 0


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_prints_its_result_when_run_as_a_script(path):
    # Issue 38: `python examples/x.py` printed nothing. Run from elsewhere, with this tree's rankkit.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run(
        [sys.executable, str(path)], capture_output=True, text=True, cwd=path.parent, env=env, timeout=300
    )
    assert done.returncode == 0, done.stderr
    for line in PRINTED[path.name]:  # a new example must say here what it prints
        assert line in done.stdout, done.stdout
