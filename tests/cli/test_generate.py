"""``rankkit generate`` and ``rankkit leaderboard --questions``: from questions and a model list to a
task file, and to a leaderboard with one bill (issue 39, items 4 and 5)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.samples import sample_path
from rankkit.runs.generation import read_questions

MODELS = "sim:strong,quality=0.85,sim:middle,quality=0.5,sim:weak,quality=0.15"


def single_turn_questions(path: Path) -> Path:
    """The bundled questions cut to their first turn (multi-turn candidates are read by another branch)."""
    lines = sample_path("questions").read_text(encoding="utf-8").splitlines()
    records = [{**json.loads(line), "turns": json.loads(line)["turns"][:1]} for line in lines]
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


def invoke(args: list[str]):
    return CliRunner().invoke(main, args)


def test_the_bundled_questions_are_valid_and_some_have_two_turns():
    questions = read_questions(sample_path("questions"))
    assert len(questions) == 12
    assert sum(bool(q.followups) for q in questions) == 6
    assert len({q.extra["category"] for q in questions}) >= 6


def test_generate_writes_the_task_file_and_a_rerun_pays_nothing(tmp_path):
    out, cache = tmp_path / "tasks.jsonl", tmp_path / "c.sqlite"
    args = ["generate", "--questions", str(sample_path("questions")), "--models", MODELS]
    first = invoke(args + ["--out", str(out), "--cache", str(cache), "-q"])
    assert first.exit_code == 0, first.output
    assert "generated: 54 answers (54 new, 0 cached)" in first.stderr
    tasks = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(tasks) == 12 and all(len(t["candidates"]) == 3 for t in tasks)
    second = invoke(args + ["--out", str(out), "--cache", str(cache), "-q"])
    assert "generated: 54 answers (0 new, 54 cached)" in second.stderr
    assert [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()] == tasks


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        (["--models", "sim:a"], "--questions and --models go together"),
        (["--questions", "QUESTIONS"], "--questions and --models go together"),
        (["--questions", "QUESTIONS", "--models", "sim:../x"], "looks like a file path"),
        (["--questions", "QUESTIONS", "--models", "sim:a,sim:a"], "two models are named 'a'"),
        (["--questions", "QUESTIONS", "--models", "sim:a,quality=2"], "quality must be in [0, 1]"),
        (["--questions", "QUESTIONS", "--models", "sim:a", "--temperature", "3"], "--temperature"),
        (["--questions", "QUESTIONS", "--models", "sim:a", "--max-new-tokens", "0"], "--max-new-tokens"),
        (["--questions", "BAD", "--models", "sim:a"], "bad.jsonl:2: field 'turns'"),
    ],
)
def test_bad_input_exits_2_with_a_clear_message(tmp_path, extra, expected):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"task_id": "a", "prompt": "x"}\n{"task_id": "b", "turns": "not a list"}\n', encoding="utf-8")
    shown = {"QUESTIONS": str(sample_path("questions")), "BAD": str(bad)}
    args = ["generate", *[shown.get(a, a) for a in extra], "--no-cache", "-q", "--out", str(tmp_path / "t.jsonl")]
    result = invoke(args)
    assert result.exit_code == 2, result.output
    assert expected in result.output
    assert "Traceback" not in result.output
    assert not (tmp_path / "t.jsonl").exists()


def test_leaderboard_from_questions_and_models_in_one_command_with_one_bill(tmp_path):
    questions = single_turn_questions(tmp_path / "q.jsonl")
    cache, answers, board = tmp_path / "c.sqlite", tmp_path / "answers.jsonl", tmp_path / "board.json"
    args = ["leaderboard", "--questions", str(questions), "--models", MODELS, "--judge", "sim"]
    args += ["--cache", str(cache), "--answers", str(answers), "--out", str(board), "-q"]
    first = invoke(args)
    assert first.exit_code == 0, first.output
    payload = json.loads(board.read_text(encoding="utf-8"))
    order = [s["name"] for s in sorted(payload["systems"], key=lambda s: s["rank"])]
    assert order == ["strong", "middle", "weak"]  # the planted qualities
    assert all(s["ci_low"] <= s["rating"] <= s["ci_high"] for s in payload["systems"])
    bill = [line for line in first.stderr.splitlines() if line.startswith("bill: ")]
    assert len(bill) == 1 and bill[0].startswith("bill: 36 answers (36 new, 0 cached) + ")
    rerun = invoke(args)
    assert rerun.exit_code == 0, rerun.output
    assert "bill: 36 answers (0 new, 36 cached) + " in rerun.stderr and "judgments (0 new," in rerun.stderr


def test_leaderboard_questions_and_data_exclude_each_other(tmp_path):
    result = invoke(
        ["leaderboard", "--questions", str(sample_path("questions")), "--models", "sim:a", "--data", "x.jsonl"]
    )
    assert result.exit_code == 2 and "either --questions or --data" in result.output
