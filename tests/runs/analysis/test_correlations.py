"""rankkit.runs.analysis.correlations: (a) agreement with the human scores and (e) paired differences, by hand."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.data.specs import SpecError
from rankkit.runs import analysis
from rankkit.stats.metrics import METRIC_NAMES


def test_point_estimates_match_hand_computation(results):
    row = {r["strategy"]: r for r in analysis.correlation_table(results, METRIC_NAMES, resamples=0)}["ko"]
    m = {name: interval.estimate for name, interval in row["metrics"].items()}
    # Pooled: x = 1234 1234 2134, y = 1234 4321 1234; deviations from 2.5 give
    # sum dx*dy = 5 - 5 + 4 = 4 and sum dx^2 = sum dy^2 = 15, so r = 4/15.
    assert m["pearson"] == pytest.approx(4 / 15)
    # Per task Spearman: 1, -1 and 1 - 6*2/(4*15) = 0.8 (a and b swapped).
    assert m["task_spearman"] == pytest.approx((1 - 1 + 0.8) / 3)
    # Pairs with the human order: 6 of 6, 0 of 6, 5 of 6.
    assert m["pairwise_accuracy"] == pytest.approx(11 / 18)
    # Top candidate d is human-best in t1 and t3, human-worst in t2.
    assert m["top1_accuracy"] == pytest.approx(2 / 3)
    assert row["tasks"] == 3 and row["comparisons"] == 9


def test_bootstrap_over_two_tasks_spans_the_two_task_values(results):
    # Keep t1 (Spearman 1) and t2 (Spearman -1): a resample is {t1,t1}, {t1,t2} or {t2,t2}, each
    # extreme with probability 1/4 > 2.5%, so the 95% interval is exactly [-1, 1] around 0.
    results.tasks = results.tasks[:2]
    (row,) = analysis.correlation_table(results, ["task_spearman"], resamples=500, seed=1, strategies=["ko"])
    interval = row["metrics"]["task_spearman"]
    assert (interval.estimate, interval.low, interval.high) == pytest.approx((0.0, -1.0, 1.0), abs=1e-12)


def test_unknown_metric_is_rejected(results):
    with pytest.raises(SpecError, match="unknown metric"):
        analysis.correlation_table(results, ["nonsense"], resamples=0)


def test_paired_difference_with_itself_is_exactly_zero(results):
    diff = analysis.paired_difference(results, "ko", "ko", ["pearson", "task_spearman"], resamples=200)
    for item in diff["metrics"].values():
        assert (item["difference"].estimate, item["difference"].low, item["difference"].high) == (0.0, 0.0, 0.0)
        assert item["verdict"] == "within noise"


def test_paired_difference_against_the_oracle(results):
    diff = analysis.paired_difference(results, "ko", "oracle", ["task_spearman"], resamples=300, seed=2)
    item = diff["metrics"]["task_spearman"]
    assert item["difference"].estimate == pytest.approx((1 - 1 + 0.8) / 3 - 1)
    # Every resample holds only tasks where ko is at most as good as the oracle (differences 0, -2, -0.2).
    assert item["difference"].high <= 0
    assert diff["tasks"] == 3


def test_paired_interval_is_the_difference_of_shared_resamples(results):
    draws = analysis.MetricDraws(results, ["pearson"], resamples=100, seed=5)
    ko_est, ko_draws = draws.get("ko")
    pw_est, pw_draws = draws.get("pw")
    diff = analysis.paired_difference(results, "ko", "pw", draws=draws)["metrics"]["pearson"]["difference"]
    low, high = np.percentile((ko_draws - pw_draws)[:, 0], [2.5, 97.5])
    assert (diff.low, diff.high) == (pytest.approx(low), pytest.approx(high))
    assert diff.estimate == pytest.approx(ko_est[0] - pw_est[0])
