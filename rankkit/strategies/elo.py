"""``elo``: every pair judged, rated by online Elo averaged over shuffled orders of play.

The all-pairs assessment of Chatbot Arena's first leaderboard (Zheng et al. 2023) within one
task: N(N−1)/2 pairs, by default in both orders. :func:`play_all_pairs` and
:func:`comparison_outcomes` are shared with ``bt``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.stats.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome, elo_over_permutations
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; listing strategies should not
    from rankkit.strategies.matches import Comparison, Match, MatchSource


def comparison_outcomes(comparisons: Sequence[Comparison]) -> list[Outcome]:
    """One rating outcome (first, second, outcome for first) per decided judgment, in order.

    Read as :func:`rankkit.strategies.matches.make_match` reads it: the higher grade wins, equal grades go to
    the verdict, else a tie. A verdict that flips with the order yields one win each; a failed
    comparison yields nothing (see "Undecided comparisons" in :mod:`rankkit.strategies.matches`).
    """
    return [outcome for c in comparisons if (outcome := comparison_outcome(c)) is not None]


def comparison_outcome(comparison: Comparison, match: Match | None = None) -> Outcome | None:
    """One comparison's outcome, or None when it decided nothing: a failed comparison counts only when
    ``match`` (None: unknown) was settled by the answers' own grades.
    """
    from rankkit.strategies.matches import decided, make_match

    first, second = comparison.first, comparison.second
    if decided(comparison):
        return first, second, make_match(first, second, [comparison]).outcome
    if match is not None and match.settled_by == "grades":
        return first, second, match.outcome if first == match.a else 1.0 - match.outcome
    return None


def play_all_pairs(task: Task, source: MatchSource, order: str, rng: random.Random) -> list[Outcome]:
    """Judge every pair (a before b in data order, shown in ``order``) in one batch, reusing the match
    graph and cache; one outcome per decided judgment (first judgments, then reverses).
    """
    matches = source.play_many(list(combinations(task.candidate_ids, 2)), round=1, order=order, rng=rng)
    # In the order they were asked: every pair's first judgment, then (order=both, or a failed
    # one asked again reversed) every reverse.
    asked = [(match, match.comparisons[0]) for match in matches] + [
        (match, match.comparisons[1]) for match in matches if len(match.comparisons) == 2
    ]
    return [outcome for match, c in asked if (outcome := comparison_outcome(c, match)) is not None]


def all_pairs_judgments(n_candidates: int, order: str) -> int:
    """N(N − 1)/2 times the judgments per match (``both`` doubles it)."""
    return n_candidates * (n_candidates - 1) // 2 * judgments_per_match(order)


def points_and_games(outcomes: Sequence[Outcome], candidate_ids: Sequence[str]) -> dict[str, CandidateExtras]:
    """Per candidate, extras with ``points`` won (a tie is half) and ``played`` (one per outcome; 0 without outcomes)."""
    points = dict.fromkeys(candidate_ids, 0.0)
    played = dict.fromkeys(candidate_ids, 0)
    for a, b, outcome in outcomes:
        points[a] += outcome
        points[b] += 1.0 - outcome
        played[a] += 1
        played[b] += 1
    return {cid: CandidateExtras(points=points[cid], played=played[cid]) for cid in candidate_ids}


@register("elo")
@dataclass(frozen=True)
class Elo(Strategy):
    """All pairs judged, online Elo averaged over shuffled orders of play; score = Elo rating.

    Parameters
    ----------
    order
        ``both`` (every pair in both orders, N(N−1) judgments), ``given`` (once, data order) or
        ``random`` (once, seeded order).
    k
        The Elo update step (points moved by a fully unexpected result).
    permutations
        How many seeded orders of play the ratings are averaged over.
    initial
        The start rating.
    scale
        ``scale`` rating points are ``base``:1 odds.
    base
        The odds of a ``scale``-point gap.
    """

    order: str = "both"
    k: float = 16.0
    permutations: int = 100
    initial: float = ELO_INITIAL
    scale: float = ELO_SCALE
    base: float = ELO_BASE

    description = "all pairs judged, online Elo averaged over orders of play (N(N-1)/2 matches; x2 with order=both)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {
        "k": (0, 1000),
        "permutations": (1, 10_000),
        "initial": (-1e6, 1e6),
        "scale": (0, 1e5),
        "base": (1, 1000),
    }
    single_order: ClassVar[str] = "given"
    distinct_requests: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.permutations < 1:
            raise SpecError(f"strategy elo: permutations must be >= 1, got {self.permutations}")
        if self.k <= 0 or self.scale <= 0 or self.base <= 1:
            raise SpecError("strategy elo: k and scale must be > 0 and base > 1")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Judge every pair and rate the candidates by online Elo over shuffled orders of play."""
        outcomes = play_all_pairs(task, source, self.order, rng)
        ratings = elo_over_permutations(
            outcomes,
            task.candidate_ids,
            permutations=self.permutations,
            seed=rng,
            k=self.k,
            initial=self.initial,
            scale=self.scale,
            base=self.base,
        )
        return Ranking(scores=ratings, extras=points_and_games(outcomes, task.candidate_ids))

    def exact_judgments(self, n_candidates: int) -> int:
        """Every pair, in each order shown (:func:`all_pairs_judgments`)."""
        return all_pairs_judgments(n_candidates, self.order)
