"""``knockout``: Knockout Assessment (Sandan, Dinh & Niehues; Algorithm 1 of appendix A.1).

Each round the remaining answers are shuffled and paired; every pair plays one question-level
match in which the judge grades both answers; the higher-graded answer advances, and with an odd
number the unpaired answer advances unplayed. Rounds repeat until one answer — the champion —
remains. An answer's final score is the mean of every grade it received over the tournament, so
answers that advance are graded several times. N answers cost N − 1 matches (2(N − 1) judgments
with ``order=both``, the knockout paper's debiased variant).
"""

from __future__ import annotations

import random
import statistics
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING

from rankkit.order import judgments_per_duel
from rankkit.specs import SpecError
from rankkit.strategies.base import Ranking, Strategy, register
from rankkit.tasks import Task

if TYPE_CHECKING:  # rankkit.matches loads networkx; `rankkit strategies` should not
    from rankkit.matches import MatchSource

TIE_RULES = ("coin", "first", "second")


@register("knockout")
@dataclass(frozen=True)
class KnockoutStrategy(Strategy):
    """Single-elimination tournament with scores averaged over rounds.

    order: which answer the judge sees first (:mod:`rankkit.matches`): ``given`` (default; the
        pairs come from a shuffle), ``random``, or ``both`` — judge each match in both orders and
        average the two grades per answer (thesis §3.2.1, after Liusie et al. 2024; doubles the
        cost). ``debias=true`` is ``order=both``, ``debias=false`` ``order=given``.
    tie: who advances when both answers got the same (averaged) grade and the judge's verdicts
        do not separate them: ``coin`` (a seeded coin flip, the default), ``first`` (the answer
        shown first) or ``second`` (the answer shown second — Algorithm 1 read literally, whose
        ``else`` branch advances r_{k+1}).
    """

    order: str = "given"
    tie: str = "coin"
    debias: InitVar[bool | None] = None  # alias of order (see resolve_debias); not stored

    description = "knockout tournament, scores averaged over rounds (N-1 matches; x2 debiased)"

    def __post_init__(self, debias: bool | None) -> None:
        self.resolve_debias(debias)
        if self.tie not in TIE_RULES:
            raise SpecError(f"strategy knockout: tie must be one of {', '.join(TIE_RULES)}, got {self.tie!r}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        alive = task.candidate_ids
        received: dict[str, list[float]] = {cid: [] for cid in alive}
        eliminated: dict[str, int | None] = {}
        byes: dict[str, int] = {cid: 0 for cid in alive}
        round_number = 0
        while len(alive) > 1:
            round_number += 1
            rng.shuffle(alive)
            pairs = [(alive[i], alive[i + 1]) for i in range(0, len(alive) - 1, 2)]
            advancing = []
            # One batch per round: a batching or concurrent judge gets the whole round at once.
            for duel in source.play_many(pairs, round=round_number, order=self.order, rng=rng):
                received[duel.a].append(duel.grade_a)
                received[duel.b].append(duel.grade_b)
                outcome = duel.outcome
                if outcome == 0.5:
                    outcome = {"coin": float(rng.random() < 0.5), "first": 1.0, "second": 0.0}[self.tie]
                winner, loser = (duel.a, duel.b) if outcome == 1.0 else (duel.b, duel.a)
                advancing.append(winner)
                eliminated[loser] = round_number
            if len(alive) % 2:
                byes[alive[-1]] += 1
                advancing.append(alive[-1])
            alive = advancing
        champion = alive[0]
        eliminated[champion] = None
        scores = {cid: statistics.fmean(grades) for cid, grades in received.items()}
        extras = {
            cid: {"eliminated_round": eliminated[cid], "played": len(received[cid]),
                  "grades": list(received[cid]), "byes": byes[cid], "rounds": round_number}
            for cid in task.candidate_ids
        }
        return Ranking(scores={cid: scores[cid] for cid in task.candidate_ids}, champion=champion, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int:
        """N − 1 duels exactly: each eliminates one answer, and no two answers meet twice."""
        return judgments_per_duel(self.order) * max(0, n_candidates - 1)
