"""A judge behind any OpenAI-compatible HTTP endpoint: vLLM, llama.cpp's server, TGI, OpenAI itself.

Spec::

    openai:MODEL,base_url=http://HOST:PORT/v1,concurrency=8,timeout=60,max_attempts=5,
           api_key_env=OPENAI_API_KEY,mode=generate,template=...

The judging itself — prompt templates, the modes ``generate`` / ``logprob``, the strict parser
and its retry, the fingerprint — is :class:`rankkit.judges.llm.LLMJudge`, shared with the Hugging
Face judge. This module only supplies the engine that turns conversations into chat-completion
requests, and it is built for scale-out deployments:

**Concurrency.** ``concurrency=N`` requests are in flight at once (a thread pool over one pooled
``httpx.Client``). The match layer hands the judge everything a strategy knows at once (a
knockout round, all pairs of a tournament), so N requests keep N server slots busy. Results are
yielded the moment each response arrives, whatever the order, so each judgment reaches the cache
at once.

**Robustness.** Each request has a timeout. Connection errors, timeouts, HTTP 429 and 5xx are
retried with exponential backoff and jitter, honouring the server's ``Retry-After``; after
``max_attempts`` attempts the batch stops with a :class:`JudgeError` that names the cause. Before
raising, requests already in flight are allowed to finish and their results are yielded, so every
judgment the server answered is cached and a rerun continues where this one stopped. Retries are
counted per judgment (``usage["retries"]``, summed per strategy into ``Cost.retries``) and in
:attr:`OpenAIEngine.stats`.

**Modes.** ``generate`` works against any chat-completions server. ``logprob`` needs the
first-token ``logprobs``/``top_logprobs`` of a reply that continues a forced prefix (``Score: ``):
vLLM, SGLang and llama.cpp's ``llama-server`` do that (see :func:`prefill_fields`); a server that
returns no log-probabilities stops the run with :class:`LogprobsUnavailable`, whose message says
to use ``mode=generate``; llama-cpp-python's server returns them but cannot continue a prefix, so
use ``mode=generate`` with it too. ``loglik`` (likelihood of a given answer) is not offered: chat
completions never score a given text.

**Secrets.** The API key is read from the environment variable ``api_key_env`` (default
``OPENAI_API_KEY``; a local server needs none). It is sent only as the ``Authorization`` header:
it is not part of the spec, the fingerprint, the cache, the results, ``repr`` or any message.

**Identity.** The fingerprint names the *model*, not ``base_url``: the same model served at
another address (a vLLM replica, a moved deployment, a proxy) gives interchangeable judgments, so
its cached judgments stay valid. The flip side: serve different weights under different model
names (vLLM's ``--served-model-name``), or cached judgments of one will be reused for the other.
"""

from __future__ import annotations

import email.utils
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


class LogprobsUnavailable(JudgeError):
    """The server answered but without ``logprobs``: ``logprob`` mode cannot work against it."""


# -- the engine -------------------------------------------------------------------------------------

