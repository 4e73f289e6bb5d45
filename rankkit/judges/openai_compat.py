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
vLLM, SGLang and llama.cpp's ``llama-server`` do that (see :func:`prefill_fields`). Before its
first logprob request the engine checks this with one probe request whose continuation is known
(:meth:`OpenAIEngine.check_continuation`); a server that returns no log-probabilities, or does not
continue the prefix (llama-cpp-python's server), stops the run before any judgment with
:class:`LogprobsUnavailable` (exit 2), whose message says to use ``mode=generate``. ``loglik`` (likelihood of a given answer) is not offered: chat
completions never score a given text.

**Secrets.** The API key is read from the environment variable ``api_key_env`` (default
``OPENAI_API_KEY``; a local server needs none). It is sent only as the ``Authorization`` header:
it is not part of the spec, the fingerprint, the cache, the results, ``repr`` or any message
(server error text is redacted *before* it is cut to length, so no piece of the key survives). With
neither a ``base_url`` nor a key the spec is refused at once.

**Special-token strings.** The server tokenizes what it is sent, and a server may turn a
candidate's ``<|im_end|>`` into the real end-of-turn token (a vLLM pull request to escape them in
user content was closed unmerged). So by default every message and forced reply prefix is sent
with the chat-template tokens of the known families rewritten visibly (``<|im_end|>`` ->
``‹|im_end|›``, :func:`rankkit.prompts.protocol.neutralize_special_tokens`); text without one is
sent as it is. ``neutralize_special=false`` sends the text untouched (a server that escapes them
itself); that is part of the fingerprint.

