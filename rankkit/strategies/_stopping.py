"""Stopping rules of the adaptive strategies: stop once the target is settled at a confidence.

A strategy given ``until=top1|top:K|order`` keeps a Gaussian (Laplace) posterior over its
candidates' log-strengths and stops as soon as the posterior probability that its current answer
(the best candidate, the set of the K best, or the whole order, by posterior mean) is the true one
reaches ``confidence``. The probability is a Monte Carlo estimate from posterior draws with a
seed fixed per task. :func:`forecast_more` and :func:`prior_forecast` forecast how many judgments
that will take. Why this stays valid when the next pair is chosen from the data: ``docs/stopping.md``.
numpy and scipy load on first use.
"""

from __future__ import annotations

import hashlib
import math
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING, Sequence

from rankkit.specs import SpecError

if TYPE_CHECKING:  # numpy loads when a task is ranked, not on import
    import numpy as np

    from rankkit.strategies._bt_posterior import Evidence

#: The targets ``until`` names: ``top1`` (the winner), ``top:K`` (the set of the K best, in any
#: order) and ``order`` (the whole ranking).
TARGETS = ("top1", "top:K", "order")

#: Why a task stopped (the candidates' extras ``stopped``) when a strategy has a target.
STOP_REASONS = ("target", "budget", "exhausted")

#: Posterior draws per probability estimate: a probability near 0.95 is estimated to about ±0.004.
DRAWS = 4000

#: The importance sampler's proposal: the Laplace Gaussian with its sd times this.
PROPOSAL_WIDTH = 1.5

#: The least effective sample size, as a share of the draws, an importance-weighted estimate may rest on.
LEAST_EFFECTIVE_SHARE = 0.02

#: Posterior draws per forecast.
FORECAST_DRAWS = 400

#: The forecast interval's quantiles.
FORECAST_QUANTILES = (0.1, 0.9)


@dataclass(frozen=True)
class StopTarget:
    """What must be settled: ``kind`` ``top1``, ``top`` (with ``k``) or ``order``.

    >>> parse_until("s", "top:3")
    StopTarget(kind='top', k=3)
    """

    kind: str
    k: int = 1

    def size(self, n_items: int) -> int:
        """How many leading places of the order the target fixes on ``n_items`` candidates."""
        return {"top1": 1, "top": min(self.k, n_items), "order": n_items}[self.kind]


def parse_until(where: str, until: str | None) -> StopTarget | None:
    """The target of an ``until`` parameter (None: no target, the strategy's fixed budget).

    Parameters
    ----------
    where: the strategy, for the message.
    until: ``top1``, ``top:K`` (K >= 1) or ``order``.

    Returns
    -------
    StopTarget | None
        The target; :class:`SpecError` naming the choices when ``until`` is none of them.
    """
    if until is None:
        return None
    if until in ("top1", "order"):
        return StopTarget(until)
    if until.startswith("top:"):
        text = until[4:]
        if text.isdigit() and int(text) >= 1:
            return StopTarget("top", int(text))
    raise SpecError(f"{where}: until must be one of {', '.join(TARGETS)} (K a whole number >= 1), got {until!r}")


def check_stopping(where: str, until: str | None, confidence: float) -> StopTarget | None:
    """Check ``until`` and ``confidence`` (strictly between 0 and 1); the target, or None."""
    target = parse_until(where, until)
    if not 0.0 < confidence < 1.0:
        raise SpecError(f"{where}: confidence must be strictly between 0 and 1, got {confidence}")
    return target


def task_seed(task_id: str) -> int:
    """The Monte Carlo seed of a task: a pure function of its id (stable across runs and machines)."""
    return int.from_bytes(hashlib.blake2b(task_id.encode("utf-8"), digest_size=8).digest(), "little")


def current_order(mean: np.ndarray) -> np.ndarray:
    """Row indices best first by posterior mean (equal means: the data's order)."""
    import numpy as np

    return np.argsort(-mean, kind="stable")


