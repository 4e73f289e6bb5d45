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
    rule_pair_sds,
    vote_weights,
)
from rankkit.strategies._pair_sd import PairSdPosterior, pair_sd_posterior
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


def integrated_log_likelihood(theta: np.ndarray, evidence: Evidence, pair_sd: float) -> np.ndarray:
    """The pair-effect log-likelihood by a dense trapezoid over the effect's standard normal (no table)."""
    from scipy.special import log_expit, logsumexp

    low, high, wins, counts = pair_totals(evidence)
    gaps = theta[:, low] - theta[:, high]
    z = np.linspace(-14.0, 14.0, 8001)
    shifted = gaps[:, :, None] + pair_sd * z
    per_point = wins[:, None] * log_expit(shifted) + (counts - wins)[:, None] * log_expit(-shifted) - z * z / 2
    return (logsumexp(per_point, axis=2) + np.log((z[1] - z[0]) / np.sqrt(2 * np.pi))).sum(axis=1)


@pytest.mark.parametrize("pair_sd", [0.5, 2.0, 4.0])
def test_the_tabulated_likelihood_matches_direct_integration_also_past_the_table(pair_sd):
    """Mixed counts and ties; gaps inside the table agree to 2e-3 in total; gaps up to ±300 (the
    linear tails, log-likelihoods in the thousands: such draws weigh nothing) to 0.5%."""
    rng = np.random.default_rng(1)
    evidence = Evidence(6)
    for _ in range(3):  # up to 6 judgments a pair (re-asks)
        for first, second in rng.permutation([(i, j) for i in range(6) for j in range(6) if i != j])[:20]:
            evidence.add(int(first), int(second), float(rng.choice([0.0, 0.5, 1.0])))
    near, far = rng.normal(size=(40, 6)) * 3, rng.normal(size=(10, 6)) * 50
    for theta, tolerance in [(near, {"abs": 2e-3}), (far, {"rel": 5e-3})]:
        expected = integrated_log_likelihood(theta, evidence, pair_sd)
        assert pair_effect_log_likelihood(theta, evidence, pair_sd) == pytest.approx(expected, **tolerance)


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
def test_a_persistent_pair_preference_that_inverts_the_winner_stops_only_the_independent_vote_rule(strategy):
    """Four answers, the best two 0.2 apart; the judge's pair effect makes the second beat the best
    in both orders (seed 3). ``stopping=bt`` settles on the wrong winner; ``pair_effects`` does not stop."""
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


def test_over_many_pair_effect_judges_the_independent_vote_rule_is_overconfident_and_pair_effects_is_not():
    """Seeds 0..19 of the judge above: ``stopping=bt`` stops on every task and is wrong on several;
    ``pair_effects``, averaged or with the judge's ``pair_sd``, makes no wrong stop."""
    task = make_task([0.0, 1.0, 2.0, 2.2], scale=(-10, 10))
    wrong = {"bt": 0, "pair_effects": 0, "pair_effects,pair_sd=2": 0}
    for seed in range(20):
        judge = LatentJudge(**PAIR_ONLY, seed=seed)
        latent = judge.latent(task)
        for rule in wrong:
            spec = f"active:until=top1,confidence=0.9,budget=3,stopping={rule}"
            ranking, _, _ = rank_once(task, make_strategy(spec), judge, 0)
            stopped = next(iter(ranking.extras.values())).stopped == "target"
            wrong[rule] += stopped and max(ranking.scores, key=ranking.scores.get) != max(latent, key=latent.get)
    assert wrong["bt"] >= 3  # 3 of 20 would already be below 0.9
    assert wrong["pair_effects"] == wrong["pair_effects,pair_sd=2"] == 0


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


def test_setwise_groups_pair_effects_rule_stops_less_than_the_independent_vote_rule():
    """Six answers, groups of 3 narrowed to the contenders: ``stopping=bt`` settles on most of 10 judge
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


def simulated_tasks(pair_sd: float, tasks: int, seed: int) -> list[Evidence]:
    """Tasks of 6 answers (strengths N(0, 1.5²)) judged in both orders by a Bradley–Terry judge whose
    pairs share an effect of sd ``pair_sd``."""
    rng = np.random.default_rng(seed)
    evidences = []
    for _ in range(tasks):
        theta = rng.normal(scale=1.5, size=6)
        evidence = Evidence(6)
        for i in range(6):
            for j in range(i + 1, 6):
                gap = theta[i] - theta[j] + pair_sd * rng.normal()
                for first, second, sign in [(i, j, 1.0), (j, i, -1.0)]:
                    wins = rng.random() < 1.0 / (1.0 + np.exp(-gap))
                    evidence.add(first, second, float(wins if sign > 0 else not wins))
        evidences.append(evidence)
    return evidences


def test_pooled_over_tasks_the_estimate_tells_a_pair_effect_judge_from_an_independent_one():
    """40 tasks each: an independent judge's posterior sits at small sds, one with s = 3 at large ones."""
    independent = pair_sd_posterior(simulated_tasks(0.0, 40, 0), draws=1000)
    persistent = pair_sd_posterior(simulated_tasks(3.0, 40, 1), draws=1000)
    assert sum(independent.posterior) == pytest.approx(1.0, abs=1e-9)
    assert independent.upper() <= 1.0 < 2.0 <= persistent.best
    assert (independent.tasks, independent.judgments) == (40, 40 * 30)


def test_the_estimates_upper_value_is_the_smallest_sd_holding_the_level():
    estimate = PairSdPosterior(grid=(0.0, 1.0, 2.0), posterior=(0.5, 0.46, 0.04), tasks=1, judgments=2)
    assert (estimate.best, estimate.upper(0.95), estimate.upper(0.5)) == (0.0, 1.0, 0.0)


def test_a_known_pair_sd_replaces_the_rules_average():
    assert rule_pair_sds("pair_effects") == PAIR_SDS
    assert rule_pair_sds("pair_effects", 1.5) == (1.5,)
    assert rule_pair_sds("bt", None) == (0.0,)


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("active:until=top1,stopping=pair_effects,pair_sd=-0.5", "pair_sd must be between 0 and 10"),
        ("swiss:until=top1,stopping=pair_effects,pair_sd=11", "pair_sd must be between 0 and 10"),
        ("active:until=top1,pair_sd=1", "pair_sd needs stopping=pair_effects"),
        ("setwise_groups:until=top1,pair_sd=1", "pair_sd needs stopping=pair_effects"),
    ],
)
def test_a_pair_sd_out_of_range_or_without_its_rule_is_refused(spec, message):
    with pytest.raises(SpecError, match=message):
        make_strategy(spec)


def test_a_larger_known_pair_sd_only_lowers_the_winners_probability():
    """The consistent tournament of 5: the probability falls as the judge's pair_sd grows."""
    evidence = round_robin(5)
    mean, _ = exact_posterior(evidence, 2.0, np.zeros(5))
    order, target = current_order(mean), StopTarget("top1")
    probabilities = [bt_estimate(order, target, evidence, 1, mean, pair_sds=(sd,))[0] for sd in (0.0, 1.0, 3.0)]
    assert probabilities[0] > probabilities[1] + 0.02 > probabilities[2] + 0.04
