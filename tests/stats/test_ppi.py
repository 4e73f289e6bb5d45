"""PPI++ estimators against hand computation, their λ = 0 limit, their coverage, and the planner."""

from __future__ import annotations

import math

import numpy as np
import pytest

from rankkit.stats.ppi import (
    VarianceParts,
    pair_labels,
    ppi_bradley_terry,
    ppi_mean,
    votes_needed,
)
from rankkit.stats.ratings import ELO_SCALE

TOL = 1e-9  # closed forms computed two ways agree to rounding
FIT_TOL = 1e-5  # Elo points: an optimiser's answer against a closed form
Z95 = 1.959963984540054
ELO_FACTOR = ELO_SCALE / math.log(10)

HUMAN = [1, 0, 1, 1]
JUDGE = [1, 0, 1, 0]
JUDGE_ONLY = [1, 1, 0, 1]


def test_ppi_mean_by_hand_at_a_fixed_lambda():
    result = ppi_mean(HUMAN, JUDGE, JUDGE_ONLY, lam=0.5)
    assert result.ppi.estimate == pytest.approx(0.5 * 0.75 + (0.5 + 0 + 0.5 + 1) / 4, abs=TOL)
    # judge variance over all 8 judge labels (5 ones): (5·(3/8)² + 3·(5/8)²)/7; cov(human, judge) = 0.5/3
    judge_var, cross, human_var = 120 / 448, 0.5 / 3, 0.25
    variance = 0.25 * judge_var / 4 + (human_var - 2 * 0.5 * cross + 0.25 * judge_var) / 4
    assert result.ppi.high - result.ppi.estimate == pytest.approx(Z95 * math.sqrt(variance), abs=1e-7)
    assert result.human_only.estimate == pytest.approx(0.75, abs=TOL)
    assert result.human_only.high - 0.75 == pytest.approx(Z95 * math.sqrt(human_var / 4), abs=1e-7)
    assert result.judge_only == pytest.approx(5 / 8, abs=TOL)
    assert result.effective_n == pytest.approx(4 * (human_var / 4) / variance, abs=1e-7)
    assert (result.n_human, result.n_judged, result.lam) == (4, 4, 0.5)


def test_ppi_mean_tunes_lambda_as_ppi_plus_plus_does():
    result = ppi_mean(HUMAN, JUDGE, JUDGE_ONLY)
    assert result.lam == pytest.approx((0.5 / 3) / ((1 + 4 / 4) * (120 / 448)), abs=TOL)


def test_lambda_zero_is_the_human_only_mean():
    result = ppi_mean(HUMAN, JUDGE, JUDGE_ONLY, lam=0.0)
    assert result.ppi == result.human_only
    assert result.effective_n == pytest.approx(4, abs=TOL)


def test_a_judge_that_agrees_with_every_human_is_worth_more_than_the_humans():
    rng = np.random.default_rng(0)
    human = rng.integers(0, 2, 50).astype(float)
    result = ppi_mean(human, human, rng.integers(0, 2, 500).astype(float))
    assert result.lam > 0.8
    assert result.effective_n > 2 * result.n_human
    assert result.ppi.high - result.ppi.low < result.human_only.high - result.human_only.low


def elo(d: float) -> float:
    return 1000 + ELO_FACTOR * d


def test_bradley_terry_with_two_items_is_the_ppi_mean_on_the_logit_scale():
    """With one pair of items, BT's estimating equation is σ(θ₀ − θ₁) = the PPI mean of item 0's points."""
    labelled = pair_labels([0, 0, 1, 0], [1, 1, 0, 1], [1, 0.5, 0, 1])  # item 0's points 1, ½, 1, 1
    judge = [1, 1, 1, 0]  # from the first item's side: item 0's points 1, 1, 0, 0
    unlabelled = pair_labels([0, 1, 0], [1, 0, 1], [1, 1, 0])  # item 0's points 1, 0, 0
    ratings = ppi_bradley_terry(["x", "y"], labelled, judge, unlabelled, lam=0.6, ridge=0.0)
    mean = ppi_mean([1, 0.5, 1, 1], [1, 1, 0, 0], [1, 0, 0], lam=0.6)
    p = mean.ppi.estimate
    d = math.log(p / (1 - p))
    assert ratings["x"].ppi.estimate == pytest.approx(elo(d / 2), abs=FIT_TOL)
    assert ratings["y"].ppi.estimate == pytest.approx(elo(-d / 2), abs=FIT_TOL)
    # the delta method: var(d) = var(p̂) / (p(1 − p))², and each centred rating moves by d/2
    half = (mean.ppi.high - p) / (p * (1 - p)) / 2 * ELO_FACTOR
    assert ratings["x"].ppi.high - ratings["x"].ppi.estimate == pytest.approx(half, abs=1e-4)
    human_p = 3.5 / 4
    assert ratings["x"].human_only.estimate == pytest.approx(elo(math.log(human_p / (1 - human_p)) / 2), abs=FIT_TOL)
    assert ratings["x"].judge_only == pytest.approx(elo(math.log(3 / 4) / 2), abs=FIT_TOL)  # 3 of 7: logit(3/7)/2


