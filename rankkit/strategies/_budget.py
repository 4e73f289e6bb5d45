"""Budgets of the adaptive strategies (``swiss``, ``active``): judgments -> duels, duels -> records.

How a budget becomes a number of duels, and how played duels become rating records.

**Budgets count judgments**, exactly as :class:`~rankkit.matches.Cost` counts ``comparisons``: a
duel played in one order costs 1, a duel in both orders (``order=both``) costs 2.
A strategy given a budget of B comparisons therefore plays ``B`` duels, or ``B // 2`` in both
orders (an odd budget leaves one judgment unspent, since half a two-order duel is not a duel),
and never more than one duel per pair of candidates — so at most the all-pairs cost
``N(N − 1)/2`` duels.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Sequence

from rankkit.order import judgments_per_duel
from rankkit.ratings import Outcome
from rankkit.specs import SpecError
from rankkit.strategies.elo import judgment_records

if TYPE_CHECKING:  # rankkit.matches loads networkx; listing strategies should not
    from rankkit.matches import Match


def check_budget(name: str, budget: float, comparisons: int | None, order: str = "given") -> None:
    """Reject budgets that cannot rank anything: a ranking from no comparison is no ranking, and
    its metrics would be reported as if it were one.

    name: the strategy's name, for the message.
    budget: comparisons per candidate; must be > 0.
    comparisons: the absolute budget per task when not None; must buy at least one duel (2
        comparisons with ``order=both``).
    """
    if not budget > 0:  # also refuses NaN
        raise SpecError(f"strategy {name}: budget must be > 0 comparisons per candidate, got {budget}")
    least = judgments_per_duel(order)
    if comparisons is not None and comparisons < least:
        why = " (a duel in both orders costs 2)" if least == 2 else ""
        raise SpecError(f"strategy {name}: comparisons must be >= {least}{why}, got {comparisons}")


def task_duels(name: str, task_id: str, n_candidates: int, budget: float, comparisons: int | None,
               order: str) -> int:
    """The duels a task's budget buys (:func:`comparison_budget`, :func:`duels_in_budget`).

    A per-candidate ``budget`` too small for a task's number of candidates buys none; that is a
    :class:`SpecError` naming the task and the least budget that would do, not a silent ranking
    from no comparison.
    """
    duels = duels_in_budget(n_candidates, comparison_budget(n_candidates, budget, comparisons), order)
    if duels == 0:
        least = judgments_per_duel(order)
        smallest = math.ceil(least / n_candidates * 1000) / 1000
        raise SpecError(f"strategy {name}: budget={budget:g} buys no duel on task {task_id!r} "
                        f"({n_candidates} candidates; a duel costs {least}); use budget >= {smallest:g} "
                        f"or comparisons={least}")
    return duels


def comparison_budget(n_candidates: int, budget: float, comparisons: int | None) -> int:
    """The comparisons (judgments) a task may use.

    budget: comparisons per candidate — the task gets ``floor(budget · N)``.
    comparisons: an absolute number per task; when given it replaces ``budget``.
    """
    if comparisons is not None:
        return comparisons
    # The epsilon keeps e.g. 0.1 · 30 = 3.0000000000000004 -> 3 and 2.9999999999999996 -> 3.
    # N² is more than all pairs in both orders cost, so the cap changes nothing but keeps a huge
    # finite budget (1e308 · N overflows to inf) a number.
    return math.floor(min(budget * n_candidates, n_candidates ** 2) + 1e-9)


def duels_in_budget(n_candidates: int, judgments: int, order: str) -> int:
    """How many duels ``judgments`` comparisons buy: one each, two each in both orders, and at
    most one duel per pair of candidates."""
    all_pairs = n_candidates * (n_candidates - 1) // 2
    return min(all_pairs, judgments // judgments_per_duel(order))


def budget_judgments(n_candidates: int, budget: float, comparisons: int | None, order: str) -> int:
    """The most judgments a task's budget buys: its duels, one judgment per order each is shown in
    (for a strategy's :meth:`~rankkit.strategies.base.Strategy.max_judgments`)."""
    return duels_in_budget(n_candidates, comparison_budget(n_candidates, budget, comparisons), order) * \
        judgments_per_duel(order)


def duel_records(duels: Sequence[Match]) -> list[Outcome]:
    """The judgments of the duels as :mod:`rankkit.ratings` match records, one per judgment.

    As in ``bt`` and ``elo``, each order a pair was shown in is a match of its own (see
    :func:`rankkit.strategies.elo.judgment_records`): a two-order duel whose verdict flips with the
    order is one win each — no evidence either way — rather than a verdict decided by which of the
    two judgments had the wider grade gap.
    """
    return judgment_records([match for duel in duels for match in duel.comparisons])
