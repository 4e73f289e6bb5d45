"""(c) Metrics within groups of tasks or of systems, and (d) at the aggregate (exam / system) level.

The thesis's breakdowns and aggregate level (tables 4.4–4.7, §4.2.2): metrics per ``meta`` field
or examinee system, and systems' aggregated scores against the humans' aggregates.
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from rankkit.data.specs import SpecError
from rankkit.runs.analysis.draws import metric_intervals, row_correlations
from rankkit.runs.analysis.labelled import DEFAULT_METRICS, LabelledTask, check_metrics, labelled_tasks
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES, bootstrap, unit_counts
from rankkit.stats.metrics import CORRELATIONS, pairwise_accuracy_counts

# (c) breakdowns


def breakdown_fields(results: RunResult) -> list[str]:
    """Fields a breakdown can use: ``system`` (when a candidate names one) and short scalar meta fields, sorted."""
    fields = {"system"} if any(c.system for t in results.tasks for c in t.candidates) else set()
    for task in results.tasks:
        for key, value in task.meta.items():
            if isinstance(value, (str, int, float, bool)) and len(str(value)) <= 80:
                fields.add(key)
    return sorted(fields)


def breakdown(
    results: RunResult,
    name: str,
    field: str,
    metrics: Sequence[str] = DEFAULT_METRICS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> list[dict[str, Any]]:
    """(c) Metrics of strategy ``name`` within groups defined by ``field``.

    ``field`` ``system`` groups candidates by their examinee system (only pooled correlations are
    defined); any other name (or ``meta.NAME``) groups tasks by ``meta[NAME]``, missing ones under
    ``(none)``. Intervals resample the group's tasks.

    Returns
    -------
    list[dict[str, Any]]
        Per group: ``field``, ``group``, ``tasks``, ``candidates``, ``metrics`` (metric ->
        :class:`Interval`), ``mean_score`` and ``mean_human``.
    """
    metrics = check_metrics(metrics)
    tasks = labelled_tasks(results, name)
    meta = {t.task_id: t.meta for t in results.tasks}
    key = field[5:] if field.startswith("meta.") else field
    if key not in breakdown_fields(results):
        raise SpecError(f"cannot break down by {field!r} (fields: {', '.join(breakdown_fields(results)) or 'none'})")
    rows = []
    if key == "system":
        systems = {t.task_id: {c.id: c.system or "(none)" for c in t.candidates} for t in results.tasks}
        groups: dict[str, list[LabelledTask]] = defaultdict(list)
        for task in tasks:
            by_system: dict[str, list[str]] = defaultdict(list)
            for cid in task.human:
                by_system[systems[task.task_id][cid]].append(cid)
            for system, cids in by_system.items():
                groups[system].append(
                    LabelledTask(
                        task.task_id,
                        {c: task.scores[c] for c in cids},
                        [c for c in task.ranking if c in cids],
                        {c: task.human[c] for c in cids},
                        {},
                    )
                )
        pooled = [m for m in metrics if m in CORRELATIONS] or ["pearson"]
        for system in sorted(groups):
            members = groups[system]
            rows.append(_group_row(field, system, members, pooled, resamples, seed, level))
        return rows
    groups = defaultdict(list)
    for task in tasks:
        value = meta[task.task_id].get(key)
        groups["(none)" if value is None else str(value)].append(task)
    for value in sorted(groups):
        rows.append(_group_row(field, value, groups[value], metrics, resamples, seed, level))
    return rows


def _group_row(
    field: str,
    value: str,
    members: Sequence[LabelledTask],
    metrics: Sequence[str],
    resamples: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    scores = [s for t in members for s in t.scores.values()]
    human = [t.human[c] for t in members for c in t.scores]
    return {
        "field": field,
        "group": value,
        "tasks": len(members),
        "candidates": len(scores),
        "metrics": metric_intervals(members, metrics, resamples, seed, level),
        "mean_score": float(np.mean(scores)) if scores else math.nan,
        "mean_human": float(np.mean(human)) if human else math.nan,
    }


# (d) aggregate (exam / system) level

AGGREGATES = ("sum", "mean")
AGGREGATE_METRICS = ("pearson", "spearman", "pairwise_accuracy")


class AggregateUnits:
    """Candidates grouped once into aggregate units: (exam, system), or (``all``, system)."""

    def __init__(
        self,
        tasks: Sequence[LabelledTask],
        systems: Mapping[str, Mapping[str, str | None]],
        meta: Mapping[str, Mapping[str, Any]],
        unit_field: str | None,
        how: str,
    ):
        if how not in AGGREGATES:
            raise SpecError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")
        self.how = how
        self.keys: list[tuple[str, str]] = []
        index: dict[tuple[str, str], int] = {}
        self.members = []  # per task: (unit indices, scores, human) of its candidates that have a system
        for task in tasks:
            unit = "all" if unit_field is None else str(meta[task.task_id].get(unit_field))
            units, scores, human = [], [], []
            for cid, truth in task.human.items():
                system = systems[task.task_id].get(cid)
                if system is None:
                    continue
                key = (unit, system)
                if key not in index:
                    index[key] = len(self.keys)
                    self.keys.append(key)
                units.append(index[key])
                scores.append(task.scores[cid])
                human.append(truth)
            self.members.append(
                (np.array(units, dtype=int), np.array(scores, dtype=float), np.array(human, dtype=float))
            )

    def table(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(scores, human): two (resamples, units) arrays of aggregates, NaN for a unit absent from a resample."""
        n_units = len(self.keys)
        counts = unit_counts(samples, len(self.members))
        score_sum = np.zeros((len(samples), n_units))
        human_sum = np.zeros((len(samples), n_units))
        members = np.zeros((len(samples), n_units))
        for task, (units, scores, human) in enumerate(self.members):
            weight = counts[:, task][:, None]  # how often the task is in each resample
            np.add.at(score_sum.T, units, (weight * scores).T)
            np.add.at(human_sum.T, units, (weight * human).T)
            np.add.at(members.T, units, np.broadcast_to(weight, (len(samples), len(units))).T)
        with np.errstate(invalid="ignore", divide="ignore"):
            if self.how == "mean":
                return score_sum / members, human_sum / members
            return np.where(members > 0, score_sum, math.nan), np.where(members > 0, human_sum, math.nan)

    def metrics(self, samples: np.ndarray) -> np.ndarray:
        """A (resamples, 3) array of [pearson, spearman, pairwise_accuracy] across the units.

        Pairwise accuracy compares systems within one unit; pairs tied in the human aggregate are left out.
        """
        scores, human = self.table(samples)
        present = [~np.isnan(row) for row in scores]
        out = np.full((len(samples), len(AGGREGATE_METRICS)), math.nan)
        for column, method in enumerate(AGGREGATE_METRICS[:2]):
            out[:, column] = row_correlations(
                method, [s[p] for s, p in zip(scores, present)], [h[p] for h, p in zip(human, present)]
            )
        exams = sorted({unit for unit, _ in self.keys})
        by_exam = [[k for k, key in enumerate(self.keys) if key[0] == exam] for exam in exams]
        for row, (s, h, p) in enumerate(zip(scores, human, present)):
            correct = total = 0
            for inside in by_exam:
                inside = [k for k in inside if p[k]]
                c, t = pairwise_accuracy_counts({k: s[k] for k in inside}, {k: h[k] for k in inside})
                correct, total = correct + c, total + t
            out[row, 2] = correct / total if total else math.nan
        return out


