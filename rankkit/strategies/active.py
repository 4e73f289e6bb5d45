"""``active``: active Bradley–Terry — ask the judge only the comparisons worth asking.

**Model.** Bradley–Terry: candidate i has a log-strength θ_i and ``P(i beats j) = σ(θ_i − θ_j)``
with σ the logistic function. θ has a Gaussian prior ``N(0, prior_sd² I)``. After the duels played
so far, the posterior over θ is approximated by a Gaussian (Laplace's method): its mean is the
maximum a posteriori θ and its covariance the inverse Hessian of the negative log-posterior there
(:func:`bt_posterior`). A tie counts as half a win each way, and with ``debias`` each order of a
pair is a match of its own, as in ``bt``. (choix's ``ep_pairwise`` gives an EP posterior too, but
it is about ten times slower per update than choix's own MAP fit and hundreds of times slower
than this vectorised one, and it draws its update order from NumPy's global random state, which
would break determinism by seed.)

**Which pair next.** For a pair (i, j) not yet played the posterior gives the strength gap
``d = θ_i − θ_j ~ N(m, s²)``. Two criteria:

* ``information`` (default) — the expected information the outcome gives about θ (BALD, Houlsby
  et al. 2011): ``H(E[σ(d)]) − E[H(σ(d))]`` with H the binary entropy, the expectations taken by
  Gauss–Hermite quadrature. It is large when the outcome is uncertain *because θ is uncertain*,
  not merely because the two are evenly matched; so it explores poorly measured candidates and
  then refines close calls.
* ``order`` — the posterior probability that the pair's current order is wrong, ``Φ(−|m|/s)``: it
  spends the budget on the pairs whose order in the ranking is least certain.

Each step picks the ``batch`` best pairs (best first, preferring pairs that share no candidate,
so one batch measures many candidates), plays them in one ``duel_many`` call, and refits. Ties
between equally valuable pairs are broken by a seeded random order. No pair is played twice.

**Stopping rule.** It stops when the budget is spent, when every pair has been played, or — with
``settle`` (the default) — when the ranking is *settled*: the decisive results so far contain no
cycle and admit exactly one order (every two neighbours in that order have met, and the winner
was the one ranked higher). Every further result is then already implied by transitivity, so
only a judge's mistake could change the ranking. (A rule on the posterior, such as "every two
neighbours are ordered right with probability 0.99", never fires here: the Bradley–Terry posterior
cannot become that sure of a pair met only once, and pairs are never repeated.) Ties order
nothing, so a tie between neighbours keeps the ranking unsettled.

**Scores** (``aggregate``). ``bt`` (default): the Bradley–Terry ratings (Elo scale) of all the
judgments, from :func:`rankkit.ratings.bradley_terry` — the same aggregation as ``swiss`` and
all-pairs ``bt``; its near-maximum-likelihood fit respects a settled order, where the prior-shrunk
posterior mean used for choosing pairs sometimes does not (a candidate with one win over a
much-played one is pulled toward the middle). ``grades``: the mean grade each candidate received
(the knockout paper's score averaging), which also uses how much better an answer was graded.
``extras`` give each candidate's posterior standard deviation (Elo scale) and why it stopped.

**Computation** (``benchmarks/results/scaling.md``). Everything works on arrays of the records
(:class:`Evidence`): the gradient is O(records + N) and the Hessian a weighted graph Laplacian plus
the prior's precision. Up to :data:`EXACT_UP_TO` (256) candidates each step refits exactly:
Newton's method from the previous mean (Cholesky solves) to the MAP, the covariance as the
inverse Hessian there, and every unplayed pair is a candidate. The expensive BALD quadrature is
computed only for the pairs whose cheap upper bound (a precomputed table, :func:`choose_pairs`)
could still beat the batch chosen, which provably gives the batch that scoring every pair gives.
Above 256 candidates a refit (O(N³)) every step is too slow, so the posterior is updated
incrementally (:class:`Posterior`: a rank-one covariance update per record, the mean moved to the
exact MAP by line searches along ``Σ·g``, an exact covariance every N/16 steps) and the candidate
pairs are pre-selected: each candidate with its neighbours in the posterior-mean order
(:func:`candidate_pairs`). These two approximations can choose other pairs than an exact refit
would; on 200 candidates they rank as well (the scaling benchmark compares the two). BLAS runs
single-threaded inside :meth:`ActiveStrategy.rank`: the matrices are small and a multi-threaded
BLAS waiting for busy cores was 10–50 times slower.
"""

