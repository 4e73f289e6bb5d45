"""The k-way strategies: setwise_knockout, setwise_heapsort, listwise — counts, parameters, behaviour."""

from __future__ import annotations

import math

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.simulated.sim import LatentJudge
from rankkit.judgments.values import GroupChoice, GroupRanking, ParseStatus
from rankkit.strategies import describe_parameters, make_strategy, strategy_classes
from rankkit.strategies.setwise_groups import group_sizes
from rankkit.strategies.setwise_knockout import bracket_group_sizes
from tests.helpers import make_task, rank_once

PERFECT = LatentJudge(perception=0.0, pair_noise=0.0, slot_bias=0.0)
KWAY = ("setwise_knockout", "setwise_heapsort", "listwise", "setwise_groups")


@pytest.mark.parametrize("n", [2, 3, 4, 5, 7, 10, 13, 24, 50])
@pytest.mark.parametrize("k", [2, 3, 4, 6, 8])
def test_setwise_knockout_costs_ceil_n_minus_1_over_k_minus_1(n, k):
    task = make_task([float(i) for i in range(n)])
    ranking, cost, _ = rank_once(task, make_strategy(f"setwise_knockout:k={k}"), LatentJudge(seed=1))
    expected = math.ceil((n - 1) / (k - 1))
    assert cost.comparisons == expected == make_strategy(f"setwise_knockout:k={k}").exact_judgments(n)
    assert ranking.champion is not None
    eliminated = [e.eliminated_round for cid, e in ranking.extras.items() if cid != ranking.champion]
    assert all(r is not None for r in eliminated)


def test_setwise_knockout_at_k_2_costs_what_the_pairwise_knockout_costs():
    assert [make_strategy("setwise_knockout:k=2").exact_judgments(n) for n in (2, 5, 9)] == [1, 4, 8]
    assert bracket_group_sizes(3, 4) == [3]  # fewer answers than k: one smaller group


def test_both_and_permute_cost_their_presentations():
    task = make_task([float(i) for i in range(10)])
    for spec, expected in (
        ("setwise_knockout:k=4,order=permute", 12),
        ("setwise_knockout:k=4,order=permute,shifts=2", 6),
        ("setwise_knockout:k=4,order=random", 3),
        ("setwise_knockout:k=4,order=both", 6),
    ):
        _, cost, source = rank_once(task, make_strategy(spec), LatentJudge(seed=2))
        assert cost.comparisons == expected == make_strategy(spec).exact_judgments(10), spec
        first, second = source.group_comparisons[0].shown, source.group_comparisons[1].shown
        if "permute" in spec:
            assert second == first[1:] + first[:1]  # rotated by one slot
        if "both" in spec:
            assert second == first[::-1]  # reversed: slot i and slot k - 1 - i change places


@pytest.mark.parametrize(
    "spec",
    [
        "setwise_knockout",
        "setwise_knockout:order=permute",
        "setwise_heapsort",
        "setwise_heapsort:k=3",
        "listwise",
        "listwise:window=3,step=1,passes=2",
    ],
)
def test_a_perfect_judge_gives_the_human_order_at_the_top(spec):
    task = make_task([3.0, 9.0, 1.0, 5.0, 7.0, 2.0, 8.0, 0.5, 4.0])
    ranking, _, _ = rank_once(task, make_strategy(spec), PERFECT, seed=4)
    order = ranking.ordered(task.candidate_ids)
    assert order[0] == "c1"
    if spec.startswith("setwise_heapsort"):  # a full sort: every place is right
        assert order == ["c1", "c6", "c4", "c3", "c8", "c0", "c5", "c2", "c7"]


def test_setwise_heapsort_sorts_fully_with_a_perfect_judge_and_never_asks_a_set_twice():
    task = make_task([float(v) for v in (3, 9, 1, 5, 7, 2, 8, 0, 4, 6, 11, 10)])
    strategy = make_strategy("setwise_heapsort:k=3")
    ranking, cost, source = rank_once(task, strategy, PERFECT, seed=1)
    human = sorted(task.candidate_ids, key=lambda cid: -task.human_score(cid))
    assert ranking.ranking == human
    sets = [frozenset(g.shown) for g in source.group_comparisons]
    assert len(sets) == len(set(sets))
    assert cost.comparisons <= strategy.max_judgments(12)


