"""A judge on Anthropic's Messages API: ``anthropic:MODEL``.

Spec::

    anthropic:MODEL[,base_url=URL][,concurrency=N][,timeout=S][,max_attempts=K][,backoff=S]
              [,max_backoff=S][,api_key_env=ANTHROPIC_API_KEY][,anthropic_version=2023-06-01]
              [,prompt_cache=true][,price_in=USD][,price_out=USD][,rpm=N][,tpm=N][,template=...][,max_new_tokens=N]
              [,temperature=T][,retries=N][,batch=true][,batch_poll=S][,batch_journal=PATH][,batch_size=N]

The judging itself is :class:`~rankkit.judges.llm.LLMJudge`'s; :class:`AnthropicEngine` turns
conversations into ``POST {base_url}/messages`` requests (``x-api-key``, ``anthropic-version``;
the system prompt, if any, as the top-level ``system``) over the same client as the openai judge
(:class:`~rankkit.judges.http_client.RetryingClient`: concurrency, replicas, retries of 429 with
``retry-after``, 529 "overloaded" and 5xx, key redaction, response cap).

**Verdicts.** The Messages API continues a final assistant message (prefill), so the verdict is
read as on vLLM: after the judge's explanation rankkit writes its own verdict prefix
(``Final verdict: Answer 1:``, trailing whitespace removed as the API requires) and the model
writes the next token (``max_tokens`` :data:`PREFILL_MAX_TOKENS`, temperature 0). The API returns
no log-probabilities, so the score is the **digit the model writes** (a sampled digit, read
one-hot), not an expected value over the digits as with logprobs: judgments are coarser, and
``verdict_path`` is ``prefill``. Nothing a candidate writes is parsed. ``mode=logprob`` (which is
nothing but such distributions) and ``mode=loglik`` are refused. k-way strategies read ``Best:``
the same way, and a listwise ``Ranking:`` place by place (``Ranking: B >``, then the best of the
rest...: k - 1 reads).

**Prompt caching.** With ``prompt_cache=true`` (the default) the judge prompt carries
``cache_control: ephemeral``: the verdict reads resend the same prompt after the explanation, and
read it from the cache at a tenth of the input price (once the prompt reaches the model's minimum
cacheable length, 1024 tokens for Sonnet and Opus); the usage's cache reads and writes are counted
(``cached_tokens``, ``cache_write_tokens``) and priced (:mod:`rankkit.judges.prices`).

**Determinism.** The API has no ``seed``: a regenerated explanation may differ; the cache keeps a
run's judgments, so a rerun reuses them.
"""

from __future__ import annotations

import os
import threading
from typing import Any, Callable, Iterator, Sequence, TypeVar

from rankkit.judges.batch_options import BATCH_OPTIONS, BatchOptions
from rankkit.judges.batches import AnthropicBatches
from rankkit.judges.hosted_verdict import one_hot
from rankkit.judges.http_client import DEFAULT_MAX_RESPONSE_BYTES, BadResponse, RetryingClient, RetryPolicy
from rankkit.judges.llm import LLM_OPTIONS, LLMJudge, split_llm_options
from rankkit.judges.llm_engine import Conversation, Generation, per_row
from rankkit.judges.openai_compat import ChoiceLogprobs
from rankkit.judges.pacing import Pacer
from rankkit.judges.prices import Price, price_for, with_cost
from rankkit.specs import Spec, SpecError, convert_value

T = TypeVar("T")
DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_VERSION = "2023-06-01"
#: Tokens of a verdict read: the digit may come as its own token after a space token.
PREFILL_MAX_TOKENS = 2


