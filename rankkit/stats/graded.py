"""Ratings from graded verdicts and ties: arena-hard's weighting, WildBench's length rule, Davidson's tie model.

A graded verdict has a level from the first answer's side (2 ``A>>B``, 1 ``A>B``, 0 tie, -1, -2;
see :mod:`rankkit.judgments.levels`). These functions turn levels into the match outcomes of
:mod:`rankkit.stats.ratings` or fit them directly. See ``docs/graded-verdicts.md``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from rankkit.stats.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE, Outcome, default_alpha, item_order

#: A graded judgment between two items: (a, b, level from a's side).
GradedMatch = tuple[str, str, int]

#: How a rating treats ties: ``half`` a win each way (Bradley–Terry), or modelled (:func:`davidson`;
#: :func:`ordinal`, which also reads strong verdicts).
TIE_MODELS = ("half", "davidson", "ordinal")

#: The sd of the ordinal model's weak prior on log η and log γ (:func:`ordinal_fit`).
THRESHOLD_PRIOR_SD = 3.0

#: How many wins arena-hard-auto counts a strong verdict (A>>B) as.
ARENA_HARD_WEIGHT = 3


def level_outcome(level: int) -> float:
    """The outcome for the first item: 1.0 when its level is above 0, 0.0 below, 0.5 for a tie."""
    return 1.0 if level > 0 else 0.0 if level < 0 else 0.5


def arena_hard_outcomes(matches: Sequence[GradedMatch], weight: int = ARENA_HARD_WEIGHT) -> list[Outcome]:
    """Arena-hard-auto's weighting: a strong verdict (``|level| = 2``) counts as ``weight`` wins, any other once.

    A tie is one outcome of 0.5, as arena-hard-auto scores ``A=B``; a level ±1 one win. The result feeds
    any rating of :mod:`rankkit.stats.ratings`; its mean outcome per item against one baseline is
    arena-hard-auto's score.

    Examples
    --------
    >>> arena_hard_outcomes([("m", "base", 2), ("m", "base", 0)])
    [('m', 'base', 1.0), ('m', 'base', 1.0), ('m', 'base', 1.0), ('m', 'base', 0.5)]
    """
    if weight < 1:
        raise ValueError(f"weight must be >= 1, got {weight}")
    return [(a, b, level_outcome(level)) for a, b, level in matches for _ in range(weight if abs(level) == 2 else 1)]


def arena_hard_score(matches: Sequence[GradedMatch], item: str, weight: int = ARENA_HARD_WEIGHT) -> float:
    """``item``'s mean weighted outcome over the matches it played (NaN when none): arena-hard-auto's win rate."""
    scores = [
        outcome if a == item else 1.0 - outcome
        for a, b, outcome in arena_hard_outcomes(matches, weight)
        if item in (a, b)
    ]
    return sum(scores) / len(scores) if scores else math.nan


def length_penalised_level(level: int, first_length: int, second_length: int, margin: int) -> int:
    """WildBench's length rule: a "slightly better" verdict (``|level| = 1``) becomes a tie when its winner
    is longer than the loser by more than ``margin`` characters; other levels are kept.

    Examples
    --------
    >>> length_penalised_level(1, 1800, 1000, 500), length_penalised_level(2, 1800, 1000, 500)
    (0, 2)
    """
    if margin < 0:
        raise ValueError(f"the length margin must be >= 0 characters, got {margin}")
    winner_excess = first_length - second_length if level > 0 else second_length - first_length
    return 0 if abs(level) == 1 and winner_excess > margin else level


def wildbench_reward(level: int) -> float:
    """WildBench's reward for the first item: +1 much better, +0.5 slightly, 0 tie, -0.5, -1."""
    return level / 2


# ---------------------------------------------------------------------------------------------
# Davidson


