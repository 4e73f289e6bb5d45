"""The Laplace-approximated Bradley–Terry posterior over candidate strengths that ``active`` refits.

``P(i beats j) = σ(θ_i − θ_j)``, prior ``N(0, prior_sd² I)``, a tie half a win each way. The
Gaussian's mean is the MAP θ and its covariance the inverse Hessian there (a weighted graph
Laplacian plus the prior's precision). numpy and scipy load on first use.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from rankkit.stats.ratings import Outcome

if TYPE_CHECKING:  # numpy loads when a task is ranked, not on import
    import numpy as np

#: Incremental updates count the mean as the MAP once no gradient entry exceeds this.
GRADIENT_TOLERANCE = 1e-5


class Evidence:
    """The outcomes of a task as arrays, one row per outcome: the row indices of a and b and
    the outcome for a (1, ½ or 0; a tie is half a win each way). Grows as matches are played, into
    buffers that double when full, so adding outcomes costs O(1) each."""

    def __init__(self, n_items: int):
        import numpy as np

        self.n_items = n_items
        self._first = np.zeros(16, dtype=np.intp)
        self._second = np.zeros(16, dtype=np.intp)
        self._outcome = np.zeros(16)
        self._size = 0

    def add(self, first: int, second: int, outcome: float) -> None:
        """Add one outcome: rows ``first`` and ``second``, ``outcome`` for first (1, ½ or 0)."""
        import numpy as np

        if self._size == len(self._outcome):
            self._first, self._second, self._outcome = (
                np.concatenate([buffer, np.zeros_like(buffer)]) for buffer in (self._first, self._second, self._outcome)
            )
        self._first[self._size], self._second[self._size], self._outcome[self._size] = first, second, outcome
        self._size += 1

    def __len__(self) -> int:
        return self._size

    @property
    def arrays(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(rows of a, rows of b, outcomes for a), views of the outcomes added so far."""
        return self._first[: self._size], self._second[: self._size], self._outcome[: self._size]

    @classmethod
    def from_outcomes(cls, outcomes: Sequence[Outcome], items: Sequence[str]) -> Evidence:
        """The evidence of ``(a, b, outcome for a)`` by name, rows in the order of ``items``."""
        index = {name: i for i, name in enumerate(items)}
        evidence = cls(len(items))
        for a, b, outcome in outcomes:
            evidence.add(index[a], index[b], outcome)
        return evidence


def _sum_at(index: np.ndarray, weights: np.ndarray, size: int) -> np.ndarray:
    """``out[k] = Σ weights[index == k]`` for k < size, as floats (also when there are no weights)."""
    import numpy as np

    return np.bincount(index, weights, size).astype(float, copy=False)


def bt_log_posterior(theta: np.ndarray, evidence: Evidence, prior_sd: float) -> tuple[float, np.ndarray, np.ndarray]:
    """Negative log-posterior of Bradley–Terry strengths, its gradient, and each outcome's curvature
    ``c_r = P_r (1 − P_r)`` (its Hessian term is ``c_r (e_a − e_b)(e_a − e_b)ᵀ``). O(outcomes + N).
    """
    import numpy as np

    first, second, outcome = evidence.arrays
    n = evidence.n_items
    gaps = theta[first] - theta[second]
    value = float(
        np.sum(outcome * np.logaddexp(0.0, -gaps) + (1.0 - outcome) * np.logaddexp(0.0, gaps))
        + theta @ theta / (2.0 * prior_sd**2)
    )
    beats = 1.0 / (1.0 + np.exp(-gaps))
    surprise = beats - outcome
    gradient = _sum_at(first, surprise, n) - _sum_at(second, surprise, n) + theta / prior_sd**2
    return value, gradient, beats * (1.0 - beats)


def posterior_hessian(evidence: Evidence, curvature: np.ndarray, prior_sd: float) -> np.ndarray:
    """The dense N x N Hessian ``Σ_r c_r (e_a − e_b)(e_a − e_b)ᵀ + I / prior_sd²``."""
    import numpy as np

    first, second, _ = evidence.arrays
    n = evidence.n_items
    cells = n * n
    hessian = -_sum_at(first * n + second, curvature, cells) - _sum_at(second * n + first, curvature, cells)
    hessian = hessian.reshape(n, n)
    hessian[np.diag_indices(n)] += _sum_at(first, curvature, n) + _sum_at(second, curvature, n) + 1.0 / prior_sd**2
    return hessian


