"""Double elimination: brackets, cost, losses, rematch order, aggregation; the slot-corrected grades."""

from __future__ import annotations

import random
from collections import Counter

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.simulated.sim import FixedAccuracyJudge, LatentJudge
from rankkit.judgments.values import Verdict, Winner
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from rankkit.strategies._graded import corrected_grades, fit_corrected_grades, mean_grades
from rankkit.strategies.double_elimination import DoubleElimination, bracket_pairs
from rankkit.strategies.matches import Comparison
from tests.helpers import human_order, make_task, perfect_judge, rank_once, score_order


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
@pytest.mark.parametrize("order", ["random", "both"])
def test_a_perfect_judge_costs_2n_minus_2_and_ranks_by_the_humans(n, order):
    task = make_task(random.Random(n).sample(range(100), n), task_id=f"t{n}")
    ranking, cost, source = rank_once(task, DoubleElimination(order=order), perfect_judge(), seed=n)
    # The best never loses, so there is no bracket reset: every other answer leaves with two losses.
    assert ranking.champion == human_order(task)[0]
    losses = {cid: extra.losses for cid, extra in ranking.extras.items()}
    assert losses[ranking.champion] == 0 and all(losses[c] == 2 for c in losses if c != ranking.champion)
    match_count = sum(extra.played for extra in ranking.extras.values()) // 2
    assert match_count == 2 * n - 2
    assert score_order(ranking) == human_order(task)  # noiseless grades are the human scores
    assert cost.comparisons == len(source.comparisons)
    if order == "both":  # a rematch in both orders repeats judgments already made, at no cost
        assert cost.comparisons == 2 * len({frozenset((c.first, c.second)) for c in source.comparisons})
        assert cost.comparisons <= 2 * match_count
    else:  # a single-order rematch is shown the other way round: a new judgment
        assert cost.comparisons == match_count


def test_every_answer_but_the_champion_leaves_with_two_losses_and_a_reset_costs_one_more():
    task = make_task([float(i) for i in range(9)])
    seen_reset = False
    for seed in range(30):
        judge = FixedAccuracyJudge(accuracy=0.5, seed=seed)  # coin-flip verdicts: resets happen
        ranking, cost, source = rank_once(task, DoubleElimination(), judge, seed)
        losses = Counter({cid: extra.losses for cid, extra in ranking.extras.items()})
        assert all(losses[c] == 2 for c in losses if c != ranking.champion)
        assert losses[ranking.champion] in (0, 1)
        match_count = sum(extra.played for extra in ranking.extras.values()) // 2
        assert match_count == sum(losses.values()) == 2 * 9 - 2 + losses[ranking.champion]  # one loss per match
        # Each judgment is paid once; only a third meeting of a pair (a reset final between two
        # that already met both ways) repeats one.
        assert cost.comparisons == len(source.comparisons) == len({(c.first, c.second) for c in source.comparisons})
        assert match_count - 1 <= cost.comparisons <= match_count
        seen_reset |= losses[ranking.champion] == 1
    assert seen_reset


def test_bracket_pairs_avoid_rematches_and_leave_one_idle_when_odd():
    alive = ["a", "b", "c", "d", "e"]
    met = {frozenset(("a", "b")), frozenset(("c", "d")), frozenset(("a", "c"))}
    for seed in range(20):
        pairs, idle = bracket_pairs(alive, met, random.Random(seed))
        assert len(pairs) == 2 and len(idle) == 1
        assert sorted([x for p in pairs for x in p] + idle) == alive
    # With a fresh opponent available, nobody is paired with one already met.
    pairs, _ = bracket_pairs(["a", "b", "c", "d"], {frozenset(("a", "b")), frozenset(("c", "d"))}, random.Random(1))
    assert not any(frozenset(p) in {frozenset(("a", "b")), frozenset(("c", "d"))} for p in pairs)


