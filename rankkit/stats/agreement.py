"""Chance-corrected agreement and calibration: Cohen's kappa, Krippendorff's alpha, expected calibration error.

Each statistic is computed from counts (a confusion matrix, calibration bins) so that a bootstrap
over tasks sums the tasks' counts and evaluates many resamples at once: every function accepts a
stack of count arrays (leading axes) and returns one value per stack entry.
"""

from __future__ import annotations

import numpy as np

#: The bins of the expected calibration error: equal-width on [0, 1].
CALIBRATION_BINS = 10


def cohen_kappa(confusion: np.ndarray) -> np.ndarray:
    """Cohen's kappa of two raters from their confusion matrix (rows: rater 1, columns: rater 2).

    kappa = (p_o - p_e) / (1 - p_e), with p_o = sum_i C_ii / n the observed agreement and
    p_e = sum_i (r_i / n)(c_i / n) the agreement expected from the row and column totals r, c.
    NaN when p_e = 1 (both raters used one and the same category) or n = 0.

    Example: the 2x2 matrix [[20, 5], [10, 15]] gives p_o = 0.7, p_e = 0.5 and kappa = 0.4.

    Parameters
    ----------
    confusion
        A (k, k) count matrix, or a stack of them (..., k, k).
    """
    counts = np.asarray(confusion, dtype=float)
    n = counts.sum(axis=(-2, -1))
    with np.errstate(invalid="ignore", divide="ignore"):
        observed = np.trace(counts, axis1=-2, axis2=-1) / n
        expected = (counts.sum(axis=-1) * counts.sum(axis=-2)).sum(axis=-1) / n**2
        return (observed - expected) / (1.0 - expected)


def nominal_alpha(confusion: np.ndarray) -> np.ndarray:
    """Krippendorff's alpha (nominal) of two raters who both rated every unit, from their confusion matrix.

    The coincidence matrix is o = C + C^T (each unit's two values pair both ways), with n = sum o
    pairable values and category totals n_c = sum_k o_ck. Then
    alpha = 1 - (n - 1) * (n - sum_c o_cc) / (n^2 - sum_c n_c^2): observed over expected disagreement.
    NaN when only one category was used or no unit was rated.

    Example: the matrix [[20, 5], [10, 15]] (50 units) gives n = 100, n_c = (55, 45),
    alpha = 1 - 99 * 30 / (10000 - 5050) = 0.4.

    Parameters
    ----------
    confusion
        A (k, k) count matrix, or a stack of them (..., k, k).
    """
    counts = np.asarray(confusion, dtype=float)
    coincidence = counts + np.swapaxes(counts, -2, -1)
    n = coincidence.sum(axis=(-2, -1))
    totals = coincidence.sum(axis=-1)
    disagreeing = n - np.trace(coincidence, axis1=-2, axis2=-1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return 1.0 - (n - 1.0) * disagreeing / (n**2 - (totals**2).sum(axis=-1))


def calibration_bins(probabilities: np.ndarray, outcomes: np.ndarray, bins: int = CALIBRATION_BINS) -> np.ndarray:
    """Per-bin (count, sum of probabilities, sum of outcomes) of predictions, binned equal-width on [0, 1].

    Bin b holds probabilities in [b / bins, (b + 1) / bins); the last bin includes 1.

    Returns a (bins, 3) array, the input of :func:`expected_calibration_error`.

    Parameters
    ----------
    probabilities
        The predicted probabilities of the event, in [0, 1].
    outcomes
        1 where the event happened, else 0.
    """
    p = np.asarray(probabilities, dtype=float)
    y = np.asarray(outcomes, dtype=float)
    index = np.minimum((p * bins).astype(int), bins - 1)
    table = np.zeros((bins, 3))
    np.add.at(table, index, np.stack([np.ones_like(p), p, y], axis=-1))
    return table


def expected_calibration_error(table: np.ndarray) -> np.ndarray:
    """ECE = sum_b (n_b / n) |mean p_b - mean y_b|: the count-weighted gap between the mean predicted
    probability and the observed frequency of each bin (Naeini et al. 2015; Guo et al. 2017).

    NaN when no prediction was binned. 0 is perfectly calibrated; 1 is the worst.

    Parameters
    ----------
    table
        A :func:`calibration_bins` table (bins, 3), or a stack of them (..., bins, 3).
    """
    counts = np.asarray(table, dtype=float)
    n = counts[..., 0].sum(axis=-1)
    gaps = np.abs(counts[..., 1] - counts[..., 2]).sum(axis=-1)  # n_b |mean p - mean y| = |sum p - sum y|
    with np.errstate(invalid="ignore", divide="ignore"):
        return gaps / n
