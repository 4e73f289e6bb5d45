"""Which pairs ``active`` asks next, and when no further result could change its ranking.

A pair's value under the posterior gap ``θ_i − θ_j ~ N(m, s²)`` is BALD
(:func:`expected_information`) or :func:`order_doubt`; :func:`choose_pairs` picks a batch,
:func:`candidate_pairs` pre-selects when there are too many pairs, and :func:`is_settled` says
when the ranking is settled. numpy, scipy and networkx load on first use.
"""

from __future__ import annotations

import functools
import itertools
import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankkit.stats.ratings import Outcome

if TYPE_CHECKING:  # numpy loads when a task is ranked, not on import
    import numpy as np

#: Pre-selection: each candidate is paired with the candidates up to this many places away in the
#: posterior-mean order, plus as many places as the most-played candidate has opponents.
WINDOW = 4


@functools.cache
def _hermite() -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights (divided by √π) for expectations over a normal gap."""
    import numpy as np

    nodes, weights = np.polynomial.hermite.hermgauss(24)
    return nodes, weights / math.sqrt(math.pi)


def gap_distribution(mean: np.ndarray, cov: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and sd of ``θ_i − θ_j`` for each row (i, j) of ``pairs``."""
    import numpy as np

    i, j = pairs[:, 0], pairs[:, 1]
    variance = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
    return mean[i] - mean[j], np.sqrt(np.maximum(variance, 1e-12))


def _entropy(p: np.ndarray) -> np.ndarray:
    import numpy as np

    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return -(p * np.log(p) + (1.0 - p) * np.log1p(-p))


def expected_information(gap_mean: np.ndarray, gap_sd: np.ndarray) -> np.ndarray:
    """BALD: mutual information (nats) between a match's outcome and θ, for gaps ``N(gap_mean, gap_sd²)``.

    ``H(E[σ(d)]) − E[H(σ(d))]``, expectations by Gauss–Hermite quadrature.
    """
    import numpy as np

    nodes, weights = _hermite()
    gaps = gap_mean[:, None] + math.sqrt(2.0) * gap_sd[:, None] * nodes[None, :]
    win = 1.0 / (1.0 + np.exp(-gaps))
    return _entropy(win @ weights) - _entropy(win) @ weights


def order_doubt(gap_mean: np.ndarray, gap_sd: np.ndarray) -> np.ndarray:
    """Posterior probability that a pair's order by posterior mean is wrong: ``Φ(−|m|/s)``."""
    import numpy as np
    from scipy.special import ndtr

    return ndtr(-np.abs(gap_mean) / gap_sd)


def is_settled(outcomes: Sequence[Outcome], items: Sequence[str]) -> bool:
    """Whether the decisive results (ties left out) admit exactly one order of ``items``: the win graph
    is acyclic and every two neighbours of its topological order are joined by an edge.
    """
    import networkx as nx

    decisive = [(a, b) if outcome == 1.0 else (b, a) for a, b, outcome in outcomes if outcome != 0.5]
    # Cheap necessary condition first: in a unique order all but the last won, all but the first lost.
    if len({w for w, _ in decisive}) != len(items) - 1 or len({l for _, l in decisive}) != len(items) - 1:
        return False
    wins = nx.DiGraph()
    wins.add_nodes_from(items)
    wins.add_edges_from(decisive)
    if not nx.is_directed_acyclic_graph(wins):
        return False
    order = list(nx.topological_sort(wins))
    return all(wins.has_edge(upper, lower) for upper, lower in itertools.pairwise(order))


def pick_batch(
    pairs: Sequence[tuple[int, int]] | np.ndarray, values: np.ndarray, tiebreak: np.ndarray, size: int
) -> list[tuple[int, int]]:
    """The ``size`` most valuable pairs, best first, preferring pairs that share no candidate.

    Values equal to 12 decimals are ordered by the seeded ``tiebreak``, so a fit's last-digit noise
    never decides.
    """
    return [(int(pairs[k][0]), int(pairs[k][1])) for k in _pick_rows(pairs, values, tiebreak, size)]


def _pick_rows(
    pairs: Sequence[tuple[int, int]] | np.ndarray, values: np.ndarray, tiebreak: np.ndarray, size: int
) -> list[int]:
    """:func:`pick_batch` as row numbers of ``pairs``."""
    import numpy as np

    ranked = np.lexsort((tiebreak, -np.round(values, 12)))  # by value descending, then tiebreak
    chosen: list[int] = []
    busy: set[int] = set()
    for k in ranked:  # first pass: disjoint pairs
        if len(chosen) == size:
            break
        pair = (int(pairs[k][0]), int(pairs[k][1]))
        if not busy.intersection(pair):
            chosen.append(int(k))
            busy.update(pair)
    for k in ranked:  # then the best of the rest
        if len(chosen) == size:
            break
        if int(k) not in chosen:
            chosen.append(int(k))
    return chosen


