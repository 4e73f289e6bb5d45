"""Small test doubles shared by the test modules."""

from __future__ import annotations

from collections.abc import Sequence

from rankkit.data.tasks import Candidate, Task
from rankkit.judges.base import Judge, JudgeError
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.values import Grade, Verdict


def make_task(
    scores: Sequence[float],
    task_id: str = "t",
    systems: Sequence[str] | None = None,
    scale: tuple[float, float] | None = None,
) -> Task:
    """A task whose candidate ``c{i}`` has human score ``scores[i]``."""
    candidates = tuple(
        Candidate(
            id=f"c{i}",
            text=f"answer number {i}",
            system=(systems[i] if systems else f"s{i}"),
            human={"score": float(s)},
        )
        for i, s in enumerate(scores)
    )
    low, high = scale or (min(scores), max(scores) if max(scores) > min(scores) else min(scores) + 1)
    return Task(
        task_id=task_id,
        prompt=f"question {task_id}",
        candidates=candidates,
        criterion="score",
        scale=(float(low), float(high)),
    )


def perfect_judge(**kwargs) -> FixedAccuracyJudge:
    return FixedAccuracyJudge(accuracy=1.0, position_bias=0.0, noise=0.0, **kwargs)


class CountingJudge(Judge):
    """Wraps a judge, counts calls, and can fail after ``fail_after`` judgments."""

    backend = "counting"

    def __init__(self, inner: Judge, fail_after: int | None = None):
        self.inner = inner
        self.fail_after = fail_after
        self.calls = 0
        self.shown_first: list[str] = []  # the candidate shown first in each comparison asked

    @property
    def fingerprint(self) -> str:  # same cache identity as the wrapped judge
        return self.inner.fingerprint

    def _tick(self) -> None:
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise JudgeError(f"planted failure after {self.calls} calls")
        self.calls += 1

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        self._tick()
        self.shown_first.append(first.id)
        return self.inner.compare(task, first, second)

    def grade(self, task: Task, candidate: Candidate) -> Grade:
        self._tick()
        return self.inner.grade(task, candidate)


def rank_once(task: Task, strategy, judge: Judge, seed: int = 0):
    """Rank one task outside a run: returns (ranking, cost, source) on a fresh graph, no cache."""
    import random

    from rankkit.judgments.cache import NullCache
    from rankkit.judgments.memo import JudgmentMemo
    from rankkit.strategies.matches import Cost, MatchSource

    cost = Cost()
    source = MatchSource(task, JudgmentMemo(judge, NullCache()), strategy.label)
    cost = source.cost
    return strategy.rank(task, source, random.Random(seed)), cost, source


def human_order(task: Task) -> list[str]:
    """Candidate ids, best human score first."""
    human = task.human_scores()
    return sorted(human, key=lambda cid: -human[cid])


def score_order(ranking) -> list[str]:
    """Candidate ids, best strategy score first."""
    return sorted(ranking.scores, key=lambda cid: -ranking.scores[cid])


class RecordingJudge(Judge):
    """Delegates to another judge and records every comparison it is asked."""

    backend = "recording"

    def __init__(self, inner: Judge):
        self.inner = inner
        self.asked: list[tuple[str, str, str]] = []

    def fingerprint_fields(self) -> dict:
        return {"inner": self.inner.fingerprint}

    def compare_many(self, requests: Sequence):
        self.asked += [(task.task_id, a.id, b.id) for task, a, b in requests]
        yield from self.inner.compare_many(requests)


def grades_received(task: Task, comparisons) -> dict[str, list[float]]:
    """Every grade each candidate got in the given comparisons, in their order (computed here, in
    the test, independently of the strategy's own bookkeeping)."""
    grades: dict[str, list[float]] = {cid: [] for cid in task.candidate_ids}
    for comparison in comparisons:
        grades[comparison.first].append(comparison.verdict.first_grade)
        grades[comparison.second].append(comparison.verdict.second_grade)
    return grades


