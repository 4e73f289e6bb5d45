"""Active Bradley–Terry: the posterior, the pair criteria, the stopping rule, exact budgets,
recovery with a perfect judge, batching and determinism."""

from __future__ import annotations

import random
from collections import Counter
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import spearmanr as _spearmanr

import rankkit.strategies.active as active_module
from rankkit.data.specs import SpecError
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from rankkit.strategies._bt_posterior import Posterior, bt_posterior
from rankkit.strategies._pair_choice import (
    choose_pairs,
    expected_information,
    gap_distribution,
    information_bound,
    is_settled,
    order_doubt,
    pick_batch,
)
from rankkit.strategies.active import Active
from tests.helpers import (
    grades_received,
    human_order,
    make_task,
    perfect_judge,
    rank_once,
    score_order,
)


def spearmanr(order, reference):
    """Spearman correlation of two orders of the same ids."""
    return _spearmanr([order.index(c) for c in reference], range(len(reference)))[0]


def distinct_scores_task(seed, n=8):
    return make_task(random.Random(seed).sample(range(100), n), task_id=f"t{seed}")


# -- the model --------------------------------------------------------------------------------


def test_posterior_mean_is_choix_map_estimate():
    import choix

    rng = random.Random(0)
    items = [f"c{i}" for i in range(6)]
    outcomes = [(a, b, rng.choice([0.0, 1.0, 1.0])) for a, b in combinations(items, 2) if rng.random() < 0.7]
    prior_sd = 1.5
    mean, cov = bt_posterior(outcomes, items, prior_sd)
    data = [(items.index(a), items.index(b)) if s == 1.0 else (items.index(b), items.index(a)) for a, b, s in outcomes]
    # choix's penalty alpha·|θ|² is the prior's |θ|² / (2 prior_sd²).
    expected = choix.opt_pairwise(len(items), data, alpha=1 / (2 * prior_sd**2), method="Newton-CG", tol=1e-10)
    np.testing.assert_allclose(mean, expected, atol=1e-5)
    assert np.all(np.linalg.eigvalsh(cov) > 0)


def test_posterior_without_data_is_the_prior_and_a_tie_is_half_a_win_each_way():
    items = ["a", "b", "c"]
    mean, cov = bt_posterior([], items, prior_sd=2.0)
    np.testing.assert_allclose(mean, 0.0)
    np.testing.assert_allclose(cov, 4.0 * np.eye(3))
    tie_mean, _ = bt_posterior([("a", "b", 0.5)], items, prior_sd=2.0)
    np.testing.assert_allclose(tie_mean, 0.0, atol=1e-9)
    halves, _ = bt_posterior([("a", "b", 1.0), ("a", "b", 0.0)], items, prior_sd=2.0)
    two_ties, _ = bt_posterior([("a", "b", 0.5), ("a", "b", 0.5)], items, prior_sd=2.0)
    np.testing.assert_allclose(halves, two_ties, atol=1e-9)


def test_expected_information_is_zero_for_known_strengths_and_grows_with_uncertainty():
    means = np.zeros(3)
    info = expected_information(means, np.array([1e-6, 1.0, 3.0]))
    assert info[0] == pytest.approx(0.0, abs=1e-9)
    assert 0 < info[1] < info[2] < np.log(2)
    # At equal uncertainty, a lopsided pair tells less than an even one.
    assert expected_information(np.array([3.0]), np.array([1.0]))[0] < info[1]


def test_order_doubt():
    assert order_doubt(np.array([0.0]), np.array([1.0]))[0] == pytest.approx(0.5)
    assert order_doubt(np.array([-2.0]), np.array([1.0]))[0] == pytest.approx(
        order_doubt(np.array([2.0]), np.array([1.0]))[0]
    )
    assert order_doubt(np.array([2.0]), np.array([1.0]))[0] == pytest.approx(0.02275, abs=1e-4)


