"""The dispatcher and the run around it: one cache -> judge path, in-flight de-duplication, and
concurrent tasks that give the same results as a sequential run."""

from __future__ import annotations

import threading
import time

import pytest

from rankkit.judges.base import Judge, JudgeError
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.cache import JudgmentCache, NullCache
from rankkit.judgments.dispatch import Dispatcher
from rankkit.judgments.judge_protocol import Capabilities
from rankkit.judgments.memo import JudgmentMemo, Origin
from rankkit.judgments.values import Grade, ParseStatus, Verdict, Winner
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from tests.helpers import make_task


class PacedJudge(Judge):
    """A deterministic judge (the simulator) that takes ``delay`` seconds per call and records how
    many requests it had in flight at once and the size of every call.

    capacity / fills_batches: what the dispatcher is told about the backend.
    fail_on: a task id whose requests raise a JudgeError.
    """

    backend = "paced"

    def __init__(self, capacity: int, fills_batches: bool = False, delay: float = 0.002, fail_on: str | None = None):
        self.inner = FixedAccuracyJudge(accuracy=0.8, position_bias=0.1, noise=0.3, seed=5)
        self.capabilities = Capabilities(capacity=capacity, fills_batches=fills_batches)
        self.delay = delay
        self.fail_on = fail_on
        self.calls: list[int] = []
        self.in_flight = 0
        self.max_in_flight = 0
        self.requests = 0
        self._lock = threading.Lock()

    @property
    def fingerprint(self) -> str:
        return "paced:" + self.inner.fingerprint

    def request_key(self, task, *candidates):
        return self.inner.request_key(task, *candidates)

    def _serve(self, requests, answer):
        with self._lock:
            self.calls.append(len(requests))
            self.requests += len(requests)
            self.in_flight += len(requests)
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        try:
            time.sleep(self.delay)
            for index, request in enumerate(requests):
                if request[0].task_id == self.fail_on:
                    raise JudgeError(f"planted failure on task {self.fail_on}")
                yield index, answer(*request)
        finally:
            with self._lock:
                self.in_flight -= len(requests)

    def compare_many(self, requests):
        return self._serve(requests, self.inner.compare)

    def grade_many(self, requests):
        return self._serve(requests, self.inner.grade)


STRATEGIES = ["knockout:order=both", "heapsort", "swiss", "active", "bt", "individual", "sliding"]


def _tasks(count: int = 12, size: int = 8):
    return [make_task([float((k * 7 + i * 3) % 11) for i in range(size)], task_id=f"t{k:02d}") for k in range(count)]


def _summary(result):
    """Everything a run decided, per strategy and task (no timings)."""
    out = []
    for strategy in result.strategies:
        out.append(
            (
                strategy.name,
                strategy.cost.to_dict(),
                [
                    (t.task_id, t.scores, t.ranking, t.champion, [c.to_dict() for c in t.comparisons], t.cost.to_dict())
                    for t in strategy.tasks
                ],
            )
        )
    return out


@pytest.mark.parametrize("fills_batches", [False, True])
def test_concurrent_run_is_identical_to_a_sequential_one(fills_batches):
    tasks = _tasks()
    strategies = [make_strategy(s) for s in STRATEGIES]
    sequential = run(tasks, strategies, PacedJudge(8, fills_batches, delay=0), progress=False, workers=1)
    judge = PacedJudge(8, fills_batches, delay=0.001)
    concurrent = run(tasks, strategies, judge, progress=False, workers=8)
    assert _summary(concurrent) == _summary(sequential)
    assert concurrent.strategies[0].metrics == sequential.strategies[0].metrics


def test_streaming_keeps_more_requests_in_flight_than_one_task_has():
    # heapsort asks one pair (both orders: 2 requests) at a time per task; only concurrency across
    # tasks can fill 16 slots.
    judge = PacedJudge(16, fills_batches=False, delay=0.01)
    run(_tasks(16), [make_strategy("heapsort")], judge, progress=False)
    assert max(judge.calls) <= 16
    assert judge.max_in_flight > 2


def test_batching_judge_gets_batches_from_several_tasks():
    # one knockout round of one 8-candidate task is 4 requests; batches of 16 need four tasks.
    judge = PacedJudge(16, fills_batches=True, delay=0.001)
    run(_tasks(12), [make_strategy("knockout")], judge, progress=False)
    assert max(judge.calls) == 16
    assert sum(judge.calls) == judge.requests == 12 * 7
    assert max(judge.calls) > 4


def test_a_batch_waits_for_the_step_of_every_worker_still_working_out_its_next_one():
    # Three workers ask one request each, then take different times to work out their next step.
    # A worker whose answers are in is busy, not waiting: the second batch waits for all three
    # second steps instead of going out with the first one to arrive.
    dispatcher = Dispatcher(capacity=100, fills_batches=True, max_linger=60.0)
    dispatcher.expect_workers(3)

    def answer(requests):
        for index, request in enumerate(requests):
            yield index, request * 10

    def worker(pause: float) -> None:
        for step in range(2):
            for _, judgment in dispatcher.judge_many(answer, [step]):
                assert judgment == step * 10
                time.sleep(pause)  # working out the next step from the answer, the request's iterator still open

    threads = [threading.Thread(target=worker, args=(pause,)) for pause in (0.0, 0.2, 0.4)]
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)
    finally:
        dispatcher.close()
    assert dispatcher.batches == [3, 3]


