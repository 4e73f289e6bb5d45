"""``swiss``: a Swiss-system tournament under a fixed comparison budget.

A knockout stops learning about an answer the moment it loses; all-pairs comparison spends most
of its budget on pairs whose result is obvious. A Swiss system sits between: nobody is eliminated,
and every round pairs answers whose results so far are equal or close, so each match is between
answers the tournament cannot yet tell apart — the matches that carry the most information about
the order (Arena-lite's limitations section, seed 003, asks for such adaptive match-making).

**Rounds.** Each round pairs the candidates by a minimum-cost perfect matching (networkx's
blossom algorithm, ``min_weight_matching``) over the pairs that have *not* met yet, where a pair
costs the square of the gap between the two running scores (a win is 1 point, a tie ½). So equal
scores meet first, never the same pair twice, and as many candidates as possible play every round
(with an odd N, or late in a tournament where few fresh pairs remain, somebody sits out). Among
equally good pairings a seeded random one is taken. A round's duels go to the judge in one batch.
When the budget runs out inside a round, the round's closest pairs are played.

**Budget.** ``budget`` comparisons per candidate (``floor(budget · N)`` per task) or exactly
``comparisons`` per task, counted as judgments: a debiased duel costs 2. A Swiss round is about
N/2 duels, so ``budget=3`` is 6 rounds, or 3 debiased. The tournament also ends when every pair
has met.

**Aggregation.** ``bt`` (default): Bradley–Terry ratings (Elo scale) of all the duels played, from
:func:`rankkit.ratings.bradley_terry` — it weighs a win by whom it was against. ``points``: the
Swiss standings — the share of points a candidate scored in its duels (byes and partial rounds
leave counts uneven, hence a share), ties broken by the opponents' mean share (Buchholz-like).
"""

from __future__ import annotations

import math
import random
import statistics
from dataclasses import dataclass
from itertools import combinations
from typing import Mapping

import networkx as nx

from rankkit.matches import MatchSource
from rankkit.ratings import bradley_terry, win_rates
from rankkit.specs import SpecError
from rankkit.strategies._budget import (
    check_budget,
    comparison_budget,
    duel_records,
    duels_in_budget,
    presented,
)
from rankkit.strategies.base import Ranking, Strategy, register
from rankkit.tasks import Task

AGGREGATES = ("bt", "points")


def swiss_pairing(candidates: list[str], points: Mapping[str, float], met: set[frozenset[str]],
                  rng: random.Random) -> list[tuple[str, str]]:
    """One Swiss round: pairs of candidates with equal or close points that have not met yet.

    Returns a maximum-cardinality matching of the not-yet-met pairs with the least total squared
    points gap, ordered from the closest pair to the widest. Ties between equally good matchings
    are broken by a seeded random weight on each pair, kept small enough that it never outweighs
    a real gap.

    candidates: the candidate ids.
    points: running points (win 1, tie 0.5), so every gap is a multiple of 0.5.
    met: the pairs that have already played (as frozensets).
    rng: draws the tie-breaking weights.
    """
    n = len(candidates)
    # Integer weights keep the blossom algorithm exact. A unit of squared gap (in half points)
    # weighs `unit`; the jitters of a whole matching (at most n/2 pairs) sum to less than one unit.
    unit = 2 * n * n
    jitter = unit // n
    graph = nx.Graph()
    for a, b in combinations(candidates, 2):
        if frozenset((a, b)) in met:
            continue
        gap = round(2 * (points[a] - points[b]))
        graph.add_edge(a, b, weight=gap * gap * unit + rng.randrange(jitter))
    matching = nx.min_weight_matching(graph)
    pairs = sorted(matching, key=lambda pair: (graph.edges[pair]["weight"], sorted(pair)))
    return [tuple(sorted(pair, key=candidates.index)) for pair in pairs]


@register("swiss")
@dataclass(frozen=True)
class SwissStrategy(Strategy):
    """Swiss-system tournament: each round pairs equal or close running scores, never the same
    pair twice, until the budget is spent; Bradley–Terry (or points) at the end.

    budget: comparisons per candidate; a task of N candidates gets ``floor(budget · N)``
        comparisons (judgments; a debiased duel costs 2). ``budget=3`` is about 6 rounds.
    comparisons: exactly this many comparisons per task instead (overrides ``budget``).
    debias: play every duel in both orders and average the grades (thesis §3.2.1); each duel
        then costs 2 comparisons. Otherwise each duel is shown in a seeded random order.
    aggregate: ``bt`` — Bradley–Terry ratings on the Elo scale (default); ``points`` — the share
        of points scored, ties broken by the opponents' mean share.
    """

    budget: float = 3.0
    comparisons: int | None = None
    debias: bool = False
    aggregate: str = "bt"

    description = "Swiss-system tournament: rounds pair close running scores, budget x N comparisons"

    def __post_init__(self) -> None:
        check_budget("swiss", self.budget, self.comparisons)
        if self.aggregate not in AGGREGATES:
            raise SpecError(f"strategy swiss: aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        ids = task.candidate_ids
        duels_left = duels_in_budget(len(ids), comparison_budget(len(ids), self.budget, self.comparisons),
                                     self.debias)
        points = dict.fromkeys(ids, 0.0)
        opponents: dict[str, list[str]] = {cid: [] for cid in ids}
        met: set[frozenset[str]] = set()
        records = []
        round_number = 0
        while duels_left > 0:
            pairs = swiss_pairing(ids, points, met, rng)[:duels_left]
            if not pairs:  # every pair has met
                break
            round_number += 1
            shown = [presented(a, b, rng) for a, b in pairs]
            duels = source.duel_many(shown, debias=self.debias, round=round_number)
            for duel in duels:
                points[duel.a] += duel.outcome
                points[duel.b] += 1.0 - duel.outcome
                opponents[duel.a].append(duel.b)
                opponents[duel.b].append(duel.a)
                met.add(frozenset((duel.a, duel.b)))
            records += duel_records(duels)
            duels_left -= len(duels)

        share = win_rates(records, items=ids)
        share = {cid: 0.5 if math.isnan(value) else value for cid, value in share.items()}  # NaN: never played
        ranking = None
        if self.aggregate == "bt":
            scores = bradley_terry(records, items=ids)
        else:
            scores = share
            schedule = {cid: statistics.fmean(share[o] for o in opponents[cid]) if opponents[cid] else 0.5
                        for cid in ids}
            ranking = sorted(ids, key=lambda cid: (-share[cid], -schedule[cid]))
        extras = {cid: {"played": len(opponents[cid]), "points": points[cid], "opponents": list(opponents[cid]),
                        "rounds": round_number} for cid in ids}
        return Ranking(scores=scores, ranking=ranking, extras=extras)
