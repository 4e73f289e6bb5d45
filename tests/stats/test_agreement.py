"""Cohen's kappa, Krippendorff's alpha and the expected calibration error against hand computations
and published examples (tolerance 1e-9 unless stated)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankkit.stats.agreement import calibration_bins, cohen_kappa, expected_calibration_error, nominal_alpha

TOLERANCE = 1e-9


def test_kappa_of_the_textbook_example():
    # Wikipedia "Cohen's kappa", worked example: 50 proposals, yes/yes 20, yes/no 5, no/yes 10, no/no 15;
    # p_o = 0.7, p_e = 0.5, kappa = 0.4.
    assert cohen_kappa(np.array([[20, 5], [10, 15]])) == pytest.approx(0.4, abs=TOLERANCE)


def test_kappa_is_one_for_perfect_agreement_and_zero_for_independent_raters():
    assert cohen_kappa(np.diag([3, 4, 5])) == pytest.approx(1.0, abs=TOLERANCE)
    # Rows and columns independent: the observed agreement is what chance predicts.
    assert cohen_kappa(np.outer([1, 3], [2, 2])) == pytest.approx(0.0, abs=TOLERANCE)


def test_alpha_of_krippendorffs_published_two_coder_example():
    # Krippendorff (2011), "Computing Krippendorff's alpha-reliability", binary data, two observers,
    # ten units: A = 0100000010, B = 1110010000; alpha = 0.095.
    a = [0, 1, 0, 0, 0, 0, 0, 0, 1, 0]
    b = [1, 1, 1, 0, 0, 1, 0, 0, 0, 0]
    confusion = np.zeros((2, 2))
    for x, y in zip(a, b):
        confusion[x, y] += 1
    assert nominal_alpha(confusion) == pytest.approx(1 - 19 * 8 / 168, abs=TOLERANCE)
    assert nominal_alpha(confusion) == pytest.approx(0.095, abs=5e-4)


def test_alpha_by_hand_and_as_the_krippendorff_package_computes_it():
    # [[20, 5], [10, 15]]: coincidences [[40, 15], [15, 30]], n = 100, n_c = (55, 45):
    # alpha = 1 - 99 * 30 / (10000 - 5050) = 0.4.
    assert nominal_alpha(np.array([[20, 5], [10, 15]])) == pytest.approx(0.4, abs=TOLERANCE)
    import krippendorff

    rng = np.random.default_rng(0)
    rater_1 = rng.integers(0, 3, 60)
    rater_2 = np.where(rng.random(60) < 0.6, rater_1, rng.integers(0, 3, 60))
    confusion = np.zeros((3, 3))
    np.add.at(confusion, (rater_1, rater_2), 1)
    expected = krippendorff.alpha(reliability_data=np.stack([rater_1, rater_2]), level_of_measurement="nominal")
    assert nominal_alpha(confusion) == pytest.approx(expected, abs=TOLERANCE)


def test_stacked_matrices_give_one_value_each_and_undefined_ones_are_nan():
    stack = np.array([[[20, 5], [10, 15]], [[4, 0], [0, 0]]])
    kappas, alphas = cohen_kappa(stack), nominal_alpha(stack)
    assert kappas[0] == pytest.approx(0.4, abs=TOLERANCE) and math.isnan(kappas[1])  # one category only
    assert alphas[0] == pytest.approx(0.4, abs=TOLERANCE) and math.isnan(alphas[1])


def test_ece_by_hand():
    # Bins of width 0.1: {0.9, 0.9} -> y {1, 1}: |1.8 - 2| = 0.2; {0.4, 0.45} -> {1, 1}: |0.85 - 2| = 1.15;
    # {0.2} -> 0: 0.2; {0.3} -> 0: 0.3. ECE = (0.2 + 1.15 + 0.2 + 0.3) / 6.
    table = calibration_bins(np.array([0.9, 0.4, 0.2, 0.3, 0.45, 0.9]), np.array([1, 1, 0, 0, 1, 1]))
    assert table[:, 0].tolist() == [0, 0, 1, 1, 2, 0, 0, 0, 0, 2]
    assert expected_calibration_error(table) == pytest.approx(1.85 / 6, abs=TOLERANCE)


def test_ece_edges_perfect_calibration_and_no_predictions():
    # p = 1 falls in the last bin; a bin whose mean p equals its frequency adds nothing.
    table = calibration_bins(np.array([1.0, 1.0, 0.25, 0.25, 0.25, 0.25]), np.array([1, 1, 1, 0, 0, 0]))
    assert table[-1, 0] == 2
    assert expected_calibration_error(table) == pytest.approx(0.0, abs=TOLERANCE)
    assert math.isnan(expected_calibration_error(np.zeros((10, 3))))