def test_setwise_heapsort_top_k_stops_early():
    task = make_task([float(i) for i in range(30)])
    full = rank_once(task, make_strategy("setwise_heapsort"), PERFECT, seed=3)
    top = rank_once(task, make_strategy("setwise_heapsort:top_k=3"), PERFECT, seed=3)
    assert top[0].ranking[:3] == ["c29", "c28", "c27"]
    assert top[1].comparisons < full[1].comparisons
    # never popped: they share the mean of the places they fill
    assert top[0].scores["c0"] == pytest.approx((30 - 3 - 1) / 2, abs=1e-12)


@pytest.mark.parametrize("n, window, step, expected", [(10, 4, 2, 4), (7, 4, 2, 3), (3, 4, 2, 1), (20, 8, 4, 4)])
def test_listwise_costs_its_windows(n, window, step, expected):
    task = make_task([float(i) for i in range(n)])
    strategy = make_strategy(f"listwise:window={window},step={step}")
    _, cost, source = rank_once(task, strategy, LatentJudge(seed=5))
    assert cost.comparisons == expected == strategy.exact_judgments(n)
    assert all(g.kind == "ranking" for g in source.group_comparisons)


def test_listwise_carries_the_best_answer_to_the_top_in_one_pass():
    task = make_task([float(i) for i in range(12)])
    ranking, _, _ = rank_once(task, make_strategy("listwise"), PERFECT, seed=9)
    assert ranking.ranking[0] == "c11"


@pytest.mark.parametrize(
    "spec, message",
    [
        ("setwise_knockout:k=1", "strategy setwise_knockout: k must be 2 to 8"),
        ("setwise_knockout:k=9", "strategy setwise_knockout: k must be 2 to 8"),
        (
            "setwise_knockout:order=shuffled",
            "strategy setwise_knockout: order must be one of given, random, both, permute",
        ),
        ("setwise_knockout:debias=true,order=permute", "debias=true means order=both, which contradicts order=permute"),
        ("setwise_knockout:shifts=9", "strategy setwise_knockout: shifts must be 0"),
        ("setwise_heapsort:top_k=-1", "strategy setwise_heapsort: top_k must be 0 to"),
        ("listwise:window=1", "strategy listwise: window must be 2 to 8"),
        ("listwise:step=4", "strategy listwise: step must be 1 to window - 1"),
        ("listwise:step=0", "strategy listwise: step must be 1 to window - 1"),
        ("listwise:passes=0", "strategy listwise: passes must be 1 to"),
    ],
)
def test_bad_parameters_are_refused_naming_the_strategy(spec, message):
    with pytest.raises(SpecError, match=message):
        make_strategy(spec)


def test_the_listing_shows_the_k_way_orders():
    classes = strategy_classes()
    for name in KWAY:
        assert classes[name].kind == "kway"
        listed = {param: type_name for param, type_name, _ in describe_parameters(classes[name])}
        assert listed["order"] == "given|random|both|permute"
        assert make_strategy(f"{name}:debias=true").order == "both"  # the paper's spelling, as for pairs


class FailingJudge(LatentJudge):
    """A k-way judge whose every judgment failed to parse."""

    def choose(self, task, candidates):
        return GroupChoice(chosen=None, raw="?", status=ParseStatus.FAILED)

    def rank(self, task, candidates):
        return GroupRanking(permutation=None, raw="?", status=ParseStatus.FAILED)


@pytest.mark.parametrize("spec", KWAY)
def test_undecided_groups_are_counted_and_never_decided_by_a_coin(spec):
    task = make_task([float(i) for i in range(9)])
    ranking, cost, _ = rank_once(task, make_strategy(spec), FailingJudge(), seed=0)
    assert cost.parse_failures == cost.judge_calls > 0
    if spec == "setwise_knockout":
        assert ranking.champion is None  # a round that decides nothing ends the tournament
        assert all(e.eliminated_round is None for e in ranking.extras.values())
    if spec == "listwise":  # undecided windows keep the starting order
        assert cost.comparisons == make_strategy(spec).exact_judgments(9)