from __future__ import annotations

import functools
import math
import random
from dataclasses import dataclass
from typing import TYPE_CHECKING, Sequence

from rankkit.ratings import ELO_BASE, ELO_SCALE, MatchRecord, bradley_terry
from rankkit.specs import SpecError
from rankkit.strategies._budget import (
    check_budget,
    duel_records,
    mean_grades,
    presented,
    task_duels,
)
from rankkit.strategies._graded import corrected_grades
from rankkit.strategies.base import Plan, Ranking, Strategy, register
from rankkit.tasks import Task

if TYPE_CHECKING:  # numpy and rankkit.matches (networkx) load when a task is ranked, not on import
    import numpy as np

    from rankkit.matches import Duel, MatchSource

CRITERIA = ("information", "order")
AGGREGATES = ("bt", "grades", "corrected")

#: Up to this many candidates every step refits the posterior exactly and scores every unplayed
#: pair; above it the posterior is updated incrementally and only pre-selected pairs are scored
#: (see "Computation" in the module docstring).
EXACT_UP_TO = 256

#: Above EXACT_UP_TO the mean counts as the MAP once no gradient entry exceeds this (the strengths
#: are then within about prior_sd² times it of the MAP).
GRADIENT_TOLERANCE = 1e-5

#: Pre-selection: each candidate is paired with the candidates up to this many places away in the
#: posterior-mean order, plus as many places as the most-played candidate has opponents.
WINDOW = 4


@functools.cache
def _hermite() -> tuple[np.ndarray, np.ndarray]:
    """Gauss–Hermite nodes and weights (divided by √π) for expectations over a normal gap."""
    import numpy as np

    nodes, weights = np.polynomial.hermite.hermgauss(24)
    return nodes, weights / math.sqrt(math.pi)


class Evidence:
    """The match records of a task as arrays, one row per record: the row indices of a and b and
    the outcome for a (1, ½ or 0; a tie is half a win each way). Grows as duels are played, into
    buffers that double when full, so adding records costs O(1) each."""

    def __init__(self, n_items: int):
        import numpy as np

        self.n_items = n_items
        self._first = np.zeros(16, dtype=np.intp)
        self._second = np.zeros(16, dtype=np.intp)
        self._outcome = np.zeros(16)
        self._size = 0

    def add(self, first: int, second: int, outcome: float) -> None:
        import numpy as np

        if self._size == len(self._outcome):
            self._first, self._second, self._outcome = (np.concatenate([buffer, np.zeros_like(buffer)])
                                                         for buffer in (self._first, self._second, self._outcome))
        self._first[self._size], self._second[self._size], self._outcome[self._size] = first, second, outcome
        self._size += 1

    def __len__(self) -> int:
        return self._size

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows of a, rows of b, outcomes for a), views of the records added so far."""
        return self._first[:self._size], self._second[:self._size], self._outcome[:self._size]

    @classmethod
    def from_records(cls, records: Sequence[MatchRecord], items: Sequence[str]) -> "Evidence":
        index = {name: i for i, name in enumerate(items)}
        evidence = cls(len(items))
        for a, b, outcome in records:
            evidence.add(index[a], index[b], outcome)
        return evidence


def _sum_at(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """``out[k] = Σ weights[index == k]`` for k < size, as floats (also when there are no weights)."""
    import numpy as np

    return np.bincount(index, weights, size).astype(float, copy=False)


def bt_log_posterior(theta: np.ndarray, evidence: Evidence, prior_sd: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Negative log-posterior of Bradley–Terry strengths, its gradient, and each record's curvature.

    ``−log p(θ | records) = Σ_r [s_r · log(1 + e^(−d_r)) + (1 − s_r) · log(1 + e^(d_r))] + |θ|² / (2 prior_sd²)
    + const`` with ``d_r = θ_a − θ_b`` and ``s_r`` the outcome for a. With ``P_r = σ(d_r)`` the
    gradient is ``P_r − s_r`` at a and ``s_r − P_r`` at b (plus ``θ / prior_sd²``), and record r
    adds its curvature ``c_r = P_r (1 − P_r)`` to the Hessian as ``c_r (e_a − e_b)(e_a − e_b)ᵀ``
    (:func:`posterior_hessian`). Every term costs O(records + N).
    """
    import numpy as np

    first, second, outcome = evidence.arrays
    n = evidence.n_items
    gaps = theta[first] - theta[second]
    value = float(np.sum(outcome * np.logaddexp(0.0, -gaps) + (1.0 - outcome) * np.logaddexp(0.0, gaps))
                  + theta @ theta / (2.0 * prior_sd ** 2))
    beats = 1.0 / (1.0 + np.exp(-gaps))
    surprise = beats - outcome
    gradient = _sum_at(first, surprise, n) - _sum_at(second, surprise, n) + theta / prior_sd ** 2
    return value, gradient, beats * (1.0 - beats)


