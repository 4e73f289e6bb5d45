"""``elo``: every pair of candidates judged, rated by online Elo averaged over orders of play.

The all-pairs comparative assessment behind Chatbot Arena's first leaderboard (Zheng et al. 2023),
applied within one task: all N(N−1)/2 pairs are judged — in both orders by default (``order=both``),
so N(N−1) judgments — and each judgment is one Elo outcome. Because online Elo depends on the
order the outcomes are played in, the ratings are averaged over ``permutations`` seeded shuffles
of them (:func:`rankkit.ratings.elo_over_permutations`). A candidate's score is its rating.

The helpers :func:`play_all_pairs` and :func:`comparison_outcomes` are shared with ``bt``, which
fits the very same outcomes by Bradley–Terry instead.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING, ClassVar

from rankkit.order import judgments_per_match
from rankkit.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome, elo_over_permutations
from rankkit.specs import SpecError
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.tasks import Task

if TYPE_CHECKING:  # rankkit.matches loads networkx; listing strategies should not
    from rankkit.matches import Comparison, Match, MatchSource


def comparison_outcomes(comparisons: Sequence[Comparison]) -> list[Outcome]:
    """One rating outcome per judgment: (first, second, outcome for first).

    The outcome is read as everywhere in rankkit (:func:`rankkit.matches.make_match`): the higher
    grade wins, and on equal grades the judge's verdict decides, else it is a tie. With both
    orders judged, a pair whose verdict flips with the order (position bias) yields one win each,
    which the rating models treat like a draw. A failed comparison decided nothing and yields no
    outcome (see "Undecided comparisons" in :mod:`rankkit.matches`).

    Parameters
    ----------
    comparisons : Sequence[Comparison]
        The judgments, in order.

    Returns
    -------
    list[Outcome]
        One outcome per decided comparison, in order.
    """
    return [outcome for c in comparisons if (outcome := comparison_outcome(c)) is not None]


def comparison_outcome(comparison: Comparison, match: Match | None = None) -> Outcome | None:
    """One comparison's rating outcome ``(first, second, outcome for first)``, or None when it
    decided nothing: a failed comparison counts only when its match was settled by the two
    answers' own grades (then it carries the match's outcome; see "Undecided comparisons" in
    :mod:`rankkit.matches`).

    Parameters
    ----------
    comparison : Comparison
        The judgment.
    match : Match or None, optional
        The match it belongs to (None: unknown, so a failed comparison yields nothing).

    Returns
    -------
    Outcome or None
        The outcome, or None.
    """
    from rankkit.matches import decided, make_match

    first, second = comparison.first, comparison.second
    if decided(comparison):
        return first, second, make_match(first, second, [comparison]).outcome
    if match is not None and match.settled_by == "grades":
        return first, second, match.outcome if first == match.a else 1.0 - match.outcome
    return None


def play_all_pairs(task: Task, source: MatchSource, order: str, rng: random.Random) -> list[Outcome]:
    """Judge every pair of the task (a before b in data order, shown in ``order``) in ONE batch,
    so batching and concurrent judges stay busy, reusing whatever the shared match graph and the
    cache already hold.

    Parameters
    ----------
    task : Task
        The task.
    source : MatchSource
        Where the task's judgments come from.
    order : str
        How each pair is shown (:data:`~rankkit.order.ORDERS`).
    rng : random.Random
        The coins of the ``random`` order.

    Returns
    -------
    list[Outcome]
        One outcome per decided judgment, in the order asked (every pair's first judgment, then the
        reverses).
    """
    matches = source.play_many(list(combinations(task.candidate_ids, 2)), round=1, order=order, rng=rng)
    # In the order they were asked: every pair's first judgment, then (order=both, or a failed
    # one asked again reversed) every reverse.
    asked = [(match, match.comparisons[0]) for match in matches] + [
        (match, match.comparisons[1]) for match in matches if len(match.comparisons) == 2
    ]
    return [outcome for match, c in asked if (outcome := comparison_outcome(c, match)) is not None]


def all_pairs_judgments(n_candidates: int, order: str) -> int:
    """The judgments of an all-pairs strategy: every pair, once per order shown.

    Parameters
    ----------
    n_candidates : int
        The number of candidates.
    order : str
        The order of presentation (``both`` doubles the count).

    Returns
    -------
    int
        N(N − 1)/2 times the judgments per match.
    """
    return n_candidates * (n_candidates - 1) // 2 * judgments_per_match(order)


def points_and_games(outcomes: Sequence[Outcome], candidate_ids: Sequence[str]) -> dict[str, CandidateExtras]:
    """Per candidate: ``points`` won (a tie is half) and ``played`` (one per outcome), for ``extras``.

    Parameters
    ----------
    outcomes : Sequence[Outcome]
        The rating outcomes.
    candidate_ids : Sequence[str]
        Every candidate of the task (those without outcomes get 0 and 0).

    Returns
    -------
    dict[str, CandidateExtras]
        Candidate id -> extras with ``points`` and ``played``.
    """
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
    order : str, default "both"
        ``both`` (default) — judge every pair in both orders (N(N−1) judgments instead of
        N(N−1)/2), each order an outcome of its own; ``given`` — each pair once, in data order;
        ``random`` — once, in a seeded random order.
    k : float, default 16.0
        The Elo update step (points moved by a fully unexpected result).
    permutations : int, default 100
        How many seeded random orders of play the ratings are averaged over.
    initial, scale, base : float
        The Elo scale: start rating, and ``scale`` points = ``base``:1 odds.
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
        """Judge every pair and rate the candidates by online Elo over shuffled orders of play.

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
        """Every pair, in each order shown (:func:`all_pairs_judgments`).

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
