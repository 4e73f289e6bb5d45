"""The openai judge's HTTP client: JSON POSTs to replicas, N at a time each, retried, redacted, size-capped.

:class:`RetryingClient` retries connection errors, timeouts, HTTP 429/5xx and bad bodies with
jittered backoff (:class:`RetryPolicy`, honouring ``Retry-After``) and never lets the API key into
a message. Chat completions are :class:`~rankkit.judges.openai_compat.OpenAIRuntime`'s.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import random
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from rankkit.formatting import inert
from rankkit.judges.backends import Option
from rankkit.judges.base import JudgeError
from rankkit.judges.pacing import MAX_RATE_LIMIT_WAIT, Pacer, estimate_request_tokens
from rankkit.specs import SpecError

if TYPE_CHECKING:  # httpx is imported only when the first request is made
    import httpx

# The openai judge's logger, under the name it always had, so logging configured for it still applies.
logger = logging.getLogger("rankkit.judges.openai_compat")

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

T = TypeVar("T")


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


# -- the client -------------------------------------------------------------------------------------


def client_options(base_url_help: str, api_key_env: str) -> tuple[Option, ...]:
    """The spec options of a judge on :class:`RetryingClient` (none changes the fingerprint).

    ``base_url_help`` is ``base_url``'s help text; ``api_key_env`` the key's default variable.
    ``base_url`` and ``api_key_env`` are trusted-only options.
    """
    return (
        Option("base_url", str, None, base_url_help, identity=False, trusted_only=True),
        Option("concurrency", int, 4, "requests in flight per replica", identity=False),
        Option("timeout", float, 120.0, "seconds per request", identity=False),
        Option(
            "max_attempts", int, RetryPolicy.max_attempts, "attempts per request, the first included", identity=False
        ),
        Option(
            "backoff", float, RetryPolicy.backoff, "first retry's wait, seconds (doubles each time)", identity=False
        ),
        Option("max_backoff", float, RetryPolicy.max_backoff, "longest wait between attempts", identity=False),
        Option(
            "api_key_env",
            str,
            None,
            f"the variable holding the API key (default {api_key_env})",
            identity=False,
            trusted_only=True,
        ),
        Option("max_response_bytes", int, DEFAULT_MAX_RESPONSE_BYTES, "largest response body read", identity=False),
    )


class RetryingClient:
    """POSTs JSON to ``{replica}{path}``, ``concurrency`` requests at a time per replica, with retries.

    Thread-safe: calls share one pool of :attr:`capacity` workers.

    base_url: the API root (``http://127.0.0.1:8000/v1``); replicas as a list or ``|``-joined.
    api_key: sent as ``Authorization: Bearer ...``; kept out of every message.
    concurrency: requests in flight at once per replica.
    timeout: seconds to connect, and then between bytes of the response.
    jitter_seed: seeds the backoff jitter (never affects results).
    max_response_bytes: the largest body read; a bigger one is a bad response.
    pacer: rate-limit pacing (:class:`~rankkit.judges.pacing.Pacer`); default: headers only. HTTP
        429 is retried for up to :data:`~rankkit.judges.pacing.MAX_RATE_LIMIT_WAIT` seconds whatever
        ``max_attempts`` says.
    """

    #: The judge backend named in log lines and errors (a runtime's own ``backend``).
    backend: str = "openai"
    #: The environment variable the API key is read from, named when the server refuses the key.
    api_key_env: str | None = None

    def __init__(
        self,
        base_url: str | Sequence[str],
        api_key: str | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        retry: RetryPolicy = RetryPolicy(),
        jitter_seed: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        pacer: Pacer | None = None,
    ):
        if concurrency < 1:
            raise SpecError(f"{self.backend}: concurrency must be >= 1, got {concurrency}")
        if timeout <= 0:
            raise SpecError(f"{self.backend}: timeout must be > 0 seconds, got {timeout}")
        if max_response_bytes < 1024:
            raise SpecError(f"{self.backend}: max_response_bytes must be >= 1024, got {max_response_bytes}")
        urls = split_base_urls(base_url if isinstance(base_url, str) else REPLICA_SEPARATOR.join(base_url))
        self.replicas = [Replica(url) for url in urls]
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = retry
        self.max_response_bytes = max_response_bytes
        self.stats = RequestStats()
        self.pacer = pacer or Pacer()
        self._api_key = api_key or None
        self._rng = random.Random(jitter_seed)
        self._rng_lock = threading.Lock()
        self._slots = threading.Condition()  # guards every Replica's counters
        self._clients: list[httpx.Client] = []
        self._pool: ThreadPoolExecutor | None = None
        self._setup_lock = threading.Lock()

    @property
    def base_url(self) -> str:
        """The replica URLs, ``|``-joined (the one URL when there is one replica)."""
        return REPLICA_SEPARATOR.join(replica.url for replica in self.replicas)

    @property
    def capacity(self) -> int:
        """How many requests this runtime can usefully have in flight: ``concurrency`` per replica."""
        return self.concurrency * len(self.replicas)

    def request_subject(self) -> str:
        """What the requests are for, named when one fails for good (``model 'NAME'``)."""
        return "requests"

    def request_headers(self) -> dict[str, str]:
        """Headers of every request: ``Authorization: Bearer KEY`` when a key is set."""
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    # -- plumbing ---------------------------------------------------------------------------------
    def _ensure_started(self) -> ThreadPoolExecutor:
        with self._setup_lock:
            if self._pool is None:
                import httpx  # heavy-ish; only when a request is made

                headers = self.request_headers()
                limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
                self._clients = [
                    httpx.Client(
                        base_url=replica.url, headers=headers, timeout=httpx.Timeout(self.timeout), limits=limits
                    )
                    for replica in self.replicas
                ]
                # concurrency per replica, whatever a subclass reports as its capacity (a batching runtime: its batch size)
                self._pool = ThreadPoolExecutor(
                    max_workers=self.concurrency * len(self.replicas), thread_name_prefix="rankkit-http"
                )
            return self._pool

    def _wait_seconds(self, retry: int, retry_after: float | None) -> float:
        # one generator shared by the pool's threads; drawing is cheap, so a lock is simplest
        with self._rng_lock:
            return self.retry.wait(retry, retry_after, self._rng)

    def _acquire(self, tried: dict[int, int]) -> int:
        """Take a slot on the replica :func:`pick_replica` chooses, waiting while all are full."""
        with self._slots:
            while (index := pick_replica(self.replicas, self.concurrency, tried)) is None:
                self._slots.wait()
            self.replicas[index].in_flight += 1
            self.replicas[index].sent += 1
            return index

    def _release(self, index: int, healthy: bool) -> None:
        with self._slots:
            replica = self.replicas[index]
            replica.in_flight -= 1
            replica.failures = 0 if healthy else replica.failures + 1
            # every waiter looks again: the one a single notify() would wake may be waiting for
            # another replica (a retry avoids the replica it failed on)
            self._slots.notify_all()

    def in_flight(self) -> int:
        """Requests in flight now, over all replicas."""
        with self._slots:
            return sum(replica.in_flight for replica in self.replicas)

    def _attempt(self, index: int, path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One HTTP attempt on replica ``index``: the decoded JSON, or :class:`RetryableError` / :class:`JudgeError`."""
        import httpx

        where = f"{self.replicas[index].url}{path}"
        self.stats.count("attempts")
        try:
            with self._clients[index].stream("POST", path, json=body) as response:
                data, complete = read_capped(response.iter_bytes(), self.max_response_bytes)
                status, encoding = response.status_code, response.encoding or "utf-8"
                retry_after = response.headers.get("retry-after")
                self.pacer.observe(response.headers)  # x-ratelimit-*, anthropic-ratelimit-*
        except httpx.TimeoutException as err:
            raise RetryableError(
                "timeout", f"no response from {where} within {self.timeout:g} s ({type(err).__name__})"
            ) from None
        except httpx.DecodingError as err:
            raise RetryableError(
                "bad_response", excerpt(f"undecodable response from {where}: {err}", self._api_key)
            ) from None
        except httpx.TransportError as err:
            raise RetryableError(
                "connection", excerpt(f"{type(err).__name__} from {where}: {err}", self._api_key)
            ) from None
        text = data.decode(encoding, errors="replace")
        if status != 200:
            message = f"HTTP {status} from {where}: {excerpt(text, self._api_key)}"
            if status in KEY_REFUSED_STATUSES:
                refusal = self._key_refused(status, where, excerpt(text, self._api_key))
                raise KeyRefused(refusal, status, excerpt(text, self._api_key, ERROR_BODY_CHARS))
            reason = retry_reason(status)
            if reason is None:
                raise HTTPStatusError(message, status, excerpt(text, self._api_key, ERROR_BODY_CHARS))
            raise RetryableError(reason, message, parse_retry_after(retry_after))
        if not complete:
            raise RetryableError(
                "bad_response",
                f"response from {where} is larger than max_response_bytes={self.max_response_bytes}; not read further",
            )
        try:
            payload = json.loads(text)
        except ValueError:
            raise RetryableError(
                "bad_response", f"response from {where} is not JSON: {excerpt(text, self._api_key, 200)!r}"
            ) from None
        if not isinstance(payload, dict):
            raise RetryableError(
                "bad_response", f"response from {where} is not a JSON object: {excerpt(text, self._api_key, 200)!r}"
            )
        return payload

    def _key_refused(self, status: int, where: str, said: str) -> str:
        sent = "refused the API key" if self._api_key else "wants an API key and none was sent"
        variable = self.api_key_env or "the variable that holds the key"
        return (
            f"{self.backend}: HTTP {status} from {where}: the server {sent}; export {variable} with a valid "
            f"key (or name another variable with api_key_env=NAME); the server said: {said}"
        )

    def post(
        self,
        path: str,
        body: dict[str, Any],
        abort: threading.Event | None = None,
        read: Callable[[dict[str, Any]], T] | None = None,
    ) -> tuple[Any, int]:
        """POST ``body`` to ``path`` with retries; returns ``(read(response JSON), retries)``.

        A retry moves to a replica this request has not failed on. ``abort``, once set by another
        thread, stops retrying; ``read`` raises :class:`BadResponse` on a wrong shape (retried).
        """
        self._ensure_started()
        abort = abort or threading.Event()
        failed_on: dict[int, int] = {}
        attempts = 0
        counted = 0  # attempts that count against max_attempts (a 429 does not, within its time budget)
        rate_limited_wait = 0.0
        tokens = estimate_request_tokens(body) if self.pacer.tpm else 0
        while True:
            attempts += 1
            self.pacer.wait_turn(tokens, abort)  # before taking a slot: a paced request holds none
            index = self._acquire(failed_on)
            healthy = False
            try:
                payload = self._attempt(index, path, body)
                result = read(payload) if read is not None else payload
                healthy = True
            except BadResponse as err:
                last = RetryableError(
                    "bad_response", excerpt(f"response from {self.replicas[index].url}{path}: {err}", self._api_key)
                )
            except RetryableError as err:
                last = err
            except JudgeError:
                healthy = True  # the server answered: the request (or the mode) is at fault, not the replica
                self.stats.count("failed")
                raise
            else:
                self.stats.count("succeeded")
                return result, attempts - 1
            finally:
                self._release(index, healthy)
            failed_on[index] = failed_on.get(index, 0) + 1
            rate_limited = last.reason == "429" and rate_limited_wait < MAX_RATE_LIMIT_WAIT
            counted += 0 if rate_limited else 1
            if counted >= self.retry.max_attempts or abort.is_set():
                break
            untried = len(failed_on) < len(self.replicas)
            delay = 0.0 if untried else self._wait_seconds(min(attempts, 16), last.retry_after)
            if rate_limited:
                rate_limited_wait += delay
                if len(self.replicas) == 1:  # one account's limit: every request holds back, not just this one
                    self.pacer.pause(delay)
            logger.warning(
                "%s: %s (attempt %d of %d); retrying %s",
                self.backend,
                last,
                attempts,
                self.retry.max_attempts,
                "on another replica" if untried else f"in {delay:.2f} s",
            )
            if abort.wait(delay):
                break
            self.stats.count("retry", last.reason)
        self.stats.count("failed")
        why = "" if counted >= self.retry.max_attempts else " (stopped early: another request of the batch failed)"
        target = f"{self.base_url}{path}" if len(self.replicas) == 1 else f"{path} on {self.base_url}"
        raise JudgeError(
            f"{self.backend}: request to {target} failed after {attempts} attempt"
            f"{'s' if attempts > 1 else ''}{why} ({self.request_subject()}); last error: {last}"
        )

    def _run_all(self, jobs: Sequence[Callable[[threading.Event], T]]) -> Iterator[tuple[int, T]]:
        """Run ``jobs`` on the pool, yielding ``(index, result)``; a failure cancels the rest and is raised."""
        pool = self._ensure_started()
        abort = threading.Event()
        futures: dict[Future, int] = {pool.submit(job, abort): index for index, job in enumerate(jobs)}
        error: BaseException | None = None
        try:
            for future in as_completed(futures):
                if future.cancelled():
                    continue
                problem = future.exception()
                if problem is not None:
                    if error is None:
                        error = problem
                        abort.set()
                        for other in futures:
                            other.cancel()
                    continue
                yield futures[future], future.result()
        finally:
            abort.set()  # also reached when the consumer stops early: nothing more is wanted
            for future in futures:
                future.cancel()
        if error is not None:
            raise error

    def close(self) -> None:
        with self._setup_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
            for client in self._clients:
                client.close()
            self._clients = []
