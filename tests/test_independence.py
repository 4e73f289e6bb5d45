"""The 0.2 guarantee: a strategy's result never depends on the strategies beside it.

Every registered strategy, in every presentation order it has, ranks the same tasks

* alone, with no cache;
* together with all the others in one run, on a cold cache (the others' judgments are in memory);
* together in the reversed order, on the now warm cache (every judgment comes from the cache);
* alone again, on the warm cache;

and must make the same comparisons (first, second, round, winner), the same ranking and champion,
and the same scores (within ``TOLERANCE``: they are the same arithmetic on the same verdicts, so
this only absorbs nothing; it is stated, not ``==``, as every float comparison in these tests).
Only *where* a judgment came from may differ (judge, cache or another strategy of the run), and
with it the cost columns, which must still add up.
"""

from __future__ import annotations

import pytest

from rankkit.data.tasks import SAMPLE_DATA, load_tasks
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.judgments.cache import JudgmentCache
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy, strategy_classes
from rankkit.strategies.order import ORDERS

TOLERANCE = 1e-9
#: A judge with a strong first-slot preference, so that presentation order changes verdicts.
JUDGE = "sim:preset=chatgpt"
SEED = 3


def specs() -> list[str]:
    """Every registered strategy with its defaults, then in each presentation order it takes."""
    out = []
    for name, cls in strategy_classes().items():
        out.append(name)
        if cls.default_order() is not None:
            orders = getattr(cls, "orders", ORDERS)  # k-way strategies: given|random|permute
            out += [f"{name}:order={order}" for order in orders if order != cls.default_order()]
    return out


def tasks():
    """The bundled sample (five answers a task) and planted tasks of twelve answers."""
    strengths = {f"s{i}": 80.0 * i for i in range(12)}
    return load_tasks(SAMPLE_DATA) + planted_tasks(strengths, prompts=3, seed=5, prefix="planted")


def outputs(strategy_run) -> list[tuple]:
    """What a strategy decided on every task (the numbers apart)."""
    return [
        (
            task.task_id,
            task.ranking,
            task.champion,
            [(c.first, c.second, c.round, c.verdict.winner.value) for c in task.comparisons],
            [(g.shown, g.round, g.ranking) for g in task.group_comparisons],
        )
        for task in strategy_run.tasks
    ]


def scores(strategy_run) -> list[dict[str, float]]:
    return [task.scores for task in strategy_run.tasks]


@pytest.fixture(scope="module")
def runs(tmp_path_factory):
    data, names = tasks(), specs()
    strategies = [make_strategy(name) for name in names]
    alone = [run(data, [s], make_judge(JUDGE), seed=SEED).strategies[0] for s in strategies]
    path = tmp_path_factory.mktemp("independence") / "cache.sqlite"
    with JudgmentCache(path) as cache:
        together = run(data, strategies, make_judge(JUDGE), cache, seed=SEED).strategies
    with JudgmentCache(path) as cache:
        reversed_warm = run(data, strategies[::-1], make_judge(JUDGE), cache, seed=SEED).strategies[::-1]
        alone_warm = [run(data, [s], make_judge(JUDGE), cache, seed=SEED).strategies[0] for s in strategies]
    return names, {
        "alone": alone,
        "together, cold cache": together,
        "reversed, warm cache": reversed_warm,
        "alone, warm cache": alone_warm,
    }


def test_every_strategy_order_is_covered(runs):
    names, _ = runs
    assert len(names) >= len(strategy_classes()) + 2 * 10  # ten pairwise strategies, three orders each
    assert {"heapsort:order=random", "sliding:order=random", "knockout:order=both"} <= set(names)
    assert {"setwise_knockout:order=permute", "setwise_heapsort:order=given", "listwise:order=random"} <= set(names)


@pytest.mark.parametrize("setting", ["together, cold cache", "reversed, warm cache", "alone, warm cache"])
def test_each_strategy_decides_the_same_alone_and_in_any_company(runs, setting):
    names, by_setting = runs
    for name, alone, other in zip(names, by_setting["alone"], by_setting[setting]):
        assert outputs(other) == outputs(alone), f"{name}: {setting} differs from alone"
        for got, expected in zip(scores(other), scores(alone)):
            assert got == pytest.approx(expected, rel=TOLERANCE, abs=TOLERANCE), f"{name}: {setting}"


def test_only_where_judgments_came_from_differs(runs):
    names, by_setting = runs
    for name, alone, together, warm in zip(
        names, by_setting["alone"], by_setting["together, cold cache"], by_setting["reversed, warm cache"]
    ):
        for strategy_run in (alone, together, warm):
            cost = strategy_run.cost
            assert cost.comparisons + cost.grades == cost.judge_calls + cost.cache_hits + cost.shared_hits, name
            assert (cost.comparisons, cost.grades) == (alone.cost.comparisons, alone.cost.grades), name
        assert alone.cost.cache_hits == 0 and warm.cost.judge_calls == 0, name
    first, *_ = by_setting["together, cold cache"]
    assert first.cost.shared_hits == 0  # the first strategy of a cold run has nobody to share with
    assert sum(s.cost.shared_hits for s in by_setting["together, cold cache"]) > 0
