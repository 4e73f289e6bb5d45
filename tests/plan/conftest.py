"""The check every dry-run test relies on: the figures against a real run of the same strategies.

Exact figures must be equal to the run's, bounds must hold.
"""

from __future__ import annotations

from rankkit.cache import JudgmentCache
from rankkit.judges import make_judge
from rankkit.plan import dry_run
from rankkit.runner import run
from rankkit.strategies import make_strategy

JUDGE = "sim:accuracy=0.8,position_bias=0.2,noise=1"


def check_against_run(tasks, specs, cache_path, seed=0):
    """Dry-run, then run for real on the same cache; assert every figure is exact or a true bound."""
    strategies = [make_strategy(s) for s in specs]
    judge = make_judge(JUDGE)
    with JudgmentCache(cache_path) as cache:
        report = dry_run(tasks, strategies, judge, cache, seed=seed)
    with JudgmentCache(cache_path) as cache:
        result = run(tasks, strategies, judge, cache, seed=seed, progress=False)
    for row, real in zip(report.rows, result.strategies):
        cost = real.cost
        actual = {"comparisons": cost.comparisons, "grades": cost.grades, "new": cost.judge_calls,
                  "cached": cost.cache_hits,
                  "shared": cost.comparisons + cost.grades - cost.cache_hits - cost.judge_calls}
        assert row.comparisons + row.grades == row.cached + row.shared + row.new, row
        for figure, value in actual.items():
            planned, bound = getattr(row, figure), row.bounds.get(figure)
            if bound is None:
                assert planned == value, (row, figure, value)
            elif bound == "≤":
                assert value <= planned, (row, figure, value)
            elif bound == "≥":
                assert value >= planned, (row, figure, value)
    return report, result
