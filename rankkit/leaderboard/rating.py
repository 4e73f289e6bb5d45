"""From system-level outcomes to leaderboard rows: Bradley–Terry ratings or win rates, with bootstrap intervals.

Rows come best first, ranked 1, 2, …; a rating that cannot be computed (NaN) is stored as None
and sorts last.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

from rankkit.leaderboard.board import SystemRating
from rankkit.ratings import Outcome, bradley_terry, win_rates
from rankkit.stats import Interval, bootstrap


def rate_bt(
    outcomes: Sequence[Outcome], systems: Sequence[str], resamples: int, seed: int, alpha: float = 0.01
) -> list[SystemRating]:
    """Bradley–Terry ratings (Elo scale) with ``resamples`` bootstrap resamples, best first."""
    intervals = bootstrap(
        lambda sample: bradley_terry(sample, systems, alpha=alpha), outcomes, resamples=resamples, seed=seed
    )
    return rows_from_intervals(intervals, outcomes)


def rate_win_rate(
    outcomes: Sequence[Outcome], systems: Sequence[str], anchor: str, resamples: int, seed: int
) -> list[SystemRating]:
    """Win rates against the anchor with bootstrap intervals, best first; the anchor sits at 0.5."""
    others = [s for s in systems if s != anchor]
    intervals = bootstrap(lambda sample: win_rates(sample, others), outcomes, resamples=resamples, seed=seed)
    intervals = {name: intervals[name] for name in others}
    intervals[anchor] = Interval(0.5, 0.5, 0.5)
    return rows_from_intervals(intervals, outcomes)


def rows_from_intervals(intervals: Mapping[str, Interval], outcomes: Sequence[Outcome]) -> list[SystemRating]:
    """Leaderboard rows from each system's rating interval, best first; ``matches`` counted from ``outcomes``."""
    played: dict[str, int] = {}
    for a, b, _ in outcomes:
        played[a] = played.get(a, 0) + 1
        played[b] = played.get(b, 0) + 1
    order = sorted(intervals, key=lambda name: (-finite_or_lowest(intervals[name].estimate), name))
    return [
        SystemRating(
            name,
            none_if_nan(intervals[name].estimate),
            none_if_nan(intervals[name].low),
            none_if_nan(intervals[name].high),
            rank,
            played.get(name, 0),
        )
        for rank, name in enumerate(order, start=1)
    ]


def finite_or_lowest(value: float | None) -> float:
    """The value to sort ratings by, best first: a missing or non-finite rating sorts last."""
    return value if value is not None and math.isfinite(value) else -math.inf


def none_if_nan(value: float | None) -> float | None:
    """A rating or bound as stored in a row: NaN (not computable) becomes None."""
    return None if value is None or math.isnan(value) else float(value)
