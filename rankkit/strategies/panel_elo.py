"""``panel_elo``: every pair decided once (by a panel judge), Elo-updated after each decision.

The poster *Towards Scalable Reliable Automated Evaluation via LLMs* (*Towards Scalable Reliable Automated Evaluation via LLMs*) has several LLMs
judge every pair in both orders, turns their votes into a win or a draw through an agreement
threshold (that is the ``panel`` judge, :mod:`rankkit.judges.panel`), and updates Elo ratings
after each decision::

    R_new = R + K · (S − E),   E = 1 / (1 + 10^((R_opponent − R) / 400))

with ``S`` = 1 for a win, 0.5 for a draw, 0 for a loss. The update itself is
:func:`rankkit.ratings.online_elo` (and :func:`~rankkit.ratings.elo_over_permutations` when
several orders are averaged). Use it with ``--judge panel:...``; with any other judge it is plain
all-pairs online Elo (set ``order=both`` to have a single judge see both orders as the poster
does). N candidates cost N·(N−1)/2 decisions (each one 2·members judgments for a panel).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, ClassVar

from rankkit.order import coin_order
from rankkit.ratings import ELO_INITIAL, elo_over_permutations, online_elo
from rankkit.specs import SpecError
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.elo import all_pairs_judgments
from rankkit.tasks import Task

if TYPE_CHECKING:  # rankkit.matches loads networkx; `rankkit strategies` should not
    from rankkit.matches import MatchSource


@register("panel_elo")
@dataclass(frozen=True)
class PanelElo(Strategy):
    """All pairs decided once, in a seeded random sequence, with an Elo update after each decision.

    Parameters
    ----------
    k : float, default 16.0
        The Elo step K — how far one fully unexpected result moves a rating.
    permutations : int, default 1
        1 plays the decisions once in the seeded order (the poster's online update);
        more averages online Elo over that many seeded orders, removing the dependence on order.
    order : str, default "given"
        Which answer the judge sees first (:mod:`rankkit.matches`): ``given`` (default; each
        pair is drawn in a seeded random orientation), ``random``, or ``both`` — ask the judge for
        both orders of each pair and combine them. A panel judge already asks every member both
        orders, so ``both`` is for single judges.
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
        """Decide every pair once, in a seeded random sequence, with an Elo update after each decision.

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
        """Every pair, in each order shown (:func:`~rankkit.strategies.elo.all_pairs_judgments`).

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int
            The number of judgments.
        """
        return all_pairs_judgments(n_candidates, self.order)
