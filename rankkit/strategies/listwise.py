"""``listwise``: RankGPT's sliding window (Sun et al. 2023), one k-way ranking per window.

The candidates start in a seeded random order. A window of ``window`` answers slides from the
bottom of the list to the top, ``step`` places at a time; the judge orders each window best first
(listwise prompting) and the window's places are refilled in that order, so a strong answer found
low in the list is carried up by the windows above it. A pass costs

    1 + ⌈(N − window) / step⌉ judgments     (1 when N ≤ window; × passes; × the presentations of ``order``)

and ``passes`` repeats it over the list as the last pass left it. Score = N − position in the
final list.
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, ClassVar

from rankkit.choices import judgments_per_group
from rankkit.specs import SpecError
from rankkit.strategies._kway import KwayStrategy
from rankkit.strategies.base import CandidateExtras, Ranking, register
from rankkit.tasks import Task

if TYPE_CHECKING:
    from rankkit.matches import MatchSource


def window_starts(n: int, window: int, step: int) -> list[int]:
    """Where each window of one pass starts, bottom first (the last one at 0).

    Parameters
    ----------
    n : int
        The number of answers.
    window : int
        Answers per window.
    step : int
        How far the window moves.

    Returns
    -------
    list[int]
        The start of each window, bottom first, the last 0.

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
    window : int, default 4
        Answers per judgment (2 to 8).
    step : int, default 2
        How far the window moves (1 to window − 1).
    passes : int, default 1
        How many bottom-up passes.
    order : str, default "given"
        How each window is shown: ``given`` (default: in the list's current order, as RankGPT),
        ``random``, ``both`` (as shown and reversed) or ``permute`` (rankings of every cyclic shift
        combined by Borda count).
    shifts : int, default 0
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
        """Rank the task's candidates with sliding listwise windows, from the bottom up.

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
        """With one pass, exactly its windows' presentations (no two windows of a pass hold the
        same answers, so none is free); with more, a window a pass left unchanged may repeat.

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int or None
            The number of judgments, or None when it is not fixed.
        """
        return self.max_judgments(n_candidates) if self.passes == 1 else None

    def max_judgments(self, n_candidates: int) -> int:
        """The windows of every pass, each its presentations (a window the list repeats is free,
        so this is an upper bound).

        Parameters
        ----------
        n_candidates : int
            The number of candidates of the task.

        Returns
        -------
        int
            The number of judgments.
        """
        if n_candidates < 2:
            return 0
        windows = len(window_starts(n_candidates, self.window, self.step))
        size = min(self.window, n_candidates)
        return self.passes * windows * judgments_per_group(self.order, size, self.shifts)