def relevant_pairs(order: np.ndarray, target: StopTarget) -> np.ndarray:
    """The (better, worse) rows whose order the answer asserts and that decide it: the winner
    against every other (``top1``), each of the K best against each of the rest (``top:K``), and
    every two neighbours (``order``). The answer is right exactly when every such pair is."""
    import numpy as np

    size = target.size(len(order))
    if target.kind == "order":
        return np.column_stack([order[:-1], order[1:]])
    inside, outside = order[:size], order[size:]
    return np.array([(i, j) for i in inside for j in outside], dtype=np.intp).reshape(-1, 2)


def _draws(mean: np.ndarray, cov: np.ndarray, count: int, seed: int) -> np.ndarray:
    import numpy as np

    rng = np.random.default_rng(seed)
    # Cholesky with a jitter that only matters for a numerically singular covariance.
    factor = np.linalg.cholesky(cov + np.eye(len(mean)) * 1e-12 * max(1.0, float(np.trace(cov))))
    return mean + rng.standard_normal((count, len(mean))) @ factor.T


def pairwise_bound(mean: np.ndarray, cov: np.ndarray, pairs: np.ndarray) -> float:
    """The smallest posterior probability ``Φ(m / s)`` that one of ``pairs`` is ordered as the
    answer says: an upper bound of the probability that all of them are (1 without pairs)."""
    import numpy as np
    from scipy.special import ndtr

    if not len(pairs):
        return 1.0
    i, j = pairs[:, 0], pairs[:, 1]
    sd = np.sqrt(np.maximum(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], 1e-24))
    return float(ndtr((mean[i] - mean[j]) / sd).min())


def _log_likelihood(theta: np.ndarray, evidence: Evidence | None) -> np.ndarray:
    """Each draw's Bradley–Terry log-likelihood of the evidence (0 without evidence)."""
    import numpy as np

    if evidence is None or not len(evidence):
        return np.zeros(len(theta))
    first, second, outcome = evidence.arrays
    gaps = theta[:, first] - theta[:, second]
    return -(outcome * np.logaddexp(0.0, -gaps) + (1.0 - outcome) * np.logaddexp(0.0, gaps)).sum(axis=1)


def target_probability(mean: np.ndarray, cov: np.ndarray, target: StopTarget, seed: int, draws: int = DRAWS,
                       evidence: Evidence | None = None, prior_sd: float | None = None) -> float:
    """The posterior probability that the answer by posterior mean is the true one.

    Parameters
    ----------
    mean, cov: the Gaussian (Laplace) posterior of the log-strengths.
    target: what the answer is (:class:`StopTarget`).
    seed: the Monte Carlo seed (:func:`task_seed`).
    draws: posterior draws.
    evidence, prior_sd: the Bradley–Terry outcomes and prior the Laplace posterior approximates.
        With them the draws come from the Laplace Gaussian widened by :data:`PROPOSAL_WIDTH` and
        are importance-weighted to the exact posterior (the Laplace approximation is symmetric
        about the mode, and far too wide on the losing side of a candidate that won every
        judgment); when the weights leave fewer than :data:`LEAST_EFFECTIVE_SHARE` of the draws
        effective, the estimate is unreliable and 0 is returned (never settled on it). Without
        them the Gaussian itself is the posterior.

    Returns
    -------
    float
        The (weighted) share of posterior draws under which every pair of :func:`relevant_pairs`
        is ordered as the answer says, i.e. the draw's top1 / top-K set / order equals the answer.
    """
    import numpy as np

    order = current_order(mean)
    pairs = relevant_pairs(order, target)
    if not len(pairs):
        return 1.0
    exact = evidence is not None and prior_sd is not None
    width = PROPOSAL_WIDTH if exact else 1.0
    theta = _draws(mean, cov * width ** 2, draws, seed)
    if target.kind == "top":  # the K best beat the rest: compare the worst of them with the best of the rest
        size = target.size(len(mean))
        right = theta[:, order[:size]].min(axis=1) > theta[:, order[size:]].max(axis=1)
    else:
        right = (theta[:, pairs[:, 0]] > theta[:, pairs[:, 1]]).all(axis=1)
    if not exact:
        return float(np.mean(right))
    # log target - log proposal, up to constants: the proposal is N(mean, width² cov).
    centred = theta - mean
    precision = np.linalg.inv(cov * width ** 2)
    log_proposal = -0.5 * np.einsum("si,ij,sj->s", centred, precision, centred)
    log_weight = _log_likelihood(theta, evidence) - (theta * theta).sum(axis=1) / (2.0 * prior_sd ** 2) - log_proposal
    weight = np.exp(log_weight - log_weight.max())
    effective = weight.sum() ** 2 / (weight * weight).sum()
    if effective < LEAST_EFFECTIVE_SHARE * draws:
        return 0.0
    return float(weight @ right / weight.sum())


