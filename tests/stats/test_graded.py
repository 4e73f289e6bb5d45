"""Arena-hard's weighting, WildBench's length rule, the Davidson fit and the ordinal fit (rankkit.stats.graded)."""

import math
import random

import numpy as np
import pytest

from rankkit.stats.graded import (
    arena_hard_outcomes,
    arena_hard_score,
    davidson,
    davidson_fit,
    davidson_log_likelihood,
    length_penalised_level,
    level_outcome,
    ordinal,
    ordinal_fit,
    ordinal_log_likelihood,
    wildbench_reward,
)
from rankkit.stats.ratings import bradley_terry


def test_a_strong_verdict_counts_three_wins_and_a_tie_one_half():
    outcomes = arena_hard_outcomes([("m", "b", 2), ("m", "b", 0), ("m", "b", -1)])
    assert outcomes == [("m", "b", 1.0)] * 3 + [("m", "b", 0.5), ("m", "b", 0.0)]


def test_arena_hard_score_is_the_weighted_mean_from_either_side():
    # m: A>>B (3 x 1), tie (0.5), and from the baseline's side B>A (m wins once): (3 + 0.5 + 1) / 5
    matches = [("m", "b", 2), ("m", "b", 0), ("b", "m", -1)]
    assert arena_hard_score(matches, "m") == pytest.approx(4.5 / 5, abs=1e-12)
    assert arena_hard_score(matches, "b") == pytest.approx(0.5 / 5, abs=1e-12)
    assert math.isnan(arena_hard_score(matches, "absent"))


def test_arena_hard_weight_must_be_positive():
    with pytest.raises(ValueError, match="weight"):
        arena_hard_outcomes([("m", "b", 2)], weight=0)


@pytest.mark.parametrize(
    ("level", "first", "second", "expected"),
    [
        (1, 1600, 1000, 0),
        (1, 1400, 1000, 1),
        (-1, 1000, 1600, 0),
        (-1, 1600, 1000, -1),
        (2, 3000, 100, 2),
        (0, 9, 0, 0),
    ],
)
def test_wildbench_length_rule_turns_only_slight_wins_of_the_longer_answer_into_ties(level, first, second, expected):
    assert length_penalised_level(level, first, second, margin=500) == expected


def test_wildbench_rewards_and_outcomes():
    assert [wildbench_reward(lv) for lv in (2, 1, 0, -1, -2)] == [1.0, 0.5, 0.0, -0.5, -1.0]
    assert [level_outcome(lv) for lv in (2, 0, -2)] == [1.0, 0.5, 0.0]


def _davidson_draws(strengths, nu, count, seed):
    rng = random.Random(seed)
    names = list(strengths)
    outcomes = []
    for _ in range(count):
        a, b = rng.sample(names, 2)
        pa, pb = math.exp(strengths[a]), math.exp(strengths[b])
        tie = nu * math.sqrt(pa * pb)
        u = rng.random() * (pa + pb + tie)
        outcomes.append((a, b, 1.0 if u < pa else 0.5 if u < pa + tie else 0.0))
    return outcomes


def test_davidson_recovers_planted_strengths_and_tie_parameter():
    strengths = {"a": 1.0, "b": 0.3, "c": -0.2, "d": -1.1}  # mean zero, as the fit reports
    theta, nu = davidson_fit(_davidson_draws(strengths, 0.8, 6000, seed=1), list(strengths), alpha=0.0)
    for name, value in strengths.items():
        assert theta[name] == pytest.approx(value, abs=0.1)
    assert nu == pytest.approx(0.8, abs=0.1)


def test_davidson_probabilities_sum_to_one():
    # one game each way of every outcome between two items: the likelihood of each is a probability
    import numpy as np

    theta, log_nu = [0.4, -0.4], math.log(0.7)
    total = 0.0
    for wins, ties in (
        ([[0, 1], [0, 0]], [[0, 0], [0, 0]]),
        ([[0, 0], [1, 0]], [[0, 0], [0, 0]]),
        ([[0, 0], [0, 0]], [[0, 1], [0, 0]]),
    ):
        total += math.exp(davidson_log_likelihood(theta, log_nu, np.array(wins), np.array(ties)))
    assert total == pytest.approx(1.0, abs=1e-12)


def test_davidson_without_ties_orders_as_bradley_terry():
    outcomes = [(a, b, o) for a, b, o in _davidson_draws({"a": 1.0, "b": 0.0, "c": -1.0}, 0.0, 600, seed=2)]
    fitted, bt = davidson(outcomes), bradley_terry(outcomes)
    assert sorted(fitted, key=fitted.get) == sorted(bt, key=bt.get)


def test_davidson_edge_cases():
    assert davidson([], ["a", "b"]) == {"a": 1000.0, "b": 1000.0}
    unbeaten = davidson([("a", "b", 1.0)] * 5)
    assert math.isfinite(unbeaten["a"]) and unbeaten["a"] > unbeaten["b"]
    with pytest.raises(ValueError, match="outcome"):
        davidson([("a", "b", 0.7)])


