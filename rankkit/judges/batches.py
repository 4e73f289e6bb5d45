"""Batch APIs of OpenAI and Anthropic: one runtime call's requests as one batch (``batch=true``).

:class:`BatchRunner` submits, journals (:class:`BatchJournal`, so a restarted run waits instead of
paying twice), polls and retries batches through :class:`OpenAIBatches` or :class:`AnthropicBatches`.

More in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import tempfile
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any, Protocol

from rankkit.judges.base import JudgeError
from rankkit.judges.http_client import BadResponse, excerpt, parse_retry_after, retry_reason

logger = logging.getLogger("rankkit.judges.batches")

#: The journal's default place: beside the default judgment cache (rankkit.cache.DEFAULT_CACHE_PATH).
DEFAULT_JOURNAL = Path(".rankkit") / "batches.json"
#: The longest wait between two polls of a batch, in seconds.
MAX_POLL = 60.0
#: Attempts of one batch-API call (upload, create, poll, read) on connection errors, 429 and 5xx.
CALL_ATTEMPTS = 5


# -- the journal ----------------------------------------------------------------------------------------


class BatchJournal:
    """Batch ids by request key, in a JSON file written atomically (safe for several threads of
    one process; a second process reading the same journal sees the entries the first wrote)."""

    def __init__(self, path: str | Path = DEFAULT_JOURNAL):
        self.path = Path(path)
        self._lock = threading.Lock()

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except ValueError as err:
            raise JudgeError(f"batch journal {self.path} is not JSON ({err}); remove it to start afresh") from None
        return data if isinstance(data, dict) else {}

    def _write(self, data: dict[str, Any]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".batches-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(temporary, self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry written for ``key`` (``{"batch_id": ...}``), or None.

        Parameters
        ----------
        key : str
            A request's journal key (:func:`request_key`).

        Returns
        -------
        dict[str, Any] | None
            The entry, or None.
        """
        with self._lock:
            return self._read().get(key)

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` for ``key`` to the journal file.

        Parameters
        ----------
        key : str
            A request's journal key (:func:`request_key`).
        entry : dict[str, Any]
            The entry: the batch id and the request's id in it.
        """
        with self._lock:
            data = self._read()
            data[key] = entry
            self._write(data)

    def remove(self, key: str) -> None:
        """Remove the entry of ``key`` from the journal file (if any).

        Parameters
        ----------
        key : str
            A request's journal key (:func:`request_key`).
        """
        self.remove_many([key])

    def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """The entry of each key (None where there is none), read at once.

        Parameters
        ----------
        keys : Sequence[str]
            Requests' journal keys.

        Returns
        -------
        list[dict[str, Any] | None]
            The entries, in the order of ``keys``.
        """
        with self._lock:
            data = self._read()
            return [data.get(key) for key in keys]

    def put_many(self, entries: dict[str, dict[str, Any]]) -> None:
        """Write several entries to the journal file at once.

        Parameters
        ----------
        entries : dict[str, dict[str, Any]]
            The entries, by journal key.
        """
        with self._lock:
            data = self._read()
            data.update(entries)
            self._write(data)

    def remove_many(self, keys: Sequence[str]) -> None:
        """Remove the entries of ``keys`` from the journal file at once.

        Parameters
        ----------
        keys : Sequence[str]
            Requests' journal keys.
        """
        with self._lock:
            data = self._read()
            removed = [data.pop(key, None) for key in keys]
            if any(entry is not None for entry in removed):
                self._write(data)


def request_key(provider: str, base_url: str, body: dict[str, Any]) -> str:
    """The journal key of one request: a hash of the provider, the server and the request body.
    Requests are journaled one by one, so a rerun finds them whichever runtime calls (and so
    batches) its dispatcher groups them into this time.

    Parameters
    ----------
    provider : str
        The batch API's provider (``openai``, ``anthropic``).
    base_url : str
        The server's address.
    body : dict[str, Any]
        The request body.

    Returns
    -------
    str
        The key: a hex digest.
    """
    text = json.dumps([provider, base_url, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


# -- talking to a batch API -----------------------------------------------------------------------------


class Transport(Protocol):
    """What the protocols need from the runtime's client: one HTTP call with retries."""

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        """One HTTP call to the provider, with the runtime's retries.

        Parameters
        ----------
        method : str
            The HTTP method.
        path : str
            The path under the server's base URL.
        **kwargs : Any
            The request's arguments (``json``, ``content``, ``want``...).

        Returns
        -------
        Any
            The decoded JSON, or the body text.
        """
        ...


class HTTPTransport:
    """Batch-API calls over a runtime's pooled ``httpx`` client (its first replica, its headers),
    retried on connection errors, timeouts, 429 and 5xx like the runtime's own requests."""

    def __init__(self, client: Any):
        self.client = client

    def call(self, method: str, path: str, *, want: str = "json", **kwargs: Any) -> Any:
        """``method path`` -> the decoded JSON (``want="json"``) or the body text (``"text"``).

        Parameters
        ----------
        method : str
            The HTTP method.
        path : str
            The path under the server's base URL.
        want : str
            ``"json"`` or ``"text"``.
        **kwargs : Any
            Passed on to ``httpx`` (``json``, ``content``, ``files``...).

        Returns
        -------
        Any
            The decoded JSON, or the body text.
        """
        import httpx

        self.client._ensure_started()
        http = self.client._clients[0]
        secret = self.client._api_key
        last = ""
        for attempt in range(1, CALL_ATTEMPTS + 1):
            retry_after = None
            try:
                response = http.request(method, path, **kwargs)
            except httpx.TransportError as err:
                last = excerpt(f"{type(err).__name__}: {err}", secret)
            else:
                if response.status_code == 200:
                    if want == "text":
                        return response.text
                    try:
                        return response.json()
                    except ValueError:
                        last = f"not JSON: {excerpt(response.text, secret, 200)!r}"
                else:
                    last = f"HTTP {response.status_code}: {excerpt(response.text, secret)}"
                    if retry_reason(response.status_code) is None:
                        raise JudgeError(f"{self.client.backend}: batch API {method} {path} failed: {last}")
                    retry_after = parse_retry_after(response.headers.get("retry-after"))
            if attempt < CALL_ATTEMPTS:
                time.sleep(self.client._wait_seconds(attempt, retry_after))
        raise JudgeError(
            f"{self.client.backend}: batch API {method} {path} failed after {CALL_ATTEMPTS} "
            f"attempts; last error: {last}"
        )


#: What a protocol reports of a batch: its state, whether it ended, and its request counts.
Status = tuple[str, bool, dict[str, int]]
#: One request's outcome: ``("ok", response JSON)`` or ``("failed", why)``.
Outcome = tuple[str, Any]


class BatchProtocol(Protocol):
    name: str

    def submit(self, transport: Transport, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Create a batch of ``(custom_id, body)`` items; returns its id.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        items : Sequence[tuple[str, dict[str, Any]]]
            ``(custom_id, body)`` pairs.

        Returns
        -------
        str
            The batch's id.
        """

    def status(self, transport: Transport, batch_id: str) -> tuple[Status, dict[str, Any]]:
        """The batch's :data:`Status` and its JSON.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        batch_id : str
            The batch's id.

        Returns
        -------
        tuple[Status, dict[str, Any]]
            The :data:`Status` and the batch's JSON.
        """

    def results(self, transport: Transport, batch: dict[str, Any]) -> dict[str, Outcome]:
        """Each request's outcome by custom id (requests missing from it failed).

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        batch : dict[str, Any]
            The finished batch's JSON.

        Returns
        -------
        dict[str, Outcome]
            Each request's outcome, by custom id.
        """


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


class OpenAIBatches:
    """OpenAI's Batch API for chat completions (see ``docs/hosted-judges.md``)."""

    name = "openai"
    #: The endpoint of each batch line, as the API wants it (whatever the base URL's path).
    ENDPOINT = "/v1/chat/completions"

    def submit(self, transport: Transport, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Upload the requests as a JSONL file and create a batch on ``/batches``.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        items : Sequence[tuple[str, dict[str, Any]]]
            ``(custom_id, body)`` pairs.

        Returns
        -------
        str
            The batch's id.
        """
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
            json={"input_file_id": uploaded["id"], "endpoint": self.ENDPOINT, "completion_window": "24h"},
        )
        return batch["id"]

    def status(self, transport: Transport, batch_id: str) -> tuple[Status, dict[str, Any]]:
        """Poll ``/batches/{id}``.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        batch_id : str
            The batch's id.

        Returns
        -------
        tuple[Status, dict[str, Any]]
            The :data:`Status` and the batch's JSON.
        """
        batch = transport.call("GET", f"/batches/{batch_id}")
        state = str(batch.get("status"))
        counts = {k: v for k, v in (batch.get("request_counts") or {}).items() if isinstance(v, int)}
        return (state, state in ("completed", "failed", "expired", "cancelled"), counts), batch

    def results(self, transport: Transport, batch: dict[str, Any]) -> dict[str, Outcome]:
        """Read the output file (and the error file) of a finished batch.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        batch : dict[str, Any]
            The finished batch's JSON.

        Returns
        -------
        dict[str, Outcome]
            Each request's outcome, by custom id.
        """
        outcomes: dict[str, Outcome] = {}
        for field in ("output_file_id", "error_file_id"):
            if batch.get(field):
                text = transport.call("GET", f"/files/{batch[field]}/content", want="text")
                for record in _jsonl(text, f"batch {batch['id']} {field}"):
                    response = record.get("response") or {}
                    if response.get("status_code") == 200 and isinstance(response.get("body"), dict):
                        outcomes[record["custom_id"]] = ("ok", response["body"])
                    else:
                        error = record.get("error") or (response.get("body") or {}).get("error") or response
                        outcomes[record["custom_id"]] = ("failed", json.dumps(error)[:500])
        if batch.get("status") != "completed" and not outcomes:
            errors = (batch.get("errors") or {}).get("data") if isinstance(batch.get("errors"), dict) else None
            logger.warning("openai: batch %s ended %s: %s", batch.get("id"), batch.get("status"), errors)
        return outcomes


class AnthropicBatches:
    """Anthropic's Message Batches API (see ``docs/hosted-judges.md``)."""

    name = "anthropic"

    def submit(self, transport: Transport, items: Sequence[tuple[str, dict[str, Any]]]) -> str:
        """Create a Message Batch on ``/messages/batches``, the requests inline.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        items : Sequence[tuple[str, dict[str, Any]]]
            ``(custom_id, body)`` pairs.

        Returns
        -------
        str
            The batch's id.
        """
        batch = transport.call(
            "POST", "/messages/batches", json={"requests": [{"custom_id": cid, "params": body} for cid, body in items]}
        )
        return batch["id"]

    def status(self, transport: Transport, batch_id: str) -> tuple[Status, dict[str, Any]]:
        """Poll ``/messages/batches/{id}``.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        batch_id : str
            The batch's id.

        Returns
        -------
        tuple[Status, dict[str, Any]]
            The :data:`Status` and the batch's JSON.
        """
        batch = transport.call("GET", f"/messages/batches/{batch_id}")
        state = str(batch.get("processing_status"))
        counts = {k: v for k, v in (batch.get("request_counts") or {}).items() if isinstance(v, int)}
        return (state, state == "ended", counts), batch

    def results(self, transport: Transport, batch: dict[str, Any]) -> dict[str, Outcome]:
        # the results path on the API's own host, never a URL from the response (the key goes with it)
        """Read ``/messages/batches/{id}/results`` of a finished batch.

        Parameters
        ----------
        transport : Transport
            The HTTP transport.
        batch : dict[str, Any]
            The finished batch's JSON.

        Returns
        -------
        dict[str, Outcome]
            Each request's outcome, by custom id.
        """
        text = transport.call("GET", f"/messages/batches/{batch['id']}/results", want="text")
        outcomes: dict[str, Outcome] = {}
        for record in _jsonl(text, f"batch {batch['id']} results"):
            result = record.get("result") or {}
            if result.get("type") == "succeeded" and isinstance(result.get("message"), dict):
                outcomes[record["custom_id"]] = ("ok", result["message"])
            else:
                outcomes[record["custom_id"]] = ("failed", json.dumps(result)[:500])
        return outcomes


def status_text(batch_id: str, state: str, counts: dict[str, int]) -> str:
    """A batch's state for the progress bar: its id, state and requests done of all.

    Parameters
    ----------
    batch_id : str
        The batch's id.
    state : str
        The provider's state of the batch.
    counts : dict[str, int]
        The provider's request counts.

    Returns
    -------
    str
        The text.

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

    client: the runtime (a :class:`~rankkit.judges.http_client.RetryingClient`): its server,
        headers and retry policy. protocol: :class:`OpenAIBatches` or :class:`AnthropicBatches`.
    journal: where batch ids are kept until their results are read.
    poll: the first wait between polls, in seconds (it grows by half each time, to :data:`MAX_POLL`).
    max_rounds: batches in all for one call (the first, then the failed requests again).
    transport: how calls are made (default: the client's pool, :class:`HTTPTransport`).
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
        #: Batches created by this runner, and the ids of batches it resumed from the journal.
        self.created = 0
        self.resumed_ids: set[str] = set()

    @property
    def resumed(self) -> int:
        """How many distinct journaled batches this runner waited for instead of sending anew."""
        return len(self.resumed_ids)

    def run(
        self, bodies: Sequence[dict[str, Any]], read: Callable[[int, dict[str, Any]], Any]
    ) -> Iterator[tuple[int, Any]]:
        """Send ``bodies`` as batches; yields ``(index, read(index, response JSON))`` for each
        request that succeeded, then raises :class:`JudgeError` when some failed every round.

        Parameters
        ----------
        bodies : Sequence[dict[str, Any]]
            The request bodies.
        read : Callable[[int, dict[str, Any]], Any]
            Turns a request's index and its response JSON into the result.

        Yields
        ------
        tuple[int, Any]
            ``(index, result)``: the index of the request in ``bodies`` and ``read``'s result.
        """
        pending = list(range(len(bodies)))
        why: dict[int, str] = {}
        for _ in range(self.max_rounds):
            if not pending:
                return
            outcomes = self._batches([bodies[i] for i in pending])
            failed = []
            for local, index in enumerate(pending):
                status, value = outcomes.get(local, ("failed", "missing from the batch's results"))
                if status == "ok":
                    try:
                        result = read(index, value)
                    except BadResponse as err:
                        failed.append(index)
                        why[index] = str(err)
                        continue
                    yield index, result
                else:
                    failed.append(index)
                    why[index] = value
            pending = failed
        if pending:
            raise JudgeError(
                f"{self.protocol.name}: {len(pending)} request(s) of a batch failed in each of "
                f"{self.max_rounds} batches; first error: {why[pending[0]]}"
            )

    def _batches(self, bodies: Sequence[dict[str, Any]]) -> dict[int, Outcome]:
        """Each body's outcome by its position: from the journaled batch it is already in, or
        from one new batch of the bodies found in none."""
        keys = [request_key(self.protocol.name, self.client.base_url, body) for body in bodies]
        members: dict[str, list[tuple[int, str]]] = {}
        fresh: dict[str, list[int]] = {}  # a request asked twice in one call goes out once
        for local, (key, entry) in enumerate(zip(keys, self.journal.get_many(keys))):
            if entry is not None:
                members.setdefault(entry["batch_id"], []).append((local, entry["custom_id"]))
            else:
                fresh.setdefault(key, []).append(local)
        self.resumed_ids.update(members)
        for batch_id, found in members.items():
            logger.info("%s: resuming batch %s (%d of its requests)", self.protocol.name, batch_id, len(found))
        if fresh:
            items = [(f"rankkit-{number}", bodies[locals_[0]]) for number, locals_ in enumerate(fresh.values())]
            batch_id = self.protocol.submit(self.transport, items)
            self.created += 1
            # written before waiting: a killed run resumes this batch instead of paying for another
            self.journal.put_many(
                {
                    key: {
                        "batch_id": batch_id,
                        "custom_id": f"rankkit-{number}",
                        "provider": self.protocol.name,
                        "created": time.time(),
                    }
                    for number, key in enumerate(fresh)
                }
            )
            logger.info("%s: batch %s of %d requests submitted", self.protocol.name, batch_id, len(items))
            members[batch_id] = [
                (local, f"rankkit-{number}") for number, locals_ in enumerate(fresh.values()) for local in locals_
            ]
        outcomes: dict[int, Outcome] = {}
        for batch_id, found in members.items():
            results = self._wait(batch_id)
            for local, custom_id in found:
                outcomes[local] = results.get(custom_id, ("failed", f"missing from batch {batch_id}'s results"))
        self.journal.remove_many(keys)
        return outcomes

    def _wait(self, batch_id: str) -> dict[str, Outcome]:
        """Poll ``batch_id`` until it ends (backing off), then read its outcomes."""
        wait, shown = self.poll, None
        while True:
            (state, ended, counts), batch = self.protocol.status(self.transport, batch_id)
            if (state, counts) != shown:
                logger.info("%s: batch %s %s %s", self.protocol.name, batch_id, state, counts)
                shown = (state, counts)
                if self.on_status is not None:
                    self.on_status(status_text(batch_id, state, counts))
            if ended:
                return self.protocol.results(self.transport, batch)
            self.sleep(wait)
            wait = min(MAX_POLL, wait * 1.5)
