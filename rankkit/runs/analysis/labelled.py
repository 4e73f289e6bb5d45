"""The analyses' input: a results file read as a RunResult, and each strategy's tasks that have human scores.

Tasks without a full set of human scores take no part in any analysis.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from rankkit.data.specs import SpecError
from rankkit.runs.results import RunResult, StrategyRun, read_results
from rankkit.stats.metrics import METRIC_NAMES
from rankkit.strategies.base import CandidateExtras

#: The metrics analysed by default: the paper's Pearson, rank agreement pooled and per task, and
#: pairwise ranking accuracy.
DEFAULT_METRICS = ("pearson", "spearman", "task_spearman", "pairwise_accuracy")


def load_results(path: str | Path) -> RunResult:
    """Read a results file written by ``rankkit compare --out`` (:func:`rankkit.runs.results.read_results`)."""
    return read_results(path)


def strategy_names(results: RunResult) -> list[str]:
    """The strategy labels in the file, in run order (e.g. ``knockout:order=both``)."""
    return [s.name for s in results.strategies]


def strategy_run(results: RunResult, name: str) -> StrategyRun:
    """One strategy's results.

    Raises
    ------
    SpecError
        When the run has no such strategy (the message names those present).
    """
    for strategy in results.strategies:
        if strategy.name == name:
            return strategy
    raise SpecError(f"no strategy {name!r} in the results (present: {', '.join(strategy_names(results))})")


def human_scores(results: RunResult) -> dict[str, dict[str, float]]:
    """task id -> candidate id -> human score, for the tasks whose every candidate has one."""
    out = {}
    for task in results.tasks:
        values = {c.id: c.human.get(task.criterion) for c in task.candidates} if task.criterion else {}
        if values and all(isinstance(v, (int, float)) for v in values.values()):
            out[task.task_id] = {cid: float(v) for cid, v in values.items()}
    return out


@dataclass(frozen=True)
class LabelledTask:
    """One task of one strategy, with human scores: what every analysis starts from."""

    task_id: str
    scores: dict[str, float]
    ranking: list[str]
    human: dict[str, float]
    extras: dict[str, CandidateExtras]


def labelled_tasks(results: RunResult, name: str) -> list[LabelledTask]:
    """The tasks of strategy ``name`` that have human scores, in the order of the file."""
    human = human_scores(results)
    out = []
    for task in strategy_run(results, name).tasks:
        truth = human.get(task.task_id)
        if truth:
            out.append(
                LabelledTask(
                    task_id=task.task_id,
                    scores=dict(task.scores),
                    ranking=list(task.ranking),
                    human=truth,
                    extras=task.extras,
                )
            )
    return out


def check_metrics(names: Sequence[str]) -> list[str]:
    """Validate metric names against :data:`rankkit.stats.metrics.METRIC_NAMES` and return them.

    Raises
    ------
    SpecError
        When a name is unknown or none is given.
    """
    unknown = [n for n in names if n not in METRIC_NAMES]
    if unknown:
        raise SpecError(f"unknown metric(s) {', '.join(unknown)} (known: {', '.join(METRIC_NAMES)})")
    if not names:
        raise SpecError("no metrics given")
    return list(names)
