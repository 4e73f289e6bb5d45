"""The dry run's count of sequential batches for a batching judge (rankkit/runs/plan/batches.py)."""

from __future__ import annotations

import math

import pytest

from rankkit.judges import make_judge
from rankkit.runs.plan.batches import batch_note, batch_steps
from rankkit.runs.plan.dry_run import dry_run
from rankkit.runs.plan.usd import estimate_usd
from rankkit.strategies import make_strategy

BATCHING = "openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,batch=true"


def test_knockout_takes_log2_n_steps_and_bt_one(sample_tasks):
    judge = make_judge(BATCHING)
    rounds = max(math.ceil(math.log2(len(task.candidates))) for task in sample_tasks)
    assert batch_steps(sample_tasks, [make_strategy("knockout")], judge) == rounds
    assert batch_steps(sample_tasks, [make_strategy("bt")], judge) == 1
    assert "about 3 in all" in batch_note(sample_tasks, [make_strategy("bt")], judge)  # generate: 3 batches a step


def test_only_a_batching_judge_gets_the_note_and_the_batch_discount(sample_tasks):
    direct = make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1")
    batched = make_judge(BATCHING)
    strategies = [make_strategy("knockout")]
    assert batch_note(sample_tasks, strategies, direct) is None
    assert any(note.startswith("batch=true: about") for note in dry_run(sample_tasks, strategies, batched).notes)
    assert estimate_usd(batched, "pairwise", 10, 1000.0) == pytest.approx(
        estimate_usd(direct, "pairwise", 10, 1000.0) / 2, rel=1e-12
    )