**Identity.** The fingerprint names the *model*, not ``base_url``: the same model served at
another address (a vLLM replica, a moved deployment, a proxy) or by any number of replicas gives
interchangeable judgments, so its cached judgments stay valid. The flip side: serve different
weights under different model names (vLLM's ``--served-model-name``), or cached judgments of one
will be reused for the other.

**Modules.** This one holds the engine (chat-completion requests and responses) and the spec;
the HTTP client under it — pool, replicas, retries, redaction, response cap — is
:mod:`rankkit.judges.http_client`.
"""

from __future__ import annotations

import math
import os
import threading
from typing import Any, Callable, Iterator, Sequence

from rankkit.judges.base import JudgeError
from rankkit.judges.http_client import DEFAULT_MAX_RESPONSE_BYTES, BadResponse, RetryingClient, RetryPolicy
from rankkit.judges.llm import LLM_OPTIONS, LLMJudge, split_llm_options
from rankkit.judges.llm_engine import Generation, per_row
from rankkit.prompts.protocol import neutralize_special_tokens
from rankkit.specs import Spec, SpecError, convert_value

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
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


# -- the engine -------------------------------------------------------------------------------------

class OpenAIEngine(RetryingClient):
    """Sends conversations to ``{base_url}/chat/completions``, ``concurrency`` at a time per replica.

    The :class:`~rankkit.judges.llm_engine.LLMEngine` of the openai judge: it builds chat
    completion requests and reads their responses; sending them (replicas, concurrency, retries)
    is :class:`~rankkit.judges.http_client.RetryingClient`'s.

    model: the model name the server knows (``--served-model-name`` for vLLM; llama.cpp's server
        serves one model whatever the name).
    base_url, api_key, concurrency, timeout, retry, jitter_seed, max_response_bytes: the
        client's (:class:`~rankkit.judges.http_client.RetryingClient`); ``base_url`` defaults to
        OpenAI's own API.
    neutralize_special: rewrite chat-template special-token strings in what is sent (the
        default; see "Special-token strings" in the module docstring).

    ``generate`` and ``next_token_logprobs`` may be called from several threads at once: all
    calls share the client's pool of :attr:`capacity` workers, and each attempt holds a replica
    slot, so at most ``concurrency`` requests are in flight per replica and :attr:`capacity` in
    total.
    """

    backend = "openai"
    #: Requests are streamed to the server one by one; nothing is gained by waiting for a full batch.
    fills_batches = False

    def __init__(self, model: str, base_url: str | Sequence[str] = DEFAULT_BASE_URL, api_key: str | None = None,
                 concurrency: int = 4, timeout: float = 120.0, retry: RetryPolicy = RetryPolicy(),
                 jitter_seed: int | None = None, max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES,
                 neutralize_special: bool = True):
        super().__init__(base_url, api_key=api_key, concurrency=concurrency, timeout=timeout, retry=retry,
                         jitter_seed=jitter_seed, max_response_bytes=max_response_bytes)
        self.model = model
        self.neutralize_special = neutralize_special
        # The continuation probe runs once per engine (so once per judge), before its first
        # logprob request; its error is kept so every later call refuses the same way.
        self._probe_lock = threading.Lock()
        self._probe_done = False
        self._probe_error: LogprobsUnavailable | None = None

    def __repr__(self) -> str:  # never shows the key
        key = "set" if self._api_key else "none"
        return (f"OpenAIEngine(model={self.model!r}, base_url={self.base_url!r}, concurrency={self.concurrency}, "
                f"timeout={self.timeout}, api_key={key})")

    def identity(self) -> dict[str, Any]:
        """The model name only: see "Identity" in the module docstring for why not ``base_url``
        (nor how many replicas serve it); with ``neutralize_special=false`` that too (absent by
        default, so the default judge's fingerprint is the model's alone)."""
        return {"model": self.model} if self.neutralize_special else {"model": self.model, "neutralize_special": False}

    def request_subject(self) -> str:
        return f"model {self.model!r}"

    # -- the LLMEngine protocol -------------------------------------------------------------------
    def _sent(self, text: str) -> str:
        """``text`` as sent: special-token strings neutralised unless ``neutralize_special`` is off."""
        return neutralize_special_tokens(text) if self.neutralize_special else text

    def _chat_body(self, conversation: list[dict[str, str]], **options: Any) -> dict[str, Any]:
        messages = [{**message, "content": self._sent(message["content"])} for message in conversation]
        return {"model": self.model, "messages": messages, **options}

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

    def next_token_logprobs(self, conversations: Sequence[list[dict[str, str]]], *, assistant_prefix: str | Sequence[str],
                            choices: Sequence[str]) -> Iterator[tuple[int, dict[str, float]]]:
        """Log-probabilities of each of ``choices`` as the first token of the reply.

        Asks for one token with ``logprobs``/``top_logprobs``; a choice is matched to a returned
        token ignoring surrounding spaces (``" A"`` counts for ``"A"``), and a choice absent from the
        top alternatives gets ``-inf``. A server that answers without log-probabilities raises
        :class:`LogprobsUnavailable`, which says to use ``mode=generate``. The reply is forced to
        start with ``assistant_prefix`` (one for all, or one per conversation) as described in
        :func:`prefill_fields`.
        """
        prefixes = per_row(assistant_prefix, len(conversations))
        if any(prefixes):  # the reading depends on the server continuing the prefix: check it once
            self.check_continuation()

        def read(payload: dict[str, Any]) -> dict[str, float]:
            return choice_logprobs(first_token_alternatives(payload, "the server"), choices)

        def job(conversation: list[dict[str, str]], prefix: str) -> Callable[[threading.Event], dict[str, float]]:
            body = self._chat_body(conversation, max_tokens=1, temperature=0.0, logprobs=True,
                                   top_logprobs=TOP_LOGPROBS)
            if prefix:
                body.update(prefill_fields(body["messages"], self._sent(prefix)))

            def call(abort: threading.Event) -> dict[str, float]:
                return self.post("/chat/completions", body, abort, read)[0]

            return call

        yield from self._run_all([job(c, p) for c, p in zip(conversations, prefixes)])

    def check_continuation(self) -> None:
        """Refuse a server that does not continue a final assistant message, before any judgment.

        Such a server (llama-cpp-python's, OpenAI's) closes the forced prefix and opens a fresh
        reply, so the first-token log-probabilities belong to another question and every verdict
        would look confident and mean nothing. One request tells: the reply to "count from 1 to
        20" forced to start with ``1, 2, …, 8,`` must go on with ``9``; a fresh reply starts with
        ``1``. The answer is kept for the engine's lifetime (one probe per judge instance).

        Raises
        ------
        LogprobsUnavailable
            The server returns no log-probabilities, or does not continue the prefix; the message
            says to use ``mode=generate``.
        """
        with self._probe_lock:
            if not self._probe_done:
                conversation = [{"role": "user", "content": PROBE_QUESTION}]
                body = self._chat_body(conversation, max_tokens=1, temperature=0.0, logprobs=True,
                                       top_logprobs=TOP_LOGPROBS)
                body.update(prefill_fields(conversation, PROBE_PREFIX))
                try:
                    alternatives = self.post("/chat/completions", body, None,
                                             lambda payload: first_token_alternatives(payload, "the server"))[0]
                    if not continues_probe(alternatives):
                        top = max(alternatives, key=alternatives.get)
                        raise LogprobsUnavailable(
                            f"the server does not continue a final assistant message (a reply forced to start "
                            f"with {PROBE_PREFIX!r} went on with {top!r}, not {PROBE_NEXT!r}), so mode=logprob would "
                            f"read the first token of a fresh reply and its verdicts would mean nothing; use "
                            f"mode=generate (vLLM, SGLang and llama-server continue it; llama-cpp-python's "
                            f"server and OpenAI do not)")
                except LogprobsUnavailable as err:
                    self._probe_error = err
                self._probe_done = True
            if self._probe_error is not None:
                raise self._probe_error

    def supports_continuation(self) -> bool:
        """Whether the server continues a final assistant message with log-probabilities (one probe
        request per engine, :meth:`check_continuation`)."""
        try:
            self.check_continuation()
        except LogprobsUnavailable:
            return False
        return True

    def answer_logliks(self, conversations: Sequence[list[dict[str, str]]],
                       answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Not offered: chat completions return log-probabilities of generated tokens only, never of
        a given answer (that needs prompt log-probabilities, which the API does not have)."""
        raise NotImplementedError(
            "the openai judge cannot score a given answer's likelihood (chat completions return "
            "log-probabilities of generated tokens only); use mode=generate or mode=logprob")


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


def continues_probe(alternatives: dict[str, float]) -> bool:
    """Whether the probe's first-token ``alternatives`` continue ``PROBE_PREFIX``: ``PROBE_NEXT``
    is likelier than a fresh count's ``PROBE_FRESH``, or the likeliest token is the lone space
    before it (tokenizers such as SmolLM2's split a space from the digit after it; a fresh reply
    does not open with a space).

    >>> continues_probe({" 9": -0.1, "1": -4.0}), continues_probe({" ": -0.2, "1": -3.0})
    (True, True)
    >>> continues_probe({"1": -0.1, " ": -2.0})
    False
    """
    expected = choice_logprobs(alternatives, [PROBE_NEXT, PROBE_FRESH])
    top = max(alternatives, key=alternatives.get)
    return expected[PROBE_NEXT] > expected[PROBE_FRESH] or (top.strip() == "" and alternatives[top] > expected[PROBE_FRESH])


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
                                   "max_response_bytes": int, "neutralize_special": bool}


def from_spec(spec: Spec) -> LLMJudge:
    """``openai:MODEL[,base_url=URL[|URL...]][,concurrency=N][,timeout=S][,max_attempts=K][,backoff=S]
    [,max_backoff=S][,max_response_bytes=B][,api_key_env=NAME][,neutralize_special=false]
    [,mode=generate|logprob][,template=...][,max_new_tokens=N][,temperature=T][,seed=N][,retries=N]``.

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
