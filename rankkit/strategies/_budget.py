"""Budgets of the adaptive strategies (``swiss``, ``active``): judgments -> matches, matches -> outcomes.

How a budget becomes a number of matches, and how played matches become rating outcomes.

**Budgets count judgments**, exactly as :class:`~rankkit.matches.Cost` counts ``comparisons``: a
match played in one order costs 1, a match played in both orders (``order=both``) costs 2.
A strategy given a budget of B comparisons therefore plays ``B`` matches, or ``B // 2`` in both
orders (an odd budget leaves one judgment unspent, since half a two-order match is not a match),
and never more than one match per pair of candidates — so at most the all-pairs cost
``N(N − 1)/2`` matches.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankkit.order import judgments_per_match
from rankkit.ratings import Outcome
from rankkit.specs import SpecError
from rankkit.strategies.elo import comparison_outcome

if TYPE_CHECKING:  # rankkit.matches loads networkx; listing strategies should not
    from rankkit.matches import Match


def check_budget(name: str, budget: float, comparisons: int | None, order: str = "given") -> None:
    """Reject budgets that cannot rank anything: a ranking from no comparison is no ranking, and
    its metrics would be reported as if it were one.

    Parameters
    ----------
    name : str
        The strategy's name, for the message.
    budget : float
        Comparisons per candidate; must be > 0.
    comparisons : int | None
        The absolute budget per task when not None; must buy at least one match (2
        comparisons with ``order=both``).
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
    """How many matches a task's budget buys (:func:`comparison_budget`, :func:`matches_in_budget`).

    A per-candidate ``budget`` too small for a task's number of candidates buys none; that is a
    :class:`SpecError` naming the task and the least budget that would do, not a silent ranking
    from no comparison.

    Parameters
    ----------
    name : str
        The strategy's name, for the message.
    task_id : str
        The task's id, for the message.
    n_candidates : int
        The number of candidates of the task.
    budget : float
        Comparisons per candidate — the task gets ``floor(budget · N)``.
    comparisons : int | None
        An absolute number per task; when given it replaces ``budget``.
    order : str
        The order of presentation (``both``: a match costs 2).

    Returns
    -------
    int
        The number of matches (at least 1).

    Raises
    ------
    SpecError
        When the budget buys no match.
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
    """The comparisons (judgments) a task may use.

    Parameters
    ----------
    n_candidates : int
        The number of candidates of the task.
    budget : float
        Comparisons per candidate — the task gets ``floor(budget · N)``.
    comparisons : int | None
        An absolute number per task; when given it replaces ``budget``.

    Returns
    -------
    int
        The number of comparisons.
    """
    if comparisons is not None:
        return comparisons
    # The epsilon keeps e.g. 0.1 · 30 = 3.0000000000000004 -> 3 and 2.9999999999999996 -> 3.
    # N² is more than all pairs in both orders cost, so the cap changes nothing but keeps a huge
    # finite budget (1e308 · N overflows to inf) a number.
    return math.floor(min(budget * n_candidates, n_candidates**2) + 1e-9)


def matches_in_budget(n_candidates: int, judgments: int, order: str) -> int:
    """How many matches ``judgments`` comparisons buy: one each, two each in both orders, and at
    most one match per pair of candidates.

    Parameters
    ----------
    n_candidates : int
        The number of candidates of the task.
    judgments : int
        The comparisons available.
    order : str
        The order of presentation.

    Returns
    -------
    int
        The number of matches.
    """
    all_pairs = n_candidates * (n_candidates - 1) // 2
    return min(all_pairs, judgments // judgments_per_match(order))


def budget_judgments(n_candidates: int, budget: float, comparisons: int | None, order: str) -> int:
    """The most judgments a task's budget buys: its matches, one judgment per order each is shown in
    (for a strategy's :meth:`~rankkit.strategies.base.Strategy.max_judgments`).

    Parameters
    ----------
    n_candidates : int
        The number of candidates of the task.
    budget : float
        Comparisons per candidate — the task gets ``floor(budget · N)``.
    comparisons : int | None
        An absolute number per task; when given it replaces ``budget``.
    order : str
        The order of presentation.

    Returns
    -------
    int
        The number of judgments.
    """
    return matches_in_budget(
        n_candidates, comparison_budget(n_candidates, budget, comparisons), order
    ) * judgments_per_match(order)


def match_outcomes(matches: Sequence[Match]) -> list[Outcome]:
    """The judgments of the matches as :mod:`rankkit.ratings` outcomes, one per judgment.

    As in ``bt`` and ``elo``, each order a pair was shown in is an outcome of its own (see
    :func:`rankkit.strategies.elo.comparison_outcomes`): a two-order match whose verdict flips with
    the order is one win each — no evidence either way — rather than a verdict decided by which of
    the two judgments had the wider grade gap.

    Parameters
    ----------
    matches : Sequence[Match]
        The matches played.

    Returns
    -------
    list[Outcome]
        One outcome per decided judgment, in order.
    """
    return [
        outcome
        for match in matches
        for comparison in match.comparisons
        if (outcome := comparison_outcome(comparison, match)) is not None
    ]
