"""``bt``: the all-pairs matches fitted by Bradley–Terry (choix), with bootstrap intervals."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

PERFECT = "sim:model=fixed,accuracy=1,position_bias=0,noise=0"


def tasks(n_candidates: int = 6, prompts: int = 3):
    return planted_tasks({f"s{i}": 1000.0 + 50 * i for i in range(n_candidates)}, prompts, noise=0.0)


@pytest.mark.parametrize("order, per_task", [("given", 21), ("both", 42)])
def test_all_pairs_per_order(order, per_task):
    result = run(tasks(7, 2), [make_strategy(f"bt:order={order}")], make_judge(PERFECT), progress=False)
    assert result.strategies[0].cost.comparisons == 2 * per_task
    assert result.strategies[0].cost.judge_calls == 2 * per_task


def test_perfect_judge_gives_the_human_order_on_the_elo_scale():
    result = run(tasks(7, 2), [make_strategy("bt")], make_judge(PERFECT), progress=False)
    strategy = result.strategies[0]
    assert strategy.metrics["task_spearman"] == pytest.approx(1.0)
    ratings = strategy.tasks[0].scores
    assert sum(ratings.values()) / len(ratings) == pytest.approx(1000.0)
    assert strategy.tasks[0].ranking == [f"c{i:02d}" for i in range(6, -1, -1)]


def test_noisy_judge_still_orders_well_and_bootstrap_adds_intervals():
    # 20 tasks, not 3: with an 80%-accurate judge a 3-task average swings by ±0.05 with any change
    # to the fit (here: the regularisation), which says nothing about ordering well.
    data = planted_tasks({f"s{i}": 1000.0 + 50 * i for i in range(8)}, 20, noise=0.0)
    judge = make_judge("sim:model=fixed,accuracy=0.8,noise=0.3")
    result = run(data, [make_strategy("bt:bootstrap=40")], judge, progress=False)
    strategy = result.strategies[0]
    assert strategy.metrics["task_spearman"] > 0.8
    for task_result in strategy.tasks:
        for cid, extra in task_result.extras.items():
            assert extra.ci_low <= task_result.scores[cid] <= extra.ci_high
            assert extra.ci_low < extra.ci_high


def test_bt_after_elo_reuses_every_judgment():
    data = tasks(6, 2)
    result = run(data, [make_strategy("elo"), make_strategy("bt")], make_judge("sim:preset=chatgpt"), progress=False)
    elo, bt = result.strategies
    assert bt.cost.judge_calls == 0
    assert bt.cost.comparisons == elo.cost.comparisons == 2 * 30


def test_bad_parameters_are_rejected():
    with pytest.raises(SpecError):
        make_strategy("bt:alpha=0")
    with pytest.raises(SpecError):
        make_strategy("bt:bootstrap=-1")
