"""A judge behind any OpenAI-compatible HTTP endpoint: vLLM, llama.cpp's server, TGI, OpenAI itself, hosted APIs.

:class:`OpenAIRuntime` turns conversations into chat-completion requests and reads verdicts by
continuation or follow-up turn; the spec ``openai:MODEL,...`` builds an
:class:`~rankkit.judges.llm.LLMJudge` on it. The HTTP client is :mod:`rankkit.judges.http_client`.

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
from rankkit.judges.llm_runtime import ChoiceLogprobs, Generation, LLMRuntime, choices_per_row, per_row
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
    """``logprob`` mode cannot work against this server: it answers without ``logprobs``, or it
    does not continue a final assistant message (see :func:`prefill_fields`). A rerun fails the
    same way, so the command line exits 2 (change the command: ``mode=generate``)."""

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

    The :class:`~rankkit.judges.llm_runtime.LLMRuntime` of the openai judge: it builds chat
    completion requests and reads their responses; sending them (replicas, concurrency, retries)
    is :class:`~rankkit.judges.http_client.RetryingClient`'s.

    model: the model name the server knows (``--served-model-name`` for vLLM; llama.cpp's server
        serves one model whatever the name).
    base_url, api_key, concurrency, timeout, retry, jitter_seed, max_response_bytes: the
        client's (:class:`~rankkit.judges.http_client.RetryingClient`); ``base_url`` defaults to
        OpenAI's own API.
    neutralize_special: rewrite chat-template special-token strings in what is sent (the
        default; see "Special-token strings" in ``docs/judges-servers.md``).
    price: USD per million tokens (:mod:`rankkit.judges.prices`); each response's usage then
        carries its cost (``usd_nano``). None: the cost is not counted.
    pacer: rate-limit pacing (:mod:`rankkit.judges.pacing`; the spec's ``rpm=``/``tpm=``).
    batch: send each call's requests as one batch (:mod:`rankkit.judges.batches`; ``batch=true``).

    ``generate`` and ``next_token_logprobs`` may be called from several threads at once: all
    calls share the client's pool of :attr:`capacity` workers, and each attempt holds a replica
    slot, so at most ``concurrency`` requests are in flight per replica and :attr:`capacity` in
    total.
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
        """The model name only: see "Identity" in ``docs/judges-servers.md`` for why not ``base_url``
        (nor how many replicas serve it); with ``neutralize_special=false`` that too (absent by
        default, so the default judge's fingerprint is the model's alone).

        Returns
        -------
        dict[str, Any]
            ``{"model": ...}`` (and ``"neutralize_special": false`` when off).
        """
        return {"model": self.model} if self.neutralize_special else {"model": self.model, "neutralize_special": False}

    def request_subject(self) -> str:
        """What error messages call a request's target: the model.

        Returns
        -------
        str
            ``model 'NAME'``.
        """
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
        """Adapt to a server that refused ``field`` (HTTP 400): True when the request can be sent
        again without it; raises :class:`LogprobsUnavailable` when the refused field is what the
        request is for (log-probabilities, a continuation)."""
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
        """POST a chat completion; on an HTTP 400 that names a field the server does not take
        (:func:`~rankkit.judges.hosted_verdict.refused_field`), learn it for the run (drop or
        rename it: :meth:`_learn_refusal`) and send the request again, so a run never fails on
        a field, and later requests never carry it."""
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
        """Send ``(body, read)`` requests — directly, ``concurrency`` at a time per replica, or with
        ``batch`` as one batch (:mod:`rankkit.judges.batches`) — and yield ``(index, finish(value,
        usage))`` as each arrives; ``read`` turns a response into ``(value, usage)``, and the usage
        gets its retries and its cost (at the batch discount in a batch)."""
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

        Parameters
        ----------
        conversations : Sequence[list[dict[str, str]]]
            The chat conversations.
        max_new_tokens : int
            The most tokens generated per reply (``max_tokens``).
        temperature : float
            The sampling temperature.
        seed : int
            The sampling seed, sent as ``seed``.

        Yields
        ------
        tuple[int, Generation]
            ``(index, generation)``: the index of the conversation and its reply (text and usage).
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
        assistant_prefix: str | Sequence[str],
        choices: Sequence[str] | Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Log-probabilities of each of ``choices`` as the first token of the reply.

        Asks for one token with ``logprobs``/``top_logprobs``; a choice is matched to a returned
        token ignoring surrounding spaces (``" A"`` counts for ``"A"``), and a choice absent from the
        top alternatives gets ``-inf``. The reply is forced to start with ``assistant_prefix`` (one
        for all, or one per conversation) by the server's way of reading a verdict
        (:attr:`prefix_read`): a continuation of a final assistant message
        (:func:`prefill_fields`), or, where the server cannot continue one, a fresh one-token reply
        to a follow-up turn (:func:`~rankkit.judges.hosted_verdict.followup_conversation`), read from
        its ``top_logprobs`` or, without log-probabilities, from a reply constrained to the choices
        (one-hot). An empty prefix reads a fresh reply. A server that offers none of these raises
        :class:`LogprobsUnavailable`, which says to use ``mode=generate``. Each result is a
        :class:`ChoiceLogprobs`, whose ``usage`` holds the request's tokens and cost.

        Parameters
        ----------
        conversations : Sequence[list[dict[str, str]]]
            The chat conversations.
        assistant_prefix : str | Sequence[str]
            The forced start of the reply: one for every conversation, or one per conversation.
        choices : Sequence[str] | Sequence[Sequence[str]]
            The choices (their first tokens must differ): one set for every conversation, or one
            per conversation (:func:`~rankkit.judges.llm_runtime.choices_per_row`).

        Yields
        ------
        tuple[int, dict[str, float]]
            ``(index, logprobs)``: the index of the conversation and a :class:`ChoiceLogprobs` of the choices.
        """
        prefixes = per_row(assistant_prefix, len(conversations))
        path = self.prefix_read if any(prefixes) else None
        if any(prefixes) and path is None:
            self.check_continuation()  # raises, naming why
        sets = choices_per_row(choices, len(conversations))
        requests = [self._read_request(c, p, row, path) for c, p, row in zip(conversations, prefixes, sets)]
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
        """How this server's verdicts are read, found by probe requests once per runtime:

        * ``continuation``: it continues a final assistant message with log-probabilities (vLLM,
          SGLang with :func:`prefill_fields`' switches; llama-server without them);
        * ``followup``: it does not, but returns log-probabilities: a fresh one-token reply to a
          follow-up turn is read instead (OpenAI, most hosted APIs);
        * ``followup_enum``: no log-probabilities, but structured outputs: the follow-up's reply
          is constrained to the choices (a sampled value, read one-hot);
        * None: none of these (the judge falls back to parsing free text).

        The probe: "count from 1 to 20" with the reply forced to start ``1, 2, ..., 8,``; a
        continuation goes on with ``9``, a fresh reply starts with ``1``. It is first sent as a
        plain final assistant message; only a server that does not continue that, is not a
        known hosted API and does not call itself OpenAI's (``owned_by`` in ``/models``) is
        asked again with vLLM's switches, and a 400 refusing them is remembered, not fatal.
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
        """Whether a fresh reply comes with log-probabilities (asked when the prefix probe could
        not tell: it was refused, or answered without them)."""
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
        """Whether vLLM's chat-template switches may be tried: not on a known hosted API, not on
        a server that refused them, not on one whose ``/models`` says OpenAI owns the model."""
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
        """Refuse a server whose verdicts cannot be read without parsing text, before any judgment.

        Raises
        ------
        LogprobsUnavailable
            :attr:`prefix_read` found no way: the server neither continues a final
            assistant message nor returns log-probabilities nor takes structured outputs; the
            message says to use ``mode=generate``.
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
        """Not offered: chat completions return log-probabilities of generated tokens only, never of
        a given answer (that needs prompt log-probabilities, which the API does not have).

        Parameters
        ----------
        conversations : Sequence[list[dict[str, str]]]
            The chat conversations.
        answers : Sequence[str]
            One answer per conversation.

        Returns
        -------
        Iterator[tuple[int, float]]
            Nothing: it raises.
        """
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

    Parameters
    ----------
    listing : Any
        The parsed JSON of a ``/models`` response.
    model : str
        The model's name.

    Returns
    -------
    str | None
        The ``owned_by`` field, or None when the listing has none.

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
    """``choices[0]`` of a chat completion; :class:`BadResponse` when it is missing or not an object.

    Parameters
    ----------
    payload : dict[str, Any]
        The parsed JSON of a chat-completion response.

    Returns
    -------
    dict[str, Any]
        ``choices[0]``.
    """
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

    Parameters
    ----------
    payload : dict[str, Any]
        The parsed JSON of a chat-completion response.

    Returns
    -------
    tuple[str, dict[str, int]]
        The reply text and its usage counters.
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
    request needed any, how many ``retries``. Missing or non-integer counts are left out.

    Parameters
    ----------
    payload : dict[str, Any]
        The parsed JSON of a chat-completion response.
    retries : int
        How many times the request was sent again.

    Returns
    -------
    dict[str, int]
        The counters: ``prompt_tokens``, ``completion_tokens``, ``cached_tokens`` and ``retries`` where nonzero.
    """
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
    """Request fields that make the reply continue ``assistant_prefix`` instead of starting afresh.

    The prefix is sent as a final, unfinished assistant message with vLLM's chat-template switches
    ``continue_final_message: true`` and ``add_generation_prompt: false`` (SGLang accepts them too,
    and llama.cpp's ``llama-server`` continues a final assistant message by default). A server
    that ignores them — llama-cpp-python's, OpenAI's — closes the assistant turn and opens a new
    one, so the log-probabilities would be those of a fresh reply: use ``mode=generate`` there.
    ``switches`` False sends the final assistant message alone (llama-server continues it; a
    strict server refuses the switches with HTTP 400).

    Parameters
    ----------
    conversation : list[dict[str, str]]
        The chat conversation.
    assistant_prefix : str
        The start of the reply to continue.
    switches : bool
        Whether to send vLLM's chat-template switches.

    Returns
    -------
    dict[str, Any]
        The request fields: ``messages`` and, with ``switches``, the two switches.
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
    """``{token: logprob}`` of the alternatives for the first generated token of a chat completion.

    Raises :class:`LogprobsUnavailable` when the response carries no log-probabilities (the
    server does not implement them, or ignores ``logprobs: true``), and :class:`BadResponse`
    when they are there but of the wrong shape.

    Parameters
    ----------
    payload : dict[str, Any]
        The parsed JSON of a chat-completion response.
    where : str
        What the request was, for error messages.

    Returns
    -------
    dict[str, float]
        The alternatives' log-probabilities, by token.
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
    """Whether the probe's first-token ``alternatives`` continue ``PROBE_PREFIX``: ``PROBE_NEXT``
    is likelier than a fresh count's ``PROBE_FRESH``, or the likeliest token is the lone space
    before it (tokenizers such as SmolLM2's split a space from the digit after it; a fresh reply
    does not open with a space).

    Parameters
    ----------
    alternatives : dict[str, float]
        The probe reply's first-token log-probabilities, by token.

    Returns
    -------
    bool
        Whether the server continued the prefix.

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
    """Log-probability of each choice among first-token ``alternatives``.

    Tokens are compared with surrounding whitespace removed; when several tokens spell the same
    choice (``"A"`` and ``" A"``) their probabilities add up. A choice no alternative spells gets
    ``-inf`` (it was not among the top alternatives, so its probability is negligible).

    Parameters
    ----------
    alternatives : dict[str, float]
        First-token log-probabilities, by token.
    choices : Sequence[str]
        The choices.

    Returns
    -------
    dict[str, float]
        Each choice's log-probability (``-inf`` when no alternative spells it).
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
    """The runtime of ``openai:MODEL[,base_url=URL[|URL...]][,concurrency=N][,timeout=S][,max_attempts=K]
    [,backoff=S][,max_backoff=S][,max_response_bytes=B][,api_key_env=NAME][,price_in=USD][,price_out=USD]
    [,rpm=N][,tpm=N][,batch=true][,batch_poll=S][,batch_journal=PATH][,batch_size=N]``.

    ``base_url`` defaults to ``$OPENAI_BASE_URL``, else OpenAI's own API; several replicas of the
    same model are ``|``-joined. The key is read from ``$OPENAI_API_KEY`` or the variable
    ``api_key_env`` names; a local server needs none, but a variable named explicitly must be set,
    and OpenAI's own API (no ``base_url`` at all) needs one: without it the spec is refused at
    once instead of failing every request with HTTP 401.

    ``price_in``/``price_out``: USD per million input/output tokens, overriding the built-in
    price of the model (:mod:`rankkit.judges.prices`); with a price, each judgment's usage
    carries its cost and every strategy's ``cost.usd`` adds them up. ``rpm``/``tpm``: requests/
    tokens per minute to stay under (:mod:`rankkit.judges.pacing`; the server's rate-limit
    headers are honoured either way). ``batch=true``: each runtime call (a round's explanations,
    then their verdict reads) goes out as one batch on OpenAI's Batch API at half the price
    (:mod:`rankkit.judges.batches`).
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
