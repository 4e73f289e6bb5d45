"""Every pairwise strategy's ``order`` parameter, the paper's ``debias`` spelling of it in specs,
and the one default policy."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.runs.recorded_run import strategy_from_record
from rankkit.strategies import describe_parameters, make_strategy, strategy_classes
from rankkit.strategies.knockout import Knockout
from rankkit.strategies.order import ORDERS
from tests.helpers import make_task, rank_once

PAIRWISE = sorted(name for name, cls in strategy_classes().items() if cls.kind == "pairwise")

#: The default policy (rankkit.strategies.matches): both orders for strategies that judge every pair or sort;
#: one order otherwise — given where the strategy draws its pairs at random, random where pairs
#: come back or come out of a sort; elo and bt in one order keep data order. (default, debias=false)
POLICY = {
    "active": ("given", "given"),
    "bt": ("both", "given"),
    "double_elimination": ("random", "random"),
    "elo": ("both", "given"),
    "heapsort": ("both", "random"),
    "knockout": ("given", "given"),
    "pairwise": ("given", "given"),
    "panel_elo": ("given", "given"),
    "sliding": ("both", "random"),
    "swiss": ("given", "given"),
}


def test_every_pairwise_strategy_declares_its_order_as_the_policy_says():
    assert sorted(POLICY) == PAIRWISE  # a new pairwise strategy states its order here too
    for name, (default, single) in POLICY.items():
        cls = strategy_classes()[name]
        assert cls.default_order() == default, name
        assert make_strategy(name).order == default
        assert make_strategy(f"{name}:debias=true").order == "both"
        assert make_strategy(f"{name}:debias=false").order == single


def test_the_papers_debias_spelling_is_translated_by_the_spec_parser():
    assert make_strategy("knockout:debias=true") == make_strategy("knockout:order=both") == Knockout(order="both")
    assert make_strategy("knockout:debias=true,tie=first") == Knockout(order="both", tie="first")
    assert make_strategy("heapsort:debias=false").order == "random"  # its one order, not its default
    assert make_strategy("heapsort:debias=false,order=random").order == "random"  # agreeing is fine
    with pytest.raises(SpecError, match="debias=true means order=both, which contradicts order=given"):
        make_strategy("knockout:debias=true,order=given")
    with pytest.raises(SpecError, match="debias=false means order=random, which contradicts order=both"):
        make_strategy("heapsort:order=both,debias=false")
    with pytest.raises(SpecError, match="debias: expected true or false"):
        make_strategy("knockout:debias=maybe")
    with pytest.raises(SpecError, match="strategy individual: debias is not a parameter"):
        make_strategy("individual:debias=true")


def test_strategies_themselves_know_no_debias():
    with pytest.raises(TypeError, match="debias"):
        Knockout(debias=True)  # type: ignore[call-arg]
    with pytest.raises(SpecError, match="order must be one of given, random, both"):
        Knockout(order="shuffled")


@pytest.mark.parametrize("name", PAIRWISE)
def test_labels_params_and_records_spell_order(name):
    cls = strategy_classes()[name]
    for order in ORDERS:
        strategy = make_strategy(f"{name}:order={order}")
        assert strategy.params()["order"] == order and "debias" not in strategy.params()
        assert strategy.label == (name if order == cls.default_order() else f"{name}:order={order}")
        record = {"name": strategy.label, "strategy": name, "params": strategy.params()}
        assert strategy_from_record(record) == strategy
    assert make_strategy(f"{name}:debias=true").label == (
        name if cls.default_order() == "both" else f"{name}:order=both"
    )
    listed = {param: (type_name, default) for param, type_name, default in describe_parameters(cls)}
    assert listed["order"] == ("given|random|both", cls.default_order()) and "debias" not in listed


def test_contradicting_or_unknown_orders_are_refused():
    with pytest.raises(SpecError, match="debias=true means order=both, which contradicts order=random"):
        make_strategy("knockout:order=random,debias=true")
    with pytest.raises(SpecError, match="order must be one of given, random, both"):
        make_strategy("swiss:order=shuffled")
    assert make_strategy("elo:order=both,debias=true").order == "both"


@pytest.mark.parametrize("name", PAIRWISE)
@pytest.mark.parametrize("order", ORDERS)
def test_every_order_ranks_and_costs_what_it_says(name, order):
    task = make_task([float(i % 4) for i in range(7)])
    strategy = make_strategy(f"{name}:order={order}")
    _, cost, source = rank_once(task, strategy, FixedAccuracyJudge(accuracy=0.8, position_bias=0.2), seed=1)
    n = len(task.candidates)
    assert cost.comparisons <= strategy.max_judgments(n)
    if strategy.exact_judgments(n) is not None:
        assert cost.comparisons == strategy.exact_judgments(n)
    pairs = {(c.first, c.second) for c in source.comparisons}
    if order == "both":  # every pair in both orders
        assert all((b, a) in pairs for a, b in pairs)
