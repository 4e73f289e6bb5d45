"""Stopping rules of the adaptive strategies (``until=top1|top:K|order``) and their forecasts.

A task stops once the answer by posterior mean is the true one with probability ``confidence``,
by a seeded Monte Carlo estimate clear of it by two standard errors. Pairwise strategies use the
exact Bradley–Terry posterior with a hyperprior on the scale, and with ``stopping=pair_effects`` a
persistent effect per pair (:func:`bt_estimate`); ``setwise_groups`` its Gaussian posterior
(:func:`gaussian_probability`). Why this stays valid under adaptive choice: ``docs/stopping.md``.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import TYPE_CHECKING

from rankkit.data.specs import SpecError
from rankkit.strategies._pair_effects import rule_pair_sds

if TYPE_CHECKING:  # numpy loads when a task is ranked, not on import
    import numpy as np

    from rankkit.strategies._bt_posterior import Evidence

#: The targets ``until`` names: ``top1`` (the winner), ``top:K`` (the set of the K best, in any
#: order) and ``order`` (the whole ranking).
TARGETS = ("top1", "top:K", "order")

#: Why a task stopped (the candidates' extras ``stopped``) when a strategy has a target.
STOP_REASONS = ("target", "budget", "exhausted")

#: Posterior draws per probability estimate (per prior scale), to start with.
DRAWS = 2000

#: An estimate settles the target only this many standard errors above the confidence: stopping
#: at the first noisy crossing would favour estimates that happen to be too high.
MONTE_CARLO_Z = 2.0

#: The most draws :func:`clears_confidence` grows to.
MOST_DRAWS = 32000

#: The importance sampler's proposal: the Laplace covariance's sd times this (:func:`importance_estimate`).
PROPOSAL_WIDTH = 1.5

#: The importance sampler's proposal is a multivariate t with this many degrees of freedom.
PROPOSAL_DOF = 5.0

#: The least effective sample size, as a share of the draws, an importance-weighted estimate may rest on.
LEAST_EFFECTIVE_SHARE = 0.02

#: The pairwise stopping rule's hyperprior: the strengths' prior sd τ is one of these, equally
#: likely (adding 8 made the rule overconfident on simulated judges).
SCALES = (0.5, 1.0, 2.0, 4.0)

#: The screen before the Monte Carlo (:func:`is_target_settled`) divides the Laplace sd by this.
SCREEN_SHARPENING = 2.0

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
        """How many leading places of the order the target fixes: 1, min(K, n) or n."""
        return {"top1": 1, "top": min(self.k, n_items), "order": n_items}[self.kind]


def parse_until(where: str, until: str | None) -> StopTarget | None:
    """The target of an ``until`` parameter: ``top1``, ``top:K`` (K >= 1) or ``order``; None for None.

    ``where`` names the strategy in the :class:`SpecError` raised for anything else.
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
    """Check ``until`` and ``confidence``; the target, or None.

    Raises
    ------
    SpecError
        For an unknown target or a confidence outside (0, 1), both ends excluded.
    """
    target = parse_until(where, until)
    if not 0.0 < confidence < 1.0:
        raise SpecError(f"{where}: confidence must be strictly between 0 and 1, got {confidence}")
    return target


def task_seed(task_id: str) -> int:
    """The Monte Carlo seed of a task: a 64-bit blake2b of its id (stable across runs and machines)."""
    return int.from_bytes(hashlib.blake2b(task_id.encode("utf-8"), digest_size=8).digest(), "little")


def current_order(mean: np.ndarray) -> np.ndarray:
    """Row indices best first by posterior mean (equal means: the data's order)."""
    import numpy as np

    return np.argsort(-mean, kind="stable")


def relevant_pairs(order: np.ndarray, target: StopTarget) -> np.ndarray:
    """The (better, worse) rows the answer ``order`` rests on, as an (m, 2) array: the winner against
    every other (``top1``), each of the K best against the rest (``top:K``), neighbours (``order``).
    The answer is right exactly when every such pair is.
    """
    import numpy as np

    size = target.size(len(order))
    if target.kind == "order":
        return np.column_stack([order[:-1], order[1:]])
    inside, outside = order[:size], order[size:]
    return np.array([(i, j) for i in inside for j in outside], dtype=np.intp).reshape(-1, 2)


