"""rankkit.stats.intervals: the Interval type and the one percentile bootstrap (coverage, seeding, degenerate cases)."""

from __future__ import annotations

import math
import random

import numpy as np
import pytest
from scipy import stats as scipy_stats

from rankkit.stats.intervals import (
    Interval,
    bootstrap,
    percentile_intervals,
    proportion_interval,
    resample_indices,
    unit_counts,
)
from rankkit.stats.ratings import bradley_terry, elo_over_permutations, win_rates


def mean_of_rows(values: np.ndarray):
    """A batched mean: one resample of unit indices per row."""
    return lambda rows: values[rows].mean(axis=1)


# -- the bootstrap -----------------------------------------------------------------------------


def test_a_95_percent_interval_covers_a_known_mean_about_95_percent_of_the_time():
    rng = np.random.default_rng(0)
    trials, covered = 300, 0
    for trial in range(trials):
        sample = rng.normal(loc=2.0, scale=1.0, size=60)
        interval = bootstrap(mean_of_rows(sample), sample, resamples=400, seed=trial, batched=True)
        covered += interval.low <= 2.0 <= interval.high
    # The percentile interval of a mean undercovers slightly at n = 60; 300 trials put the rate
    # within about ±0.03 of its true value. A wrong tail (e.g. a 90% interval) would fail.
    assert 0.89 <= covered / trials <= 0.99


def test_the_interval_is_numpys_percentile_of_the_resampled_statistic():
    units = [3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0, 6.0]
    interval = bootstrap(lambda sample: sum(sample) / len(sample), units, resamples=500, level=0.9, seed=7)
    rows = np.random.default_rng(7).integers(0, len(units), size=(500, len(units)))
    means = np.asarray(units)[rows].mean(axis=1)
    assert interval.estimate == pytest.approx(np.mean(units))
    assert (interval.low, interval.high) == pytest.approx(tuple(np.percentile(means, [5, 95])))
    assert interval.level == 0.9
    # ... which is scipy's percentile bootstrap drawn from the same generator
    reference = scipy_stats.bootstrap(
        (np.asarray(units),),
        np.mean,
        n_resamples=500,
        confidence_level=0.9,
        method="percentile",
        rng=np.random.default_rng(7),
    ).confidence_interval
    assert (interval.low, interval.high) == pytest.approx((reference.low, reference.high), rel=1e-12)


def test_batched_and_unbatched_statistics_give_the_same_interval():
    units = list(np.random.default_rng(1).normal(size=25))
    plain = bootstrap(lambda sample: float(np.mean(sample)), units, resamples=300, seed=2)
    batched = bootstrap(mean_of_rows(np.asarray(units)), units, resamples=300, seed=2, batched=True)
    assert plain.estimate == pytest.approx(batched.estimate)
    assert (plain.low, plain.high) == pytest.approx((batched.low, batched.high))


def test_the_result_has_the_shape_of_the_statistic():
    units = [1.0, 2.0, 3.0, 4.0]
    by_name = bootstrap(lambda s: {"max": max(s), "min": min(s)}, units, resamples=50)
    assert list(by_name) == ["max", "min"] and by_name["max"].estimate == 4.0
    pair = bootstrap(lambda s: [min(s), max(s)], units, resamples=50)
    assert [i.estimate for i in pair] == [1.0, 4.0]
    columns = bootstrap(
        lambda rows: np.column_stack([rows.min(axis=1), rows.max(axis=1)]), units, resamples=50, batched=True
    )
    assert [i.estimate for i in columns] == [0.0, 3.0]  # batched statistics see unit indices


def test_the_bootstrap_is_seeded():
    units = list(range(30))
    first = bootstrap(lambda s: float(np.mean(s)), units, resamples=100, seed=3)
    assert first == bootstrap(lambda s: float(np.mean(s)), units, resamples=100, seed=3)
    assert first != bootstrap(lambda s: float(np.mean(s)), units, resamples=100, seed=4)
    assert np.array_equal(resample_indices(30, 100, 3), resample_indices(30, 100, 3))


