"""Batch APIs of OpenAI and Anthropic: one runtime call's requests as one batch (``batch=true``).

Requests are journaled before their batch is created and answers as soon as read, so a killed run
resumes without paying twice; a creation whose reply is lost is looked up by its tag, never resent
blindly. More in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import math
import os
import re
import secrets
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from datetime import datetime
from pathlib import Path
from typing import Any, Protocol

from rankkit.errors import RankkitError
from rankkit.judges.base import JudgeError
from rankkit.judges.http_client import BadResponse, excerpt, parse_retry_after, retry_reason

try:  # POSIX: the journal is locked across processes; elsewhere across the threads of one
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

logger = logging.getLogger("rankkit.judges.batches")

#: The journal's default place: beside the default judgment cache (rankkit.cache.DEFAULT_CACHE_PATH).
DEFAULT_JOURNAL = Path(".rankkit") / "batches.json"
#: The longest wait between two polls of a batch, in seconds.
MAX_POLL = 60.0
#: Attempts of one batch-API call (upload, create, poll, read) on connection errors, 429 and 5xx.
CALL_ATTEMPTS = 5
#: What a batch or file id from a journal or a server must look like before it goes into a URL.
SERVER_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: A batch's tag: its requests' custom ids are ``rk-TAG-N`` (on OpenAI it is also the batch's metadata).
TAG = re.compile(r"[0-9a-f]{16}")
#: A request's custom id in its batch (``rankkit-N``: journals of rankkit 0.3).
CUSTOM_ID = re.compile(r"(rk-[0-9a-f]{16}|rankkit)-[0-9]{1,7}")
#: The metadata key that carries a batch's tag on OpenAI.
TAG_METADATA = "rankkit_tag"
#: Seconds an answered journal entry is kept when no run claims it (a week): the answers of a
#: killed run whose judgments its resume found in the cache.
ANSWER_RETENTION = 7 * 24 * 3600
#: Seconds before a lost creation's start a batch found by listing may have been created (clock skew).
CLOCK_SLACK = 600.0


class BatchJournalError(RankkitError):
    """A batch journal rankkit cannot read (not JSON, or an entry it did not write): exit 2."""


class BatchAPIError(JudgeError):
    """A batch-API call the server refused; ``status`` is its HTTP status (404: an unknown batch)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class CreationUnanswered(JudgeError):
    """A batch creation whose reply never came; it may exist, so it is looked up by tag first."""


def checked_id(value: Any, what: str) -> str:
    """``value`` as a batch or file id fit for a URL path, else :class:`BadResponse`."""
    if not isinstance(value, str) or not SERVER_ID.fullmatch(value):
        raise BadResponse(f"{what} is not an id: {excerpt(json.dumps(value), None, 80)}")
    return value


# -- the journal ----------------------------------------------------------------------------------------


def entry_problem(key: Any, entry: Any) -> str | None:
    """Why journal ``entry`` (under ``key``) is not one rankkit writes, or None."""
    if not isinstance(key, str) or not re.fullmatch(r"[0-9a-f]{64}", key):
        return "the key is not a request key (64 hex digits)"
    if not isinstance(entry, dict):
        return f"the entry is {type(entry).__name__}, not an object"
    if entry.get("provider") not in ("openai", "anthropic"):
        return "provider is not openai or anthropic"
    if not isinstance(entry.get("custom_id"), str) or not CUSTOM_ID.fullmatch(entry["custom_id"]):
        return "custom_id is missing or not one rankkit writes"
    for field in ("created", "answered"):
        value = entry.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{field} is not a time"
    if "batch_id" in entry:
        if not isinstance(entry["batch_id"], str) or not SERVER_ID.fullmatch(entry["batch_id"]):
            return f"batch_id is not a batch id (letters, digits, _ and -): {excerpt(json.dumps(entry['batch_id']), None, 80)}"
    elif not isinstance(entry.get("tag"), str) or not TAG.fullmatch(entry["tag"]):
        return "an entry without a batch_id needs the tag of its batch"
    size = entry.get("size", 1)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        return "size is not a count of requests"
    if "answer" in entry and not isinstance(entry["answer"], dict):
        return "answer is not an object"
    return None