class OpenAIEngine:
    """Sends conversations to ``{base_url}/chat/completions``, ``concurrency`` at a time.

    model: the model name the server knows (``--served-model-name`` for vLLM; llama.cpp's server
        serves one model whatever the name).
    base_url: the API root, e.g. ``http://127.0.0.1:8000/v1``.
    api_key: sent as ``Authorization: Bearer ...`` when given; kept out of every message.
    concurrency: requests in flight at once.
    timeout: seconds one attempt may take to connect, and then between bytes of the response.
    retry: the :class:`RetryPolicy`.
    jitter_seed: seeds the backoff jitter (so tests are reproducible; it never affects judgments).
    """

    backend = "openai"

    def __init__(self, model: str, base_url: str = DEFAULT_BASE_URL, api_key: str | None = None,
                 concurrency: int = 4, timeout: float = 120.0, retry: RetryPolicy = RetryPolicy(),
                 jitter_seed: int | None = None):
        if concurrency < 1:
            raise SpecError(f"openai: concurrency must be >= 1, got {concurrency}")
        if timeout <= 0:
            raise SpecError(f"openai: timeout must be > 0 seconds, got {timeout}")
        self.model = model
        self.base_url = base_url.rstrip("/")
        self.concurrency = concurrency
        self.timeout = timeout
        self.retry = retry
        self.stats = RequestStats()
        self._api_key = api_key or None
        self._rng = random.Random(jitter_seed)
        self._rng_lock = threading.Lock()
        self._client: httpx.Client | None = None
        self._pool: ThreadPoolExecutor | None = None
        self._setup_lock = threading.Lock()

    def __repr__(self) -> str:  # never shows the key
        key = "set" if self._api_key else "none"
        return (f"OpenAIEngine(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency}, "
                f"timeout={self.timeout}, api_key={key})")

    def identity(self) -> dict[str, Any]:
        """The model name only: see "Identity" in the module docstring for why not ``base_url``."""
        return {"model": self.model}

    # -- plumbing ---------------------------------------------------------------------------------
    def _ensure_started(self) -> tuple["httpx.Client", ThreadPoolExecutor]:
        with self._setup_lock:
            if self._client is None:
                import httpx  # heavy-ish; only when a request is made

                headers = {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}
                self._client = httpx.Client(
                    base_url=self.base_url, headers=headers, timeout=httpx.Timeout(self.timeout),
                    limits=httpx.Limits(max_connections=self.concurrency,
                                        max_keepalive_connections=self.concurrency),
                )
                self._pool = ThreadPoolExecutor(max_workers=self.concurrency, thread_name_prefix="rankkit-http")
            assert self._pool is not None
            return self._client, self._pool

    def _wait_seconds(self, retry: int, retry_after: float | None) -> float:
        # one generator shared by the pool's threads; drawing is cheap, so a lock is simplest
        with self._rng_lock:
            return self.retry.wait(retry, retry_after, self._rng)

    def _attempt(self, client: "httpx.Client", path: str, body: dict[str, Any]) -> dict[str, Any]:
        """One HTTP attempt: the decoded JSON, or :class:`RetryableError` / :class:`JudgeError`."""
        import httpx

        self.stats.count("attempts")
        try:
            response = client.post(path, json=body)
        except httpx.TimeoutException as err:
            raise RetryableError("timeout", f"no response within {self.timeout:g} s ({type(err).__name__})") from None
        except httpx.TransportError as err:
            raise RetryableError("connection", redact(f"{type(err).__name__}: {err}", self._api_key)) from None
        if response.status_code != 200:
            detail = redact(response.text[:300].strip(), self._api_key)
            message = f"HTTP {response.status_code} from {self.base_url}{path}: {detail}"
            reason = retry_reason(response.status_code)
            if reason is None:
                raise JudgeError(message)
            raise RetryableError(reason, message, parse_retry_after(response.headers.get("retry-after")))
        try:
            payload = response.json()
        except ValueError:
            raise RetryableError("bad_response", f"response from {self.base_url}{path} is not JSON: "
                                 f"{redact(response.text[:200], self._api_key)!r}") from None
        if not isinstance(payload, dict) or not payload.get("choices"):
            raise RetryableError("bad_response", f"response from {self.base_url}{path} has no choices: "
                                 f"{redact(str(payload)[:200], self._api_key)}")
        return payload

    def post(self, path: str, body: dict[str, Any], abort: threading.Event | None = None) -> tuple[dict[str, Any], int]:
        """POST ``body`` to ``path`` with retries; returns (JSON response, retries it took).

        ``abort`` set by another thread (a sibling request gave up) stops retrying early: the
        batch is failing anyway, and waiting would only delay the error.
        """
        client, _ = self._ensure_started()
        abort = abort or threading.Event()
        attempts = 0
        while True:
            attempts += 1
            try:
                payload = self._attempt(client, path, body)
            except RetryableError as err:
                last = err
            except JudgeError:
                self.stats.count("failed")
                raise
            else:
                self.stats.count("succeeded")
                return payload, attempts - 1
            if attempts >= self.retry.max_attempts or abort.is_set():
                break
            delay = self._wait_seconds(attempts, last.retry_after)
            logger.warning("openai: %s (attempt %d of %d); retrying in %.2f s",
                           last, attempts, self.retry.max_attempts, delay)
            if abort.wait(delay):
                break
            self.stats.count("retry", last.reason)
        self.stats.count("failed")
        why = "" if attempts >= self.retry.max_attempts else " (stopped early: another request of the batch failed)"
        raise JudgeError(f"openai: request to {self.base_url}{path} failed after {attempts} attempt"
                         f"{'s' if attempts > 1 else ''}{why} (model {self.model!r}); last error: {last}")

    def _run_all(self, jobs: Sequence[Callable[[threading.Event], T]]) -> Iterator[tuple[int, T]]:
        """Run ``jobs`` on the pool and yield ``(index, result)`` as each finishes.

        When a job fails, jobs not yet started are cancelled, the others may finish (their
        results are yielded, so the caller can keep them), and the first error is raised.
        """
        _, pool = self._ensure_started()
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
                payload, retries = self.post("/chat/completions", body, abort)
                message = payload["choices"][0].get("message") or {}
                return Generation(text=message.get("content") or "", usage=usage_of(payload, retries))

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

        def job(conversation: list[dict[str, str]]) -> Callable[[threading.Event], dict[str, float]]:
            body = self._chat_body(conversation, max_tokens=1, temperature=0.0, logprobs=True,
                                   top_logprobs=TOP_LOGPROBS)
            if assistant_prefix:
                body.update(prefill_fields(conversation, assistant_prefix))

            def call(abort: threading.Event) -> dict[str, float]:
                payload, _ = self.post("/chat/completions", body, abort)
                return choice_logprobs(first_token_alternatives(payload, self.base_url), choices)

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
            if self._client is not None:
                self._client.close()
                self._client = None


