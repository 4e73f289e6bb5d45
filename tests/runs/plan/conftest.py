"""The check every dry-run test relies on: the figures against a real run of the same strategies.

Exact figures must equal the run's and ``≤`` bounds must hold; ``~`` figures are estimates and
promise nothing.
"""

from __future__ import annotations

from rankkit.judges import make_judge
from rankkit.judgments.cache import JudgmentCache
from rankkit.runs.plan import dry_run
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

JUDGE = "sim:model=fixed,accuracy=0.8,position_bias=0.2,noise=1"


def actual_figures(cost) -> dict[str, int]:
    """A real run's cost, as the dry run's columns name it."""
    return {
        "comparisons": cost.comparisons,
        "grades": cost.grades,
        "new": cost.judge_calls,
        "cached": cost.cache_hits,
        "shared": cost.comparisons + cost.grades - cost.cache_hits - cost.judge_calls,
    }


def check_figures(report, result) -> None:
    """Assert every figure of the dry run is exact or a true bound of the run's."""
    for row, real in zip(report.rows, result.strategies):
        if row.exact:
            assert row.comparisons + row.grades == row.cached + row.shared + row.new, row
        for figure, value in actual_figures(real.cost).items():
            planned, bound = getattr(row, figure), row.bounds.get(figure)
            if bound is None:
                assert planned == value, (row, figure, value)
            elif bound == "≤":
                assert value <= planned, (row, figure, value)


def check_against_run(tasks, specs, cache_path, seed=0, judge_spec=JUDGE):
    """Dry-run, then run for real on the same cache; assert every figure is exact or a true bound."""
    strategies = [make_strategy(s) for s in specs]
    judge = make_judge(judge_spec)
    with JudgmentCache(cache_path) as cache:
        report = dry_run(tasks, strategies, judge, cache, seed=seed)
    with JudgmentCache(cache_path) as cache:
        result = run(tasks, strategies, judge, cache, seed=seed, progress=False)
    check_figures(report, result)
    return report, result
