"""The judgment engine: the one path from a request to the cache to the judge, shared by all tasks.

Everything that asks a judge for something goes through :class:`JudgmentStore.fetch` — the match
layer for comparisons and grades, a panel for its members' votes, PREPAIR for its per-answer
analyses, a calibrated judge for its raw judgments. For a batch of requests it

1. serves every request whose answer is cached (a failed judgment in the cache is not served: a
   rerun asks it again),
2. waits for requests another thread is already asking (one request per key in flight, so two
   tasks or strategies that need the same judgment pay for it once),
3. asks the judge for the rest in one batch and stores each answer as it arrives.

**Concurrency.** :func:`rankkit.runner.run` ranks several tasks at once, one worker thread per task
in progress. Their requests meet in a :class:`Dispatcher`, which feeds the judge from all of them:
a streaming backend (an HTTP server) gets a new request whenever one of its ``capacity`` slots is
free; a batching backend (a local model) gets batches of up to ``capacity`` requests, formed once
the batch is full or every worker is waiting for an answer. A judge with ``capacity`` 1 (the
simulator, replay) is called directly, with no threads at all.

The judge's answer to a request must not depend on which other requests share its batch; then a
run gives the same results whatever the interleaving, because every strategy draws its random
choices from its own task's generator and strategies of one task run in a fixed order. The
simulator, replay and the local model judges in exact mode (:mod:`rankkit.judges.hf_exact`, their
default on a CPU) are batch-invariant bit for bit; a batched local model (``exact=false``) or a
remote server is only up to its numerical noise.
"""

from __future__ import annotations

import collections
import enum
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from typing import Any, Callable, Iterator, Sequence, TypeVar

from rankkit.cache import is_failed, judgment_key

J = TypeVar("J")

#: Asks a judge for the requests at the given indices; yields ``(index, judgment)`` as each is ready.
Ask = Callable[[list[int]], Iterator[tuple[int, Any]]]


class Origin(str, enum.Enum):
    """Where a judgment came from: the persistent cache, the judge (paid for now), or another
    thread's request for the same key that was already in flight."""

    CACHE = "cache"
    JUDGE = "judge"
    SHARED = "shared"


class JudgmentStore:
    """Cache → judge lookup for any judge and any kind of judgment (see the module docstring).

    cache: a :class:`~rankkit.cache.JudgmentCache` or :class:`~rankkit.cache.NullCache`.
    flush_seconds: commit buffered cache writes after a judge batch once this long has passed
        since the last commit, so a killed run loses at most this much paid-for work.
    """

    def __init__(self, cache: Any, flush_seconds: float = 0.1):
        self.cache = cache
        self.flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._in_flight: dict[str, Future] = {}
        self._flushed = time.monotonic()
        self._waiting = 0

    def fetch(self, fingerprint: str, kind: str, keys: Sequence[Sequence[Any]], ask: Ask,
              decode: Callable[[dict[str, Any]], J], encode: Callable[[J], dict[str, Any]]
              ) -> list[tuple[J, Origin]]:
        """The judgment of every request, in order, with where it came from.

        fingerprint / kind: the judge's fingerprint and the kind of judgment ("pair", "point", ...).
        keys: each request's key (the judge's ``request_key``); equal keys are asked once.
        ask: asks the judge for the requests at the given indices.
        decode / encode: between a judgment and its cached JSON payload.
        """
        row_keys = [judgment_key(fingerprint, kind, key) for key in keys]
        first_index: dict[str, int] = {}
        for index, row in enumerate(row_keys):
            first_index.setdefault(row, index)
        unique = list(first_index)
        found: dict[str, tuple[J, Origin]] = {}
        waiting: dict[str, Future] = {}
        mine: dict[str, Future] = {}
        with self._lock:  # look up and claim atomically, so no key is asked twice
            lookup = [row for row in unique if row not in self._in_flight]
            for row in unique:
                if row in self._in_flight:
                    waiting[row] = self._in_flight[row]
            for row, payload in zip(lookup, self.cache.get_keys(lookup)):
                if payload is not None and not is_failed(payload):
                    found[row] = (decode(payload), Origin.CACHE)
                else:
                    mine[row] = self._in_flight[row] = Future()
        if mine:
            self._ask(fingerprint, kind, [first_index[row] for row in mine], row_keys, mine, ask, encode)
            for row, future in mine.items():
                found[row] = (future.result(), Origin.JUDGE)
        if waiting:
            with self._lock:
                self._waiting += 1
            try:
                for row, future in waiting.items():
                    found[row] = (future.result(), Origin.SHARED)
            finally:
                with self._lock:
                    self._waiting -= 1
        return [found[row] for row in row_keys]

    @property
    def waiting(self) -> int:
        """How many callers are waiting now for judgments another caller is asking for."""
        with self._lock:
            return self._waiting

    def _ask(self, fingerprint: str, kind: str, indices: list[int], row_keys: list[str],
             mine: dict[str, Future], ask: Ask, encode: Callable[[Any], dict[str, Any]]) -> None:
        try:
            for position, judgment in ask(indices):
                row = row_keys[indices[position]]
                self.cache.put_key(row, fingerprint, kind, encode(judgment))
                with self._lock:
                    del self._in_flight[row]
                mine[row].set_result(judgment)
        except BaseException as error:
            with self._lock:
                for row, future in mine.items():
                    if not future.done():
                        self._in_flight.pop(row, None)
                        future.set_exception(error)
            raise
        finally:
            if time.monotonic() - self._flushed >= self.flush_seconds:
                self.flush()
        unanswered = [row for row, future in mine.items() if not future.done()]
        if unanswered:  # a judge that yields fewer results than requests is a bug, not a hang
            error = RuntimeError(f"judge answered {len(mine) - len(unanswered)} of {len(mine)} requests")
            with self._lock:
                for row in unanswered:
                    self._in_flight.pop(row, None)
                    mine[row].set_exception(error)
            raise error

    def flush(self) -> None:
        """Commit the cache's buffered writes."""
        self._flushed = time.monotonic()
        self.cache.flush()


