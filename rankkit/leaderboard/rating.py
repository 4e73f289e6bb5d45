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
    """Bradley–Terry ratings (Elo scale) with ``resamples`` bootstrap resamples, best first.

    Parameters
    ----------
    outcomes : Sequence[Outcome]
        The system-level results, ``(system a, system b, a's points)``.
    systems : Sequence[str]
        The systems rated.
    resamples : int
        Bootstrap resamples for the intervals (0 = none).
    seed : int
        Seeds the bootstrap.
    alpha : float, default 0.01
        The Bradley–Terry regularisation (see :func:`rankkit.ratings.bradley_terry`).

    Returns
    -------
    list[SystemRating]
        The rows, best first.
    """
    intervals = bootstrap(
        lambda sample: bradley_terry(sample, systems, alpha=alpha), outcomes, resamples=resamples, seed=seed
    )
    return rows_from_intervals(intervals, outcomes)


def rate_win_rate(
    outcomes: Sequence[Outcome], systems: Sequence[str], anchor: str, resamples: int, seed: int
) -> list[SystemRating]:
    """Win rates against the anchor with bootstrap intervals, best first; the anchor sits at 0.5.

    Parameters
    ----------
    outcomes : Sequence[Outcome]
        The system-level results, ``(system a, system b, a's points)``.
    systems : Sequence[str]
        The systems rated, the anchor among them.
    anchor : str
        The system every other one played.
    resamples : int
        Bootstrap resamples for the intervals (0 = none).
    seed : int
        Seeds the bootstrap.

    Returns
    -------
    list[SystemRating]
        The rows, best first.
    """
    others = [s for s in systems if s != anchor]
    intervals = bootstrap(lambda sample: win_rates(sample, others), outcomes, resamples=resamples, seed=seed)
    intervals = {name: intervals[name] for name in others}
    intervals[anchor] = Interval(0.5, 0.5, 0.5)
    return rows_from_intervals(intervals, outcomes)


def rows_from_intervals(intervals: Mapping[str, Interval], outcomes: Sequence[Outcome]) -> list[SystemRating]:
    """Leaderboard rows from each system's rating interval, best first; ``matches`` counted from ``outcomes``.

    Parameters
    ----------
    intervals : Mapping[str, Interval]
        System -> rating with its interval (NaN: not computable).
    outcomes : Sequence[Outcome]
        The system-level results, ``(system a, system b, a's points)``.

    Returns
    -------
    list[SystemRating]
        The rows, ranked 1, 2, … (ties by name; uncomputable ratings last, stored as None).
    """
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
    """The value to sort ratings by, best first: a missing or non-finite rating sorts last.

    Parameters
    ----------
    value : float or None
        A rating.

    Returns
    -------
    float
        ``value``, or ``-inf`` when it is None or not finite.
    """
    return value if value is not None and math.isfinite(value) else -math.inf


def none_if_nan(value: float | None) -> float | None:
    """A rating or bound as stored in a row: NaN (not computable) becomes None.

    Parameters
    ----------
    value : float or None
        A rating or bound.

    Returns
    -------
    float or None
        ``value`` as a float, or None.
    """
    return None if value is None or math.isnan(value) else float(value)
