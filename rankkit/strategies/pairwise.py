"""``pairwise``: the paper's naive pairwise baseline — one random pairing, one match each."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.data.tasks import Task
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


@register("pairwise")
@dataclass(frozen=True)
class Pairwise(Strategy):
    """Shuffle, pair up, play each pair once; score = the grade from its match (averaged with ``order=both``).

    The odd one out plays an extra match against a random opponent, who keeps its own match's grade.

    Parameters
    ----------
    order
        Which answer the judge sees first (:mod:`rankkit.strategies.matches`): ``given`` (pairs come from a
        shuffle), ``random``, or ``both`` (each match in both orders, grades averaged).
    """

    order: str = "given"

    description = "naive pairwise baseline: random pairs, one match each (ceil(N/2) matches)"

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Pair the shuffled candidates up and play each pair once."""
        ids = task.candidate_ids
        rng.shuffle(ids)
        pairs = [(ids[i], ids[i + 1]) for i in range(0, len(ids) - 1, 2)]
        odd = ids[-1] if len(ids) % 2 else None
        if odd is not None:
            pairs.append((odd, rng.choice(ids[:-1])))
        matches = source.play_many(pairs, round=1, order=self.order, rng=rng)
        scores, extras = {}, {}
        for match in matches:
            for cid, score, other in ((match.a, match.grade_a, match.b), (match.b, match.grade_b, match.a)):
                if not match.decided:  # an undecided match scores nobody above the bottom (rankkit.strategies.matches)
                    score = task.scale[0]
                if cid not in scores:
                    scores[cid] = score
                    extras[cid] = CandidateExtras(opponent=other, played=1)
        return Ranking(
            scores={cid: scores[cid] for cid in task.candidate_ids},
            extras={cid: extras[cid] for cid in task.candidate_ids},
        )

    def exact_judgments(self, n_candidates: int) -> int:
        """One match per two candidates (and one for the odd one out)."""
        return (n_candidates + 1) // 2 * judgments_per_match(self.order) if n_candidates > 1 else 0
