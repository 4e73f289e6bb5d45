"""Scores from the grades a judge gives inside its pairwise judgments, corrected for its slot bias.

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import Comparison


def corrected_grades(comparisons: Iterable[Comparison], candidates: Sequence[str], unplayed: float) -> dict[str, float]:
    """Each candidate's slot-corrected grade level θ (see ``docs/strategies.md``); ``unplayed`` (e.g.
    the scale's midpoint) for one without any judgment.
    """
    return fit_corrected_grades(comparisons, candidates, unplayed)[0]


def mean_grades(comparisons: Iterable[Comparison], candidates: Sequence[str], unplayed: float) -> dict[str, float]:
    """Each candidate's mean grade over its judgments (the knockout paper's score averaging);
    ``unplayed`` for one without any judgment.
    """
    grades: dict[str, list[float]] = {cid: [] for cid in candidates}
    for comparison in comparisons:
        grades[comparison.first].append(comparison.verdict.first_grade)
        grades[comparison.second].append(comparison.verdict.second_grade)
    return {cid: statistics.fmean(values) if values else unplayed for cid, values in grades.items()}


def fit_corrected_grades(
    comparisons: Iterable[Comparison], candidates: Sequence[str], unplayed: float
) -> tuple[dict[str, float], float]:
    """:func:`corrected_grades` and the fitted slot effect β (0 when the design cannot identify it)."""
    count = dict.fromkeys(candidates, 0)
    total = dict.fromkeys(candidates, 0.0)
    slot = dict.fromkeys(candidates, 0)  # times shown first minus times shown second
    judgments = 0
    margin_sum = 0.0
    for comparison in comparisons:
        first, second = comparison.verdict.first_grade, comparison.verdict.second_grade
        count[comparison.first] += 1
        count[comparison.second] += 1
        total[comparison.first] += first
        total[comparison.second] += second
        slot[comparison.first] += 1
        slot[comparison.second] -= 1
        margin_sum += first - second
        judgments += 1
    played = [cid for cid in candidates if count[cid]]
    # The normal equation of β after substituting θ(β) = (total − β/2 · slot) / count:
    #   β · (M − ½ Σ slot²/count) = Σ margins − Σ slot · total / count
    denominator = judgments - 0.5 * sum(slot[cid] ** 2 / count[cid] for cid in played)
    numerator = margin_sum - sum(slot[cid] * total[cid] / count[cid] for cid in played)
    beta = numerator / denominator if denominator > 1e-9 * max(1, judgments) else 0.0
    levels = {cid: (total[cid] - beta / 2 * slot[cid]) / count[cid] if count[cid] else unplayed for cid in candidates}
    return levels, beta
