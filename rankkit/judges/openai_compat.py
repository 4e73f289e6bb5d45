"""A judge behind any OpenAI-compatible HTTP endpoint: vLLM, llama.cpp's server, TGI, OpenAI itself.

Spec::

    openai:MODEL,base_url=http://HOST:PORT/v1,concurrency=8,timeout=60,max_attempts=5,
           api_key_env=OPENAI_API_KEY,max_response_bytes=4194304,mode=generate,template=...

The judging itself — prompt templates, the modes ``generate`` / ``logprob``, the strict parser
and its retry, the fingerprint — is :class:`rankkit.judges.llm.LLMJudge`, shared with the Hugging
Face judge. This module only supplies the engine that turns conversations into chat-completion
requests, and it is built for scale-out deployments:

**Concurrency.** ``concurrency=N`` requests are in flight at once per server (a thread pool over
pooled ``httpx.Client`` connections). The match layer hands the judge everything a strategy knows
at once (a knockout round, all pairs of a tournament), so N requests keep N server slots busy.
Results are yielded the moment each response arrives, whatever the order, so each judgment
reaches the cache at once. ``generate`` / ``next_token_logprobs`` may be called from several
threads at once; they share the pool and the slots, so the total in flight never exceeds
:attr:`OpenAIEngine.capacity`.

**Replicas.** ``base_url=http://h1:8000/v1|http://h2:8000/v1`` spreads requests over several
servers of the same model, client-side: ``concurrency`` applies per replica (capacity =
concurrency × replicas), each request goes to the least-loaded replica that is not failing, and a
failed attempt is retried at once on a replica this request has not failed on yet (the backoff
applies once every replica has failed it). ``|`` is the separator because the spec parser splits
on ``,`` and a URL never contains a raw ``|`` (quote the spec in the shell).

**Robustness.** Each request has a timeout. Connection errors, timeouts, HTTP 429 and 5xx, and
bad responses — not JSON, the wrong JSON types (``choices: "oops"``, ``content: 123``), missing
fields, or a body larger than ``max_response_bytes`` (default 4 MiB; the body is streamed and not
read past the limit) — are retried with exponential backoff and jitter, honouring the server's
``Retry-After``; after ``max_attempts`` attempts the batch stops with a :class:`JudgeError` that
names the cause. Before raising, requests already in flight are allowed to finish and their
results are yielded, so every judgment the server answered is cached and a rerun continues where
this one stopped. Retries are counted per judgment (``usage["retries"]``, summed per strategy into
``Cost.retries``) and in :attr:`OpenAIEngine.stats`.

**Modes.** ``generate`` works against any chat-completions server. ``logprob`` needs the
first-token ``logprobs``/``top_logprobs`` of a reply that continues a forced prefix (``Score: ``):
vLLM, SGLang and llama.cpp's ``llama-server`` do that (see :func:`prefill_fields`); a server that
returns no log-probabilities stops the run with :class:`LogprobsUnavailable`, whose message says
to use ``mode=generate``; llama-cpp-python's server returns them but cannot continue a prefix, so
use ``mode=generate`` with it too. ``loglik`` (likelihood of a given answer) is not offered: chat
completions never score a given text.

**Secrets.** The API key is read from the environment variable ``api_key_env`` (default
``OPENAI_API_KEY``; a local server needs none). It is sent only as the ``Authorization`` header:
it is not part of the spec, the fingerprint, the cache, the results, ``repr`` or any message
(server error text is redacted *before* it is cut to length, so no piece of the key survives). With
neither a ``base_url`` nor a key the spec is refused at once.

**Identity.** The fingerprint names the *model*, not ``base_url``: the same model served at
another address (a vLLM replica, a moved deployment, a proxy) or by any number of replicas gives
interchangeable judgments, so its cached judgments stay valid. The flip side: serve different
weights under different model names (vLLM's ``--served-model-name``), or cached judgments of one
will be reused for the other.
"""

from __future__ import annotations

import email.utils
import json
import logging
import math
import os
import random
import threading
import time
from concurrent.futures import Future, ThreadPoolExecutor, as_completed
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Callable, Iterator, Sequence, TypeVar

from rankkit.judges.base import JudgeError
from rankkit.judges.llm import LLM_OPTIONS, Generation, LLMJudge, split_llm_options
from rankkit.specs import Spec, SpecError, convert_value

