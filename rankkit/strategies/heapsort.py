"""``heapsort``: heap sort with the pairwise judge as the comparator (PRP-Heapsort, Qin et al. 2024).

Candidates in a seeded random order go into a binary max-heap and the best is popped ``top_k``
times: at most 2·N·log2(N) comparisons for a full sort, no pair asked twice. The i-th popped
scores N − i; the never-popped rest share (N − top_k − 1) / 2 and follow in heap order.
"""

from __future__ import annotations

import functools
import heapq
import math
import random
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


class JudgedComparator:
    """The judge as a sort comparator on one task: each unordered pair is asked at most once.

    A tie is broken by a seeded coin flip from ``rng``, once. ``order`` (:mod:`rankkit.strategies.matches`):
    ``both`` decides on grades averaged over both orders; ``random`` shows a seeded random order.
    """

    def __init__(self, source: MatchSource, order: str, rng: random.Random):
        self.source = source
        self.order = order
        self.rng = rng
        self._winner: dict[frozenset[str], str] = {}
        self.played: dict[str, int] = {}

    def _ask(self, a: str, b: str) -> str:
        match = self.source.play(a, b, order=self.order, rng=self.rng)
        if match.outcome is None:  # undecided: the answer shown first goes on (rankkit.strategies.matches)
            outcome = 1.0
        else:
            outcome = match.outcome if match.outcome != 0.5 else float(self.rng.random() < 0.5)
        for cid in (match.a, match.b):
            self.played[cid] = self.played.get(cid, 0) + 1
        return match.a if outcome == 1.0 else match.b

    def winner(self, a: str, b: str) -> str:
        """The judge's preferred candidate of ``a`` and ``b`` (asked once per pair; a tie by a seeded coin)."""
        pair = frozenset((a, b))
        if pair not in self._winner:
            self._winner[pair] = self._ask(a, b)
        return self._winner[pair]

    def better(self, a: str, b: str) -> bool:
        """Whether the judge prefers ``a`` to ``b`` (the sort's comparator)."""
        return self.winner(a, b) == a


def ranking_from_pops(
    candidate_ids: Sequence[str], popped: Sequence[str], rest: Sequence[str], played: Mapping[str, int]
) -> Ranking:
    """A sort's ranking from the order its answers were popped (``heapsort``, ``setwise_heapsort``).

    The i-th of N ``popped`` (best first) scores N − i and gets ``position`` i; ``rest`` (never
    popped) share (N − len(popped) − 1) / 2. ``played`` counts judgments per answer (missing: 0).

    >>> ranking = ranking_from_pops(["a", "b", "c", "d"], ["c", "a"], ["b", "d"], {"c": 2})
    >>> ranking.scores, ranking.champion, ranking.extras["a"].position
    ({'a': 2.0, 'b': 0.5, 'c': 3.0, 'd': 0.5}, 'c', 2)
    """
    n = len(candidate_ids)
    scores = {cid: float(n - position) for position, cid in enumerate(popped, start=1)}
    rest_score = (n - len(popped) - 1) / 2 if rest else 0.0
    scores.update(dict.fromkeys(rest, rest_score))
    positions = {cid: position for position, cid in enumerate(popped, start=1)}
    extras = {cid: CandidateExtras(position=positions.get(cid), played=played.get(cid, 0)) for cid in candidate_ids}
    return Ranking(
        scores={cid: scores[cid] for cid in candidate_ids},
        ranking=[*popped, *rest],
        champion=popped[0] if popped else None,
        extras=extras,
    )


@register("heapsort")
@dataclass(frozen=True)
class Heapsort(Strategy):
    """Heap sort with the judge as comparator; score derived from rank (see the module docstring).

    Parameters
    ----------
    top_k
        Stop once the best k are out (None or 0: sort everything).
    order
        ``both`` (every comparison in both orders, decided on averaged grades), ``random`` (one
        judgment, reusing one the graph holds) or ``given`` (one, as the heap compares).
    """

    top_k: int | None = None
    order: str = "both"

    description = "heap sort with the judge as comparator, top_k to stop early (<= 2 N log2 N comparisons)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"top_k": (0, 10_000_000)}
    single_order: ClassVar[str] = "random"

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.top_k is not None and self.top_k < 0:
            raise SpecError(f"strategy heapsort: top_k must be >= 0, got {self.top_k}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Heap-sort the task's candidates with the judge as comparator."""
        ids = task.candidate_ids
        rng.shuffle(ids)
        n = len(ids)
        popped_count = n if not self.top_k else min(self.top_k, n)
        comparator = JudgedComparator(source, self.order, rng)
        # heapq is a min-heap on "<": make "<" mean "the judge prefers", so the root is the best.
        key = functools.cmp_to_key(lambda a, b: -1 if comparator.better(a, b) else 1)
        heap = [key(cid) for cid in ids]
        heapq.heapify(heap)
        popped = [heapq.heappop(heap).obj for _ in range(popped_count)]
        return ranking_from_pops(task.candidate_ids, popped, [item.obj for item in heap], comparator.played)

    def max_judgments(self, n_candidates: int) -> int:
        """At most 2N comparisons to heapify plus 2·⌈log2 N⌉ per pop, and never more than all pairs."""
        n = n_candidates
        pops = n if not self.top_k else min(self.top_k, n)
        match_count = min(n * (n - 1) // 2, 2 * n + 2 * pops * math.ceil(math.log2(max(n, 2))))
        return match_count * judgments_per_match(self.order)
