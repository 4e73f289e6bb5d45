"""Knockout assessment (seed 000, Algorithm 1): cost, champion, scores, determinism, resumption."""

from __future__ import annotations

import math
import random

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.base import JudgeError
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.cache import JudgmentCache
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from rankkit.strategies.knockout import Knockout
from tests.helpers import (
    CountingJudge,
    grades_received,
    make_task,
    perfect_judge,
    rank_once,
)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
@pytest.mark.parametrize("order", ["given", "both"])
def test_n_minus_one_matches_and_every_candidate_scored(n, order):
    task = make_task([float(i) for i in range(n)])
    ranking, cost, source = rank_once(task, Knockout(order=order), FixedAccuracyJudge(accuracy=0.7))
    assert cost.comparisons == (n - 1) * (2 if order == "both" else 1)
    assert set(ranking.scores) == set(task.candidate_ids)
    assert all(not math.isnan(v) for v in ranking.scores.values())
    extras = ranking.extras
    assert sum(e.eliminated_round is None for e in extras.values()) == 1
    assert extras[ranking.champion].eliminated_round is None
    assert all(e.played >= 1 for e in extras.values())
    rounds = extras[ranking.champion].rounds
    assert rounds == math.ceil(math.log2(n))


def test_perfect_judge_crowns_the_human_best():
    for seed in range(10):
        task = make_task(random.Random(seed).sample(range(100), 9), task_id=f"t{seed}")
        ranking, _, _ = rank_once(task, Knockout(), perfect_judge(), seed)
        best = max(task.human_scores(), key=task.human_scores().get)
        assert ranking.champion == best


def test_final_score_is_the_mean_of_received_grades():
    task = make_task([float(i) for i in range(6)])
    ranking, _, source = rank_once(task, Knockout(), FixedAccuracyJudge(accuracy=0.8, noise=0.3))
    for cid, values in grades_received(task, source.comparisons).items():
        assert ranking.scores[cid] == pytest.approx(sum(values) / len(values))
        assert ranking.extras[cid].grades == pytest.approx(values)


def test_winner_advances_by_higher_score():
    task = make_task([float(i) for i in range(8)])
    ranking, _, source = rank_once(task, Knockout(), FixedAccuracyJudge(accuracy=0.6, noise=1.0, seed=2))
    by_round = {}
    for comparison in source.comparisons:
        by_round.setdefault(comparison.round, []).append(comparison)
    for round_number, comparisons in by_round.items():
        for comparison in comparisons:
            verdict = comparison.verdict
            loser = comparison.second if verdict.first_grade > verdict.second_grade else comparison.first
            assert ranking.extras[loser].eliminated_round == round_number


def test_same_seed_same_brackets_other_seed_other_brackets():
    tasks = [make_task([float(i) for i in range(8)], task_id=f"t{k}") for k in range(4)]
    judge = FixedAccuracyJudge(accuracy=0.8)

    def brackets(seed):
        result = run(tasks, [Knockout()], judge, seed=seed, progress=False)
        return [[(c.first, c.second, c.round) for c in t.comparisons] for t in result.strategies[0].tasks], [
            t.scores for t in result.strategies[0].tasks
        ]

    assert brackets(0) == brackets(0)
    assert brackets(0)[0] != brackets(1)[0]


def test_tie_rules():
    task = make_task([1.0, 1.0])  # equal humans: sim scores are equal without noise
    judge = FixedAccuracyJudge(accuracy=1.0, noise=0.0)
    # sim keeps scores strictly ordered with its verdict, so build ties by a judge that always ties
    from rankkit.judges.base import Judge
    from rankkit.judgments.values import Verdict, Winner

    class TieJudge(Judge):
        backend = "tie"

        def compare(self, task, first, second):
            return Verdict(first_grade=1.0, second_grade=1.0, winner=Winner.TIE)

    first_rule, _, src = rank_once(task, Knockout(tie="first"), TieJudge())
    assert first_rule.champion == src.comparisons[0].first
    second_rule, _, src = rank_once(task, Knockout(tie="second"), TieJudge())
    assert second_rule.champion == src.comparisons[0].second
    champions = {rank_once(task, Knockout(), TieJudge(), seed)[0].champion for seed in range(20)}
    assert champions == {"c0", "c1"}
    with pytest.raises(SpecError):
        make_strategy("knockout:tie=random")
    assert judge  # the sim judge itself never ties (see test_sim)


def test_rerun_makes_zero_judge_calls(cache_path):
    tasks = [make_task([float(i) for i in range(7)], task_id=f"t{k}") for k in range(3)]
    with JudgmentCache(cache_path) as cache:
        first = run(tasks, [Knockout(order="both")], CountingJudge(FixedAccuracyJudge()), cache, progress=False)
    assert first.strategies[0].cost.judge_calls == 3 * 12
    counting = CountingJudge(FixedAccuracyJudge())
    with JudgmentCache(cache_path) as cache:
        second = run(tasks, [Knockout(order="both")], counting, cache, progress=False)
    assert counting.calls == 0 and second.strategies[0].cost.judge_calls == 0
    assert second.strategies[0].cost.cache_hits == 36
    assert [t.scores for t in first.strategies[0].tasks] == [t.scores for t in second.strategies[0].tasks]


def test_crash_then_rerun_costs_the_same_as_one_clean_run(cache_path):
    tasks = [make_task([float(i) for i in range(9)], task_id=f"t{k}") for k in range(3)]
    strategies = [Knockout(order="both"), make_strategy("individual")]
    clean = CountingJudge(FixedAccuracyJudge(accuracy=0.7))
    run(tasks, strategies, clean, progress=False)
    crashing = CountingJudge(FixedAccuracyJudge(accuracy=0.7), fail_after=13)
    with JudgmentCache(cache_path) as cache, pytest.raises(JudgeError):
        run(tasks, strategies, crashing, cache, progress=False)
    resumed = CountingJudge(FixedAccuracyJudge(accuracy=0.7))
    with JudgmentCache(cache_path) as cache:
        result = run(tasks, strategies, resumed, cache, progress=False)
    assert crashing.calls == 13
    assert crashing.calls + resumed.calls == clean.calls
    reference = run(tasks, strategies, FixedAccuracyJudge(accuracy=0.7), progress=False)
    assert [t.scores for t in result.strategies[0].tasks] == [t.scores for t in reference.strategies[0].tasks]