def in_contention(mean: np.ndarray, cov: np.ndarray, target: StopTarget, confidence: float) -> np.ndarray:
    """The candidate rows, best first, whose place still decides the answer: those in a pair the
    answer rests on whose Gaussian doubt ``1 − Φ(m / s)`` exceeds ``(1 − confidence) / (2 · pairs)``.

    By the union bound the other pairs together cost at most half the allowed miss, so the rest of
    the candidates can sit out without keeping the target from being settled.

    Examples
    --------
    >>> import numpy as np
    >>> mean, cov = np.array([3.0, 2.8, -4.0]), np.eye(3) * 0.25
    >>> in_contention(mean, cov, StopTarget("top1"), 0.95).tolist()
    [0, 1]
    """
    import numpy as np

    order = current_order(mean)
    pairs = relevant_pairs(order, target)
    if not len(pairs):
        return np.zeros(0, dtype=np.intp)
    doubt = 1.0 - pair_probabilities(mean, cov, pairs)
    doubtful = pairs[doubt > (1.0 - confidence) / (2 * len(pairs))]
    rows = set(doubtful.ravel().tolist())
    return np.array([row for row in order if row in rows], dtype=np.intp)


def _draws(mean: np.ndarray, cov: np.ndarray, count: int, seed: int) -> np.ndarray:
    import numpy as np

    rng = np.random.default_rng(seed)
    # Cholesky with a jitter that only matters for a numerically singular covariance.
    factor = np.linalg.cholesky(cov + np.eye(len(mean)) * 1e-12 * max(1.0, float(np.trace(cov))))
    return mean + rng.standard_normal((count, len(mean))) @ factor.T


def pairwise_bound(mean: np.ndarray, cov: np.ndarray, pairs: np.ndarray) -> float:
    """The smallest Gaussian probability ``Φ(m / s)`` among ``pairs``: an upper bound of the
    probability that all hold (1 without pairs).
    """
    if not len(pairs):
        return 1.0
    return float(pair_probabilities(mean, cov, pairs).min())


def pair_probabilities(mean: np.ndarray, cov: np.ndarray, pairs: np.ndarray) -> np.ndarray:
    """Each (better, worse) pair's Gaussian posterior probability ``Φ(m / s)``: ``m`` the gap of the
    means, ``s`` its posterior sd.

    Examples
    --------
    >>> import numpy as np
    >>> pair_probabilities(np.array([1.0, 0.0]), np.eye(2) * 0.5, np.array([[0, 1]])).round(3).tolist()
    [0.841]
    """
    import numpy as np
    from scipy.special import ndtr

    i, j = pairs[:, 0], pairs[:, 1]
    sd = np.sqrt(np.maximum(cov[i, i] + cov[j, j] - 2.0 * cov[i, j], 1e-24))
    return ndtr((mean[i] - mean[j]) / sd)


def answer_holds(theta: np.ndarray, order: np.ndarray, target: StopTarget) -> np.ndarray:
    """For each draw (row of ``theta``), whether the answer ``order`` (rows best first) is the true
    one under it; one boolean per draw.
    """
    import numpy as np

    size = target.size(len(order))
    if target.kind == "top":  # the worst of the K best beats the best of the rest
        if size >= len(order):
            return np.ones(len(theta), dtype=bool)
        return theta[:, order[:size]].min(axis=1) > theta[:, order[size:]].max(axis=1)
    pairs = relevant_pairs(order, target)
    return (theta[:, pairs[:, 0]] > theta[:, pairs[:, 1]]).all(axis=1)


def gaussian_probability(mean: np.ndarray, cov: np.ndarray, target: StopTarget, seed: int, draws: int = DRAWS) -> float:
    """The probability under ``N(mean, cov)`` that the answer by posterior mean is the true one: the
    share of ``draws`` seeded draws under which it holds.
    """
    import numpy as np

    order = current_order(mean)
    return float(np.mean(answer_holds(_draws(mean, cov, draws, seed), order, target)))


def _binomial_error(probability: float, draws: int) -> float:
    """The standard error of a share ``probability`` of ``draws`` equally weighted draws."""
    return math.sqrt(probability * (1.0 - probability) / draws)


