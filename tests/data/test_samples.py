"""Issue 24 item 15: every user-facing README example runs from a fresh install, on bundled samples."""

from __future__ import annotations

import fnmatch
import importlib.util
import json
import re
from pathlib import Path

import pytest
import tomllib
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.samples import DATA_DIR, SAMPLES, sample_path
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge

ROOT = Path(__file__).resolve().parents[2]


def test_every_sample_exists_is_package_data_and_has_a_readme():
    globs = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["rankkit"]
    for name in SAMPLES:
        path = sample_path(name)
        assert path.is_file(), name
        relative = path.relative_to(DATA_DIR.parent).as_posix()
        assert any(fnmatch.fnmatch(relative, glob) for glob in globs), relative
        readme = (path.parent / "README.md").read_text(encoding="utf-8")
        assert "synthetic" in readme and "Licence" in readme


def test_the_leaderboard_sample_has_several_systems_answering_every_prompt():
    tasks = load_tasks(sample_path("leaderboard"))
    systems = [sorted(c.system for c in task.candidates) for task in tasks]
    assert len(tasks) >= 10 and len(systems[0]) >= 5
    assert all(s == systems[0] for s in systems)  # the same systems on every prompt


def test_the_recorded_judgments_cover_every_ordered_pair_of_the_sample():
    tasks = load_tasks(sample_path("tasks"))
    judge = make_judge(f"replay:{sample_path('judgments')}")  # on_miss=error: a gap would stop the run
    for task in tasks:
        for first in task.candidates:
            for second in task.candidates:
                if first.id != second.id:
                    assert judge.compare(task, first, second).winner is not None


def test_the_generated_samples_are_what_the_script_writes():
    spec = importlib.util.spec_from_file_location("make_samples", ROOT / "scripts" / "make_samples.py")
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    stored = [json.loads(line) for line in sample_path("leaderboard").read_text(encoding="utf-8").splitlines()]
    assert stored == script.leaderboard_tasks()
    stored = [json.loads(line) for line in sample_path("judgments").read_text(encoding="utf-8").splitlines()]
    assert stored == script.recording_rows()


def test_rankkit_samples_prints_paths():
    listed = CliRunner().invoke(main, ["samples"])
    assert listed.exit_code == 0 and all(name in listed.output for name in SAMPLES)
    one = CliRunner().invoke(main, ["samples", "leaderboard"])
    assert one.exit_code == 0 and Path(one.output.strip()) == sample_path("leaderboard")
    unknown = CliRunner().invoke(main, ["samples", "arena"])
    assert unknown.exit_code == 2 and "choose one of tasks, judgments, leaderboard" in unknown.output


def test_readme_examples_point_at_no_development_data():
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert "shared/data" not in readme
    # The benchmarks' pages name the development data they read as such.
    for page in ("benchmarks.md", "development.md"):
        text = (ROOT / "docs" / page).read_text(encoding="utf-8")
        assert "shared/data" in text and "development data" in text, page
    # Every command line of the README's examples names a bundled sample or the user's own file.
    examples = "\n".join(re.findall(r"```bash\n(.*?)```", readme, flags=re.S))
    assert "$(rankkit samples leaderboard)" in examples and "replay:$(rankkit samples judgments)" in examples


@pytest.mark.parametrize(
    "args",
    [
        ["leaderboard", "--data", str(sample_path("leaderboard")), "--judge", "sim:preset=gpt4", "--strategy", "arena"],
        ["compare", "--strategies", "knockout:order=both,bt", "--judge", f"replay:{sample_path('judgments')}"],
    ],
)
def test_the_readme_examples_run_on_the_samples(args):
    result = CliRunner().invoke(main, [*args, "--no-cache", "--quiet"])
    assert result.exit_code == 0, result.output
