"""The batch APIs of OpenAI and Anthropic: submitting, finding, polling and reading a batch.

:class:`OpenAIBatches` and :class:`AnthropicBatches` speak each provider's protocol over a
:class:`Transport` (:class:`HTTPTransport`: the hosted runtime's client); the
:class:`~rankkit.judges.hosted.batches.BatchRunner` decides what to send. More in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Sequence
from datetime import datetime
from typing import Any, Protocol

from rankkit.judges.base import JudgeError
from rankkit.judges.hosted.batch_journal import SERVER_ID, checked_id
from rankkit.judges.hosted.http_retry import BadResponse, excerpt, parse_retry_after, retry_reason

logger = logging.getLogger("rankkit.judges.hosted.batches")

#: Attempts of one batch-API call (upload, create, poll, read) on connection errors, 429 and 5xx.
CALL_ATTEMPTS = 5
#: The metadata key that carries a batch's tag on OpenAI.
TAG_METADATA = "rankkit_tag"
#: Seconds before a lost creation's start a batch found by listing may have been created (clock skew).
CLOCK_SLACK = 600.0


class BatchAPIError(JudgeError):
    """A batch-API call the server refused; ``status`` is its HTTP status (404: an unknown batch)."""

    def __init__(self, message: str, status: int):
        super().__init__(message)
        self.status = status


class CreationUnanswered(JudgeError):
    """A batch creation whose reply never came; it may exist, so it is looked up by tag first."""


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

        http = self.client.first_replica()
        secret = self.client.config.api_key
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
                time.sleep(self.client.wait_seconds(attempt, retry_after))
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