@functools.cache
def _information_bounds(max_sd: float) -> tuple[float, float, np.ndarray]:
    """(m step, s step, table) of :func:`expected_information` on a grid of |m| in [0, 16] and s in
    [0, max_sd]; BALD falls with |m| and rises with s, so a cell's corner bounds the cell.
    """
    import numpy as np

    m_step, s_step = 16.0 / 512, max_sd / 256
    m_grid, s_grid = np.meshgrid(np.arange(513) * m_step, np.arange(257) * s_step, indexing="ij")
    table = expected_information(m_grid.ravel(), s_grid.ravel()).reshape(m_grid.shape)
    # Guard the bound against quadrature wiggles in the last digits: make it monotone outright.
    table = np.maximum.accumulate(table, axis=1)
    table = np.maximum.accumulate(table[::-1], axis=0)[::-1]
    return m_step, s_step, table


def information_bound(gap_mean: np.ndarray, gap_sd: np.ndarray, max_sd: float) -> np.ndarray:
    """An upper bound of :func:`expected_information` per gap from a table (infinite for ``gap_sd`` above ``max_sd``)."""
    import numpy as np

    m_step, s_step, table = _information_bounds(max_sd)
    row = np.minimum(np.floor(np.abs(gap_mean) / m_step), table.shape[0] - 1).astype(np.intp)
    column = np.ceil(gap_sd / s_step)
    inside = column < table.shape[1]
    bound = np.full(len(gap_mean), np.inf)
    bound[inside] = table[row[inside], column[inside].astype(np.intp)]
    return bound


def choose_pairs(
    pairs: np.ndarray,
    mean: np.ndarray,
    cov: np.ndarray,
    tiebreak: np.ndarray,
    size: int,
    criterion: str,
    prior_sd: float,
) -> list[tuple[int, int]]:
    """:func:`pick_batch` over ``pairs`` under ``criterion`` (``information`` or ``order``), computing
    exact BALD values only where they can matter.

    Exact values are computed for pairs whose :func:`information_bound` reaches a threshold (first
    the ``64 · size``-th best bound); a batch of ``size`` disjoint pairs all above it is exactly what
    all pairs would give, otherwise the threshold drops and the candidates widen. ``tiebreak`` is
    the seeded N x N tiebreak matrix; ``prior_sd`` bounds every gap's sd.
    """
    import numpy as np

    gap_mean, gap_sd = gap_distribution(mean, cov, pairs)
    if criterion == "order" or len(pairs) <= 64 * size:
        values = expected_information(gap_mean, gap_sd) if criterion == "information" else order_doubt(gap_mean, gap_sd)
        return pick_batch(pairs, values, tiebreak[pairs[:, 0], pairs[:, 1]], size)
    # Var(θ_i − θ_j) ≤ 2 prior_sd²: the posterior is never wider than the prior.
    bound = information_bound(gap_mean, gap_sd, math.sqrt(2.0) * prior_sd * (1 + 1e-6))
    threshold = np.partition(bound, len(bound) - 64 * size)[len(bound) - 64 * size]
    known = np.full(len(pairs), np.nan)  # exact values computed so far
    while True:
        rows = np.flatnonzero(bound >= threshold)
        missing = rows[np.isnan(known[rows])]
        known[missing] = expected_information(gap_mean[missing], gap_sd[missing])
        values = known[rows]
        candidates = pairs[rows]
        picked = _pick_rows(candidates, values, tiebreak[candidates[:, 0], candidates[:, 1]], size)
        chosen = [(int(candidates[k, 0]), int(candidates[k, 1])) for k in picked]
        if len(rows) == len(pairs):
            return chosen
        if len({c for pair in chosen for c in pair}) < 2 * size:
            threshold = -np.inf  # the first pass did not fill: it saw every pair, so give it all
            continue
        weakest = float(np.round(values[picked], 12).min())
        if weakest - 1e-9 >= threshold:
            return chosen
        threshold = weakest - 1e-9


def candidate_pairs(mean: np.ndarray, played: np.ndarray, degree: int) -> np.ndarray:
    """The unplayed pairs (i, j), i < j, at most ``WINDOW + degree`` places apart in the order of
    posterior means: those worth scoring when there are too many to score all.

    ``degree`` (the most opponents any candidate has met) widens the window so everyone keeps
    unplayed partners in reach.
    """
    import numpy as np

    order = np.argsort(mean, kind="stable")
    n = len(order)
    rows = [np.stack([order[:-offset], order[offset:]], axis=1) for offset in range(1, min(n, WINDOW + degree + 1))]
    pairs = np.sort(np.concatenate(rows), axis=1)
    return pairs[~played[pairs[:, 0], pairs[:, 1]]]
