"""``setwise_groups``: random groups of k, several rounds, every answer scored by the mean of its slot scores.

Each round the answers are shuffled and cut into groups of ``k`` (the last one smaller; an answer
left alone sits the round out); the judge is shown each group (setwise prompting) and every answer
gets the group's score for it (:meth:`~rankkit.judgments.GroupChoice.slot_scores`: its grade
from the simulator, k·P(best) in logprob mode, k or 0 for a bare choice). After ``rounds`` rounds
an answer's score is the mean over the groups it was in. Nothing is eliminated: it is the k-way
counterpart of averaging grades over random pairs, for when each answer needs many judgments (a
noisy judge, a large N) and a grade-carrying k-way judgment gives k of them at once. Costs

    rounds · (number of groups of ⌈N/k⌉, less one when N mod k = 1)    (× the presentations of ``order``)

judgments. With ``order=permute`` every group is shown in every cyclic shift, so a slot bias adds
the same to every answer.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.choices import judgments_per_group
from rankkit.specs import SpecError
from rankkit.strategies._kway import KwayStrategy, mean_scores
from rankkit.strategies.base import CandidateExtras, Ranking, register
from rankkit.tasks import Task

if TYPE_CHECKING:
    from rankkit.matches import MatchSource


def group_sizes(n: int, k: int) -> list[int]:
    """The sizes of one round's judged groups: groups of k, the last smaller, a lone answer unjudged.

    >>> group_sizes(10, 4), group_sizes(9, 4), group_sizes(3, 4)
    ([4, 4, 2], [4, 4], [3])
    """
    return [size for size in (min(k, n - start) for start in range(0, n, k)) if size >= 2]


@register("setwise_groups")
@dataclass(frozen=True)
class SetwiseGroups(KwayStrategy):
    """Random groups of k for ``rounds`` rounds; score = mean slot score (module docstring).

    k: answers per group (2 to 8).
    rounds: how many times every answer is grouped (at least 1).
    order: ``given`` (default; groups come from a shuffle), ``random``, ``both`` or ``permute``.
    shifts: with ``permute``, how many cyclic shifts (0: all).
    """

    k: int = 8
    rounds: int = 3
    order: str = "given"
    shifts: int = 0

    description = "random groups of k for several rounds, score = mean slot score (no elimination)"

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_size("k", self.k)
        if self.rounds < 1:
            raise SpecError(f"strategy {self.name}: rounds must be >= 1, got {self.rounds}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        ids = task.candidate_ids
        received: dict[str, list[float]] = {cid: [] for cid in ids}
        for round_ in range(1, self.rounds + 1):
            rng.shuffle(ids)
            groups = [ids[start:start + self.k] for start in range(0, len(ids), self.k)]
            groups = [group for group in groups if len(group) >= 2]
            for match in source.choose_many(groups, order=self.order, rng=rng, round=round_, shifts=self.shifts):
                if match.winner is None:  # undecided: it tells nothing about its members
                    continue
                for cid in match.members:
                    received[cid].append(match.scores[cid])
        scores = mean_scores(received, task.candidate_ids)
        extras = {cid: CandidateExtras(played=len(received[cid]), grades=tuple(received[cid]))
                  for cid in task.candidate_ids}
        return Ranking(scores=scores, extras=extras)

    def max_judgments(self, n_candidates: int) -> int:
        """Every round's groups, each its presentations (a group shown again in the same order is free)."""
        return self.rounds * sum(judgments_per_group(self.order, size, self.shifts)
                                 for size in group_sizes(n_candidates, self.k))
