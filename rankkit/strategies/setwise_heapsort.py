"""``setwise_heapsort``: heap sort on a k-ary heap, one k-way choice per sift (Zhuang et al., SIGIR 2024).

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.strategies._kway import KwayStrategy
from rankkit.strategies.base import Ranking, register
from rankkit.strategies.choices import judgments_per_group
from rankkit.strategies.heapsort import ranking_from_pops

if TYPE_CHECKING:
    from rankkit.strategies.matches import MatchSource


class SetwiseHeap:
    """A max-heap of candidate ids (``ids`` in heap order) with ``branching`` (k − 1) children per node,
    ordered by the judge's choices from ``source``; ``order``, ``shifts`` and ``rng`` say how groups
    are shown (:meth:`MatchSource.choose_many`).
    """

    def __init__(
        self, ids: list[str], branching: int, source: MatchSource, order: str, shifts: int, rng: random.Random
    ):
        self.items = list(ids)
        self.branching = branching
        self.source = source
        self.order = order
        self.shifts = shifts
        self.rng = rng
        self._best: dict[frozenset[str], str | None] = {}
        self.played: dict[str, int] = dict.fromkeys(ids, 0)

    def children(self, node: int) -> range:
        """The positions of ``node``'s children (empty for a leaf)."""
        first = self.branching * node + 1
        return range(first, min(first + self.branching, len(self.items)))

    def best_of(self, group: list[str]) -> str | None:
        """The judge's choice among ``group`` (a node, then its children), asked once per set; None: undecided."""
        members = frozenset(group)
        if members not in self._best:
            (match,) = self.source.choose_many([group], order=self.order, rng=self.rng, shifts=self.shifts)
            self._best[members] = match.winner
            for cid in group:
                self.played[cid] += 1
        return self._best[members]

    def sift_down(self, node: int) -> None:
        """Move the item at ``node`` down while the judge chooses one of its children over it."""
        while True:
            kids = list(self.children(node))
            if not kids:
                return
            group = [self.items[node]] + [self.items[child] for child in kids]
            best = self.best_of(group)
            if best is None or best == self.items[node]:
                return
            child = kids[group.index(best) - 1]
            self.items[node], self.items[child] = self.items[child], self.items[node]
            node = child

    def heapify(self) -> None:
        for node in reversed(range((len(self.items) - 2) // self.branching + 1 if len(self.items) > 1 else 0)):
            self.sift_down(node)

    def pop(self) -> str:
        """Take the top (the best of those left) off and restore the heap."""
        top = self.items[0]
        last = self.items.pop()
        if self.items:
            self.items[0] = last
            self.sift_down(0)
        return top


def heap_height(n: int, branching: int) -> int:
    """The depth of the last node of a heap of ``n`` items (0 for one) with ``branching`` children per node.

    Examples
    --------
    >>> heap_height(13, 3), heap_height(1, 3), heap_height(5, 1)
    (2, 0, 4)
    """
    depth, node = 0, n - 1
    while node > 0:
        node = (node - 1) // branching
        depth += 1
    return depth


@register("setwise_heapsort")
@dataclass(frozen=True)
class SetwiseHeapsort(KwayStrategy):
    """Heap sort on a heap of branching k − 1, the judge choosing the best of a node and its children.

    Parameters
    ----------
    k
        Answers per judgment, a node and its k − 1 children (2 to 8).
    top_k
        Stop once the best ``top_k`` are out (0: sort everything).
    order
        How each group is shown: ``random`` (seeded shuffle, so the node is not always first),
        ``given`` (node first), ``both`` (as drawn and reversed) or ``permute``.
    shifts
        With ``permute``, how many cyclic shifts (0: all).
    """

    k: int = 4
    top_k: int = 0
    order: str = "random"
    shifts: int = 0

    description = "heap sort on a (k-1)-ary heap, one k-way choice per sift (Zhuang et al. 2024)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"top_k": (0, 10_000_000), "shifts": (0, 1000)}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_size("k", self.k)
        if self.top_k < 0:
            raise SpecError(f"strategy {self.name}: top_k must be >= 0 (0 sorts everything), got {self.top_k}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Heap-sort the task's candidates, the judge choosing the best of a node and its children."""
        ids = task.candidate_ids
        rng.shuffle(ids)
        n = len(ids)
        pops = n if not self.top_k else min(self.top_k, n)
        heap = SetwiseHeap(ids, self.k - 1, source, self.order, self.shifts, rng)
        heap.heapify()
        popped = [heap.pop() for _ in range(pops)]
        return ranking_from_pops(task.candidate_ids, popped, list(heap.items), heap.played)

    def max_judgments(self, n_candidates: int) -> int:
        """At most one group per heap level per sift (building, then one sift per pop), each group its presentations."""
        n = n_candidates
        if n < 2:
            return 0
        branching = self.k - 1
        height = heap_height(n, branching)
        inner = (n - 2) // branching + 1
        pops = n if not self.top_k else min(self.top_k, n)
        return (inner + pops) * height * judgments_per_group(self.order, self.k, self.shifts)
