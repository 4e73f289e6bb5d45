"""``stopping=pair_effects``: a pair's judgments share a persistent effect, so they are not independent votes."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.simulated.sim import LatentJudge
from rankkit.strategies import make_strategy
from rankkit.strategies._bt_posterior import Evidence, choice_posterior, exact_posterior
from rankkit.strategies._pair_effects import (
    PAIR_SDS,
    choice_weights,
    pair_effect_log_likelihood,
    pair_totals,
    vote_weights,
)
from rankkit.strategies._stopping import StopTarget, bt_estimate, current_order, is_target_settled
from tests.helpers import make_task, rank_once

#: A judge whose only noise is a persistent preference per pair.
PAIR_ONLY = {"perception": 0.0, "pair_noise": 0.0, "slot_bias": 0.0, "grade_noise": 0.0, "pair_effect": 0.3}


def round_robin(n: int) -> Evidence:
    """Row i beats every later row, in both orders: a consistent tournament of 2·C(n, 2) judgments."""
    evidence = Evidence(n)
    for i in range(n):
        for j in range(i + 1, n):
            evidence.add(i, j, 1.0)
            evidence.add(j, i, 0.0)
    return evidence


def test_pair_totals_add_both_orders_of_a_pair_and_halve_ties():
    evidence = Evidence(3)
    for first, second, outcome in [(0, 1, 1.0), (1, 0, 0.5), (2, 0, 1.0)]:
        evidence.add(first, second, outcome)
    low, high, wins, counts = pair_totals(evidence)
    assert low.tolist() == [0, 0] and high.tolist() == [1, 2]
    assert wins.tolist() == pytest.approx([1.5, 0.0], abs=1e-12)
    assert counts.tolist() == pytest.approx([2.0, 1.0], abs=1e-12)


def test_without_a_pair_effect_the_likelihood_is_bradley_terrys():
    rng = np.random.default_rng(0)
    evidence = Evidence(4)
    for _ in range(12):
        first, second = rng.choice(4, 2, replace=False)
        evidence.add(int(first), int(second), float(rng.integers(0, 2)))
    theta = rng.normal(size=(5, 4))
    first, second, outcome = evidence.arrays
    gaps = theta[:, first] - theta[:, second]
    expected = -(outcome * np.logaddexp(0, -gaps) + (1 - outcome) * np.logaddexp(0, gaps)).sum(axis=1)
    assert pair_effect_log_likelihood(theta, evidence, 0.0) == pytest.approx(expected, abs=1e-9)


def test_a_pairs_second_vote_is_worth_less_than_an_independent_one():
    evidence = round_robin(2)
    curvature = np.full(2, 0.25)
    assert vote_weights(evidence, curvature, 0.0) == pytest.approx([1.0, 1.0], abs=1e-12)
    assert vote_weights(evidence, curvature, 2.0) == pytest.approx([1 / 3, 1 / 3], abs=1e-12)  # 1/(1 + 2·¼·4)


def test_both_orders_of_a_pair_are_not_counted_as_two_independent_votes():
    """The same consistent tournament in both orders: plain Bradley–Terry counts 2 votes a pair and
    settles the winner at 0.9; with pair effects the probability is lower and it is not settled."""
    evidence = round_robin(4)
    mean, cov = exact_posterior(evidence, 2.0, np.zeros(4))
    order, target = current_order(mean), StopTarget("top1")
    independent, _ = bt_estimate(order, target, evidence, 1, mean)
    shared, _ = bt_estimate(order, target, evidence, 1, mean, pair_sds=PAIR_SDS)
    assert shared < independent - 0.03  # 0.845 against 0.906 (Monte Carlo error < 0.005 each)
    assert is_target_settled(mean, cov, target, 0.9, 1, evidence, "bt")
    assert not is_target_settled(mean, cov, target, 0.9, 1, evidence, "pair_effects")


@pytest.mark.parametrize("strategy", ["active", "swiss"])
def test_a_persistent_pair_preference_that_inverts_the_winner_stops_only_todays_rule(strategy):
    """Four answers, the best two 0.2 apart; the judge's pair effect makes the second beat the best
    in both orders (seed 3). Today's rule settles on the wrong winner; the default does not stop."""
    task = make_task([0.0, 1.0, 2.0, 2.2], scale=(-10, 10))
    judge = LatentJudge(**PAIR_ONLY, seed=3)
    latent = judge.latent(task)
    order = "order=both," if strategy == "swiss" else ""
    outcomes = {}
    for rule in ("bt", "pair_effects"):
        spec = f"{strategy}:until=top1,confidence=0.9,{order}budget=3,stopping={rule}"
        ranking, _, _ = rank_once(task, make_strategy(spec), judge, 0)
        winner = max(ranking.scores, key=ranking.scores.get)
        outcomes[rule] = (next(iter(ranking.extras.values())).stopped, winner == max(latent, key=latent.get))
    assert outcomes["bt"] == ("target", False)
    assert outcomes["pair_effects"][0] != "target"


