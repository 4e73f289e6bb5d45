"""Every pairwise strategy's ``order`` parameter, its ``debias`` alias, and the one default policy."""

from __future__ import annotations

import pytest

from rankkit.judges.sim import SimulatedJudge
from rankkit.order import ORDERS
from rankkit.results import strategy_from_record
from rankkit.specs import SpecError
from rankkit.strategies import describe_parameters, make_strategy, strategy_classes
from tests.helpers import make_task, rank_once

PAIRWISE = sorted(name for name, cls in strategy_classes().items() if cls.kind == "pairwise")

#: The default policy (rankkit.matches): both orders for strategies that judge every pair or sort;
#: one order otherwise — given where the strategy draws its pairs at random, random where pairs
#: come back or come out of a sort; elo and bt in one order keep data order. (default, debias=false)
POLICY = {"active": ("given", "given"), "bt": ("both", "given"), "double_elimination": ("random", "random"),
          "elo": ("both", "given"), "heapsort": ("both", "random"), "knockout": ("given", "given"),
          "pairwise": ("given", "given"), "panel_elo": ("given", "given"), "sliding": ("both", "random"),
          "swiss": ("given", "given")}


def test_every_pairwise_strategy_declares_its_order_as_the_policy_says():
    assert sorted(POLICY) == PAIRWISE  # a new pairwise strategy states its order here too
    for name, (default, single) in POLICY.items():
        cls = strategy_classes()[name]
        assert (cls.default_order(), cls.undebiased_order()) == (default, single), name
        assert make_strategy(name).order == default
        assert make_strategy(f"{name}:debias=true").order == "both"
        assert make_strategy(f"{name}:debias=false").order == single


@pytest.mark.parametrize("name", PAIRWISE)
def test_debias_is_an_alias_of_order_in_specs_constructors_labels_and_records(name):
    cls = strategy_classes()[name]
    assert cls(debias=True) == cls(order="both") == make_strategy(f"{name}:order=both")
    assert cls(debias=False) == cls(order=cls.undebiased_order())
    for order in ORDERS:
        strategy = make_strategy(f"{name}:order={order}")
        # Labels keep the alias where it says the order, so names written before `order` still match.
        if order == cls.default_order():
            assert strategy.label == name
        elif order == "both":
            assert strategy.label == f"{name}:debias=true" and strategy.params()["debias"] is True
        elif order == cls.undebiased_order():
            assert strategy.label == f"{name}:debias=false" and strategy.params()["debias"] is False
        else:
            assert strategy.label == f"{name}:order={order}" and strategy.params()["order"] == order
        record = {"name": strategy.label, "strategy": name, "params": strategy.params()}
        assert strategy_from_record(record) == strategy
    listed = dict((param, default) for param, _, default in describe_parameters(cls))
    assert listed["order"] == cls.default_order() and listed["debias"] == (cls.default_order() == "both")


def test_results_written_before_order_existed_are_read_back_as_the_same_strategy():
    old = {"name": "knockout:debias=true,tie=first", "strategy": "knockout", "params": {"debias": True, "tie": "first"}}
    assert strategy_from_record(old) == make_strategy("knockout:order=both,tie=first")
    old = {"name": "elo:debias=false", "strategy": "elo",
           "params": {"debias": False, "k": 16.0, "permutations": 100, "initial": 1000.0, "scale": 400.0, "base": 10.0}}
    assert strategy_from_record(old) == make_strategy("elo:order=given")


def test_contradicting_or_unknown_orders_are_refused():
    with pytest.raises(SpecError, match="debias=true means order=both, which contradicts order=random"):
        make_strategy("knockout:order=random,debias=true")
    with pytest.raises(SpecError, match="order must be one of given, random, both"):
        make_strategy("swiss:order=shuffled")
    with pytest.raises(SpecError, match="debias=true means order=both, which contradicts order=given"):
        make_strategy("knockout:order=given,debias=true")  # given is knockout's default
    assert make_strategy("elo:order=both,debias=true").order == "both"


@pytest.mark.parametrize("name", PAIRWISE)
@pytest.mark.parametrize("order", ORDERS)
def test_every_order_ranks_and_costs_what_it_says(name, order):
    task = make_task([float(i % 4) for i in range(7)])
    strategy = make_strategy(f"{name}:order={order}")
    _, cost, source = rank_once(task, strategy, SimulatedJudge(accuracy=0.8, position_bias=0.2), seed=1)
    n = len(task.candidates)
    assert cost.comparisons <= strategy.max_judgments(n)
    if strategy.exact_judgments(n) is not None:
        assert cost.comparisons == strategy.exact_judgments(n)
    pairs = {(m.first, m.second) for m in source.matches}
    if order == "both":  # every pair in both orders
        assert all((b, a) in pairs for a, b in pairs)
