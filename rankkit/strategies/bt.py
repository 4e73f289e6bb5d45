"""``bt``: every pair judged, rated by a Bradley–Terry fit (choix) on the Elo scale.

The same outcomes as ``elo`` (so beside it each judgment is paid once), fitted by maximum
likelihood: the result does not depend on an order of play. A tie counts as half a win each way.
``bootstrap=B`` adds each candidate's 95% percentile interval as ``ci_low``/``ci_high``.
"""

from __future__ import annotations

import random
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, ClassVar

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.stats.intervals import bootstrap
from rankkit.stats.ratings import bradley_terry
from rankkit.strategies.base import Ranking, Strategy, register
from rankkit.strategies.elo import all_pairs_judgments, play_all_pairs, points_and_games

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; `rankkit strategies` should not
    from rankkit.strategies.matches import MatchSource


@register("bt")
@dataclass(frozen=True)
class BradleyTerry(Strategy):
    """All pairs judged, Bradley–Terry ratings (Elo scale); score = rating.

    Parameters
    ----------
    order
        ``both`` (every pair in both orders, each an outcome), ``given`` (once, data order) or
        ``random`` (once, seeded order).
    alpha
        choix's regularisation, keeping ratings finite when a candidate won or lost every match;
        None: ``0.2 / (N − 1)`` (:func:`rankkit.stats.ratings.default_alpha`).
    bootstrap
        Bootstrap resamples of the outcomes for 95% intervals (0: none).
    """

    order: str = "both"
    alpha: float | None = None
    bootstrap: int = 0

    description = "all pairs judged, Bradley-Terry fit on the Elo scale (N(N-1)/2 matches; x2 with order=both)"
    ranges: ClassVar[dict[str, tuple[float, float]]] = {"alpha": (0, 100), "bootstrap": (0, 10_000)}
    single_order: ClassVar[str] = "given"
    distinct_requests: ClassVar[bool] = True

    def __post_init__(self) -> None:
        super().__post_init__()  # checks order
        if self.alpha is not None and self.alpha <= 0:
            raise SpecError(f"strategy bt: alpha must be > 0, got {self.alpha}")
        if self.bootstrap < 0:
            raise SpecError(f"strategy bt: bootstrap must be >= 0, got {self.bootstrap}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        """Judge every pair and rate the candidates by Bradley–Terry."""
        outcomes = play_all_pairs(task, source, self.order, rng)
        ids = task.candidate_ids
        extras = points_and_games(outcomes, ids)
        if self.bootstrap:
            intervals = bootstrap(
                lambda sample: bradley_terry(sample, ids, alpha=self.alpha),
                outcomes,
                resamples=self.bootstrap,
                seed=rng.getrandbits(64),
            )
            ratings = {cid: intervals[cid].estimate for cid in ids}
            extras = {cid: replace(extras[cid], ci_low=intervals[cid].low, ci_high=intervals[cid].high) for cid in ids}
        else:
            ratings = bradley_terry(outcomes, ids, alpha=self.alpha)
        return Ranking(scores=ratings, extras=extras)

    def exact_judgments(self, n_candidates: int) -> int:
        """Every pair, in each order shown (:func:`~rankkit.strategies.elo.all_pairs_judgments`)."""
        return all_pairs_judgments(n_candidates, self.order)