def planted_pairs(rng: np.random.Generator, strengths: np.ndarray, count: int, bias: float):
    """Pairs of random items; per pair a latent margin both judge and human see, plus a judge bias."""
    first = rng.integers(0, len(strengths), count)
    second = (first + rng.integers(1, len(strengths), count)) % len(strengths)
    margin = strengths[first] - strengths[second] + rng.normal(0, 1.5, count)
    human = (rng.random(count) < 1 / (1 + np.exp(-margin))).astype(float)
    judge = (rng.random(count) < 1 / (1 + np.exp(-(margin + bias * (first % 2 - second % 2))))).astype(float)
    return first, second, human, judge


def test_lambda_zero_is_the_human_only_bradley_terry_fit():
    rng = np.random.default_rng(1)
    a, b, human, judge = planted_pairs(rng, np.linspace(-1, 1, 5), 120, bias=1.0)
    c, d, _, judge_only = planted_pairs(rng, np.linspace(-1, 1, 5), 600, bias=1.0)
    ratings = ppi_bradley_terry(list("abcde"), pair_labels(a, b, human), judge, pair_labels(c, d, judge_only), lam=0.0)
    for row in ratings.values():
        assert row.ppi.estimate == pytest.approx(row.human_only.estimate, abs=FIT_TOL)
        assert row.ppi.low == pytest.approx(row.human_only.low, abs=FIT_TOL)
        assert row.effective_n == pytest.approx(row.n_human, rel=1e-6)
    assert sum(row.ppi.estimate for row in ratings.values()) == pytest.approx(5000, abs=FIT_TOL)


def test_ppi_mean_intervals_cover_the_human_mean_under_a_biased_judge():
    """200 seeded replications: a judge that adds 0.2 to every score; the 95% interval covers the
    true human mean (0.5) at least 90% of the time (binomial sd at 200 draws: 1.5 points)."""
    rng = np.random.default_rng(7)
    covered = 0
    for _ in range(200):
        truth = rng.normal(0.5, 1.0, 1100)
        human = truth + rng.normal(0, 0.5, 1100)
        judge = truth + 0.2 + rng.normal(0, 0.5, 1100)
        result = ppi_mean(human[:100], judge[:100], judge[100:])
        covered += result.ppi.low <= 0.5 <= result.ppi.high
    assert covered >= 180


def test_bradley_terry_intervals_cover_the_planted_human_ratings():
    """60 seeded replications of 6 items: a biased judge; coverage of the true human BT ratings
    (fitted on 200,000 expected outcomes) over all 360 intervals at least 0.88."""
    strengths = np.linspace(-1, 1, 6)
    rng = np.random.default_rng(3)
    a, b, _, _ = planted_pairs(rng, strengths, 200_000, bias=0.0)
    margin = strengths[a] - strengths[b] + rng.normal(0, 1.5, len(a))
    truth = ppi_bradley_terry(
        list("abcdef"),
        pair_labels(a, b, 1 / (1 + np.exp(-margin))),
        np.zeros(len(a)),
        pair_labels([0], [1], [0.0]),
        lam=0.0,
        ridge=0.0,
    )
    covered = total = 0
    for _ in range(60):
        a, b, human, judge = planted_pairs(rng, strengths, 200, bias=1.0)
        c, d, _, judge_only = planted_pairs(rng, strengths, 1000, bias=1.0)
        ratings = ppi_bradley_terry(list("abcdef"), pair_labels(a, b, human), judge, pair_labels(c, d, judge_only))
        for name, row in ratings.items():
            covered += row.ppi.low <= truth[name].ppi.estimate <= row.ppi.high
            total += 1
    assert covered / total >= 0.88


def test_pair_labels_refuse_a_pair_of_one_item_and_points_outside_0_1():
    with pytest.raises(ValueError, match="different"):
        pair_labels([0], [0], [1.0])
    with pytest.raises(ValueError, match=r"\[0, 1\]"):
        pair_labels([0], [1], [2.0])
    with pytest.raises(ValueError, match="same length"):
        pair_labels([0, 1], [1], [1.0])


def test_votes_needed_is_the_least_count_that_narrows_the_interval():
    result = ppi_mean(HUMAN * 10, JUDGE * 10, JUDGE_ONLY * 100)
    width = (result.ppi.high - result.ppi.low) / 2
    more = votes_needed(result, width)
    parts, big_n = result.parts, result.n_judged

    def planned_width(n: int) -> float:
        return 2 * Z95 * math.sqrt(parts.variance(parts.best_lam(n, big_n), n, big_n))

    assert planned_width(40 + more) <= width < planned_width(40 + more - 1)
    assert votes_needed(result, 2 * (result.ppi.high - result.ppi.low)) == 0
    with pytest.raises(ValueError, match="positive"):
        votes_needed(result, 0.0)


def test_variance_parts_lambda_is_clipped_to_0_1():
    assert VarianceParts(human=1.0, judge=1.0, cross=-0.5).best_lam(10, 100) == 0.0
    assert VarianceParts(human=1.0, judge=0.1, cross=1.0).best_lam(10, 100) == 1.0
    assert VarianceParts(human=1.0, judge=1.0, cross=0.5).best_lam(10, 0) == 0.0
