"""The judgment memo: the one place a judgment is asked for — memory, then the cache, then the judge.

More in ``docs/cache.md``.
"""

from __future__ import annotations

import contextlib
import enum
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future
from dataclasses import dataclass
from functools import cached_property
from typing import Any, Protocol, TypeVar

from rankkit.judgments.cache import JudgmentCache, NullCache, bad_row, is_failed, judgment_key
from rankkit.judgments.judge_protocol import JudgeProtocol, Needed
from rankkit.judgments.values import (
    CHOICE_KIND,
    GRADE_KIND,
    RANKING_KIND,
    VERDICT_KIND,
    ComparisonRequest,
    Grade,
    GradeRequest,
    GroupChoice,
    GroupRanking,
    GroupRequest,
    Verdict,
)

J = TypeVar("J")

#: Polling the cache for a key another process is asking: first pause, and the longest pause
#: (the pause doubles while nothing arrives; the lease's expiry bounds the whole wait).
POLL_FIRST_SECONDS = 0.02
POLL_MAX_SECONDS = 0.5

#: The judgment type of each kind a judge gives (its ``from_dict`` and ``to_dict`` are the cache's codec).
JUDGMENT_TYPES: dict[str, Any] = {
    VERDICT_KIND: Verdict,
    GRADE_KIND: Grade,
    CHOICE_KIND: GroupChoice,
    RANKING_KIND: GroupRanking,
}

#: Asks a judge for the requests at the given indices; yields ``(position, judgment)`` as each is
#: ready, ``position`` indexing the list of indices it was given.
Ask = Callable[[list[int]], Iterator[tuple[int, Any]]]


class Feeder(Protocol):
    """What the memo needs of the run's :class:`~rankkit.judgments.dispatch.Dispatcher`: hand it a judge's
    batched method and requests from any worker thread, get ``(index, judgment)`` back as each is
    answered. Named here, so the memo does not import the dispatcher (a floor above it)."""

    def judge_many(
        self, call: Callable[[Sequence[Any]], Iterator[tuple[int, Any]]], requests: Sequence[Any]
    ) -> Iterator[tuple[int, Any]]:
        """Queue ``requests`` for ``call`` and yield ``(index, judgment)`` as each is answered.

        Parameters
        ----------
        call : Callable[[Sequence[Any]], Iterator[tuple[int, Any]]]
            A judge's batched method.
        requests : Sequence[Any]
            Its requests.

        Yields
        ------
        tuple[int, Any]
            The request's index and its judgment, in the order answered.
        """


class Origin(str, enum.Enum):
    """Where a judgment came from.

    ``JUDGE``: asked now, and paid for; ``CACHE``: the persistent cache; ``MEMORY``: answered
    earlier in this run (for another strategy, task or thread, or earlier in the same batch).
    """

    JUDGE = "judge"
    CACHE = "cache"
    MEMORY = "memory"


