"""How many sequential batches a run takes with a batching hosted judge (``batch=true``): the dry run's note.

With batches, wall time is the number of batches sent one after another, not the number of
requests. The run's dispatcher hands the judge, in one call, what every task in progress asks
once they all wait (:mod:`rankkit.dispatch`); each such call is one *step* (a knockout round of every
task, all pairs of ``bt``...). :func:`batch_steps` counts the steps of the run on stand-in
verdicts (the ``ranked`` policy): the most sequential judge calls of any one task, since tasks
advance side by side (the real dispatcher may split a step when tasks fall out of step, so a run
can take a few more); a step costs one batch per runtime
call of its judgments (:func:`batches_per_step`): in ``generate`` mode the explanations, then one
verdict read per score (two for a comparison), in ``logprob`` mode one.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from rankkit.judges.base import Judge
from rankkit.plan.stand_in import StandInJudge
from rankkit.plan.usd import llm_judge
from rankkit.strategies.base import Strategy
from rankkit.tasks import Task


class CountingStandIn(StandInJudge):
    """A stand-in judge that counts, per task, the calls that asked it anything: a task's
    sequential steps (one at a time: the run has one worker, so no call mixes tasks)."""

    def __init__(self, inner: Any):
        super().__init__(inner, "ranked")
        self.calls: dict[str, int] = {}

    def _counted(self, method: Any, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        if requests:
            task_id = requests[0][0].task_id
            self.calls[task_id] = self.calls.get(task_id, 0) + 1
        return method(requests)

    def grade_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Grade the requests, counting the call for the task of its requests.

        Parameters
        ----------
        requests : Sequence
            ``(task, candidate)`` requests, all of one task.

        Returns
        -------
        Iterator[tuple[int, Any]]
            ``(index, Grade)`` for each request, from the stand-in judge.
        """
        return self._counted(super().grade_many, requests)

    def compare_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Compare the requests, counting the call for the task of its requests.

        Parameters
        ----------
        requests : Sequence
            ``(task, first, second)`` requests, all of one task.

        Returns
        -------
        Iterator[tuple[int, Any]]
            ``(index, Verdict)`` for each request, from the stand-in judge.
        """
        return self._counted(super().compare_many, requests)

    def choose_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Choose the best of each request's group, counting the call for the task of its requests.

        Parameters
        ----------
        requests : Sequence
            ``(task, candidates)`` requests, all of one task.

        Returns
        -------
        Iterator[tuple[int, Any]]
            ``(index, GroupChoice)`` for each request, from the stand-in judge.
        """
        return self._counted(super().choose_many, requests)

    def rank_many(self, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
        """Rank each request's group, counting the call for the task of its requests.

        Parameters
        ----------
        requests : Sequence
            ``(task, candidates)`` requests, all of one task.

        Returns
        -------
        Iterator[tuple[int, Any]]
            ``(index, GroupRanking)`` for each request, from the stand-in judge.
        """
        return self._counted(super().rank_many, requests)


def batching(judge: Judge) -> bool:
    """Whether ``judge`` sends its requests as batches (an LLM judge whose runtime has ``batch=true``).

    Parameters
    ----------
    judge : Judge
        The run's judge (an LLM judge may sit inside a calibration wrapper).

    Returns
    -------
    bool
        True for an LLM judge whose runtime batches.
    """
    inner = llm_judge(judge)
    return inner is not None and inner.runtime.batched


def batch_steps(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, seed: int = 0) -> int:
    """The judge calls a run makes one after another when every call gathers what all tasks in
    progress ask: the most sequential calls of any one task (tasks advance side by side), on
    stand-in verdicts with no cache (an upper bound for a run that finds some judgments cached).

    Parameters
    ----------
    tasks : Sequence[Task]
        The run's tasks.
    strategies : Sequence[Strategy]
        The run's strategies.
    judge : Judge
        The run's judge; only its identity is used, never called.
    seed : int, default 0
        The run's seed.

    Returns
    -------
    int
        The number of sequential steps (0 when nothing is asked).
    """
    from rankkit.cache import NullCache
    from rankkit.runner import run

    stand_in = CountingStandIn(judge)
    run(tasks, strategies, stand_in, NullCache(), seed=seed, progress=False)
    return max(stand_in.calls.values(), default=0)


def batches_per_step(judge: Judge) -> int:
    """Batches one step costs: ``generate`` mode an explanation and two score reads (a
    comparison), ``logprob`` mode one read.

    Parameters
    ----------
    judge : Judge
        The run's judge.

    Returns
    -------
    int
        3 for an LLM judge in ``generate`` mode, else 1.
    """
    inner = llm_judge(judge)
    return 3 if inner is not None and inner.mode == "generate" else 1


def batch_note(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, seed: int = 0) -> str | None:
    """The dry run's note on sequential batches, or None for a judge that does not batch.

    Parameters
    ----------
    tasks : Sequence[Task]
        The run's tasks.
    strategies : Sequence[Strategy]
        The run's strategies.
    judge : Judge
        The run's judge.
    seed : int, default 0
        The run's seed.

    Returns
    -------
    str or None
        One sentence giving the steps and batches, or None when ``judge`` does not batch.
    """
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
