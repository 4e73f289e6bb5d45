"""``listwise``: RankGPT's sliding window (Sun et al. 2023), one k-way ranking per window.

From a seeded random order, a window of ``window`` answers slides bottom to top, ``step`` places
at a time; the judge orders each window and its places are refilled in that order, so a strong
answer found low is carried up. A pass costs 1 + ⌈(N − window) / step⌉ judgments (1 when
N ≤ window), times ``passes`` and the presentations of ``order``. Score = N − final position.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.strategies._kway import KwayStrategy
from rankkit.strategies.base import CandidateExtras, Ranking, register
from rankkit.strategies.choices import judgments_per_group

if TYPE_CHECKING:
    from rankkit.strategies.matches import MatchSource


def window_starts(n: int, window: int, step: int) -> list[int]:
    """Where each window of one pass starts, bottom first (the last at 0).

    Examples
    --------
    >>> window_starts(10, 4, 2)
    [6, 4, 2, 0]
    >>> window_starts(7, 4, 2), window_starts(3, 4, 2)
    ([3, 1, 0], [0])
    """
    starts, start = [], max(0, n - window)
    while True:
        starts.append(start)
        if start == 0:
            return starts
        start = max(0, start - step)


@register("listwise")
@dataclass(frozen=True)
class Listwise(KwayStrategy):
    """Sliding-window listwise ranking from the bottom up (module docstring).

    Parameters
    ----------
    window
        Answers per judgment (2 to 8).
    step
        How far the window moves (1 to window − 1).
    passes
        How many bottom-up passes.
    order
        How each window is shown: ``given`` (the list's current order, as RankGPT), ``random``,
        ``both`` (as shown and reversed) or ``permute`` (every cyclic shift, combined by Borda count).
    shifts
        With ``permute``, how many cyclic shifts (0: all).
    """

    window: int = 4
    step: int = 2
    passes: int = 1
    order: str = "given"
    shifts: int = 0

    description = "RankGPT sliding window from the bottom up, one k-way ranking per window"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"passes": (1, 1000), "shifts": (0, 1000)}

    def __post_init__(self) -> None:
        super().__post_init__()
        self.check_size("window", self.window)
        if not 1 <= self.step < self.window:
            raise SpecError(f"strategy {self.name}: step must be 1 to window - 1 ({self.window - 1}), got {self.step}")
        if self.passes < 1:
            raise SpecError(f"strategy {self.name}: passes must be >= 1, got {self.passes}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Rank the task's candidates with sliding listwise windows, from the bottom up."""
        ranking = task.candidate_ids
        rng.shuffle(ranking)
        n = len(ranking)
        played = dict.fromkeys(ranking, 0)
        for pass_ in range(1, self.passes + 1):
            for start in window_starts(n, self.window, self.step):
                window = ranking[start : start + self.window]
                (match,) = source.rank_many([window], order=self.order, rng=rng, round=pass_, shifts=self.shifts)
                for cid in window:
                    played[cid] += 1
                if match.winner is not None:  # an undecided window keeps its order
                    ranking[start : start + self.window] = match.ranking
        scores = {cid: float(n - position) for position, cid in enumerate(ranking, start=1)}
        extras = {
            cid: CandidateExtras(position=position, played=played[cid]) for position, cid in enumerate(ranking, start=1)
        }
        return Ranking(
            scores={cid: scores[cid] for cid in task.candidate_ids},
            ranking=ranking,
            extras={cid: extras[cid] for cid in task.candidate_ids},
        )

    def exact_judgments(self, n_candidates: int) -> int | None:
        """With one pass, its windows' presentations; None with more (an unchanged window may repeat, free)."""
        return self.max_judgments(n_candidates) if self.passes == 1 else None

    def max_judgments(self, n_candidates: int) -> int:
        """The windows of every pass, each its presentations (an upper bound: a repeated window is free)."""
        if n_candidates < 2:
            return 0
        windows = len(window_starts(n_candidates, self.window, self.step))
        size = min(self.window, n_candidates)
        return self.passes * windows * judgments_per_group(self.order, size, self.shifts)
