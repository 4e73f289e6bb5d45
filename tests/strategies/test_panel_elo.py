"""panel_elo (poster, seed 002): all pairs decided once, R_new = R + K(S − E) after each decision."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.base import Judge
from rankkit.judgments.cache import NullCache
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import Verdict, Winner
from rankkit.runs.runner import run
from rankkit.strategies import CandidateExtras, make_strategy
from rankkit.strategies.matches import Cost, MatchSource
from rankkit.strategies.panel_elo import PanelElo
from tests.helpers import make_task, perfect_judge


class AlwaysTie(Judge):
    backend = "always-tie"

    def compare(self, task, first, second):
        return Verdict(0.5, 0.5, Winner.TIE)


def rank_once(task, strategy, judge, seed=0):
    cost = Cost()
    source = MatchSource(task, JudgmentMemo(judge, NullCache()), strategy.label)
    cost = source.cost
    return strategy.rank(task, source, random.Random(seed)), cost, source


def test_one_decision_moves_both_ratings_by_k_times_surprise():
    task = make_task([1.0, 0.0])
    ranking, cost, _ = rank_once(task, PanelElo(k=32), perfect_judge())
    # Equal ratings: E = 0.5, S = 1 for the winner, so it gains 32·(1 − 0.5) = 16 and the loser loses 16.
    assert ranking.scores == pytest.approx({"c0": 1016.0, "c1": 984.0}, abs=1e-9)
    assert cost.comparisons == 1
    assert ranking.extras["c0"] == CandidateExtras(wins=1, draws=0, losses=0, played=1)


def test_a_draw_between_equals_changes_nothing():
    task = make_task([1.0, 0.0, 0.5])
    ranking, _, _ = rank_once(task, PanelElo(k=32), AlwaysTie())
    assert ranking.scores == pytest.approx({"c0": 1000.0, "c1": 1000.0, "c2": 1000.0}, abs=1e-9)
    assert all(e.draws == 2 for e in ranking.extras.values())


def test_sequential_updates_follow_the_poster_formula():
    """Replay the strategy's own decisions through R += K(S − E) by hand."""
    task = make_task([3.0, 2.0, 1.0, 0.0])
    ranking, _, source = rank_once(task, PanelElo(k=20), perfect_judge())
    ratings = dict.fromkeys(task.candidate_ids, 1000.0)
    for comparison in source.comparisons:
        a, b = comparison.first, comparison.second
        s = {Winner.FIRST: 1.0, Winner.SECOND: 0.0, Winner.TIE: 0.5}[comparison.verdict.winner]
        e = 1 / (1 + 10 ** ((ratings[b] - ratings[a]) / 400))
        ratings[a], ratings[b] = ratings[a] + 20 * (s - e), ratings[b] - 20 * (s - e)
    assert ranking.scores == pytest.approx(ratings)


@pytest.mark.parametrize("n", [2, 3, 6])
def test_every_pair_is_decided_once_and_a_perfect_judge_gives_the_human_order(n):
    task = make_task([float(i) for i in range(n)])
    ranking, cost, source = rank_once(task, PanelElo(), perfect_judge())
    assert cost.comparisons == n * (n - 1) // 2
    assert {frozenset((c.first, c.second)) for c in source.comparisons} == {
        frozenset(p) for p in combinations(task.candidate_ids, 2)
    }
    assert ranking.ordered(task.candidate_ids) == [f"c{i}" for i in reversed(range(n))]


def test_order_both_asks_both_orders_and_permutations_average_orders():
    task = make_task([float(i) for i in range(5)])
    _, cost, _ = rank_once(task, PanelElo(order="both"), perfect_judge())
    assert cost.comparisons == 20
    one, _, _ = rank_once(task, PanelElo(k=64), make_judge("sim:model=fixed,accuracy=0.6"))
    averaged, _, _ = rank_once(task, PanelElo(k=64, permutations=50), make_judge("sim:model=fixed,accuracy=0.6"))
    assert one.scores != averaged.scores
    assert sum(averaged.scores.values()) == pytest.approx(5000.0)  # Elo is zero-sum


def test_a_unanimity_panel_draws_more_than_a_majority_panel(sample_tasks):
    members = "sim:preset=gpt4+sim:preset=chatgpt+sim:preset=falcon"
    draws = {}
    for threshold in ("1.0", "0.5"):
        result = run(
            sample_tasks,
            [make_strategy("panel_elo")],
            make_judge(f"panel:{members},threshold={threshold}"),
            progress=False,
        )
        draws[threshold] = sum(e.draws for t in result.strategies[0].tasks for e in t.extras.values())
        assert result.strategies[0].cost.comparisons == sum(
            len(t.candidates) * (len(t.candidates) - 1) // 2 for t in sample_tasks
        )
    assert draws["1.0"] > draws["0.5"]


def test_parameters_are_checked():
    with pytest.raises(SpecError, match="k must be > 0"):
        make_strategy("panel_elo:k=0")
    with pytest.raises(SpecError, match="permutations must be 1 to"):
        make_strategy("panel_elo:permutations=0")
