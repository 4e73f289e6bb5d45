"""Replaying strategies on the cache: a dry run never asks the judge."""

from __future__ import annotations

from rankkit.cache import JudgmentCache
from rankkit.judges.sim import SimulatedJudge
from rankkit.plan import dry_run
from rankkit.runner import run
from rankkit.strategies import make_strategy
from tests.helpers import CountingJudge


def test_a_dry_run_never_asks_the_judge(sample_tasks, tmp_path):
    judge = CountingJudge(SimulatedJudge())
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        run(sample_tasks[:2], [make_strategy("knockout")], judge, cache, progress=False)
        calls = judge.calls
        dry_run(sample_tasks, [make_strategy(s) for s in ("knockout", "heapsort", "active", "individual")],
                judge, cache)
    assert judge.calls == calls
