"""The dollar estimate of a dry run (rankkit/runs/plan/usd.py)."""

from __future__ import annotations

import pytest

from rankkit.judges import make_judge
from rankkit.runs.plan.dry_run import dry_run
from rankkit.runs.plan.output import format_dry_run
from rankkit.runs.plan.usd import READ_OVERHEAD_TOKENS, estimate_usd
from rankkit.strategies import make_strategy


def test_a_priced_judge_gets_a_usd_estimate_from_its_rendered_prompts(sample_tasks):
    judge = make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,price_in=2,price_out=8,max_new_tokens=100")
    report = dry_run(sample_tasks, [make_strategy("knockout"), make_strategy("individual")], judge)
    knockout, individual = report.rows
    # generate mode: the prompt, then 2 reads resending prompt + explanation; 100 + 2 output tokens each
    expected = (
        (3 * knockout.prompt_tokens + knockout.new * 2 * (100 + READ_OVERHEAD_TOKENS)) * 2 + knockout.new * 102 * 8
    ) / 1e6
    assert knockout.usd == pytest.approx(expected, rel=1e-9)
    assert individual.usd == pytest.approx(
        ((2 * individual.prompt_tokens + individual.new * 140) * 2 + individual.new * 101 * 8) / 1e6, rel=1e-9
    )
    text = format_dry_run(report)
    assert "est_usd" in text and "estimated USD" in text and "no prompt-cache hits" in text


def test_an_unpriced_judge_shows_no_usd(sample_tasks):
    judge = make_judge("openai:my-local-model,base_url=http://127.0.0.1:9/v1")
    report = dry_run(sample_tasks[:2], [make_strategy("knockout")], judge)
    assert report.rows[0].usd is None
    assert estimate_usd(judge, "pairwise", 5, 100.0) is None
    assert "est_usd" not in format_dry_run(report) and "USD" not in format_dry_run(report)
