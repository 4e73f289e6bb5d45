"""Budgets in answers shown, tokens or USD for the adaptive strategies (``active``, ``swiss``, ``setwise_groups``).

A budget in judgments is counted as before (:mod:`rankkit.strategies._budget`); one in another unit
lifts that cap (:func:`judgment_budget`) and a :class:`BudgetWatch` stops the task instead: a step is
asked only when what it is quoted to spend (:meth:`~rankkit.strategies.matches.MatchSource.quote`) still
fits. Every stop records what the task spent in all four units (:func:`spent_extras`), and a
forecast in judgments is told in all four (:func:`forecast_spend`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.judgments.spend import UNITS, Spend
from rankkit.strategies._stopping import Forecast

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx
    from rankkit.strategies.matches import MatchSource

#: The judgments-per-candidate cap while a budget in another unit decides (the most ``budget`` takes).
JUDGMENTS_UNLIMITED = 10_000.0


def judgment_budget(budget: float, unit: str) -> float:
    """The judgments per candidate the task may use: ``budget`` in judgments, half of it in answers (a
    judgment shows at least 2), else no cap of its own (tokens and USD are counted as they are spent)."""
    if unit == "judgments":
        return budget
    return budget / 2 if unit == "answers" else JUDGMENTS_UNLIMITED


def pair_shown(a: str, b: str, order: str) -> list[tuple[str, ...]]:
    """The judgments a match of ``a`` and ``b`` asks: both orders with ``order=both``, else one."""
    return [(a, b), (b, a)] if order == "both" else [(a, b)]


def unpriced(name: str, budget: float) -> SpecError:
    """The error for a budget of ``budget`` USD on a judge without a price."""
    return SpecError(
        f"strategy {name}: budget={budget:g}usd needs a judge with a price "
        "(a hosted judge with a built-in price, or price_in=,price_out=); use tokens or answers"
    )


class BudgetWatch:
    """Stops a task before its judgments spend more than ``budget · N`` answers, tokens or USD.

    Raises
    ------
    SpecError
        For a ``usd`` budget when the judge has no price (before any judgment is asked).
    """

    def __init__(self, name: str, budget: float, unit: str, task: Task, source: MatchSource):
        if unit == "usd" and not source.meter.priced:
            raise unpriced(name, budget)
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


def forecast_spend(forecast: Forecast, per_judgment: Spend) -> dict[str, tuple[float, float, float]]:
    """A :class:`~rankkit.strategies._stopping.Forecast` (in judgments) in every unit of ``per_judgment``
    (what one judgment spends, on average): unit -> (expected, low, high).

    Examples
    --------
    >>> forecast = Forecast(10.0, 4.0, 20.0, "prior")
    >>> forecast_spend(forecast, Spend(1, 2, 300, 0.001))["tokens"]
    (3000.0, 1200.0, 6000.0)
    """
    return {
        unit: tuple(n * per_judgment.amount(unit) for n in (forecast.expected, forecast.low, forecast.high))
        for unit in UNITS
    }


def describe_spend(forecast: Forecast, per_judgment: Spend, units: Sequence[str] = UNITS) -> str:
    """:func:`forecast_spend` as text, in ``units`` (those the run can tell).

    Examples
    --------
    >>> describe_spend(Forecast(10.0, 4.0, 20.0, "prior"), Spend(1, 2, 300, 0.001))
    '~10 (4–20) judgments, ~20 (8–40) answers, ~3,000 (1,200–6,000) tokens, ~$0.01 ($0.00–$0.02)'
    """
    spend = forecast_spend(forecast, per_judgment)
    parts = []
    for unit in units:
        expected, low, high = spend[unit]
        if unit == "usd":
            parts.append(f"~${expected:.2f} (${low:.2f}–${high:.2f})")
        else:
            parts.append(f"~{expected:,.0f} ({low:,.0f}–{high:,.0f}) {unit}")
    return ", ".join(parts)