def is_target_settled(mean: np.ndarray, cov: np.ndarray, target: StopTarget, confidence: float, seed: int,
                      evidence: Evidence | None = None, prior_sd: float | None = None) -> bool:
    """Whether :func:`target_probability` reaches ``confidence``.

    Without ``evidence`` the Monte Carlo runs only when the cheap bound :func:`pairwise_bound`
    allows it (under a Gaussian posterior a single pair below the confidence already rules it out).
    """
    if evidence is None or prior_sd is None:
        if pairwise_bound(mean, cov, relevant_pairs(current_order(mean), target)) < confidence:
            return False
    elif pairwise_bound(mean, cov / PROPOSAL_WIDTH ** 2, relevant_pairs(current_order(mean), target)) < confidence:
        return False  # not even close: the exact posterior is not that much sharper than Laplace's
    return target_probability(mean, cov, target, seed, evidence=evidence, prior_sd=prior_sd) >= confidence


# ---------------------------------------------------------------------------------------------
# Forecasts


@dataclass(frozen=True)
class Forecast:
    """Judgments still needed to reach the target: the expected number, an interval
    (:data:`FORECAST_QUANTILES`), and ``basis``: ``posterior`` (from a run's current posterior)
    or ``prior`` (before any judgment, from the prior: a rough estimate)."""

    expected: float
    low: float
    high: float
    basis: str

    def __add__(self, other: "Forecast") -> "Forecast":
        """Two tasks' forecasts together (the intervals add, which is conservative)."""
        basis = self.basis if self.basis == other.basis else "mixed"
        return Forecast(self.expected + other.expected, self.low + other.low, self.high + other.high, basis)

    def describe(self, price: float | None = None) -> str:
        """``~E (L–H) judgments``, plus dollars when ``price`` (USD per judgment) is known.

        >>> Forecast(12.4, 5, 30, "posterior").describe(0.01)
        '~12 (5–30) judgments, ~$0.12 ($0.05–$0.30)'
        """
        text = f"~{self.expected:.0f} ({self.low:.0f}–{self.high:.0f}) judgments"
        if price is not None:
            text += f", ~${self.expected * price:.2f} (${self.low * price:.2f}–${self.high * price:.2f})"
        return text


def _summarise(more: np.ndarray, basis: str) -> Forecast:
    import numpy as np

    low, high = np.quantile(more, FORECAST_QUANTILES)
    return Forecast(float(np.mean(more)), float(low), float(high), basis)