def posterior_hessian(evidence: Evidence, curvature: np.ndarray, prior_sd: float) -> np.ndarray:
    """The dense Hessian ``Σ_r c_r (e_a − e_b)(e_a − e_b)ᵀ + I / prior_sd²`` (a weighted graph
    Laplacian plus the prior's precision)."""
    import numpy as np

    first, second, _ = evidence.arrays
    n = evidence.n_items
    cells = n * n
    hessian = -_sum_at(first * n + second, curvature, cells) - _sum_at(second * n + first, curvature, cells)
    hessian = hessian.reshape(n, n)
    hessian[np.diag_indices(n)] += _sum_at(first, curvature, n) + _sum_at(second, curvature, n) + 1.0 / prior_sd ** 2
    return hessian


def _newton(theta: np.ndarray, evidence: Evidence, prior_sd: float, direction, tolerance: float,
            max_steps: int = 100) -> np.ndarray:
    """Minimise :func:`bt_log_posterior` from ``theta`` by (quasi-)Newton steps ``direction(θ, g, c)``
    with a backtracking line search (the objective is strictly convex, so this converges); stops
    when a step moves no strength by more than ``tolerance``."""
    for _ in range(max_steps):
        value, gradient, curvature = bt_log_posterior(theta, evidence, prior_sd)
        step = direction(theta, gradient, curvature)
        slope = float(gradient @ step)
        size = 1.0
        while size > 1e-12:
            trial = theta - size * step
            if bt_log_posterior(trial, evidence, prior_sd)[0] <= value - 1e-4 * size * slope:
                break
            size /= 2
        theta = trial
        if size * float(abs(step).max(initial=0.0)) < tolerance:
            break
    return theta


def exact_posterior(evidence: Evidence, prior_sd: float, start: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation: the MAP strengths by Newton's method (Cholesky solves of the
    Hessian) from ``start``, and the covariance = inverse Hessian there."""
    import numpy as np
    from scipy.linalg import cho_factor, cho_solve

    def newton_step(theta, gradient, curvature):
        return cho_solve(cho_factor(posterior_hessian(evidence, curvature, prior_sd)), gradient)

    mean = _newton(np.asarray(start, dtype=float).copy(), evidence, prior_sd, newton_step, 1e-10) if len(evidence) \
        else np.zeros(evidence.n_items)
    curvature = bt_log_posterior(mean, evidence, prior_sd)[2]
    return mean, np.linalg.inv(posterior_hessian(evidence, curvature, prior_sd))


def bt_posterior(records: Sequence[MatchRecord], items: Sequence[str], prior_sd: float,
                 start: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of the Bradley–Terry posterior: (mean, covariance) of θ over ``items``.

    The prior is ``θ ~ N(0, prior_sd² I)``; a record ``(a, b, s)`` has likelihood
    ``σ(θ_a − θ_b)^s · σ(θ_b − θ_a)^(1−s)`` (a tie, s = ½, is half a win each way). The mean is the
    maximum a posteriori θ (Newton's method on :func:`bt_log_posterior`, which is strictly
    convex); the covariance is the inverse Hessian there.

    start: where Newton's method starts (the previous posterior mean, so that a refit after a few
        more duels takes a few steps); zeros when None.
    """
    import numpy as np

    start = np.zeros(len(items)) if start is None else start
    return exact_posterior(Evidence.from_records(records, items), prior_sd, start)


