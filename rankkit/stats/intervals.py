"""Confidence intervals: one :class:`Interval` type and a percentile :func:`bootstrap` (``docs/analysis.md``)."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # numpy loads where used: `rankkit strategies` imports bt, which imports this module
    import numpy as np

DEFAULT_RESAMPLES = 1000
DEFAULT_LEVEL = 0.95
#: The least share of resamples on which the statistic must be defined for an interval.
MIN_DEFINED = 0.9


@dataclass(frozen=True)
class Interval:
    """A point estimate with a confidence interval (NaN bounds when it cannot be computed).

    Attributes
    ----------
    level
        The interval's coverage (0.95 for a 95% interval).
    n
        How much data the estimate rests on when worth reporting (a share's trials, a ratio's
        denominator); None otherwise.
    """

    estimate: float
    low: float = math.nan
    high: float = math.nan
    level: float = DEFAULT_LEVEL
    n: float | None = None

    @property
    def has_bounds(self) -> bool:
        """Whether both bounds are defined."""
        return not (math.isnan(self.low) or math.isnan(self.high))

    def to_dict(self) -> dict[str, float]:
        """``estimate``, ``low``, ``high`` (NaN kept; :func:`rankkit.runs.analysis.to_jsonable` makes strict JSON)."""
        return {"estimate": self.estimate, "low": self.low, "high": self.high}

    def text(self, digits: int = 3) -> str:
        """``0.812 [0.760, 0.851]`` with ``digits`` decimals, or ``-`` for an undefined estimate."""
        from rankkit.data.formatting import number_text

        if math.isnan(self.estimate):
            return "-"
        if not self.has_bounds:
            return number_text(self.estimate, digits)
        return (
            f"{number_text(self.estimate, digits)} [{number_text(self.low, digits)}, {number_text(self.high, digits)}]"
        )


def resample_indices(n_units: int, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> np.ndarray:
    """A (resamples, n_units) array of unit indices drawn with replacement.

    The same arguments give the same array — the one ``scipy.stats.bootstrap`` draws with
    ``rng=np.random.default_rng(seed)`` — so statistics bootstrapped with one seed are resampled on
    the same units (a paired bootstrap).
    """
    import numpy as np

    return np.random.default_rng(seed).integers(0, n_units, size=(max(resamples, 0), n_units))


def unit_counts(samples: np.ndarray, n_units: int) -> np.ndarray:
    """How often each unit occurs in each resample: (k, n_units) float counts for a (k, n) index array."""
    import numpy as np

    rows = np.repeat(np.arange(len(samples)), samples.shape[1])
    counts = np.zeros((len(samples), n_units))
    np.add.at(counts, (rows, samples.ravel()), 1)
    return counts


def percentile_intervals(
    estimates: Sequence[float] | np.ndarray,
    draws: np.ndarray,
    level: float = DEFAULT_LEVEL,
    min_defined: float = MIN_DEFINED,
) -> list[Interval]:
    """Percentile intervals from a statistic's value on each resample.

    ``draws`` is (resamples, len(estimates)), NaN where the statistic is undefined on a resample;
    those are left out, and an interval is NaN when fewer than ``min_defined`` of them remain. Each
    interval contains its estimate (a percentile bound on the wrong side is moved to it).
    """
    import numpy as np

    estimates = np.atleast_1d(np.asarray(estimates, dtype=float))
    draws = np.asarray(draws, dtype=float).reshape(-1, len(estimates))
    tail = 100 * (1 - level) / 2
    out = []
    for column, estimate in enumerate(estimates):
        values = draws[:, column]
        values = values[~np.isnan(values)]
        if len(draws) == 0 or len(values) < min_defined * len(draws):
            out.append(Interval(float(estimate), level=level))
        else:
            low, high = np.percentile(values, [tail, 100 - tail])
            # A biased statistic (a correlation near 1: resamples repeat units, which only lowers
            # it) can put every percentile on one side of the estimate; widen the interval to
            # the estimate so a reported interval always contains its own estimate.
            low, high = min(float(low), float(estimate)), max(float(high), float(estimate))
            out.append(Interval(float(estimate), low, high, level=level))
    return out


def bootstrap(
    method: Callable[[Any], Any],
    units: Sequence[Any],
    *,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
    batched: bool = False,
) -> Any:
    """Percentile bootstrap intervals of ``method`` over ``units`` resampled with replacement.

    Unbatched, ``method`` takes a list of units (a resample, repeats allowed) and returns a number, a
    sequence of numbers or a mapping name -> number; the result has that shape (an :class:`Interval`,
    a list, a dict). Batched, it takes a (k, n_units) array of unit indices, one resample per row,
    and returns k values or a (k, m) array. ``resamples=0`` gives the estimate with NaN bounds, and so
    do fewer than two units (one unit resamples to itself). ``seed`` seeds :func:`resample_indices`.
    """
    import numpy as np

    if resamples < 0:
        raise ValueError(f"resamples must be >= 0, got {resamples}")
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    units = list(units)
    n_units = len(units)

    def evaluate(samples: np.ndarray) -> Any:
        if batched:
            return method(samples)
        return [method([units[i] for i in row]) for row in samples]

    point = evaluate(np.arange(n_units)[None, :])[0]
    names = list(point) if isinstance(point, Mapping) else None
    if names is not None:
        estimates = np.array([point[name] for name in names], dtype=float)
    else:
        estimates = np.asarray(point, dtype=float).reshape(-1)
    samples = resample_indices(n_units, resamples if n_units >= 2 else 0, seed)
    values = evaluate(samples) if len(samples) else []
    if names is not None:
        draws = np.array([[value[name] for name in names] for value in values], dtype=float)
    else:
        draws = np.asarray(values, dtype=float)
    intervals = percentile_intervals(estimates, draws.reshape(len(samples), len(estimates)), level)
    if names is not None:
        return dict(zip(names, intervals))
    return intervals[0] if np.ndim(point) == 0 else intervals


def proportion_interval(successes: int, trials: int, level: float = DEFAULT_LEVEL) -> Interval:
    """The share ``successes / trials`` with its exact (Clopper–Pearson) interval; ``n`` is the trials, NaN throughout with none."""
    from scipy import stats  # scipy loads where it is used: `import rankkit.stats.intervals` stays light

    if trials == 0:
        return Interval(math.nan, level=level, n=0)
    ci = stats.binomtest(successes, trials).proportion_ci(confidence_level=level)
    return Interval(successes / trials, float(ci.low), float(ci.high), level=level, n=trials)


def logistic_regression(
    design: np.ndarray, target: np.ndarray, penalty: np.ndarray, iterations: int = 50
) -> np.ndarray:
    """Coefficients of ``P(y = 1) = σ(design · β)`` maximising the log-likelihood minus ``½ Σ penalty·β²``.

    ``design`` is (n, p), ``target`` (n,) in [0, 1] (½: a tie), ``penalty`` (p,) L2 weights, > 0 where a
    coefficient is not identified (such as a common shift of all strengths: it gets the smallest-norm
    solution). Newton's method from 0, at most ``iterations`` steps (it stops when a step changes
    nothing above 1e-10).

    Examples
    --------
    >>> import numpy as np
    >>> x = np.array([[1.0], [1.0], [1.0], [1.0]]); y = np.array([1.0, 1.0, 1.0, 0.0])
    >>> round(float(logistic_regression(x, y, np.array([0.0]))[0]), 4)  # log(3/1)
    1.0986
    """
    import numpy as np
    from threadpoolctl import threadpool_limits

    beta = np.zeros(design.shape[1])
    # One BLAS thread: the matrices are small (tens of columns), and a multi-threaded BLAS waiting for
    # busy cores made one Newton step on 50,000 x 40 about 100 times slower on a shared 2-core machine.
    with threadpool_limits(limits=1, user_api="blas"):
        for _ in range(iterations):
            p = 1.0 / (1.0 + np.exp(-(design @ beta)))
            gradient = design.T @ (target - p) - penalty * beta
            weights = p * (1.0 - p)
            hessian = (design * weights[:, None]).T @ design + np.diag(penalty)
            step = np.linalg.solve(hessian + 1e-12 * np.eye(len(beta)), gradient)
            beta = beta + step
            if float(np.max(np.abs(step))) < 1e-10:
                break
    return beta