def davidson_log_likelihood(theta: Sequence[float], log_nu: float, wins, ties) -> float:
    """The Davidson log-likelihood of ``wins[i, j]`` (i beat j) and ``ties[i, j]`` (counted once per pair, i < j).

    With strengths ``π = exp(θ)`` and tie parameter ``ν = exp(log_nu)``:
    ``P(i beats j) = π_i / D``, ``P(tie) = ν·sqrt(π_i π_j) / D``, ``D = π_i + π_j + ν·sqrt(π_i π_j)``.
    """
    import numpy as np

    theta = np.asarray(theta, dtype=float)
    half = (theta[:, None] + theta[None, :]) / 2
    log_d = np.logaddexp(np.logaddexp(theta[:, None], theta[None, :]), log_nu + half)
    return float(np.sum(wins * (theta[:, None] - log_d)) + np.sum(ties * (log_nu + half - log_d)))


def _counts(outcomes: Sequence[Outcome], index: dict[str, int]):
    import numpy as np

    wins = np.zeros((len(index), len(index)))
    ties = np.zeros_like(wins)
    for a, b, outcome in outcomes:
        i, j = index[a], index[b]
        if outcome == 0.5:
            ties[min(i, j), max(i, j)] += 1
        elif outcome in (0.0, 1.0):
            winner, loser = (i, j) if outcome == 1.0 else (j, i)
            wins[winner, loser] += 1
        else:
            raise ValueError(f"match outcome must be 1.0, 0.5 or 0.0, got {outcome!r}")
    return wins, ties


def davidson_fit(outcomes: Sequence[Outcome], items: Sequence[str], alpha: float) -> tuple[dict[str, float], float]:
    """Maximum a-posteriori Davidson log-strengths (mean zero) and tie parameter ``ν``.

    ``alpha`` is the weight of a Gaussian prior ``-alpha/2 · Σθ²`` that keeps an unbeaten item finite.
    Fitted with ``scipy.optimize.minimize`` (L-BFGS-B with the closed-form gradient).
    """
    import numpy as np
    from scipy.optimize import minimize

    index = {name: i for i, name in enumerate(items)}
    wins, ties = _counts(outcomes, index)
    n = len(items)
    games = wins + wins.T + ties + ties.T

    def objective(params):
        theta, log_nu = params[:n], params[n]
        half = (theta[:, None] + theta[None, :]) / 2
        log_d = np.logaddexp(np.logaddexp(theta[:, None], theta[None, :]), log_nu + half)
        p_win = np.exp(theta[:, None] - log_d)  # P(i beats j)
        p_tie = np.exp(log_nu + half - log_d)
        value = -davidson_log_likelihood(theta, log_nu, wins, ties) + alpha / 2 * float(theta @ theta)
        # d/dθ_i of the log-likelihood: observed score minus expected score, ties worth a half.
        observed = wins.sum(axis=1) + 0.5 * (ties + ties.T).sum(axis=1)
        expected = (games * (p_win + 0.5 * p_tie)).sum(axis=1)
        tie_count = ties.sum()
        expected_ties = float(np.sum(np.triu(games, 1) * p_tie))
        gradient = np.append(-(observed - expected) + alpha * theta, -(tie_count - expected_ties))
        return value, gradient

    start = np.zeros(n + 1)
    start[n] = math.log(0.5)
    result = minimize(objective, start, jac=True, method="L-BFGS-B")
    theta = result.x[:n] - result.x[:n].mean()
    return {name: float(theta[i]) for name, i in index.items()}, float(math.exp(result.x[n]))


def davidson(
    outcomes: Sequence[Outcome],
    items: Sequence[str] | None = None,
    alpha: float | None = None,
    initial: float = ELO_INITIAL,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
) -> dict[str, float]:
    """Davidson (Bradley–Terry with ties) ratings on the Elo scale: ties are their own outcome, not half wins.

    The model (Davidson 1970): ``P(i beats j) = π_i / D``, ``P(i ties j) = ν·sqrt(π_i π_j) / D`` with
    ``D = π_i + π_j + ν·sqrt(π_i π_j)``, ``π = exp(θ)``; ``ν >= 0`` is fitted with θ
    (:func:`davidson_fit`). Without ties ``ν → 0`` and it is Bradley–Terry. A rating is
    ``initial + θ · scale / ln(base)`` as in :func:`~rankkit.stats.ratings.bradley_terry`; ``alpha``
    (None: :func:`~rankkit.stats.ratings.default_alpha`) is the prior weight on θ.
    """
    order = item_order(outcomes, items)
    if len(order) < 2 or not outcomes:
        return {name: float(initial) for name in order}
    theta, _ = davidson_fit(outcomes, order, default_alpha(len(order)) if alpha is None else alpha)
    factor = scale / math.log(base)
    return {name: initial + theta[name] * factor for name in order}


