"""Feeding one judge from many worker threads: the :class:`Dispatcher`.

:func:`rankkit.runs.runner.run` ranks several tasks at once, one worker thread per task in progress,
when the judge can work on several requests at once (``Judge.capabilities.capacity`` > 1). The requests the
workers' :class:`~rankkit.judgments.memo.JudgmentMemo` could not answer from memory or the cache meet here:
a streaming backend (an HTTP server) gets a new request whenever one of its ``capacity`` slots is
free; a batching backend (a local model) gets batches of up to ``capacity`` requests, formed once
the batch is full or every worker is waiting for an answer. A judge with ``capacity`` 1 (the
simulator, replay) is called directly, with no threads at all.

The judge's answer to a request must not depend on which other requests share its batch; then a
run gives the same results whatever the interleaving, because every strategy draws its random
choices from its own generator. The simulator, replay and the local model judges in exact mode
(:mod:`rankkit.judges.local.hf_exact`, their default on a CPU) are batch-invariant bit for bit; a batched
local model (``exact=false``) or a remote server is only up to its numerical noise.
"""

from __future__ import annotations

import collections
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any

#: A judge's batched method (``compare_many`` or ``grade_many``): yields ``(index, judgment)``.
JudgeCall = Callable[[Sequence[Any]], Iterator[tuple[int, Any]]]


class Cancelled(RuntimeError):
    """The run stopped (another task failed) while this request was waiting."""


class Dispatcher:
    """Feeds one judge with the requests of many worker threads (see the module docstring).

    Each request comes with the judge method that answers it (``compare_many`` or
    ``grade_many``), which may be called from several threads at once when the judge streams
    (``fills_batches`` False), and from one thread when it batches.

    Parameters
    ----------
    capacity
        Requests the judge can usefully work on at once (HTTP: concurrency × replicas; a local
        model: its batch size).
    fills_batches
        Wait until a batch of ``capacity`` is ready (or every worker waits) before calling the
        judge, rather than sending each request as a slot frees.
    max_linger
        The longest a request waits for its batch to fill, in seconds.
    """

    def __init__(self, capacity: int, fills_batches: bool, max_linger: float = 0.5):
        self.capacity = max(1, int(capacity))
        self.fills_batches = fills_batches
        self.max_linger = max_linger
        self._cond = threading.Condition()
        self._pending: collections.deque[tuple[JudgeCall, Any, Future, float]] = collections.deque()
        self._in_flight = 0
        self._workers = 0
        self._waiting = 0
        self._closed = False
        self._error: BaseException | None = None
        self.batches: list[int] = []  # sizes of the judge calls made (for benchmarks and tests)
        self.max_in_flight = 0
        self._pool = None if fills_batches else ThreadPoolExecutor(self.capacity, thread_name_prefix="rankkit-judge")
        self._thread = threading.Thread(target=self._loop, name="rankkit-dispatcher", daemon=True)
        self._thread.start()

    # -- worker side --------------------------------------------------------------------------
    def expect_workers(self, count: int) -> None:
        """Say how many worker threads are ranking tasks now: a batch is sent early once that
        many wait (no one else will add to it).

        Parameters
        ----------
        count
            The number of worker threads.
        """
        with self._cond:
            self._workers = count
            self._cond.notify_all()

    def judge_many(self, call: JudgeCall, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Queue the requests for ``call`` and yield ``(index, judgment)`` as each is answered.

        Yields the request's index and its judgment, in the order answered.

        Parameters
        ----------
        call
            A judge's batched method.
        requests
            Its requests.

        Raises
        ------
        Cancelled
            When another worker failed and the run is stopping.
        """
        futures: list[Future] = []
        # This worker counts as waiting while any of its requests is unanswered, and no longer: once
        # its answers are in it is busy working out its next step, and a batch formed before that
        # step arrives would split the step in two.
        unanswered = len(requests)
        waiting = True

        def stop_waiting() -> None:  # under self._cond
            nonlocal waiting
            if waiting:
                waiting = False
                self._waiting -= 1
                self._cond.notify_all()

        def answered(_: Future) -> None:
            nonlocal unanswered
            with self._cond:
                unanswered -= 1
                if unanswered == 0:
                    stop_waiting()

        with self._cond:
            if self._error is not None:
                raise Cancelled("the run stopped after another task failed") from self._error
            now = time.monotonic()
            self._waiting += 1
            if not requests:
                stop_waiting()
            for request in requests:
                future: Future = Future()
                futures.append(future)
                self._pending.append((call, request, future, now))
            self._cond.notify_all()
        for future in futures:
            future.add_done_callback(answered)
        order = {id(future): index for index, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                yield order[id(future)], future.result()
        finally:
            with self._cond:
                stop_waiting()

    def cancel(self, error: BaseException) -> None:
        """Fail every queued request and refuse new ones (another worker hit ``error``).

        Parameters
        ----------
        error
            What the other worker hit.
        """
        with self._cond:
            self._error = error
            while self._pending:
                _, _, future, _ = self._pending.popleft()
                future.set_exception(Cancelled("the run stopped after another task failed"))
            self._cond.notify_all()

    def close(self) -> None:
        """Stop taking requests and wait for the dispatching thread (and its pool of judge threads) to finish."""
        with self._cond:
            self._closed = True
            self._cond.notify_all()
        self._thread.join()
        if self._pool is not None:
            self._pool.shutdown(wait=True)

    # -- dispatcher side ----------------------------------------------------------------------
    def _ready(self) -> bool:
        if not self._pending:
            return False
        if not self.fills_batches:
            return self._in_flight < self.capacity
        if self._in_flight:
            return False
        everyone_waits = self._waiting >= self._workers
        lingered = time.monotonic() - self._pending[0][3] >= self.max_linger
        return len(self._pending) >= self.capacity or everyone_waits or lingered or self._closed

    def _loop(self) -> None:
        while True:
            with self._cond:
                while not self._ready():
                    if self._closed and not self._pending:
                        return
                    self._cond.wait(timeout=0.05)
                size = min(len(self._pending), self.capacity - self._in_flight)
                batch = [self._pending.popleft() for _ in range(size)]
                self._in_flight += size
                self.max_in_flight = max(self.max_in_flight, self._in_flight)
                self.batches.append(size)
            by_call: dict[JudgeCall, list[tuple[Any, Future]]] = {}
            for call, request, future, _ in batch:
                by_call.setdefault(call, []).append((request, future))
            for call, group in by_call.items():
                if self._pool is None:
                    self._execute(call, group)
                else:
                    self._pool.submit(self._execute, call, group)

    def _execute(self, call: JudgeCall, group: list[tuple[Any, Future]]) -> None:
        answered = 0
        try:
            for index, judgment in call([request for request, _ in group]):
                group[index][1].set_result(judgment)
                answered += 1
                with self._cond:
                    self._in_flight -= 1
                    self._cond.notify_all()
        except BaseException as error:  # handed to the waiting worker, which re-raises it
            for _, future in group:
                if not future.done():
                    future.set_exception(error)
        finally:
            unanswered = [future for _, future in group if not future.done()]
            for future in unanswered:
                future.set_exception(RuntimeError(f"judge answered {answered} of {len(group)} requests"))
            with self._cond:
                self._in_flight -= len(group) - answered
                self._cond.notify_all()
