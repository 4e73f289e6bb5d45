"""A judge behind any OpenAI-compatible endpoint (vLLM, llama.cpp's server, TGI, OpenAI, hosted APIs).

The spec ``openai:MODEL,...`` builds an :class:`~rankkit.judges.llm.LLMJudge` on :class:`OpenAIRuntime`.
More in ``docs/judges-servers.md``.
"""

from __future__ import annotations

import math
import os
import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

from rankkit.judges.backends import Argument, Option, Settings
from rankkit.judges.base import JudgeError
from rankkit.judges.batch_options import BATCH_OPTIONS, BatchOptions, BatchSwitch
from rankkit.judges.batches import OpenAIBatches
from rankkit.judges.hosted_verdict import (  # hosted APIs: follow-up verdicts, refusals learned
    enum_response_format,
    followup_conversation,
    known_hosted,
    one_hot,
    read_enum_reply,
    refused_field,
)
from rankkit.judges.http_client import (
    DEFAULT_MAX_RESPONSE_BYTES,
    BadResponse,
    HTTPStatusError,
    KeyRefused,
    RetryingClient,
    RetryPolicy,
    client_options,
    logger,
)
from rankkit.judges.llm import llm_backend
from rankkit.judges.llm_runtime import ChoiceLogprobs, Generation, LLMRuntime
from rankkit.judges.pacing import PACING_OPTIONS, Pacer
from rankkit.judges.prices import PRICE_OPTIONS, Price, price_for, with_cost
from rankkit.prompts.protocol import neutralize_special_tokens
from rankkit.specs import Spec, SpecError, parse_spec

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
T = TypeVar("T")
#: How many alternatives ``logprob`` mode asks for at the first answer token (OpenAI's limit is 20;
#: vLLM's default ``--max-logprobs`` is 20 too).
TOP_LOGPROBS = 20


class LogprobsUnavailable(JudgeError):
    """``logprob`` mode cannot work on this server (no logprobs, no continuation): exit 2; use ``mode=generate``."""

    exit_code = 2
    resumable = False


#: The continuation probe: a reply forced to start with ``PROBE_PREFIX`` must go on with
#: ``PROBE_NEXT``; a server that opens a fresh reply instead starts counting at ``PROBE_FRESH``.
PROBE_QUESTION = "Count from 1 to 20, separated by commas. Write nothing else."
PROBE_PREFIX = "1, 2, 3, 4, 5, 6, 7, 8,"
PROBE_NEXT, PROBE_FRESH = "9", "1"
#: The structured-outputs probe (servers without log-probabilities): any digit it returns will do.
ENUM_PROBE_QUESTION = "Which digit comes after 8? Reply with the digit only."


# -- the runtime -------------------------------------------------------------------------------------


