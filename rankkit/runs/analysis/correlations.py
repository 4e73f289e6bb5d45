"""(a) Each strategy's agreement with the human scores, and (e) paired differences between strategies.

Every strategy is resampled on the same task sets, so differences are a paired bootstrap at no extra cost.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankkit.runs.analysis.draws import MetricDraws
from rankkit.runs.analysis.labelled import DEFAULT_METRICS, labelled_tasks, strategy_names, strategy_run
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES, percentile_intervals


def correlation_table(
    results: RunResult,
    metrics: Sequence[str] = DEFAULT_METRICS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    strategies: Sequence[str] | None = None,
    draws: MetricDraws | None = None,
) -> list[dict[str, Any]]:
    """(a) Per strategy: cost and every metric with a bootstrap interval over tasks.

    Each row: ``strategy``, ``comparisons``, ``grades``, ``judge_calls``, ``usd`` (0 unpriced),
    ``tasks`` and ``metrics`` (metric -> :class:`Interval`). ``strategies`` None: all; ``draws``
    reuses computed resamples (fixing metrics, resamples and seed).
    """
    draws = draws or MetricDraws(results, metrics, resamples, seed)
    rows = []
    for name in strategies or strategy_names(results):
        cost = strategy_run(results, name).cost
        estimates, values = draws.get(name)
        rows.append(
            {
                "strategy": name,
                "comparisons": cost.comparisons,
                "grades": cost.grades,
                "judge_calls": cost.judge_calls,
                "usd": cost.usd,
                "tasks": len(labelled_tasks(results, name)),
                "metrics": dict(zip(draws.metrics, percentile_intervals(estimates, values, level))),
            }
        )
    return rows


def paired_difference(
    results: RunResult,
    a: str,
    b: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    draws: MetricDraws | None = None,
) -> dict[str, Any]:
    """(e) Metric of strategy ``a`` minus that of ``b``, with a paired bootstrap interval over tasks they both ranked.

    Returns ``a``, ``b``, ``tasks`` and ``metrics``: metric -> ``difference`` (an :class:`Interval`)
    and ``verdict`` (``a better`` / ``b better`` when it excludes 0, else ``within noise``).
    """
    draws = draws or MetricDraws(results, metrics, resamples, seed)
    ids_a = [t.task_id for t in labelled_tasks(results, a)]
    ids_b = [t.task_id for t in labelled_tasks(results, b)]
    common = None if ids_a == ids_b else [t for t in ids_a if t in set(ids_b)]
    estimates_a, values_a = draws.get(a, common)
    estimates_b, values_b = draws.get(b, common)
    intervals = percentile_intervals(estimates_a - estimates_b, values_a - values_b, level)
    out = {}
    for metric, interval in zip(draws.metrics, intervals):
        if interval.low > 0:
            verdict = "a better"
        elif interval.high < 0:
            verdict = "b better"
        else:
            verdict = "within noise"
        out[metric] = {"difference": interval, "verdict": verdict}
    return {"a": a, "b": b, "tasks": len(ids_a if common is None else common), "metrics": out}
