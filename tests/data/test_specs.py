"""Spec strings: parsing, and the conversion of their values (issue 24, item 3)."""

from __future__ import annotations

import math

import pytest

from rankkit.data.specs import SpecError, convert_value, parse_spec
from rankkit.strategies import base as strategies_base
from rankkit.strategies.active import Active
from rankkit.strategies.bt import BradleyTerry
from rankkit.strategies.heapsort import Heapsort
from rankkit.strategies.swiss import Swiss


def test_parse_spec_splits_name_positional_and_options():
    spec = parse_spec("hf:model-id,dtype=bfloat16")
    assert (spec.name, spec.positional, spec.options) == ("hf", ("model-id",), {"dtype": "bfloat16"})


@pytest.mark.parametrize("text", ["nan", "NaN", "inf", "-inf", "Infinity", "1e309", "-1e400"])
def test_a_float_value_must_be_finite(text):
    with pytest.raises(SpecError, match=r"strategy bt: alpha: expected a finite number"):
        convert_value(text, float, where="strategy bt: alpha")


def test_an_optional_float_is_checked_like_a_float():
    with pytest.raises(SpecError, match="finite"):
        convert_value("nan", float | None, where="x")
    assert convert_value("none", float | None, where="x") is None
    assert convert_value("0.25", float | None, where="x") == pytest.approx(0.25, abs=1e-12)


def test_inf_is_accepted_only_where_it_means_no_limit():
    assert math.isinf(convert_value("inf", float, where="hf: max_padding", allow_infinite=True))
    with pytest.raises(SpecError, match="finite"):
        convert_value("nan", float, where="hf: max_padding", allow_infinite=True)


@pytest.mark.parametrize(
    "spec, message",
    [
        ("bt:alpha=nan", "alpha: expected a finite number, got 'nan'"),
        ("bt:alpha=inf", "alpha: expected a finite number, got 'inf'"),
        ("active:budget=1e309", "budget: expected a finite number, got '1e309'"),
        ("swiss:budget=-inf", "budget: expected a finite number"),
        ("elo:k=nan", "k: expected a finite number"),
        ("heapsort:top_k=-1", "top_k must be 0 to"),
    ],
)
def test_strategy_specs_refuse_numbers_out_of_range(spec, message):
    with pytest.raises(SpecError, match=message):
        strategies_base.make_strategy(spec)


def test_strategies_built_in_python_refuse_non_finite_numbers():
    for build in (
        lambda: BradleyTerry(alpha=math.nan),
        lambda: BradleyTerry(alpha=math.inf),
        lambda: Active(budget=math.inf),
        lambda: Swiss(budget=math.nan),
    ):
        with pytest.raises(SpecError, match="must be a finite number|budget must be > 0"):
            build()


def test_a_huge_finite_budget_is_all_pairs_not_an_overflow():
    from rankkit.strategies._budget import comparison_budget, matches_in_budget

    judgments = comparison_budget(5, 1e308, None)
    assert matches_in_budget(5, judgments, "both") == 10


def test_heapsort_top_k_zero_sorts_everything():
    """Documented: ``top_k`` None or 0 sorts everything (every candidate gets a position)."""
    from rankkit.judges import make_judge
    from rankkit.judges.simulated.synthetic import planted_tasks
    from rankkit.runs.runner import run

    data = planted_tasks({f"s{i}": 1000.0 + 50 * i for i in range(5)}, 2, noise=0.0)
    judge = make_judge("sim:model=fixed,accuracy=1,position_bias=0,noise=0")
    result = run(data, [Heapsort(top_k=0)], judge, progress=False)
    for task_result in result.strategies[0].tasks:
        assert all(extra.position is not None for extra in task_result.extras.values())