def importance_estimate(
    order: np.ndarray,
    target: StopTarget,
    evidence: Evidence,
    scale: float,
    start: np.ndarray,
    seed: int,
    draws: int = DRAWS,
    pair_sd: float = 0.0,
) -> tuple[float, float, float, float]:
    """The exact Bradley–Terry posterior under the prior ``N(0, scale² I)``, with a pair effect of sd
    ``pair_sd`` (:mod:`rankkit.strategies._pair_effects`) integrated out, by importance sampling.

    The proposal is a multivariate t (:data:`PROPOSAL_DOF`) at the Bradley–Terry posterior mode,
    scaled by the Laplace covariance (each outcome's curvature times its share of a vote,
    :func:`~rankkit.strategies._pair_effects.vote_weights`) widened by :data:`PROPOSAL_WIDTH` (a
    Gaussian proposal was too narrow in the tails when candidates had met only one or two others).

    Returns
    -------
    tuple[float, float, float, float]
        (probability that ``order`` holds, log marginal likelihood, effective sample size as a
        share of the draws, the probability's delta-method standard error).
    """
    import numpy as np

    from rankkit.strategies._bt_posterior import bt_log_posterior, exact_posterior, posterior_hessian
    from rankkit.strategies._pair_effects import pair_effect_log_likelihood, vote_weights

    mean, cov = exact_posterior(evidence, scale, start)
    if pair_sd > 0 and len(evidence):
        curvature = bt_log_posterior(mean, evidence, scale)[2]
        cov = np.linalg.inv(posterior_hessian(evidence, curvature * vote_weights(evidence, curvature, pair_sd), scale))
    proposal = cov * PROPOSAL_WIDTH**2
    factor = np.linalg.cholesky(proposal + np.eye(len(mean)) * 1e-12 * max(1.0, float(np.trace(proposal))))
    n = len(mean)
    rng = np.random.default_rng(seed)
    normals = rng.standard_normal((draws, n))
    dof = PROPOSAL_DOF
    # A multivariate t: the Gaussian draws over √(χ²_ν / ν), so its tails fall off polynomially.
    steps = normals * np.sqrt(dof / rng.chisquare(dof, draws))[:, None]
    theta = mean + steps @ factor.T
    log_prior = -(theta * theta).sum(axis=1) / (2.0 * scale**2) - n * math.log(scale) - n / 2 * math.log(2 * math.pi)
    log_proposal = (
        math.lgamma((dof + n) / 2)
        - math.lgamma(dof / 2)
        - n / 2 * math.log(dof * math.pi)
        - float(np.log(np.diag(factor)).sum())
        - (dof + n) / 2 * np.log1p((steps * steps).sum(axis=1) / dof)
    )
    log_weight = pair_effect_log_likelihood(theta, evidence, pair_sd) + log_prior - log_proposal
    top = float(log_weight.max())
    weight = np.exp(log_weight - top)
    log_marginal = top + math.log(float(weight.mean()))
    effective = float(weight.sum() ** 2 / (weight * weight).sum()) / draws
    normalised = weight / weight.sum()
    holds = answer_holds(theta, order, target)
    probability = float(normalised @ holds)
    error = float(np.sqrt(np.sum(normalised**2 * (holds - probability) ** 2)))
    return probability, log_marginal, effective, error


def bt_estimate(
    order: np.ndarray,
    target: StopTarget,
    evidence: Evidence,
    seed: int,
    start: np.ndarray,
    scales: Sequence[float] = SCALES,
    draws: int = DRAWS,
    pair_sds: Sequence[float] = (0.0,),
) -> tuple[float, float]:
    """The posterior probability that the answer ``order`` is the true one, and its Monte Carlo
    standard error, under Bradley–Terry strengths ``N(0, τ² I)`` and pair effects ``N(0, s²)``
    with τ equally likely any of ``scales`` and s any of ``pair_sds``.

    Each (τ, s)'s estimate (:func:`importance_estimate`, seeded ``seed + k`` for the k-th τ) is
    weighted by its marginal likelihood. When one of weight above 1% rests on fewer effective draws
    than :data:`LEAST_EFFECTIVE_SHARE`, (0, 0) is returned: never settled on it.
    """
    import numpy as np

    estimates = [
        importance_estimate(order, target, evidence, scale, start, seed + k, draws, pair_sd)
        for k, scale in enumerate(scales)
        for pair_sd in pair_sds
    ]
    logs = np.array([log_marginal for _, log_marginal, _, _ in estimates])
    weights = np.exp(logs - logs.max())
    weights /= weights.sum()
    if any(
        weight > 0.01 and effective < LEAST_EFFECTIVE_SHARE for weight, (_, _, effective, _) in zip(weights, estimates)
    ):
        return 0.0, 0.0
    probability = float(sum(weight * p for weight, (p, _, _, _) in zip(weights, estimates)))
    error = math.sqrt(float(sum((weight * e) ** 2 for weight, (_, _, _, e) in zip(weights, estimates))))
    return probability, error


