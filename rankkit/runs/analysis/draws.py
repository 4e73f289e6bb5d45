"""Metrics on bootstrap resamples of tasks, computed once per strategy: the vectorised core of the analyses.

:class:`TaskMetrics` computes each task's pieces once and combines them per batch of resamples
(the same numbers as :func:`rankkit.stats.metrics.evaluate` on the repeated tasks); :class:`MetricDraws`
keeps every strategy's draws for the correlation table and the paired differences.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Sequence

import numpy as np
from scipy import stats

from rankkit.data.specs import SpecError
from rankkit.runs.analysis.labelled import DEFAULT_METRICS, LabelledTask, check_metrics, labelled_tasks
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES, Interval, bootstrap, resample_indices, unit_counts
from rankkit.stats.metrics import (
    CORRELATIONS,
    METRIC_NAMES,
    correlation,
    pairwise_accuracy_counts,
    row_pearson,
    top1_share,
)


def row_correlations(method: str, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> np.ndarray:
    """``rankkit.stats.metrics.correlation(method, xs[k], ys[k])`` for every k, batched for speed.

    ``method`` is ``pearson``, ``spearman`` (Pearson on average ranks) or ``kendall`` (row by row).
    Rows with fewer than two points or a constant side are NaN.
    """
    out = np.full(len(xs), math.nan)
    if method not in CORRELATIONS:
        raise SpecError(f"unknown correlation {method!r} (known: {', '.join(CORRELATIONS)})")
    if method == "kendall":
        for k, (x, y) in enumerate(zip(xs, ys)):
            out[k] = correlation(method, x, y)
        return out
    rows_by_length: dict[int, list[int]] = defaultdict(list)
    for k, x in enumerate(xs):
        rows_by_length[len(x)].append(k)
    for length, rows in rows_by_length.items():
        if length < 2:
            continue
        x_rows = np.array([xs[k] for k in rows], dtype=float)
        y_rows = np.array([ys[k] for k in rows], dtype=float)
        defined = (np.ptp(x_rows, axis=1) > 0) & (np.ptp(y_rows, axis=1) > 0)
        if not defined.any():
            continue
        x_rows, y_rows = x_rows[defined], y_rows[defined]
        if method == "spearman":
            x_rows, y_rows = stats.rankdata(x_rows, axis=1), stats.rankdata(y_rows, axis=1)
        # Closed form: pearsonr's near-constant warning could only be hidden by a non-thread-safe filter swap.
        out[np.asarray(rows)[defined]] = row_pearson(x_rows, y_rows)
    return out


class TaskMetrics:
    """The per-task pieces of every metric of :func:`rankkit.stats.metrics.evaluate`, computed once.

    On resampled multisets of tasks it gives exactly what ``evaluate`` gives on the repeated tasks.
    """

    def __init__(self, tasks: Sequence[LabelledTask]):
        self.tasks = list(tasks)
        self.scores = [np.array([t.scores[c] for c in t.human], dtype=float) for t in self.tasks]
        self.human = [np.array(list(t.human.values()), dtype=float) for t in self.tasks]
        self.task_correlation = {
            method: np.array([correlation(method, s, h) for s, h in zip(self.scores, self.human)])
            for method in CORRELATIONS
        }
        self.pair_counts = np.array(
            [pairwise_accuracy_counts(t.scores, t.human) for t in self.tasks], dtype=float
        ).reshape(-1, 2)
        self.top1 = np.array([top1_share(t.scores, t.human) for t in self.tasks], dtype=float)

    def __len__(self) -> int:
        return len(self.tasks)

    def values(self, names: Sequence[str], samples: np.ndarray) -> np.ndarray:
        """Metrics ``names`` on each row of a (rows, tasks) array of task indices: a (rows, names) array."""
        samples = np.atleast_2d(samples)
        out = np.full((len(samples), len(names)), math.nan)
        if not self.tasks or samples.shape[1] == 0:
            return out
        counts = unit_counts(samples, len(self.tasks))
        for column, name in enumerate(names):
            if name in CORRELATIONS:
                xs = [np.concatenate([self.scores[i] for i in row]) for row in samples]
                ys = [np.concatenate([self.human[i] for i in row]) for row in samples]
                out[:, column] = row_correlations(name, xs, ys)
            elif name.startswith("task_") and name[5:] in CORRELATIONS:
                per_task = self.task_correlation[name[5:]]
                defined = ~np.isnan(per_task)
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[:, column] = (counts @ np.where(defined, per_task, 0.0)) / (counts @ defined)
            elif name == "pairwise_accuracy":
                correct, total = (counts @ self.pair_counts).T
                with np.errstate(invalid="ignore", divide="ignore"):
                    out[:, column] = np.where(total > 0, correct / np.maximum(total, 1), math.nan)
            elif name == "top1_accuracy":
                out[:, column] = counts @ self.top1 / samples.shape[1]
            else:
                raise SpecError(f"unknown metric {name!r} (known: {', '.join(METRIC_NAMES)})")
        return out

    def value(self, name: str, idx: Sequence[int]) -> float:
        """Metric ``name`` on the tasks ``idx`` (one multiset of task indices)."""
        if len(idx) == 0:
            return math.nan
        return float(self.values([name], np.asarray(idx)[None, :])[0, 0])


def metric_intervals(
    tasks: Sequence[LabelledTask],
    metrics: Sequence[str] = DEFAULT_METRICS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Interval]:
    """Each metric on ``tasks`` with a bootstrap interval over tasks (see :func:`rankkit.stats.intervals.bootstrap`)."""
    metrics = check_metrics(metrics)
    pieces = TaskMetrics(tasks)
    intervals = bootstrap(
        lambda samples: pieces.values(metrics, samples),
        pieces.tasks,
        resamples=resamples,
        seed=seed,
        level=level,
        batched=True,
    )
    return dict(zip(metrics, intervals))


class MetricDraws:
    """Every strategy's metrics on its tasks and on each bootstrap resample, computed once.

    A paired difference is the difference of two strategies' values on the same resampled tasks.
    """

    def __init__(
        self,
        results: RunResult,
        metrics: Sequence[str] = DEFAULT_METRICS,
        resamples: int = DEFAULT_RESAMPLES,
        seed: int = 0,
    ):
        self.results = results
        self.metrics = check_metrics(metrics)
        self.resamples = resamples
        self.seed = seed
        self._cache: dict[tuple[str, tuple[str, ...] | None], tuple[np.ndarray, np.ndarray]] = {}

    def get(self, name: str, task_ids: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(estimates, draws) of strategy ``name`` on its labelled tasks, or on ``task_ids`` only.

        The draws are (resamples, metrics), with no rows for fewer than two tasks.
        """
        key = (name, None if task_ids is None else tuple(task_ids))
        if key not in self._cache:
            tasks = labelled_tasks(self.results, name)
            if task_ids is not None:
                by_id = {t.task_id: t for t in tasks}
                tasks = [by_id[t] for t in task_ids]
            pieces = TaskMetrics(tasks)
            estimates = pieces.values(self.metrics, np.arange(len(pieces))[None, :])[0]
            draws = np.empty((0, len(self.metrics)))
            if self.resamples and len(pieces) >= 2:  # one task resamples to itself: no interval
                draws = pieces.values(self.metrics, resample_indices(len(pieces), self.resamples, self.seed))
            self._cache[key] = (estimates, draws)
        return self._cache[key]
