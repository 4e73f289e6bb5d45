"""Rating models: online Elo, Elo over permutations, Bradley–Terry (choix), win rates (their bootstrap intervals: tests/stats/test_intervals.py)."""

from __future__ import annotations

import itertools
import math
import random

import choix
import numpy as np
import pytest
from scipy.stats import spearmanr

from rankkit.stats.ratings import (
    bradley_terry,
    default_alpha,
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
    outcomes = [("a", "b", 1.0), ("b", "c", 0.5), ("c", "a", 0.0)]
    ratings = online_elo(outcomes, items=["a", "b", "c", "d"], k=20)
    assert list(ratings) == ["a", "b", "c", "d"]
    assert sum(ratings.values()) == pytest.approx(4000.0)
    assert ratings["d"] == 1000.0


def test_online_elo_depends_on_order_and_permutations_average_it_out():
    outcomes = [("a", "b", 1.0)] * 5 + [("b", "a", 1.0)] * 5
    forward = online_elo(outcomes, k=32)
    backward = online_elo(outcomes[::-1], k=32)
    assert forward["a"] < 1000 < backward["a"]  # the last results weigh most
    averaged = elo_over_permutations(outcomes, permutations=400, seed=1, k=32)
    assert abs(averaged["a"] - 1000) < abs(forward["a"] - 1000)
    assert elo_over_permutations(outcomes, permutations=10, seed=3) == elo_over_permutations(
        outcomes, permutations=10, seed=3
    )


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
    np.testing.assert_allclose(wins, [[0.0, 1.5], [1.5, 0.0]], rtol=0, atol=1e-12)


def test_bradley_terry_is_on_the_elo_scale():
    # a wins 10 of 11: the ML strength gap is ln 10, i.e. 400 Elo points.
    outcomes = [("a", "b", 1.0)] * 10 + [("a", "b", 0.0)]
    ratings = bradley_terry(outcomes, alpha=1e-6)
    assert ratings["a"] - ratings["b"] == pytest.approx(400.0, abs=1.0)
    assert (ratings["a"] + ratings["b"]) / 2 == pytest.approx(1000.0)


def test_bradley_terry_ties_balance_and_regularisation_keeps_it_finite():
    assert bradley_terry([("a", "b", 0.5)] * 4) == {"a": pytest.approx(1000.0), "b": pytest.approx(1000.0)}
    undefeated = bradley_terry([("a", "b", 1.0), ("b", "c", 1.0), ("a", "c", 1.0)], items=["a", "b", "c", "d"])
    assert all(math.isfinite(v) for v in undefeated.values())
    assert undefeated["a"] > undefeated["b"] > undefeated["c"]
    assert bradley_terry([], items=["a", "b"]) == pytest.approx({"a": 1000.0, "b": 1000.0}, rel=1e-12)


def test_bradley_terry_recovers_planted_strengths():
    random.seed(7)
    np.random.seed(7)
    planted = choix.generate_params(12, interval=4.0)
    data = choix.generate_pairwise(planted, 3000)
    outcomes = [(f"i{winner}", f"i{loser}", 1.0) for winner, loser in data]
    items = [f"i{i}" for i in range(12)]
    ratings = bradley_terry(outcomes, items)
    assert spearmanr(planted, [ratings[i] for i in items])[0] > 0.95
    # and the scale: rating gaps are planted log-strength gaps times 400 / ln 10
    fitted_gap = ratings[items[int(np.argmax(planted))]] - ratings[items[int(np.argmin(planted))]]
    planted_gap = (planted.max() - planted.min()) * 400 / math.log(10)
    assert fitted_gap == pytest.approx(planted_gap, rel=0.2)


def test_win_rates():
    rates = win_rates([("a", "z", 1.0), ("b", "z", 0.5), ("b", "z", 0.0)], items=["a", "b", "c"])
    assert rates["a"] == 1.0 and rates["b"] == 0.25 and rates["z"] == pytest.approx(1.5 / 3)
    assert math.isnan(rates["c"])


def test_elo_over_permutations_plays_each_order_as_online_elo():
    outcomes = [("a", "b", 1.0), ("b", "c", 0.5), ("c", "a", 1.0), ("a", "b", 0.0)]
    per_order = [online_elo(list(order), items=["a", "b", "c"], k=24) for order in itertools.permutations(outcomes)]
    for seed in range(5):
        one = elo_over_permutations(outcomes, items=["a", "b", "c"], permutations=1, seed=seed, k=24)
        assert any(all(one[n] == pytest.approx(r[n], abs=1e-9) for n in one) for r in per_order)
    # many orders: the average over all orders (each equally likely)
    many = elo_over_permutations(outcomes, items=["a", "b", "c"], permutations=4000, seed=1, k=24)
    for name in "abc":
        assert many[name] == pytest.approx(np.mean([r[name] for r in per_order]), abs=0.3)


def test_elo_over_permutations_blocks_of_orders_give_the_same_ratings(monkeypatch):
    import rankkit.stats.ratings as ratings

    rng = random.Random(3)
    outcomes = [(f"i{rng.randrange(6)}", f"j{rng.randrange(6)}", rng.choice([0.0, 0.5, 1.0])) for _ in range(50)]
    whole = elo_over_permutations(outcomes, permutations=30, seed=4)
    monkeypatch.setattr(ratings, "_ELO_BLOCK_ENTRIES", 7 * len(outcomes))  # blocks of 7 orders
    assert elo_over_permutations(outcomes, permutations=30, seed=4) == pytest.approx(whole, abs=1e-9)


def test_bradley_terry_sparse_fit_equals_the_dense_one_with_ties():
    rng = random.Random(5)
    items = [f"s{i}" for i in range(80)]
    # 150 outcomes among 80 items: sparse, so choix's ilsr_pairwise runs (ties listed both ways)
    outcomes = [(*rng.sample(items, 2), rng.choice([0.0, 0.5, 1.0, 1.0])) for _ in range(150)]
    ratings = bradley_terry(outcomes, items)
    dense = choix.ilsr_pairwise_dense(
        win_matrix(outcomes, {n: i for i, n in enumerate(items)}), alpha=default_alpha(len(items)), max_iter=1000
    )
    dense = 1000 + (dense - dense.mean()) * 400 / math.log(10)
    np.testing.assert_allclose([ratings[n] for n in items], dense, atol=1e-4)


def test_default_regularisation_keeps_the_elo_scale_at_many_items():
    # 200 items, 20 outcomes each: a fixed alpha = 0.01 (about 8 virtual outcomes per item) pulls
    # fitted strengths toward the mean; 0.2 / (N - 1) keeps rating gaps at the planted ones.
    rng = np.random.default_rng(0)
    planted = rng.normal(0.0, 1.0, 200)
    first = rng.integers(0, 200, 2000)
    second = (first + rng.integers(1, 200, 2000)) % 200
    won = rng.random(2000) < 1.0 / (1.0 + np.exp(planted[second] - planted[first]))
    items = [f"s{i}" for i in range(200)]
    outcomes = [(items[a], items[b], 1.0 if w else 0.0) for a, b, w in zip(first, second, won)]

    def slope(alpha):
        ratings = bradley_terry(outcomes, items, alpha=alpha)
        fitted = np.array([ratings[n] for n in items]) * math.log(10) / 400
        return np.polyfit(planted, fitted, 1)[0]

    assert default_alpha(200) == pytest.approx(0.2 / 199)
    assert 0.85 < slope(None) < 1.15
    assert slope(0.01) < 0.7


def test_sparse_ilsr_is_choix_ilsr_with_a_sparse_solve():
    import choix
    import numpy as np

    from rankkit.stats.ratings import sparse_ilsr

    rng = np.random.default_rng(3)
    n = 300
    winners, losers = rng.integers(0, n, 1500), rng.integers(0, n, 1500)
    keep = winners != losers
    winners, losers = winners[keep], losers[keep]
    ours = sparse_ilsr(n, winners, losers, alpha=0.2 / (n - 1))
    theirs = choix.ilsr_pairwise(n, np.column_stack([winners, losers]).tolist(), alpha=0.2 / (n - 1), max_iter=1000)
    assert np.abs(ours - theirs).max() < 1e-10


def test_bradley_terry_above_the_sparse_solve_size_matches_choix():
    import random

    import choix
    import numpy as np

    from rankkit.stats.ratings import ELO_BASE, ELO_SCALE, bradley_terry, default_alpha

    rng = random.Random(5)
    items = [f"s{i}" for i in range(400)]
    outcomes = [(*rng.sample(items, 2), rng.choice([1.0, 0.0, 1.0, 0.5])) for _ in range(1200)]
    ratings = bradley_terry(outcomes, items=items)
    # the same data through choix directly (ties listed once each way, decisive outcomes twice, alpha doubled)
    index = {name: k for k, name in enumerate(items)}
    pairs = []
    for a, b, outcome in outcomes:
        if outcome == 0.5:
            pairs += [(index[a], index[b]), (index[b], index[a])]
        else:
            winner, loser = (a, b) if outcome == 1.0 else (b, a)
            pairs += [(index[winner], index[loser])] * 2
    params = choix.ilsr_pairwise(len(items), pairs, alpha=2 * default_alpha(len(items)), max_iter=1000)
    expected = 1000 + (params - params.mean()) * ELO_SCALE / np.log(ELO_BASE)
    assert max(abs(ratings[name] - expected[k]) for k, name in enumerate(items)) < 1e-6
