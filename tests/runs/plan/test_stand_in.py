"""The stand-in judge and the read-only cache: a dry run never asks the judge and never writes the cache."""

from __future__ import annotations

import sqlite3

import pytest

from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.cache import JudgmentCache, NullCache, judgment_key
from rankkit.judgments.values import ParseStatus, Winner
from rankkit.runs.plan import POLICIES, ReadOnlyCache, StandInJudge, dry_run, read_only_cache
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from tests.helpers import CountingJudge

SPECS = ("knockout", "heapsort", "active", "individual", "bt")


def rows_of(path) -> list[tuple]:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT key, payload FROM judgments ORDER BY key").fetchall()


def test_a_dry_run_never_asks_the_judge_nor_writes_the_cache(sample_tasks, tmp_path):
    judge = CountingJudge(FixedAccuracyJudge())
    path = tmp_path / "c.sqlite"
    with JudgmentCache(path) as cache:
        run(sample_tasks[:2], [make_strategy("knockout")], judge, cache, progress=False)
    calls, before = judge.calls, rows_of(path)
    with JudgmentCache(path) as cache:
        report = dry_run(sample_tasks, [make_strategy(s) for s in SPECS], judge, cache)
    assert judge.calls == calls and rows_of(path) == before
    assert report.new > 0  # there was something to ask


def test_stand_in_verdicts_are_flagged_and_follow_their_policy(sample_tasks):
    task = sample_tasks[0]
    a, b = task.candidates[:2]
    low, high = task.scale
    judges = {policy: StandInJudge(FixedAccuracyJudge(), policy) for policy in POLICIES}
    for policy, judge in judges.items():
        verdict, grade = judge.compare(task, a, b), judge.grade(task, a)
        assert verdict.status is ParseStatus.OK and verdict.extras == {"stand_in": True, "policy": policy}
        assert grade.status is ParseStatus.OK and grade.extras["stand_in"]
        assert (
            low
            <= min(verdict.first_grade, verdict.second_grade)
            <= max(verdict.first_grade, verdict.second_grade)
            <= high
        )
    assert judges["first"].compare(task, a, b).winner is judges["first"].compare(task, b, a).winner is Winner.FIRST
    ranked, flipped = judges["ranked"].compare(task, a, b), judges["reversed"].compare(task, a, b)
    assert {ranked.winner, flipped.winner} == {Winner.FIRST, Winner.SECOND}  # every verdict turned round
    assert judges["ranked"].compare(task, b, a).winner is not ranked.winner  # consistent: b wins shown first too
    assert judges["ranked"].fingerprint == FixedAccuracyJudge().fingerprint
    assert judges["ranked"].request_key(task, a, b) == FixedAccuracyJudge().request_key(task, a, b)


def test_stand_in_counts_prompt_tokens_of_judges_that_read_prompts(sample_tasks):
    from rankkit.judges import make_judge
    from rankkit.runs.plan import PromptSizes

    inner = make_judge("openai:some-model,mode=logprob,base_url=http://127.0.0.1:9/v1", stand_in=True)
    task = sample_tasks[0]
    a, b = task.candidates[:2]
    stand_in = StandInJudge(inner, sizes=PromptSizes(inner))
    assert stand_in.compare(task, a, b).usage == {"prompt_tokens": PromptSizes(inner).pair(task, a, b)}
    assert StandInJudge(FixedAccuracyJudge()).compare(task, a, b).usage == {}


def test_the_read_only_cache_serves_the_file_and_keeps_its_own_writes_in_memory(tmp_path):
    path = tmp_path / "c.sqlite"
    stored, new = judgment_key("fp", "pair", ["stored"]), judgment_key("fp", "pair", ["new"])
    with JudgmentCache(path) as cache:
        cache.put_key(stored, "fp", "pair", {"value": 1})
    with JudgmentCache(path) as cache:
        view = ReadOnlyCache(cache)
        view.put_key(new, "fp", "pair", {"value": 2})
        view.flush()
        assert view.get_keys([stored, new]) == [{"value": 1}, {"value": 2}]
    assert len(rows_of(path)) == 1


@pytest.mark.parametrize("disabled", [False, True])
def test_read_only_cache_never_creates_the_file(tmp_path, disabled):
    path = tmp_path / "none" / "c.sqlite"
    assert isinstance(read_only_cache(path, disabled), NullCache)
    assert not path.exists() and not path.parent.exists()