def test_over_many_pair_effect_judges_todays_rule_is_overconfident_and_the_default_is_not():
    """Seeds 0..19 of the judge above: today's rule stops on every task and is wrong on several;
    the default makes no wrong stop."""
    task = make_task([0.0, 1.0, 2.0, 2.2], scale=(-10, 10))
    wrong = {"bt": 0, "pair_effects": 0}
    for seed in range(20):
        judge = LatentJudge(**PAIR_ONLY, seed=seed)
        latent = judge.latent(task)
        for rule in wrong:
            spec = f"active:until=top1,confidence=0.9,budget=3,stopping={rule}"
            ranking, _, _ = rank_once(task, make_strategy(spec), judge, 0)
            stopped = next(iter(ranking.extras.values())).stopped == "target"
            wrong[rule] += stopped and max(ranking.scores, key=ranking.scores.get) != max(latent, key=latent.get)
    assert wrong["bt"] >= 3  # 3 of 20 would already be below 0.9
    assert wrong["pair_effects"] == 0


@pytest.mark.parametrize(
    "spec",
    ["active:until=top1,stopping=independent", "swiss:until=top1,stopping=BT", "setwise_groups:until=top1,stopping=x"],
)
def test_an_unknown_stopping_rule_is_refused_by_name(spec):
    with pytest.raises(SpecError, match="stopping must be one of pair_effects, bt"):
        make_strategy(spec)


def test_a_first_choice_counts_less_the_more_often_its_pairs_were_shown_together():
    """Pair (0, 1) in two choices: each 1 / (1 + 2·(5/3)/4) = 6/11; pair (2, 3) once: 12/17."""
    weights = choice_weights([((0, 1), 0), ((1, 0), 1), ((2, 3), 2)])
    assert weights == pytest.approx([6 / 11, 6 / 11, 12 / 17], abs=1e-12)
    assert choice_weights([((0, 1, 2), 0)] * 3)[0] < choice_weights([((0, 1, 2), 0)])[0]


def test_weighted_choices_widen_the_posterior_and_unit_weights_change_nothing():
    choices = [((0, 1, 2), 0), ((1, 2, 0), 1), ((0, 2, 1), 2), ((2, 1, 0), 0)] * 4  # every row chosen: finite
    plain = choice_posterior(choices, 3, 100.0)
    ones = choice_posterior(choices, 3, 100.0, weights=[1.0] * len(choices))
    halves = choice_posterior(choices, 3, 100.0, weights=[0.5] * len(choices))
    assert np.allclose(plain[0], ones[0], atol=1e-9) and np.allclose(plain[1], ones[1], atol=1e-9)
    assert np.allclose(halves[0], plain[0], atol=1e-3)  # same optimum (the prior is nearly flat)
    gap = np.array([1.0, -1.0, 0.0])  # the variance of θ0 − θ1 doubles when every choice counts half
    assert float(gap @ halves[1] @ gap) == pytest.approx(2 * float(gap @ plain[1] @ gap), rel=0.02)


def test_setwise_groups_pair_effects_rule_stops_less_than_todays_rule():
    """Six answers, groups of 3 narrowed to the contenders: today's rule settles on most of 10 judge
    seeds; with pair effects the contenders' repeated meetings count less and it settles on fewer."""
    task = make_task([0.0, 1.0, 2.0, 2.2, 0.5, 1.5], scale=(-10, 10))
    stops = {"bt": 0, "pair_effects": 0}
    for seed in range(10):
        judge = LatentJudge(**PAIR_ONLY, seed=seed)
        for rule in stops:
            spec = f"setwise_groups:until=top1,k=3,criterion=target,rounds=1000,confidence=0.9,budget=4,stopping={rule}"
            ranking, _, _ = rank_once(task, make_strategy(spec), judge, 0)
            stops[rule] += next(iter(ranking.extras.values())).stopped == "target"
    assert stops["bt"] >= 7
    assert stops["pair_effects"] < stops["bt"] - 3