class BatchJournal:
    """Batch requests by request key in a JSON file, rewritten atomically under a file and a thread lock.

    Entries are checked when read (the file is untrusted; ids go into URLs): a bad one raises
    :class:`BatchJournalError` (exit 2) naming the file and the entry.
    """

    def __init__(self, path: str | Path = DEFAULT_JOURNAL):
        self.path = Path(path)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if fcntl is None:  # pragma: no cover - Windows
                yield
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as err:
            raise BatchJournalError(
                f"batch journal {self.path} is not JSON ({err}); remove it to start afresh"
            ) from None
        if not isinstance(data, dict):
            raise BatchJournalError(f"batch journal {self.path} is not a JSON object; remove it to start afresh")
        for key, entry in data.items():
            problem = entry_problem(key, entry)
            if problem is not None:
                raise BatchJournalError(
                    f"batch journal {self.path}: entry {excerpt(key, None, 80)!r}: {problem}; remove the entry "
                    "(its requests are then asked again) or the file"
                )
        return data

    def _write(self, data: dict[str, Any]) -> None:
        cutoff = time.time() - ANSWER_RETENTION
        data = {key: entry for key, entry in data.items() if entry.get("answered", math.inf) > cutoff}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".batches-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(temporary, self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry of ``key`` (a :func:`request_key`), or None."""
        return self.get_many([key])[0]

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` for ``key`` (a :func:`request_key`)."""
        self.put_many({key: entry})

    def remove(self, key: str) -> None:
        """Remove the entry of ``key`` (if any)."""
        self.remove_many([key])

    def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """The entry of each key (None where there is none), read at once, in the order of ``keys``."""
        with self._locked():
            data = self._read()
            return [data.get(key) for key in keys]

    def put_many(self, entries: dict[str, dict[str, Any]]) -> None:
        """Write several entries (by request key) at once."""
        with self._locked():
            data = self._read()
            data.update(entries)
            self._write(data)

    def update_many(self, changes: dict[str, dict[str, Any]], tag: str | None = None) -> None:
        """Add ``changes[key]``'s fields to each key's entry still there (with ``tag``: only that batch's)."""
        with self._locked():
            data = self._read()
            for key, fields in changes.items():
                if key in data and (tag is None or data[key].get("tag") == tag):
                    data[key] = {**data[key], **fields}
            self._write(data)

    def remove_many(self, keys: Sequence[str] | set[str]) -> None:
        """Remove the entries of ``keys`` at once."""
        with self._locked():
            data = self._read()
            removed = [data.pop(key, None) for key in keys]
            if any(entry is not None for entry in removed):
                self._write(data)


def request_key(provider: str, base_url: str, body: dict[str, Any]) -> str:
    """The journal key (hex digest) of one request: a hash of provider, server and body."""
    text = json.dumps([provider, base_url, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# -- talking to a batch API -----------------------------------------------------------------------------


class Transport(Protocol):
    """What the protocols need from the runtime's client: one HTTP call with retries."""

    def call(self, method: str, path: str, *, want: str = "json", once: bool = False, **kwargs: Any) -> Any:
        """One HTTP call: decoded JSON (``want="json"``) or text (``"text"``), retried on connection errors, 429, 5xx.

        With ``once`` (a creation) only a 429 is retried and a call that may have arrived raises
        :class:`CreationUnanswered`. A refusal raises :class:`BatchAPIError`.
        """
        ...


class HTTPTransport:
    """Batch-API calls over a runtime's pooled ``httpx`` client, retried as :meth:`Transport.call` says."""

    def __init__(self, client: Any):
        self.client = client

    def call(self, method: str, path: str, *, want: str = "json", once: bool = False, **kwargs: Any) -> Any:
        """See :meth:`Transport.call`; ``kwargs`` go to ``httpx`` (``json``, ``files``, ``params``...)."""
        import httpx

        self.client._ensure_started()
        http = self.client._clients[0]
        secret = self.client._api_key
        what = f"{self.client.backend}: batch API {method} {path}"
        last = ""
        for attempt in range(1, CALL_ATTEMPTS + 1):
            retry_after = None
            try:
                response = http.request(method, path, **kwargs)
            except httpx.TransportError as err:
                last = excerpt(f"{type(err).__name__}: {err}", secret)
                if once:
                    raise CreationUnanswered(f"{what}: no reply ({last})") from None
            else:
                if response.status_code == 200:
                    if want == "text":
                        return response.text
                    try:
                        return response.json()
                    except ValueError:
                        last = f"not JSON: {excerpt(response.text, secret, 200)!r}"
                        if once:
                            raise CreationUnanswered(f"{what}: the reply is {last}") from None
                else:
                    last = f"HTTP {response.status_code}: {excerpt(response.text, secret)}"
                    if retry_reason(response.status_code) is None:
                        raise BatchAPIError(f"{what} failed: {last}", response.status_code)
                    if once and response.status_code != 429:  # a 5xx may come after the batch was made
                        raise CreationUnanswered(f"{what}: {last}")
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
            if attempt < CALL_ATTEMPTS:
                time.sleep(self.client._wait_seconds(attempt, retry_after))
        raise JudgeError(f"{what} failed after {CALL_ATTEMPTS} attempts; last error: {last}")


#: What a protocol reports of a batch: its state, whether it ended, and its request counts.
Status = tuple[str, bool, dict[str, int]]
#: One request's fate: ``("ok", response JSON)``, ``("failed", why)`` or ``("lost", how its batch ended)``: its
#: batch expired or was cancelled before running it (asked again, not counted as a failure).
RequestFate = tuple[str, Any]


class BatchProtocol(Protocol):
    name: str
    #: Whether :meth:`find` names the batch for sure (OpenAI: by its metadata) or only candidates
    #: whose results must show the tag's custom ids (Anthropic).
    finds_for_sure: bool

    def submit(self, transport: Transport, items: Sequence[tuple[str, dict[str, Any]]], tag: str) -> str:
        """Create a batch of ``(custom_id, body)`` items tagged ``tag``, the creation sent once; returns its id."""

    def find(self, transport: Transport, tag: str, size: int, since: float) -> list[str]:
        """Ids of batches that may be tagged ``tag`` (``size`` requests, created after ``since``), newest first."""

    def status(self, transport: Transport, batch_id: str) -> tuple[Status, dict[str, Any]]:
        """The batch's :data:`Status` and its JSON."""

    def results(self, transport: Transport, batch: dict[str, Any]) -> dict[str, RequestFate]:
        """Each request's outcome by custom id from a finished batch (a missing one failed or was lost)."""


def _jsonl(text: str, where: str) -> list[dict[str, Any]]:
    lines = []
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError:
            raise BadResponse(f"{where} line {number} is not JSON") from None
        if not isinstance(record, dict) or not isinstance(record.get("custom_id"), str):
            raise BadResponse(f"{where} line {number} has no custom_id")
        lines.append(record)
    return lines


def _object(reply: Any, what: str) -> dict[str, Any]:
    """``reply`` when it is a JSON object, else :class:`BadResponse`."""
    if not isinstance(reply, dict):
        raise BadResponse(f"{what} is not a JSON object")
    return reply


def _listed(reply: Any) -> list[dict[str, Any]]:
    """The batch objects of a list reply (``{"data": [...]}``), the malformed ones left out."""
    data = reply.get("data") if isinstance(reply, dict) else None
    return [batch for batch in data or [] if isinstance(batch, dict) and isinstance(batch.get("id"), str)]


class OpenAIBatches:
    """OpenAI's Batch API for chat completions (see ``docs/hosted-judges.md``)."""

    name = "openai"
    finds_for_sure = True
    #: The endpoint of each batch line, as the API wants it (whatever the base URL's path).
    ENDPOINT = "/v1/chat/completions"
    #: How a batch ends without running its requests; their error records carry these codes.
    UNRUN_STATES = ("expired", "cancelled")
    UNRUN_CODES = ("batch_expired", "batch_cancelled")

    def submit(self, transport: Transport, items: Sequence[tuple[str, dict[str, Any]]], tag: str) -> str:
        """Upload the requests as a JSONL file and create a batch on ``/batches``, its ``metadata`` the tag."""
        lines = "".join(
            json.dumps({"custom_id": cid, "method": "POST", "url": self.ENDPOINT, "body": body}, ensure_ascii=False)
            + "\n"
            for cid, body in items
        )
        uploaded = transport.call(
            "POST",
            "/files",
            data={"purpose": "batch"},
            files={"file": ("rankkit-batch.jsonl", lines.encode(), "application/jsonl")},
        )
        batch = transport.call(
            "POST",
            "/batches",
            once=True,
            json={
                "input_file_id": checked_id(_object(uploaded, "the uploaded file").get("id"), "the uploaded file's id"),
                "endpoint": self.ENDPOINT,
                "completion_window": "24h",
                "metadata": {TAG_METADATA: tag},
            },
        )
        return checked_id(_object(batch, "the new batch").get("id"), "the new batch's id")

    def find(self, transport: Transport, tag: str, size: int, since: float) -> list[str]:
        """The batches among the newest hundred whose metadata carries ``tag``."""
        listed = _listed(transport.call("GET", "/batches", params={"limit": 100}))
        return [
            batch["id"]
            for batch in listed
            if isinstance(batch.get("metadata"), dict)
            and batch["metadata"].get(TAG_METADATA) == tag
            and SERVER_ID.fullmatch(batch["id"])
        ]

    def status(self, transport: Transport, batch_id: str) -> tuple[Status, dict[str, Any]]:
        """Poll ``/batches/{id}``."""
        batch = _object(transport.call("GET", f"/batches/{checked_id(batch_id, 'a batch id')}"), f"batch {batch_id}")
        state = str(batch.get("status"))
        counts = {k: v for k, v in (batch.get("request_counts") or {}).items() if isinstance(v, int)}
        return (state, state in ("completed", "failed", "expired", "cancelled"), counts), batch

    def results(self, transport: Transport, batch: dict[str, Any]) -> dict[str, RequestFate]:
        """Read the output file (and the error file) of a finished batch."""
        outcomes: dict[str, RequestFate] = {}
        for field in ("output_file_id", "error_file_id"):
            if batch.get(field):
                file_id = checked_id(batch[field], f"batch {batch.get('id')}'s {field}")
                text = transport.call("GET", f"/files/{file_id}/content", want="text")
                for record in _jsonl(text, f"batch {batch['id']} {field}"):
                    response = record.get("response") or {}
                    if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
                        outcomes[record["custom_id"]] = ("ok", response["body"])
                        continue
                    error = record.get("error") or (response.get("body") or {}).get("error") or response
                    code = error.get("code") if isinstance(error, dict) else None
                    if code in self.UNRUN_CODES:  # the batch ended before running it: "expired", "cancelled"
                        outcomes[record["custom_id"]] = ("lost", code.removeprefix("batch_"))
                    else:
                        outcomes[record["custom_id"]] = ("failed", json.dumps(error)[:500])
        if batch.get("status") != "completed" and not outcomes:
            errors = (batch.get("errors") or {}).get("data") if isinstance(batch.get("errors"), dict) else None
            logger.warning("openai: batch %s ended %s: %s", batch.get("id"), batch.get("status"), errors)
        return outcomes


def _epoch(text: Any) -> float | None:
    """An RFC 3339 time (``2026-11-27T00:00:00Z``) in epoch seconds, or None."""
    try:
        return datetime.fromisoformat(str(text).replace("Z", "+00:00")).timestamp()
    except ValueError:
        return None


class AnthropicBatches:
    """Anthropic's Message Batches API (see ``docs/hosted-judges.md``)."""

    name = "anthropic"
    finds_for_sure = False  # a Message Batch has no metadata: its results' custom ids tell
    UNRUN_STATES: tuple[str, ...] = ()
    UNRUN_RESULTS = ("expired", "canceled")

    def submit(self, transport: Transport, items: Sequence[tuple[str, dict[str, Any]]], tag: str) -> str:
        """Create a Message Batch on ``/messages/batches``, the requests inline (their custom ids carry the tag)."""
        batch = transport.call(
            "POST",
            "/messages/batches",
            once=True,
            json={"requests": [{"custom_id": cid, "params": body} for cid, body in items]},
        )
        return checked_id(_object(batch, "the new batch").get("id"), "the new batch's id")

    def find(self, transport: Transport, tag: str, size: int, since: float) -> list[str]:
        """Batches among the newest hundred of ``size`` requests created since ``since`` (less :data:`CLOCK_SLACK`)."""
        found = []
        for batch in _listed(transport.call("GET", "/messages/batches", params={"limit": 100})):
            counts = batch.get("request_counts") if isinstance(batch.get("request_counts"), dict) else {}
            total = sum(value for value in counts.values() if isinstance(value, int))
            created = _epoch(batch.get("created_at"))
            if (
                total == size
                and created is not None
                and created >= since - CLOCK_SLACK
                and SERVER_ID.fullmatch(batch["id"])
            ):
                found.append(batch["id"])
        return found

    def status(self, transport: Transport, batch_id: str) -> tuple[Status, dict[str, Any]]:
        """Poll ``/messages/batches/{id}``."""
        batch = _object(
            transport.call("GET", f"/messages/batches/{checked_id(batch_id, 'a batch id')}"), f"batch {batch_id}"
        )
        state = str(batch.get("processing_status"))
        counts = {k: v for k, v in (batch.get("request_counts") or {}).items() if isinstance(v, int)}
        return (state, state == "ended", counts), batch

    def results(self, transport: Transport, batch: dict[str, Any]) -> dict[str, RequestFate]:
        """Read ``/messages/batches/{id}/results`` of a finished batch."""
        # the results path on the API's own host, never a URL from the response (the key goes with it)
        batch_id = checked_id(batch.get("id"), "a batch id")
        text = transport.call("GET", f"/messages/batches/{batch_id}/results", want="text")
        outcomes: dict[str, RequestFate] = {}
        for record in _jsonl(text, f"batch {batch_id} results"):
            result = record.get("result") or {}
            if result.get("type") == "succeeded" and isinstance(result.get("message"), dict):
                outcomes[record["custom_id"]] = ("ok", result["message"])
            elif result.get("type") in self.UNRUN_RESULTS:
                outcomes[record["custom_id"]] = ("lost", result["type"])  # "expired", "canceled"
            else:
                outcomes[record["custom_id"]] = ("failed", json.dumps(result)[:500])
        return outcomes


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

    client: the runtime (:class:`~rankkit.judges.http_client.RetryingClient`).
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
                    self.sleep(self.client._wait_seconds(attempt, None))
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
