"""Rating models over match results: online Elo, Bradley–Terry, win rates, and bootstrap intervals.

Everything here is a small pure function of a list of *match records*. A record is a triple
``(a, b, outcome)`` where ``a`` and ``b`` are item names (candidate ids, system names) and
``outcome`` is the result **for a**: ``1.0`` a won, ``0.0`` b won, ``0.5`` a tie. Which of a and b
was shown first to the judge does not matter here; the strategies and leaderboards decide how a
judged comparison becomes a record (e.g. a :class:`~rankkit.matches.Duel`'s ``outcome``).

Ratings come back as ``{item: rating}`` on the **Elo scale**: an item that has played no match
sits at ``initial`` (1000), and a gap of ``scale`` (400) points means the stronger item is expected
to win ``base``:1 (10:1). Every function takes ``items`` so that items without matches still get a
rating and the output order is stable (the order of ``items``, else the order of first appearance).

* :func:`online_elo` — the classic sequential Elo update with step ``k`` (order-dependent);
* :func:`elo_over_permutations` — online Elo averaged over seeded random orders of the matches
  (Chatbot Arena's remedy for that order dependence);
* :func:`bradley_terry` — the (lightly regularised) maximum-likelihood Bradley–Terry strengths
  fitted by choix, mapped to the Elo scale (order-independent; a tie is half a win each way);
* :func:`win_rates` — the share of points each item scored in its matches;
* :func:`bootstrap` — wraps any of these: resamples the matches with replacement and returns a
  percentile interval per item (the ``evalica.bootstrap`` idea: intervals for any method).
"""

from __future__ import annotations

import math
import random
from dataclasses import dataclass
from typing import Callable, Iterable, Mapping, Sequence

import numpy as np

#: One match result: (a, b, outcome for a), outcome in {1.0, 0.5, 0.0}.
MatchRecord = tuple[str, str, float]

#: Any rating function of this module: ``fn(matches, items=...) -> {item: rating}``.
RatingFunction = Callable[..., dict[str, float]]

ELO_INITIAL = 1000.0
ELO_SCALE = 400.0
ELO_BASE = 10.0


def item_order(matches: Iterable[MatchRecord], items: Sequence[str] | None = None) -> list[str]:
    """The items to rate: ``items`` when given (plus any item of the matches missing from it, at
    the end), else every item in order of first appearance in the matches."""
    order = list(items) if items is not None else []
    seen = set(order)
    for a, b, _ in matches:
        for name in (a, b):
            if name not in seen:
                seen.add(name)
                order.append(name)
    return order


def _check_outcome(outcome: float) -> float:
    if outcome not in (0.0, 0.5, 1.0):
        raise ValueError(f"match outcome must be 1.0 (a won), 0.5 (tie) or 0.0 (b won), got {outcome!r}")
    return float(outcome)


# ---------------------------------------------------------------------------------------------
# Elo


def elo_expected(rating_a: float, rating_b: float, scale: float = ELO_SCALE, base: float = ELO_BASE) -> float:
    """Expected score of a against b under the Elo model: ``1 / (1 + base ** ((r_b - r_a) / scale))``."""
    return 1.0 / (1.0 + base ** ((rating_b - rating_a) / scale))


def online_elo(matches: Sequence[MatchRecord], items: Sequence[str] | None = None, k: float = 16.0,
               initial: float = ELO_INITIAL, scale: float = ELO_SCALE, base: float = ELO_BASE) -> dict[str, float]:
    """Online Elo: play the matches in the given order, updating both ratings after each.

    After a match with outcome ``s`` for a, ``r_a += k·(s − E_a)`` and ``r_b −= k·(s − E_a)``, where
    ``E_a = 1 / (1 + base^((r_b − r_a)/scale))`` is a's expected score. Ratings start at ``initial``.

    matches: (a, b, outcome for a) records, played in this order (the result depends on it).
    items: the items to rate (see :func:`item_order`).
    k: the update step — how many points a fully unexpected result moves a rating (Chatbot Arena
        used 4 over hundreds of thousands of votes; a ranking task has tens of matches, hence 16).
    initial, scale, base: the Elo scale (1000, 400, 10 by convention).
    """
    ratings = {name: float(initial) for name in item_order(matches, items)}
    for a, b, outcome in matches:
        expected_a = elo_expected(ratings[a], ratings[b], scale, base)
        delta = k * (_check_outcome(outcome) - expected_a)
        ratings[a] += delta
        ratings[b] -= delta
    return ratings


def elo_over_permutations(matches: Sequence[MatchRecord], items: Sequence[str] | None = None,
                          permutations: int = 100, seed: int | random.Random = 0, k: float = 16.0,
                          initial: float = ELO_INITIAL, scale: float = ELO_SCALE,
                          base: float = ELO_BASE) -> dict[str, float]:
    """Online Elo averaged over ``permutations`` random orders of the matches.

    Online Elo depends on the order of the matches (the last ones weigh most); averaging over
    shuffled orders removes that arbitrary dependence while keeping Elo's update rule.

    permutations: how many shuffled orders to average over (>= 1).
    seed: an int, or a ``random.Random`` to draw the orders from (it is advanced).
    k, initial, scale, base: as in :func:`online_elo`.
    """
    if permutations < 1:
        raise ValueError(f"permutations must be >= 1, got {permutations}")
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    order = item_order(matches, items)
    totals = dict.fromkeys(order, 0.0)
    shuffled = list(matches)
    for _ in range(permutations):
        rng.shuffle(shuffled)
        for name, rating in online_elo(shuffled, order, k, initial, scale, base).items():
            totals[name] += rating
    return {name: total / permutations for name, total in totals.items()}