if TYPE_CHECKING:  # httpx is imported only when an engine is built
    import httpx

logger = logging.getLogger(__name__)

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
#: The most ``Retry-After`` may make one request wait, in seconds: a bigger value (or a date far
#: ahead) would stall the run for longer than retrying is worth.
MAX_RETRY_AFTER = 120.0
#: How many alternatives ``logprob`` mode asks for at the first answer token (OpenAI's limit is 20;
#: vLLM's default ``--max-logprobs`` is 20 too).
TOP_LOGPROBS = 20
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
    """Seconds to wait before retry number ``attempt`` (1 for the first retry).

    Exponential backoff with "equal jitter": the nominal delay ``d = min(cap, base * 2**(attempt-1))``
    is split into a fixed half and a uniformly random half, so the wait grows with each attempt
    while concurrent clients that failed together do not retry together.

    attempt: which retry this is, starting at 1.
    base: nominal delay of the first retry, in seconds.
    cap: the largest nominal delay, in seconds.
    rng: source of the jitter.
    """
    if attempt < 1:
        raise ValueError(f"attempt counts from 1, got {attempt}")
    nominal = min(cap, base * 2.0 ** (attempt - 1))
    return nominal / 2.0 + rng.uniform(0.0, nominal / 2.0)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """The wait a ``Retry-After`` header asks for, in seconds (never negative), or None.

    The header is either a number of seconds (``"3"``, some servers send ``"1.5"``) or an
    HTTP date (``"Wed, 21 Oct 2015 07:28:00 GMT"``); ``now`` is the current Unix time for the
    latter (default: the clock). Anything unreadable gives None, i.e. "use the backoff".
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
    """Why an HTTP status is worth retrying (``"429"``, ``"5xx"``), or None when it is final.

    429 (rate limited) and every 5xx (server overloaded, restarting, a gateway without a backend)
    are transient; other 4xx are the request's own fault (bad model name, bad key, bad body) and
    retrying them only wastes time.
    """
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
    """The first ``limit`` characters of ``text`` for an error message, with ``secret`` redacted
    *before* cutting: cutting first could split the key and leave a piece no redaction finds."""
    return redact(text, secret)[:limit].strip()


def split_base_urls(value: str) -> list[str]:
    """The replica URLs of a ``base_url`` value (``REPLICA_SEPARATOR``-joined), trailing ``/``
    removed. Raises :class:`SpecError` for an empty list, a repeated URL, or one that is not an
    ``http(s)://HOST...`` address (it could never connect, and would only be retried)."""
    from urllib.parse import urlsplit

    urls = [part.strip().rstrip("/") for part in value.split(REPLICA_SEPARATOR) if part.strip()]
    if not urls:
        raise SpecError("openai: base_url is empty")
    for url in urls:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.netloc:
            raise SpecError(f"openai: base_url {url!r} is not an http:// or https:// address "
                            f"(e.g. http://HOST:8000/v1; separate replicas with '{REPLICA_SEPARATOR}')")
    if len(set(urls)) != len(urls):
        raise SpecError(f"openai: base_url names a replica twice: {value!r}")
    return urls


