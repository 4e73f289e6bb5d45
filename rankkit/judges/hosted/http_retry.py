"""The HTTP client's parts that hold no connection: retry policy, errors, replicas, counters, size cap.

Pure functions and small values :class:`~rankkit.judges.hosted.http_client.RetryingClient` and the batch
APIs (:mod:`rankkit.judges.hosted.batches`) share.
"""

from __future__ import annotations

import email.utils
import math
import random
import threading
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from rankkit.data.formatting import inert
from rankkit.data.specs import SpecError
from rankkit.judges.base import JudgeError

#: The most ``Retry-After`` may make one request wait, in seconds: a bigger value (or a date far
#: ahead) would stall the run for longer than retrying is worth.
MAX_RETRY_AFTER = 120.0
#: The largest response body read, in bytes (``max_response_bytes``): a verdict is a few hundred
#: tokens, so a bigger body is a runaway or hostile server, treated as a bad response rather than
#: stored whole in memory, the cache and the results.
DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
#: How much of a server's error body a message quotes (after the API key is redacted).
ERROR_EXCERPT_CHARS = 300
#: Separates replicas in ``base_url`` (``http://h1:8000/v1|http://h2:8000/v1``): the spec parser
#: splits on ``,`` and panels on ``+`` and ``;``, and a URL never contains a raw ``|``.
REPLICA_SEPARATOR = "|"

# -- retry policy (pure functions) ------------------------------------------------------------------


def backoff_delay(attempt: int, base: float, cap: float, rng: random.Random) -> float:
    """Seconds to wait before retry number ``attempt`` (from 1): "equal jitter" exponential backoff.

    The nominal ``d = min(cap, base * 2**(attempt-1))`` (seconds); the wait is uniform in ``[d / 2, d]``.

    Raises
    ------
    ValueError
        ``attempt`` is below 1.
    """
    if attempt < 1:
        raise ValueError(f"attempt counts from 1, got {attempt}")
    nominal = min(cap, base * 2.0 ** (attempt - 1))
    return nominal / 2.0 + rng.uniform(0.0, nominal / 2.0)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds (never negative) a ``Retry-After`` header asks for, or None when absent or unreadable.

    Takes seconds (``"1.5"``) or an HTTP date, read against ``now`` (Unix time; default the clock).
    """
    if value is None or not value.strip():
        return None
    text = value.strip()
    try:
        seconds = float(text)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(text)
        except (TypeError, ValueError, IndexError):
            return None
        if when is None or when.tzinfo is None:
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    if math.isnan(seconds) or math.isinf(seconds):
        return None
    return max(0.0, seconds)


def retry_reason(status: int) -> str | None:
    """``"429"`` or ``"5xx"`` for a transient HTTP status, None for a final one (other 4xx)."""
    if status == 429:
        return "429"
    if status == 408:
        return "timeout"
    if 500 <= status <= 599:
        return "5xx"
    return None


def redact(text: str, secret: str | None) -> str:
    """``text`` with every occurrence of ``secret`` replaced by ``***`` (servers may echo keys)."""
    return text.replace(secret, "***") if secret else text


def excerpt(text: str, secret: str | None, limit: int = ERROR_EXCERPT_CHARS) -> str:
    """The first ``limit`` characters of ``text``, ``secret`` redacted before cutting, control characters escaped."""
    return inert(redact(text, secret)[:limit].strip())


def split_base_urls(value: str) -> list[str]:
    """The replica URLs of a ``base_url`` value (``REPLICA_SEPARATOR``-joined), trailing ``/`` removed.

    Raises :class:`SpecError` for none, a repeat, or one not ``http(s)://HOST...``.
    """
    from urllib.parse import urlsplit

    urls = [part.strip().rstrip("/") for part in value.split(REPLICA_SEPARATOR) if part.strip()]
    if not urls:
        raise SpecError("openai: base_url is empty")
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SpecError(
                f"openai: base_url {url!r} is not an http:// or https:// address "
                f"(e.g. http://HOST:8000/v1; separate replicas with '{REPLICA_SEPARATOR}')"
            )
    if len(set(urls)) != len(urls):
        raise SpecError(f"openai: base_url names a replica twice: {value!r}")
    return urls


@dataclass(frozen=True)
class RetryPolicy:
    """How failed requests are retried.

    max_attempts: attempts per request, the first included (1 = never retry).
    backoff: nominal seconds before the first retry; doubles with each retry.
    max_backoff: the largest nominal wait, in seconds.
    """

    max_attempts: int = 5
    backoff: float = 0.5
    max_backoff: float = 30.0

    def __post_init__(self) -> None:
        if self.max_attempts < 1:
            raise SpecError(f"openai: max_attempts must be >= 1, got {self.max_attempts}")
        if self.backoff < 0 or self.max_backoff < 0:
            raise SpecError("openai: backoff and max_backoff must be >= 0")

    def wait(self, retry: int, retry_after: float | None, rng: random.Random) -> float:
        """Seconds before retry ``retry``: ``retry_after`` (capped, jittered), else the backoff."""
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER) + rng.uniform(0.0, self.backoff / 2.0)
        return backoff_delay(retry, self.backoff, self.max_backoff, rng)


# -- counters ---------------------------------------------------------------------------------------


@dataclass
class RequestStats:
    """What the runtime sent: HTTP attempts, retries by reason, requests that gave up. Thread-safe."""

    attempts: int = 0
    succeeded: int = 0
    failed: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, name: str, reason: str | None = None) -> None:
        """Count one ``attempts``, ``succeeded``, ``failed``, or a ``retry`` under its ``reason`` (None: ``other``)."""
        with self._lock:
            if name == "retry":
                self.retries[reason or "other"] = self.retries.get(reason or "other", 0) + 1
            else:
                setattr(self, name, getattr(self, name) + 1)

    @property
    def total_retries(self) -> int:
        with self._lock:
            return sum(self.retries.values())

    def to_dict(self) -> dict[str, Any]:
        """``attempts``, ``succeeded``, ``failed`` and ``retries`` (by reason), JSON-ready."""
        with self._lock:
            return {
                "attempts": self.attempts,
                "succeeded": self.succeeded,
                "failed": self.failed,
                "retries": dict(self.retries),
            }


class RetryableError(Exception):
    """One attempt failed in a way worth retrying: ``reason``, and the server's ``retry_after`` seconds if any."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.reason = reason
        self.retry_after = retry_after