def aggregate_level(
    results: RunResult,
    name: str,
    how: str = "mean",
    unit_field: str | None = None,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Any] | None:
    """(d) Correlation between systems' aggregated scores and their aggregated human scores.

    Parameters
    ----------
    how
        ``sum`` (the thesis's exam-level grade) or ``mean`` (fairer when some answers are missing).
    unit_field
        A meta field grouping tasks into exams (pairwise accuracy within each); None aggregates each
        system over all tasks.

    Returns
    -------
    dict[str, Any] | None
        None with fewer than two systems. Else ``metrics`` (pearson, spearman, pairwise_accuracy ->
        :class:`Interval`), ``units``, ``systems`` and ``leaderboard`` (best first).
    """
    if how not in AGGREGATES:
        raise SpecError(f"aggregate must be one of {', '.join(AGGREGATES)}, got {how!r}")
    tasks = labelled_tasks(results, name)
    systems = {t.task_id: {c.id: c.system for c in t.candidates} for t in results.tasks}
    meta = {t.task_id: t.meta for t in results.tasks}
    if unit_field is not None and unit_field.startswith("meta."):
        unit_field = unit_field[5:]
    if unit_field is not None and not any(unit_field in m for m in meta.values()):
        raise SpecError(f"no task has meta field {unit_field!r} (fields: {', '.join(breakdown_fields(results))})")
    units = AggregateUnits(tasks, systems, meta, unit_field, how)
    if len({system for _, system in units.keys}) < 2:
        return None
    intervals = bootstrap(units.metrics, tasks, resamples=resamples, seed=seed, level=level, batched=True)
    scores, human = units.table(np.arange(len(tasks))[None, :])
    leaderboard = sorted(
        (
            {"unit": unit, "system": system, "score": float(scores[0, k]), "human": float(human[0, k])}
            for k, (unit, system) in enumerate(units.keys)
        ),
        key=lambda r: (r["unit"], -r["score"]),
    )
    return {
        "strategy": name,
        "how": how,
        "unit_field": unit_field,
        "units": len(units.keys),
        "systems": len({system for _, system in units.keys}),
        "metrics": dict(zip(AGGREGATE_METRICS, intervals)),
        "leaderboard": leaderboard,
    }