def test_degenerate_cases():
    one = bootstrap(lambda s: float(np.mean(s)), [5.0], resamples=100)
    assert one.estimate == pytest.approx(5.0, abs=1e-12) and math.isnan(one.low) and math.isnan(one.high)  # no spread
    same = bootstrap(lambda s: float(np.mean(s)), [0.5] * 6, resamples=100)
    assert (same.estimate, same.low, same.high) == pytest.approx((0.5, 0.5, 0.5), abs=1e-12)
    none = bootstrap(lambda s: float(np.mean(s)), [1.0, 2.0, 3.0], resamples=0)
    assert none.estimate == pytest.approx(2.0, abs=1e-12) and not none.has_bounds
    empty = bootstrap(lambda s: float(np.mean(s)) if s else math.nan, [], resamples=10)
    assert math.isnan(empty.estimate) and not empty.has_bounds
    with pytest.raises(ValueError):
        bootstrap(lambda s: 0.0, [1, 2], resamples=-1)
    with pytest.raises(ValueError):
        bootstrap(lambda s: 0.0, [1, 2], level=1.5)


def test_nan_statistics_are_left_out_unless_they_are_more_than_a_tenth():
    # A statistic undefined whenever a resample misses unit 0: with 3 units that is (2/3)^3 = 30%.
    def needs_unit_zero(rows: np.ndarray) -> np.ndarray:
        return np.where((rows == 0).any(axis=1), rows.mean(axis=1), math.nan)

    assert not bootstrap(needs_unit_zero, [0, 1, 2], resamples=500, batched=True).has_bounds
    # A statistic undefined on 5% of resamples keeps its interval, from the defined ones; on 20%, not.
    (kept,) = percentile_intervals([1.0], np.array([[1.0]] * 95 + [[math.nan]] * 5))
    assert (kept.low, kept.high) == pytest.approx((1.0, 1.0), abs=1e-12)
    (lost,) = percentile_intervals([1.0], np.array([[1.0]] * 80 + [[math.nan]] * 20))
    assert kept.has_bounds and not lost.has_bounds and lost.estimate == pytest.approx(1.0, abs=1e-12)
    undefined_point = bootstrap(
        lambda s: float(np.mean(s)) if len(set(s)) > 1 else math.nan, [1.0, 2.0, 3.0, 4.0], resamples=200
    )
    assert undefined_point.estimate == pytest.approx(2.5, abs=1e-12)


def test_percentile_interval_by_hand():
    # 101 draws 0..100: the 2.5th and 97.5th percentiles (linear interpolation) are 2.5 and 97.5.
    draws = np.arange(101.0).reshape(-1, 1)
    (interval,) = percentile_intervals([50.0], draws, level=0.95)
    assert (interval.estimate, interval.low, interval.high) == (50.0, pytest.approx(2.5), pytest.approx(97.5))
    (wide,) = percentile_intervals([50.0], draws, level=0.5)
    assert (wide.low, wide.high) == (pytest.approx(25.0), pytest.approx(75.0))


def test_unit_counts():
    counts = unit_counts(np.array([[0, 0, 2], [1, 2, 2]]), 4)
    assert counts.tolist() == [[2, 0, 1, 0], [0, 1, 2, 0]]


# -- intervals of ratings (the outcomes are the units) ------------------------------------------


def test_rating_intervals_contain_the_rating_and_shrink_with_more_matches():
    rng = random.Random(0)

    def sample(n):
        return [("a", "b", 1.0 if rng.random() < 0.7 else 0.0) for _ in range(n)]

    small = bootstrap(lambda s: bradley_terry(s, ["a", "b"]), sample(40), resamples=100, seed=1)
    large = bootstrap(lambda s: bradley_terry(s, ["a", "b"]), sample(1000), resamples=100, seed=1)
    for result in (small, large):
        for interval in result.values():
            assert interval.low <= interval.estimate <= interval.high
    assert (large["a"].high - large["a"].low) < (small["a"].high - small["a"].low)


