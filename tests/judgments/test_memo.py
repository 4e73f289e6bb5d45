"""The judgment memo across processes: leases in the shared cache make N processes pay once.

Each test starts its processes with the ``spawn`` method (a fresh interpreter, as separate
``rankkit`` commands are), so nothing is shared but the cache file.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
import threading
import time
from pathlib import Path

import pytest

from rankkit.judgments.cache import JudgmentCache, NullCache, judgment_key
from rankkit.judgments.memo import JudgmentMemo, Origin

FINGERPRINT = "slow-test-judge"
KIND = "verdict"


def _slow_ask(keys: list[list[str]], calls: Path, seconds: float):
    """An ``Ask`` for :meth:`JudgmentMemo.fetch` that sleeps ``seconds`` per request and appends
    one line per request to ``calls``; the answer is a function of the key alone."""

    def ask(indices: list[int]):
        for position, index in enumerate(indices):
            time.sleep(seconds)
            with open(calls, "a") as out:
                out.write(f"{os.getpid()} {keys[index][0]}\n")
            yield position, {"answer": keys[index][0].upper()}

    return ask


def _fetch_in_batches(cache_path: str, calls: str, names: list[str], batch: int, seconds: float) -> list:
    """Run in a spawned process: fetch ``names`` through a memo over the shared cache, ``batch``
    keys per call; returns each answer with its origin."""
    out = []
    with JudgmentCache(cache_path) as cache:
        memo = JudgmentMemo(cache=cache)
        for start in range(0, len(names), batch):
            keys = [[name] for name in names[start : start + batch]]
            fetched = memo.fetch(FINGERPRINT, KIND, keys, _slow_ask(keys, Path(calls), seconds), dict, dict)
            out += [(key[0], answer, origin.value) for key, (answer, origin) in zip(keys, fetched)]
        memo.flush()
    return out


def _paid(calls: Path) -> list[str]:
    return calls.read_text().split("\n")[:-1] if calls.exists() else []


def test_two_processes_asking_the_same_keys_through_a_slow_judge_pay_once(tmp_path):
    names = [f"k{i:02d}" for i in range(24)]
    calls = tmp_path / "calls.txt"
    context = multiprocessing.get_context("spawn")
    with context.Pool(2) as pool:
        # opposite orders and small batches, so each process leases some keys and waits on others
        jobs = [
            pool.apply_async(_fetch_in_batches, (str(tmp_path / "c.sqlite"), str(calls), order, 4, 0.05))
            for order in (names, names[::-1])
        ]
        first, second = (job.get(timeout=120) for job in jobs)
    paid = _paid(calls)
    assert sorted(line.split()[1] for line in paid) == names  # every key asked exactly once in total
    assert len({line.split()[0] for line in paid}) == 2  # and both processes did some of the asking
    expected = {name: {"answer": name.upper()} for name in names}
    for out in (first, second):
        assert {name: answer for name, answer, _ in out} == expected
    origins = [origin for out in (first, second) for _, _, origin in out]
    assert origins.count(Origin.JUDGE.value) == len(names)
    assert origins.count(Origin.CACHE.value) == len(names)  # the other process's answers, read from the file
    with sqlite3.connect(tmp_path / "c.sqlite") as db:
        assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0  # all released


def memo_row(key: list[str]) -> str:
    """The row key the memo stores ``key`` under."""
    return judgment_key(FINGERPRINT, KIND, key)


def _lease(path: Path, key: str, owner: str, expires: float) -> None:
    """Write a lease row as another process would."""
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO leases (key, owner, expires) VALUES (?, ?, ?)", (key, owner, expires))


def test_an_expired_lease_of_a_dead_owner_is_taken_over_after_the_expiry(tmp_path):
    path = tmp_path / "c.sqlite"
    calls = tmp_path / "calls.txt"
    keys = [["a"], ["b"]]
    with JudgmentCache(path) as cache:
        memo = JudgmentMemo(cache=cache)
        row = memo_row(keys[0])
        # another host's process (so it cannot be checked for life) crashed holding "a"; its lease runs 1 s more
        _lease(path, row, "elsewhere/12345/deadbeef", time.time() + 1.0)
        started = time.monotonic()
        with pytest.warns(UserWarning, match="held past their expiry"):
            fetched = memo.fetch(FINGERPRINT, KIND, keys, _slow_ask(keys, calls, 0.0), dict, dict)
        waited = time.monotonic() - started
    assert [answer for answer, _ in fetched] == [{"answer": "A"}, {"answer": "B"}]
    assert [origin for _, origin in fetched] == [Origin.JUDGE, Origin.JUDGE]
    assert sorted(line.split()[1] for line in _paid(calls)) == ["a", "b"]
    # waited for the expiry, then took over at a later poll: never before, and no hang after
    assert 0.9 <= waited < 10.0


def test_leases_are_claimed_once_expire_and_are_taken_over_from_dead_processes_on_this_host(tmp_path):
    path = tmp_path / "c.sqlite"
    with JudgmentCache(path) as one, JudgmentCache(path, lease_seconds=60) as two:
        assert one.claim_leases(["x", "y"]) == ["x", "y"]
        assert two.claim_leases(["x", "y", "z"]) == ["z"]  # x and y are leased by one
        one.put_key("x", FINGERPRINT, KIND, {"answer": "X"})
        one.flush()  # stores x and releases its lease in one transaction
        assert two.claim_leases(["x"]) == []  # answered: nothing to ask
        one.release_leases(["y"])  # the judge failed: y is free at once
        assert two.claim_leases(["y"]) == ["y"]
        _lease(path, "expired", "elsewhere/1/feed", time.time() - 1.0)
        _lease(path, "live", "elsewhere/1/feed", time.time() + 60.0)
        with pytest.warns(UserWarning, match="held past their expiry"):
            assert two.claim_leases(["expired", "live"]) == ["expired"]
        dead = multiprocessing.get_context("spawn").Process(target=time.sleep, args=(0,))
        dead.start()
        dead.join()
        host = two.owner.rsplit("/", 2)[0]
        _lease(path, "orphan", f"{host}/{dead.pid}/feed", time.time() + 60.0)
        _lease(path, "alive", f"{host}/{os.getpid()}/feed", time.time() + 60.0)
        assert two.claim_leases(["orphan", "alive"]) == ["orphan"]
    with sqlite3.connect(path) as db:  # closing released what was leased and never answered
        assert db.execute("SELECT key FROM leases ORDER BY key").fetchall() == [("alive",), ("live",)]


def test_a_failed_judge_releases_its_leases(tmp_path):
    path = tmp_path / "c.sqlite"

    def failing(indices):
        raise RuntimeError("server down")
        yield  # pragma: no cover

    with JudgmentCache(path) as cache:
        memo = JudgmentMemo(cache=cache)
        with pytest.raises(RuntimeError, match="server down"):
            memo.fetch(FINGERPRINT, KIND, [["a"]], failing, dict, dict)
        with sqlite3.connect(path) as db:
            assert db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0
        calls = tmp_path / "calls.txt"
        fetched = memo.fetch(FINGERPRINT, KIND, [["a"]], _slow_ask([["a"]], calls, 0.0), dict, dict)
        assert fetched == [({"answer": "A"}, Origin.JUDGE)]


def test_a_failure_committed_while_waiting_is_used_and_an_older_one_is_asked_again(tmp_path):
    path = tmp_path / "c.sqlite"
    failed = {"answer": "?", "status": "failed"}
    calls = tmp_path / "calls.txt"
    with JudgmentCache(path) as owner, JudgmentCache(path) as waiter:
        old, new = memo_row(["old"]), memo_row(["new"])
        owner.put_key(old, FINGERPRINT, KIND, failed)  # a failure from an earlier run
        owner.flush()
        assert owner.claim_leases([old, new]) == [old, new]  # the owner is asking both again...
        # The owner commits only once the waiter has been refused both leases, so the failure on
        # "new" arrives while the waiter waits, however slowly this thread gets to its fetch.
        refused, claim = threading.Event(), waiter.claim_leases

        def claim_then_signal(rows):
            claimed = claim(rows)
            refused.set()
            return claimed

        waiter.claim_leases = claim_then_signal

        def answer_later():
            assert refused.wait(60)
            time.sleep(0.05)
            owner.put_key(new, FINGERPRINT, KIND, failed)  # ...and fails on "new"
            owner.release_leases([old])  # and its judge raised on "old"
            owner.flush()

        worker = threading.Thread(target=answer_later)
        worker.start()
        keys = [["old"], ["new"]]
        fetched = JudgmentMemo(cache=waiter).fetch(FINGERPRINT, KIND, keys, _slow_ask(keys, calls, 0.0), dict, dict)
        worker.join()
    # "new" is the owner's answer to the very request this process waited for: used, not paid again
    assert fetched == [({"answer": "OLD"}, Origin.JUDGE), (failed, Origin.CACHE)]
    assert [line.split()[1] for line in _paid(calls)] == ["old"]


def test_null_cache_takes_no_leases():
    assert NullCache().claim_leases(["a", "b", "a"]) == ["a", "b"]
    NullCache().release_leases(["a"])


def test_a_lease_is_renewed_while_its_owner_asks(tmp_path):
    path = tmp_path / "c.sqlite"
    with JudgmentCache(path, lease_seconds=1.0) as cache:
        assert cache.claim_leases(["slow"]) == ["slow"]
        time.sleep(2.5)  # well past the first expiry: the renewer (every 0.25 s here) keeps it alive
        with sqlite3.connect(path) as db:
            (expires,) = db.execute("SELECT expires FROM leases WHERE key = 'slow'").fetchone()
        assert expires > time.time()


# -- results never depend on who paid -------------------------------------------------------------


def _slow_sim_run(cache_path: str | None, calls: str, seconds: float) -> tuple[list, int]:
    """Run in a spawned process: knockout (both orders) and bt on the bundled sample with the
    simulated judge slowed down to ``seconds`` per judgment; returns the decisions and the
    judge calls reported."""
    from rankkit import load_tasks, make_judge, make_strategy, run
    from rankkit.data.tasks import SAMPLE_DATA
    from rankkit.judges.simulated.sim import LatentJudge
    from tests.judgments.test_cache import _decisions

    compare, grade = LatentJudge.compare, LatentJudge.grade

    def slowed(method):
        def judged(self, *args):
            time.sleep(seconds)
            with open(calls, "a") as out:
                out.write(f"{os.getpid()}\n")
            return method(self, *args)

        return judged

    LatentJudge.compare, LatentJudge.grade = slowed(compare), slowed(grade)
    tasks = load_tasks(SAMPLE_DATA, limit=3)
    strategies = [make_strategy(s) for s in ("knockout:order=both", "bt")]
    judge = make_judge("sim:preset=gpt4")
    cache = JudgmentCache(cache_path) if cache_path else None
    try:
        result = run(tasks, strategies, judge, cache, seed=2, progress=False)
    finally:
        if cache is not None:
            cache.close()
    return _decisions(result), sum(s.cost.judge_calls for s in result.strategies)


def test_results_are_identical_with_and_without_contention(tmp_path):
    context = multiprocessing.get_context("spawn")
    with context.Pool(3) as pool:
        alone = pool.apply_async(_slow_sim_run, (None, str(tmp_path / "alone.txt"), 0.0))
        shared = [
            pool.apply_async(_slow_sim_run, (str(tmp_path / "c.sqlite"), str(tmp_path / "shared.txt"), 0.01))
            for _ in range(2)
        ]
        (decisions, judge_calls), *contended = [job.get(timeout=300) for job in (alone, *shared)]
    assert [d for d, _ in contended] == [decisions, decisions]
    assert len(_paid(tmp_path / "shared.txt")) == judge_calls  # two processes paid once in total
    assert sum(calls for _, calls in contended) == judge_calls


def test_an_expired_lease_of_another_host_is_taken_over_with_a_note(tmp_path):
    """A lease held past its expiry by another host never makes a run wait, and the take-over is
    said (issue 37, item 2); a live one is waited for."""
    path = tmp_path / "c.sqlite"
    JudgmentCache(path).close()
    with sqlite3.connect(path) as db:
        db.execute("INSERT INTO leases VALUES ('old', 'elsewhere/1/x', ?)", (time.time() - 1,))
        db.execute("INSERT INTO leases VALUES ('live', 'elsewhere/2/y', ?)", (time.time() + 60,))
    with JudgmentCache(path) as cache:
        with pytest.warns(UserWarning, match=r"1 lease\(s\) of 'elsewhere/1/x' held past their expiry"):
            assert cache.claim_leases(["old", "live"]) == ["old"]
