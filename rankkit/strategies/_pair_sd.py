"""The judge's pair-effect sd from finished tasks: what ``pair_sd=`` is given (``stopping=pair_effects``).

Within one task a persistent pair preference can hardly be told from a real difference, so the
sd ``s`` of :mod:`rankkit.strategies._pair_effects` is a property of the judge estimated over many
tasks (a pilot run; ``rankkit analyze --pair-effects``). Why: ``docs/stopping.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy loads when a posterior is computed, not on import
    from rankkit.strategies._bt_posterior import Evidence


#: The pair-effect sds (logit units) :func:`pair_sd_posterior` weighs, equally likely a priori.
ESTIMATE_GRID = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 4.0, 6.0)


@dataclass(frozen=True)
class PairSdPosterior:
    """The posterior of the judge's pair-effect sd from finished tasks (:func:`pair_sd_posterior`).

    Attributes
    ----------
    grid
        The sds weighed (logit units), ascending.
    posterior
        Each one's posterior probability (a flat prior over ``grid``).
    tasks, judgments
        The evidence it rests on.
    """

    grid: tuple[float, ...]
    posterior: tuple[float, ...]
    tasks: int
    judgments: int

    @property
    def best(self) -> float:
        """The most probable sd."""
        return self.grid[max(range(len(self.grid)), key=self.posterior.__getitem__)]

    def upper(self, level: float = 0.95) -> float:
        """The smallest sd in ``grid`` at or below which the posterior holds ``level``: the value to give ``pair_sd=``."""
        total = 0.0
        for sd, probability in zip(self.grid, self.posterior):
            total += probability
            if total >= level - 1e-12:
                return sd
        return self.grid[-1]


def pair_sd_posterior(
    evidences: Sequence[Evidence], grid: Sequence[float] = ESTIMATE_GRID, draws: int = 4000, seed: int = 0
) -> PairSdPosterior:
    """The posterior over the judge's pair-effect sd ``s`` given the outcomes of several tasks judged by it.

    The model of :func:`pair_effect_log_likelihood`, with one ``s`` shared by every task (a property
    of the judge) and each task's strengths ``N(0, τ² I)``, τ equally likely any of the stopping rule's
    scales. One task barely tells a persistent preference from a real difference (both orders of a
    pair agree either way); the product of many tasks' marginal likelihoods does. Each is
    estimated by importance sampling with the same draws for every ``s`` (common random numbers).
    Tasks with fewer than three answers or no outcomes are skipped.
    """
    import numpy as np
    from scipy.special import logsumexp

    from rankkit.strategies._bt_posterior import exact_posterior
    from rankkit.strategies._stopping import SCALES, StopTarget, current_order, importance_estimate

    total = np.zeros(len(grid))
    used = judgments = 0
    for evidence in evidences:
        if evidence.n_items < 3 or not len(evidence):
            continue
        used, judgments = used + 1, judgments + len(evidence)
        per_scale = np.zeros((len(SCALES), len(grid)))
        for k, scale in enumerate(SCALES):
            mean, _ = exact_posterior(evidence, scale, np.zeros(evidence.n_items))
            order = current_order(mean)
            for g, pair_sd in enumerate(grid):
                estimate = importance_estimate(
                    order, StopTarget("top1"), evidence, scale, mean, seed + k, draws, pair_sd
                )
                per_scale[k, g] = estimate[1]
        total += logsumexp(per_scale, axis=0) - np.log(len(SCALES))
    posterior = np.exp(total - logsumexp(total))
    return PairSdPosterior(tuple(float(sd) for sd in grid), tuple(float(p) for p in posterior), used, judgments)
