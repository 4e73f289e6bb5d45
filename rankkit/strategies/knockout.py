"""``knockout``: Knockout Assessment (Sandan, Dinh & Niehues; Algorithm 1 of appendix A.1).

Each round the remaining answers are shuffled and paired; every pair plays one question-level
match in which the judge grades both answers; the higher-graded answer advances, and with an odd
number the unpaired answer advances unplayed. Rounds repeat until one answer — the champion —
remains. An answer's final score is the mean of every grade it received over the tournament, so
answers that advance are graded several times. N answers cost N − 1 matches (2(N − 1) judgments
with ``order=both``, the knockout paper's debiased variant). The bracket itself is
:func:`rankkit.brackets.play_bracket`, which the Arena-lite leaderboard plays too.
"""

from __future__ import annotations

import functools
import random
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.brackets import TIE_RULES, play_bracket
from rankkit.order import judgments_per_match
from rankkit.specs import SpecError
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.tasks import Task

if TYPE_CHECKING:  # rankkit.matches loads networkx; `rankkit strategies` should not
    from rankkit.matches import MatchSource


@register("knockout")
@dataclass(frozen=True)
class Knockout(Strategy):
    """Single-elimination tournament with scores averaged over rounds.

    Parameters
    ----------
    order : str, default "given"
        Which answer the judge sees first (:mod:`rankkit.matches`): ``given`` (default; the
        pairs come from a shuffle), ``random``, or ``both`` — judge each match in both orders and
        average the two grades per answer (thesis §3.2.1, after Liusie et al. 2024; doubles the
        cost).
    tie : str, default "coin"
        Who advances when both answers got the same (averaged) grade and the judge's verdicts
        do not separate them: ``coin`` (a seeded coin flip, the default), ``first`` (the answer
        shown first) or ``second`` (the answer shown second — Algorithm 1 read literally, whose
        ``else`` branch advances r_{k+1}).
    """

    order: str = "given"
    tie: str = "coin"

    description = "knockout tournament, scores averaged over rounds (N-1 matches; x2 with order=both)"

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.tie not in TIE_RULES:
            raise SpecError(f"strategy knockout: tie must be one of {', '.join(TIE_RULES)}, got {self.tie!r}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Play a single-elimination tournament on the task's candidates.

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
        play_round = functools.partial(source.play_many, order=self.order, rng=rng)
        bracket = play_bracket(task.candidate_ids, rng, play_round, reshuffle=True, tie=self.tie)
        received: dict[str, list[float]] = {cid: [] for cid in task.candidate_ids}
        played = dict.fromkeys(task.candidate_ids, 0)
        for matches in bracket.rounds:
            for match in matches:
                played[match.a] += 1
                played[match.b] += 1
                if match.decided:  # an undecided match gives no grade (rankkit.matches)
                    received[match.a].append(match.grade_a)
                    received[match.b].append(match.grade_b)
        # No grade at all (every match undecided): the bottom of the scale, never a reward.
        scores = {
            cid: statistics.fmean(received[cid]) if received[cid] else task.scale[0] for cid in task.candidate_ids
        }
        extras = {
            cid: CandidateExtras(
                eliminated_round=bracket.eliminated_round[cid],
                played=played[cid],
                grades=tuple(received[cid]),
                byes=bracket.byes[cid],
                rounds=len(bracket.rounds),
            )
            for cid in task.candidate_ids
        }
        return Ranking(scores=scores, champion=bracket.champion, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int:
        """N − 1 matches exactly: each eliminates one answer, and no two answers meet twice.

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int
            The number of judgments.
        """
        return judgments_per_match(self.order) * max(0, n_candidates - 1)
