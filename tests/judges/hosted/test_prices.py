"""Token prices and the dollar cost of usage (rankkit/judges/hosted/prices.py)."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.hosted.prices import PRICES, PRICES_READ, Price, builtin_price, price_for, usd_nanos


@pytest.mark.parametrize(
    "model, name",
    [
        ("gpt-4.1", "gpt-4.1"),
        ("gpt-4.1-2025-04-14", "gpt-4.1"),
        ("gpt-4.1-mini", "gpt-4.1-mini"),
        ("gpt-4o-mini-2024-07-18", "gpt-4o-mini"),
        ("openai/gpt-4o", "gpt-4o"),
        ("claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("claude-opus-4-1", "claude-opus-4-1"),
        ("claude-haiku-4-5", "claude-haiku-4-5"),
    ],
)
def test_a_model_gets_the_price_of_its_longest_matching_name(model, name):
    assert builtin_price(model) == PRICES[name]


def test_names_that_only_share_a_prefix_get_no_price():
    assert builtin_price("gpt-4.10") is None and builtin_price("o3mini") is None


def test_anthropic_cache_prices_follow_the_published_multipliers():
    sonnet = PRICES["claude-sonnet-4-5"]
    assert (sonnet.input, sonnet.output) == (3.0, 15.0)
    assert sonnet.cached_input == pytest.approx(0.30) and sonnet.cache_write == pytest.approx(3.75)
    assert PRICES["claude-opus-4-1"].cache_write == pytest.approx(18.75)  # as the pricing page lists it
    assert PRICES_READ.count("-") == 2


def test_overrides_replace_the_list_price_and_keep_the_cache_ratios():
    price = price_for("claude-sonnet-4-5", price_in=6.0, price_out=30.0)
    assert (price.input, price.output) == (6.0, 30.0)
    assert price.cached_input == pytest.approx(0.6) and price.cache_write == pytest.approx(7.5)
    assert price_for("unknown-model", price_in=1.0, price_out=2.0) == Price(1.0, 2.0)
    assert price_for("unknown-model") is None


def test_usd_of_usage_splits_cached_written_and_fresh_input_and_halves_in_batch():
    price = Price(3.0, 15.0, cached_input=0.3, cache_write=3.75)
    usage = {"prompt_tokens": 2000, "cached_tokens": 1000, "cache_write_tokens": 500, "completion_tokens": 100}
    expected_usd = (500 * 3.0 + 1000 * 0.3 + 500 * 3.75 + 100 * 15.0) / 1e6
    assert usd_nanos(usage, price) == pytest.approx(expected_usd * 1e9, abs=1)
    assert usd_nanos(usage, price, batch=True) == pytest.approx(expected_usd * 1e9 / 2, abs=1)


def test_a_negative_price_is_refused():
    with pytest.raises(SpecError, match="output must be >= 0"):
        Price(1.0, -2.0)