class OpenAIRuntime(BatchSwitch, RetryingClient, LLMRuntime):
    """Sends conversations to ``{base_url}/chat/completions``, ``concurrency`` at a time per replica.

    Sending (replicas, concurrency, retries) is :class:`~rankkit.judges.http_client.RetryingClient`'s;
    thread-safe, at most :attr:`capacity` requests in flight.

    model: the model name the server knows (``--served-model-name`` for vLLM).
    base_url: defaults to OpenAI's own API.
    neutralize_special: rewrite chat-template special-token strings in what is sent (default on).
    price: USD per million tokens (:mod:`rankkit.judges.prices`); None: cost not counted.
    pacer: rate-limit pacing (:mod:`rankkit.judges.pacing`).
    batch: send each call's requests as one batch (:mod:`rankkit.judges.batches`).
    """

    backend = "openai"

    def __init__(
        self,
        model: str,
        base_url: str | Sequence[str] = DEFAULT_BASE_URL,
        api_key: str | None = None,
        concurrency: int = 4,
        timeout: float = 120.0,
        retry: RetryPolicy = RetryPolicy(),
        jitter_seed: int | None = None,
        max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
        price: Price | None = None,
        pacer: Pacer | None = None,
        batch: BatchOptions | None = None,
        neutralize_special: bool = True,
    ):
        super().__init__(
            base_url,
            api_key=api_key,
            concurrency=concurrency,
            timeout=timeout,
            retry=retry,
            jitter_seed=jitter_seed,
            max_response_bytes=max_response_bytes,
            pacer=pacer,
        )
        self.model = model
        self.price = price
        self.neutralize_special = neutralize_special
        #: With ``batch=true``: what sends each runtime call's requests as one batch (else None).
        self.batcher = None if batch is None else batch.runner(self, OpenAIBatches())
        self.batch_size = batch.size if batch is not None else 0
        # How verdicts are read (prefix_read) is found by probe requests, once per runtime
        # (so once per judge), before the first read that needs it.
        self._probe_lock = threading.Lock()
        self._probe_done = False
        self._path: str | None = None
        # What the server refused, learned from HTTP 400s and kept for the run (_send_chat).
        self._learned_lock = threading.Lock()
        self._dropped: set[str] = set()
        self._completion_tokens_field = "max_tokens"
        self._prefill_fields = False  # whether continuations need vLLM's chat-template switches
        self._prefill_fields_refused = False
        self._logprobs_refused = False

    def __repr__(self) -> str:  # never shows the key
        key = "set" if self._api_key else "none"
        return (
            f"OpenAIRuntime(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency}, "
            f"timeout={self.timeout}, api_key={key})"
        )

    def identity(self) -> dict[str, Any]:
        """``{"model": ...}``, plus ``"neutralize_special": false`` when off; never ``base_url``."""
        return {"model": self.model} if self.neutralize_special else {"model": self.model, "neutralize_special": False}

    def request_subject(self) -> str:
        """``model 'NAME'``: what error messages call a request's target."""
        return f"model {self.model!r}"

    # -- requests, and what the server refuses ----------------------------------------------------
    def _sent(self, text: str) -> str:
        """``text`` as sent: special-token strings neutralised unless ``neutralize_special`` is off."""
        return neutralize_special_tokens(text) if self.neutralize_special else text

    def _chat_body(self, conversation: list[dict[str, str]], **options: Any) -> dict[str, Any]:
        messages = [{**message, "content": self._sent(message["content"])} for message in conversation]
        return {"model": self.model, "messages": messages, **options}

    def _adapted(self, body: dict[str, Any]) -> dict[str, Any]:
        """``body`` as this server takes it: fields it refused dropped, ``max_tokens`` renamed."""
        with self._learned_lock:
            adapted = {key: value for key, value in body.items() if key not in self._dropped}
            if "max_tokens" in adapted and self._completion_tokens_field != "max_tokens":
                adapted[self._completion_tokens_field] = adapted.pop("max_tokens")
        return adapted

    def _learn_refusal(self, field: str) -> bool:
        """Adapt to a refused ``field`` (HTTP 400): True when resendable without it, else LogprobsUnavailable."""
        with self._learned_lock:
            if field in PREFILL_SWITCHES:
                self._prefill_fields_refused = True
                raise LogprobsUnavailable(
                    f"the server refuses {field!r}, so it cannot be asked to continue a final assistant message"
                )
            if field in ("logprobs", "top_logprobs"):
                self._logprobs_refused = True
                raise LogprobsUnavailable(f"the server refuses {field!r}: the model returns no log-probabilities")
            # (already learned from a request sent at the same time: sending again adapts it too)
            if field == "max_tokens":
                self._completion_tokens_field = "max_completion_tokens"  # OpenAI's reasoning models
                return True
            if field in DROPPABLE_FIELDS:
                self._dropped.add(field)
                return True
            return False

    def _send_chat(
        self, body: dict[str, Any], abort: threading.Event | None, read: Callable[[dict[str, Any]], Any]
    ) -> tuple[Any, int]:
        """POST a chat completion, dropping or renaming for the run any field the server refuses with HTTP 400."""
        retries = 0
        while True:
            try:
                result, used = self.post("/chat/completions", self._adapted(body), abort, read)
                return result, retries + used
            except HTTPStatusError as err:
                field = refused_field(err.text) if err.status == 400 else None
                if field is None or retries >= MAX_REFUSALS or not self._learn_refusal(field):
                    raise
                logger.info(
                    "openai: %s does not take %r; sending the request without it from now on", self.base_url, field
                )
                retries += 1

    # -- the LLMRuntime protocol -------------------------------------------------------------------
    def _dispatch(
        self,
        requests: Sequence[tuple[dict[str, Any], Callable[[dict[str, Any]], tuple[Any, dict[str, int]]]]],
        finish: Callable[[Any, dict[str, int]], T],
    ) -> Iterator[tuple[int, T]]:
        """Send ``(body, read)`` requests (direct or batched); yield ``(index, finish(value, usage))`` as they come."""
        if self.batcher is not None:
            bodies = [self._adapted(body) for body, _ in requests]
            for index, (value, usage) in self.batcher.run(bodies, lambda i, payload: requests[i][1](payload)):
                yield index, finish(value, with_cost(usage, self.price, batch=True))
            return

        def job(
            body: dict[str, Any], read: Callable[[dict[str, Any]], tuple[Any, dict[str, int]]]
        ) -> Callable[[threading.Event], T]:
            def call(abort: threading.Event) -> T:
                (value, usage), retries = self._send_chat(body, abort, read)
                if retries:
                    usage["retries"] = usage.get("retries", 0) + retries
                return finish(value, with_cost(usage, self.price))

            return call

        yield from self._run_all([job(body, read) for body, read in requests])

    def generate(
        self, conversations: Sequence[list[dict[str, str]]], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Chat-complete each conversation; yields ``(index, Generation)`` as each arrives.

        ``max_new_tokens`` is sent as ``max_tokens``.
        """
        requests = [
            (self._chat_body(c, max_tokens=max_new_tokens, temperature=temperature, seed=seed), read_reply)
            for c in conversations
        ]
        yield from self._dispatch(requests, lambda text, usage: Generation(text=text, usage=usage))

    def next_token_logprobs(
        self,
        conversations: Sequence[list[dict[str, str]]],
        *,
        prefixes: Sequence[str],
        choices: Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Yield ``(index, ChoiceLogprobs)``: each choice's log-probability as first token after its prefix.

        Read as :attr:`prefix_read` finds (continuation, follow-up turn, or constrained one-hot reply);
        tokens match ignoring surrounding spaces; a choice outside the top alternatives gets ``-inf``.

        Raises
        ------
        LogprobsUnavailable
            The server offers no way to read them (use ``mode=generate``).
        """
        path = self.prefix_read if any(prefixes) else None
        if any(prefixes) and path is None:
            self.check_continuation()  # raises, naming why
        rows = zip(conversations, prefixes, choices, strict=True)
        requests = [self._read_request(c, p, tuple(row), path) for c, p, row in rows]
        yield from self._dispatch(requests, ChoiceLogprobs)

    def _read_request(
        self, conversation: list[dict[str, str]], prefix: str, choices: Sequence[str], path: str | None
    ) -> tuple[dict[str, Any], Callable[[dict[str, Any]], tuple[dict[str, float], dict[str, int]]]]:
        """The request that reads ``choices`` after ``prefix`` by ``path``, and how to read its response."""
        if prefix and path == "continuation":
            body = self._chat_body(
                conversation, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=TOP_LOGPROBS
            )
            body.update(prefill_fields(body["messages"], self._sent(prefix), switches=self._prefill_fields))
        else:
            messages = followup_conversation(conversation, prefix, choices) if prefix else list(conversation)
            if path == "followup_enum":  # a reply constrained to the choices by structured outputs: one-hot
                body = self._chat_body(
                    messages, max_tokens=ENUM_MAX_TOKENS, temperature=0.0, response_format=enum_response_format(choices)
                )

                def read_enum(payload: dict[str, Any]) -> tuple[dict[str, float], dict[str, int]]:
                    text, usage = read_reply(payload)
                    return one_hot(read_enum_reply(text), choices), usage

                return body, read_enum
            body = self._chat_body(messages, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=TOP_LOGPROBS)

        def read(payload: dict[str, Any]) -> tuple[dict[str, float], dict[str, int]]:
            return choice_logprobs(first_token_alternatives(payload, "the server"), choices), usage_of(payload)

        return body, read

    # -- how verdicts are read: the probes ----------------------------------------------------------
    @property
    def prefix_read(self) -> str | None:  # type: ignore[override]  # probed on first use
        """How verdicts are read, probed once: ``continuation``, ``followup``, ``followup_enum`` or None (parse text).

        The probe forces "1, 2, ..., 8," and checks whether the reply continues with ``9``; vLLM's
        switches are tried only where :meth:`_may_take_switches`.
        """
        with self._probe_lock:
            if not self._probe_done:
                self._path = self._probe()
                self._probe_done = True
            return self._path

    def _probe_alternatives(self, switches: bool) -> dict[str, float] | None:
        conversation = [{"role": "user", "content": PROBE_QUESTION}]
        body = self._chat_body(conversation, max_tokens=1, temperature=0.0, logprobs=True, top_logprobs=TOP_LOGPROBS)
        body.update(prefill_fields(conversation, PROBE_PREFIX, switches=switches))
        try:
            return self._send_chat(body, None, lambda payload: first_token_alternatives(payload, "the server"))[0]
        except LogprobsUnavailable:
            return None
        except HTTPStatusError as err:
            if err.status != 400:
                raise
            return None  # e.g. a server that refuses a final assistant message: it cannot continue one

    def _fresh_logprobs(self) -> bool:
        """Whether a fresh reply comes with log-probabilities (when the prefix probe could not tell)."""
        body = self._chat_body(
            [{"role": "user", "content": ENUM_PROBE_QUESTION}],
            max_tokens=1,
            temperature=0.0,
            logprobs=True,
            top_logprobs=TOP_LOGPROBS,
        )
        try:
            self._send_chat(body, None, lambda payload: first_token_alternatives(payload, "the server"))
        except LogprobsUnavailable:
            return False
        except HTTPStatusError as err:
            if err.status != 400:
                raise
            return False
        return True

    def _probe(self) -> str | None:
        alternatives = self._probe_alternatives(switches=False)
        if alternatives is not None and continues_probe(alternatives):
            return "continuation"
        if self._may_take_switches():
            switched = self._probe_alternatives(switches=True)
            if switched is not None and continues_probe(switched):
                self._prefill_fields = True
                return "continuation"
        if alternatives is not None or (not self._logprobs_refused and self._fresh_logprobs()):
            return "followup"
        digits = [str(d) for d in range(10)]
        try:
            value = self._send_chat(
                self._chat_body(
                    [{"role": "user", "content": ENUM_PROBE_QUESTION}],
                    max_tokens=ENUM_MAX_TOKENS,
                    temperature=0.0,
                    response_format=enum_response_format(digits),
                ),
                None,
                lambda payload: read_reply(payload)[0],
            )[0]
        except KeyRefused:
            raise
        except HTTPStatusError:
            return None
        return "followup_enum" if read_enum_reply(value) in digits else None

    def _may_take_switches(self) -> bool:
        """Whether vLLM's switches may be tried: not on a hosted API, a refusing server, or an OpenAI-owned model."""
        if self._prefill_fields_refused or any(known_hosted(replica.url) for replica in self.replicas):
            return False
        return model_owner(self._models_listing(), self.model) not in OPENAI_OWNERS

    def _models_listing(self) -> Any:
        """``GET /models`` of the first replica (None when it fails: the listing only hints)."""
        self._ensure_started()
        try:
            response = self._clients[0].get("/models", timeout=min(self.timeout, 10.0))
            return response.json() if response.status_code == 200 else None
        except Exception:  # any failure means "no hint"
            return None

    def check_continuation(self) -> None:
        """Refuse, before any judgment, a server whose verdicts can only be read by parsing text.

        Raises
        ------
        LogprobsUnavailable
            :attr:`prefix_read` found no way; the message says to use ``mode=generate``.
        """
        if self.prefix_read is None:
            raise LogprobsUnavailable(
                "the server does not continue a final assistant message, returns no log-probabilities "
                "and refuses structured outputs, so mode=logprob has nothing to read; use mode=generate "
                "(its verdict is then parsed from free text, the weaker fallback)"
            )

    def answer_logliks(
        self, conversations: Sequence[list[dict[str, str]]], answers: Sequence[str]
    ) -> Iterator[tuple[int, float]]:
        """Not offered (chat completions have no prompt log-probabilities): always raises."""
        raise NotImplementedError(
            "the openai judge cannot score a given answer's likelihood (chat completions return "
            "log-probabilities of generated tokens only); use mode=generate or mode=logprob"
        )


#: vLLM's chat-template switches that make a reply continue a final assistant message.
PREFILL_SWITCHES = ("continue_final_message", "add_generation_prompt")
#: Fields a request still works without when a server refuses them (the server's default then applies).
DROPPABLE_FIELDS = ("seed", "temperature", "top_p")
#: ``owned_by`` values of OpenAI's own ``/models`` listing: such a server never takes vLLM's switches.
OPENAI_OWNERS = ("openai", "system", "openai-internal")
#: Refused fields one request may learn from before its refusal is final (a server that keeps
#: refusing what it was just sent without is not adapted to forever).
MAX_REFUSALS = 4
#: Tokens of a structured one-value reply (``{"value": "7"}``).
ENUM_MAX_TOKENS = 16


def model_owner(listing: Any, model: str) -> str | None:
    """``owned_by`` of ``model`` (else of the first model) in a ``/models`` listing, or None.

    Examples
    --------
    >>> model_owner({"data": [{"id": "m", "owned_by": "vllm"}]}, "m")
    'vllm'
    """
    entries = listing.get("data") if isinstance(listing, dict) else None
    if not isinstance(entries, list) or not entries:
        return None
    entry = next((e for e in entries if isinstance(e, dict) and e.get("id") == model), entries[0])
    owner = entry.get("owned_by") if isinstance(entry, dict) else None
    return owner if isinstance(owner, str) else None


# -- reading responses (pure functions) ---------------------------------------------------------------


def _kind(value: Any) -> str:
    return "null" if value is None else type(value).__name__


def first_choice(payload: dict[str, Any]) -> dict[str, Any]:
    """``choices[0]`` of a chat completion; :class:`BadResponse` when missing or not an object."""
    choices = payload.get("choices")
    if not isinstance(choices, list) or not choices:
        raise BadResponse(f"has no choices list (choices is {_kind(choices)})")
    if not isinstance(choices[0], dict):
        raise BadResponse(f"choices[0] is {_kind(choices[0])}, not an object")
    return choices[0]


def read_reply(payload: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The reply text and token usage of a chat completion.

    Null ``content`` is an empty reply; a missing or mistyped ``message``/``content`` is a :class:`BadResponse`.
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
    """The token counts the server reported (invalid ones left out), plus ``retries`` when nonzero."""
    usage: dict[str, int] = {}
    reported = payload.get("usage") or {}
    for key in ("prompt_tokens", "completion_tokens"):
        value = reported.get(key) if isinstance(reported, dict) else None
        if isinstance(value, int) and not isinstance(value, bool):
            usage[key] = value
    details = reported.get("prompt_tokens_details") if isinstance(reported, dict) else None
    cached = details.get("cached_tokens") if isinstance(details, dict) else None
    if isinstance(cached, int) and not isinstance(cached, bool) and cached > 0:
        usage["cached_tokens"] = cached  # OpenAI's prompt caching: billed at the cached-input price
    if retries:
        usage["retries"] = retries
    return usage


def prefill_fields(conversation: list[dict[str, str]], assistant_prefix: str, switches: bool = True) -> dict[str, Any]:
    """Request fields making the reply continue ``assistant_prefix``: a final unfinished assistant message.

    With ``switches``, adds vLLM's ``continue_final_message: true`` and ``add_generation_prompt: false``
    (SGLang takes them; llama-server continues without them). Servers that ignore them read a fresh reply.
    """
    fields: dict[str, Any] = {"messages": [*conversation, {"role": "assistant", "content": assistant_prefix}]}
    if switches:
        fields.update(continue_final_message=True, add_generation_prompt=False)
    return fields


def _logprob(value: Any, where: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise BadResponse(f"{where} is {_kind(value)}, not a number")
    return float(value)


def first_token_alternatives(payload: dict[str, Any], where: str = "the server") -> dict[str, float]:
    """``{token: logprob}`` of the first generated token's alternatives.

    Raises :class:`LogprobsUnavailable` when there are none, :class:`BadResponse` on a wrong shape;
    ``where`` names the request in messages.
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
            f"work against it; use mode=generate (vLLM, llama.cpp's server and OpenAI return them)"
        )
    return alternatives


def continues_probe(alternatives: dict[str, float]) -> bool:
    """Whether the probe reply continues ``PROBE_PREFIX`` (``PROBE_NEXT`` or a lone space beats ``PROBE_FRESH``).

    Examples
    --------
    >>> continues_probe({" 9": -0.1, "1": -4.0}), continues_probe({" ": -0.2, "1": -3.0})
    (True, True)
    >>> continues_probe({"1": -0.1, " ": -2.0})
    False
    """
    expected = choice_logprobs(alternatives, [PROBE_NEXT, PROBE_FRESH])
    top = max(alternatives, key=alternatives.get)
    return expected[PROBE_NEXT] > expected[PROBE_FRESH] or (
        top.strip() == "" and alternatives[top] > expected[PROBE_FRESH]
    )


def choice_logprobs(alternatives: dict[str, float], choices: Sequence[str]) -> dict[str, float]:
    """Each choice's log-probability among first-token ``alternatives``.

    Tokens compare stripped; tokens spelling the same choice add up; a choice none spells gets ``-inf``.
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

#: The runtime's options, besides the judge's :data:`~rankkit.judges.llm.LLM_OPTIONS` (only
#: ``neutralize_special=false`` changes the fingerprint: see "Identity" in ``docs/judges-servers.md``).
OPENAI_OPTIONS: tuple[Option, ...] = (
    *client_options(
        "the server, |-joined replicas (default: $OPENAI_BASE_URL, else OpenAI's API)", DEFAULT_API_KEY_ENV
    ),
    *PRICE_OPTIONS,
    *PACING_OPTIONS,
    *BATCH_OPTIONS,
    Option(
        "neutralize_special",
        bool,
        True,
        "rewrite chat-template special-token strings in what is sent "
        "(false: send text untouched; then part of the fingerprint)",
    ),
)


def _read_spec(text: str) -> Spec:
    """Parse an ``openai:`` spec, refusing an API key in it without echoing the value."""
    spec = parse_spec(text)
    if "api_key" in spec.options:  # a secret typed where it should not be: it would end up in shell history and results
        raise SpecError(
            "openai: do not put the API key in the spec (it would end up in shell history and "
            "results); export it and name the variable with api_key_env=NAME (default OPENAI_API_KEY)"
        )
    return spec


def _openai_runtime(settings: Settings) -> OpenAIRuntime:
    """The runtime of an ``openai:MODEL[,base_url=URL[|URL...]][,OPTION=VALUE...]`` spec.

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, else OpenAI's API (``|`` joins replicas). The key
    comes from ``$OPENAI_API_KEY`` or ``api_key_env``; OpenAI's own API without one is refused at once.
    ``price_in``/``price_out`` are USD per million tokens; ``rpm``/``tpm`` pace requests; ``batch=true``
    uses OpenAI's Batch API at half price.
    """
    if settings["mode"] == "loglik":
        raise SpecError(
            "openai: mode=loglik needs the log-likelihood of a given answer, which chat "
            "completions do not return; use mode=generate or mode=logprob"
        )
    key_env = settings["api_key_env"]
    api_key = os.environ.get(key_env or DEFAULT_API_KEY_ENV)
    if key_env and not api_key:
        raise SpecError(f"openai: api_key_env={key_env} names an environment variable that is not set")
    base_url = settings["base_url"] or os.environ.get("OPENAI_BASE_URL")
    if not base_url and not api_key:
        raise SpecError(
            f"openai: no base_url and no API key: for a local server (vLLM, llama.cpp...) add "
            f"base_url=http://HOST:PORT/v1 (or set $OPENAI_BASE_URL); for OpenAI's API export "
            f"{DEFAULT_API_KEY_ENV} (or name the variable with api_key_env=NAME)"
        )
    runtime = OpenAIRuntime(
        settings.argument,
        base_url=base_url or DEFAULT_BASE_URL,
        api_key=api_key,
        retry=RetryPolicy(**settings.subset(("max_attempts", "backoff", "max_backoff"))),
        price=price_for(settings.argument, settings["price_in"], settings["price_out"]),
        pacer=Pacer(settings["rpm"], settings["tpm"]),
        batch=BatchOptions.from_settings(settings),
        **settings.subset(("concurrency", "timeout", "max_response_bytes", "neutralize_special")),
    )
    runtime.api_key_env = key_env or DEFAULT_API_KEY_ENV  # named if the server refuses the key
    return runtime


#: ``openai:MODEL[,option=value...]``: any OpenAI-compatible chat-completions server. Building it
#: sends nothing (the continuation probe waits for the first logprob request), so the dry run builds it.
BACKEND = llm_backend(
    "openai",
    "any OpenAI-compatible HTTP server (OpenAI, hosted APIs, vLLM, llama.cpp, SGLang)",
    _openai_runtime,
    options=OPENAI_OPTIONS,
    argument=Argument("model", "openai:meta-llama/Llama-3.1-70B-Instruct,base_url=http://HOST:8000/v1"),
    read=_read_spec,
    network=True,
)
