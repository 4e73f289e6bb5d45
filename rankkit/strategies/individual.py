"""``individual``: the paper's pointwise baseline — every answer graded once, on its own."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.data.tasks import Task
from rankkit.judgments.values import ParseStatus
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


@register("individual")
@dataclass(frozen=True)
class Individual(Strategy):
    """Grade each candidate once with a pointwise prompt; the grade is its score.

    An unreadable grade scores the bottom of the scale (a text that breaks the judge never gains)
    and is flagged ``parse_failed``.
    """

    description = "pointwise baseline: one grade per candidate (N grades)"
    kind = "pointwise"

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Grade each candidate once; the grade is its score."""
        ids = task.candidate_ids
        judgments = source.grade_many(ids)
        bottom = task.scale[0]
        scores, extras = {}, {}
        for cid, judgment in zip(ids, judgments):
            failed = judgment.value is None or judgment.status is ParseStatus.FAILED
            scores[cid] = bottom if judgment.value is None else float(judgment.value)
            extras[cid] = CandidateExtras(parse_failed=failed, played=0)
        return Ranking(scores=scores, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int:
        """One grade per candidate."""
        return n_candidates