def test_a_failing_task_stops_the_run_and_keeps_what_was_paid_for(tmp_path):
    tasks = _tasks(10)
    judge = PacedJudge(4, delay=0.001, fail_on="t05")
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        with pytest.raises(JudgeError, match="t05"):
            run(tasks, [make_strategy("knockout")], judge, cache, progress=False)
        paid = judge.requests
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        stored = len(cache)
        assert stored > 0
        # a rerun without the fault pays only for what was never answered
        again = PacedJudge(4, delay=0)
        result = run(tasks, [make_strategy("knockout")], again, cache, progress=False)
        assert result.strategies[0].cost.cache_hits == stored
        assert again.requests == result.strategies[0].cost.judge_calls == 10 * 7 - stored
        assert paid >= stored


class FlakyJudge(Judge):
    """Fails to parse every comparison the first time it is asked, then answers."""

    backend = "flaky"

    def __init__(self):
        self.asked = 0
        self.failing = True

    def compare(self, task, first, second):
        self.asked += 1
        if self.failing:
            return Verdict(first_grade=0.5, second_grade=0.5, winner=Winner.TIE, raw="", status=ParseStatus.FAILED)
        return Verdict(first_grade=1.0, second_grade=0.0, winner=Winner.FIRST, raw="Answer 1: 1 Answer 2: 0")


def test_failed_judgments_are_asked_again_on_a_rerun(tmp_path):
    tasks = [make_task([1.0, 2.0, 3.0, 4.0])]
    judge = FlakyJudge()
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        first = run(tasks, [make_strategy("knockout")], judge, cache, progress=False)
        # each failed match is asked once more in the other order (which fails too)
        assert first.strategies[0].cost.parse_failures == 6
        judge.failing = False
        second = run(tasks, [make_strategy("knockout")], judge, cache, progress=False)
        cost = second.strategies[0].cost
        assert cost.judge_calls == 3 and cost.cache_hits == 0 and cost.parse_failures == 0
        third = run(tasks, [make_strategy("knockout")], judge, cache, progress=False)
        assert third.strategies[0].cost.judge_calls == 0 and third.strategies[0].cost.cache_hits == 3


def test_first_writer_wins_but_a_failure_is_replaced(tmp_path):
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        cache.put("fp", "pair", ["x"], {"status": "ok", "v": 1})
        cache.put("fp", "pair", ["x"], {"status": "ok", "v": 2})
        cache.put("fp", "pair", ["y"], {"status": "failed", "v": 1})
        cache.put("fp", "pair", ["y"], {"status": "ok", "v": 2})
        cache.flush()
        cache.put("fp", "pair", ["x"], {"status": "ok", "v": 3})
        cache.put("fp", "pair", ["z"], {"status": "failed", "v": 1})
        cache.flush()
        cache.put("fp", "pair", ["z"], {"status": "ok", "v": 2})
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        assert cache.get("fp", "pair", ["x"])["v"] == 1
        assert cache.get("fp", "pair", ["y"])["v"] == 2
        assert cache.get("fp", "pair", ["z"])["v"] == 2


def test_the_memo_asks_a_key_once_while_it_is_in_flight():
    store = JudgmentMemo(cache=NullCache())
    started, release = threading.Event(), threading.Event()
    asked: list[int] = []

    def slow_ask(indices):
        asked.append(len(indices))
        started.set()
        release.wait(5)
        for position in range(len(indices)):
            yield position, Grade(value=1.0)

    def quick_ask(indices):
        raise AssertionError("a key in flight must not be asked again")

    results = {}
    first = threading.Thread(
        target=lambda: results.setdefault(
            "first", store.fetch("fp", "point", [["k"]], slow_ask, Grade.from_dict, Grade.to_dict)
        )
    )
    first.start()
    started.wait(5)
    second = threading.Thread(
        target=lambda: results.setdefault(
            "second", store.fetch("fp", "point", [["k"]], quick_ask, Grade.from_dict, Grade.to_dict)
        )
    )
    second.start()
    time.sleep(0.05)
    release.set()
    first.join(5)
    second.join(5)
    assert asked == [1]
    assert results["first"][0][1] is Origin.JUDGE and results["second"][0][1] is Origin.MEMORY


def test_dispatcher_refuses_new_requests_after_cancel():
    judge = PacedJudge(2)
    dispatcher = Dispatcher(capacity=2, fills_batches=False)
    try:
        dispatcher.cancel(JudgeError("boom"))
        with pytest.raises(RuntimeError, match="stopped"):
            list(dispatcher.judge_many(judge.compare_many, []))
    finally:
        dispatcher.close()