@pytest.mark.parametrize(
    "n, spec, expected",
    [
        (10, "setwise_groups:k=4,rounds=3", 9),
        (9, "setwise_groups:k=4,rounds=2", 4),  # 9 = 4 + 4 + one left out
        (10, "setwise_groups:k=4,rounds=2,order=permute", 2 * (4 + 4 + 2)),
        (3, "setwise_groups:k=8,rounds=5", 5),
    ],
)
def test_setwise_groups_costs_its_rounds_of_groups(n, spec, expected):
    task = make_task([float(i) for i in range(n)])
    strategy = make_strategy(spec)
    ranking, cost, _ = rank_once(task, strategy, LatentJudge(seed=3))
    assert cost.comparisons <= strategy.max_judgments(n) == expected
    judged = sum(group_sizes(n, strategy.k))  # answers grouped per round (a lone one sits out)
    assert sum(e.played for e in ranking.extras.values()) == strategy.rounds * judged


def test_setwise_groups_averages_grades_into_the_human_order_with_a_perfect_judge():
    task = make_task([3.0, 9.0, 1.0, 5.0, 7.0, 2.0, 8.0, 0.5, 4.0, 6.0])
    ranking, _, _ = rank_once(task, make_strategy("setwise_groups:k=4,rounds=3"), PERFECT, seed=2)
    assert ranking.ordered(task.candidate_ids) == sorted(task.candidate_ids, key=lambda cid: -task.human_score(cid))
    with pytest.raises(SpecError, match="strategy setwise_groups: rounds must be 1 to"):
        make_strategy("setwise_groups:rounds=0")


# -- setwise_groups stopping rules (until=, budget=; docs/stopping.md) ---------------------------


def test_setwise_groups_until_stops_on_target_or_budget_and_the_budget_always_wins():
    task = make_task([0, 1, 2, 3, 4, 20], scale=(-100, 100))
    judge = LatentJudge(perception=0.0, pair_noise=0.1, slot_bias=0.0, grade_noise=0.1, seed=2)
    clear, _, _ = rank_once(task, make_strategy("setwise_groups:until=top1,confidence=0.9,k=3,rounds=50"), judge)
    (reason,) = {e.stopped for e in clear.extras.values()}
    assert reason == "target" and max(clear.scores, key=clear.scores.get) == "c5"
    capped, cost, _ = rank_once(
        task, make_strategy("setwise_groups:until=order,confidence=0.999,k=3,rounds=50,budget=1"), judge
    )
    (reason,) = {e.stopped for e in capped.extras.values()}
    assert reason == "budget" and cost.comparisons <= 6


def test_setwise_groups_is_exhausted_when_every_order_of_every_group_was_shown():
    task = make_task([0, 0, 0])  # one group of 3 a round: 3! = 6 distinct questions, no answer better
    judge = LatentJudge(perception=0.0, pair_noise=1.0, slot_bias=0.0, grade_noise=1.0, seed=1)
    ranking, cost, source = rank_once(
        task, make_strategy("setwise_groups:until=order,confidence=0.999,k=3,rounds=500"), judge
    )
    (reason,) = {e.stopped for e in ranking.extras.values()}
    assert reason == "exhausted" and cost.comparisons == 6
    assert len({g.shown for g in source.group_comparisons}) == 6


def test_setwise_groups_refuses_a_budget_that_buys_no_group():
    task = make_task([0, 1, 2, 3])
    with pytest.raises(SpecError, match="buys no group"):
        rank_once(task, make_strategy("setwise_groups:until=top1,k=4,budget=0.1"), LatentJudge(seed=1))


# -- setwise_groups criterion=target: only the candidates in contention are grouped ---------------


