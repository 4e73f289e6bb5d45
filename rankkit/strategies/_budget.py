"""Budgets of the adaptive strategies (``swiss``, ``active``): judgments -> matches -> outcomes.

Budgets count judgments, as :class:`~rankkit.strategies.matches.Cost` counts ``comparisons``: a match in one
order costs 1, in both orders 2 (an odd budget leaves one judgment unspent). At most one match
per pair, so at most N(N − 1)/2 matches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError
from rankkit.stats.ratings import Outcome
from rankkit.strategies.elo import comparison_outcome
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; listing strategies should not
    from rankkit.strategies.matches import Match


def check_budget(name: str, budget: float, comparisons: int | None, order: str = "given") -> None:
    """Reject budgets that cannot rank anything: ``budget`` must be > 0, and ``comparisons`` (when not
    None) must buy at least one match (2 with ``order=both``); ``name`` is for the message.
    """
    if not budget > 0:  # also refuses NaN
        raise SpecError(f"strategy {name}: budget must be > 0 comparisons per candidate, got {budget}")
    least = judgments_per_match(order)
    if comparisons is not None and comparisons < least:
        why = " (a match in both orders costs 2)" if least == 2 else ""
        raise SpecError(f"strategy {name}: comparisons must be >= {least}{why}, got {comparisons}")


def task_match_count(
    name: str, task_id: str, n_candidates: int, budget: float, comparisons: int | None, order: str
) -> int:
    """How many matches (at least 1) a task's budget buys: ``floor(budget · N)`` comparisons, or
    ``comparisons`` when given.

    Raises
    ------
    SpecError
        Naming the task and the least budget that would do, when the budget buys no match.
    """
    count = matches_in_budget(n_candidates, comparison_budget(n_candidates, budget, comparisons), order)
    if count == 0:
        least = judgments_per_match(order)
        smallest = math.ceil(least / n_candidates * 1000) / 1000
        raise SpecError(
            f"strategy {name}: budget={budget:g} buys no match on task {task_id!r} "
            f"({n_candidates} candidates; a match costs {least}); use budget >= {smallest:g} "
            f"or comparisons={least}"
        )
    return count


def comparison_budget(n_candidates: int, budget: float, comparisons: int | None) -> int:
    """The comparisons a task may use: ``floor(budget · N)``, or ``comparisons`` when given."""
    if comparisons is not None:
        return comparisons
    # The epsilon keeps e.g. 0.1 · 30 = 3.0000000000000004 -> 3 and 2.9999999999999996 -> 3.
    # N² is more than all pairs in both orders cost, so the cap changes nothing but keeps a huge
    # finite budget (1e308 · N overflows to inf) a number.
    return math.floor(min(budget * n_candidates, n_candidates**2) + 1e-9)


def matches_in_budget(n_candidates: int, judgments: int, order: str) -> int:
    """How many matches ``judgments`` buy: one each, two each in both orders, at most one per pair."""
    all_pairs = n_candidates * (n_candidates - 1) // 2
    return min(all_pairs, judgments // judgments_per_match(order))


def budget_judgments(n_candidates: int, budget: float, comparisons: int | None, order: str) -> int:
    """The most judgments a task's budget buys (for :meth:`~rankkit.strategies.base.Strategy.max_judgments`)."""
    return matches_in_budget(
        n_candidates, comparison_budget(n_candidates, budget, comparisons), order
    ) * judgments_per_match(order)


def match_outcomes(matches: Sequence[Match]) -> list[Outcome]:
    """One :mod:`rankkit.stats.ratings` outcome per decided judgment of ``matches``, in order.

    Each order shown is an outcome of its own, so a two-order match whose verdict flips is one win
    each (see :func:`rankkit.strategies.elo.comparison_outcomes`).
    """
    return [
        outcome
        for match in matches
        for comparison in match.comparisons
        if (outcome := comparison_outcome(comparison, match)) is not None
    ]