def clears_confidence(estimate: Callable[[int], tuple[float, float]], confidence: float) -> bool:
    """Whether ``estimate(draws)`` (probability, standard error) is above ``confidence`` by
    :data:`MONTE_CARLO_Z` standard errors; while it is above but not clear, the draws grow 4-fold
    from :data:`DRAWS` up to :data:`MOST_DRAWS`.

    Examples
    --------
    >>> clears_confidence(lambda draws: (0.96, 0.5 / draws**0.5), 0.95)  # clear at 32000 draws
    True
    >>> clears_confidence(lambda draws: (0.951, 0.02), 0.95)  # never clear
    False
    """
    draws = DRAWS
    while True:
        probability, error = estimate(draws)
        if probability - MONTE_CARLO_Z * error >= confidence:
            return True
        if probability < confidence or draws >= MOST_DRAWS:
            return False
        draws = min(4 * draws, MOST_DRAWS)


def is_target_settled(
    mean: np.ndarray,
    cov: np.ndarray,
    target: StopTarget,
    confidence: float,
    seed: int,
    evidence: Evidence | None = None,
    stopping: str = "bt",
    pair_sd: float | None = None,
) -> bool:
    """Whether the answer by posterior mean is the true one with probability ``confidence``.

    With ``evidence`` (pairwise strategies) by :func:`bt_estimate` under the rule ``stopping`` (with the
    judge's ``pair_sd``: :func:`~rankkit.strategies._pair_effects.rule_pair_sds`) and under plain
    Bradley–Terry too; without by the Gaussian ``N(mean, cov)``. A cheap Gaussian screen (sd divided by
    :data:`SCREEN_SHARPENING`) runs first; it can only delay a stop, never cause one.
    """
    order = current_order(mean)
    pairs = relevant_pairs(order, target)
    sharpening = 1.0 if evidence is None else SCREEN_SHARPENING
    if pairwise_bound(mean, cov / sharpening**2, pairs) < confidence:
        return False
    if evidence is None:

        def estimate(draws: int) -> tuple[float, float]:
            probability = gaussian_probability(mean, cov, target, seed, draws)
            return probability, _binomial_error(probability, draws)

        return clears_confidence(estimate, confidence)

    def under(pair_sds: Sequence[float]) -> Callable[[int], tuple[float, float]]:
        return lambda draws: bt_estimate(order, target, evidence, seed, mean, draws=draws, pair_sds=pair_sds)

    # Plain Bradley–Terry first: cheaper, and pair effects only widen the posterior (never stop sooner).
    rules = dict.fromkeys([(0.0,), rule_pair_sds(stopping, pair_sd)])
    return all(clears_confidence(under(pair_sds), confidence) for pair_sds in rules)


# ---------------------------------------------------------------------------------------------
# Forecasts


@dataclass(frozen=True)
class Forecast:
    """Judgments still needed to reach the target: expected, an interval (:data:`FORECAST_QUANTILES`),
    and ``basis`` ``posterior`` (from a run's posterior) or ``prior`` (before any judgment; rough).
    """

    expected: float
    low: float
    high: float
    basis: str

    def __add__(self, other: Forecast) -> Forecast:
        """Two tasks' forecasts together (the intervals add, which is conservative)."""
        basis = self.basis if self.basis == other.basis else "mixed"
        return Forecast(self.expected + other.expected, self.low + other.low, self.high + other.high, basis)

    def describe(self, price: float | None = None) -> str:
        """``~E (L–H) judgments``, plus dollars when ``price`` (USD per judgment) is given.

        Examples
        --------
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


def forecast_more(
    mean: np.ndarray,
    cov: np.ndarray,
    target: StopTarget,
    confidence: float,
    used: int,
    most: int,
    seed: int,
    draws: int = FORECAST_DRAWS,
) -> Forecast:
    """How many more judgments the target needs, from the current posterior (basis ``posterior``).

    Model: each gap's posterior sd shrinks as 1/√(judgments). Per posterior draw, a gap the answer
    rests on, with sd ``s`` and true size ``g``, is settled once ``used · (Φ⁻¹(confidence)·s/g)²``
    judgments are in; the target needs the largest. Each draw is capped at ``most`` − ``used``
    (``most``: the budget, or every distinct judgment). ``used`` must be > 0 (else use
    :func:`prior_forecast`).
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


def prior_forecast(
    n_items: int,
    target: StopTarget,
    confidence: float,
    prior_sd: float,
    most: int,
    seed: int = 0,
    pairs_per_judgment: int = 1,
    draws: int = FORECAST_DRAWS,
) -> Forecast:
    """How many judgments the target needs before any is made (basis ``prior``; rough).

    Model: log-strengths from ``N(0, prior_sd²)``; judgments spread evenly, each worth
    ``pairs_per_judgment`` outcomes (k − 1 for a choice among k) of Fisher information 0.2, and a gap
    ``g`` is settled once ``g / sd ≥ Φ⁻¹(confidence)``. Adaptive strategies usually need fewer;
    the judge's real noise is unknown, so it may be far off. Capped at ``most``.
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
