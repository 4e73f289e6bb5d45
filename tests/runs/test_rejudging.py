"""rankkit rejudge: the same questions of another judge, paid once, and what changes."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

import rankkit
from rankkit.cli import main
from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.base import JudgeError
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.runs.rejudging import MEAN_GRADE, REPLAY, questions
from rankkit.runs.results import RunResult
from rankkit.stats.ratings import bradley_terry
from rankkit.strategies.elo import comparison_outcomes
from tests.helpers import CountingJudge, make_task

STRATEGIES = ["knockout:order=both", "bt", "individual", "setwise_groups:k=3"]


def tasks(count: int = 5, seed: int = 0) -> list:
    rng = random.Random(seed)
    return [
        make_task([rng.uniform(0, 5) for _ in range(rng.choice([4, 5, 6]))], task_id=f"t{i}", scale=(0.0, 5.0))
        for i in range(count)
    ]


@pytest.fixture
def finished(tmp_path):
    """A finished run with a warm cache: (results, cache path)."""
    cache = tmp_path / "cache.sqlite"
    result = rankkit.compare(tasks(), STRATEGIES, judge="sim:preset=gpt4", cache=cache, seed=2)
    return RunResult.from_dict(json.loads(json.dumps(result.to_dict()))), cache


def distinct(results: RunResult) -> int:
    return sum(len(keys) for keys in questions(results).values())


def test_the_same_judge_reproduces_every_judgment_from_the_cache(finished):
    results, cache = finished
    report = rankkit.rejudge(results, make_judge("sim:preset=gpt4"), cache=cache)
    assert report["cost"]["judge_calls"] == 0 and report["cost"]["cache_hits"] == distinct(results)
    overall = report["agreement"]
    assert overall["same_winner"] == 1.0 and overall["same_grade"] == 1.0
    assert overall["grade_correlation"] == pytest.approx(1.0, abs=1e-12)
    for item in report["strategies"]:
        assert item["aggregation"] == REPLAY and item["winners_changed"] == 0
        assert item["rank_correlation"] == pytest.approx(1.0, abs=1e-12)
        for row in item["tasks"]:
            assert row["new_scores"] == pytest.approx(row["old_scores"], abs=1e-9)
    by_name = {item["strategy"]: item for item in report["strategies"]}
    assert by_name["individual"]["grades"] == sum(len(t.candidates) for t in results.tasks)
    assert by_name["setwise_groups:k=3"]["decisive"] > 0  # its k-way judgments were re-asked too


def test_another_judge_reports_agreement_correlation_and_changed_winners(finished):
    results, cache = finished
    report = rankkit.rejudge(results, "sim:preset=chatgpt,seed=5", cache=cache)
    assert report["cost"]["judge_calls"] == distinct(results)  # a new judge: every question is new
    assert 0.5 < report["agreement"]["same_winner"] < 1.0
    assert report["judge"]["description"].startswith("sim:preset=chatgpt")
    by_name = {item["strategy"]: item for item in report["strategies"]}
    bt = by_name["bt"]
    assert bt["aggregation"] == REPLAY
    # bt's new ranking is Bradley-Terry refitted on the new verdicts to the very same questions.
    again = make_judge("sim:preset=chatgpt,seed=5")
    for task, row in zip(results.tasks, bt["tasks"]):
        result = next(t for t in results.strategies[1].tasks if t.task_id == task.task_id)
        renewed = [
            c.__class__(c.first, c.second, again.compare(task, task.candidate(c.first), task.candidate(c.second)))
            for c in result.comparisons
        ]
        ratings = bradley_terry(comparison_outcomes(renewed), task.candidate_ids)
        assert row["new_scores"] == pytest.approx(ratings, abs=1e-6)
        best = max(task.candidate_ids, key=lambda c: ratings[c])
        assert row["new_winner"] == best and row["changed"] == (best != result.ranking[0])
    for item in report["strategies"]:
        assert item["winners_changed"] == sum(row["changed"] for row in item["tasks"])
        assert -1.0 <= item["rank_correlation"] <= 1.0


def test_a_strategy_whose_path_leaves_the_questions_is_compared_by_mean_grade(finished):
    results, _ = finished
    results.strategies = [s for s in results.strategies if not s.name.startswith("setwise")]  # it compares pairs only
    contrary = FixedAccuracyJudge(accuracy=0.0, position_bias=0.0, noise=0.0)  # reverses every verdict
    report = rankkit.rejudge(results, contrary)
    knockout = next(item for item in report["strategies"] if item["strategy"] == "knockout:order=both")
    assert knockout["aggregation"] == MEAN_GRADE and knockout["departed"] > 0
    assert report["agreement"]["same_winner"] < 0.2


def test_strategies_whose_judgments_the_judge_cannot_give_are_skipped(finished):
    results, _ = finished
    panel = "panel:sim:preset=gpt4+sim:preset=chatgpt"
    report = rankkit.rejudge(results, panel)  # a panel compares pairs only
    assert [s["strategy"] for s in report["strategies"]] == ["knockout:order=both", "bt"]
    assert {s["strategy"]: s["reason"].split(",")[0] for s in report["skipped"]} == {
        "individual": "it used grades",
        "setwise_groups:k=3": "it used k-way judgments",
    }
    only_grades = RunResult.from_dict(results.to_dict())
    only_grades.strategies = [s for s in only_grades.strategies if s.name == "individual"]
    with pytest.raises(SpecError, match="nothing to rejudge: individual: it used grades"):
        rankkit.rejudge(only_grades, panel)


def test_a_killed_rejudge_resumes_without_paying_twice(finished, tmp_path):
    results, _ = finished
    results.strategies = [
        s for s in results.strategies if not s.name.startswith("setwise")
    ]  # judge counts pairs and grades
    cache = tmp_path / "rejudge.sqlite"
    total = distinct(results)
    killed = CountingJudge(make_judge("sim:preset=chatgpt"), fail_after=total // 2)
    with pytest.raises(JudgeError, match="planted failure"):
        rankkit.rejudge(results, killed, cache=cache)
    assert killed.calls == total // 2
    resumed = CountingJudge(make_judge("sim:preset=chatgpt"))
    report = rankkit.rejudge(results, resumed, cache=cache)
    assert resumed.calls == total - killed.calls  # nothing paid for twice
    assert report["cost"]["judge_calls"] == resumed.calls and report["cost"]["cache_hits"] == killed.calls
    uninterrupted = rankkit.rejudge(results, "sim:preset=chatgpt")
    assert report["strategies"] == uninterrupted["strategies"]


def test_rankkit_rejudge_command(finished, tmp_path):
    results, cache = finished
    path = tmp_path / "r.json"
    record = results.to_dict()
    record["judge"]["spec"] = "openai:gpt-4o,base_url=http://example.invalid/v1"  # the file's judge is never used
    path.write_text(json.dumps(record), encoding="utf-8")
    assert CliRunner().invoke(main, ["rejudge", str(path)]).exit_code == 2  # --judge is required
    out = tmp_path / "rejudge.json"
    ran = CliRunner().invoke(
        main, ["rejudge", str(path), "--judge", "sim:preset=gpt4", "--cache", str(cache), "--quiet", "--out", str(out)]
    )
    assert ran.exit_code == 0, ran.output
    assert "0 new judge calls" in ran.output and "winners that changed: none" in ran.output
    written = json.loads(out.read_text())
    assert written["judge"]["spec"] == "sim:preset=gpt4" and written["agreement"]["same_winner"] == 1.0
    assert "example.invalid" in written["original_judge"]["spec"]  # reported, not used
    for fmt, marker in (("csv", "section,"), ("markdown", "### "), ("json", '"agreement"')):
        shown = CliRunner().invoke(
            main, ["rejudge", str(path), "--judge", "sim:preset=gpt4", "--no-cache", "--quiet", "--format", fmt]
        )
        assert shown.exit_code == 0 and marker in shown.output, (fmt, shown.output)


# -- the limits compare has -----------------------------------------------------------------


def written(results: RunResult, path, change=None):
    record = results.to_dict()
    if change:
        change(record)
    path.write_text(json.dumps(record), encoding="utf-8")
    return str(path)


def rejudge_cli(path: str, *options: str):
    return CliRunner().invoke(main, ["rejudge", path, "--judge", "sim:preset=gpt4", "--no-cache", "--quiet", *options])


def test_rejudge_above_max_judgments_needs_yes_as_compare_does(finished, tmp_path):
    results, _ = finished
    path = written(results, tmp_path / "r.json")
    asked = distinct(results)
    refused = rejudge_cli(path, "--max-judgments", str(asked - 1))
    assert refused.exit_code == 2
    assert f"this run asks {asked:,} judgments, more than --max-judgments {asked - 1:,}" in refused.output
    assert "pass --yes" in refused.output and "Nothing was judged" in refused.output
    assert rejudge_cli(path, "--max-judgments", str(asked - 1), "--yes").exit_code == 0
    assert rejudge_cli(path, "--max-judgments", str(asked)).exit_code == 0


def test_rejudge_refuses_a_text_a_task_file_would_refuse(finished, tmp_path):
    results, _ = finished

    def oversize(record):
        record["task_data"][0]["candidates"][1]["text"] = "x" * 300_000

    path = written(results, tmp_path / "big.json", oversize)
    refused = rejudge_cli(path)
    assert refused.exit_code == 2, refused.output
    assert "big.json: field 'candidates[1].text'" in refused.output
    assert "300,000 characters long, over the limit of 100,000 (max_candidate_chars" in refused.output
    assert "Traceback" not in refused.output
    assert rejudge_cli(path, "--max-candidate-chars", "0").exit_code == 0  # 0: no limit, as in compare


def test_rejudge_refuses_an_oversized_prompt(finished, tmp_path):
    results, _ = finished

    def long_prompt(record):
        record["task_data"][0]["prompt"] = "p" * 50

    refused = rejudge_cli(written(results, tmp_path / "p.json", long_prompt), "--max-prompt-chars", "10")
    assert refused.exit_code == 2 and "field 'prompt'" in refused.output and "max_prompt_chars" in refused.output


def test_the_progress_bar_counts_the_judgments_asked_again_of_their_total(finished, capsys):
    # Issue 38: the bar read `judging: 30judgment`, with no total; every recorded question is asked once.
    results, _ = finished
    rankkit.rejudge(results, make_judge("sim:preset=chatgpt"), progress=True)
    shown = capsys.readouterr().err.replace("\r", "\n")
    line = [line for line in shown.splitlines() if line.strip()][-1]
    assert f"{distinct(results)}/{distinct(results)}" in line and "judgment" in line