class AnthropicEngine(RetryingClient):
    """Sends conversations to ``{base_url}/messages``; see the module docstring.

    model: the model name (``claude-sonnet-4-5``).
    base_url, api_key, concurrency, timeout, retry, jitter_seed, max_response_bytes: the
        client's (:class:`~rankkit.judges.http_client.RetryingClient`).
    version: the ``anthropic-version`` header.
    prompt_cache: mark the judge prompt with ``cache_control`` (see "Prompt caching").
    price: USD per million tokens; each response's usage then carries its cost (``usd_nano``).
    pacer: rate-limit pacing (:mod:`rankkit.judges.pacing`; the spec's ``rpm=``/``tpm=``;
        ``anthropic-ratelimit-*`` headers are honoured either way).
    batch: send each call's requests as one Message Batch (:mod:`rankkit.judges.batches`; ``batch=true``).
    """

    backend = "anthropic"

    def __init__(self, model: str, base_url: str | Sequence[str] = DEFAULT_BASE_URL, api_key: str | None = None,
                 concurrency: int = 4, timeout: float = 120.0, retry: RetryPolicy = RetryPolicy(),
                 jitter_seed: int | None = None, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 version: str = DEFAULT_VERSION, prompt_cache: bool = True, price: Price | None = None,
                 pacer: Pacer | None = None, batch: BatchOptions | None = None):
        super().__init__(base_url, api_key=api_key, concurrency=concurrency, timeout=timeout, retry=retry,
                         jitter_seed=jitter_seed, max_response_bytes=max_response_bytes, pacer=pacer)
        self.model = model
        self.version = version
        self.prompt_cache = prompt_cache
        self.price = price
        #: With ``batch=true``: what sends each engine call's requests as one batch (else None).
        self.batcher = None if batch is None else batch.runner(self, AnthropicBatches())
        self.batch_size = batch.size if batch is not None else 0

    @property
    def fills_batches(self) -> bool:
        """Direct requests stream one by one (nothing is gained by waiting for a full batch); with
        ``batch=true`` the run's dispatcher gathers a whole step of every task into one call."""
        return self.batcher is not None

    @property
    def capacity(self) -> int:
        """Requests usefully in flight: ``concurrency`` per replica, or with ``batch=true`` the
        batch size (``batch_size``)."""
        return self.batch_size if self.batcher is not None else super().capacity

    def __repr__(self) -> str:  # never shows the key
        return (f"AnthropicEngine(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency}, "
                f"api_key={'set' if self._api_key else 'none'})")

    def request_headers(self) -> dict[str, str]:
        headers = {"anthropic-version": self.version}
        if self._api_key:
            headers["x-api-key"] = self._api_key
        return headers

    def identity(self) -> dict[str, Any]:
        """The model name (as for the openai judge, never the address)."""
        return {"model": self.model}

    def request_subject(self) -> str:
        return f"model {self.model!r}"

    # -- requests -----------------------------------------------------------------------------------
    def message_body(self, conversation: Conversation, max_tokens: int, temperature: float,
                     prefill: str | None = None) -> dict[str, Any]:
        """The Messages API body of ``conversation``: system messages joined into ``system``, the
        first user message marked for prompt caching, ``prefill`` (trailing whitespace removed, as
        the API requires) as a final assistant message the reply continues."""
        system = "\n\n".join(m["content"] for m in conversation if m["role"] == "system")
        messages: list[dict[str, Any]] = []
        marked = False
        for message in conversation:
            if message["role"] == "system":
                continue
            content: Any = message["content"]
            if self.prompt_cache and not marked and message["role"] == "user":
                content = [{"type": "text", "text": content, "cache_control": {"type": "ephemeral"}}]
                marked = True
            messages.append({"role": message["role"], "content": content})
        if prefill:
            messages.append({"role": "assistant", "content": prefill.rstrip()})
        body: dict[str, Any] = {"model": self.model, "max_tokens": max_tokens, "temperature": temperature,
                                "messages": messages}
        if system:
            body["system"] = system
        return body

    def _dispatch(self, bodies: Sequence[dict[str, Any]], finish: Callable[[str, dict[str, int]], T]
                  ) -> Iterator[tuple[int, T]]:
        """Send ``bodies`` directly (``concurrency`` at a time) or, with ``batch``, as one Message
        Batch; yields ``(index, finish(text, usage))`` as each arrives (usage with its cost)."""
        if self.batcher is not None:
            for index, (text, usage) in self.batcher.run(bodies, lambda i, payload: read_message(payload)):
                yield index, finish(text, with_cost(usage, self.price, batch=True))
            return

        def job(body: dict[str, Any]) -> Callable[[threading.Event], T]:
            def call(abort: threading.Event) -> T:
                (text, usage), retries = self.post("/messages", body, abort, read_message)
                if retries:
                    usage["retries"] = retries
                return finish(text, with_cost(usage, self.price))

            return call

        yield from self._run_all([job(body) for body in bodies])

    # -- the LLMEngine protocol -----------------------------------------------------------------------
    def generate(self, conversations: Sequence[Conversation], *, max_new_tokens: int,
                 temperature: float, seed: int) -> Iterator[tuple[int, Generation]]:
        """The reply to each conversation (``seed`` is ignored: the API has none)."""
        bodies = [self.message_body(c, max_new_tokens, temperature) for c in conversations]
        yield from self._dispatch(bodies, lambda text, usage: Generation(text=text, usage=usage))

    def next_token_logprobs(self, conversations: Sequence[Conversation], *, assistant_prefix: str | Sequence[str],
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]:
        """The choice the model writes after ``assistant_prefix``, one-hot (0 for it, ``-inf`` for
        the others; all ``-inf`` when it writes none of them): the API has no log-probabilities.
        Each result is a :class:`~rankkit.judges.openai_compat.ChoiceLogprobs` carrying its usage."""
        prefixes = per_row(assistant_prefix, len(conversations))
        bodies = [self.message_body(c, PREFILL_MAX_TOKENS, 0.0, prefill=p) for c, p in zip(conversations, prefixes)]
        yield from self._dispatch(bodies, lambda text, usage: ChoiceLogprobs(one_hot(written_choice(text, choices),
                                                                                     choices), usage))

    #: Reads are the one choice the model writes (one-hot), not a distribution: a listwise
    #: ranking is read place by place (:mod:`rankkit.judges.kway_llm`).
    sampled_reads = True

    def continuation_path(self) -> str:
        """``prefill``: verdicts are the digit the model writes after rankkit's prefix."""
        return "prefill"

    def supports_continuation(self) -> bool:
        """Always: the Messages API continues a final assistant message."""
        return True

    def answer_logliks(self, conversations: Sequence[Conversation], answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Not offered: the Messages API returns no log-probabilities."""
        raise NotImplementedError("the anthropic judge cannot score an answer's likelihood (no log-probabilities)")


# -- reading responses ---------------------------------------------------------------------------------

def read_message(payload: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The text and usage of a Messages API response.

    ``usage.input_tokens`` counts only the uncached input; rankkit's ``prompt_tokens`` is all of
    it (uncached + ``cache_read_input_tokens`` + ``cache_creation_input_tokens``), with the
    cache reads as ``cached_tokens`` and the writes as ``cache_write_tokens``.

    >>> read_message({"content": [{"type": "text", "text": " 7"}],
    ...               "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1}})
    (' 7', {'prompt_tokens': 105, 'completion_tokens': 1, 'cached_tokens': 100})
    """
    content = payload.get("content")
    if not isinstance(content, list):
        raise BadResponse(f"content is {type(content).__name__}, not a list of blocks")
    texts = []
    for block in content:
        if not isinstance(block, dict):
            raise BadResponse("a content block is not an object")
        if block.get("type") == "text":
            if not isinstance(block.get("text"), str):
                raise BadResponse("a text block has no text")
            texts.append(block["text"])
    reported = payload.get("usage") if isinstance(payload.get("usage"), dict) else {}

    def count(key: str) -> int:
        value = reported.get(key)
        return value if isinstance(value, int) and not isinstance(value, bool) else 0

    read, written = count("cache_read_input_tokens"), count("cache_creation_input_tokens")
    usage = {"prompt_tokens": count("input_tokens") + read + written, "completion_tokens": count("output_tokens")}
    if read:
        usage["cached_tokens"] = read
    if written:
        usage["cache_write_tokens"] = written
    return "".join(texts), usage


def written_choice(text: str, choices: Sequence[str]) -> str | None:
    """The choice a prefilled reply starts with (its first non-space character), or None.

    >>> written_choice(" 7/9", [str(d) for d in range(10)]), written_choice("B", ["A", "B"])
    ('7', 'B')
    >>> written_choice(" x", ["1", "2"]) is None
    True
    """
    stripped = text.lstrip()
    for choice in sorted((c.strip() for c in choices), key=len, reverse=True):
        if choice and stripped.startswith(choice):
            return choice
    return None


# -- the spec ------------------------------------------------------------------------------------------

#: Engine options of the spec, with their types (the judge's own options are in ``LLM_OPTIONS``).
ENGINE_OPTIONS: dict[str, type] = {"base_url": str, "concurrency": int, "timeout": float, "max_attempts": int,
                                   "backoff": float, "max_backoff": float, "api_key_env": str,
                                   "max_response_bytes": int, "anthropic_version": str, "prompt_cache": bool,
                                   "price_in": float, "price_out": float, "rpm": float, "tpm": float,
                                   **BATCH_OPTIONS}


def from_spec(spec: Spec) -> LLMJudge:
    """``anthropic:MODEL[,base_url=URL][,...]`` (see the module docstring for the options).

    The key is read from ``$ANTHROPIC_API_KEY`` or the variable ``api_key_env`` names; without a
    key and without ``base_url`` (a proxy that adds it) the spec is refused at once.
    ``mode=logprob``/``mode=loglik`` and ``calibrate=true`` are refused: the API returns no
    log-probabilities.
    """
    if len(spec.positional) != 1:
        raise SpecError(f"judge {spec.text or 'anthropic'!r}: name exactly one model, e.g. anthropic:claude-sonnet-4-5")
    judge_kwargs, rest = split_llm_options(spec, "anthropic")
    if "api_key" in rest:
        raise SpecError("anthropic: do not put the API key in the spec (it would end up in shell history and "
                        "results); export it and name the variable with api_key_env=NAME (default ANTHROPIC_API_KEY)")
    options: dict[str, Any] = {}
    for key, value in rest.items():
        if key not in ENGINE_OPTIONS:
            known = ", ".join(sorted([*ENGINE_OPTIONS, *LLM_OPTIONS]))
            raise SpecError(f"anthropic: unknown parameter {key!r} (known: {known})")
        options[key] = convert_value(value, ENGINE_OPTIONS[key], where=f"anthropic: {key}")
    mode = judge_kwargs.get("mode", "generate")
    if mode != "generate":
        raise SpecError(f"anthropic: mode={mode} needs log-probabilities, which the Messages API does not return; "
                        f"use mode=generate (the verdict is the digit the model writes after rankkit's prefix)")
    key_env = options.pop("api_key_env", None)
    api_key = os.environ.get(key_env or DEFAULT_API_KEY_ENV)
    if key_env and not api_key:
        raise SpecError(f"anthropic: api_key_env={key_env} names an environment variable that is not set")
    base_url = options.pop("base_url", None)
    if not base_url and not api_key:
        raise SpecError(f"anthropic: no API key: export {DEFAULT_API_KEY_ENV} (or name the variable with "
                        f"api_key_env=NAME)")
    retry = RetryPolicy(**{k: options.pop(k) for k in ("max_attempts", "backoff", "max_backoff") if k in options})
    price = price_for(spec.positional[0], options.pop("price_in", None), options.pop("price_out", None))
    version = options.pop("anthropic_version", DEFAULT_VERSION)
    prompt_cache = options.pop("prompt_cache", True)
    pacer = Pacer(options.pop("rpm", None), options.pop("tpm", None))
    batch = BatchOptions.pop_from(options)
    engine = AnthropicEngine(spec.positional[0], base_url=base_url or DEFAULT_BASE_URL, api_key=api_key, retry=retry,
                             version=version, prompt_cache=prompt_cache, price=price, pacer=pacer, batch=batch,
                             **options)
    return LLMJudge(engine, **judge_kwargs)
