"""rankkit.judgments.spend: budget text, and what one judgment spends in each unit."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judgments.spend import Meter, Spend, estimate_tokens, split_budget, text_estimate
from tests.helpers import make_task


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("3", ("3", "judgments")),
        ("2.5judgments", ("2.5", "judgments")),
        ("6answers", ("6", "answers")),
        ("1e4tokens", ("1e4", "tokens")),
        ("0.01USD", ("0.01", "usd")),
        ("abc", ("abc", "judgments")),  # no unit: left to the number's own check
    ],
)
def test_a_budget_is_a_number_and_an_optional_unit(text, expected):
    assert split_budget(text, "strategy active: budget") == expected


@pytest.mark.parametrize("text", ["6answerz", "3dollars", "5 calls"])
def test_a_budget_with_an_unknown_unit_names_the_option_and_the_units(text):
    with pytest.raises(SpecError, match=r"strategy active: budget: expected .*answers, tokens or usd.*got"):
        split_budget(text, "strategy active: budget")


def test_a_judgment_without_usage_spends_the_estimate_priced():
    task = make_task([1, 2, 3])
    shown = task.candidates[:2]
    spend = Meter(price_in=2.0, price_out=8.0).judgment(task, shown, {})
    tokens = estimate_tokens(task.prompt + shown[0].text + shown[1].text)
    assert (spend.judgments, spend.answers, spend.tokens) == (1, 2, tokens)
    assert spend.usd == pytest.approx(tokens * 2.0 / 1e6, rel=1e-12)
    assert text_estimate(task, shown) == tokens


def test_reported_usage_and_cost_win_over_the_estimate():
    task = make_task([1, 2, 3, 4])
    usage = {"prompt_tokens": 120, "completion_tokens": 5, "usd_nano": 1234}
    spend = Meter(price_in=2.0, price_out=8.0).judgment(task, task.candidates, usage)
    assert (spend.answers, spend.tokens) == (4, 125)
    assert spend.usd == pytest.approx(1.234e-6, rel=1e-12)
    unpriced = Meter().judgment(task, task.candidates[:1], {"prompt_tokens": 10})
    assert unpriced.tokens == 10 and unpriced.usd == 0.0 and not Meter().priced


def test_spends_add_up_and_are_read_by_unit():
    total = Spend()
    total.add(Spend(1, 2, 30, 0.5))
    total.add(Spend(1, 4, 10, 0.25))
    assert [total.amount(unit) for unit in ("judgments", "answers", "tokens")] == [2.0, 6.0, 40.0]
    assert total.amount("usd") == pytest.approx(0.75, abs=1e-12)
