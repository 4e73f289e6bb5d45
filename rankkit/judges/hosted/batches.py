"""Batch APIs of OpenAI and Anthropic: one runtime call's requests as one batch (``batch=true``).

Requests are journaled (:mod:`rankkit.judges.hosted.batch_journal`) before their batch is created
(:mod:`rankkit.judges.hosted.batch_apis`) and answers as soon as read, so a killed run resumes without
paying twice; a creation whose reply is lost is looked up by its tag, never resent blindly. More
in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import logging
import secrets
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rankkit.judges.base import JudgeError
from rankkit.judges.hosted.batch_apis import (
    CALL_ATTEMPTS,
    BatchAPIError,
    BatchProtocol,
    CreationUnanswered,
    HTTPTransport,
    RequestFate,
    Transport,
)
from rankkit.judges.hosted.batch_journal import BatchJournal, request_key
from rankkit.judges.hosted.http_retry import BadResponse

logger = logging.getLogger("rankkit.judges.hosted.batches")

#: The longest wait between two polls of a batch, in seconds.
MAX_POLL = 60.0


def status_text(batch_id: str, state: str, counts: dict[str, int]) -> str:
    """A batch's state for the progress bar: its id, state and requests done of all.

    Examples
    --------
    >>> status_text("batch_1", "in_progress", {"total": 40, "completed": 12, "failed": 1})
    'batch batch_1 in_progress 13/40'
    >>> status_text("msgbatch_2", "ended", {"processing": 0, "succeeded": 9, "errored": 1})
    'batch msgbatch_2 ended 10/10'
    """
    done = sum(counts.get(key, 0) for key in ("completed", "failed", "succeeded", "errored", "canceled", "expired"))
    total = counts.get("total") or done + counts.get("processing", 0)
    return f"batch {batch_id} {state} {done}/{total}"


# -- running a batch ----------------------------------------------------------------------------------


class BatchRunner:
    """Runs a runtime call's requests as batches; see ``docs/hosted-judges.md``.

    client: the hosted runtime's :class:`~rankkit.judges.hosted.http_client.RetryingClient`.
    protocol: :class:`OpenAIBatches` or :class:`AnthropicBatches`.
    journal: keeps each request (and its answer) from before its batch is created until the run ends.
    poll: the first wait between polls, in seconds (grows by half each time, to :data:`MAX_POLL`).
    max_rounds: batches in all for one request.
    transport: how calls are made (default :class:`HTTPTransport`).
    sleep: how polls wait (tests pass a fake).
    """

    def __init__(
        self,
        client: Any,
        protocol: BatchProtocol,
        journal: BatchJournal,
        poll: float = 5.0,
        max_rounds: int = 3,
        transport: Transport | None = None,
        sleep: Callable[[float], Any] = time.sleep,
    ):
        self.client = client
        self.protocol = protocol
        self.journal = journal
        self.poll = poll
        self.max_rounds = max_rounds
        self.transport = transport or HTTPTransport(client)
        self.sleep = sleep
        #: Told each batch's state as it changes (the run's progress bar: LLMJudge.show_progress).
        self.on_status: Callable[[str], Any] | None = None
        self._lock = threading.Lock()
        #: Batches created by this runner; ids of journaled batches it waited for instead.
        self.created = 0
        self.resumed_ids: set[str] = set()
        #: Answers taken from the journal (read by a run before, not asked again).
        self.reused = 0
        #: Requests asked again because their batch was unknown to the server, expired or cancelled.
        self.reasked = 0
        #: The journal keys this runner used: removed when it closes after a run that ended well.
        self._touched: set[str] = set()
        self._interrupted = False
        #: Results read while looking for a batch whose creation reply was lost (by batch id).
        self._found: dict[str, tuple[str, dict[str, RequestFate]]] = {}

    @property
    def resumed(self) -> int:
        """How many distinct journaled batches this runner waited for instead of sending anew."""
        return len(self.resumed_ids)

    def key(self, body: dict[str, Any]) -> str:
        """The journal key of one request body."""
        return request_key(self.protocol.name, self.client.base_url, body)

    def close(self) -> None:
        """Remove the journal entries this runner used, unless a run was interrupted (then they stay for the rerun)."""
        if not self._interrupted and self._touched:
            self.journal.remove_many(self._touched)
            self._touched.clear()

    def run(
        self, bodies: Sequence[dict[str, Any]], read: Callable[[int, dict[str, Any]], Any]
    ) -> Iterator[tuple[int, Any]]:
        """Send ``bodies`` as batches; yield ``(index, read(index, response JSON))`` per success.

        Then raises :class:`JudgeError` if some failed every round; a :class:`BadResponse` from ``read`` is asked again.
        """
        try:
            yield from self._run(bodies, read)
        except BadResponse as err:  # from the batch API itself (the answers' own are failures, asked again)
            self._interrupted = True
            raise JudgeError(f"{self.protocol.name}: batch API: {err}") from None
        except BaseException:
            self._interrupted = True
            raise

    def _run(
        self, bodies: Sequence[dict[str, Any]], read: Callable[[int, dict[str, Any]], Any]
    ) -> Iterator[tuple[int, Any]]:
        keys = [self.key(body) for body in bodies]
        pending = list(range(len(bodies)))
        why: dict[int, str] = {}
        for _ in range(self.max_rounds):
            if not pending:
                return
            outcomes = self._outcomes({keys[i]: bodies[i] for i in pending})
            failed = []
            for index in pending:
                status, value = outcomes[keys[index]]
                if status == "ok":
                    try:
                        result = read(index, value)
                    except BadResponse as err:
                        status, value = "failed", str(err)
                    else:
                        yield index, result
                        continue
                failed.append(index)
                why[index] = value
            self.journal.remove_many({keys[i] for i in failed})  # asked again next round
            pending = failed
        if pending:
            raise JudgeError(
                f"{self.protocol.name}: {len(pending)} request(s) of a batch failed in each of "
                f"{self.max_rounds} batches; first error: {why[pending[0]]}"
            )

    def _outcomes(self, bodies: dict[str, dict[str, Any]]) -> dict[str, RequestFate]:
        """Each request's outcome by key: journaled answer, journaled batch, else a new batch; lost ones asked again."""
        with self._lock:
            self._touched.update(bodies)
        outcomes: dict[str, RequestFate] = {}
        todo = list(bodies)
        for round_ in range(1, self.max_rounds + 1):
            members = self._place(todo, bodies, outcomes)
            todo = []
            for batch_id, keyed in members.items():
                todo += self._collect(batch_id, keyed, outcomes)
            if not todo:
                return outcomes
            self.journal.remove_many(todo)
            if round_ < self.max_rounds:
                with self._lock:
                    self.reasked += len(todo)
        for key in todo:
            outcomes[key] = ("failed", "its batch was lost each time (unknown to the server, expired or cancelled)")
        return outcomes

    def _place(
        self, todo: list[str], bodies: dict[str, dict[str, Any]], outcomes: dict[str, RequestFate]
    ) -> dict[str, dict[str, str]]:
        """``{batch_id: {key: custom_id}}`` of unanswered ``todo`` requests (journaled answers go to ``outcomes``)."""
        members: dict[str, dict[str, str]] = {}
        unconfirmed: dict[str, dict[str, dict[str, Any]]] = {}  # creations a killed run may have made
        fresh = []
        for key, entry in zip(todo, self.journal.get_many(todo)):
            if entry is None:
                fresh.append(key)
            elif "answer" in entry:
                outcomes[key] = ("ok", entry["answer"])
                with self._lock:
                    self.reused += 1
            elif "batch_id" in entry:
                members.setdefault(entry["batch_id"], {})[key] = entry["custom_id"]
            else:
                unconfirmed.setdefault(entry["tag"], {})[key] = entry
        with self._lock:
            self.resumed_ids.update(members)
        for batch_id, keyed in members.items():
            logger.info("%s: resuming batch %s (%d of its requests)", self.protocol.name, batch_id, len(keyed))
        for tag, entries in unconfirmed.items():
            first = next(iter(entries.values()))
            custom_ids = {key: entry["custom_id"] for key, entry in entries.items()}
            batch_id = self._find(tag, set(custom_ids.values()), first["size"], first["created"])
            if batch_id is None:
                logger.warning(
                    "%s: a batch a run before began to create (tag %s) is not on the server: its %d request(s) "
                    "are asked again",
                    self.protocol.name,
                    tag,
                    len(entries),
                )
                with self._lock:
                    self.reasked += len(entries)
                fresh += list(entries)
                continue
            self.journal.update_many({key: {"batch_id": batch_id} for key in entries}, tag=tag)
            with self._lock:
                self.resumed_ids.add(batch_id)
            members.setdefault(batch_id, {}).update(custom_ids)
        if fresh:
            batch_id, custom_ids = self._create({key: bodies[key] for key in fresh})
            members.setdefault(batch_id, {}).update(custom_ids)
        return members

    def _create(self, bodies: dict[str, dict[str, Any]]) -> tuple[str, dict[str, str]]:
        """Journal ``bodies`` under a new tag, create their batch once; ``(batch id, {key: custom_id})``."""
        tag = secrets.token_hex(8)
        custom_ids = {key: f"rk-{tag}-{number}" for number, key in enumerate(bodies)}
        since = time.time()
        common = {"provider": self.protocol.name, "tag": tag, "size": len(bodies), "created": since}
        # written before sending: a run killed at any point finds what it asked, and where
        self.journal.put_many({key: {**common, "custom_id": custom_ids[key]} for key in bodies})
        items = [(custom_ids[key], body) for key, body in bodies.items()]
        last: JudgeError | None = None
        for attempt in range(1, CALL_ATTEMPTS + 1):
            try:
                batch_id = self.protocol.submit(self.transport, items, tag)
            except CreationUnanswered as err:
                last = err
                logger.warning("%s; looking the batch up before creating it again", err)
                batch_id = self._find(tag, set(custom_ids.values()), len(bodies), since)
                if batch_id is None:
                    self.sleep(self.client.wait_seconds(attempt, None))
                    continue
            with self._lock:
                self.created += 1
            self.journal.update_many({key: {"batch_id": batch_id} for key in bodies}, tag=tag)
            logger.info("%s: batch %s of %d requests submitted", self.protocol.name, batch_id, len(items))
            return batch_id, custom_ids
        raise JudgeError(f"{self.protocol.name}: a batch could not be created in {CALL_ATTEMPTS} attempts: {last}")

    def _find(self, tag: str, custom_ids: set[str], size: int, since: float) -> str | None:
        """The id of the batch tagged ``tag`` if the server has it, else None (Anthropic: checked by ``custom_ids``)."""
        candidates = self.protocol.find(self.transport, tag, size, since)
        if self.protocol.finds_for_sure:
            return candidates[0] if candidates else None
        for batch_id in candidates:
            ended = self._wait(batch_id)
            if ended is not None and custom_ids <= set(ended[1]):
                self._found[batch_id] = ended
                return batch_id
        return None

    def _collect(self, batch_id: str, keyed: dict[str, str], outcomes: dict[str, RequestFate]) -> list[str]:
        """Wait for ``batch_id``, record and journal its outcomes; return the keys whose requests were lost."""
        ended = self._found.pop(batch_id, None) or self._wait(batch_id)
        if ended is None:
            logger.warning(
                "%s: batch %s is unknown to the server (expired from its records, or another account's): "
                "its %d request(s) are asked again",
                self.protocol.name,
                batch_id,
                len(keyed),
            )
            return list(keyed)
        state, results = ended
        unrun = state in getattr(self.protocol, "UNRUN_STATES", ())
        answers, lost, why = {}, [], state
        for key, custom_id in keyed.items():
            missing = ("lost", state) if unrun else ("failed", f"missing from batch {batch_id}'s results")
            status, value = results.get(custom_id, missing)
            if status == "lost":  # value: how the batch ended
                lost.append(key)
                why = value
                continue
            outcomes[key] = (status, value)
            if status == "ok":
                answers[key] = {"answer": value, "answered": time.time()}
        self.journal.update_many(answers)  # kept as soon as read: a resumed run never asks them again
        if lost:
            logger.warning(
                "%s: batch %s ended %s before running %d of its request(s): they are asked again",
                self.protocol.name,
                batch_id,
                why,
                len(lost),
            )
        return lost

    def _wait(self, batch_id: str) -> tuple[str, dict[str, RequestFate]] | None:
        """Poll ``batch_id`` until it ends: ``(final state, outcomes)``, or None when unknown (404)."""
        wait, shown = self.poll, None
        while True:
            try:
                (state, ended, counts), batch = self.protocol.status(self.transport, batch_id)
            except BatchAPIError as err:
                if err.status == 404:
                    return None
                raise
            if (state, counts) != shown:
                logger.info("%s: batch %s %s %s", self.protocol.name, batch_id, state, counts)
                shown = (state, counts)
                if self.on_status is not None:
                    self.on_status(status_text(batch_id, state, counts))
            if ended:
                return state, self.protocol.results(self.transport, batch)
            self.sleep(wait)
            wait = min(MAX_POLL, wait * 1.5)
