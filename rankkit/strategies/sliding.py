"""``sliding``: K bubble passes with a window of two (PRP-Sliding-K, Qin et al. 2024).

More in ``docs/strategies.md``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.strategies.base import CandidateExtras, Ranking, Strategy, register
from rankkit.strategies.heapsort import JudgedComparator
from rankkit.strategies.order import judgments_per_match

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


@register("sliding")
@dataclass(frozen=True)
class SlidingWindow(Strategy):
    """K bottom-up bubble passes with a window of two; score derived from rank.

    Parameters
    ----------
    passes
        The number of passes K (top K settled), capped at N − 1 (a full sort); 10 is Qin et al.'s
        PRP-Sliding-10.
    order
        ``both`` (every comparison in both orders, decided on averaged grades), ``random`` (one
        judgment, reusing one the graph holds) or ``given`` (one, as the window compares).
    """

    passes: int = 10
    order: str = "both"

    description = "K bubble passes from the bottom, window 2 (about K*N comparisons)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"passes": (1, 10_000)}
    single_order: ClassVar[str] = "random"

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.passes < 1:
            raise SpecError(f"strategy sliding: passes must be >= 1, got {self.passes}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Run K bottom-up bubble passes with a window of two; score derived from rank."""
        order = task.candidate_ids
        rng.shuffle(order)
        n = len(order)
        comparator = JudgedComparator(source, self.order, rng)
        passes = min(self.passes, n - 1)
        for settled in range(passes):
            for lower in range(n - 1, settled, -1):
                if comparator.better(order[lower], order[lower - 1]):
                    order[lower - 1], order[lower] = order[lower], order[lower - 1]
        scores = {cid: float(n - position) for position, cid in enumerate(order, start=1)}
        position = {cid: k for k, cid in enumerate(order)}  # a dict: list.index made this O(N²)
        extras = {
            cid: CandidateExtras(
                position=position[cid] + 1,
                settled=position[cid] < passes or passes == n - 1,
                played=comparator.played.get(cid, 0),
            )
            for cid in task.candidate_ids
        }
        return Ranking(
            scores={cid: scores[cid] for cid in task.candidate_ids}, ranking=order, champion=order[0], extras=extras
        )

    def max_judgments(self, n_candidates: int) -> int:
        """Pass k compares N − 1 − k neighbours; a pair met in an earlier pass is free."""
        n = n_candidates
        match_count = min(n * (n - 1) // 2, sum(n - 1 - k for k in range(min(self.passes, n - 1))))
        return match_count * judgments_per_match(self.order)