def test_settled_means_exactly_one_order_is_consistent():
    items = ["a", "b", "c"]
    assert is_settled([("a", "b", 1.0), ("c", "b", 0.0)], items)
    assert not is_settled([("a", "b", 1.0), ("a", "c", 1.0)], items)  # b vs c still open
    assert not is_settled([("a", "b", 1.0), ("b", "c", 1.0), ("c", "a", 1.0)], items)  # a cycle
    assert not is_settled([("a", "b", 1.0), ("b", "c", 0.5)], items)  # a tie orders nothing
    assert not is_settled([], items)


def test_pick_batch_prefers_disjoint_pairs_then_fills_with_the_best():
    pairs = [(0, 1), (0, 2), (2, 3), (1, 3)]
    values = np.array([0.9, 0.8, 0.7, 0.1])
    tiebreak = np.zeros(4)
    assert pick_batch(pairs, values, tiebreak, 1) == [(0, 1)]
    assert pick_batch(pairs, values, tiebreak, 2) == [(0, 1), (2, 3)]
    assert pick_batch(pairs, values, tiebreak, 3) == [(0, 1), (2, 3), (0, 2)]
    # Equal values: the seeded tiebreak decides.
    assert pick_batch(pairs, np.ones(4), np.array([0.4, 0.3, 0.2, 0.1]), 1) == [(1, 3)]


# -- the strategy -----------------------------------------------------------------------------


def test_perfect_judge_recovers_the_human_order_of_8_within_20_comparisons():
    strategy = Active(comparisons=20, settle=False)
    for seed in range(15):
        task = distinct_scores_task(seed)
        ranking, cost, _ = rank_once(task, strategy, perfect_judge(seed=seed), seed)
        assert cost.comparisons == 20
        assert score_order(ranking) == human_order(task)