@dataclass(frozen=True)
class RetryPolicy:
    """How failed requests are retried.

    max_attempts: attempts per request, the first included (1 = never retry).
    backoff: nominal wait before the first retry, in seconds; it doubles with each retry.
    max_backoff: the largest nominal wait between attempts, in seconds.
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
        """Seconds to wait before retry number ``retry``: the server's ``Retry-After`` when it gave
        one (capped at :data:`MAX_RETRY_AFTER`, plus a little jitter so that the clients it throttled
        do not come back in lockstep), else the jittered exponential backoff."""
        if retry_after is not None:
            return min(retry_after, MAX_RETRY_AFTER) + rng.uniform(0.0, self.backoff / 2.0)
        return backoff_delay(retry, self.backoff, self.max_backoff, rng)


# -- counters ---------------------------------------------------------------------------------------

@dataclass
class RequestStats:
    """What the engine sent: HTTP attempts, retries by reason, requests that gave up. Thread-safe."""

    attempts: int = 0
    succeeded: int = 0
    failed: int = 0
    retries: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False, compare=False)

    def count(self, name: str, reason: str | None = None) -> None:
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
        with self._lock:
            return {"attempts": self.attempts, "succeeded": self.succeeded, "failed": self.failed,
                    "retries": dict(self.retries)}


class RetryableError(Exception):
    """One attempt failed in a way worth retrying; ``reason`` names how, ``retry_after`` is the
    server's requested wait in seconds (if any)."""

    def __init__(self, reason: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.reason = reason
        self.retry_after = retry_after


class BadResponse(ValueError):
    """A response body that is not a chat completion of the expected shape (wrong JSON types,
    missing fields). The engine retries it like a server error: a proxy or an overloaded server
    can send a broken body once."""


class LogprobsUnavailable(JudgeError):
    """The server answered but without ``logprobs``: ``logprob`` mode cannot work against it."""


@dataclass
class Replica:
    """One server of the engine and its load: ``in_flight`` requests now, ``sent`` attempts so
    far, ``failures`` consecutive failed attempts (0 after a success)."""

    url: str
    in_flight: int = 0
    sent: int = 0
    failures: int = 0


def pick_replica(replicas: Sequence[Replica], limit: int, tried: dict[int, int]) -> int | None:
    """Which replica the next attempt of a request goes to, or None to wait for a free slot.

    Only the replicas this request has failed on least qualify (``tried``: replica index ->
    failed attempts), so a retry waits for a slot on another replica rather than going back to
    the one that just failed. Of those, one with fewer than ``limit`` requests in flight: first
    the ones not failing lately, then the least loaded, then the least used (so equal replicas
    take turns).
    """
    fewest = min(tried.get(i, 0) for i in range(len(replicas)))
    free = [i for i, replica in enumerate(replicas) if tried.get(i, 0) == fewest and replica.in_flight < limit]
    if not free:
        return None
    return min(free, key=lambda i: (replicas[i].failures > 0, replicas[i].in_flight, replicas[i].sent, i))


def read_capped(chunks: Iterator[bytes], limit: int) -> tuple[bytes, bool]:
    """Read at most ``limit`` bytes from ``chunks``: ``(what was read, whether that was all)``.

    Stops at the first chunk past the limit, so a 50 MB body costs ``limit`` bytes of memory.
    """
    parts: list[bytes] = []
    size = 0
    for chunk in chunks:
        if size + len(chunk) > limit:
            parts.append(chunk[:limit - size])
            return b"".join(parts), False
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts), True


# -- the engine -------------------------------------------------------------------------------------

