"""Budgets in answers, tokens and USD (rankkit.strategies._spend): each stop stays within its budget and
records all four spends, which agree with the bill (rankkit.runs.bill)."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.samples import sample_path
from rankkit.data.specs import SpecError
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.spend import Meter
from rankkit.runs.bill import run_total
from rankkit.runs.results import RunResult
from rankkit.strategies import make_strategy
from rankkit.strategies._spend import judgment_budget
from rankkit.strategies.matches import MatchSource
from tests.helpers import make_task

SAMPLE = str(sample_path("tasks"))
PRICE_IN, PRICE_OUT = 2.0, 8.0  # USD per 1M tokens (gpt-4.1's list price), for the simulated judge
#: Per candidate; the test task's judgments cost 10 tokens (a comparison) or 18 (a group of 4).
BUDGETS = ("4answers", "30tokens", "0.00006usd")
SPECS = (
    "active:settle=false",
    "active:until=top1,criterion=target",
    "swiss:until=top1",
    "setwise_groups:k=4,rounds=50,until=top1",
)


def with_budget(spec: str, budget: str) -> str:
    """``spec`` with ``budget=`` added."""
    return f"{spec}{',' if ':' in spec else ':'}budget={budget}"


def ranked(spec: str, task=None, meter: Meter | None = None):
    """``spec`` ranking an 8-candidate task on a simulated judge: the extras of one candidate, and the source."""
    task = task or make_task([i / 2 for i in range(8)])
    source = MatchSource(task, JudgmentMemo(make_judge("sim:preset=gpt4,seed=1")), meter=meter)
    ranking = make_strategy(spec).rank(task, source, random.Random(0))
    return ranking.extras[task.candidate_ids[0]], source


@pytest.mark.parametrize("budget", BUDGETS)
@pytest.mark.parametrize("spec", SPECS)
def test_each_unit_stops_within_its_budget_and_records_all_four_spends(spec, budget):
    extras, source = ranked(with_budget(spec, budget), meter=Meter(PRICE_IN, PRICE_OUT))
    strategy = make_strategy(with_budget(spec, budget))
    spent = {unit: getattr(extras, f"spent_{unit}") for unit in ("judgments", "answers", "tokens", "usd")}
    # The simulated judge reports no usage: every judgment's tokens are the estimate, known before
    # it is asked, so the stop is strictly within the budget.
    assert 0 < spent[strategy.budget_unit] <= strategy.budget * 8 * (1 + 1e-9)
    assert extras.stopped == "budget"
    assert spent["judgments"] == source.cost.comparisons
    assert spent["answers"] == (4 * spent["judgments"] if "setwise" in spec else 2 * spent["judgments"])
    assert spent["usd"] == pytest.approx(spent["tokens"] * PRICE_IN / 1e6, rel=1e-9)


@pytest.mark.parametrize("spec", SPECS)
def test_a_larger_budget_spends_more_and_a_budget_in_judgments_is_unchanged(spec):
    small, _ = ranked(with_budget(spec, "20tokens"), meter=Meter(PRICE_IN, PRICE_OUT))
    large, _ = ranked(with_budget(spec, "40tokens"), meter=Meter(PRICE_IN, PRICE_OUT))
    assert small.spent_tokens < large.spent_tokens
    judgments, source = ranked(with_budget(spec, "2"))
    assert source.cost.comparisons <= 2 * 8
    # Recorded where a target or a budget in another unit decides the stop; else the extras are as before.
    assert (judgments.spent_judgments is None) == ("until" not in spec)


def test_the_judgments_cap_of_another_unit():
    assert judgment_budget(3.0, "judgments") == 3.0
    assert judgment_budget(8.0, "answers") == 4.0  # a judgment shows at least 2 answers
    assert judgment_budget(1e6, "tokens") >= 10 * 10  # no cap of its own: every pair, both orders


@pytest.mark.parametrize("spec", ["active", "swiss", "setwise_groups:k=4"])
def test_a_usd_budget_needs_a_price_and_is_refused_before_any_judgment(spec):
    task = make_task([1, 2, 3, 4, 5])
    source = MatchSource(task, JudgmentMemo(make_judge("sim:preset=gpt4,seed=1")))
    with pytest.raises(SpecError, match=rf"strategy {spec.split(':')[0]}: budget=0.01usd needs a judge with a price"):
        make_strategy(with_budget(spec, "0.01usd")).rank(task, source, random.Random(0))
    assert source.cost.comparisons == 0


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("active:budget=6answerz", "strategy active: budget: expected a number of judgments, answers, tokens or usd"),
        ("swiss:budget=-3tokens", "strategy swiss: budget must be > 0"),
        ("setwise_groups:budget=0usd", "strategy setwise_groups: budget must be > 0"),
        ("active:budget=3usd,budget_unit=tokens", "budget=3usd contradicts budget_unit=tokens"),
        ("active:budget_unit=dollars", "strategy active: budget_unit must be one of"),
        ("bt,swiss:budget=0.01usd", "strategy swiss: budget=0.01usd needs a judge with a price"),  # before bt judges
    ],
)
def test_bad_budgets_exit_2_naming_the_strategy_and_option(spec, message):
    result = CliRunner().invoke(
        main, ["compare", "--data", SAMPLE, "--judge", "sim:preset=gpt4", "--strategies", spec, "--no-cache"]
    )
    assert result.exit_code == 2, result.output
    assert message in result.output


@pytest.mark.parametrize("spec", ["active:until=top1,budget=300tokens", "swiss:until=top1,budget=0.0006usd"])
def test_on_a_priced_hosted_judge_the_spends_match_the_bill(spec, tmp_path):
    """Against the loopback OpenAI stand-in (gpt-4.1: priced, reports usage), one strategy, no cache:
    each task's spends are its cost, and the tasks' spends add up to the run's bill."""
    from tests.hosted_servers import OpenAILikeServer, human_quality

    out = tmp_path / "run.json"
    with OpenAILikeServer(human_quality(load_tasks(SAMPLE))) as server:
        result = CliRunner(env={"OPENAI_API_KEY": "sk-test"}).invoke(
            main,
            [
                "compare",
                "--data",
                SAMPLE,
                "--judge",
                f"openai:gpt-4.1,base_url={server.base_url},backoff=0.01",
                "--strategies",
                spec,
                "--no-cache",
                "--quiet",
                "--out",
                str(out),
            ],
            catch_exceptions=False,
        )
    assert result.exit_code == 0, result.output
    run = RunResult.from_dict(json.loads(out.read_text()))
    strategy = make_strategy(spec)
    tasks = {task.task_id: task for task in load_tasks(SAMPLE)}
    spent_tokens = spent_usd = 0.0
    for task in run.strategies[0].tasks:
        extras = next(iter(task.extras.values()))
        assert extras.spent_judgments == task.cost.comparisons == task.cost.judge_calls
        assert extras.spent_tokens == task.cost.prompt_tokens + task.cost.completion_tokens
        assert extras.spent_usd == pytest.approx(task.cost.usd, abs=1e-9)
        # Reported usage is known only after a judgment: the step is quoted at the estimate scaled by
        # the largest reported/estimated ratio so far; the tolerance is one comparison's spend.
        one = max(extras.spent_tokens, 1) / max(extras.spent_judgments, 1) if strategy.budget_unit == "tokens" else 0
        one_usd = extras.spent_usd / max(extras.spent_judgments, 1)
        limit = strategy.budget * len(tasks[task.task_id].candidates)
        spent = extras.spent_tokens if strategy.budget_unit == "tokens" else extras.spent_usd
        assert spent <= limit + (one if strategy.budget_unit == "tokens" else one_usd) * 1.5
        spent_tokens += extras.spent_tokens
        spent_usd += extras.spent_usd
    bill = run_total(run)
    assert spent_tokens == bill["prompt_tokens"] + bill["completion_tokens"] > 0
    assert spent_usd == pytest.approx(bill["usd"], abs=1e-9)
