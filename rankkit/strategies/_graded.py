"""Scores from the grades a judge gives inside its pairwise judgments, corrected for its slot bias.

A pairwise judgment grades both answers (*Knockout LLM Assessment*'s prompt: "Answer 1: X/M Answer 2: Y/M"). The
knockout paper scores an answer by the mean of the grades it received; but a judge that prefers
the first slot lifts the first answer's grade and lowers the second's, so when each pair is shown
in one order only, a mean grade also measures how often the answer happened to be shown first.

**Model** (least squares; :func:`corrected_grades`). Every grade is

    grade = θ_answer + β/2 · (+1 if shown first, −1 if second) + noise,

θ the answer's level on the judge's grading scale and β the judge's slot effect (the first
grade minus the second, beyond the answers' difference). Minimising the squared residuals over
θ and β has a closed form: for a given β each θ is the answer's mean grade corrected by β/2 times
its first-minus-second slot share, and substituting that into β's normal equation leaves one
linear equation in β. So the fit costs O(judgments + answers), with no iterative solver. When
every answer is shown first and second equally often (``order=both``), θ is the plain mean
grade; when the design cannot tell β from the answers (every answer always in the same slot), β
is taken as 0 and θ is the mean grade.

Why not the grade *differences* alone (``grade_first − grade_second = θ_first − θ_second + β``,
a Thurstone-style margin model)? It would also hold for a judge whose grades are relative to the
opponent, but when grades carry their own level it throws away half the information (the pair's
sum), and on a knockout-like design, where most answers meet few others, it is poorly
connected; in the simulations of ``benchmarks/adaptive.py`` it ranked worse than this model.
"""

from __future__ import annotations

import statistics
from typing import TYPE_CHECKING, Iterable, Sequence

if TYPE_CHECKING:  # rankkit.matches loads networkx; `rankkit strategies` should not
    from rankkit.matches import Comparison


def corrected_grades(comparisons: Iterable[Comparison], candidates: Sequence[str], unplayed: float) -> dict[str, float]:
    """Each candidate's slot-corrected grade level θ (see the module docstring).

    comparisons: the judgments (a match played in both orders gives two).
    candidates: every candidate id; one that never played gets ``unplayed``.
    unplayed: the score of a candidate without any judgment (e.g. the scale's midpoint).
    """
    return fit_corrected_grades(comparisons, candidates, unplayed)[0]


def mean_grades(comparisons: Iterable[Comparison], candidates: Sequence[str], unplayed: float) -> dict[str, float]:
    """Each candidate's plain mean grade over the judgments it appeared in (the knockout paper's
    score averaging); ``unplayed`` for a candidate without any judgment."""
    grades: dict[str, list[float]] = {cid: [] for cid in candidates}
    for comparison in comparisons:
        grades[comparison.first].append(comparison.verdict.first_grade)
        grades[comparison.second].append(comparison.verdict.second_grade)
    return {cid: statistics.fmean(values) if values else unplayed for cid, values in grades.items()}


def fit_corrected_grades(comparisons: Iterable[Comparison], candidates: Sequence[str],
                         unplayed: float) -> tuple[dict[str, float], float]:
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
    levels = {cid: (total[cid] - beta / 2 * slot[cid]) / count[cid] if count[cid] else unplayed
              for cid in candidates}
    return levels, beta
