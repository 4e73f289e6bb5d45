"""A judge on Anthropic's Messages API: ``anthropic:MODEL``, reading verdicts from a prefilled reply.

More in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import dataclasses
import threading
from collections.abc import Iterator, Sequence
from typing import Any

from rankkit.data.specs import Spec, SpecError, parse_spec
from rankkit.judges.backends import Argument, Option, Settings
from rankkit.judges.hosted.batch_apis import AnthropicBatches
from rankkit.judges.hosted.batch_options import BATCH_OPTIONS, BatchOptions
from rankkit.judges.hosted.http_client import ClientConfig, RetryingClient, client_options
from rankkit.judges.hosted.http_retry import BadResponse
from rankkit.judges.hosted.pacing import PACING_OPTIONS
from rankkit.judges.hosted.prices import PRICE_OPTIONS, Price, price_for
from rankkit.judges.hosted.runtime import HostedRuntime, Read
from rankkit.judges.hosted.verdict import one_hot
from rankkit.judges.llm.judge import LLM_OPTIONS, llm_backend
from rankkit.judges.llm.runtime import Chat, ChoiceLogprobs, Generation

DEFAULT_BASE_URL = "https://api.anthropic.com/v1"
DEFAULT_API_KEY_ENV = "ANTHROPIC_API_KEY"
DEFAULT_VERSION = "2023-06-01"
#: Tokens of a verdict read: the digit may come as its own token after a space token.
PREFILL_MAX_TOKENS = 2


class AnthropicRuntime(HostedRuntime):
    """Sends conversations to ``{base_url}/messages``; see ``docs/hosted-judges.md``.

    model: the model name (``claude-sonnet-4-5``).
    client: how the API is reached (its base URL, key, concurrency, retries, pacing).
    version: the ``anthropic-version`` header.
    prompt_cache: mark the judge prompt with ``cache_control``.
    price: USD per million tokens; None: cost not counted.
    batch: send each call's requests as one Message Batch (:mod:`rankkit.judges.hosted.batches`).
    """

    backend = "anthropic"
    #: The verdict is the digit the model writes after rankkit's prefix (one-hot: no log-probabilities).
    verdict_path = "prefill"

    def __init__(
        self,
        model: str,
        client: ClientConfig,
        version: str = DEFAULT_VERSION,
        prompt_cache: bool = True,
        price: Price | None = None,
        batch: BatchOptions | None = None,
    ):
        headers = {"anthropic-version": version, **({"x-api-key": client.api_key} if client.api_key else {})}
        super().__init__(model, RetryingClient(client, headers, f"model {model!r}"), price, batch, AnthropicBatches())
        self.version = version
        self.prompt_cache = prompt_cache

    def identity(self) -> dict[str, Any]:
        """``{"model": ...}`` (never the address)."""
        return {"model": self.model}

    # -- requests -----------------------------------------------------------------------------------
    def message_body(
        self, conversation: Chat, max_tokens: int, temperature: float, prefill: str | None = None
    ) -> dict[str, Any]:
        """The Messages API body: system messages in ``system``, the first user message cache-marked.

        ``prefill`` (trailing whitespace removed, as the API requires) is a final assistant message to continue.
        """
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
        body: dict[str, Any] = {
            "model": self.model,
            "max_tokens": max_tokens,
            "temperature": temperature,
            "messages": messages,
        }
        if system:
            body["system"] = system
        return body

    def send_one(self, body: dict[str, Any], abort: threading.Event | None, read: Read) -> tuple[Any, int]:
        """POST one Messages API request: ``((text, usage), retries)``."""
        return self.client.post("/messages", body, abort, read)

    # -- the LLMRuntime protocol -----------------------------------------------------------------------
    def generate(
        self, conversations: Sequence[Chat], *, max_new_tokens: int, temperature: float, seed: int
    ) -> Iterator[tuple[int, Generation]]:
        """Yield ``(index, Generation)``, the reply to each conversation (``seed`` is ignored: the API has none)."""
        requests = [(self.message_body(c, max_new_tokens, temperature), read_message) for c in conversations]
        yield from self.send_all(requests, lambda text, usage: Generation(text=text, usage=usage))

    def next_token_logprobs(
        self,
        conversations: Sequence[Chat],
        *,
        prefixes: Sequence[str],
        choices: Sequence[Sequence[str]],
    ) -> Iterator[tuple[int, dict[str, float]]]:
        """Yield ``(index, ChoiceLogprobs)``: the choice written after its prefix, one-hot.

        0 for the choice, ``-inf`` for the others (all ``-inf`` when none is written): the API has no log-probabilities.
        """
        sets = [tuple(row) for row in choices]
        requests = [
            (self.message_body(c, PREFILL_MAX_TOKENS, 0.0, prefill=p), read_message)
            for c, p in zip(conversations, prefixes, strict=True)
        ]
        for index, (text, usage) in self.send_all(requests, lambda text, usage: (text, usage)):
            yield index, ChoiceLogprobs(one_hot(written_choice(text, sets[index]), sets[index]), usage)

    def answer_logliks(self, conversations: Sequence[Chat], answers: Sequence[str]) -> Iterator[tuple[int, float]]:
        """Not offered (no log-probabilities): always raises."""
        raise NotImplementedError("the anthropic judge cannot score an answer's likelihood (no log-probabilities)")


# -- reading responses ---------------------------------------------------------------------------------


def read_message(payload: dict[str, Any]) -> tuple[str, dict[str, int]]:
    """The text and usage of a Messages API response.

    ``prompt_tokens`` counts all input (uncached + cache reads + cache writes); reads are also
    ``cached_tokens``, writes ``cache_write_tokens``.

    Examples
    --------
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

    Examples
    --------
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

