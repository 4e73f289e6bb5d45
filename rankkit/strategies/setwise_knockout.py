"""``setwise_knockout``: a knockout tournament in groups of k, one k-way choice per group."""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.tasks import Task
from rankkit.strategies._kway import KwayStrategy, mean_scores
from rankkit.strategies.base import CandidateExtras, Ranking, register
from rankkit.strategies.choices import judgments_per_group

if TYPE_CHECKING:
    from rankkit.strategies.matches import MatchSource


def round_groups(ids: list[str], k: int) -> tuple[list[list[str]], list[str]]:
    """One round's groups and byes: full groups of k from ``ids`` (bracket order), the rest advance
    unplayed; fewer than k answers are one group.

    Examples
    --------
    >>> round_groups(list("abcdefghij"), 4)
    ([['a', 'b', 'c', 'd'], ['e', 'f', 'g', 'h']], ['i', 'j'])
    >>> round_groups(list("abc"), 4)
    ([['a', 'b', 'c']], [])
    """
    if len(ids) < k:
        return ([list(ids)] if len(ids) >= 2 else []), (list(ids) if len(ids) < 2 else [])
    full = len(ids) // k * k
    return [ids[i : i + k] for i in range(0, full, k)], ids[full:]


def bracket_group_sizes(n: int, k: int) -> list[int]:
    """The size of every group a tournament of ``n`` answers plays, round after round, when every group is decided.

    Examples
    --------
    >>> bracket_group_sizes(10, 4)
    [4, 4, 4]
    >>> bracket_group_sizes(5, 4)
    [4, 2]
    """
    sizes, remaining = [], n
    while remaining >= 2:
        groups, byes = round_groups(["_"] * remaining, k)
        sizes += [len(group) for group in groups]
        remaining = len(groups) + len(byes)
    return sizes


@register("setwise_knockout")
@dataclass(frozen=True)
class SetwiseKnockout(KwayStrategy):
    """Knockout in groups of k: the judge's choice advances (``docs/strategies.md``).

    Parameters
    ----------
    k
        Answers per group (2 to 8).
    order
        How each group is shown (:mod:`rankkit.strategies.choices`): ``given`` (groups come from a shuffle),
        ``random``, ``both`` (2× the judgments) or ``permute`` (every cyclic shift; k× the judgments).
    shifts
        With ``permute``, how many cyclic shifts (0: all k).
    """

    k: int = 4
    order: str = "given"
    shifts: int = 0

    description = "knockout in groups of k, the judge's choice advances (ceil((N-1)/(k-1)) judgments)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"shifts": (0, 1000)}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_size("k", self.k)

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Play a knockout in groups of k on the task's candidates: the judge's choice advances."""
        remaining = task.candidate_ids
        received: dict[str, list[float]] = {cid: [] for cid in remaining}
        eliminated: dict[str, int | None] = dict.fromkeys(remaining)
        byes = dict.fromkeys(remaining, 0)
        round_ = 0
        while len(remaining) >= 2:
            round_ += 1
            rng.shuffle(remaining)
            groups, passed = round_groups(remaining, self.k)
            matches = source.choose_many(groups, order=self.order, rng=rng, round=round_, shifts=self.shifts)
            advancing = list(passed)
            for cid in passed:
                byes[cid] += 1
            decided = False
            for match in matches:
                if match.winner is None:  # undecided: nobody is eliminated
                    advancing += match.members
                    continue
                decided = True
                for cid in match.members:
                    received[cid].append(match.scores[cid])
                    if cid != match.winner:
                        eliminated[cid] = round_
                advancing.append(match.winner)
            remaining = advancing
            if not decided:
                break
        champion = remaining[0] if len(remaining) == 1 else None
        scores = mean_scores(received, task.candidate_ids)
        extras = {
            cid: CandidateExtras(
                eliminated_round=eliminated[cid],
                played=len(received[cid]),
                grades=tuple(received[cid]),
                byes=byes[cid],
                rounds=round_,
            )
            for cid in task.candidate_ids
        }
        return Ranking(scores=scores, champion=champion, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int:
        """⌈(N − 1)/(k − 1)⌉ groups, each its presentations (:func:`~rankkit.strategies.choices.judgments_per_group`)."""
        return sum(
            judgments_per_group(self.order, size, self.shifts) for size in bracket_group_sizes(n_candidates, self.k)
        )
