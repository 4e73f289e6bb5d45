"""The paper's two baselines: individual (pointwise) and naive pairwise."""

from __future__ import annotations

import pytest

from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.strategies.individual import Individual
from rankkit.strategies.pairwise import Pairwise
from tests.helpers import make_task, perfect_judge, rank_once


def test_individual_grades_each_candidate_once():
    task = make_task([3.0, 1.0, 2.0])
    ranking, cost, _ = rank_once(task, Individual(), perfect_judge())
    assert ranking.scores == {"c0": 3.0, "c1": 1.0, "c2": 2.0}
    assert cost.grades == 3 and cost.comparisons == 0
    assert ranking.ordered(task.candidate_ids) == ["c0", "c2", "c1"]


@pytest.mark.parametrize("n", [2, 5, 6, 9])
def test_pairwise_plays_each_candidate_once(n):
    task = make_task([float(i) for i in range(n)])
    ranking, cost, source = rank_once(task, Pairwise(), FixedAccuracyJudge(accuracy=0.8))
    assert cost.comparisons == (n + 1) // 2
    assert set(ranking.scores) == set(task.candidate_ids)
    assert all(e.played == 1 for e in ranking.extras.values())


def test_pairwise_odd_one_out_keeps_opponent_score():
    task = make_task([float(i) for i in range(5)])
    ranking, _, source = rank_once(task, Pairwise(), FixedAccuracyJudge(accuracy=0.8, noise=1.0), seed=3)
    extra = source.comparisons[-1]  # the odd one out's extra match, played in one order
    odd, opponent = extra.first, extra.second
    assert ranking.scores[odd] == pytest.approx(extra.verdict.first_grade)
    own = next(c for c in source.comparisons[:-1] if opponent in (c.first, c.second))
    expected = own.verdict.first_grade if own.first == opponent else own.verdict.second_grade
    assert ranking.scores[opponent] == pytest.approx(expected)


def test_pairwise_in_both_orders_doubles_the_cost():
    task = make_task([float(i) for i in range(6)])
    _, cost, _ = rank_once(task, Pairwise(order="both"), FixedAccuracyJudge())
    assert cost.comparisons == 6