# ---------------------------------------------------------------------------------------------
# The ordinal model: ties and strong verdicts as thresholds on one perceived difference


def _level_bounds(levels, log_eta: float, log_gamma: float):
    """Each level's interval ``(low, high]`` of the perceived difference ``d``: ±∞ for the open ends."""
    import numpy as np

    eta, gamma = math.exp(log_eta), math.exp(log_gamma)
    cuts = {2: (eta + gamma, np.inf), 1: (eta, eta + gamma), 0: (-eta, eta), -1: (-eta - gamma, -eta)}
    cuts[-2] = (-np.inf, -eta - gamma)
    low = np.array([cuts[level][0] for level in range(-2, 3)])[levels + 2]
    high = np.array([cuts[level][1] for level in range(-2, 3)])[levels + 2]
    return low, high


def ordinal_log_likelihood(theta, log_eta: float, log_gamma: float | None, first, second, levels, counts):
    """The log-likelihood of graded verdicts under the ordinal model and its gradient in (θ, log η, log γ).

    The judge perceives ``d = θ_first − θ_second + ε``, ε standard logistic, and says a tie (level 0)
    when ``|d| <= η``, a strong verdict (±2) when ``|d| > η + γ``, else ±1: ``P(level) =
    σ(Δ − low) − σ(Δ − high)`` for the level's interval ``(low, high]`` of ``d``. With ``log_gamma``
    None there are three levels (±1 means ``|d| > η``): Rao and Kupper's (1967) model; with γ, its
    five-level cumulative-logit extension (Agresti 1992). ``first``, ``second``, ``levels`` and
    ``counts`` are arrays, one entry per distinct (first, second, level) with its count.
    """
    import numpy as np
    from scipy.special import expit, log_expit

    three = log_gamma is None
    levels = np.asarray(levels, dtype=np.intp)
    low, high = _level_bounds(levels, log_eta, 50.0 if three else log_gamma)
    gap = theta[first] - theta[second]
    upper, lower = gap - low, gap - high  # P = σ(upper) − σ(lower), upper > lower
    # log(σ(a) − σ(b)) = log σ(a) + log σ(−b) + log(1 − e^(b − a)), stable at either end.
    log_p = log_expit(upper) + log_expit(-lower) + np.log1p(-np.exp(np.minimum(lower - upper, -1e-300)))
    p = np.maximum(np.exp(log_p), 1e-300)
    density_upper, density_lower = expit(upper) * expit(-upper), expit(lower) * expit(-lower)
    d_gap = counts * (density_upper - density_lower) / p  # d log P / dΔ
    d_low, d_high = -counts * density_upper / p, counts * density_lower / p  # d log P / d low, d high
    n = len(theta)
    gradient = np.bincount(first, d_gap, n) - np.bincount(second, d_gap, n)
    eta, gamma = math.exp(log_eta), math.exp(50.0 if three else log_gamma)
    # d low / d η and d high / d η per level (−2 … 2): the cut points move by ±η and ±(η + γ).
    sign_low = np.array([0.0, -1.0, -1.0, 1.0, 1.0])[levels + 2]
    sign_high = np.array([-1.0, -1.0, 1.0, 1.0, 0.0])[levels + 2]
    d_eta = eta * float(np.sum(d_low * sign_low + d_high * sign_high))
    gamma_low = np.array([0.0, -1.0, 0.0, 0.0, 1.0])[levels + 2]
    gamma_high = np.array([-1.0, 0.0, 0.0, 1.0, 0.0])[levels + 2]
    d_gamma = 0.0 if three else gamma * float(np.sum(d_low * gamma_low + d_high * gamma_high))
    return float(np.sum(counts * log_p)), gradient, d_eta, d_gamma


