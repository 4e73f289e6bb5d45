"""Strategy.plan: the judgments a strategy will use, known before it runs (for --dry-run).

Every plan is checked against the strategy actually ranking the same task with a generator seeded
the same way: exact counts must equal the cost, bounds must hold, and the pairs a plan names must
be among those used (all of them when the plan says it knows them all).
"""

from __future__ import annotations

import random
from dataclasses import dataclass

import pytest

from rankkit.judges.sim import SimulatedJudge
from rankkit.strategies import Plan, Ranking, Strategy, make_strategy
from tests.helpers import make_task, rank_once

SPECS = ["individual", "pairwise", "pairwise:debias=true", "knockout", "knockout:debias=true", "elo",
         "elo:debias=false", "bt", "panel_elo", "panel_elo:debias=true", "heapsort", "heapsort:debias=false",
         "heapsort:top_k=2", "sliding", "sliding:passes=2,debias=false", "swiss", "swiss:debias=true,budget=1.5",
         "swiss:comparisons=1000", "active", "active:settle=false,batch=3", "active:debias=true,budget=2",
         # every strategy in an order other than its defaults (the coins order=random flips are planned too)
         "knockout:order=random", "pairwise:order=random", "elo:order=random", "bt:order=random",
         "panel_elo:order=random", "heapsort:order=given", "sliding:order=given", "swiss:order=random",
         "active:order=random,settle=false", "double_elimination", "double_elimination:order=both"]


def used(source) -> tuple[set[tuple[str, str]], set[str]]:
    return {(m.first, m.second) for m in source.comparisons}, set(source._used_points)


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("n", [2, 5, 8, 13])
def test_plans_match_what_the_strategy_does(spec, n):
    strategy = make_strategy(spec)
    judge = SimulatedJudge(accuracy=0.7, position_bias=0.2, noise=1.0)  # verdicts that vary the paths
    for seed in range(3):
        task = make_task([float((i * 7 + seed) % 5) for i in range(n)], task_id=f"t{n}-{seed}")
        plan = strategy.plan(task, random.Random(seed))
        _, cost, source = rank_once(task, strategy, judge, seed=seed)
        pairs, points = used(source)
        if plan.exact:
            assert (cost.comparisons, cost.grades) == (plan.comparisons, plan.grades), spec
        else:
            assert cost.comparisons <= plan.comparisons and cost.grades <= plan.grades, spec
        assert set(plan.pairs) <= pairs and set(plan.points) <= points, spec
        if plan.complete:
            assert set(plan.pairs) == pairs and set(plan.points) == points, spec


def test_which_plans_are_complete():
    task = make_task([1.0, 2.0, 3.0, 4.0, 5.0])
    complete = {spec for spec in SPECS if make_strategy(spec).plan(task, random.Random(0)).complete}
    assert complete == {"individual", "pairwise", "pairwise:debias=true", "elo", "elo:debias=false", "bt",
                        "panel_elo", "panel_elo:debias=true", "pairwise:order=random", "elo:order=random",
                        "bt:order=random", "panel_elo:order=random"}
    knockout = make_strategy("knockout:debias=true").plan(task, random.Random(0))
    assert knockout.exact and knockout.comparisons == 8 and len(knockout.pairs) == 4  # round 1, both orders


def test_the_default_plan_bounds_any_strategy():
    @dataclass(frozen=True)
    class EveryOrder(Strategy):
        """Judges each ordered pair and grades everyone: the most any strategy can use."""

        def rank(self, task, source, rng):
            ids = task.candidate_ids
            source.compare_many([(a, b) for a in ids for b in ids if a != b])
            source.grade_many(ids)
            return Ranking(scores=dict.fromkeys(ids, 0.0))

    task = make_task([1.0, 2.0, 3.0, 4.0])
    plan = EveryOrder().plan(task, random.Random(0))
    _, cost, _ = rank_once(task, EveryOrder(), SimulatedJudge())
    assert isinstance(plan, Plan) and not plan.exact
    assert (cost.comparisons, cost.grades) == (plan.comparisons, plan.grades) == (12, 4)