def test_candidates_out_of_contention_cannot_keep_the_target_from_being_settled():
    import numpy as np
    from scipy.special import ndtr

    from rankkit.strategies._stopping import StopTarget, current_order, in_contention, relevant_pairs

    rng = np.random.default_rng(3)
    mean = rng.normal(0.0, 2.0, 30)
    cov = np.diag(rng.uniform(0.05, 1.0, 30))
    for target in (StopTarget("top1"), StopTarget("top", 3), StopTarget("order")):
        inside = set(in_contention(mean, cov, target, 0.95).tolist())
        pairs = relevant_pairs(current_order(mean), target)
        doubt = ndtr(
            -(mean[pairs[:, 0]] - mean[pairs[:, 1]])
            / np.sqrt(cov[pairs[:, 0], pairs[:, 0]] + cov[pairs[:, 1], pairs[:, 1]])
        )
        left_out = [d for (i, j), d in zip(pairs.tolist(), doubt) if i not in inside or j not in inside]
        assert sum(left_out) <= 0.05 / 2 + 1e-12  # the union bound the rule rests on
        assert inside  # these posteriors are nowhere near settled


def test_target_groups_hold_the_contenders_in_groups_of_k_with_distinct_members():
    import random

    import numpy as np

    from rankkit.strategies._stopping import StopTarget
    from rankkit.strategies.setwise_groups import contention_groups

    ids = [f"c{i}" for i in range(20)]
    mean = np.array([5.0, 4.9, 4.8] + [-3.0 - i for i in range(17)])
    cov = np.eye(20) * 0.2
    for seed in range(5):
        groups = contention_groups(ids, mean, cov, StopTarget("top1"), 0.95, 4, random.Random(seed))
        assert all(len(group) == len(set(group)) == 4 for group in groups)
        assert len(groups) == 1 and {"c0", "c1", "c2"} <= set(groups[0])
    wide = contention_groups(ids, np.zeros(20), np.eye(20) * 4.0, StopTarget("top1"), 0.95, 8, random.Random(0))
    # At the prior every candidate is in doubt: all are grouped, none twice in a group.
    assert set(ids) <= {cid for group in wide for cid in group} and all(len(set(g)) == 8 for g in wide)


def test_setwise_groups_criterion_target_settles_top1_with_fewer_judgments_and_the_latent_answer():
    task = make_task([float(i) for i in range(30)], scale=(-100, 100))
    judge = LatentJudge(perception=0.15, pair_noise=0.15, slot_bias=0.0, grade_noise=0.15, seed=4)
    truth = max(judge.latent(task).items(), key=lambda item: item[1])[0]
    used = {}
    for criterion in ("random", "target"):
        spec = f"setwise_groups:until=top1,confidence=0.95,k=8,rounds=1000,criterion={criterion}"
        ranking, cost, _ = rank_once(task, make_strategy(spec), judge, seed=1)
        (reason,) = {e.stopped for e in ranking.extras.values()}
        assert reason == "target" and max(ranking.scores, key=ranking.scores.get) == truth
        used[criterion] = cost.comparisons
    assert used["target"] < used["random"]


def test_setwise_groups_criterion_is_checked():
    with pytest.raises(SpecError, match="criterion must be one of random, target"):
        make_strategy("setwise_groups:criterion=best")
    with pytest.raises(SpecError, match="criterion=target needs a stopping target"):
        make_strategy("setwise_groups:criterion=target")


def test_setwise_groups_criterion_target_still_reaches_exhausted_on_a_small_task():
    task = make_task([0.0, 1.0, 2.0, 3.0, 4.0], scale=(-100, 100))
    spec = "setwise_groups:until=order,confidence=0.95,k=3,order=both,rounds=300,criterion=target"
    ranking, cost, _ = rank_once(task, make_strategy(spec), LatentJudge(seed=3), seed=1)
    (reason,) = {e.stopped for e in ranking.extras.values()}
    # Every group of 3 in every order (60) and the pairs a first round leaves over (20).
    assert reason == "exhausted" and cost.comparisons == 80
