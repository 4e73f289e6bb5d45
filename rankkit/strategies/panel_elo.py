"""``panel_elo``: every pair decided once (by a panel judge), Elo-updated after each decision.

After the poster *Towards Scalable Reliable Automated Evaluation via LLMs*: several LLMs judge each
pair in both orders, an agreement threshold turns their votes into a win or draw (the ``panel``
judge, :mod:`rankkit.judges.composite.panel`), and :func:`rankkit.stats.ratings.online_elo` updates after each.
With any other judge it is plain all-pairs online Elo. N candidates cost N·(N−1)/2 decisions.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.stats.ratings import ELO_INITIAL, elo_over_permutations, online_elo
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.elo import all_pairs_judgments
from rankkit.strategies.order import coin_order

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


@register("panel_elo")
@dataclass(frozen=True)
class PanelElo(Strategy):
    """All pairs decided once, in a seeded random sequence, with an Elo update after each decision.

    Parameters
    ----------
    k
        The Elo step K: how far one fully unexpected result moves a rating.
    permutations
        1 plays the decisions once in the seeded order (the poster's update); more averages online
        Elo over that many seeded orders.
    order
        Which answer the judge sees first (:mod:`rankkit.strategies.matches`): ``given`` (a seeded random
        orientation), ``random`` or ``both`` (for single judges; a panel already asks both orders).
    """

    k: float = 16.0
    permutations: int = 1
    order: str = "given"

    description = "all pairs decided once (a panel: votes in both orders + threshold), online Elo (N(N-1)/2 decisions)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"k": (0, 1000), "permutations": (1, 10_000)}

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.k <= 0:
            raise SpecError(f"strategy panel_elo: k must be > 0, got {self.k}")
        if self.permutations < 1:
            raise SpecError(f"strategy panel_elo: permutations must be >= 1, got {self.permutations}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Decide every pair once, in a seeded random sequence, with an Elo update after each decision."""
        ids = task.candidate_ids
        pairs = list(combinations(ids, 2))
        rng.shuffle(pairs)
        # Each pair's orientation is drawn too, so with the default order=given a single (non-panel)
        # judge's slot bias does not systematically favour the candidates listed first in the data.
        pairs = [coin_order(a, b, rng) for a, b in pairs]
        matches = source.play_many(pairs, round=1, order=self.order, rng=rng)
        outcomes = [(match.a, match.b, match.outcome) for match in matches if match.decided]
        if self.permutations == 1:
            ratings = online_elo(outcomes, items=ids, k=self.k, initial=ELO_INITIAL)
        else:
            ratings = elo_over_permutations(
                outcomes, items=ids, permutations=self.permutations, seed=rng, k=self.k, initial=ELO_INITIAL
            )
        tally = {cid: {"wins": 0, "draws": 0, "losses": 0} for cid in ids}
        for a, b, outcome in outcomes:
            for cid, points in ((a, outcome), (b, 1.0 - outcome)):
                tally[cid]["wins" if points == 1.0 else "draws" if points == 0.5 else "losses"] += 1
        extras = {cid: CandidateExtras(**tally[cid], played=len(ids) - 1) for cid in ids}
        return Ranking(scores={cid: ratings[cid] for cid in ids}, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int:
        """Every pair, in each order shown (:func:`~rankkit.strategies.elo.all_pairs_judgments`)."""
        return all_pairs_judgments(n_candidates, self.order)
