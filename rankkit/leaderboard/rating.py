"""From system-level outcomes to leaderboard rows: Bradley–Terry ratings or win rates, with bootstrap intervals.

Rows come best first, ranked 1, 2, …; a rating that cannot be computed (NaN) is stored as None and sorts last.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from rankkit.data.tasks import Task
from rankkit.leaderboard.board import CEILING_MARGIN, AnchorCeiling, SystemRating, systems_of
from rankkit.stats.graded import GradedMatch, davidson, ordinal
from rankkit.stats.intervals import Interval, bootstrap
from rankkit.stats.ratings import Outcome, bradley_terry, win_rates


def rate_bt(
    outcomes: Sequence[Outcome], systems: Sequence[str], resamples: int, seed: int, alpha: float = 0.01
) -> list[SystemRating]:
    """Bradley–Terry ratings (Elo scale), best first, with ``resamples`` bootstrap resamples (0: no intervals)."""
    intervals = bootstrap(
        lambda sample: bradley_terry(sample, systems, alpha=alpha), outcomes, resamples=resamples, seed=seed
    )
    return rows_from_intervals(intervals, outcomes)


def rate_davidson(outcomes: Sequence[Outcome], systems: Sequence[str], resamples: int, seed: int) -> list[SystemRating]:
    """Davidson ratings (Bradley–Terry with ties, Elo scale; :func:`rankkit.stats.graded.davidson`), best first,
    with ``resamples`` bootstrap resamples over the outcomes (0: no intervals)."""
    intervals = bootstrap(lambda sample: davidson(sample, systems), outcomes, resamples=resamples, seed=seed)
    return rows_from_intervals(intervals, outcomes)


def rate_ordinal(
    matches: Sequence[GradedMatch], systems: Sequence[str], resamples: int, seed: int
) -> list[SystemRating]:
    """Ordinal ratings (each verdict's level read, Elo scale; :func:`rankkit.stats.graded.ordinal`), best first,
    with ``resamples`` bootstrap resamples over the graded matches (0: no intervals)."""
    intervals = bootstrap(lambda sample: ordinal(sample, systems), matches, resamples=resamples, seed=seed)
    return rows_from_intervals(intervals, [(a, b, 0.5) for a, b, _ in matches])


def rate_win_rate(
    outcomes: Sequence[Outcome], systems: Sequence[str], anchor: str, resamples: int, seed: int
) -> list[SystemRating]:
    """Win rates against ``anchor`` (at 0.5), best first, with ``resamples`` bootstrap resamples (0: no intervals)."""
    others = [s for s in systems if s != anchor]
    intervals = bootstrap(lambda sample: win_rates(sample, others), outcomes, resamples=resamples, seed=seed)
    intervals = {name: intervals[name] for name in others}
    intervals[anchor] = Interval(0.5, 0.5, 0.5)
    return rows_from_intervals(intervals, outcomes)


def rows_from_intervals(intervals: Mapping[str, Interval], outcomes: Sequence[Outcome]) -> list[SystemRating]:
    """Leaderboard rows from each system's rating interval, ranked (ties by name); ``matches`` from ``outcomes``."""
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
    """The sort key of a rating: ``value``, or ``-inf`` when it is None or not finite."""
    return value if value is not None and math.isfinite(value) else -math.inf


def none_if_nan(value: float | None) -> float | None:
    """A rating or bound as stored in a row: NaN (not computable) becomes None."""
    return None if value is None or math.isnan(value) else float(value)


def anchor_ceiling(
    outcomes: Sequence[Outcome], anchor: str, lengths: Mapping[str, float] | None = None
) -> AnchorCeiling:
    """Which systems win (or lose) almost every match against the anchor, and an anchor to try instead.

    Win rates crowded against 0 or 1 carry little information, and no model fitted afterwards
    recovers their order. ``lengths`` (each system's mean answer length) picks the suggestion.

    Examples
    --------
    >>> matches = [("a", "z", 1.0)] * 19 + [("a", "z", 0.0)] + [("b", "z", 1.0), ("b", "z", 0.0)]
    >>> ceiling = anchor_ceiling(matches + [("c", "z", 1.0)] * 10, "z")
    >>> ceiling.at_ceiling, round(ceiling.share, 3), ceiling.saturated, ceiling.suggestion
    (('a', 'c'), 0.667, True, 'a')
    >>> anchor_ceiling(matches, "z", lengths={"a": 900.0, "b": 300.0, "z": 120.0}).suggestion
    'b'
    """
    rates = {name: rate for name, rate in win_rates(outcomes).items() if name != anchor and not math.isnan(rate)}
    at_ceiling = tuple(name for name, rate in rates.items() if min(rate, 1.0 - rate) <= CEILING_MARGIN)
    key = {name: lengths.get(name, math.nan) for name in rates} if lengths is not None else rates
    ordered = sorted((name for name in rates if not math.isnan(key[name])), key=lambda name: (key[name], name))
    median = ordered[(len(ordered) - 1) // 2] if ordered else None
    return AnchorCeiling(anchor, at_ceiling, len(at_ceiling) / len(rates) if rates else 0.0, median)


def mean_lengths(tasks: Iterable[Task]) -> dict[str, float]:
    """Each system's mean answer length in characters over the tasks it answered.

    Examples
    --------
    >>> from rankkit.data.tasks import Candidate, Task
    >>> task = Task("t", "q", (Candidate("1", "four", system="a"), Candidate("2", "twelve chars", system="b")))
    >>> mean_lengths([task])
    {'a': 4.0, 'b': 12.0}
    """
    lengths: dict[str, list[int]] = {}
    for task in tasks:
        for system, cid in systems_of(task).items():
            lengths.setdefault(system, []).append(task.candidate(cid).length)
    return {system: sum(values) / len(values) for system, values in lengths.items()}
