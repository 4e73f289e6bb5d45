"""The hosted judges' HTTP client: JSON POSTs to replicas, N at a time each, retried, redacted, size-capped.

:class:`ClientConfig` is what a hosted runtime's spec says about reaching its API; the runtime
holds a :class:`RetryingClient` built on it, which retries connection errors, timeouts, HTTP
429/5xx and bad bodies with jittered backoff (:class:`~rankkit.judges.hosted.http_retry.RetryPolicy`,
honouring ``Retry-After``) and never lets the API key into a message.
"""

from __future__ import annotations

import json
import logging
import os
import random
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeVar

from rankkit.data.specs import SpecError
from rankkit.judges.backends import Option, Settings
from rankkit.judges.base import JudgeError
from rankkit.judges.hosted.http_retry import (
    DEFAULT_MAX_RESPONSE_BYTES,
    ERROR_BODY_CHARS,
    KEY_REFUSED_STATUSES,
    REPLICA_SEPARATOR,
    BadResponse,
    HTTPStatusError,
    KeyRefused,
    Replica,
    RequestStats,
    RetryableError,
    RetryPolicy,
    excerpt,
    parse_retry_after,
    pick_replica,
    read_capped,
    retry_reason,
    split_base_urls,
)
from rankkit.judges.hosted.pacing import MAX_RATE_LIMIT_WAIT, Pacer, estimate_request_tokens

if TYPE_CHECKING:  # httpx is imported only when the first request is made
    import httpx

# The openai judge's logger, under the name it always had, so logging configured for it still applies.
logger = logging.getLogger("rankkit.judges.hosted.openai_compat")

T = TypeVar("T")


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


@dataclass(frozen=True)
class ClientConfig:
    """How a hosted runtime reaches its API: read once from the judge's spec (:meth:`from_settings`).

    backend: the judge backend named in log lines and errors (``openai``, ``anthropic``).
    base_url: the API root (``http://127.0.0.1:8000/v1``); replicas ``|``-joined.
    api_key: sent with every request; kept out of every message and of ``repr``.
    api_key_env: the variable the key was read from, named when the server refuses the key.
    concurrency: requests in flight at once per replica.
    timeout: seconds to connect, and then between bytes of the response.
    jitter_seed: seeds the backoff jitter (never affects results).
    max_response_bytes: the largest body read; a bigger one is a bad response.
    rpm, tpm: requests and tokens per minute (:class:`~rankkit.judges.hosted.pacing.Pacer`); None: paced by the
        rate-limit headers only. HTTP 429 is retried for up to
        :data:`~rankkit.judges.hosted.pacing.MAX_RATE_LIMIT_WAIT` seconds whatever ``retry`` says.
    """

    backend: str
    base_url: str
    api_key: str | None = field(default=None, repr=False)
    api_key_env: str | None = None
    concurrency: int = 4
    timeout: float = 120.0
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    jitter_seed: int | None = None
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    rpm: float | None = None
    tpm: float | None = None

    def __post_init__(self) -> None:
        if self.concurrency < 1:
            raise SpecError(f"{self.backend}: concurrency must be >= 1, got {self.concurrency}")
        if self.timeout <= 0:
            raise SpecError(f"{self.backend}: timeout must be > 0 seconds, got {self.timeout}")
        if self.max_response_bytes < 1024:
            raise SpecError(f"{self.backend}: max_response_bytes must be >= 1024, got {self.max_response_bytes}")
        split_base_urls(self.base_url)  # refused here, before anything is built on it

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        default_base_url: str,
        default_key_env: str,
        no_key: str,
        base_url_env: str | None = None,
    ) -> ClientConfig:
        """The configuration of a hosted judge's spec (:func:`client_options` and the pacing options).

        The key is read from the environment (``api_key_env``, else ``default_key_env``). A spec with
        neither a key nor a ``base_url`` (nor ``$base_url_env``) is refused, ``no_key`` saying why.
        """
        backend, key_env = settings.backend, settings["api_key_env"]
        api_key = os.environ.get(key_env or default_key_env)
        if key_env and not api_key:
            raise SpecError(f"{backend}: api_key_env={key_env} names an environment variable that is not set")
        given_url = settings["base_url"] or (os.environ.get(base_url_env) if base_url_env else None)
        if not given_url and not api_key:
            raise SpecError(f"{backend}: {no_key}")
        return cls(
            backend,
            given_url or default_base_url,
            api_key=api_key,
            api_key_env=key_env or default_key_env,
            retry=RetryPolicy(**settings.subset(("max_attempts", "backoff", "max_backoff"))),
            rpm=settings["rpm"],
            tpm=settings["tpm"],
            **settings.subset(("concurrency", "timeout", "max_response_bytes")),
        )