def gap_distribution(mean: np.ndarray, cov: np.ndarray, pairs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Posterior mean and standard deviation of ``θ_i − θ_j`` for each row (i, j) of ``pairs``."""
    import numpy as np

    i, j = pairs[:, 0], pairs[:, 1]
    variance = cov[i, i] + cov[j, j] - 2.0 * cov[i, j]
    return mean[i] - mean[j], np.sqrt(np.maximum(variance, 1e-12))


def _entropy(p: np.ndarray) -> np.ndarray:
    import numpy as np

    p = np.clip(p, 1e-12, 1.0 - 1e-12)
    return -(p * np.log(p) + (1.0 - p) * np.log1p(-p))


def expected_information(gap_mean: np.ndarray, gap_sd: np.ndarray) -> np.ndarray:
    """BALD: mutual information (nats) between a duel's outcome and θ, for gaps ``N(gap_mean, gap_sd²)``.

    ``H(E[σ(d)]) − E[H(σ(d))]``: the entropy of the predicted outcome minus the entropy the outcome
    would keep if θ were known. Expectations by Gauss–Hermite quadrature.
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


def is_settled(records: Sequence[MatchRecord], items: Sequence[str]) -> bool:
    """Whether the decisive results admit exactly one order of ``items``.

    True when the win graph (an edge winner -> loser per decisive record; ties are left out) has
    no cycle and its topological order is unique, which holds exactly when every two neighbours
    in that order are joined by an edge.
    """
    import networkx as nx

    decisive = [(a, b) if outcome == 1.0 else (b, a) for a, b, outcome in records if outcome != 0.5]
    # Cheap necessary condition first: along a unique order every candidate but the last has
    # beaten someone and every candidate but the first has lost.
    if len({w for w, _ in decisive}) != len(items) - 1 or len({l for _, l in decisive}) != len(items) - 1:
        return False
    wins = nx.DiGraph()
    wins.add_nodes_from(items)
    wins.add_edges_from(decisive)
    if not nx.is_directed_acyclic_graph(wins):
        return False
    order = list(nx.topological_sort(wins))
    return all(wins.has_edge(upper, lower) for upper, lower in zip(order, order[1:]))


def pick_batch(pairs: Sequence[tuple[int, int]] | np.ndarray, values: np.ndarray, tiebreak: np.ndarray,
               size: int) -> list[tuple[int, int]]:
    """The ``size`` most valuable pairs, best first, preferring pairs that share no candidate.

    pairs: (i, j) rows; values, tiebreak: one number per pair. Values equal to 12 decimals count
    as equal and the seeded ``tiebreak`` numbers order them, so a fit's last-digit noise never decides.
    """
    return [(int(pairs[k][0]), int(pairs[k][1])) for k in _pick_rows(pairs, values, tiebreak, size)]


def _pick_rows(pairs: Sequence[tuple[int, int]] | np.ndarray, values: np.ndarray, tiebreak: np.ndarray,
               size: int) -> list[int]:
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
    """A table of :func:`expected_information` on a grid of gap means |m| in [0, 16] and standard
    deviations s in [0, max_sd]: (m step, s step, table). BALD falls as |m| grows and rises with
    s, so the table at a cell's smallest |m| and largest s bounds every value inside the cell."""
    import numpy as np

    m_step, s_step = 16.0 / 512, max_sd / 256
    m_grid, s_grid = np.meshgrid(np.arange(513) * m_step, np.arange(257) * s_step, indexing="ij")
    table = expected_information(m_grid.ravel(), s_grid.ravel()).reshape(m_grid.shape)
    # Guard the bound against quadrature wiggles in the last digits: make it monotone outright.
    table = np.maximum.accumulate(table, axis=1)
    table = np.maximum.accumulate(table[::-1], axis=0)[::-1]
    return m_step, s_step, table


def information_bound(gap_mean: np.ndarray, gap_sd: np.ndarray, max_sd: float) -> np.ndarray:
    """An upper bound of :func:`expected_information` for each gap, from a precomputed table
    (``max_sd`` bounds every gap_sd; larger ones get an infinite bound)."""
    import numpy as np

    m_step, s_step, table = _information_bounds(max_sd)
    row = np.minimum(np.floor(np.abs(gap_mean) / m_step), table.shape[0] - 1).astype(np.intp)
    column = np.ceil(gap_sd / s_step)
    inside = column < table.shape[1]
    bound = np.full(len(gap_mean), np.inf)
    bound[inside] = table[row[inside], column[inside].astype(np.intp)]
    return bound


def choose_pairs(pairs: np.ndarray, mean: np.ndarray, cov: np.ndarray, tiebreak: np.ndarray, size: int,
                 criterion: str, prior_sd: float) -> list[tuple[int, int]]:
    """:func:`pick_batch` over ``pairs`` under ``criterion``, computing the expensive BALD values
    only where they can matter.

    Every pair gets a cheap upper bound (:func:`information_bound`); the exact value is computed
    for the pairs whose bound reaches a threshold, starting at the ``64 · size``-th best bound. If
    the batch chosen among those consists of ``size`` disjoint pairs worth at least the threshold
    (plus 1e-9, far above the 12-decimal rounding of :func:`pick_batch`), no pair left out could
    have ranked before any of them, so the batch is exactly the one all pairs would give;
    otherwise the threshold drops to the weakest chosen value and the candidates widen.

    tiebreak: the seeded N x N tiebreak numbers.
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


def _line_minimum(theta: np.ndarray, direction: np.ndarray, evidence: Evidence, prior_sd: float) -> np.ndarray:
    """``θ − t·direction`` at the t minimising :func:`bt_log_posterior` along that line, by
    one-dimensional Newton steps (O(records + N) each; the line's second derivative
    ``Σ_r c_r (v_a − v_b)² + |v|² / prior_sd²`` is positive, so the steps are safe)."""
    import numpy as np

    first, second, outcome = evidence.arrays
    spread = direction[first] - direction[second]
    length = float(direction @ direction) / prior_sd ** 2
    t = 0.0
    for _ in range(50):
        point = theta - t * direction
        beats = 1.0 / (1.0 + np.exp(-(point[first] - point[second])))
        slope = -(float((beats - outcome) @ spread) + float(direction @ point) / prior_sd ** 2)
        bend = float((beats * (1.0 - beats)) @ (spread * spread)) + length
        move = slope / bend
        t -= move
        if abs(move) * float(np.abs(direction).max(initial=0.0)) < 1e-12:
            break
    return theta - t * direction


def _newton_direction(evidence: Evidence, curvature: np.ndarray, gradient: np.ndarray, prior_sd: float) -> np.ndarray:
    """``H⁻¹ g`` to 0.1% by scipy's conjugate gradients on the sparse Hessian (each product
    O(records + N); Jacobi preconditioner)."""
    import numpy as np
    from scipy.sparse.linalg import LinearOperator, cg

    first, second, _ = evidence.arrays
    n = evidence.n_items
    precision = 1.0 / prior_sd ** 2

    def hessian_times(vector: np.ndarray) -> np.ndarray:
        weighted = curvature * (vector[first] - vector[second])
        return _sum_at(first, weighted, n) - _sum_at(second, weighted, n) + precision * vector

    diagonal = _sum_at(first, curvature, n) + _sum_at(second, curvature, n) + precision
    direction, _ = cg(LinearOperator((n, n), matvec=hessian_times, dtype=float), gradient, rtol=1e-3, maxiter=200,
                      M=LinearOperator((n, n), matvec=lambda vector: vector / diagonal, dtype=float))
    return direction


class Posterior:
    """The Laplace posterior of one task's strengths, kept up to date as duels are played.

    Up to :data:`EXACT_UP_TO` candidates every :meth:`update` refits it exactly
    (:func:`exact_posterior`). Above, an update adds each new record's curvature to the covariance
    Σ by a Sherman–Morrison rank-one update (one O(N²) pass), and moves the mean to the exact MAP
    (every gradient entry below :data:`GRADIENT_TOLERANCE`) by Newton directions with an exact
    line search (:func:`_line_minimum`). The gradient at the previous MAP is non-zero only at the
    new records' candidates, so the first direction ``Σ·g`` needs only their columns of Σ (O(N));
    once the gradient has spread, conjugate gradients on the sparse Hessian give the direction
    (:func:`_newton_direction`, O(records + N) per product). Every ``N // 16`` updates the covariance is
    recomputed exactly, so the curvature of earlier records, which drifts as the mean moves, is
    never stale for long.
    """

    def __init__(self, n_items: int, prior_sd: float):
        import numpy as np

        self.evidence = Evidence(n_items)
        self.prior_sd = prior_sd
        self.exact = n_items <= EXACT_UP_TO
        self.refresh_every = max(1, n_items // 16)
        self.mean = np.zeros(n_items)
        self.cov = np.eye(n_items) * prior_sd ** 2
        self._since_refresh = 0

    def update(self, new_records: Sequence[tuple[int, int, float]]) -> None:
        """Add records (row of a, row of b, outcome for a) and update mean and covariance."""
        import numpy as np

        for record in new_records:
            self.evidence.add(*record)
        if self.exact:
            self.mean, self.cov = exact_posterior(self.evidence, self.prior_sd, self.mean)
            return
        for first, second, _ in new_records:
            self._add_curvature(first, second)
        for _ in range(20):
            _, gradient, curvature = bt_log_posterior(self.mean, self.evidence, self.prior_sd)
            support = np.flatnonzero(np.abs(gradient) > GRADIENT_TOLERANCE)
            if not len(support):
                break
            if len(support) * 8 > len(gradient):
                direction = _newton_direction(self.evidence, curvature, gradient, self.prior_sd)
            else:
                direction = self.cov[:, support] @ gradient[support]
            self.mean = _line_minimum(self.mean, direction, self.evidence, self.prior_sd)
        self._since_refresh += 1
        if self._since_refresh >= self.refresh_every:
            self.refresh()

    def _add_curvature(self, first: int, second: int) -> None:
        from scipy.linalg.blas import dger

        p = 1.0 / (1.0 + math.exp(self.mean[second] - self.mean[first]))
        curvature = p * (1.0 - p)
        spread = self.cov[:, first] - self.cov[:, second]  # Σu for u = e_a − e_b
        # (Σ⁻¹ + c u uᵀ)⁻¹ = Σ − c Σu (Σu)ᵀ / (1 + c uᵀΣu); dger updates the matrix in place
        # (Σ is symmetric, so its transpose is the column-major array BLAS wants).
        scale = -curvature / (1.0 + curvature * (spread[first] - spread[second]))
        self.cov = dger(scale, spread, spread, a=self.cov.T, overwrite_a=True).T

    def refresh(self) -> None:
        """Recompute the covariance exactly at the current mean (O(N³))."""
        import numpy as np

        from scipy.linalg import lapack

        curvature = bt_log_posterior(self.mean, self.evidence, self.prior_sd)[2]
        # Cholesky factor and inverse in place: a third of the work of a general inverse.
        factor, info = lapack.dpotrf(posterior_hessian(self.evidence, curvature, self.prior_sd), lower=1,
                                     overwrite_a=1)
        if not info:
            inverse, info = lapack.dpotri(factor, lower=1, overwrite_c=1)
        if info:
            raise np.linalg.LinAlgError(f"posterior Hessian not positive definite (LAPACK info {info})")
        upper = np.triu_indices(len(inverse), 1)
        inverse[upper] = inverse.T[upper]  # dpotri fills the lower triangle only
        self.cov = inverse
        self._since_refresh = 0


def candidate_pairs(mean: np.ndarray, played: np.ndarray, degree: int) -> np.ndarray:
    """The pairs worth scoring above :data:`EXACT_UP_TO` candidates: every unplayed pair of
    candidates at most ``WINDOW + degree`` places apart in the order of posterior means.

    Both criteria prefer pairs whose strengths are close (a small posterior mean gap) and
    uncertain; neighbours in the mean order are the close ones, and widening the window by the
    most opponents any candidate has met keeps unplayed partners in reach of everyone. Rows are
    (i, j) with i < j.
    """
    import numpy as np

    order = np.argsort(mean, kind="stable")
    n = len(order)
    rows = [np.stack([order[:-offset], order[offset:]], axis=1) for offset in range(1, min(n, WINDOW + degree + 1))]
    pairs = np.sort(np.concatenate(rows), axis=1)
    return pairs[~played[pairs[:, 0], pairs[:, 1]]]


@register("active")
@dataclass(frozen=True)
class ActiveStrategy(Strategy):
    """Active Bradley–Terry: play the pair (or batch of pairs) with the highest expected
    information under the current posterior; stop at the budget or when the ranking is settled.

    budget: comparisons per candidate; a task of N candidates gets ``floor(budget · N)``
        comparisons (judgments; a debiased duel costs 2).
    comparisons: exactly this many comparisons per task instead (overrides ``budget``).
    batch: duels chosen per step and sent to the judge together (1 = fully sequential; larger
        batches keep a batching judge busy at some cost in information per duel).
    criterion: ``information`` (expected information about the strengths, BALD) or ``order``
        (probability that the pair is currently ordered wrongly).
    settle: stop early once the decisive results admit exactly one order (no cycle, every two
        neighbours met), since then no further result could change the ranking unless the judge
        errs; false spends the whole budget.
    prior_sd: standard deviation of the Gaussian prior on the log-strengths θ (with 2, two
        candidates one prior sd apart meet at about 88:12 odds).
    debias: play every duel in both orders (thesis §3.2.1), each order a match of its own in the
        fit (as in ``bt``); a duel then costs 2 comparisons. Otherwise each duel is shown in a
        seeded random order.
    aggregate: the final scores: ``bt`` (Bradley–Terry ratings, Elo scale), ``grades`` (mean
        grade received) or ``corrected`` (mean grade corrected for the judge's first-slot effect,
        :func:`rankkit.strategies._graded.corrected_grades`).
    """

    budget: float = 3.0
    comparisons: int | None = None
    batch: int = 1
    criterion: str = "information"
    settle: bool = True
    prior_sd: float = 2.0
    debias: bool = False
    aggregate: str = "bt"

    description = "active Bradley-Terry: most informative pairs first, budget x N comparisons"

    def __post_init__(self) -> None:
        check_budget("active", self.budget, self.comparisons, self.debias)
        if self.batch < 1:
            raise SpecError(f"strategy active: batch must be >= 1, got {self.batch}")
        if self.criterion not in CRITERIA:
            raise SpecError(f"strategy active: criterion must be one of {', '.join(CRITERIA)}, got {self.criterion!r}")
        if self.aggregate not in AGGREGATES:
            raise SpecError(f"strategy active: aggregate must be one of {', '.join(AGGREGATES)}, got {self.aggregate!r}")
        if self.prior_sd <= 0:
            raise SpecError(f"strategy active: prior_sd must be > 0, got {self.prior_sd}")

    def rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        from threadpoolctl import threadpool_limits

        # One BLAS thread: these matrices are small, and a multi-threaded BLAS waiting for busy
        # cores made one 128 x 128 factorisation 10-50 times slower on a shared 2-core machine.
        with threadpool_limits(limits=1, user_api="blas"):
            return self._rank(task, source, rng)

    def _rank(self, task: Task, source: MatchSource, rng: random.Random) -> Ranking:
        import numpy as np

        ids = task.candidate_ids
        n = len(ids)
        index = {cid: k for k, cid in enumerate(ids)}
        duels_left = task_duels("active", task.task_id, n, self.budget, self.comparisons, self.debias)
        unplayed_count = n * (n - 1) // 2
        # One seeded tiebreak number per pair, drawn in the order of itertools.combinations.
        upper = np.triu_indices(n, 1)
        tiebreak = np.zeros((n, n))
        tiebreak[upper] = np.fromiter((rng.random() for _ in range(unplayed_count)), dtype=float, count=unplayed_count)
        played = np.zeros((n, n), dtype=bool)
        opponents = np.zeros(n, dtype=np.intp)
        posterior = Posterior(n, self.prior_sd)
        duels: list[Duel] = []
        records: list[MatchRecord] = []
        # Who has won and who has lost a decisive match: the settle check's cheap precondition.
        winners: set[str] = set()
        losers: set[str] = set()
        steps = 0
        stopped = "budget"
        while duels_left > 0 and unplayed_count:
            if self.settle and len(winners) == n - 1 == len(losers) and is_settled(records, ids):
                stopped = "settled"
                break
            size = min(self.batch, duels_left)
            pairs = None if posterior.exact else candidate_pairs(posterior.mean, played, int(opponents.max()))
            if pairs is None or len(pairs) < size:
                pairs = np.column_stack(np.nonzero(np.triu(~played, 1)))
            chosen = choose_pairs(pairs, posterior.mean, posterior.cov, tiebreak, size, self.criterion, self.prior_sd)
            steps += 1
            shown = [presented(ids[i], ids[j], rng) for i, j in chosen]
            step_duels = source.duel_many(shown, debias=self.debias, round=steps)
            step_records = duel_records(step_duels)
            duels += step_duels
            records += step_records
            for a, b, outcome in step_records:
                if outcome != 0.5:
                    winners.add(a if outcome == 1.0 else b)
                    losers.add(b if outcome == 1.0 else a)
            for i, j in chosen:
                played[i, j] = played[j, i] = True
                opponents[[i, j]] += 1
            unplayed_count -= len(chosen)
            duels_left -= len(chosen)
            posterior.update([(index[a], index[b], outcome) for a, b, outcome in step_records])
        if not unplayed_count and stopped == "budget" and duels_left > 0:
            stopped = "all pairs played"
        if not posterior.exact:
            posterior.refresh()  # report the exact Laplace covariance at the final mean

        factor = ELO_SCALE / math.log(ELO_BASE)  # log-strength -> Elo points
        posterior_sd = np.sqrt(np.diag(posterior.cov)) * factor
        if self.aggregate == "bt":
            scores = bradley_terry(records, items=ids)
        elif self.aggregate == "corrected":
            scores = corrected_grades([m for duel in duels for m in duel.matches], ids, unplayed=sum(task.scale) / 2)
        else:
            scores = mean_grades(duels, ids, unplayed=sum(task.scale) / 2)
        extras = {cid: {"played": int(opponents[k]), "posterior_sd": float(posterior_sd[k]), "steps": steps,
                        "stopped": stopped} for k, cid in enumerate(ids)}
        return Ranking(scores=scores, extras=extras)

    def plan(self, task: Task, rng: random.Random) -> Plan:
        """The budget: exact without ``settle``; with it, an upper bound (it may stop sooner)."""
        n = len(task.candidates)
        duels = task_duels("active", task.task_id, n, self.budget, self.comparisons, self.debias)
        return Plan(comparisons=duels * (2 if self.debias else 1), exact=not self.settle,
                    note="the budget; stops sooner once settled" if self.settle else "the budget")