def forecast_more(mean: np.ndarray, cov: np.ndarray, target: StopTarget, confidence: float, used: int,
                  most: int, seed: int, draws: int = FORECAST_DRAWS) -> Forecast:
    """How many more judgments the target needs, from the current posterior.

    The model (stated, simple): the posterior sd of every strength gap shrinks as 1/√(judgments),
    as it does when the strategy keeps spreading its judgments as it has so far. For a posterior
    draw of the strengths, each gap the answer rests on (:func:`relevant_pairs`, on the draw's own
    answer), now with sd ``s`` and true size ``g``, is settled at ``z = Φ⁻¹(confidence)`` once
    ``used · (z·s/g)²`` judgments are in; the target needs the largest of these. The expected
    number and the interval are over the draws, each capped at ``most`` (the budget, or every
    distinct judgment).

    Parameters
    ----------
    mean, cov: the current Gaussian posterior.
    target, confidence: the stopping rule.
    used: judgments used so far (> 0; with none, use :func:`prior_forecast`).
    most: the most judgments the task can still use in all (used + what is left).
    seed: the Monte Carlo seed.
    draws: posterior draws.

    Returns
    -------
    Forecast
        Judgments still to use (0 when settled), basis ``posterior``.
    """
    import numpy as np

    left = max(0, most - used)
    if used <= 0 or left == 0:
        return Forecast(0.0 if left == 0 else float(left), 0.0 if left == 0 else float(left), float(left), "posterior")
    z = NormalDist().inv_cdf(confidence)
    theta = _draws(mean, cov, draws, seed ^ 0x5EED)
    more = np.empty(draws)
    variance = np.diag(cov)
    for row, strengths in enumerate(theta):
        pairs = relevant_pairs(current_order(strengths), target)
        if not len(pairs):
            more[row] = 0.0
            continue
        i, j = pairs[:, 0], pairs[:, 1]
        sd = np.sqrt(np.maximum(variance[i] + variance[j] - 2.0 * cov[i, j], 1e-24))
        gap = np.maximum(np.abs(strengths[i] - strengths[j]), 1e-12)
        needed = used * float(np.max((z * sd / gap) ** 2))
        more[row] = min(float(left), max(0.0, needed - used))
    return _summarise(more, "posterior")


def prior_forecast(n_items: int, target: StopTarget, confidence: float, prior_sd: float, most: int,
                   seed: int = 0, pairs_per_judgment: int = 1, draws: int = FORECAST_DRAWS) -> Forecast:
    """How many judgments the target needs before any is made: a prior-based estimate.

    The model (stated, rough): true log-strengths drawn from the prior ``N(0, prior_sd²)``; the
    judgments spread evenly, each worth ``pairs_per_judgment`` pairwise outcomes of Fisher
    information 0.2 (a Bradley–Terry outcome's is σ(d)σ(−d) ≤ 0.25), so after n judgments a gap's
    variance is about ``N / (0.2 · n · pairs_per_judgment)``; a gap g is settled once
    ``g / sd ≥ Φ⁻¹(confidence)``, and the target needs all of its gaps. An adaptive strategy
    spends its judgments where the answer is in doubt, so this tends to be pessimistic; the judge's
    real noise is unknown before judging, so it may also be far off. Capped at ``most``.

    Parameters
    ----------
    n_items: candidates in the task.
    target, confidence: the stopping rule.
    prior_sd: the strategy's prior sd of the log-strengths.
    most: the most judgments the task can use (its budget, or every distinct judgment).
    seed: the Monte Carlo seed.
    pairs_per_judgment: pairwise outcomes one judgment is worth (k − 1 for a choice among k).
    draws: prior draws.

    Returns
    -------
    Forecast
        Judgments to use, basis ``prior``.
    """
    import numpy as np

    if n_items < 2:
        return Forecast(0.0, 0.0, 0.0, "prior")
    z = NormalDist().inv_cdf(confidence)
    rng = np.random.default_rng(seed)
    needed = np.empty(draws)
    for row in range(draws):
        strengths = rng.normal(0.0, prior_sd, n_items)
        pairs = relevant_pairs(current_order(strengths), target)
        gap = float(np.min(np.abs(strengths[pairs[:, 0]] - strengths[pairs[:, 1]]))) if len(pairs) else math.inf
        needed[row] = min(float(most), z * z * n_items / (0.2 * pairs_per_judgment * max(gap, 1e-12) ** 2))
    return _summarise(needed, "prior")


def stop_counts(reasons: Sequence[str]) -> dict[str, int]:
    """How many tasks stopped for each reason of :data:`STOP_REASONS` (others counted as they come).

    >>> stop_counts(["target", "budget", "target"])
    {'target': 2, 'budget': 1, 'exhausted': 0}
    """
    counts = dict.fromkeys(STOP_REASONS, 0)
    for reason in reasons:
        counts[reason] = counts.get(reason, 0) + 1
    return counts