# ---------------------------------------------------------------------------------------------
# Bradley–Terry


def win_matrix(matches: Iterable[MatchRecord], index: Mapping[str, int]) -> np.ndarray:
    """Count the matches as choix's dense comparison matrix: ``wins[i, j]`` = how often i beat j.

    choix's Bradley–Terry has no ties, so a tie counts as **half a win each way** (0.5 added to
    both ``wins[i, j]`` and ``wins[j, i]``), the usual treatment of draws as half wins; a decisive
    match adds 1 to the winner's cell. Fractional counts are exactly weighted comparisons in the
    likelihood, so nothing needs duplicating.

    index: item name -> row/column of the matrix.
    """
    wins = np.zeros((len(index), len(index)))
    for a, b, outcome in matches:
        outcome = _check_outcome(outcome)
        wins[index[a], index[b]] += outcome
        wins[index[b], index[a]] += 1.0 - outcome
    return wins


def bradley_terry(matches: Sequence[MatchRecord], items: Sequence[str] | None = None, alpha: float = 0.01,
                  initial: float = ELO_INITIAL, scale: float = ELO_SCALE, base: float = ELO_BASE) -> dict[str, float]:
    """Bradley–Terry ratings on the Elo scale, fitted with choix's iterative Luce spectral ranking
    (``ilsr_pairwise_dense``, the dense-matrix form of ``ilsr_pairwise``).

    The model: ``P(i beats j) = 1 / (1 + exp(θ_j − θ_i))`` with log-strengths ``θ`` (mean zero, as
    choix returns them). A rating is ``initial + θ · scale / ln(base)``, so rating gaps mean the
    same as Elo's: 400 points <=> 10:1 odds. A tie counts as half a win each way (:func:`win_matrix`).

    alpha: choix's regularisation (a small rate added between every pair of items in the LSR
        Markov chain). It keeps every rating finite when an item never lost (or never won), which
        is common in per-task tournaments, and joins items that never met; a small value (0.01)
        barely moves ratings that the data do determine. Must be > 0 unless every item has both
        won and lost within one connected set of matches.
    initial, scale, base: the Elo scale.
    """
    order = item_order(matches, items)
    if not order:
        return {}
    if len(order) == 1 or not matches:
        return {name: float(initial) for name in order}
    import choix  # choix imports scipy; keep it off the import path of `import rankkit`

    index = {name: i for i, name in enumerate(order)}
    params = choix.ilsr_pairwise_dense(win_matrix(matches, index), alpha=alpha, max_iter=1000)
    params = np.asarray(params) - np.mean(params)
    factor = scale / math.log(base)
    return {name: float(initial + factor * params[index[name]]) for name in order}


# ---------------------------------------------------------------------------------------------
# Win rates


def win_rates(matches: Sequence[MatchRecord], items: Sequence[str] | None = None) -> dict[str, float]:
    """The share of points each item scored in the matches it played (a tie is half a point).

    An item that played no match gets NaN. This is the anchored-leaderboard statistic when every
    match is against the same anchor.
    """
    order = item_order(matches, items)
    points = dict.fromkeys(order, 0.0)
    played = dict.fromkeys(order, 0)
    for a, b, outcome in matches:
        outcome = _check_outcome(outcome)
        points[a] += outcome
        points[b] += 1.0 - outcome
        played[a] += 1
        played[b] += 1
    return {name: points[name] / played[name] if played[name] else math.nan for name in order}


# ---------------------------------------------------------------------------------------------
# Bootstrap


@dataclass(frozen=True)
class RatingInterval:
    """A rating from all the matches and a percentile bootstrap interval around it."""

    rating: float
    low: float
    high: float


def bootstrap(method: RatingFunction, matches: Sequence[MatchRecord], items: Sequence[str] | None = None,
              rounds: int = 200, seed: int | random.Random = 0, confidence: float = 0.95,
              **method_options: object) -> dict[str, RatingInterval]:
    """Percentile bootstrap intervals for any rating function of this module.

    Each round draws ``len(matches)`` matches with replacement, rates them with
    ``method(sample, items=..., **method_options)``, and the interval of an item is the central
    ``confidence`` share of its ratings over the rounds (2.5th–97.5th percentiles for 95%).
    ``rating`` is ``method`` on all the matches. Items that a resample leaves without a match keep
    whatever the method gives them then (the initial rating for Elo/BT, and NaN for win rates, which
    ``nanpercentile`` skips).

    method: e.g. :func:`bradley_terry`, :func:`elo_over_permutations`, :func:`win_rates`.
    rounds: number of resamples.
    seed: an int, or a ``random.Random`` to draw the resamples from.
    confidence: the interval's coverage, in (0, 1).
    """
    if rounds < 1:
        raise ValueError(f"rounds must be >= 1, got {rounds}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be in (0, 1), got {confidence}")
    order = item_order(matches, items)
    point = method(list(matches), items=order, **method_options)
    rng = seed if isinstance(seed, random.Random) else random.Random(seed)
    samples = np.full((rounds, len(order)), np.nan)
    for r in range(rounds):
        resample = rng.choices(matches, k=len(matches)) if matches else []
        rated = method(resample, items=order, **method_options)
        samples[r] = [rated[name] for name in order]
    tail = (1.0 - confidence) / 2.0 * 100.0
    result = {}
    for column, name in enumerate(order):
        values = samples[:, column]
        if np.all(np.isnan(values)):
            low = high = math.nan
        else:
            low, high = (float(v) for v in np.nanpercentile(values, [tail, 100.0 - tail]))
        result[name] = RatingInterval(rating=float(point[name]), low=low, high=high)
    return result
