"""``heapsort``: the judge as a heap-sort comparator, within 2·N·log2(N), never the same pair twice."""

from __future__ import annotations

import math

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from tests.helpers import RecordingJudge, human_order

PERFECT = "sim:model=fixed,accuracy=1,position_bias=0,noise=0"


def tasks(n_candidates: int, prompts: int = 3):
    """Human scores follow planted strengths exactly: c00 worst ... c(N-1) best."""
    return planted_tasks({f"s{i}": 1000.0 + 50 * i for i in range(n_candidates)}, prompts, noise=0.0)


@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
@pytest.mark.parametrize("order", ["random", "both"])
def test_perfect_judge_sorts_into_the_human_order_within_budget(n, order):
    data = tasks(n, 4)
    judge = RecordingJudge(make_judge(PERFECT))
    result = run(data, [make_strategy(f"heapsort:order={order}")], judge, progress=False)
    strategy = result.strategies[0]
    for task, task_result in zip(data, strategy.tasks):
        assert task_result.ranking == human_order(task)
        assert task_result.champion == human_order(task)[0]
        assert task_result.scores[task_result.ranking[0]] == n - 1  # score = N - rank
        assert task_result.scores[task_result.ranking[-1]] == 0
        pairs = {frozenset((c.first, c.second)) for c in task_result.comparisons}
        assert len(pairs) <= 2 * n * math.log2(n)
    # never the same pair twice: no request repeats, and in one order no pair is asked in both orders
    assert len(judge.asked) == len(set(judge.asked))
    if order != "both":
        unordered = [(task_id, frozenset((a, b))) for task_id, a, b in judge.asked]
        assert len(unordered) == len(set(unordered))
    assert strategy.cost.judge_calls == len(judge.asked) == strategy.cost.comparisons


def test_in_one_order_each_unordered_pair_is_asked_in_one_order_only():
    data = tasks(10, 5)
    judge = RecordingJudge(make_judge("sim:model=fixed,accuracy=0.7,seed=4"))  # an inconsistent judge revisits pairs
    run(data, [make_strategy("heapsort:order=random")], judge, progress=False)
    unordered = [(task_id, frozenset((a, b))) for task_id, a, b in judge.asked]
    assert len(unordered) == len(set(unordered))


def test_top_k_stops_early_and_ties_the_rest():
    data = tasks(12, 3)
    full = run(data, [make_strategy("heapsort")], make_judge(PERFECT), progress=False).strategies[0]
    top3 = run(data, [make_strategy("heapsort:top_k=3")], make_judge(PERFECT), progress=False).strategies[0]
    assert top3.cost.comparisons < full.cost.comparisons
    for task, task_result in zip(data, top3.tasks):
        assert task_result.ranking[:3] == human_order(task)[:3]
        assert [task_result.scores[c] for c in task_result.ranking[:3]] == [11.0, 10.0, 9.0]
        rest = {task_result.scores[c] for c in task_result.ranking[3:]}
        assert rest == {(12 - 3 - 1) / 2}
        assert sum(1 for e in task_result.extras.values() if e.position is not None) == 3


def test_reuses_comparisons_other_strategies_made():
    data = tasks(10, 6)
    judge = make_judge("sim:preset=gpt4")
    result = run(data, [make_strategy("knockout"), make_strategy("heapsort:order=random")], judge, progress=False)
    heapsort = result.strategies[1]
    assert heapsort.cost.shared_hits > 0
    assert heapsort.cost.judge_calls == heapsort.cost.comparisons - heapsort.cost.shared_hits


def test_bad_parameters_are_rejected():
    with pytest.raises(SpecError):
        make_strategy("heapsort:top_k=-2")
