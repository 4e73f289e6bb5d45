"""A judge behind any OpenAI-compatible endpoint (vLLM, llama.cpp's server, TGI, OpenAI, hosted APIs).

The spec ``openai:MODEL,...`` builds an :class:`~rankkit.judges.llm.judge.LLMJudge` on :class:`OpenAIRuntime`.
More in ``docs/judges-servers.md``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from rankkit.data.specs import Spec, SpecError, parse_spec
from rankkit.judges.backends import Argument, Option, Settings
from rankkit.judges.hosted.batch_apis import OpenAIBatches
from rankkit.judges.hosted.batch_options import BATCH_OPTIONS, BatchOptions
from rankkit.judges.hosted.http_client import ClientConfig, RetryingClient, client_options, logger
from rankkit.judges.hosted.http_retry import HTTPStatusError, KeyRefused
from rankkit.judges.hosted.openai_responses import (
    LogprobsUnavailable,
    choice_logprobs,
    first_token_alternatives,
    model_owner,
    prefill_fields,
    read_reply,
    usage_of,
)
from rankkit.judges.hosted.pacing import PACING_OPTIONS
from rankkit.judges.hosted.prices import PRICE_OPTIONS, Price, price_for
from rankkit.judges.hosted.runtime import HostedRuntime
from rankkit.judges.hosted.verdict import (  # hosted APIs: follow-up verdicts, refusals learned
    enum_response_format,
    followup_conversation,
    known_hosted,
    one_hot,
    read_enum_reply,
    refused_field,
)
from rankkit.judges.llm.judge import llm_backend
from rankkit.judges.llm.runtime import ChoiceLogprobs, Generation
from rankkit.prompts.protocol import neutralize_special_tokens

DEFAULT_BASE_URL = "https://api.openai.com/v1"
DEFAULT_API_KEY_ENV = "OPENAI_API_KEY"
#: How many alternatives ``logprob`` mode asks for at the first answer token (OpenAI's limit is 20;
#: vLLM's default ``--max-logprobs`` is 20 too).
TOP_LOGPROBS = 20


#: The continuation probe: a reply forced to start with ``PROBE_PREFIX`` must go on with
#: ``PROBE_NEXT``; a server that opens a fresh reply instead starts counting at ``PROBE_FRESH``.
PROBE_QUESTION = "Count from 1 to 20, separated by commas. Write nothing else."
PROBE_PREFIX = "1, 2, 3, 4, 5, 6, 7, 8,"
PROBE_NEXT, PROBE_FRESH = "9", "1"
#: The structured-outputs probe (servers without log-probabilities): any digit it returns will do.
ENUM_PROBE_QUESTION = "Which digit comes after 8? Reply with the digit only."


# -- the runtime -------------------------------------------------------------------------------------


class OpenAIRuntime(HostedRuntime):
    """Sends conversations to ``{base_url}/chat/completions``, ``concurrency`` at a time per replica.

    Sending (replicas, concurrency, retries) is the :class:`~rankkit.judges.hosted.http_client.RetryingClient`'s
    it holds; thread-safe, at most :attr:`capacity` requests in flight.

    model: the model name the server knows (``--served-model-name`` for vLLM).
    client: how the server is reached (its base URL, key, concurrency, retries, pacing).
    neutralize_special: rewrite chat-template special-token strings in what is sent (default on).
    price: USD per million tokens (:mod:`rankkit.judges.hosted.prices`); None: cost not counted.
    batch: send each call's requests as one batch (:mod:`rankkit.judges.hosted.batches`).
    """

    backend = "openai"

    def __init__(
        self,
        model: str,
        client: ClientConfig,
        price: Price | None = None,
        batch: BatchOptions | None = None,
        neutralize_special: bool = True,
    ):
        headers = {"Authorization": f"Bearer {client.api_key}"} if client.api_key else {}
        super().__init__(model, RetryingClient(client, headers, f"model {model!r}"), price, batch, OpenAIBatches())
        self.neutralize_special = neutralize_special
        # How verdicts are read (verdict_path) is found by probe requests, once per runtime
        # (so once per judge), before the first read that needs it.
        self._probe_lock = threading.Lock()
        self._probe_done = False
        self._path: str | None = None
        # What the server refused, learned from HTTP 400s and kept for the run (send_one).
        self._learned_lock = threading.Lock()
        self._dropped: set[str] = set()
        self._completion_tokens_field = "max_tokens"
        self._prefill_fields = False  # whether continuations need vLLM's chat-template switches
        self._prefill_fields_refused = False
        self._logprobs_refused = False

    def identity(self) -> dict[str, Any]:
        """``{"model": ...}``, plus ``"neutralize_special": false`` when off; never ``base_url``."""
        return {"model": self.model} if self.neutralize_special else {"model": self.model, "neutralize_special": False}

    # -- requests, and what the server refuses ----------------------------------------------------
    def _sent(self, text: str) -> str:
        """``text`` as sent: special-token strings neutralised unless ``neutralize_special`` is off."""
        return neutralize_special_tokens(text) if self.neutralize_special else text

    def _chat_body(self, conversation: list[dict[str, str]], **options: Any) -> dict[str, Any]:
        messages = [{**message, "content": self._sent(message["content"])} for message in conversation]
        return {"model": self.model, "messages": messages, **options}

    def batch_body(self, body: dict[str, Any]) -> dict[str, Any]:
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

    def send_one(
        self, body: dict[str, Any], abort: threading.Event | None, read: Callable[[dict[str, Any]], Any]
    ) -> tuple[Any, int]:
        """POST a chat completion, dropping or renaming for the run any field the server refuses with HTTP 400."""
        retries = 0
        while True:
            try:
                result, used = self.client.post("/chat/completions", self.batch_body(body), abort, read)
                return result, retries + used
            except HTTPStatusError as err:
                field = refused_field(err.text) if err.status == 400 else None
                if field is None or retries >= MAX_REFUSALS or not self._learn_refusal(field):
                    raise
                logger.info(
                    "openai: %s does not take %r; sending the request without it from now on",
                    self.client.base_url,
                    field,
                )
                retries += 1

    # -- the LLMRuntime protocol -------------------------------------------------------------------
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
        yield from self.send_all(requests, lambda text, usage: Generation(text=text, usage=usage))

    def next_token_logprobs(
        self,
        conversations: Sequence[list[dict[str, str]]],
        *,
        prefixes: Sequence[str],
        choices: Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Yield ``(index, ChoiceLogprobs)``: each choice's log-probability as first token after its prefix.

        Read as :attr:`verdict_path` finds (continuation, follow-up turn, or constrained one-hot reply);
        tokens match ignoring surrounding spaces; a choice outside the top alternatives gets ``-inf``.

        Raises
        ------
        LogprobsUnavailable
            The server offers no way to read them (use ``mode=generate``).
        """
        path = self.verdict_path if any(prefixes) else None
        if any(prefixes) and path is None:
            self.check_continuation()  # raises, naming why
        rows = zip(conversations, prefixes, choices, strict=True)
        requests = [self._read_request(c, p, tuple(row), path) for c, p, row in rows]
        yield from self.send_all(requests, ChoiceLogprobs)

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
    def verdict_path(self) -> str | None:  # type: ignore[override]  # probed on first use
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
            return self.send_one(body, None, lambda payload: first_token_alternatives(payload, "the server"))[0]
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
            self.send_one(body, None, lambda payload: first_token_alternatives(payload, "the server"))
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
            value = self.send_one(
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
        if self._prefill_fields_refused or any(known_hosted(replica.url) for replica in self.client.replicas):
            return False
        return model_owner(self.client.get_json("/models"), self.model) not in OPENAI_OWNERS

    def check_continuation(self) -> None:
        """Refuse, before any judgment, a server whose verdicts can only be read by parsing text.

        Raises
        ------
        LogprobsUnavailable
            :attr:`verdict_path` found no way; the message says to use ``mode=generate``.
        """
        if self.verdict_path is None:
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


# -- the continuation probe's reading ------------------------------------------------------------------


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


# -- the spec ---------------------------------------------------------------------------------------

#: The runtime's options, besides the judge's :data:`~rankkit.judges.llm.judge.LLM_OPTIONS` (only
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
    client = ClientConfig.from_settings(
        settings,
        DEFAULT_BASE_URL,
        DEFAULT_API_KEY_ENV,
        no_key=f"no base_url and no API key: for a local server (vLLM, llama.cpp...) add "
        f"base_url=http://HOST:PORT/v1 (or set $OPENAI_BASE_URL); for OpenAI's API export "
        f"{DEFAULT_API_KEY_ENV} (or name the variable with api_key_env=NAME)",
        base_url_env="OPENAI_BASE_URL",
    )
    return OpenAIRuntime(
        settings.argument,
        client,
        price=price_for(settings.argument, settings["price_in"], settings["price_out"]),
        batch=BatchOptions.from_settings(settings),
        neutralize_special=settings["neutralize_special"],
    )


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