# -- reading responses (pure functions) ---------------------------------------------------------------

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


def first_token_alternatives(payload: dict[str, Any], where: str = "the server") -> dict[str, float]:
    """``{token: logprob}`` of the alternatives for the first generated token of a chat completion.

    Raises :class:`LogprobsUnavailable` when the response carries no log-probabilities (the
    server does not implement them, or ignores ``logprobs: true``).
    """
    choice = payload["choices"][0]
    content = ((choice.get("logprobs") or {}).get("content")) or []
    first = content[0] if content else {}
    alternatives = {item["token"]: float(item["logprob"]) for item in first.get("top_logprobs") or []
                    if "token" in item and item.get("logprob") is not None}
    if not alternatives and "token" in first and first.get("logprob") is not None:
        alternatives = {first["token"]: float(first["logprob"])}
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
                                   "backoff": float, "max_backoff": float, "api_key_env": str}


def from_spec(spec: Spec) -> LLMJudge:
    """``openai:MODEL[,base_url=...][,concurrency=N][,timeout=S][,max_attempts=K][,backoff=S]
    [,max_backoff=S][,api_key_env=NAME][,mode=generate|logprob][,template=...][,max_new_tokens=N]
    [,temperature=T][,seed=N][,retries=N]``.

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, else OpenAI's own API. The key is read from
    ``$OPENAI_API_KEY`` or the variable ``api_key_env`` names; a local server needs none, but a
    variable named explicitly must be set.
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
    base_url = options.pop("base_url", None) or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL
    engine = OpenAIEngine(spec.positional[0], base_url=base_url, api_key=api_key, retry=retry, **options)
    return LLMJudge(engine, **judge_kwargs)
