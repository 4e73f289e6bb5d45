"""Prediction-powered inference (PPI++): many judge labels corrected by a few human labels (``docs/human-labels.md``).

PPI++ (Angelopoulos, Duchi & Zrnic 2023, "PPI++: Efficient Prediction-Powered Inference") estimates
what the *human* labels would give from

* the judge's labels on ``N`` unlabelled units (pairs or answers no human saw), weighted by λ, and
* the ``n`` human-labelled units, each carrying both the human label and the judge's label:
  the human loss minus λ times the judge's loss on them (the "rectifier").

The estimate stays unbiased for the human quantity however biased the judge is (the labelled units
must be a uniform random sample of all units); λ, tuned from the data ("power tuning"), makes the
interval as narrow as the judge's agreement with the humans allows: λ = 0 is the human-only
estimate, λ = 1 classical PPI. Intervals are the CLT / sandwich intervals of the paper.

Everything here is a pure function over arrays; :mod:`rankkit.leaderboard.human` builds the arrays
from a VOTES file and a leaderboard.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from rankkit.stats.intervals import DEFAULT_LEVEL, Interval
from rankkit.stats.ratings import ELO_BASE, ELO_INITIAL, ELO_SCALE

if TYPE_CHECKING:  # numpy and scipy load where used
    import numpy as np

#: L2 pull of the centred log-strengths towards 0, in units of the mean per-pair loss: keeps a
#: system that never lost (or never won) in the human votes finite. Small, because it biases every
#: rating towards the mean: at 1e-4 no bias was measurable in benchmarks/ppi.py at 1,000 votes.
BT_RIDGE = 1e-4
#: The fit stops when the gradient of the mean per-pair loss is below this (about 1e-7 of an Elo
#: point; trust-exact's default stopped 0.004 Elo points off on a two-item case).
GRADIENT_TOL = 1e-10


@dataclass(frozen=True)
class VarianceParts:
    """Per-unit variances of one scalar estimate's influence, what :func:`votes_needed` plans from.

    With λ, the PPI++ variance is ``λ²·judge/n_judged + (human − 2λ·cross + λ²·judge)/n_human``.

    Attributes
    ----------
    human
        Variance of the human term (the human-only estimate's variance is ``human / n_human``).
    judge
        Variance of the judge term (over all judged units).
    cross
        Covariance of the human and judge terms on the labelled units.
    """

    human: float
    judge: float
    cross: float

    def variance(self, lam: float, n_human: float, n_judged: float) -> float:
        """The estimate's variance with weight ``lam`` at these numbers of human and judge-only units."""
        judge_only_term = lam**2 * self.judge / n_judged if n_judged > 0 else 0.0
        return judge_only_term + (self.human - 2 * lam * self.cross + lam**2 * self.judge) / n_human

    def best_lam(self, n_human: float, n_judged: float) -> float:
        """PPI++'s power-tuned λ for one scalar, clipped to [0, 1]: ``cross / ((1 + n/N)·judge)``."""
        if self.judge <= 0:
            return 0.0
        ratio = n_human / n_judged if n_judged > 0 else math.inf
        return min(1.0, max(0.0, self.cross / ((1 + ratio) * self.judge)))


@dataclass(frozen=True)
class PPIResult:
    """One prediction-powered estimate beside the human-only and judge-only ones.

    Attributes
    ----------
    ppi
        The PPI++ estimate with its CLT (sandwich) interval.
    human_only
        The estimate from the human labels alone, with its interval at the same level.
    judge_only
        The estimate from the judge's labels on every judged unit (no interval: it is biased by
        whatever bias the judge has).
    lam
        The weight λ of the judge's labels (0: human only; 1: classical PPI).
    n_human, n_judged
        Human-labelled units and judge-only units.
    effective_n
        The human labels the estimate is worth: ``n_human · var(human_only) / var(ppi)``.
    parts
        The variance components, for :func:`votes_needed`.
    """

    ppi: Interval
    human_only: Interval
    judge_only: float
    lam: float
    n_human: int
    n_judged: int
    effective_n: float
    parts: VarianceParts


def _z(level: float) -> float:
    from scipy import stats

    return float(stats.norm.ppf(0.5 + level / 2))


def _interval(estimate: float, variance: float, level: float, n: int) -> Interval:
    half = _z(level) * math.sqrt(max(variance, 0.0))
    return Interval(float(estimate), float(estimate - half), float(estimate + half), level=level, n=n)


def _estimate(
    ppi: float, human: float, judge_only: float, lam: float, parts: VarianceParts, n: int, big_n: int, level: float
) -> PPIResult:
    var_ppi = parts.variance(lam, n, big_n)
    var_human = parts.human / n
    effective = n * var_human / var_ppi if var_ppi > 0 else math.inf
    return PPIResult(
        ppi=_interval(ppi, var_ppi, level, n),
        human_only=_interval(human, var_human, level, n),
        judge_only=float(judge_only),
        lam=float(lam),
        n_human=n,
        n_judged=big_n,
        effective_n=float(effective),
        parts=parts,
    )


# ---------------------------------------------------------------------------------------------
# Means: a win rate, a mean score


def ppi_mean(
    human: Sequence[float],
    judge_labelled: Sequence[float],
    judge_unlabelled: Sequence[float],
    level: float = DEFAULT_LEVEL,
    lam: float | None = None,
) -> PPIResult:
    """The PPI++ mean of the human labels: ``λ·mean(judge_unlabelled) + mean(human − λ·judge_labelled)``.

    Parameters
    ----------
    human, judge_labelled
        The human's and the judge's label of each labelled unit (parallel; at least 2). For a win
        rate, a's points (1 won, ½ tie, 0 lost); for a score, the grades.
    judge_unlabelled
        The judge's labels of the units no human labelled (may be empty: then λ = 0).
    lam
        None: power-tuned (``cov(human, judge) / ((1 + n/N)·var(judge))``, clipped to [0, 1]).

    Example: humans 1, 0, 1, 1 with judge 1, 0, 1, 0 and judge-only labels 1, 1, 0, 1 at λ = 0.5 give
    ``0.5·0.75 + mean(0.5, 0, 0.5, 1) = 0.875``.
    """
    import numpy as np

    y = np.asarray(human, dtype=float)
    f = np.asarray(judge_labelled, dtype=float)
    f_unl = np.asarray(judge_unlabelled, dtype=float)
    if len(y) != len(f) or len(y) < 2:
        raise ValueError(f"need at least 2 labelled units with both labels, got {len(y)} human and {len(f)} judge")
    n, big_n = len(y), len(f_unl)
    all_f = np.concatenate([f, f_unl])
    parts = VarianceParts(
        human=float(np.var(y, ddof=1)),
        judge=float(np.var(all_f, ddof=1)),
        cross=float(np.cov(y, f, ddof=1)[0, 1]),
    )
    if lam is None:
        lam = parts.best_lam(n, big_n)
    unlabelled_mean = float(f_unl.mean()) if big_n else 0.0
    estimate = lam * unlabelled_mean + float(np.mean(y - lam * f))
    return _estimate(estimate, float(y.mean()), float(all_f.mean()), lam, parts, n, big_n, level)


# ---------------------------------------------------------------------------------------------
# Bradley–Terry ratings by M-estimation


@dataclass(frozen=True)
class PairLabels:
    """Pairs as index arrays: ``first[k]`` met ``second[k]``; ``points[k]`` is first's points (1, ½, 0)."""

    first: np.ndarray
    second: np.ndarray
    points: np.ndarray


def pair_labels(first: Sequence[int], second: Sequence[int], points: Sequence[float]) -> PairLabels:
    """Checked :class:`PairLabels` (points within [0, 1]; a probability is a soft label)."""
    import numpy as np

    labels = PairLabels(np.asarray(first, dtype=int), np.asarray(second, dtype=int), np.asarray(points, dtype=float))
    if not len(labels.first) == len(labels.second) == len(labels.points):
        raise ValueError("first, second and points must have the same length")
    if np.any((labels.points < 0) | (labels.points > 1)) or np.any(labels.first == labels.second):
        raise ValueError("points must lie in [0, 1] and a pair must join two different items")
    return labels


def _design(first: np.ndarray, second: np.ndarray, n_items: int) -> np.ndarray:
    """Rows ``e_first − e_second`` without item 0's column (its log-strength is fixed at 0)."""
    import numpy as np

    rows = np.zeros((len(first), n_items))
    np.add.at(rows, (np.arange(len(first)), first), 1.0)
    np.add.at(rows, (np.arange(len(first)), second), -1.0)
    return rows[:, 1:]


@dataclass(frozen=True)
class _Problem:
    """The weighted soft-label logistic loss PPI++ minimises: ``Σ w·softplus(d) − t·d + φᵀPφ/2``.

    ``penalty`` P is the ridge on the *centred* log-strengths (a ridge on the free coordinates would
    pull every item towards item 0, whose log-strength they are measured from)."""

    design: np.ndarray
    weight: np.ndarray
    target: np.ndarray
    penalty: np.ndarray

    def value(self, phi: np.ndarray) -> float:
        import numpy as np

        d = self.design @ phi
        return float(np.sum(self.weight * np.logaddexp(0.0, d) - self.target * d) + phi @ self.penalty @ phi / 2)

    def gradient(self, phi: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        d = self.design @ phi
        return self.design.T @ (self.weight * expit(d) - self.target) + self.penalty @ phi

    def hessian(self, phi: np.ndarray) -> np.ndarray:
        from scipy.special import expit

        p = expit(self.design @ phi)
        return (self.design.T * (self.weight * p * (1 - p))) @ self.design + self.penalty


def _fit(problem: _Problem) -> np.ndarray:
    import numpy as np
    from scipy.optimize import minimize

    start = np.zeros(problem.design.shape[1])
    found = minimize(
        problem.value,
        start,
        jac=problem.gradient,
        hess=problem.hessian,
        method="trust-exact",
        options={"gtol": GRADIENT_TOL},
    )
    return found.x


def _weighted_problem(
    x_lab: np.ndarray,
    x_unl: np.ndarray,
    y: np.ndarray,
    f: np.ndarray,
    f_unl: np.ndarray,
    lam: float,
    penalty: np.ndarray,
) -> _Problem:
    """PPI++'s loss: λ·mean ℓ(judge, unlabelled) + mean[ℓ(human) − λ·ℓ(judge)] on the labelled pairs.

    The logistic loss is linear in the label (``ℓ = softplus(d) − label·d``), so the sum is one
    weighted logistic loss: weight ``(1 − λ)/n`` and target ``(y − λf)/n`` per labelled pair, weight
    and target ``λ/N``, ``λf/N`` per unlabelled pair.
    """
    import numpy as np

    n, big_n = len(y), max(len(f_unl), 1)
    return _Problem(
        design=np.vstack([x_lab, x_unl]),
        weight=np.concatenate([np.full(n, (1 - lam) / n), np.full(len(f_unl), lam / big_n)]),
        target=np.concatenate([(y - lam * f) / n, lam * f_unl / big_n]),
        penalty=penalty,
    )


def _centering(n_items: int) -> np.ndarray:
    """The map from the free log-strengths (item 0 fixed at 0) to log-strengths of mean 0."""
    import numpy as np

    lift = np.vstack([np.zeros((1, n_items - 1)), np.eye(n_items - 1)])
    return (np.eye(n_items) - 1.0 / n_items) @ lift


def _influences(design: np.ndarray, phi: np.ndarray, labels: np.ndarray, inverse_hessian: np.ndarray) -> np.ndarray:
    """Per-pair gradients of the loss ``(σ(d) − label)·x`` mapped through ``H⁻¹`` (rows: pairs)."""
    from scipy.special import expit

    residual = expit(design @ phi) - labels
    return (design * residual[:, None]) @ inverse_hessian


def _tuned_lam(psi_y: np.ndarray, psi_f: np.ndarray, psi_f_unl: np.ndarray) -> float:
    """PPI++'s λ minimising the summed variance of every coordinate (the trace), clipped to [0, 1]."""
    import numpy as np

    n, big_n = len(psi_y), len(psi_f_unl)
    if big_n == 0:
        return 0.0
    yc, fc = psi_y - psi_y.mean(0), psi_f - psi_f.mean(0)
    cross = float(np.sum(yc * fc)) / (n - 1)
    judge = float(np.trace(np.atleast_2d(np.cov(np.vstack([psi_f, psi_f_unl]), rowvar=False))))
    if judge <= 0:
        return 0.0
    return min(1.0, max(0.0, cross / ((1 + n / big_n) * judge)))


def _judge_only_problem(design: np.ndarray, judge: np.ndarray, penalty: np.ndarray) -> _Problem:
    """The judge's own Bradley–Terry loss: every judged pair, the judge's points as labels."""
    import numpy as np

    return _Problem(design, np.full(len(judge), 1.0 / len(judge)), judge / len(judge), penalty)


def _rating_result(
    k: int,
    ratings: list[np.ndarray],
    psi: tuple[np.ndarray, np.ndarray, np.ndarray],
    psi_human: np.ndarray,
    lam: float,
    units: float,
    level: float,
) -> PPIResult:
    """Item ``k``'s result from the PPI, human-only and judge-only ratings and the per-pair influences
    (``psi``: human, judge on the labelled pairs, judge on the rest; ``psi_human``: the human fit's);
    ``units`` turns log-strength variances into rating variances."""
    import numpy as np

    psi_y, psi_f, psi_f_unl = (column[:, k] for column in psi)
    n, big_n = len(psi_y), len(psi_f_unl)
    parts = VarianceParts(
        human=float(np.var(psi_y, ddof=1)) * units,
        judge=float(np.var(np.concatenate([psi_f, psi_f_unl]), ddof=1)) * units,
        cross=float(np.cov(psi_y, psi_f, ddof=1)[0, 1]) * units,
    )
    var_ppi = parts.variance(lam, n, big_n)
    var_human = float(np.var(psi_human[:, k], ddof=1)) * units / n
    return PPIResult(
        ppi=_interval(ratings[0][k], var_ppi, level, n),
        human_only=_interval(ratings[1][k], var_human, level, n),
        judge_only=float(ratings[2][k]),
        lam=float(lam),
        n_human=n,
        n_judged=big_n,
        effective_n=float(n * var_human / var_ppi) if var_ppi > 0 else math.inf,
        parts=parts,
    )


def ppi_bradley_terry(
    items: Sequence[str],
    labelled: PairLabels,
    judge_labelled: Sequence[float],
    unlabelled: PairLabels,
    level: float = DEFAULT_LEVEL,
    lam: float | None = None,
    ridge: float = BT_RIDGE,
    initial: float = ELO_INITIAL,
    scale: float = ELO_SCALE,
    base: float = ELO_BASE,
) -> dict[str, PPIResult]:
    """PPI++ Bradley–Terry ratings on the Elo scale, one :class:`PPIResult` per item (λ shared).

    Parameters
    ----------
    items
        The names; the pairs' indices point into it.
    labelled
        The human-labelled pairs with the human's points (a tie is ½; several votes on one pair
        are several rows).
    judge_labelled
        The judge's points on each labelled pair (parallel to ``labelled``; a probability works).
    unlabelled
        The judged pairs no human voted on, with the judge's points.
    lam
        None: power-tuned at the classical-PPI fit (λ = 1), then refitted, as PPI++ does; the
        tuning minimises the summed variance of all ratings.
    ridge
        See :data:`BT_RIDGE`.

    The model: ``P(i beats j) = σ(θ_i − θ_j)``, log-strengths of mean 0; a rating is ``initial +
    θ·scale/ln(base)``. Intervals are the sandwich ``H⁻¹ [λ²·Cov(g_judge)/N + Cov(g_human −
    λ·g_judge)/n] H⁻¹`` with the Hessian ``H`` taken over every pair (it depends only on which
    items met, not on the labels), so λ = 0 gives exactly the human-only fit and interval.
    """
    import numpy as np

    n_items, n = len(items), len(labelled.points)
    if n_items < 2 or n < 2:
        raise ValueError("need at least 2 items and 2 labelled pairs")
    y, f, f_unl = labelled.points, np.asarray(judge_labelled, dtype=float), unlabelled.points
    if len(f) != n:
        raise ValueError("judge_labelled must have one label per labelled pair")
    x_lab = _design(labelled.first, labelled.second, n_items)
    x_unl = _design(unlabelled.first, unlabelled.second, n_items)
    x_all, f_all = np.vstack([x_lab, x_unl]), np.concatenate([f, f_unl])
    to_centred = _centering(n_items)
    penalty = ridge * to_centred.T @ to_centred

    def fit(weight: float) -> np.ndarray:
        return _fit(_weighted_problem(x_lab, x_unl, y, f, f_unl, weight, penalty))

    def influences(phi: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        hessian = _judge_only_problem(x_all, f_all, penalty).hessian(phi)  # labels do not enter a logistic Hessian
        inverse = np.linalg.inv(hessian) @ to_centred.T  # rows: free coordinates; columns: centred ratings
        return tuple(_influences(x, phi, labels, inverse) for x, labels in ((x_lab, y), (x_lab, f), (x_unl, f_unl)))

    if lam is None:
        lam = _tuned_lam(*influences(fit(1.0)))
    phi, human_phi, judge_phi = fit(lam), fit(0.0), _fit(_judge_only_problem(x_all, f_all, penalty))
    factor = scale / math.log(base)
    ratings = [initial + factor * to_centred @ p for p in (phi, human_phi, judge_phi)]
    psi, psi_human = influences(phi), influences(human_phi)[0]
    return {name: _rating_result(k, ratings, psi, psi_human, lam, factor**2, level) for k, name in enumerate(items)}


# ---------------------------------------------------------------------------------------------
# Planning


def votes_needed(estimate: PPIResult, width: float, max_votes: int = 10_000_000) -> int:
    """How many *more* human votes bring ``estimate``'s PPI interval to at most ``width`` (high − low).

    The plan keeps the variance components measured so far (the judge's agreement with the votes)
    and the number of judged units, re-tunes λ at each candidate count, and returns the least
    number of added votes (0 when already narrow enough). New votes are assumed to fall on pairs
    (or answers) already judged, drawn at random like the ones so far. Raises ValueError when
    more than ``max_votes`` votes would be needed.
    """
    if width <= 0:
        raise ValueError(f"width must be positive, got {width}")
    z = _z(estimate.ppi.level)
    target_var = (width / (2 * z)) ** 2
    parts, big_n = estimate.parts, estimate.n_judged

    def narrow_enough(n: int) -> bool:
        return parts.variance(parts.best_lam(n, big_n), n, big_n) <= target_var

    low, high = estimate.n_human, estimate.n_human
    if narrow_enough(low):
        return 0
    while not narrow_enough(high):
        if high >= max_votes:
            raise ValueError(f"more than {max_votes} human votes would be needed")
        high = min(max_votes, high * 2)
    while high - low > 1:  # the variance falls as n grows, so bisect for the first n that is narrow enough
        middle = (low + high) // 2
        low, high = (low, middle) if narrow_enough(middle) else (middle, high)
    return high - estimate.n_human
