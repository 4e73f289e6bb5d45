"""rankkit.runs.analysis.draws: metrics on resampled tasks equal rankkit.stats.metrics on the repeated tasks."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankkit.runs import analysis
from rankkit.stats.metrics import METRIC_NAMES, correlation, evaluate


def test_task_metrics_agree_with_rankkit_metrics_evaluate(results):
    for name in analysis.strategy_names(results):
        tasks = analysis.labelled_tasks(results, name)
        pieces = analysis.TaskMetrics(tasks)
        expected = evaluate([(t.scores, t.ranking, t.human) for t in tasks])
        for metric in METRIC_NAMES:
            got = pieces.value(metric, np.arange(len(tasks)))
            assert (math.isnan(got) and math.isnan(expected[metric])) or got == pytest.approx(expected[metric]), (
                name,
                metric,
            )


def test_resampled_task_metrics_equal_evaluate_on_the_repeated_tasks(results):
    tasks = analysis.labelled_tasks(results, "ko")
    pieces = analysis.TaskMetrics(tasks)
    idx = np.array([2, 2, 0])  # a bootstrap resample: t3 twice and t1
    expected = evaluate([(tasks[i].scores, tasks[i].ranking, tasks[i].human) for i in idx])
    for metric in ("pearson", "spearman", "kendall", "task_spearman", "pairwise_accuracy", "top1_accuracy"):
        assert pieces.value(metric, idx) == pytest.approx(expected[metric])


def test_bootstrap_is_seeded(results):
    first = analysis.MetricDraws(results, ["pearson"], resamples=200, seed=3).get("ko")[1]
    again = analysis.MetricDraws(results, ["pearson"], resamples=200, seed=3).get("ko")[1]
    other = analysis.MetricDraws(results, ["pearson"], resamples=200, seed=4).get("ko")[1]
    assert first.shape == (200, 1)
    assert np.array_equal(first, again, equal_nan=True)
    assert not np.array_equal(first, other, equal_nan=True)


def test_batched_row_correlations_equal_rankkit_metrics_correlation():
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=n) for n in (2, 5, 5, 5, 9, 1)] + [np.ones(5), np.array([1.0, 2.0, 2.0, 3.0, 3.0])]
    ys = [rng.normal(size=len(x)) for x in xs]
    ys[-1] = np.array([3.0, 1.0, 1.0, 2.0, 5.0])  # ties on both sides
    for method in ("pearson", "spearman", "kendall"):
        got = analysis.row_correlations(method, xs, ys)
        want = [correlation(method, x, y) for x, y in zip(xs, ys)]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=method)
    assert math.isnan(analysis.row_correlations("pearson", xs, ys)[5])  # one point
    assert math.isnan(analysis.row_correlations("spearman", xs, ys)[6])  # constant side
