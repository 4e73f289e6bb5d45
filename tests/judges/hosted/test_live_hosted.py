"""Live smoke tests against the real hosted APIs: they run only where a real key is exported
(``OPENAI_API_KEY``, ``ANTHROPIC_API_KEY``) and never in CI (``CI`` set). Each ranks one small
sample task with knockout and checks that nothing was refused, that verdicts were read by the
hosted path (never parsed from text) and that the run has a cost in dollars. They cost a few
cents at most.
"""

from __future__ import annotations

import os

import pytest

import rankkit
from rankkit.data.tasks import load_tasks
from tests.judges.hosted.test_openai_hosted import SAMPLE


def live(variable: str):
    return pytest.mark.skipif(
        not os.environ.get(variable) or bool(os.environ.get("CI")),
        reason=f"live test: needs {variable} exported, and never runs in CI",
    )


def check(result: rankkit.RunResult, paths: set[str]) -> None:
    run = result.strategies[0]
    assert run.cost.usd > 0
    assert {c.verdict.extras["verdict_path"] for t in run.tasks for c in t.comparisons} <= paths


@pytest.mark.slow
@live("OPENAI_API_KEY")
def test_openai_live_smoke():
    tasks = load_tasks(SAMPLE, limit=1)
    result = rankkit.compare(tasks, ["knockout"], judge="openai:gpt-4.1-mini,max_new_tokens=128")
    check(result, {"followup", "followup_enum"})


@pytest.mark.slow
@live("ANTHROPIC_API_KEY")
def test_anthropic_live_smoke():
    tasks = load_tasks(SAMPLE, limit=1)
    result = rankkit.compare(tasks, ["knockout"], judge="anthropic:claude-haiku-4-5,max_new_tokens=128")
    check(result, {"prefill"})
