"""judge-report: every figure on a hand-built fixture, intervals, pair sampling, panels, the CLI."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.cache import JudgmentCache
from rankkit.reports.judge_report import judge_report
from rankkit.reports.judge_report_pairs import sample_pairs
from tests.helpers import make_task

# Four two-candidate tasks; x is listed first (a), y second (b). Characters: the longer answer.
#   task  human  chars x/y  verdict x shown first  verdict y shown first
#   t1    x      13/3       x                      y        (always the first slot)
#   t2    y      7/18       y                      y        (consistent and right)
#   t3    x      7/7        y                      tie      (wrong, then a tie)
#   t4    x      23/3       null (unparsed)        x        (a miss, then right)
FIXTURE_TASKS = [
    ("t1", 1, 0, "one two three", "one"),
    ("t2", 0, 1, "one two", "one two three four"),
    ("t3", 1, 0, "one two", "six ten"),
    ("t4", 1, 0, "one two three four five", "one"),
]
FIXTURE_VERDICTS = {"t1": ("x", "y"), "t2": ("y", "y"), "t3": ("y", "tie"), "t4": (None, "x")}

# Hand-computed from the table above (see the module docstring of rankkit.reports.judge_report):
EXPECTED = {
    # decisive verdicts: t1 x(first) y(first), t2 y(second) y(first), t3 y(second), t4 x(second)
    "first_slot": (3, 6),
    # pairs with both verdicts: t1 differ, t2 agree, t3 y vs tie differ (t4 has a failed one)
    "order_consistency": (1, 3),
    # decisive verdicts on pairs with a longer answer: t1 x(longer) y, t2 y y, t4 x
    "length_judge": (4, 5),
    # labelled pairs with a longer answer: t1 x, t2 y, t4 x are all the longer one
    "length_human": (3, 3),
    # per verdict 1 / 0 / 0.5 (tie or failed): t1 1+0, t2 1+1, t3 0+0.5, t4 0.5+1
    "accuracy_single": (5, 8),
    # both orders combined: t1 tie (left out), t2 y right, t3 y wrong, t4 x right
    "accuracy_both": (2, 3),
    # draw = wrong: t1 0, t2 1, t3 0, t4 1
    "accuracy_both_strict": (2, 4),
}


@pytest.fixture
def fixture_files(tmp_path: Path) -> tuple[Path, Path]:
    tasks_path = tmp_path / "tasks.jsonl"
    judgments_path = tmp_path / "judgments.jsonl"
    with tasks_path.open("w") as handle:
        for task_id, hx, hy, tx, ty in FIXTURE_TASKS:
            handle.write(
                json.dumps(
                    {
                        "task_id": task_id,
                        "prompt": f"prompt {task_id}",
                        "candidates": [
                            {"id": "x", "text": tx, "human": {"pref": hx}},
                            {"id": "y", "text": ty, "human": {"pref": hy}},
                        ],
                    }
                )
                + "\n"
            )
    with judgments_path.open("w") as handle:
        for task_id, (x_first, y_first) in FIXTURE_VERDICTS.items():
            handle.write(json.dumps({"task_id": task_id, "a": "x", "b": "y", "winner": x_first}) + "\n")
            handle.write(json.dumps({"task_id": task_id, "a": "y", "b": "x", "winner": y_first}) + "\n")
    return tasks_path, judgments_path


def test_every_figure_matches_the_hand_computation(fixture_files):
    tasks_path, judgments_path = fixture_files
    report = judge_report(load_tasks(tasks_path), make_judge(f"replay:{judgments_path},on_miss=tie"), resamples=200)
    for name, (num, den) in EXPECTED.items():
        metric = report["metrics"][name]
        assert metric["value"] == pytest.approx(num / den), name
        assert metric["n"] == den, name
        assert metric["low"] <= metric["value"] <= metric["high"], name
    assert report["counts"]["ties"] == 1 and report["counts"]["failed"] == 1 and report["counts"]["misses"] == 1
    assert (report["tasks"], report["pairs"], report["judgments"]) == (4, 4, 8)


def test_the_command_prints_the_table_and_writes_the_same_json(fixture_files, tmp_path):
    tasks_path, judgments_path = fixture_files
    out = tmp_path / "report.json"
    result = CliRunner().invoke(
        main,
        [
            "judge-report",
            "--judge",
            f"replay:{judgments_path},on_miss=tie",
            "--data",
            str(tasks_path),
            "--no-cache",
            "--quiet",
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "first-slot preference" in result.output and "95% CI" in result.output
    assert "replay misses 1" in result.output
    report = json.loads(out.read_text())
    assert report["metrics"]["accuracy_single"]["value"] == pytest.approx(5 / 8)
    assert report["bootstrap"] == {"resamples": 1000, "confidence": 0.95, "unit": "task"}
    # Without on_miss=tie the unparsed answer stops the report with a clear message.
    strict = CliRunner().invoke(
        main,
        ["judge-report", "--judge", f"replay:{judgments_path}", "--data", str(tasks_path), "--no-cache", "--quiet"],
    )
    assert strict.exit_code == 2 and "could not be parsed" in strict.output


# -- judges with known biases ------------------------------------------------------------------


def test_a_judge_that_always_picks_the_first_slot(sample_tasks):
    report = judge_report(sample_tasks, FixedAccuracyJudge(position_bias=1.0), resamples=0)
    metrics = report["metrics"]
    assert metrics["first_slot"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert metrics["order_consistency"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert metrics["accuracy_single"]["value"] == pytest.approx(0.5, abs=1e-12)
    assert metrics["accuracy_both"]["n"] == 0
    assert metrics["accuracy_both_strict"]["value"] == pytest.approx(0.0, abs=1e-12)
    assert metrics["first_slot"]["low"] is None  # resamples=0: no interval


def test_a_perfect_judge_matches_the_humans():
    tasks = []
    for task in (make_task([0.0, 3.0, 1.0, 2.0], task_id="p"), make_task([2.0, 1.0, 0.0], task_id="q")):
        # Word counts that agree with the human order only sometimes: 1, 3, 2, 1 words...
        wordy = tuple(replace(c, text=" ".join(["w"] * (1 + (i * 2) % 3))) for i, c in enumerate(task.candidates))
        tasks.append(replace(task, candidates=wordy))
    metrics = judge_report(tasks, FixedAccuracyJudge(accuracy=1.0, noise=0.0), resamples=0)["metrics"]
    assert metrics["accuracy_single"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert metrics["accuracy_both_strict"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert metrics["order_consistency"]["value"] == pytest.approx(1.0, abs=1e-12)
    assert 0 < metrics["length_human"]["value"] < 1 and metrics["length_human"]["n"] >= 4
    assert metrics["length_judge"]["value"] == pytest.approx(metrics["length_human"]["value"])


# -- pair sampling -----------------------------------------------------------------------------


def test_pairs_are_sampled_per_task_with_the_seed():
    task = make_task([0, 1, 2, 3, 4], task_id="q")
    assert len(sample_pairs(task, None, 0)) == 10 and len(sample_pairs(task, 50, 0)) == 10
    three = sample_pairs(task, 3, seed=0)
    assert len(three) == 3 and three == sample_pairs(task, 3, seed=0)
    assert all(task.candidate_ids.index(a) < task.candidate_ids.index(b) for a, b in three)
    assert any(sample_pairs(task, 3, seed=s) != three for s in range(1, 6))
    report = judge_report([task], FixedAccuracyJudge(), pairs_per_task=3, resamples=0)
    assert (report["pairs"], report["judgments"], report["counts"]["judge_calls"]) == (3, 6, 6)


def test_judgments_go_through_the_cache(sample_tasks, cache_path):
    judge = make_judge("sim:preset=chatgpt")
    with JudgmentCache(cache_path) as cache:
        first = judge_report(sample_tasks, judge, cache, pairs_per_task=2, resamples=0)
        again = judge_report(sample_tasks, judge, cache, pairs_per_task=2, resamples=0)
    assert first["counts"]["judge_calls"] == first["judgments"] > 0
    assert again["counts"]["judge_calls"] == 0 and again["counts"]["cache_hits"] == first["judgments"]
    assert again["metrics"] == first["metrics"]


# -- panels ------------------------------------------------------------------------------------


def test_a_panel_report_has_member_figures_agreement_and_draws(sample_tasks):
    specs = ["sim:preset=gpt4", "sim:preset=chatgpt", "sim:preset=falcon"]
    panel = make_judge("panel:" + "+".join(specs) + ",threshold=0.5")
    report = judge_report(sample_tasks, panel, resamples=0)
    section = report["panel"]
    for spec, member in zip(specs, section["members"]):
        alone = judge_report(sample_tasks, make_judge(spec), resamples=0)
        assert member["metrics"] == alone["metrics"]
    assert -1.0 <= section["krippendorff_alpha"] <= 1.0
    draws = {row["threshold"]: row["draws"] for row in section["thresholds"]}
    assert list(draws) == [1.0, 0.75, 0.5]
    assert draws[1.0] >= draws[0.75] >= draws[0.5]
    # Each pair is asked in both orders and the panel answers both alike: 2 tie verdicts per draw.
    assert report["counts"]["ties"] == 2 * draws[0.5]
    # The panel's own verdicts never depend on the order (it always asks both).
    assert report["metrics"]["order_consistency"]["value"] == pytest.approx(1.0, abs=1e-12)