def _threshold_draws(strengths: dict[str, float], eta: float, gamma: float | None, count: int, seed: int):
    """Graded matches under the ordinal model: d = θ_a − θ_b + logistic noise, cut at η and η + γ."""
    rng = random.Random(seed)
    names = list(strengths)
    matches = []
    for _ in range(count):
        a, b = rng.sample(names, 2)
        u = rng.random()
        d = strengths[a] - strengths[b] + math.log(u / (1 - u))
        strong = gamma is not None and abs(d) > eta + gamma
        matches.append((a, b, 0 if abs(d) <= eta else int(math.copysign(2 if strong else 1, d))))
    return matches


def test_ordinal_recovers_planted_strengths_and_thresholds():
    strengths = {"a": 1.2, "b": 0.4, "c": -0.3, "d": -1.3}
    theta, eta, gamma = ordinal_fit(_threshold_draws(strengths, 0.4, 1.2, 8000, seed=3), list(strengths), alpha=0.0)
    centre = sum(strengths.values()) / len(strengths)
    for name, value in strengths.items():
        assert theta[name] == pytest.approx(value - centre, abs=0.1)
    assert eta == pytest.approx(0.4, abs=0.05)
    assert gamma == pytest.approx(1.2, abs=0.1)


def test_ordinal_on_three_levels_is_rao_kupper():
    strengths = {"a": 0.8, "b": 0.0, "c": -0.8}
    theta, eta, gamma = ordinal_fit(_threshold_draws(strengths, 0.6, None, 6000, seed=4), list(strengths), alpha=0.0)
    assert gamma is None
    assert eta == pytest.approx(0.6, abs=0.06)
    assert theta["a"] - theta["c"] == pytest.approx(1.6, abs=0.15)


@pytest.mark.parametrize("log_gamma", [math.log(1.1), None])
def test_ordinal_gradient_matches_finite_differences(log_gamma):
    first, second = np.array([0, 1, 2, 0, 2, 1, 0]), np.array([1, 2, 0, 2, 1, 0, 1])
    levels = np.array([2, 1, 0, -1, -2, 0, 1]) if log_gamma is not None else np.array([1, 1, 0, -1, -1, 0, 1])
    counts = np.array([1.0, 2, 3, 1, 1, 2, 1])
    theta, log_eta, step = np.array([0.3, -0.2, 0.5]), math.log(0.4), 1e-6

    def value(theta=theta, log_eta=log_eta, log_gamma=log_gamma):
        return ordinal_log_likelihood(theta, log_eta, log_gamma, first, second, levels, counts)[0]

    _, gradient, d_eta, d_gamma = ordinal_log_likelihood(theta, log_eta, log_gamma, first, second, levels, counts)
    for k in range(3):
        shift = np.eye(3)[k] * step
        assert gradient[k] == pytest.approx((value(theta + shift) - value(theta - shift)) / (2 * step), abs=1e-6)
    assert d_eta == pytest.approx(
        (value(log_eta=log_eta + step) - value(log_eta=log_eta - step)) / (2 * step), abs=1e-6
    )
    if log_gamma is not None:
        numeric = (value(log_gamma=log_gamma + step) - value(log_gamma=log_gamma - step)) / (2 * step)
        assert d_gamma == pytest.approx(numeric, abs=1e-6)


def test_ordinal_level_probabilities_sum_to_one():
    first, second = np.zeros(5, dtype=np.intp), np.ones(5, dtype=np.intp)
    levels, theta = np.arange(-2, 3), np.array([0.7, -0.1])
    log_p = [
        ordinal_log_likelihood(
            theta, math.log(0.3), math.log(0.9), first[:1], second[:1], levels[k : k + 1], np.ones(1)
        )[0]
        for k in range(5)
    ]
    assert sum(math.exp(v) for v in log_p) == pytest.approx(1.0, abs=1e-12)


def test_ordinal_edge_cases():
    assert ordinal([], ["a", "b"]) == {"a": pytest.approx(1000.0, abs=1e-9), "b": pytest.approx(1000.0, abs=1e-9)}
    unbeaten = ordinal([("a", "b", 1)] * 5 + [("a", "b", 0)])
    assert math.isfinite(unbeaten["a"]) and unbeaten["a"] > unbeaten["b"]
    with pytest.raises(ValueError, match="level"):
        ordinal([("a", "b", 3), ("a", "b", 0)])
    theta, eta, gamma = ordinal_fit([("a", "b", 1), ("b", "a", -2), ("a", "b", 2)], ["a", "b"], alpha=0.1)
    assert theta["a"] > theta["b"] and 0 < eta < 0.5 and math.isfinite(gamma)  # no tie: η small, finite
