"""Prompt tokens of a dry run: an LLM judge's rendered prompts, estimated."""

from __future__ import annotations

from rankkit.judges import make_judge
from rankkit.plan import PromptSizes, dry_run, estimate_tokens, plan_judge
from rankkit.strategies import make_strategy


def test_prompt_tokens_of_an_llm_judge_are_its_rendered_prompts(sample_tasks):
    judge = plan_judge("openai:some-model,mode=logprob,base_url=http://127.0.0.1:9/v1")
    report = dry_run(sample_tasks, [make_strategy("individual"), make_strategy("bt:debias=false")], judge)
    expected = sum(estimate_tokens(judge.point_prompt(t, c).conversation[0]["content"])
                   for t in sample_tasks for c in t.candidates)
    assert report.rows[0].prompt_tokens == expected
    sizes = PromptSizes(judge)
    task = sample_tasks[0]
    a, b = task.candidates[:2]
    assert sizes.pair(task, a, b) == estimate_tokens(judge.pair_prompts([(task, a, b)])[0].conversation[0]["content"])
    assert report.rows[1].prompt_tokens > report.rows[0].prompt_tokens  # pairs show two answers
    assert dry_run(sample_tasks, [make_strategy("individual")], make_judge("sim")).rows[0].prompt_tokens is None
