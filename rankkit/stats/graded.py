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

#: How a rating treats ties: ``half`` a win each way (Bradley–Terry), or modelled (:func:`davidson`).
TIE_MODELS = ("half", "davidson")

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