class RetryingClient:
    """POSTs JSON to ``{replica}{path}``, ``concurrency`` requests at a time per replica, with retries.

    Thread-safe: calls share one pool of :attr:`capacity` workers. A hosted runtime holds one.

    headers: sent with every request (the key's header among them).
    subject: what the requests are for, named when one fails for good (``model 'NAME'``).
    """

    def __init__(self, config: ClientConfig, headers: Mapping[str, str] | None = None, subject: str = "requests"):
        self.config = config
        self.headers = dict(headers or {})
        self.subject = subject
        self.replicas = [Replica(url) for url in split_base_urls(config.base_url)]
        self.stats = RequestStats()
        self.pacer = Pacer(config.rpm, config.tpm)
        self._api_key = config.api_key or None
        self._rng = random.Random(config.jitter_seed)
        self._rng_lock = threading.Lock()
        self._slots = threading.Condition()  # guards every Replica's counters
        self._clients: list[httpx.Client] = []
        self._pool: ThreadPoolExecutor | None = None
        self._setup_lock = threading.Lock()

    @property
    def backend(self) -> str:
        """The judge backend named in log lines and errors."""
        return self.config.backend

    @property
    def base_url(self) -> str:
        """The replica URLs, ``|``-joined (the one URL when there is one replica)."""
        return REPLICA_SEPARATOR.join(replica.url for replica in self.replicas)

    @property
    def capacity(self) -> int:
        """How many requests this client can usefully have in flight: ``concurrency`` per replica."""
        return self.config.concurrency * len(self.replicas)

    # -- plumbing ---------------------------------------------------------------------------------
    def _ensure_started(self) -> ThreadPoolExecutor:
        with self._setup_lock:
            if self._pool is None:
                import httpx  # heavy-ish; only when a request is made

                concurrency, timeout = self.config.concurrency, httpx.Timeout(self.config.timeout)
                limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
                self._clients = [
                    httpx.Client(base_url=replica.url, headers=self.headers, timeout=timeout, limits=limits)
                    for replica in self.replicas
                ]
                # concurrency per replica, whatever the runtime reports as its capacity (batching: its batch size)
                self._pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="rankkit-http")
            return self._pool

    def wait_seconds(self, retry: int, retry_after: float | None) -> float:
        """Seconds before retry ``retry`` (jittered backoff, or the server's ``retry_after``, capped)."""
        # one generator shared by the pool's threads; drawing is cheap, so a lock is simplest
        with self._rng_lock:
            return self.config.retry.wait(retry, retry_after, self._rng)

    def _acquire(self, tried: dict[int, int]) -> int:
        """Take a slot on the replica :func:`pick_replica` chooses, waiting while all are full."""
        with self._slots:
            while (index := pick_replica(self.replicas, self.config.concurrency, tried)) is None:
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
                data, complete = read_capped(response.iter_bytes(), self.config.max_response_bytes)
                status, encoding = response.status_code, response.encoding or "utf-8"
                retry_after = response.headers.get("retry-after")
                self.pacer.observe(response.headers)  # x-ratelimit-*, anthropic-ratelimit-*
        except httpx.TimeoutException as err:
            raise RetryableError(
                "timeout", f"no response from {where} within {self.config.timeout:g} s ({type(err).__name__})"
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
                f"response from {where} is larger than max_response_bytes={self.config.max_response_bytes}; not read further",
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
        variable = self.config.api_key_env or "the variable that holds the key"
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
            result, last = self._try_once(index, path, body, read)
            if last is None:
                return result, attempts - 1
            failed_on[index] = failed_on.get(index, 0) + 1
            rate_limited = last.reason == "429" and rate_limited_wait < MAX_RATE_LIMIT_WAIT
            counted += 0 if rate_limited else 1
            if counted >= self.config.retry.max_attempts or abort.is_set():
                break
            delay = self._retry_delay(last, attempts, len(failed_on) < len(self.replicas), rate_limited)
            rate_limited_wait += delay if rate_limited else 0.0
            if abort.wait(delay):
                break
            self.stats.count("retry", last.reason)
        self.stats.count("failed")
        raise self._gave_up(path, attempts, counted < self.config.retry.max_attempts, last)

    def _try_once(
        self, index: int, path: str, body: dict[str, Any], read: Callable[[dict[str, Any]], T] | None
    ) -> tuple[Any, RetryableError | None]:
        """One attempt on replica ``index``, its slot released after: ``(result, None)``, or ``(None, why to retry)``.

        A final error (:class:`~rankkit.judges.base.JudgeError`) is raised.
        """
        healthy = False
        try:
            payload = self._attempt(index, path, body)
            result = read(payload) if read is not None else payload
            healthy = True
        except BadResponse as err:
            where = f"response from {self.replicas[index].url}{path}"
            return None, RetryableError("bad_response", excerpt(f"{where}: {err}", self._api_key))
        except RetryableError as err:
            return None, err
        except JudgeError:
            healthy = True  # the server answered: the request (or the mode) is at fault, not the replica
            self.stats.count("failed")
            raise
        else:
            self.stats.count("succeeded")
            return result, None
        finally:
            self._release(index, healthy)

    def _retry_delay(self, last: RetryableError, attempts: int, untried: bool, rate_limited: bool) -> float:
        """Seconds before the next attempt (none on a replica not tried yet), logged; a 429 pauses one account."""
        delay = 0.0 if untried else self.wait_seconds(min(attempts, 16), last.retry_after)
        if rate_limited and len(self.replicas) == 1:  # one account's limit: every request holds back, not just this one
            self.pacer.pause(delay)
        logger.warning(
            "%s: %s (attempt %d of %d); retrying %s",
            self.backend,
            last,
            attempts,
            self.config.retry.max_attempts,
            "on another replica" if untried else f"in {delay:.2f} s",
        )
        return delay

    def _gave_up(self, path: str, attempts: int, stopped_early: bool, last: RetryableError) -> JudgeError:
        """The error of a request that failed for good after ``attempts``."""
        why = " (stopped early: another request of the batch failed)" if stopped_early else ""
        target = f"{self.base_url}{path}" if len(self.replicas) == 1 else f"{path} on {self.base_url}"
        return JudgeError(
            f"{self.backend}: request to {target} failed after {attempts} attempt"
            f"{'s' if attempts > 1 else ''}{why} ({self.subject}); last error: {last}"
        )

    def first_replica(self) -> httpx.Client:
        """The first replica's connection (started on first use): where the batch APIs and ``/models`` are asked."""
        self._ensure_started()
        return self._clients[0]

    def get_json(self, path: str) -> Any:
        """``GET path`` of the first replica, decoded (None when it fails: what it gives is a hint only)."""
        replica = self.first_replica()
        try:
            response = replica.get(path, timeout=min(self.config.timeout, 10.0))
            return response.json() if response.status_code == 200 else None
        except Exception:  # any failure means "no hint"
            return None

    def run_all(self, jobs: Sequence[Callable[[threading.Event], T]]) -> Iterator[tuple[int, T]]:
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
        """Stop the pool and close the connections (a later request starts them again)."""
        with self._setup_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
            for client in self._clients:
                client.close()
            self._clients = []