def ordinal_fit(
    matches: Sequence[GradedMatch], items: Sequence[str], alpha: float
) -> tuple[dict[str, float], float, float | None]:
    """Maximum a-posteriori log-strengths (mean zero), tie threshold ``η`` and strong-verdict width ``γ``
    of the ordinal model (:func:`ordinal_log_likelihood`) on graded matches ``(a, b, level from a's side)``.

    Three levels (Rao–Kupper, ``γ`` None) when no verdict is strong, else five. ``alpha`` weighs the
    Gaussian prior ``-alpha/2 · Σθ²``; ``log η`` and ``log γ`` have a weak prior (sd
    :data:`THRESHOLD_PRIOR_SD` around 0.5 and 1) that keeps them finite when a sample has no tie or no
    slight verdict (a bootstrap resample of a few matches). Fitted by L-BFGS-B with the closed-form gradient.

    Raises
    ------
    ValueError
        For a level outside -2 … 2.
    """
    import numpy as np
    from scipy.optimize import minimize

    index = {name: i for i, name in enumerate(items)}
    grouped: dict[tuple[int, int, int], int] = {}
    for a, b, level in matches:
        if level not in (-2, -1, 0, 1, 2) or isinstance(level, bool):
            raise ValueError(f"a verdict level must be one of -2, -1, 0, 1, 2, got {level!r}")
        key = (index[a], index[b], level)
        grouped[key] = grouped.get(key, 0) + 1
    first, second, levels = (np.array(column, dtype=np.intp) for column in zip(*grouped)) if grouped else ([],) * 3
    counts = np.array(list(grouped.values()), dtype=float)
    five = bool(np.any(np.abs(levels) == 2))
    n = len(items)

    def objective(params):
        theta = params[:n]
        log_gamma = params[n + 1] if five else None
        value, gradient, d_eta, d_gamma = ordinal_log_likelihood(
            theta, params[n], log_gamma, first, second, levels, counts
        )
        # The thresholds' weak prior, in log space around their start.
        shifts = params[n:] - start[n:]
        full = np.append(-gradient + alpha * theta, [-d_eta] + ([-d_gamma] if five else []))
        full[n:] += shifts / THRESHOLD_PRIOR_SD**2
        prior = alpha / 2 * float(theta @ theta) + float(shifts @ shifts) / (2 * THRESHOLD_PRIOR_SD**2)
        return -value + prior, full

    start = np.append(np.zeros(n), [math.log(0.5)] + ([math.log(1.0)] if five else []))
    result = minimize(objective, start, jac=True, method="L-BFGS-B")
    theta = result.x[:n] - result.x[:n].mean()
    gamma = float(math.exp(result.x[n + 1])) if five else None
    return {name: float(theta[i]) for name, i in index.items()}, float(math.exp(result.x[n])), gamma


def ordinal(
    matches: Sequence[GradedMatch],
    items: Sequence[str] | None = None,
    alpha: float | None = None,
    initial: float = ELO_INITIAL,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
) -> dict[str, float]:
    """Ordinal ratings on the Elo scale: each verdict's level (tie, slight, strong) is its own outcome.

    The model is :func:`ordinal_log_likelihood` (fitted by :func:`ordinal_fit`): one perceived
    difference per verdict, cut at a tie threshold and a strong threshold, so a strong verdict says
    more than a slight one and a tie says the two are close. A rating is
    ``initial + θ · scale / ln(base)`` as in :func:`~rankkit.stats.ratings.bradley_terry`; ``alpha``
    (None: :func:`~rankkit.stats.ratings.default_alpha`) is the prior weight on θ.

    Examples
    --------
    >>> games = [("x", "y", 2)] * 3 + [("x", "y", 0)] * 2 + [("y", "x", 1)]
    >>> ratings = ordinal(games)
    >>> ratings["x"] > ratings["y"]
    True
    """
    order = item_order([(a, b, 0.5) for a, b, _ in matches], items)
    if len(order) < 2 or not matches:
        return {name: float(initial) for name in order}
    theta, _, _ = ordinal_fit(matches, order, default_alpha(len(order)) if alpha is None else alpha)
    factor = scale / math.log(base)
    return {name: initial + theta[name] * factor for name in order}