class OpenAIEngine:
    """Sends conversations to ``{base_url}/chat/completions``, ``concurrency`` at a time per replica.

    model: the model name the server knows (``--served-model-name`` for vLLM; llama.cpp's server
        serves one model whatever the name).
    base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``; several interchangeable replicas
        as a list or ``|``-joined (``http://h1:8000/v1|http://h2:8000/v1``).
    api_key: sent as ``Authorization: Bearer ...`` when given; kept out of every message.
    concurrency: requests in flight at once *per replica*.
    timeout: seconds one attempt may take to connect, and then between bytes of the response.
    retry: the :class:`RetryPolicy`.
    jitter_seed: seeds the backoff jitter (so tests are reproducible; it never affects judgments).
    max_response_bytes: the largest response body read; a bigger one is a bad response.

    ``generate`` and ``next_token_logprobs`` may be called from several threads at once: all
    calls share one pool of :attr:`capacity` workers, and each attempt holds a replica slot, so
    at most ``concurrency`` requests are in flight per replica and :attr:`capacity` in total.
    """

    backend = "openai"
    #: Requests are streamed to the server one by one; nothing is gained by waiting for a full batch.
    fills_batches = False

    def __init__(self, model: str, base_url: str | Sequence[str] = DEFAULT_BASE_URL, api_key: str | None = None,
                 concurrency: int = 4, timeout: float = 120.0, retry: RetryPolicy = RetryPolicy(),
                 jitter_seed: int | None = None, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES):
        if concurrency < 1:
            raise SpecError(f"openai: concurrency must be >= 1, got {concurrency}")
        if timeout <= 0:
            raise SpecError(f"openai: timeout must be > 0 seconds, got {timeout}")
        if max_response_bytes < 1024:
            raise SpecError(f"openai: max_response_bytes must be >= 1024, got {max_response_bytes}")
        urls = split_base_urls(base_url if isinstance(base_url, str) else REPLICA_SEPARATOR.join(base_url))
        self.model = model
        self.replicas = [Replica(url) for url in urls]
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = retry
        self.max_response_bytes = max_response_bytes
        self.stats = RequestStats()
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
        """How many requests this engine can usefully have in flight: ``concurrency`` per replica."""
        return self.concurrency * len(self.replicas)

    def __repr__(self) -> str:  # never shows the key
        key = "set" if self._api_key else "none"
        return (f"OpenAIEngine(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency}, "
                f"timeout={self.timeout}, api_key={key})")

    def identity(self) -> dict[str, Any]:
        """The model name only: see "Identity" in the module docstring for why not ``base_url``
        (nor how many replicas serve it)."""
        return {"model": self.model}

    # -- plumbing ---------------------------------------------------------------------------------
    def _ensure_started(self) -> ThreadPoolExecutor:
        with self._setup_lock:
            if self._pool is None:
                import httpx  # heavy-ish; only when a request is made

                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                limits = httpx.Limits(max_connections=self.concurrency, max_keepalive_connections=self.concurrency)
                self._clients = [httpx.Client(base_url=replica.url, headers=headers,
                                              timeout=httpx.Timeout(self.timeout), limits=limits)
                                 for replica in self.replicas]
                self._pool = ThreadPoolExecutor(max_workers=self.capacity, thread_name_prefix="rankkit-http")
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
        """One HTTP attempt on replica ``index``: the decoded JSON object, or
        :class:`RetryableError` / :class:`JudgeError`. Reads at most ``max_response_bytes``."""
        import httpx

        where = f"{self.replicas[index].url}{path}"
        self.stats.count("attempts")
        try:
            with self._clients[index].stream("POST", path, json=body) as response:
                data, complete = read_capped(response.iter_bytes(), self.max_response_bytes)
                status, encoding = response.status_code, response.encoding or "utf-8"
                retry_after = response.headers.get("retry-after")
        except httpx.TimeoutException as err:
            raise RetryableError("timeout", f"no response from {where} within {self.timeout:g} s "
                                 f"({type(err).__name__})") from None
        except httpx.DecodingError as err:
            raise RetryableError("bad_response", excerpt(f"undecodable response from {where}: {err}",
                                                         self._api_key)) from None
        except httpx.TransportError as err:
            raise RetryableError("connection", excerpt(f"{type(err).__name__} from {where}: {err}",
                                                       self._api_key)) from None
        text = data.decode(encoding, errors="replace")
        if status != 200:
            message = f"HTTP {status} from {where}: {excerpt(text, self._api_key)}"
            reason = retry_reason(status)
            if reason is None:
                raise JudgeError(message)
            raise RetryableError(reason, message, parse_retry_after(retry_after))
        if not complete:
            raise RetryableError("bad_response", f"response from {where} is larger than max_response_bytes="
                                 f"{self.max_response_bytes}; not read further")
        try:
            payload = json.loads(text)
        except ValueError:
            raise RetryableError("bad_response", f"response from {where} is not JSON: "
                                 f"{excerpt(text, self._api_key, 200)!r}") from None
        if not isinstance(payload, dict):
            raise RetryableError("bad_response", f"response from {where} is not a JSON object: "
                                 f"{excerpt(text, self._api_key, 200)!r}")
        return payload

    def post(self, path: str, body: dict[str, Any], abort: threading.Event | None = None,
             read: Callable[[dict[str, Any]], T] | None = None) -> tuple[Any, int]:
        """POST ``body`` to ``path`` with retries; returns (``read(response JSON)``, retries it took).

        read: turns the JSON into the result, raising :class:`BadResponse` when it has the wrong
            shape (retried like a server error); default: the JSON itself.
        abort: set by another thread (a sibling request gave up) stops retrying early: the batch
            is failing anyway, and waiting would only delay the error.

        Each attempt goes to the replica :func:`pick_replica` chooses, so a retry moves to a replica
        this request has not failed on; it waits the backoff only once every replica has failed it.
        """
        self._ensure_started()
        abort = abort or threading.Event()
        failed_on: dict[int, int] = {}
        attempts = 0
        while True:
            attempts += 1
            index = self._acquire(failed_on)
            healthy = False
            try:
                payload = self._attempt(index, path, body)
                result = read(payload) if read is not None else payload
                healthy = True
            except BadResponse as err:
                last = RetryableError("bad_response", excerpt(f"response from {self.replicas[index].url}{path}: "
                                                              f"{err}", self._api_key))
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
            if attempts >= self.retry.max_attempts or abort.is_set():
                break
            untried = len(failed_on) < len(self.replicas)
            delay = 0.0 if untried else self._wait_seconds(attempts, last.retry_after)
            logger.warning("openai: %s (attempt %d of %d); retrying %s", last, attempts, self.retry.max_attempts,
                           "on another replica" if untried else f"in {delay:.2f} s")
            if abort.wait(delay):
                break
            self.stats.count("retry", last.reason)
        self.stats.count("failed")
        why = "" if attempts >= self.retry.max_attempts else " (stopped early: another request of the batch failed)"
        target = f"{self.base_url}{path}" if len(self.replicas) == 1 else f"{path} on {self.base_url}"
        raise JudgeError(f"openai: request to {target} failed after {attempts} attempt"
                         f"{'s' if attempts > 1 else ''}{why} (model {self.model!r}); last error: {last}")

    def _run_all(self, jobs: Sequence[Callable[[threading.Event], T]]) -> Iterator[tuple[int, T]]:
        """Run ``jobs`` on the pool and yield ``(index, result)`` as each finishes.

        When a job fails, jobs not yet started are cancelled, the others may finish (their
        results are yielded, so the caller can keep them), and the first error is raised. Calls
        from several threads share the pool; each has its own jobs and abort signal.
        """
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

    # -- the LLMEngine protocol -------------------------------------------------------------------
    def _chat_body(self, conversation: list[dict[str, str]], **options: Any) -> dict[str, Any]:
        return {"model": self.model, "messages": list(conversation), **options}

    def generate(self, conversations: Sequence[list[dict[str, str]]], *, max_new_tokens: int,
                 temperature: float, seed: int) -> Iterator[tuple[int, Generation]]:
        """Chat-complete each conversation; yields ``(index, Generation)`` as each arrives."""

        def job(conversation: list[dict[str, str]]) -> Callable[[threading.Event], Generation]:
            body = self._chat_body(conversation, max_tokens=max_new_tokens, temperature=temperature, seed=seed)

            def call(abort: threading.Event) -> Generation:
                (text, usage), retries = self.post("/chat/completions", body, abort, read_reply)
                if retries:
                    usage["retries"] = retries
                return Generation(text=text, usage=usage)

            return call

        yield from self._run_all([job(c) for c in conversations])

    def next_token_logprobs(self, conversations: Sequence[list[dict[str, str]]], *, assistant_prefix: str,
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]:
        """Log-probabilities of each of ``choices`` as the first token of the reply.

        Asks for one token with ``logprobs``/``top_logprobs``; a choice is matched to a returned
        token ignoring surrounding spaces (``" A"`` counts for ``"A"``), and a choice absent from the
        top alternatives gets ``-inf``. A server that answers without log-probabilities raises
        :class:`LogprobsUnavailable`, which says to use ``mode=generate``. The reply is forced to
        start with ``assistant_prefix`` as described in :func:`prefill_fields`.
        """

        def read(payload: dict[str, Any]) -> dict[str, float]:
            return choice_logprobs(first_token_alternatives(payload, "the server"), choices)

        def job(conversation: list[dict[str, str]]) -> Callable[[threading.Event], dict[str, float]]:
            body = self._chat_body(conversation, max_tokens=1, temperature=0.0, logprobs=True,
                                   top_logprobs=TOP_LOGPROBS)
            if assistant_prefix:
                body.update(prefill_fields(conversation, assistant_prefix))

            def call(abort: threading.Event) -> dict[str, float]:
                return self.post("/chat/completions", body, abort, read)[0]

            return call

        yield from self._run_all([job(c) for c in conversations])

    def answer_logliks(self, conversations: Sequence[list[dict[str, str]]],
                       answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Not offered: chat completions return log-probabilities of generated tokens only, never of
        a given answer (that needs prompt log-probabilities, which the API does not have)."""
        raise NotImplementedError(
            "the openai judge cannot score a given answer's likelihood (chat completions return "
            "log-probabilities of generated tokens only); use mode=generate or mode=logprob")

    def close(self) -> None:
        with self._setup_lock:
            if self._pool is not None:
                self._pool.shutdown(wait=True, cancel_futures=True)
                self._pool = None
            for client in self._clients:
                client.close()
            self._clients = []


# -- reading responses (pure functions) ---------------------------------------------------------------

def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def first_choice(payload: dict[str, Any]) -> dict[str, Any]:
    """``choices[0]`` of a chat completion; :class:`BadResponse` when it is missing or not an object."""
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse(f"has no choices list (choices is {_kind(choices)})")
    if not isinstance(choices[0], dict):
        raise BadResponse(f"choices[0] is {_kind(choices[0])}, not an object")
    return choices[0]


def read_reply(payload: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The reply text and token usage of a chat completion.

    ``message.content`` null is an empty reply (the API allows it; the judgment then fails to
    parse, counted as usual); a missing ``message`` or ``content``, or one of the wrong type, is
    a :class:`BadResponse`.
    """
    message = first_choice(payload).get("message")
    if not isinstance(message, dict):
        raise BadResponse(f"choices[0].message is {_kind(message)}, not an object")
    if "content" not in message:
        raise BadResponse("choices[0].message has no content")
    content = message["content"]
    if content is not None and not isinstance(content, str):
        raise BadResponse(f"choices[0].message.content is {_kind(content)}, not a string")
    return content or "", usage_of(payload)


def usage_of(payload: dict[str, Any], retries: int = 0) -> dict[str, int]:
    """Token counts the server reported (``prompt_tokens``, ``completion_tokens``) and, when the
    request needed any, how many ``retries``. Missing or non-integer counts are left out."""
    usage: dict[str, int] = {}
    reported = payload.get("usage") or {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = reported.get(key) if isinstance(reported, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            usage[key] = value
    if retries:
        usage["retries"] = retries
    return usage


def prefill_fields(conversation: list[dict[str, str]], assistant_prefix: str) -> dict[str, Any]:
    """Request fields that make the reply continue ``assistant_prefix`` instead of starting afresh.

    The prefix is sent as a final, unfinished assistant message with vLLM's chat-template switches
    ``continue_final_message: true`` and ``add_generation_prompt: false`` (SGLang accepts them too,
    and llama.cpp's ``llama-server`` continues a final assistant message by default). A server
    that ignores them — llama-cpp-python's, OpenAI's — closes the assistant turn and opens a new
    one, so the log-probabilities would be those of a fresh reply: use ``mode=generate`` there.
    """
    return {"messages": [*conversation, {"role": "assistant", "content": assistant_prefix}],
            "continue_final_message": True, "add_generation_prompt": False}


def _logprob(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadResponse(f"{where} is {_kind(value)}, not a number")
    return float(value)


def first_token_alternatives(payload: dict[str, Any], where: str = "the server") -> dict[str, float]:
    """``{token: logprob}`` of the alternatives for the first generated token of a chat completion.

    Raises :class:`LogprobsUnavailable` when the response carries no log-probabilities (the
    server does not implement them, or ignores ``logprobs: true``), and :class:`BadResponse`
    when they are there but of the wrong shape.
    """
    logprobs = first_choice(payload).get("logprobs")
    if logprobs is not None and not isinstance(logprobs, dict):
        raise BadResponse(f"choices[0].logprobs is {_kind(logprobs)}, not an object")
    content = (logprobs or {}).get("content") or []
    if not isinstance(content, list):
        raise BadResponse(f"choices[0].logprobs.content is {_kind(content)}, not a list")
    first = content[0] if content else {}
    if not isinstance(first, dict):
        raise BadResponse(f"choices[0].logprobs.content[0] is {_kind(first)}, not an object")
    top = first.get("top_logprobs") or []
    if not isinstance(top, list):
        raise BadResponse(f"top_logprobs is {_kind(top)}, not a list")
    alternatives: dict[str, float] = {}
    for item in top:
        if not isinstance(item, dict):
            raise BadResponse(f"a top_logprobs entry is {_kind(item)}, not an object")
        if isinstance(item.get("token"), str) and item.get("logprob") is not None:
            alternatives[item["token"]] = _logprob(item["logprob"], "a top_logprobs logprob")
    if not alternatives and isinstance(first.get("token"), str) and first.get("logprob") is not None:
        alternatives = {first["token"]: _logprob(first["logprob"], "the first token's logprob")}
    if not alternatives:
        raise LogprobsUnavailable(
            f"{where} returned no logprobs/top_logprobs for a chat completion, so mode=logprob cannot "
            f"work against it; use mode=generate (vLLM, llama.cpp's server and OpenAI return them)")
    return alternatives


def choice_logprobs(alternatives: dict[str, float], choices: Sequence[str]) -> dict[str, float]:
    """Log-probability of each choice among first-token ``alternatives``.

    Tokens are compared with surrounding whitespace removed; when several tokens spell the same
    choice (``"A"`` and ``" A"``) their probabilities add up. A choice no alternative spells gets
    ``-inf`` (it was not among the top alternatives, so its probability is negligible).
    """
    out: dict[str, float] = {}
    for choice in choices:
        matching = [lp for token, lp in alternatives.items() if token.strip() == choice.strip()]
        if not matching:
            out[choice] = float("-inf")
            continue
        top = max(matching)
        out[choice] = top + math.log(sum(math.exp(lp - top) for lp in matching))
    return out


# -- the spec ---------------------------------------------------------------------------------------

#: Engine options of the spec, with their types (the judge's own options are in ``LLM_OPTIONS``).
ENGINE_OPTIONS: dict[str, type] = {"base_url": str, "concurrency": int, "timeout": float, "max_attempts": int,
                                   "backoff": float, "max_backoff": float, "api_key_env": str,
                                   "max_response_bytes": int}


def from_spec(spec: Spec) -> LLMJudge:
    """``openai:MODEL[,base_url=URL[|URL...]][,concurrency=N][,timeout=S][,max_attempts=K][,backoff=S]
    [,max_backoff=S][,max_response_bytes=B][,api_key_env=NAME][,mode=generate|logprob][,template=...]
    [,max_new_tokens=N][,temperature=T][,seed=N][,retries=N]``.

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, else OpenAI's own API; several replicas of the
    same model are ``|``-joined. The key is read from ``$OPENAI_API_KEY`` or the variable
    ``api_key_env`` names; a local server needs none, but a variable named explicitly must be set,
    and OpenAI's own API (no ``base_url`` at all) needs one: without it the spec is refused at
    once instead of failing every request with HTTP 401.
    """
    if len(spec.positional) != 1:
        raise SpecError(f"judge {spec.text or 'openai'!r}: name exactly one model, "
                        f"e.g. openai:meta-llama/Llama-3.1-70B-Instruct,base_url=http://HOST:8000/v1")
    judge_kwargs, rest = split_llm_options(spec, "openai")
    if "api_key" in rest:  # do not echo the value: it is a secret typed where it should not be
        raise SpecError("openai: do not put the API key in the spec (it would end up in shell history and "
                        "results); export it and name the variable with api_key_env=NAME (default OPENAI_API_KEY)")
    options: dict[str, Any] = {}
    for key, value in rest.items():
        if key not in ENGINE_OPTIONS:
            known = ", ".join(sorted([*ENGINE_OPTIONS, *LLM_OPTIONS]))
            raise SpecError(f"openai: unknown parameter {key!r} (known: {known})")
        options[key] = convert_value(value, ENGINE_OPTIONS[key], where=f"openai: {key}")
    if judge_kwargs.get("mode") == "loglik":
        raise SpecError("openai: mode=loglik needs the log-likelihood of a given answer, which chat "
                        "completions do not return; use mode=generate or mode=logprob")
    key_env = options.pop("api_key_env", None)
    api_key = os.environ.get(key_env or DEFAULT_API_KEY_ENV)
    if key_env and not api_key:
        raise SpecError(f"openai: api_key_env={key_env} names an environment variable that is not set")
    retry = RetryPolicy(**{k: options.pop(k) for k in ("max_attempts", "backoff", "max_backoff") if k in options})
    base_url = options.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL")
    if not base_url and not api_key:
        raise SpecError(f"openai: no base_url and no API key: for a local server (vLLM, llama.cpp...) add "
                        f"base_url=http://HOST:PORT/v1 (or set $OPENAI_BASE_URL); for OpenAI's API export "
                        f"{DEFAULT_API_KEY_ENV} (or name the variable with api_key_env=NAME)")
    engine = OpenAIEngine(spec.positional[0], base_url=base_url or DEFAULT_BASE_URL, api_key=api_key,
                          retry=retry, **options)
    return LLMJudge(engine, **judge_kwargs)
