"""rankkit.runs.analysis.breakdowns: (c) metrics by meta field and by system, (d) the aggregate level."""

from __future__ import annotations

import math

import pytest

from rankkit.data.specs import SpecError
from rankkit.runs import analysis
from rankkit.runs.results import RunResult
from tests.runs.analysis.hand import hand_results


def test_breakdown_by_meta_field(results):
    rows = {
        r["group"]: r
        for r in analysis.breakdown(results, "ko", "difficulty", ["task_spearman", "pairwise_accuracy"], resamples=0)
    }
    assert set(rows) == {"easy", "hard"}
    assert rows["easy"]["tasks"] == 2 and rows["hard"]["tasks"] == 1
    assert rows["easy"]["metrics"]["task_spearman"].estimate == pytest.approx((1 + 0.8) / 2)
    assert rows["hard"]["metrics"]["task_spearman"].estimate == pytest.approx(-1)
    assert rows["easy"]["metrics"]["pairwise_accuracy"].estimate == pytest.approx(11 / 12)
    # meta.NAME is accepted too
    assert analysis.breakdown(results, "ko", "meta.difficulty", ["pearson"], resamples=0)[0]["group"] == "easy"


def test_breakdown_by_system(results):
    rows = {
        r["group"]: r for r in analysis.breakdown(results, "ko", "system", ["pearson", "task_spearman"], resamples=0)
    }
    assert set(rows) == {"sa", "sb", "sc", "sd"}
    sa = rows["sa"]
    # System sa wrote candidate a: scores 1, 1, 2 against human 1, 4, 1. Deviations from the
    # means (4/3 and 2): dx = -1/3, -1/3, 2/3 and dy = -1, 2, -1, so r = -1 / sqrt(2/3 * 6) = -0.5.
    assert sa["metrics"]["pearson"].estimate == pytest.approx(-0.5)
    assert list(sa["metrics"]) == ["pearson"]  # per-task metrics are undefined with one candidate per task
    assert sa["mean_score"] == pytest.approx(4 / 3) and sa["mean_human"] == pytest.approx(2)


def test_breakdown_field_must_exist(results):
    with pytest.raises(SpecError, match="cannot break down"):
        analysis.breakdown(results, "ko", "colour")


def test_aggregate_level_per_system(results):
    item = analysis.aggregate_level(results, "ko", how="mean", resamples=0)
    m = {k: v.estimate for k, v in item["metrics"].items()}
    # Means over tasks, times 3: ko 4 5 9 12, human 6 7 8 9; deviations -3.5 -2.5 1.5 4.5 and
    # -1.5 -.5 .5 1.5 give r = 14 / sqrt(41 * 5).
    assert m["pearson"] == pytest.approx(14 / math.sqrt(205))
    assert m["spearman"] == pytest.approx(1.0)
    assert m["pairwise_accuracy"] == pytest.approx(1.0)
    assert item["units"] == 4 and item["systems"] == 4
    assert [r["system"] for r in item["leaderboard"]] == ["sd", "sc", "sb", "sa"]
    assert item["leaderboard"][0]["score"] == pytest.approx(4.0) and item["leaderboard"][0]["human"] == pytest.approx(
        3.0
    )
    summed = analysis.aggregate_level(results, "ko", how="sum", resamples=0)
    assert summed["metrics"]["pearson"].estimate == pytest.approx(m["pearson"])  # every system answers every task
    assert summed["leaderboard"][0]["score"] == pytest.approx(12.0)


def test_aggregate_level_per_exam_compares_systems_within_an_exam(results):
    item = analysis.aggregate_level(results, "ko", how="sum", unit_field="exam", resamples=0)
    assert item["units"] == 8
    # Exam E1 (t1 + t2): every system's human total is 5, so no pair counts; exam E2 (t3 alone):
    # ko has a and b the wrong way round, 5 of 6 pairs right.
    assert item["metrics"]["pairwise_accuracy"].estimate == pytest.approx(5 / 6)


def test_aggregate_level_needs_systems():
    raw = hand_results()
    for task in raw["task_data"]:
        for cand in task["candidates"]:
            cand["system"] = None
    results = RunResult.from_dict(raw)
    assert analysis.aggregate_level(results, "ko", resamples=0) is None