class JudgmentMemo:
    """Memory → cache → judge lookup of judgments, keyed by content (see ``docs/cache.md``).

    Parameters
    ----------
    judge:
        The run's judge: :meth:`verdicts` and :meth:`grades` ask it by default (None for a memo
        used only through :meth:`fetch`).
    cache:
        A :class:`~rankkit.judgments.cache.JudgmentCache`, or None for no persistent cache.
    dispatcher:
        The run's :class:`~rankkit.judgments.dispatch.Dispatcher` when tasks run concurrently; None asks the
        judge from the calling thread.
    flush_seconds:
        Commit buffered cache writes as answers arrive once this long has passed since the last
        commit, so a killed run loses at most this much paid-for work, and other processes
        waiting on these keys read the answers this soon.

    Examples
    --------
    >>> from rankkit.judges import make_judge
    >>> from rankkit.data.tasks import Candidate, Task
    >>> task = Task("t", "2+2?", (Candidate("a", "4", human={"score": 1.0}),
    ...                           Candidate("b", "5", human={"score": 0.0})), criterion="score", scale=(0.0, 1.0))
    >>> memo = JudgmentMemo(make_judge("sim:preset=gpt4"))
    >>> [origin.value for _, origin in memo.verdicts([(task, *task.candidates)] * 2)]
    ['judge', 'memory']
    >>> memo.verdicts([(task, *task.candidates)])[0][1].value
    'memory'
    """

    def __init__(
        self,
        judge: JudgeProtocol | None = None,
        cache: JudgmentCache | NullCache | None = None,
        dispatcher: Feeder | None = None,
        flush_seconds: float = 0.1,
    ):
        self.judge = judge
        self.cache = cache if cache is not None else NullCache()
        self.dispatcher = dispatcher
        self.flush_seconds = flush_seconds
        self._lock = threading.Lock()
        self._memory: dict[str, Any] = {}
        self._in_flight: dict[str, Future] = {}
        self._flushed = time.monotonic()
        self._waiting = 0

    @property
    def waiting(self) -> int:
        """How many callers are waiting now for judgments another caller is asking for."""
        with self._lock:
            return self._waiting

    @cached_property
    def fingerprint(self) -> str:
        """The judge's fingerprint, computed once (it is a JSON dump of the judge's identity) and
        only when first needed (an LLM judge's identity may need its model's)."""
        return self.judge.fingerprint if self.judge is not None else ""

    # -- typed entry points -------------------------------------------------------------------
    # Each returns one ``(judgment, origin)`` per request, in order. ``judge`` is whose judgments
    # (default: the memo's judge); another judge's (a panel's member) are cached under its own
    # fingerprint and asked of it straight from the calling thread.
    def verdicts(
        self, requests: Sequence[ComparisonRequest], judge: JudgeProtocol | None = None
    ) -> list[tuple[Verdict, Origin]]:
        """The verdict on every ``(task, first, second)`` request."""
        return self._ask_judge(requests, judge, VERDICT_KIND)

    def grades(
        self, requests: Sequence[GradeRequest], judge: JudgeProtocol | None = None
    ) -> list[tuple[Grade, Origin]]:
        """The grade of every ``(task, candidate)`` request."""
        return self._ask_judge(requests, judge, GRADE_KIND)

    def choices(
        self, requests: Sequence[GroupRequest], judge: JudgeProtocol | None = None
    ) -> list[tuple[GroupChoice, Origin]]:
        """The k-way choice on every ``(task, candidates)`` request (candidates in the order shown).

        Cached under kind ``"choice"``: the order shown is part of the key, so a shuffle of the same
        answers is another request.
        """
        return self._ask_judge(requests, judge, CHOICE_KIND)

    def rankings(
        self, requests: Sequence[GroupRequest], judge: JudgeProtocol | None = None
    ) -> list[tuple[GroupRanking, Origin]]:
        """The k-way ranking of every ``(task, candidates)`` request (kind ``"ranking"``)."""
        return self._ask_judge(requests, judge, RANKING_KIND)

    def needed(self, needs: Sequence[Needed]) -> list[list[tuple[Any, bool]]]:
        """Per need, one ``(judgment, fresh)`` per request it names: looked up in memory and the
        cache, or asked of its source from the calling thread (``fresh``: asked now, so paid for now).

        What a composite judge builds its answers from (:meth:`JudgeProtocol.needs`).
        """
        found = []
        for need in needs:
            judgments = self._ask_judge(need.requests, need.source, need.kind, need.judgment_type)
            found.append([(judgment, origin is Origin.JUDGE) for judgment, origin in judgments])
        return found

    def _ask_judge(
        self,
        requests: Sequence[tuple[Any, ...]],
        judge: JudgeProtocol | None,
        kind: str,
        judgment_type: Any = None,
    ) -> list[tuple[Any, Origin]]:
        own = judge is None or judge is self.judge
        judge = self.judge if judge is None else judge
        judgment_type = judgment_type or JUDGMENT_TYPES[kind]
        if kind in (CHOICE_KIND, RANKING_KIND):  # a k-way request is (task, candidates): in the order shown
            keys = [[*judge.request_key(task, *candidates), *judge.kway_key()] for task, candidates in requests]
        else:
            keys = [judge.request_key(*request) for request in requests]
        answer = Answering(self, judge, kind)

        def ask(indices: list[int]) -> Iterator[tuple[int, Any]]:
            batch = [requests[i] for i in indices]
            if own and self.dispatcher is not None:
                return self.dispatcher.judge_many(answer, batch)
            return answer(batch)

        fingerprint = self.fingerprint if own else judge.fingerprint
        return self.fetch(fingerprint, kind, keys, ask, judgment_type.from_dict, judgment_type.to_dict)

    # -- any kind of judgment -----------------------------------------------------------------
    def fetch(
        self,
        fingerprint: str,
        kind: str,
        keys: Sequence[Sequence[Any]],
        ask: Ask,
        decode: Callable[[dict[str, Any]], J],
        encode: Callable[[J], dict[str, Any]],
    ) -> list[tuple[J, Origin]]:
        """The judgment of every request, in order, with where it came from.

        Parameters
        ----------
        fingerprint:
            The judge's fingerprint.
        kind:
            The kind of judgment (``"verdict"``, ``"grade"``, or a judge's own kind, e.g. PREPAIR's
            per-answer analyses).
        keys:
            Each request's key (the judge's ``request_key``); equal keys are one request.
        ask:
            Asks the judge for the requests at the given indices of ``keys``.
        decode:
            A cached JSON payload to its judgment.
        encode:
            A judgment to its cached JSON payload.

        Returns
        -------
        list[tuple[J, Origin]]
            ``(judgment, origin)`` per key. A key repeated in ``keys`` is one request: its first
            position carries the origin, the later ones :attr:`Origin.MEMORY`.
        """
        rows = [judgment_key(fingerprint, kind, key) for key in keys]
        first_index: dict[str, int] = {}
        for index, row in enumerate(rows):
            first_index.setdefault(row, index)
        found, waiting, mine = self._look_up(list(first_index), kind, decode)
        # Other threads of this process now wait on these futures; other processes on the leases.
        since = time.time()  # a failed answer committed from now on answers what this call waits for
        elsewhere = self._leased_elsewhere(mine)
        if mine:
            self._ask(fingerprint, kind, [first_index[row] for row in mine], rows, mine, ask, encode)
            for row, future in mine.items():
                found[row] = (future.result(), Origin.JUDGE)
        if elsewhere:
            origins = self._await_other_processes(
                fingerprint, kind, elsewhere, since, first_index, rows, ask, decode, encode
            )
            for row, future in elsewhere.items():
                found[row] = (future.result(), origins[row])
        if waiting:
            with self._lock:
                self._waiting += 1
            try:
                for row, future in waiting.items():
                    found[row] = (future.result(), Origin.MEMORY)
            finally:
                with self._lock:
                    self._waiting -= 1
        out = []
        for index, row in enumerate(rows):
            judgment, origin = found[row]
            out.append((judgment, origin if first_index[row] == index else Origin.MEMORY))
        return out

    def _look_up(
        self, rows: list[str], kind: str, decode: Callable[[dict[str, Any]], J]
    ) -> tuple[dict[str, tuple[J, Origin]], dict[str, Future], dict[str, Future]]:
        """``(found, waiting, mine)`` for distinct ``rows``: those in memory or the cache; those
        another thread of this process is asking (their futures); those this call claims (new
        futures, answered by :meth:`_ask`). Looked up and claimed atomically, so no key is asked twice."""
        found: dict[str, tuple[J, Origin]] = {}
        waiting: dict[str, Future] = {}
        mine: dict[str, Future] = {}
        with self._lock:
            lookup = []
            for row in rows:
                if row in self._memory:
                    found[row] = (self._memory[row], Origin.MEMORY)
                elif row in self._in_flight:
                    waiting[row] = self._in_flight[row]
                else:
                    lookup.append(row)
            for row, payload in zip(lookup, self.cache.get_keys(lookup)):
                if payload is not None and not is_failed(payload):
                    judgment = self._decoded(decode, row, kind, payload)
                    self._memory[row] = judgment
                    found[row] = (judgment, Origin.CACHE)
                else:
                    mine[row] = self._in_flight[row] = Future()
        return found, waiting, mine

    # -- other processes sharing the cache file ----------------------------------------------
    def _claim_leases(self, rows: list[str]) -> set[str]:
        """The rows among ``rows`` this process may ask now. A cache without leases (the
        ``--no-cache`` stand-in, a dry run's read-only view) is nobody else's: all of them."""
        claim = getattr(self.cache, "claim_leases", None)
        return set(rows) if claim is None else set(claim(rows))

    def _release_leases(self, rows: list[str]) -> None:
        release = getattr(self.cache, "release_leases", None)
        if release is not None and rows:
            release(rows)

    def _decoded(self, decode: Callable[[dict[str, Any]], Any], row: str, kind: str, payload: dict[str, Any]) -> Any:
        """``decode(payload)`` of a row read from the cache; a :class:`~rankkit.judgments.cache.CacheError`
        naming the row when it is not a ``kind`` judgment rankkit can have written."""
        try:
            return decode(payload)
        except (KeyError, TypeError, ValueError, AttributeError) as err:
            problem = f"missing field {err}" if isinstance(err, KeyError) else str(err)
            raise bad_row(self.cache.path, row, f"not a {kind} judgment ({problem})") from None

    def _leased_elsewhere(self, mine: dict[str, Future]) -> dict[str, Future]:
        """Claim leases on the rows of ``mine``; remove from ``mine`` and return those another
        process holds (or has just answered)."""
        if not mine:
            return {}
        try:
            claimed = self._claim_leases(list(mine))
        except BaseException as error:
            self._fail(list(mine), mine, error)
            raise
        elsewhere = {row: future for row, future in mine.items() if row not in claimed}
        for row in elsewhere:
            del mine[row]
        return elsewhere

    def _await_other_processes(
        self,
        fingerprint: str,
        kind: str,
        elsewhere: dict[str, Future],
        since: float,
        first_index: dict[str, int],
        rows: list[str],
        ask: Ask,
        decode: Callable[[dict[str, Any]], Any],
        encode: Callable[[Any], dict[str, Any]],
    ) -> dict[str, Origin]:
        """Settle every future of ``elsewhere`` (rows another process holds a lease on): read each
        from the cache once its owner commits it (a failed answer too, when committed at or after
        ``since``: the owner's answer to this very request, which it uses as well), and ask the
        judge for any whose lease this process takes over (expired, or released without an answer).

        Returns
        -------
        dict[str, Origin]
            Each row's origin: :attr:`Origin.CACHE` when another process answered it,
            :attr:`Origin.JUDGE` when this process asked after all.
        """
        origins: dict[str, Origin] = {}
        pending = dict(elsewhere)
        pause = POLL_FIRST_SECONDS
        with self._lock:
            self._waiting += 1
        try:
            while pending:
                for row, payload in zip(list(pending), self.cache.get_fresh(list(pending), since)):
                    if payload is not None:
                        judgment = self._decoded(decode, row, kind, payload)
                        with self._lock:
                            self._memory[row] = judgment
                            del self._in_flight[row]
                        pending.pop(row).set_result(judgment)
                        origins[row] = Origin.CACHE
                if not pending:
                    break
                # Read first, claim second: an owner that commits in between has released its
                # lease and stored the answer in one transaction, so the claim finds the answer.
                claimed = self._claim_leases(list(pending))
                if claimed:
                    taken = {row: pending.pop(row) for row in list(pending) if row in claimed}
                    self._ask(fingerprint, kind, [first_index[row] for row in taken], rows, taken, ask, encode)
                    origins.update(dict.fromkeys(taken, Origin.JUDGE))
                    pause = POLL_FIRST_SECONDS
                    continue
                # Answers this process holds leases on may be what the other process awaits.
                self.flush()
                time.sleep(pause)
                pause = min(2 * pause, POLL_MAX_SECONDS)
        except BaseException as error:
            self._fail([row for row, future in pending.items() if not future.done()], pending, error)
            raise
        finally:
            with self._lock:
                self._waiting -= 1
        return origins

    # -- asking the judge ---------------------------------------------------------------------
    def _ask(
        self,
        fingerprint: str,
        kind: str,
        indices: list[int],
        rows: list[str],
        mine: dict[str, Future],
        ask: Ask,
        encode: Callable[[Any], dict[str, Any]],
    ) -> None:
        try:
            for position, judgment in ask(indices):
                row = rows[indices[position]]
                self.cache.put_key(row, fingerprint, kind, encode(judgment))
                with self._lock:
                    self._memory[row] = judgment
                    del self._in_flight[row]
                mine[row].set_result(judgment)
                # Commit promptly: other processes waiting on this key read it from the file.
                if time.monotonic() - self._flushed >= self.flush_seconds:
                    self.flush()
        except BaseException as error:
            unanswered = [row for row, future in mine.items() if not future.done()]
            self._fail(unanswered, mine, error)
            with contextlib.suppress(Exception):  # the judge's error matters; unreleased leases expire
                self._release_leases(unanswered)
            raise
        finally:
            if time.monotonic() - self._flushed >= self.flush_seconds:
                self.flush()
        unanswered = [row for row, future in mine.items() if not future.done()]
        if unanswered:  # a judge that yields fewer results than requests is a bug, not a hang
            error = RuntimeError(f"judge answered {len(mine) - len(unanswered)} of {len(mine)} requests")
            self._fail(unanswered, mine, error)
            self._release_leases(unanswered)
            raise error

    def _fail(self, rows: list[str], mine: dict[str, Future], error: BaseException) -> None:
        with self._lock:
            for row in rows:
                self._in_flight.pop(row, None)
                mine[row].set_exception(error)

    def flush(self) -> None:
        """Commit the cache's buffered writes."""
        self._flushed = time.monotonic()
        self.cache.flush()


@dataclass(frozen=True)
class Answering:
    """The one call from the memo into a judge: its needs looked up first, then its answers.

    Equal for equal memo, judge and kind, so the dispatcher batches one judge's requests from
    every worker thread into one call.
    """

    memo: JudgmentMemo
    judge: JudgeProtocol
    kind: str

    def __call__(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Yield ``(index in requests, judgment)`` as the judge answers."""
        needs = self.judge.needs(self.kind, requests)
        return self.judge.answer(self.kind, requests, self.memo.needed(needs) if needs else [])
