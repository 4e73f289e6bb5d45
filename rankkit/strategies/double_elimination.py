"""``double_elimination``: a double-elimination tournament — an answer is out after its second loss.

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.stats.ratings import bradley_terry
from rankkit.strategies._graded import corrected_grades, mean_grades
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.elo import comparison_outcomes
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import Match, MatchSource

AGGREGATES = ("corrected", "grades", "bt")


def bracket_pairs(
    alive: list[str], met: set[frozenset[str]], rng: random.Random
) -> tuple[list[tuple[str, str]], list[str]]:
    """One bracket's round: the ``alive`` answers in a seeded random order, each paired with the next
    it has not met (in either bracket; the next at all when it has met everyone left). Returns the
    pairs and the answer left without an opponent (a list of at most one).
    """
    order = list(alive)
    rng.shuffle(order)
    pairs, idle = [], []
    while order:
        top = order.pop(0)
        if not order:
            idle.append(top)
            break
        partner = next((cid for cid in order if frozenset((top, cid)) not in met), order[0])
        order.remove(partner)
        pairs.append((top, partner))
    return pairs, idle


@register("double_elimination")
@dataclass(frozen=True)
class DoubleElimination(Strategy):
    """Double-elimination tournament: out after two losses, a losers' bracket, a grand final.

    A tie is decided by a seeded coin flip; scores count each distinct judgment once.

    Parameters
    ----------
    order
        ``random`` (a seeded random order, a rematch in the order not shown before), ``both`` (every
        match in both orders; twice the cost) or ``given`` (as the bracket pairs it).
    aggregate
        ``corrected`` (grade levels corrected for the first-slot effect), ``grades`` (mean grade
        received) or ``bt`` (Bradley–Terry ratings of the verdicts).
    """

    order: str = "random"
    aggregate: str = "corrected"

    description = "double-elimination tournament: out after two losses (2N-2 comparisons; x2 with order=both)"

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.aggregate not in AGGREGATES:
            raise SpecError(
                f"strategy double_elimination: aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}"
            )

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Play a double-elimination tournament on the task's candidates."""
        ids = task.candidate_ids
        winners, losers = list(ids), []
        losses = dict.fromkeys(ids, 0)
        eliminated: dict[str, int | None] = {}
        met: set[frozenset[str]] = set()  # pairs that have played, in either bracket
        matches: list[Match] = []
        round_number = 0

        def play(pairs: list[tuple[str, str]]) -> list[tuple[str, str]]:
            """Judge the round's pairs in one batch; returns (winner, loser) per match."""
            nonlocal round_number
            round_number += 1
            played = source.play_many(pairs, round=round_number, order=self.order, rng=rng)
            results = []
            for match in played:
                met.add(frozenset((match.a, match.b)))
                if match.outcome is None:  # undecided: the answer shown first goes on (rankkit.strategies.matches)
                    outcome = 1.0
                else:
                    outcome = match.outcome if match.outcome != 0.5 else float(rng.random() < 0.5)
                results.append((match.a, match.b) if outcome == 1.0 else (match.b, match.a))
            matches.extend(played)
            return results

        while len(winners) > 1 or len(losers) > 1:
            upper, upper_idle = bracket_pairs(winners, met, rng) if len(winners) > 1 else ([], winners)
            lower, lower_idle = bracket_pairs(losers, met, rng) if len(losers) > 1 else ([], losers)
            results = play(upper + lower)
            upper_results, lower_results = results[: len(upper)], results[len(upper) :]
            winners = [w for w, _ in upper_results] + list(upper_idle)
            dropped = [loser for _, loser in upper_results]
            losers = [w for w, _ in lower_results] + list(lower_idle)
            for _, loser in lower_results:
                eliminated[loser] = round_number
            for _, loser in upper_results + lower_results:
                losses[loser] += 1
            losers += dropped  # they play in the losers' bracket from the next round on
        champion = winners[0]
        if losers:  # the grand final, and a bracket reset if the losers' bracket survivor wins it
            challenger = losers[0]
            ((winner, loser),) = play([(champion, challenger)])
            losses[loser] += 1
            if winner == challenger:
                ((winner, loser),) = play([(champion, challenger)])
                losses[loser] += 1
            champion = winner
            eliminated[loser] = round_number
        eliminated[champion] = None

        extras = _extras(ids, matches, losses, eliminated, round_number)
        return Ranking(scores=self._aggregate(task, source), champion=champion, extras=extras)

    def _aggregate(self, task: Task, source: MatchSource) -> dict[str, float]:
        """The candidates' scores by ``aggregate``, from ``source.comparisons``: each distinct judgment
        once, whatever was replayed."""
        ids = task.candidate_ids
        if self.aggregate == "corrected":
            return corrected_grades(source.comparisons, ids, unplayed=sum(task.scale) / 2)
        if self.aggregate == "grades":
            return mean_grades(source.comparisons, ids, unplayed=sum(task.scale) / 2)
        return bradley_terry(comparison_outcomes(source.comparisons), items=ids)

    def max_judgments(self, n_candidates: int) -> int:
        """2N − 1 matches (with a bracket reset), one judgment per order shown, at most every ordered pair once."""
        n = n_candidates
        return min(n * (n - 1), (2 * n - 1) * judgments_per_match(self.order))


def _extras(
    ids: list[str], matches: list[Match], losses: dict[str, int], eliminated: dict[str, int | None], rounds: int
) -> dict[str, CandidateExtras]:
    """Every candidate's losses, the round it was knocked out in (None: the champion), its matches and the rounds played."""
    played = dict.fromkeys(ids, 0)
    for match in matches:
        played[match.a] += 1
        played[match.b] += 1
    return {
        cid: CandidateExtras(
            losses=losses[cid], eliminated_round=eliminated.get(cid), played=played[cid], rounds=rounds
        )
        for cid in ids
    }