def test_the_bootstrap_wraps_any_rating_method():
    outcomes = [("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 0.0), ("c", "a", 0.5)] * 5
    first = bootstrap(win_rates, outcomes, resamples=50, seed=2)
    assert first == bootstrap(win_rates, outcomes, resamples=50, seed=2)
    assert first["a"].estimate == pytest.approx(win_rates(outcomes)["a"])
    elo = bootstrap(lambda s: elo_over_permutations(s, permutations=5, k=8), outcomes, resamples=10, seed=2)
    assert set(elo) == {"a", "b", "c"}


# -- shares and the Interval type --------------------------------------------------------------


def test_proportion_interval_is_clopper_pearson():
    share = proportion_interval(7, 20, level=0.9)
    reference = scipy_stats.binomtest(7, 20).proportion_ci(confidence_level=0.9)
    assert (share.level, share.n) == (0.9, 20)
    assert (share.estimate, share.low, share.high) == pytest.approx((0.35, reference.low, reference.high), abs=1e-12)
    assert math.isnan(proportion_interval(0, 0).estimate)


def test_interval_text_and_dict():
    assert Interval(0.8123, 0.76, 0.851).text() == "0.812 [0.760, 0.851]"
    assert Interval(0.8123).text(2) == "0.81"
    assert Interval(math.nan).text() == "-"
    assert Interval(1.0, 0.5, 1.5, level=0.9, n=3).to_dict() == {"estimate": 1.0, "low": 0.5, "high": 1.5}


# -- an interval contains its estimate (issue 24, item 11) ---------------------------------------


def test_an_interval_contains_its_estimate_when_every_resample_lies_below_it():
    # analyze printed "0.996 [0.981, 0.995]": a statistic near 1 whose resamples all fall below it.
    rng = np.random.default_rng(3)
    draws = rng.uniform(0.975, 0.995, size=(500, 1))
    (interval,) = percentile_intervals([0.996], draws)
    assert interval.low <= interval.estimate <= interval.high
    assert interval.high == pytest.approx(0.996, abs=1e-12)  # widened to the estimate, no further
    assert interval.low == pytest.approx(np.percentile(draws, 2.5), abs=1e-12)  # the other bound is kept


def test_a_correlation_near_1_gets_an_interval_that_contains_it():
    # A Kendall correlation of nearly identical scores: the estimate is 1 less one rounding error and
    # every resample is exactly 1, so the percentile interval alone was [1.0, 1.0], above the estimate.
    rng = np.random.default_rng(142)
    human = rng.normal(0, 1, 8)
    pairs = list(zip(human, human + rng.normal(0, 0.05, 8)))

    def kendall(sample):
        a = np.array(sample)
        return scipy_stats.kendalltau(a[:, 0], a[:, 1]).statistic

    interval = bootstrap(kendall, pairs, resamples=200, seed=0)
    assert interval.estimate == pytest.approx(1.0, abs=1e-9)
    assert interval.low <= interval.estimate <= interval.high


def test_a_statistic_that_resampling_can_only_lower_keeps_its_estimate_inside_the_interval():
    # The share of distinct units is 1 on the data and about 0.63 on a resample: the percentile
    # interval alone lies entirely below the estimate.
    units = list(range(40))
    interval = bootstrap(lambda sample: len(set(sample)) / len(units), units, resamples=200, seed=0)
    assert interval.estimate == pytest.approx(1.0, abs=1e-12)
    assert interval.low <= interval.estimate <= interval.high
    assert interval.low < 0.8  # the lower percentile bound is still the resamples'


def test_logistic_regression_recovers_planted_coefficients_and_takes_half_wins():
    from rankkit.stats.intervals import logistic_regression

    rng = np.random.default_rng(5)
    x = rng.normal(size=(20000, 2))
    design = np.column_stack([np.ones(len(x)), x])
    truth = np.array([0.3, 1.5, -0.7])
    target = (rng.random(len(x)) < 1 / (1 + np.exp(-(design @ truth)))).astype(float)
    fitted = logistic_regression(design, target, np.zeros(3))
    assert fitted == pytest.approx(truth, abs=0.06)
    # a tie is half a win: all ties give even odds
    assert logistic_regression(np.ones((10, 1)), np.full(10, 0.5), np.zeros(1))[0] == pytest.approx(0.0, abs=1e-9)
    # the penalty keeps a separating design finite
    separated = logistic_regression(np.ones((5, 1)), np.ones(5), np.array([1.0]))
    assert math.isfinite(separated[0]) and separated[0] > 1
