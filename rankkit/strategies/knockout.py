"""``knockout``: Knockout Assessment (Sandan, Dinh & Niehues; Algorithm 1 of appendix A.1).

Each round the remaining answers are shuffled and paired; the judge grades both answers of each
match and the higher-graded advances (an odd one out advances unplayed) until one remains. Score
= the mean of every grade received. N answers cost N − 1 matches (twice with ``order=both``).
The bracket is :func:`rankkit.strategies.brackets.play_bracket`.
"""

from __future__ import annotations

import functools
import random
import statistics
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.brackets import TIE_RULES, play_bracket
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


@register("knockout")
@dataclass(frozen=True)
class Knockout(Strategy):
    """Single-elimination tournament with scores averaged over rounds.

    Parameters
    ----------
    order
        Which answer the judge sees first (:mod:`rankkit.strategies.matches`): ``given`` (pairs come from a
        shuffle), ``random``, or ``both`` (each match in both orders, grades averaged; twice the cost).
    tie
        Who advances on equal grades the verdicts do not separate: ``coin`` (seeded), ``first`` or
        ``second`` (the answer shown second: Algorithm 1 read literally).
    """

    order: str = "given"
    tie: str = "coin"

    description = "knockout tournament, scores averaged over rounds (N-1 matches; x2 with order=both)"

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.tie not in TIE_RULES:
            raise SpecError(f"strategy knockout: tie must be one of {', '.join(TIE_RULES)}, got {self.tie!r}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Play a single-elimination tournament on the task's candidates."""
        play_round = functools.partial(source.play_many, order=self.order, rng=rng)
        bracket = play_bracket(task.candidate_ids, rng, play_round, reshuffle=True, tie=self.tie)
        received: dict[str, list[float]] = {cid: [] for cid in task.candidate_ids}
        played = dict.fromkeys(task.candidate_ids, 0)
        for matches in bracket.rounds:
            for match in matches:
                played[match.a] += 1
                played[match.b] += 1
                if match.decided:  # an undecided match gives no grade (rankkit.strategies.matches)
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
        """N − 1 matches, each its presentations: each eliminates one answer, no two meet twice."""
        return judgments_per_match(self.order) * max(0, n_candidates - 1)