#: The runtime's options, besides the judge's :data:`~rankkit.judges.llm.judge.LLM_OPTIONS` (none of them
#: changes the fingerprint: the model's name is its identity, as for the openai judge).
ANTHROPIC_OPTIONS: tuple[Option, ...] = (
    *client_options("the API root (default: Anthropic's, https://api.anthropic.com/v1)", DEFAULT_API_KEY_ENV),
    Option("anthropic_version", str, DEFAULT_VERSION, "the anthropic-version header", identity=False),
    Option(
        "prompt_cache", bool, True, "mark the judge prompt with cache_control (cache reads at 0.1x)", identity=False
    ),
    *PRICE_OPTIONS,
    *PACING_OPTIONS,
    *BATCH_OPTIONS,
)


def _read_spec(text: str) -> Spec:
    """Parse an ``anthropic:`` spec, refusing an API key in it without echoing the value."""
    spec = parse_spec(text)
    if "api_key" in spec.options:
        raise SpecError(
            "anthropic: do not put the API key in the spec (it would end up in shell history and "
            "results); export it and name the variable with api_key_env=NAME (default ANTHROPIC_API_KEY)"
        )
    return spec


def _anthropic_runtime(settings: Settings) -> AnthropicRuntime:
    """The runtime of ``anthropic:MODEL[,base_url=URL][,...]`` (options in ``docs/hosted-judges.md``).

    Key from ``$ANTHROPIC_API_KEY`` or ``api_key_env``; neither key nor ``base_url`` is refused at once.
    """
    client = ClientConfig.from_settings(
        settings,
        DEFAULT_BASE_URL,
        DEFAULT_API_KEY_ENV,
        no_key=f"no API key: export {DEFAULT_API_KEY_ENV} (or name the variable with api_key_env=NAME)",
    )
    return AnthropicRuntime(
        settings.argument,
        client,
        version=settings["anthropic_version"],
        prompt_cache=settings["prompt_cache"],
        price=price_for(settings.argument, settings["price_in"], settings["price_out"]),
        batch=BatchOptions.from_settings(settings),
    )


def _generate_only(mode: str) -> str | None:
    """The anthropic judge's check of ``mode``: the Messages API returns no log-probabilities."""
    if mode == "generate":
        return None
    return (
        "other than generate needs log-probabilities, which the Messages API does not return; use "
        "mode=generate (the verdict is the digit the model writes after rankkit's prefix)"
    )


#: The judge's options as :data:`~rankkit.judges.llm.judge.LLM_OPTIONS`, with ``mode`` generate only (so
#: ``rankkit judges`` lists no mode the API cannot serve).
ANTHROPIC_LLM_OPTIONS: tuple[Option, ...] = tuple(
    dataclasses.replace(
        option, choices=(), check=_generate_only, help="generate only (the Messages API returns no log-probabilities)"
    )
    if option.name == "mode"
    else option
    for option in LLM_OPTIONS
)


#: ``anthropic:MODEL[,option=value...]``: Anthropic's Messages API. Building it sends nothing, so
#: the dry run builds it.
BACKEND = llm_backend(
    "anthropic",
    "Anthropic's Messages API (Claude; verdicts read by prefill)",
    _anthropic_runtime,
    options=ANTHROPIC_OPTIONS,
    llm_options=ANTHROPIC_LLM_OPTIONS,
    argument=Argument("model", "anthropic:claude-sonnet-4-5"),
    read=_read_spec,
    network=True,
)