def test_perfect_judge_settles_early_on_the_human_order():
    # log2(8!) ≈ 15.3 comparisons is the least any method needs on average.
    used = []
    for seed in range(15):
        task = distinct_scores_task(seed)
        ranking, cost, _ = rank_once(task, Active(budget=3.5), perfect_judge(seed=seed), seed)
        assert ranking.extras["c0"].stopped == "settled"
        assert score_order(ranking) == human_order(task)
        used.append(cost.comparisons)
    assert max(used) < 28 and sum(used) / len(used) < 20


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
@pytest.mark.parametrize("order", ["given", "both"])
@pytest.mark.parametrize("batch", [1, 3])
@pytest.mark.parametrize("budget", [0.5, 1.3, 100.0])
def test_budget_is_spent_exactly(n, order, batch, budget):
    task = make_task([float(i) for i in range(n)])
    judgments = int(budget * n)
    per_match = 2 if order == "both" else 1
    match_count = min(n * (n - 1) // 2, judgments // per_match)
    strategy = Active(budget=budget, order=order, batch=batch, settle=False)
    if match_count == 0:  # e.g. 0.5 x 3 = 1 comparison, both orders: a budget that buys nothing is refused
        with pytest.raises(SpecError, match="buys no match"):
            rank_once(task, strategy, FixedAccuracyJudge())
        return
    ranking, cost, source = rank_once(task, strategy, FixedAccuracyJudge(accuracy=0.7, position_bias=0.2, seed=3))
    assert cost.comparisons == match_count * per_match
    assert cost.judge_calls == cost.comparisons
    assert set(ranking.scores) == set(task.candidate_ids)


def test_settling_never_exceeds_the_budget():
    for seed in range(5):
        task = distinct_scores_task(seed, n=7)
        _, cost, _ = rank_once(task, Active(comparisons=9), FixedAccuracyJudge(accuracy=0.9, seed=seed), seed)
        assert cost.comparisons <= 9


@pytest.mark.parametrize("order", ["given", "both"])
def test_no_pair_is_played_twice(order):
    task = make_task([float(i % 4) for i in range(10)])
    _, _, source = rank_once(
        task, Active(budget=4.0, order=order, batch=2, settle=False), FixedAccuracyJudge(accuracy=0.6, seed=2)
    )
    unordered = Counter(frozenset((c.first, c.second)) for c in source.comparisons)
    assert set(unordered.values()) == {2 if order == "both" else 1}


def test_batches_go_to_the_judge_together_and_the_first_covers_everyone():
    task = distinct_scores_task(5, n=8)
    _, _, source = rank_once(
        task, Active(comparisons=14, batch=4, settle=False), FixedAccuracyJudge(accuracy=0.9, seed=1), seed=2
    )
    per_step = Counter(c.round for c in source.comparisons)
    assert [per_step[step] for step in sorted(per_step)] == [4, 4, 4, 2]
    first = [c for c in source.comparisons if c.round == 1]
    assert len({cid for c in first for cid in (c.first, c.second)}) == 8  # no prior information: spread out


def test_grades_aggregate_is_the_mean_grade_received():
    task = make_task([float(i) for i in range(6)])
    ranking, _, source = rank_once(
        task, Active(budget=2.0, aggregate="grades", settle=False), FixedAccuracyJudge(accuracy=0.8, noise=0.3, seed=5)
    )
    for cid, values in grades_received(task, source.comparisons).items():
        assert ranking.scores[cid] == pytest.approx(sum(values) / len(values))


@pytest.mark.parametrize("criterion", ["information", "order"])
def test_same_seed_same_result_other_seed_other_matches(criterion):
    task = make_task([float(i) for i in range(10)])
    judge = FixedAccuracyJudge(accuracy=0.75, position_bias=0.1, seed=9)

    def play(seed):
        ranking, _, source = rank_once(task, Active(budget=2.0, criterion=criterion), judge, seed)
        return ranking.scores, [(c.first, c.second, c.round) for c in source.comparisons]

    assert play(1) == play(1)
    assert play(1)[1] != play(2)[1]


def test_spec_parsing_and_validation():
    strategy = make_strategy("active:budget=2.5,batch=4,criterion=order,settle=false,order=both")
    assert strategy == Active(budget=2.5, batch=4, criterion="order", settle=False, order="both")
    assert make_strategy("active:comparisons=30").comparisons == 30
    for bad, word in [
        ("batch=0", "batch"),
        ("criterion=entropy", "criterion"),
        ("aggregate=elo", "aggregate"),
        ("prior_sd=0", "prior_sd"),
        ("budget=-2", "budget"),
    ]:
        with pytest.raises(SpecError, match=word):
            make_strategy(f"active:{bad}")


@pytest.mark.parametrize(
    "spec,word",
    [
        ("budget=0", "budget must be > 0"),
        ("comparisons=0", "comparisons must be >= 1"),
        ("comparisons=1,order=both", "comparisons must be >= 2"),
    ],
)
def test_budgets_that_cannot_rank_are_refused(spec, word):
    with pytest.raises(SpecError, match=word):
        make_strategy(f"active:{spec}")
    task = make_task([0.0, 1.0, 2.0], task_id="q7")
    with pytest.raises(SpecError, match="strategy active: budget=0.5 buys no match on task 'q7'"):
        rank_once(task, Active(budget=0.5, order="both"), FixedAccuracyJudge())


def test_runs_in_the_runner_and_reports_cost(sample_tasks):
    result = run(
        sample_tasks,
        [make_strategy("active:budget=2,settle=false")],
        FixedAccuracyJudge(accuracy=0.9, seed=0),
        progress=False,
    )
    (strategy_run,) = result.strategies
    for task, task_result in zip(sample_tasks, strategy_run.tasks):
        n = len(task.candidates)
        assert task_result.cost.comparisons == min(2 * n, n * (n - 1) // 2)
    assert strategy_run.metrics["task_spearman"] > 0.3


# -- computation: pruned pair choice, incremental posterior ----------------------------------


def test_information_bound_is_an_upper_bound():
    rng = np.random.default_rng(0)
    means = rng.normal(0.0, 3.0, 20000) * rng.choice([0.0, 1.0], 20000)  # many exact zeros too
    sds = rng.uniform(0.0, 2.0 * np.sqrt(2.0), 20000)
    assert np.all(information_bound(means, sds, 2.0 * np.sqrt(2.0)) >= expected_information(means, sds))


@pytest.mark.parametrize("batch", [1, 3])
def test_pruned_choice_equals_scoring_every_pair(batch):
    rng = np.random.default_rng(batch)
    for _ in range(20):
        n = 40
        mean = np.round(rng.normal(0.0, 1.0, n), 1) * rng.choice([0.0, 1.0], n)  # ties in value
        root = rng.normal(0.0, 0.4, (n, n))
        cov = root @ root.T / n + np.eye(n) * rng.uniform(0.2, 1.5)
        cov = cov * min(1.0, 4.0 / cov.diagonal().max())  # never wider than the prior (sd 2)
        pairs = np.array(list(combinations(range(n), 2)))
        tiebreak = rng.random((n, n))
        full = pick_batch(
            pairs, expected_information(*gap_distribution(mean, cov, pairs)), tiebreak[pairs[:, 0], pairs[:, 1]], batch
        )
        assert choose_pairs(pairs, mean, cov, tiebreak, batch, "information", prior_sd=2.0) == full


def test_incremental_posterior_tracks_the_exact_one():
    rng = random.Random(4)
    n = 30
    incremental = Posterior(n, prior_sd=2.0, exact=False)  # what active does above EXACT_UP_TO
    assert not incremental.exact
    outcomes = []
    for _ in range(60):
        i, j = rng.sample(range(n), 2)
        outcomes.append((i, j, rng.choice([0.0, 0.5, 1.0, 1.0])))
        incremental.update([outcomes[-1]])
    names = [f"c{k}" for k in range(n)]
    mean, cov = bt_posterior([(names[i], names[j], s) for i, j, s in outcomes], names, prior_sd=2.0)
    np.testing.assert_allclose(incremental.mean, mean, atol=1e-5)  # the exact MAP
    np.testing.assert_allclose(incremental.cov, cov, atol=0.05)  # stale curvature between refreshes
    incremental.refresh()
    np.testing.assert_allclose(incremental.cov, cov, atol=1e-5)


def test_above_the_exact_size_pairs_are_preselected_and_the_order_still_recovered(monkeypatch):
    monkeypatch.setattr(active_module, "EXACT_UP_TO", 10)
    scored = []
    original = active_module.candidate_pairs
    monkeypatch.setattr(active_module, "candidate_pairs", lambda *a: scored.append(len(out := original(*a))) or out)
    task = distinct_scores_task(3, n=24)
    ranking, cost, _ = rank_once(task, Active(budget=4.0, settle=False), perfect_judge(seed=3), 3)
    assert cost.comparisons == 96 and len(scored) == 96
    assert max(scored) < 24 * 23 // 2  # never every pair
    assert spearmanr(score_order(ranking), human_order(task)) > 0.95


# -- stopping rules (until=, confidence=; docs/stopping.md) ----------------------------------


def stop_reason(ranking):
    reasons = {extras.stopped for extras in ranking.extras.values()}
    assert len(reasons) == 1
    return reasons.pop()


@pytest.mark.parametrize(
    ("spec", "word"),
    [
        ("active:until=top0", "until must be one of"),
        ("active:until=best", "until must be one of"),
        ("active:until=top1,confidence=1", "confidence"),
        ("active:until=order,aggregate=grades", "aggregate=bt"),
        ("active:criterion=target", "criterion=target needs a stopping target"),
    ],
)
def test_bad_stopping_rules_are_refused(spec, word):
    with pytest.raises(SpecError, match=word):
        make_strategy(spec)


@pytest.mark.parametrize("until", ["top1", "top:3", "order"])
def test_the_budget_always_wins(until):
    task = distinct_scores_task(3)
    strategy = make_strategy(f"active:until={until},confidence=0.999,comparisons=5")
    ranking, cost, _ = rank_once(task, strategy, FixedAccuracyJudge(accuracy=0.7, seed=1), 0)
    assert cost.comparisons == 5 and stop_reason(ranking) == "budget"


@pytest.mark.parametrize("order", ["given", "random", "both"])
def test_every_distinct_judgment_asked_once_then_exhausted(order):
    # A coin-flipping judge settles nothing at 0.999: every ordered pair is asked exactly once.
    task = make_task([1, 2, 3, 4])
    strategy = make_strategy(f"active:until=order,confidence=0.999,budget=100,order={order}")
    ranking, cost, source = rank_once(task, strategy, FixedAccuracyJudge(accuracy=0.5, seed=2), 0)
    asked = [(c.first, c.second) for c in source.comparisons]
    assert sorted(asked) == sorted((a, b) for a in task.candidate_ids for b in task.candidate_ids if a != b)
    assert cost.comparisons == 12 and stop_reason(ranking) == "exhausted"
    assert strategy.max_judgments(4) == 12


def test_a_clear_target_stops_early_with_the_posterior_answer():
    used = []
    for seed in range(8):
        task = distinct_scores_task(seed)
        ranking, cost, _ = rank_once(
            task, make_strategy("active:until=top1,confidence=0.8,budget=7"), perfect_judge(seed=seed), seed
        )
        assert stop_reason(ranking) == "target"
        assert score_order(ranking)[0] == human_order(task)[0]
        used.append(cost.comparisons)
    assert max(used) < 8 * 7  # every ordered pair of 8 would be 56


def test_criterion_target_asks_only_what_the_answer_rests_on_and_settles_sooner():
    """With ``criterion=target`` every pair asked for ``top1`` involves the answer of its moment,
    so on a noiseless judge the winner is settled in fewer judgments than by information."""
    spent = {"information": 0, "target": 0}
    for seed in range(6):
        task = distinct_scores_task(seed, n=10)
        for criterion in spent:
            # Plain Bradley–Terry: on a noiseless judge the pair-effect rule needs every pair in both orders.
            spec = f"active:until=top1,confidence=0.9,budget=18,criterion={criterion},stopping=bt"
            ranking, cost, source = rank_once(task, make_strategy(spec), perfect_judge(seed=seed), seed)
            assert stop_reason(ranking) == "target"
            assert score_order(ranking)[0] == human_order(task)[0]
            spent[criterion] += cost.comparisons
            if (
                criterion == "target"
            ):  # the first judgment is the leader's; every later one has the winner or a loser of it
                winner = score_order(ranking)[0]
                assert sum(winner in (c.first, c.second) for c in source.comparisons) >= 9
    assert spent["target"] < spent["information"]


def test_without_until_the_stopping_reasons_are_the_old_ones():
    ranking, _, _ = rank_once(distinct_scores_task(1), Active(budget=3.5), perfect_judge(seed=1), 1)
    assert stop_reason(ranking) == "settled"


@pytest.mark.slow  # a calibration over 100 simulated tasks per criterion
@pytest.mark.parametrize("criterion", ["information", "target"])
def test_stopping_on_target_is_calibrated_on_a_simulated_judge(criterion):
    """Among tasks stopped with ``target`` the answer is the judge's latent one in at least
    ``confidence`` of them, up to two binomial standard errors (the tolerance)."""
    from dataclasses import asdict

    from rankkit.judges.simulated.sim import LatentJudge
    from rankkit.judges.simulated.sim_model import LATENT_PRESETS

    confidence = 0.8
    rng = random.Random(5)
    right = stopped = 0
    for t in range(100):
        task = make_task([rng.gauss(0, 1) for _ in range(4)], task_id=f"t{t}", scale=(-10, 10))
        judge = LatentJudge(**asdict(LATENT_PRESETS["chatgpt"]), seed=t)
        ranking, _, _ = rank_once(
            task,
            make_strategy(f"active:until=top1,confidence={confidence},budget=100,criterion={criterion}"),
            judge,
            t,
        )
        if stop_reason(ranking) == "target":
            stopped += 1
            latent = judge.latent(task)
            right += score_order(ranking)[0] == max(latent, key=latent.get)
    assert stopped >= 25  # enough stops for the check to mean something
    tolerance = 2 * (confidence * (1 - confidence) / stopped) ** 0.5
    assert right / stopped >= confidence - tolerance