def _newton(
    theta: np.ndarray, evidence: Evidence, prior_sd: float, direction, tolerance: float, max_steps: int = 100
) -> np.ndarray:
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
    """(mean, covariance): the MAP by Newton's method (Cholesky solves) from ``start``, and the inverse Hessian there."""
    import numpy as np
    from scipy.linalg import cho_factor, cho_solve

    def newton_step(theta: np.ndarray, gradient: np.ndarray, curvature: np.ndarray) -> np.ndarray:
        return cho_solve(cho_factor(posterior_hessian(evidence, curvature, prior_sd)), gradient)

    mean = (
        _newton(np.asarray(start, dtype=float).copy(), evidence, prior_sd, newton_step, 1e-10)
        if len(evidence)
        else np.zeros(evidence.n_items)
    )
    curvature = bt_log_posterior(mean, evidence, prior_sd)[2]
    return mean, np.linalg.inv(posterior_hessian(evidence, curvature, prior_sd))


def bt_posterior(
    outcomes: Sequence[Outcome], items: Sequence[str], prior_sd: float, start: np.ndarray | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of the Bradley–Terry posterior: (mean, covariance) of θ, rows in the order
    of ``items``; ``outcomes`` are ``(a, b, outcome for a)`` by name.

    ``start`` is where Newton's method starts (the previous mean makes a refit quick; None: zeros).
    """
    import numpy as np

    start = np.zeros(len(items)) if start is None else start
    return exact_posterior(Evidence.from_outcomes(outcomes, items), prior_sd, start)


def _line_minimum(theta: np.ndarray, direction: np.ndarray, evidence: Evidence, prior_sd: float) -> np.ndarray:
    """``θ − t·direction`` at the t minimising :func:`bt_log_posterior` along that line, by
    one-dimensional Newton steps (O(outcomes + N) each; the line's second derivative
    ``Σ_r c_r (v_a − v_b)² + |v|² / prior_sd²`` is positive, so the steps are safe)."""
    import numpy as np

    first, second, outcome = evidence.arrays
    spread = direction[first] - direction[second]
    length = float(direction @ direction) / prior_sd**2
    t = 0.0
    for _ in range(50):
        point = theta - t * direction
        beats = 1.0 / (1.0 + np.exp(-(point[first] - point[second])))
        slope = -(float((beats - outcome) @ spread) + float(direction @ point) / prior_sd**2)
        bend = float((beats * (1.0 - beats)) @ (spread * spread)) + length
        move = slope / bend
        t -= move
        if abs(move) * float(np.abs(direction).max(initial=0.0)) < 1e-12:
            break
    return theta - t * direction


def _newton_direction(evidence: Evidence, curvature: np.ndarray, gradient: np.ndarray, prior_sd: float) -> np.ndarray:
    """``H⁻¹ g`` to 0.1% by scipy's conjugate gradients on the sparse Hessian (each product
    O(outcomes + N); Jacobi preconditioner)."""
    from scipy.sparse.linalg import LinearOperator, cg

    first, second, _ = evidence.arrays
    n = evidence.n_items
    precision = 1.0 / prior_sd**2

    def hessian_times(vector: np.ndarray) -> np.ndarray:
        weighted = curvature * (vector[first] - vector[second])
        return _sum_at(first, weighted, n) - _sum_at(second, weighted, n) + precision * vector

    diagonal = _sum_at(first, curvature, n) + _sum_at(second, curvature, n) + precision
    direction, _ = cg(
        LinearOperator((n, n), matvec=hessian_times, dtype=float),
        gradient,
        rtol=1e-3,
        maxiter=200,
        M=LinearOperator((n, n), matvec=lambda vector: vector / diagonal, dtype=float),
    )
    return direction


class Posterior:
    """The Laplace posterior of one task's strengths, kept up to date as matches are played.

    With ``exact`` every :meth:`update` refits (:func:`exact_posterior`). Otherwise an update adds the
    new outcomes' curvature by Sherman–Morrison rank-one updates (O(N²)) and moves the mean to the
    MAP (gradient below :data:`GRADIENT_TOLERANCE`) by Newton directions with an exact line search;
    the covariance is recomputed exactly every ``N // 16`` updates, as earlier curvature drifts.
    """

    def __init__(self, n_items: int, prior_sd: float, exact: bool = True):
        import numpy as np

        self.evidence = Evidence(n_items)
        self.prior_sd = prior_sd
        self.exact = exact
        self.refresh_every = max(1, n_items // 16)
        self.mean = np.zeros(n_items)
        self.cov = np.eye(n_items) * prior_sd**2
        self._since_refresh = 0

    def update(self, new_outcomes: Sequence[tuple[int, int, float]]) -> None:
        """Add outcomes (row of a, row of b, outcome for a) and update mean and covariance."""
        import numpy as np

        for first, second, outcome in new_outcomes:
            self.evidence.add(first, second, outcome)
        if self.exact:
            self.mean, self.cov = exact_posterior(self.evidence, self.prior_sd, self.mean)
            return
        for first, second, _ in new_outcomes:
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
        factor, info = lapack.dpotrf(posterior_hessian(self.evidence, curvature, self.prior_sd), lower=1, overwrite_a=1)
        if not info:
            inverse, info = lapack.dpotri(factor, lower=1, overwrite_c=1)
        if info:
            raise np.linalg.LinAlgError(f"posterior Hessian not positive definite (LAPACK info {info})")
        upper = np.triu_indices(len(inverse), 1)
        inverse[upper] = inverse.T[upper]  # dpotri fills the lower triangle only
        self.cov = inverse
        self._since_refresh = 0


def choice_posterior(
    choices: Sequence[tuple[Sequence[int], int]],
    n_items: int,
    prior_sd: float,
    start: np.ndarray | None = None,
    weights: Sequence[float] | None = None,
) -> tuple[np.ndarray, np.ndarray]:
    """Laplace approximation of the posterior of first-choice (multinomial logit) log-strengths:
    (mean, covariance).

    A choice ``(members, chosen)`` (rows shown together, the row picked) has likelihood
    ``exp(θ_chosen) / Σ_members exp(θ_m)``; with two members a Bradley–Terry outcome. Prior
    ``N(0, prior_sd² I)``; Newton's method from ``start`` (None: zeros). ``weights``: each choice's
    share of a vote (None: one each), e.g. :func:`rankkit.strategies._pair_effects.choice_weights`.

    Examples
    --------
    >>> mean, cov = choice_posterior([((0, 1, 2), 0)] * 5, 3, 2.0)
    >>> bool(mean[0] > mean[1] == mean[2]) or bool(mean[0] > max(mean[1], mean[2]))
    True
    """
    import numpy as np

    theta = np.zeros(n_items) if start is None else np.asarray(start, dtype=float).copy()
    precision = 1.0 / prior_sd**2
    # The choices as arrays, one block per group size: members (m, size) and the chosen one's column.
    by_size: dict[int, tuple[list[Sequence[int]], list[int], list[float]]] = {}
    for (members, chosen), weight in zip(choices, [1.0] * len(choices) if weights is None else weights):
        rows, columns, shares = by_size.setdefault(len(members), ([], [], []))
        rows.append(members)
        columns.append(list(members).index(chosen))
        shares.append(weight)
    blocks = [
        (np.asarray(rows, dtype=np.intp), np.asarray(columns, dtype=np.intp), np.asarray(shares, dtype=float))
        for rows, columns, shares in by_size.values()
    ]

    def terms(theta: np.ndarray, hessian: bool) -> tuple[float, np.ndarray, np.ndarray | None]:
        value = float(theta @ theta) * precision / 2
        gradient = theta * precision
        matrix = np.eye(n_items) * precision if hessian else None
        for rows, columns, shares in blocks:
            logits = theta[rows]
            top = logits.max(axis=1, keepdims=True)
            exps = np.exp(logits - top)
            total = exps.sum(axis=1, keepdims=True)
            chosen = logits[np.arange(len(rows)), columns]
            value += float((shares * (top[:, 0] + np.log(total[:, 0]) - chosen)).sum())
            p = exps / total
            np.add.at(gradient, rows, shares[:, None] * p)
            np.add.at(gradient, rows[np.arange(len(rows)), columns], -shares)
            if matrix is not None:
                block = -p[:, :, None] * p[:, None, :]
                block[:, np.arange(rows.shape[1]), np.arange(rows.shape[1])] += p
                np.add.at(matrix, (rows[:, :, None], rows[:, None, :]), shares[:, None, None] * block)
        return value, gradient, matrix

    for _ in range(100):
        value, gradient, hessian = terms(theta, True)
        step = np.linalg.solve(hessian, gradient)
        size = 1.0
        while size > 1e-12 and terms(theta - size * step, False)[0] > value - 1e-4 * size * float(gradient @ step):
            size /= 2
        theta = theta - size * step
        if size * float(np.abs(step).max(initial=0.0)) < 1e-10:
            break
    return theta, np.linalg.inv(terms(theta, True)[2])
