"""Issue 24 item 2: a run that plans more judgments than its limit stops before judging."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

import rankkit
from rankkit.cli import main
from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.runs.scale import DEFAULT_MAX_JUDGMENTS, TooManyJudgments, check_scale, plan_scale
from rankkit.strategies import make_strategy
from tests.helpers import CountingJudge, make_task, perfect_judge


def test_bt_on_1000_candidates_is_refused_before_any_judgment():
    task = make_task(range(1000))
    judge = CountingJudge(perfect_judge())
    with pytest.raises(TooManyJudgments) as refused:
        rankkit.compare([task], ["bt"], judge=judge)
    assert judge.calls == 0
    assert refused.value.plan.judgments == 999_000 and refused.value.limit == DEFAULT_MAX_JUDGMENTS
    message = str(refused.value)
    assert "999,000 judgments" in message and "max_judgments=999000" in message
    assert "--yes" not in message  # the library names its own argument


def test_the_count_takes_declared_worst_cases_and_pays_shared_judgments_once():
    task = make_task(range(10))  # 90 ordered pairs, 10 grades

    def count(*specs):
        return plan_scale([task], [make_strategy(s) for s in specs]).judgments

    assert count("knockout") == 9
    assert count("knockout:order=both") == 18
    assert count("individual") == 10
    assert count("bt") == 90
    assert count("bt", "knockout", "individual") == 100  # capped at every judgment there is
    assert count("heapsort") == make_strategy("heapsort").max_judgments(10)
    assert count("knockout", "individual") == 19
    assert plan_scale([task, make_task(range(4), task_id="u")], [make_strategy("bt")]).judgments == 90 + 12


def test_a_strategy_that_declares_nothing_counts_every_judgment_of_the_task():
    from rankkit.strategies.base import Strategy

    class Undeclared(Strategy):
        name = "mine"
        kind = "pairwise"

    plan = plan_scale([make_task(range(10))], [Undeclared()])
    assert plan.judgments == 100 and plan.undeclared == ("mine",)
    assert "mine declares no worst case" in plan.describe()


def test_max_judgments_raises_or_lifts_the_limit():
    task = make_task(range(30))  # bt: 870 judgments
    with pytest.raises(TooManyJudgments):
        rankkit.compare([task], ["bt"], judge=perfect_judge(), max_judgments=869)
    result = rankkit.compare([task], ["bt"], judge=perfect_judge(), max_judgments=870)
    assert result.strategies[0].cost.comparisons == 870
    assert check_scale([task], [make_strategy("bt")], max_judgments=math.inf).judgments == 870
    with pytest.raises(SpecError, match="max_judgments must be a non-negative number"):
        check_scale([task], [make_strategy("bt")], max_judgments=-1)


def test_the_refusal_carries_the_prompt_token_estimate_of_an_llm_judge():
    task = make_task(range(300))
    with pytest.raises(TooManyJudgments) as refused:
        check_scale([task], [make_strategy("bt")], make_judge("smollm2", stand_in=True))
    assert refused.value.plan.prompt_tokens is not None and refused.value.plan.prompt_tokens > 300 * 299
    assert "prompt tokens" in str(refused.value)


def write_task(path, n: int) -> str:
    candidates = [{"id": f"c{i}", "text": f"answer {i}", "human": {"score": float(i)}} for i in range(n)]
    path.write_text(json.dumps({"task_id": "t", "prompt": "q", "candidates": candidates}) + "\n", encoding="utf-8")
    return str(path)


def test_cli_exits_2_naming_yes_and_runs_with_it(tmp_path):
    data = write_task(tmp_path / "t.jsonl", 30)
    args = ["--data", data, "--judge", "sim", "--no-cache", "--quiet", "--max-judgments", "100"]
    for command in (["compare", "--strategies", "bt"], ["rank", "--strategy", "bt"]):
        refused = CliRunner().invoke(main, [*command, *args])
        assert refused.exit_code == 2, refused.output
        assert "this run plans up to 870 judgments, more than --max-judgments 100" in refused.stderr
        assert "pass --yes" in refused.stderr and "Nothing was judged" in refused.stderr
        accepted = CliRunner().invoke(main, [*command, *args, "--yes"])
        assert accepted.exit_code == 0, accepted.output
    default = CliRunner().invoke(
        main, ["compare", "--strategies", "bt", "--data", data, "--judge", "sim", "--no-cache", "--quiet"]
    )
    assert default.exit_code == 0, default.output  # 870 is well under the default limit