def test_corrected_aggregate_removes_a_slot_bias_that_misleads_mean_grades():
    """A noiseless judge with a strong first-slot effect: every grade is h ± 1.5 spreads. The
    least-squares correction recovers the human order exactly; plain mean grades, which also
    count how often an answer was shown first, need not."""
    task = make_task([0.0, 1.0, 1.5, 2.0, 3.0, 3.5, 4.0, 5.0, 6.0, 7.5], scale=(-100, 100))
    judge = LatentJudge(perception=0.0, pair_noise=0.0, slot_bias=3.0, grade_noise=0.0)
    misled = 0
    for seed in range(10):
        corrected, _, _ = rank_once(task, DoubleElimination(), judge, seed)
        plain, _, _ = rank_once(task, DoubleElimination(aggregate="grades"), judge, seed)
        assert score_order(corrected) == human_order(task)
        misled += score_order(plain) != human_order(task)
    assert misled > 0


def test_aggregates_and_determinism(sample_tasks):
    specs = ["double_elimination", "double_elimination:aggregate=grades", "double_elimination:aggregate=bt"]
    judge = FixedAccuracyJudge(accuracy=0.8, position_bias=0.1, seed=4)
    first = run(sample_tasks, [make_strategy(s) for s in specs], judge, seed=2, progress=False)
    again = run(sample_tasks, [make_strategy(s) for s in specs], judge, seed=2, progress=False)
    other = run(sample_tasks, [make_strategy(s) for s in specs], judge, seed=3, progress=False)
    assert [t.scores for s in first.strategies for t in s.tasks] == [
        t.scores for s in again.strategies for t in s.tasks
    ]
    assert [t.comparisons for t in first.strategies[0].tasks] != [t.comparisons for t in other.strategies[0].tasks]
    # The three aggregates read the same bracket: only the first paid for it.
    assert first.strategies[1].cost.judge_calls == first.strategies[2].cost.judge_calls == 0
    with pytest.raises(SpecError, match="aggregate must be one of"):
        make_strategy("double_elimination:aggregate=points")


# -- the slot-corrected grades -----------------------------------------------------------------


def comparison(first: str, second: str, first_grade: float, second_grade: float) -> Comparison:
    winner = Winner.FIRST if first_grade > second_grade else Winner.SECOND
    return Comparison(first, second, Verdict(first_grade=first_grade, second_grade=second_grade, winner=winner))


def test_corrected_grades_recover_levels_and_slot_effect_from_an_unbalanced_design():
    level = {"a": 3.0, "b": 1.0, "c": 2.0, "d": 0.0}
    beta = 0.8
    shown = [("a", "b"), ("a", "c"), ("b", "c"), ("c", "d"), ("a", "d"), ("b", "d"), ("c", "a")]
    comparisons = [comparison(f, s, level[f] + beta / 2, level[s] - beta / 2) for f, s in shown]
    levels, fitted = fit_corrected_grades(comparisons, ["a", "b", "c", "d", "e"], unplayed=-1.0)
    assert fitted == pytest.approx(beta)
    assert {k: levels[k] for k in level} == pytest.approx(level)
    assert levels["e"] == -1.0
    plain = mean_grades(comparisons, list(level), unplayed=0.0)
    assert plain["a"] > level["a"]  # shown first 3 times of 4: a plain mean over-rates it


def test_corrected_grades_are_mean_grades_on_a_balanced_or_unidentifiable_design():
    balanced = [
        comparison("a", "b", 3.0, 1.0),
        comparison("b", "a", 2.5, 2.0),
        comparison("a", "c", 1.0, 0.0),
        comparison("c", "a", 0.5, 1.5),
    ]
    assert corrected_grades(balanced, ["a", "b", "c"], 0.0) == pytest.approx(
        mean_grades(balanced, ["a", "b", "c"], 0.0)
    )
    single = [comparison("a", "b", 3.0, 1.0)]  # one judgment: a slot effect cannot be told from the answers
    levels, beta = fit_corrected_grades(single, ["a", "b"], 0.0)
    assert beta == pytest.approx(0.0, abs=1e-12) and levels == pytest.approx({"a": 3.0, "b": 1.0}, abs=1e-12)
