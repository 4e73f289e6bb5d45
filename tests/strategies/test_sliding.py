"""``sliding``: K bottom-up bubble passes with a window of two."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from tests.helpers import RecordingJudge, human_order

PERFECT = "sim:model=fixed,accuracy=1,position_bias=0,noise=0"


def tasks(n_candidates: int, prompts: int = 3):
    return planted_tasks({f"s{i}": 1000.0 + 50 * i for i in range(n_candidates)}, prompts, noise=0.0)


@pytest.mark.parametrize("n", [2, 4, 9])
@pytest.mark.parametrize("order", ["random", "both"])
def test_full_passes_with_a_perfect_judge_give_the_human_order(n, order):
    data = tasks(n, 4)
    result = run(data, [make_strategy(f"sliding:passes={n - 1},order={order}")], make_judge(PERFECT), progress=False)
    for task, task_result in zip(data, result.strategies[0].tasks):
        assert task_result.ranking == human_order(task)
        assert [task_result.scores[c] for c in task_result.ranking] == [float(n - i) for i in range(1, n + 1)]
        assert all(extra.settled for extra in task_result.extras.values())


def test_k_passes_settle_the_top_k_within_budget():
    n, k = 10, 3
    data = tasks(n, 5)
    judge = RecordingJudge(make_judge(PERFECT))
    result = run(data, [make_strategy(f"sliding:passes={k},order=random")], judge, progress=False)
    strategy = result.strategies[0]
    budget = sum(n - 1 - p for p in range(k))  # pass p stops below the p settled positions
    for task, task_result in zip(data, strategy.tasks):
        assert task_result.ranking[:k] == human_order(task)[:k]
        assert len(task_result.comparisons) <= budget
        settled = [cid for cid in task_result.ranking if task_result.extras[cid].settled]
        assert settled == task_result.ranking[:k]
    unordered = [(task_id, frozenset((a, b))) for task_id, a, b in judge.asked]
    assert len(unordered) == len(set(unordered))  # never the same pair twice
    assert strategy.cost.judge_calls == len(judge.asked)


def test_one_pass_carries_the_best_to_the_top():
    data = tasks(8, 6)
    result = run(data, [make_strategy("sliding:passes=1")], make_judge(PERFECT), progress=False)
    for task, task_result in zip(data, result.strategies[0].tasks):
        assert task_result.champion == human_order(task)[0]
        assert len({frozenset((c.first, c.second)) for c in task_result.comparisons}) == 7


def test_bad_parameters_are_rejected():
    with pytest.raises(SpecError):
        make_strategy("sliding:passes=0")
