"""Prompt tokens of a dry run: an LLM judge's rendered prompts, estimated."""

from __future__ import annotations

from rankkit.judges import make_judge
from rankkit.runs.plan import PromptSizes, dry_run, estimate_tokens
from rankkit.strategies import make_strategy


def test_prompt_tokens_of_an_llm_judge_are_its_rendered_prompts(sample_tasks):
    judge = make_judge("openai:some-model,mode=logprob,base_url=http://127.0.0.1:9/v1", stand_in=True)
    report = dry_run(sample_tasks, [make_strategy("individual"), make_strategy("bt:debias=false")], judge)
    expected = sum(
        estimate_tokens(judge.point_prompt(t, c).conversation[0]["content"]) for t in sample_tasks for c in t.candidates
    )
    assert report.rows[0].prompt_tokens == expected
    sizes = PromptSizes(judge)
    task = sample_tasks[0]
    a, b = task.candidates[:2]
    assert sizes.pair(task, a, b) == estimate_tokens(judge.pair_prompts([(task, a, b)])[0].conversation[0]["content"])
    assert report.rows[1].prompt_tokens > report.rows[0].prompt_tokens  # pairs show two answers
    pairs = sum(
        sizes.pair(t, a, b) for t in sample_tasks for i, a in enumerate(t.candidates) for b in t.candidates[i + 1 :]
    )
    assert report.rows[1].prompt_tokens == pairs  # bt:debias=false: every pair in data order
    assert dry_run(sample_tasks, [make_strategy("individual")], make_judge("sim")).rows[0].prompt_tokens is None


def test_prompt_tokens_of_a_bounded_strategy_count_every_judgment_of_its_bound(sample_tasks):
    """heapsort's ``new`` is its declared worst case: every judgment of it is counted at a prompt's size."""
    judge = make_judge("openai:some-model,mode=logprob,base_url=http://127.0.0.1:9/v1", stand_in=True)
    (row,) = dry_run(sample_tasks, [make_strategy("heapsort")], judge).rows
    sizes = [
        PromptSizes(judge).pair(t, a, b) for t in sample_tasks for a in t.candidates for b in t.candidates if a is not b
    ]
    assert row.bounds["new"] == "≤"
    assert min(sizes) * row.new <= row.prompt_tokens <= max(sizes) * row.new


def test_prompt_sizes_keep_each_tasks_largest_prompt(sample_tasks):
    judge = make_judge("openai:some-model,mode=logprob,base_url=http://127.0.0.1:9/v1", stand_in=True)
    sizes = PromptSizes(judge)
    task = sample_tasks[0]
    a, b, c = task.candidates[:3]
    pairs = [sizes.pair(task, a, b), sizes.pair(task, b, c)]
    point = sizes.point(task, a)
    assert sizes.largest == {task.task_id: max(*pairs, point)}
