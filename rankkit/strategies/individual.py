"""``individual``: the paper's pointwise baseline — every answer graded once, on its own."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.judgments import ParseStatus
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.tasks import Task

if TYPE_CHECKING:  # rankkit.matches loads networkx; `rankkit strategies` should not
    from rankkit.matches import MatchSource


@register("individual")
@dataclass(frozen=True)
class Individual(Strategy):
    """Grade each candidate once with a pointwise prompt; the grade is its score.

    A grade that could not be read scores the bottom of the task's scale, so a text that breaks
    the judge never gains from it (see "Undecided comparisons" in :mod:`rankkit.matches`), and is
    flagged in ``extras`` as ``parse_failed``.
    """

    description = "pointwise baseline: one grade per candidate (N grades)"
    kind = "pointwise"

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Grade each candidate once; the grade is its score.

        Parameters
        ----------
        task : Task
            The task whose candidates are ranked.
        source : MatchSource
            Where the task's judgments come from.
        rng : random.Random
            The strategy's random numbers for this task.

        Returns
        -------
        Ranking
            The scores, the ranking and the per-candidate extras.
        """
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
        """One grade per candidate.

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int
            The number of judgments.
        """
        return n_candidates
