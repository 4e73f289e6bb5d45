"""Token prices of hosted judges (:data:`PRICES`, :func:`price_for`) and a response's cost (:func:`usd_nanos`).

Sources in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from rankkit.data.specs import SpecError
from rankkit.judges.backends import Option, at_least

#: When the built-in prices were read (see ``docs/hosted-judges.md`` for the sources).
PRICES_READ = "2026-11-27"
#: The batch APIs of OpenAI and Anthropic charge half the list price for input and output.
BATCH_DISCOUNT = 0.5


@dataclass(frozen=True)
class Price:
    """USD per million tokens of one model.

    cached_input: an input token read from the prompt cache (None: as ``input``).
    cache_write: an input token written to the prompt cache (None: as ``input``).
    """

    input: float
    output: float
    cached_input: float | None = None
    cache_write: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cached_input", "cache_write"):
            value = getattr(self, name)
            if value is not None and not value >= 0:
                raise SpecError(f"price: {name} must be >= 0 USD per million tokens, got {value}")


def _openai(input_: float, cached: float, output: float) -> Price:
    return Price(input_, output, cached_input=cached)


def _anthropic(input_: float, output: float) -> Price:
    return Price(input_, output, cached_input=input_ * 0.1, cache_write=input_ * 1.25)


#: Built-in list prices by model name prefix (see ``docs/hosted-judges.md`` for sources and caveats).
PRICES: dict[str, Price] = {
    "gpt-4.1": _openai(2.00, 0.50, 8.00),
    "gpt-4.1-mini": _openai(0.40, 0.10, 1.60),
    "gpt-4.1-nano": _openai(0.10, 0.025, 0.40),
    "gpt-4o": _openai(2.50, 1.25, 10.00),
    "gpt-4o-mini": _openai(0.15, 0.075, 0.60),
    "gpt-5": _openai(1.25, 0.125, 10.00),
    "gpt-5-mini": _openai(0.25, 0.025, 2.00),
    "gpt-5-nano": _openai(0.05, 0.005, 0.40),
    "o3": _openai(2.00, 0.50, 8.00),
    "o4-mini": _openai(1.10, 0.275, 4.40),
    "claude-opus-4-1": _anthropic(15.00, 75.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
}


def builtin_price(model: str) -> Price | None:
    """The built-in price of the longest model-name prefix of ``model``, or None.

    Examples
    --------
    >>> builtin_price("gpt-4.1-mini-2025-04-14").input
    0.4
    >>> builtin_price("my-local-model") is None
    True
    """
    name = model.rsplit("/", 1)[-1].lower()  # "openai/gpt-4.1" (OpenRouter) is gpt-4.1
    matches = [key for key in PRICES if name == key or name.startswith(key + "-")]
    return PRICES[max(matches, key=len)] if matches else None


def price_for(model: str, price_in: float | None = None, price_out: float | None = None) -> Price | None:
    """The built-in price of ``model`` with the spec's overrides (USD per million tokens), or None.

    An input override scales the cached and cache-write prices with it (or, without a built-in price,
    sets them to it). None without a built-in price or both overrides (cost not counted).

    Examples
    --------
    >>> price_for("gpt-4.1", price_in=4.0).cached_input
    1.0
    >>> price_for("unknown", price_in=1.0) is None
    True
    """
    known = builtin_price(model)
    if known is None:
        if price_in is None or price_out is None:
            return None
        return Price(price_in, price_out)
    if price_in is None and price_out is None:
        return known
    ratio = 1.0 if price_in is None or known.input == 0 else price_in / known.input
    scale = lambda value: None if value is None else value * ratio  # noqa: E731
    return Price(
        known.input * ratio,
        known.output if price_out is None else price_out,
        scale(known.cached_input),
        scale(known.cache_write),
    )


#: The price options of a hosted judge's spec (the cost, not the judgments: not in the fingerprint).
PRICE_OPTIONS: tuple[Option, ...] = (
    Option(
        "price_in",
        float,
        None,
        "USD per million input tokens (default: the model's built-in price)",
        identity=False,
        check=at_least(0),
    ),
    Option(
        "price_out",
        float,
        None,
        "USD per million output tokens (default: the model's built-in price)",
        identity=False,
        check=at_least(0),
    ),
)


def usd_nanos(usage: Mapping[str, int], price: Price, batch: bool = False) -> int:
    """The cost of one response's ``usage`` in nano-dollars (1e-9 USD), rounded; ``batch`` applies the discount.

    ``prompt_tokens`` counts all input, of which ``cached_tokens`` read and ``cache_write_tokens``
    written to the cache; ``completion_tokens`` are output.

    Examples
    --------
    >>> usd_nanos({"prompt_tokens": 1000, "completion_tokens": 10}, Price(2.0, 8.0))
    2080000
    >>> usd_nanos({"prompt_tokens": 1000, "cached_tokens": 800, "completion_tokens": 0}, Price(2.0, 8.0, 0.5))
    800000
    """
    prompt = int(usage.get("prompt_tokens", 0))
    cached = int(usage.get("cached_tokens", 0))
    written = int(usage.get("cache_write_tokens", 0))
    fresh = max(0, prompt - cached - written)
    dollars_per_million = (
        fresh * price.input
        + cached * _or(price.cached_input, price.input)
        + written * _or(price.cache_write, price.input)
        + int(usage.get("completion_tokens", 0)) * price.output
    )
    return round(dollars_per_million * 1000 * (BATCH_DISCOUNT if batch else 1.0))


def _or(value: float | None, default: float) -> float:
    return default if value is None else value


def with_cost(usage: dict[str, int], price: Price | None, batch: bool = False) -> dict[str, int]:
    """``usage``, updated in place with ``usd_nano`` (and ``batched`` when ``batch``); unchanged without a price."""
    if batch:
        usage["batched"] = 1
    if price is not None:
        usage["usd_nano"] = usd_nanos(usage, price, batch)
    return usage