def modules_loaded_by(script: str, modules: Sequence[str]) -> list[str]:
    """Run ``script`` in a fresh interpreter and return which of ``modules`` it left imported
    (import-cost tests: a module imported in this test process proves nothing)."""
    import subprocess
    import sys

    code = script + f"\nimport sys\nprint(','.join(m for m in {list(modules)!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    return [name for name in out.stdout.strip().split(",") if name]


_OWN_SCORE = {
    "first": r"(?:Answer|Antwort|Translation)\s*1\s*:\s*\**\s*([0-9]+(?:[.,][0-9]+)?)",
    "second": r"(?:Answer|Antwort|Translation)\s*2\s*:\s*\**\s*([0-9]+(?:[.,][0-9]+)?)",
    "score": r"(?:Score|Punktzahl)\s*:\s*\**\s*([0-9]+(?:[.,][0-9]+)?)",
}


def continuation_logprobs(assistant_prefix: str, choices: Sequence[str]) -> dict[str, float]:
    """What a self-consistent model puts after rankkit's verdict prefix: the score its own
    explanation already gave for that slot (a half point split evenly between the two digits),
    nothing when its explanation gave none. A test double for a real model's continuation.

    Only the judge's explanation (before ``Final verdict``) is consulted; the slot is the label
    the prefix ends with.
    """
    import math
    import re

    for label_prefix in ("\n\nBest: ", "\n\nRanking: "):  # k-way: the label its explanation named last
        if assistant_prefix.endswith(label_prefix):
            named = re.findall(r"(?:Best|Ranking):\s*([A-H])", assistant_prefix[: -len(label_prefix)])
            return {named[-1]: 0.0} if named and named[-1] in choices else {}
    explanation, marker, verdict_line = assistant_prefix.rpartition("\n\nFinal verdict:")
    if not marker:
        explanation, marker, verdict_line = assistant_prefix.rpartition("\n\nEndgültiges Urteil:")
    slot = (
        "second"
        if re.search(r"2:\s*$", verdict_line)
        else "score"
        if re.search(r"(?:Score|Punktzahl):\s*$", verdict_line)
        else "first"
    )
    found = re.findall(_OWN_SCORE[slot], explanation, flags=re.IGNORECASE)
    if not found:
        return {}
    value = float(found[-1].replace(",", "."))
    low = math.floor(value)
    digits = [str(low)] if value == low else [str(low), str(low + 1)]
    # Equal weights as log 1 = 0 (readers renormalise): exp(0) is exact on every CPU, so the
    # expected digit of a half point is exactly x.5, not x.5 give or take a libm rounding.
    return {digit: 0.0 for digit in digits if digit in choices}


def run_spec(judge_spec: str, tasks: Sequence[Task], strategies: str, cache_path):
    """Run the comma-separated ``strategies`` on ``tasks`` with the judge ``judge_spec`` and a
    SQLite cache at ``cache_path``; returns (result, judge). The judge is closed when the run
    ends, even when it raises."""
    from rankkit.data.specs import split_list
    from rankkit.judges import make_judge
    from rankkit.judgments.cache import JudgmentCache
    from rankkit.runs.runner import run
    from rankkit.strategies import make_strategy

    judge = make_judge(judge_spec)
    try:
        with JudgmentCache(cache_path) as cache:
            return run(
                tasks,
                [make_strategy(s) for s in split_list(strategies)],
                judge,
                cache,
                progress=False,
                judge_spec=judge_spec,
            ), judge
    finally:
        judge.close()


def read_all(runtime, conversations: Sequence, prefix: str, choices: Sequence[str]):
    """``runtime.next_token_logprobs`` with the same ``prefix`` and ``choices`` on every conversation."""
    rows = len(conversations)
    return runtime.next_token_logprobs(conversations, prefixes=[prefix] * rows, choices=[choices] * rows)
