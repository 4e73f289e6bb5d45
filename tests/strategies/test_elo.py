"""``elo``: all pairs judged in one batch, online Elo over permutations, reuse across strategies."""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.base import Judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.judgments.values import Verdict
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

PERFECT = "sim:model=fixed,accuracy=1,position_bias=0,noise=0"


class RecordingJudge(Judge):
    """Delegates to another judge and records every batch of comparisons it is asked."""

    backend = "recording"

    def __init__(self, inner: Judge):
        self.inner = inner
        self.batches: list[list[tuple[str, str, str]]] = []

    def fingerprint_fields(self) -> dict:
        return {"inner": self.inner.fingerprint}

    def compare_many(self, requests: Sequence) -> Iterator[tuple[int, Verdict]]:
        self.batches.append([(task.task_id, a.id, b.id) for task, a, b in requests])
        yield from self.inner.compare_many(requests)


def tasks(n_candidates: int = 6, prompts: int = 3):
    """Tasks whose human scores follow planted strengths exactly (s0 worst ... best last)."""
    return planted_tasks({f"s{i}": 1000.0 + 50 * i for i in range(n_candidates)}, prompts, noise=0.0)


@pytest.mark.parametrize("order, per_task", [("given", 15), ("both", 30)])
def test_all_pairs_are_judged_once_per_order_in_one_batch(order, per_task):
    judge = RecordingJudge(make_judge(PERFECT))
    result = run(tasks(6, 3), [make_strategy(f"elo:order={order}")], judge, progress=False)
    strategy = result.strategies[0]
    assert strategy.cost.comparisons == 3 * per_task  # N(N-1)/2 per order
    assert strategy.cost.judge_calls == 3 * per_task
    assert len(judge.batches) == 3  # ONE compare_many call per task
    assert all(len(batch) == per_task for batch in judge.batches)
    for task_result in strategy.tasks:
        assert all(extra.played == (10 if order == "both" else 5) for extra in task_result.extras.values())


def test_perfect_judge_gives_the_human_order():
    result = run(tasks(7, 2), [make_strategy("elo:permutations=30")], make_judge(PERFECT), progress=False)
    strategy = result.strategies[0]
    assert strategy.metrics["task_spearman"] == pytest.approx(1.0)
    for task_result in strategy.tasks:
        ratings = task_result.scores
        assert sum(ratings.values()) / len(ratings) == pytest.approx(1000.0)  # Elo is zero-sum
        assert task_result.ranking[0] == "c06"


def test_ratings_are_seeded_by_the_run_seed():
    data = tasks(5, 2)
    judge = make_judge("sim:model=fixed,accuracy=0.7,seed=3")
    first = run(data, [make_strategy("elo:permutations=3")], judge, seed=1, progress=False)
    again = run(data, [make_strategy("elo:permutations=3")], judge, seed=1, progress=False)
    other = run(data, [make_strategy("elo:permutations=3")], judge, seed=2, progress=False)
    assert first.strategies[0].tasks[0].scores == again.strategies[0].tasks[0].scores
    assert first.strategies[0].tasks[0].scores != other.strategies[0].tasks[0].scores


def test_comparisons_are_paid_once_per_run_whatever_the_strategy_order():
    data = tasks(8, 4)
    judge = make_judge("sim:preset=gpt4")
    after = run(
        data, [make_strategy("knockout:order=both"), make_strategy("elo"), make_strategy("bt")], judge, progress=False
    )
    knockout, elo, bt = after.strategies
    assert elo.cost.comparisons == 4 * 8 * 7
    assert elo.cost.judge_calls == elo.cost.comparisons - knockout.cost.comparisons  # knockout's reused
    assert elo.cost.shared_hits == knockout.cost.comparisons
    assert bt.cost.judge_calls == 0 and bt.cost.comparisons == elo.cost.comparisons
    before = run(data, [make_strategy("elo"), make_strategy("knockout:order=both")], judge, progress=False)
    assert before.strategies[1].cost.judge_calls == 0
    assert before.strategies[1].cost.comparisons == knockout.cost.comparisons
    # the same judgments, so the same ratings either way
    assert before.strategies[0].tasks[0].scores == elo.tasks[0].scores


def test_bad_parameters_are_rejected():
    with pytest.raises(SpecError):
        make_strategy("elo:permutations=0")
    with pytest.raises(SpecError):
        make_strategy("elo:k=-1")