def as_store(cache: Any) -> JudgmentStore:
    """The store for what a judge was bound to: a store as is, a cache wrapped, None as no cache."""
    if isinstance(cache, JudgmentStore):
        return cache
    if cache is None:
        from rankkit.cache import NullCache

        cache = NullCache()
    return JudgmentStore(cache)


# ---------------------------------------------------------------------------------------------
# Dispatching the requests of many worker threads to one judge


class Cancelled(RuntimeError):
    """The run stopped (another task failed) while this request was waiting."""


class Dispatcher:
    """Feeds one judge with the requests of many worker threads (see the module docstring).

    judge: the judge; its ``compare_many``/``grade_many`` may be called from several threads at
        once when it streams (``fills_batches`` False), and from one thread when it batches.
    capacity: requests the judge can usefully work on at once (HTTP: concurrency × replicas;
        a local model: its batch size).
    fills_batches: wait until a batch of ``capacity`` is ready (or every worker waits) before
        calling the judge, rather than sending each request as a slot frees.
    max_linger: the longest a request waits for its batch to fill, in seconds.
    """

    def __init__(self, judge: Any, capacity: int, fills_batches: bool, max_linger: float = 0.5):
        self.judge = judge
        self.capacity = max(1, int(capacity))
        self.fills_batches = fills_batches
        self.max_linger = max_linger
        self._cond = threading.Condition()
        self._pending: collections.deque[tuple[str, Any, Future, float]] = collections.deque()
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
        many wait (no one else will add to it)."""
        with self._cond:
            self._workers = count
            self._cond.notify_all()

    def judge_many(self, kind: str, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Queue the requests and yield ``(index, judgment)`` as each is answered."""
        futures: list[Future] = []
        with self._cond:
            if self._error is not None:
                raise Cancelled("the run stopped after another task failed") from self._error
            now = time.monotonic()
            for request in requests:
                future: Future = Future()
                futures.append(future)
                self._pending.append((kind, request, future, now))
            self._waiting += 1
            self._cond.notify_all()
        order = {id(future): index for index, future in enumerate(futures)}
        try:
            for future in as_completed(futures):
                yield order[id(future)], future.result()
        finally:
            with self._cond:
                self._waiting -= 1

    def cancel(self, error: BaseException) -> None:
        """Fail every queued request and refuse new ones (another worker hit ``error``)."""
        with self._cond:
            self._error = error
            while self._pending:
                _, _, future, _ = self._pending.popleft()
                future.set_exception(Cancelled("the run stopped after another task failed"))
            self._cond.notify_all()

    def close(self) -> None:
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
            by_kind: dict[str, list[tuple[Any, Future]]] = {}
            for kind, request, future, _ in batch:
                by_kind.setdefault(kind, []).append((request, future))
            for kind, group in by_kind.items():
                if self._pool is None:
                    self._execute(kind, group)
                else:
                    self._pool.submit(self._execute, kind, group)

    def _execute(self, kind: str, group: list[tuple[Any, Future]]) -> None:
        call = self.judge.compare_many if kind == "pair" else self.judge.grade_many
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


# ---------------------------------------------------------------------------------------------
# One judge's view


class JudgmentEngine:
    """How the match layer asks one judge: keys from the judge, lookups in the store, misses to
    the dispatcher (when tasks run concurrently) or straight to the judge.

    judge: the run's judge.
    store: the run's :class:`JudgmentStore` (a cache is wrapped in one).
    dispatcher: the run's :class:`Dispatcher`, or None to call the judge from the calling thread.
    """

    def __init__(self, judge: Any, store: Any, dispatcher: Dispatcher | None = None):
        self.judge = judge
        self.store = store if isinstance(store, JudgmentStore) else JudgmentStore(store)
        self.dispatcher = dispatcher
        self.fingerprint = judge.fingerprint  # computed once: it is a JSON dump of the identity

    def judgments(self, kind: str, requests: Sequence[tuple[Any, ...]]) -> list[tuple[Any, Origin]]:
        """Judge each request (``(task, candidate)`` for "point", ``(task, first, second)`` for
        "pair"), in order, with where each judgment came from."""
        from rankkit.judges.base import Verdict, Grade

        judgment_type = Verdict if kind == "pair" else Grade
        keys = [self.judge.request_key(*request) for request in requests]

        def ask(indices: list[int]) -> Iterator[tuple[int, Any]]:
            batch = [requests[i] for i in indices]
            if self.dispatcher is not None:
                return self.dispatcher.judge_many(kind, batch)
            return (self.judge.compare_many if kind == "pair" else self.judge.grade_many)(batch)

        return self.store.fetch(self.fingerprint, kind, keys, ask, judgment_type.from_dict,
                                judgment_type.to_dict)
