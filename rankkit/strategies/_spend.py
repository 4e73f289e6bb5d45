"""Budgets in answers shown, tokens or USD for the adaptive strategies (``active``, ``swiss``, ``setwise_groups``).

A budget in judgments is counted as before (:mod:`rankkit.strategies._budget`); one in another unit
lifts that cap (:func:`judgment_budget`) and a :class:`BudgetWatch` stops the task instead: a step is
asked only when what it is quoted to spend (:meth:`~rankkit.strategies.matches.MatchSource.quote`) still
fits. Every stop records what the task spent in all four units (:func:`spent_extras`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx
    from rankkit.strategies.matches import MatchSource

#: The judgments-per-candidate cap while a budget in another unit decides (the most ``budget`` takes).
JUDGMENTS_UNLIMITED = 10_000.0


def judgment_budget(budget: float, unit: str) -> float:
    """The judgments per candidate the task may use: ``budget`` in judgments, else no cap of its own."""
    return budget if unit == "judgments" else JUDGMENTS_UNLIMITED


def pair_shown(a: str, b: str, order: str) -> list[tuple[str, ...]]:
    """The judgments a match of ``a`` and ``b`` asks: both orders with ``order=both``, else one."""
    return [(a, b), (b, a)] if order == "both" else [(a, b)]


class BudgetWatch:
    """Stops a task before its judgments spend more than ``budget · N`` answers, tokens or USD.

    Raises
    ------
    SpecError
        For a ``usd`` budget when the judge has no price (before any judgment is asked).
    """

    def __init__(self, name: str, budget: float, unit: str, task: Task, source: MatchSource):
        if unit == "usd" and not source.meter.priced:
            raise SpecError(
                f"strategy {name}: budget={budget:g}usd needs a judge with a price "
                "(a hosted judge with a built-in price, or price_in=,price_out=); use tokens or answers"
            )
        self.unit = unit
        self.limit = budget * len(task.candidates)
        self.source = source

    def affordable(self, steps: Sequence[Sequence[tuple[str, ...]]]) -> int:
        """How many of ``steps`` (each the judgments it asks, ids in the order shown), taken in order,
        fit in what is left of the budget."""
        spent = self.source.spend.amount(self.unit)
        count = 0
        for shown in steps:
            spent += self.source.quote(shown).amount(self.unit)
            if spent > self.limit * (1 + 1e-12):
                break
            count += 1
        return count


def spent_extras(source: MatchSource) -> dict[str, float]:
    """What the task spent, as the ``spent_*`` candidate extras."""
    spend = source.spend
    return {
        "spent_judgments": spend.judgments,
        "spent_answers": spend.answers,
        "spent_tokens": spend.tokens,
        "spent_usd": round(spend.usd, 9),
    }