class HTTPStatusError(JudgeError):
    """A final HTTP error: ``status`` and the server's ``text`` (key redacted, at most :data:`ERROR_BODY_CHARS`)."""

    def __init__(self, message: str, status: int, text: str):
        super().__init__(message)
        self.status = status
        self.text = text


class KeyRefused(HTTPStatusError):
    """HTTP 401 or 403: the server refused the API key (or its absence); bad input, exit 2."""

    exit_code = 2
    resumable = False


#: The statuses by which a server refuses a request's credentials.
KEY_REFUSED_STATUSES = (401, 403)


#: How much of a refused request's error body :class:`HTTPStatusError` keeps for the runtime to read.
ERROR_BODY_CHARS = 2000


class BadResponse(ValueError):
    """A body that is not a response of the expected shape; retried like a server error."""


@dataclass
class Replica:
    """One server and its load: ``in_flight`` now, ``sent`` attempts, ``failures`` in a row (0 after a success)."""

    url: str
    in_flight: int = 0
    sent: int = 0
    failures: int = 0


def pick_replica(replicas: Sequence[Replica], limit: int, tried: dict[int, int]) -> int | None:
    """Index of the replica for a request's next attempt, or None to wait for a free slot.

    Among the replicas this request failed on least (``tried``: index -> failures) with fewer than
    ``limit`` in flight: not failing lately first, then least loaded, then least used.
    """
    fewest = min(tried.get(i, 0) for i in range(len(replicas)))
    free = [i for i, replica in enumerate(replicas) if tried.get(i, 0) == fewest and replica.in_flight < limit]
    if not free:
        return None
    return min(free, key=lambda i: (replicas[i].failures > 0, replicas[i].in_flight, replicas[i].sent, i))


def read_capped(chunks: Iterator[bytes], limit: int) -> tuple[bytes, bool]:
    """At most ``limit`` bytes of ``chunks``: ``(what was read, whether that was all)``."""
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        if size + len(chunk) > limit:
            parts.append(chunk[: limit - size])
            return b"".join(parts), False
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts), True
