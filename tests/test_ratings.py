"""Rating models: online Elo, Elo over permutations, Bradley–Terry (choix), win rates, bootstrap."""

from __future__ import annotations

import math
import random

import choix
import numpy as np
import pytest
from scipy.stats import spearmanr

from rankkit.ratings import (
    bootstrap,
    bradley_terry,
    elo_expected,
    elo_over_permutations,
    item_order,
    online_elo,
    win_matrix,
    win_rates,
)


def test_elo_expected_follows_the_elo_scale():
    assert elo_expected(1000, 1000) == pytest.approx(0.5)
    assert elo_expected(1400, 1000) == pytest.approx(10 / 11)
    assert elo_expected(1000, 1400) == pytest.approx(1 / 11)


def test_online_elo_single_update():
    ratings = online_elo([("a", "b", 1.0)], k=32)
    assert ratings == {"a": pytest.approx(1016.0), "b": pytest.approx(984.0)}
    tie = online_elo([("a", "b", 0.5)], k=32)
    assert tie == {"a": pytest.approx(1000.0), "b": pytest.approx(1000.0)}


def test_online_elo_is_zero_sum_and_keeps_unplayed_items_at_initial():
    matches = [("a", "b", 1.0), ("b", "c", 0.5), ("c", "a", 0.0)]
    ratings = online_elo(matches, items=["a", "b", "c", "d"], k=20)
    assert list(ratings) == ["a", "b", "c", "d"]
    assert sum(ratings.values()) == pytest.approx(4000.0)
    assert ratings["d"] == 1000.0


def test_online_elo_depends_on_order_and_permutations_average_it_out():
    matches = [("a", "b", 1.0)] * 5 + [("b", "a", 1.0)] * 5
    forward = online_elo(matches, k=32)
    backward = online_elo(matches[::-1], k=32)
    assert forward["a"] < 1000 < backward["a"]  # the last results weigh most
    averaged = elo_over_permutations(matches, permutations=400, seed=1, k=32)
    assert abs(averaged["a"] - 1000) < abs(forward["a"] - 1000)
    assert elo_over_permutations(matches, permutations=10, seed=3) == elo_over_permutations(matches, permutations=10, seed=3)


def test_outcomes_must_be_win_tie_or_loss():
    with pytest.raises(ValueError, match="outcome"):
        online_elo([("a", "b", 0.7)])
    with pytest.raises(ValueError, match="permutations"):
        elo_over_permutations([("a", "b", 1.0)], permutations=0)


def test_item_order_appends_unknown_items():
    assert item_order([("x", "y", 1.0), ("z", "x", 0.0)]) == ["x", "y", "z"]
    assert item_order([("x", "y", 1.0)], ["y", "w"]) == ["y", "w", "x"]


def test_win_matrix_counts_a_tie_as_half_a_win_each_way():
    wins = win_matrix([("a", "b", 1.0), ("a", "b", 0.5), ("b", "a", 1.0)], {"a": 0, "b": 1})
    assert wins.tolist() == [[0.0, 1.5], [1.5, 0.0]]


def test_bradley_terry_is_on_the_elo_scale():
    # a wins 10 of 11: the ML strength gap is ln 10, i.e. 400 Elo points.
    matches = [("a", "b", 1.0)] * 10 + [("a", "b", 0.0)]
    ratings = bradley_terry(matches, alpha=1e-6)
    assert ratings["a"] - ratings["b"] == pytest.approx(400.0, abs=1.0)
    assert (ratings["a"] + ratings["b"]) / 2 == pytest.approx(1000.0)


def test_bradley_terry_ties_balance_and_regularisation_keeps_it_finite():
    assert bradley_terry([("a", "b", 0.5)] * 4) == {"a": pytest.approx(1000.0), "b": pytest.approx(1000.0)}
    undefeated = bradley_terry([("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0)], items=["a", "b", "c", "d"])
    assert all(math.isfinite(v) for v in undefeated.values())
    assert undefeated["a"] > undefeated["b"] > undefeated["c"]
    assert bradley_terry([], items=["a", "b"]) == {"a": 1000.0, "b": 1000.0}


def test_bradley_terry_recovers_planted_strengths():
    random.seed(7)
    np.random.seed(7)
    planted = choix.generate_params(12, interval=4.0)
    data = choix.generate_pairwise(planted, 3000)
    matches = [(f"i{winner}", f"i{loser}", 1.0) for winner, loser in data]
    items = [f"i{i}" for i in range(12)]
    ratings = bradley_terry(matches, items)
    assert spearmanr(planted, [ratings[i] for i in items])[0] > 0.95
    # and the scale: rating gaps are planted log-strength gaps times 400 / ln 10
    fitted_gap = ratings[items[int(np.argmax(planted))]] - ratings[items[int(np.argmin(planted))]]
    planted_gap = (planted.max() - planted.min()) * 400 / math.log(10)
    assert fitted_gap == pytest.approx(planted_gap, rel=0.2)


def test_win_rates():
    rates = win_rates([("a", "z", 1.0), ("b", "z", 0.5), ("b", "z", 0.0)], items=["a", "b", "c"])
    assert rates["a"] == 1.0 and rates["b"] == 0.25 and rates["z"] == pytest.approx(1.5 / 3)
    assert math.isnan(rates["c"])


def test_bootstrap_intervals_contain_the_rating_and_shrink_with_more_matches():
    rng = random.Random(0)
    def sample(n):
        return [("a", "b", 1.0 if rng.random() < 0.7 else 0.0) for _ in range(n)]
    small = bootstrap(bradley_terry, sample(40), rounds=100, seed=1)
    large = bootstrap(bradley_terry, sample(1000), rounds=100, seed=1)
    for result in (small, large):
        for interval in result.values():
            assert interval.low <= interval.rating <= interval.high
    assert (large["a"].high - large["a"].low) < (small["a"].high - small["a"].low)


def test_bootstrap_is_seeded_and_wraps_any_method():
    matches = [("a", "b", 1.0), ("a", "c", 1.0), ("b", "c", 0.0), ("c", "a", 0.5)] * 5
    first = bootstrap(win_rates, matches, rounds=50, seed=2)
    assert first == bootstrap(win_rates, matches, rounds=50, seed=2)
    assert first["a"].rating == pytest.approx(win_rates(matches)["a"])
    elo = bootstrap(elo_over_permutations, matches, rounds=10, seed=2, permutations=5, k=8)
    assert set(elo) == {"a", "b", "c"}
    with pytest.raises(ValueError):
        bootstrap(win_rates, matches, rounds=0)
    with pytest.raises(ValueError):
        bootstrap(win_rates, matches, confidence=1.5)
