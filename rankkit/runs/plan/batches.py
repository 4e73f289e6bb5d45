"""How many sequential batches a run takes with a batching hosted judge (``batch=true``): the dry run's note.

With batches, wall time is the number of batches sent one after another. Each dispatcher call
gathering what all tasks in progress ask is one *step*; :func:`batch_steps` counts them on
stand-in verdicts (the real dispatcher may split a step, so a run can take a few more), and a
step costs :func:`batches_per_step` batches.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rankkit.data.tasks import Task
from rankkit.judges.base import Judge
from rankkit.runs.plan.stand_in import StandInJudge
from rankkit.runs.plan.usd import hosted_runtime, llm_judge
from rankkit.strategies.base import Strategy


class CountingStandIn(StandInJudge):
    """A stand-in judge that counts, per task, the calls that asked it anything (its sequential steps)."""

    def __init__(self, inner: Any):
        super().__init__(inner, "ranked")
        self.calls: dict[str, int] = {}

    def _counted(self, method: Any, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if requests:
            task_id = requests[0][0].task_id
            self.calls[task_id] = self.calls.get(task_id, 0) + 1
        return method(requests)

    def grade_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Grade ``(task, candidate)`` requests of one task, counting the call."""
        return self._counted(super().grade_many, requests)

    def compare_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Compare ``(task, first, second)`` requests of one task, counting the call."""
        return self._counted(super().compare_many, requests)

    def choose_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Choose the best of each ``(task, candidates)`` request of one task, counting the call."""
        return self._counted(super().choose_many, requests)

    def rank_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Rank each ``(task, candidates)`` request of one task, counting the call."""
        return self._counted(super().rank_many, requests)


def batching(judge: Judge) -> bool:
    """Whether ``judge`` is an LLM judge (possibly inside a calibration wrapper) whose runtime has ``batch=true``."""
    hosted = hosted_runtime(judge)
    return hosted is not None and hosted.batched


def batch_steps(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, seed: int = 0) -> int:
    """The sequential judge calls of a run whose calls gather what all tasks in progress ask (0 when nothing is asked).

    The most calls of any one task, on stand-in verdicts with no cache: an upper bound for a run that
    finds some judgments cached. ``judge`` is never called.
    """
    from rankkit.judgments.cache import NullCache
    from rankkit.runs.runner import run

    stand_in = CountingStandIn(judge)
    run(tasks, strategies, stand_in, NullCache(), seed=seed, progress=False)
    return max(stand_in.calls.values(), default=0)


def batches_per_step(judge: Judge) -> int:
    """Batches one step costs: 3 for an LLM judge in ``generate`` mode (explanation, two score reads), else 1."""
    inner = llm_judge(judge)
    return 3 if inner is not None and inner.mode == "generate" else 1


def batch_note(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, seed: int = 0) -> str | None:
    """The dry run's one-sentence note on steps and batches, or None for a judge that does not batch."""
    if not batching(judge):
        return None
    steps = batch_steps(tasks, strategies, judge, seed)
    per_step = batches_per_step(judge)
    return (
        f"batch=true: about {steps} sequential step{'s' if steps != 1 else ''} for the whole run (each "
        f"gathers what every task in "
        f"progress asks), each sent as up to {per_step} batch{'es' if per_step > 1 else ''} one after "
        f"another (about {steps * per_step} in all): the wall time is that many batch turnarounds"
    )
