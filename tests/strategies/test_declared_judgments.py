"""What a strategy declares for the dry run: ``exact_judgments`` is what ``rank`` uses whatever the
verdicts, ``max_judgments`` bounds it.

Every declaration is checked against the strategy ranking tasks of several sizes with a judge
whose verdicts vary the paths.
"""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.strategies import Ranking, Strategy, make_strategy
from tests.helpers import make_task, rank_once

SPECS = [
    "individual",
    "pairwise",
    "pairwise:debias=true",
    "knockout",
    "knockout:debias=true",
    "elo",
    "elo:debias=false",
    "bt",
    "panel_elo",
    "panel_elo:debias=true",
    "heapsort",
    "heapsort:debias=false",
    "heapsort:top_k=2",
    "sliding",
    "sliding:passes=2,debias=false",
    "swiss",
    "swiss:debias=true,budget=1.5",
    "swiss:comparisons=1000",
    "active",
    "active:settle=false,batch=3",
    "active:debias=true,budget=2",
    # every strategy in an order other than its defaults
    "knockout:order=random",
    "pairwise:order=random",
    "elo:order=random",
    "bt:order=random",
    "panel_elo:order=random",
    "heapsort:order=given",
    "sliding:order=given",
    "swiss:order=random",
    "active:order=random,settle=false",
    "double_elimination",
    "double_elimination:order=both",
    "double_elimination:order=given",
]


@pytest.mark.parametrize("spec", SPECS)
@pytest.mark.parametrize("n", [2, 3, 5, 8, 13])
def test_declared_counts_hold_whatever_the_verdicts(spec, n):
    strategy = make_strategy(spec)
    judge = FixedAccuracyJudge(accuracy=0.7, position_bias=0.2, noise=1.0)  # verdicts that vary the paths
    for seed in range(3):
        task = make_task([float((i * 7 + seed) % 5) for i in range(n)], task_id=f"t{n}-{seed}")
        _, cost, _ = rank_once(task, strategy, judge, seed=seed)
        used = cost.comparisons + cost.grades
        assert used <= strategy.max_judgments(n), spec
        if strategy.exact_judgments(n) is not None:
            assert used == strategy.exact_judgments(n), spec


def test_which_strategies_declare_a_fixed_count():
    fixed = {spec for spec in SPECS if make_strategy(spec).exact_judgments(5) is not None}
    assert fixed == set(SPECS) - {
        "heapsort",
        "heapsort:debias=false",
        "heapsort:top_k=2",
        "sliding",
        "sliding:passes=2,debias=false",
        "heapsort:order=given",
        "sliding:order=given",
        "active",
        "active:debias=true,budget=2",
        "double_elimination",
        "double_elimination:order=both",
        "double_elimination:order=given",
    }
    assert make_strategy("knockout:debias=true").exact_judgments(5) == 8


def test_a_strategy_declares_nothing_by_default():
    @dataclass(frozen=True)
    class EveryOrder(Strategy):
        """Judges each ordered pair and grades everyone."""

        def rank(self, task, source, rng):
            ids = task.candidate_ids
            source.compare_many([(a, b) for a in ids for b in ids if a != b])
            source.grade_many(ids)
            return Ranking(scores=dict.fromkeys(ids, 0.0))

    assert EveryOrder().exact_judgments(4) is None and EveryOrder().max_judgments(4) is None
