"""The paper's analyses of a results file, with bootstrap confidence intervals.

Everything here reads a run's results — the JSON that ``rankkit compare --out r.json`` writes,
read back into a :class:`~rankkit.results.RunResult` by :func:`load_results`, or a live run —
and needs neither the data nor the judge again::

    from rankkit.analysis import load_results, analyze
    results = load_results("r.json")
    report = analyze(results, by=["difficulty", "system"], baseline="individual")

The analyses, each a pure function of the results (plus a bootstrap seed):

(a) :func:`correlation_table` — every metric of :mod:`rankkit.metrics` per strategy, with a
    bootstrap 95% interval over **tasks** (tasks are resampled with replacement and the metric is
    recomputed on the resample; tasks, not candidates, are the independent units, because the
    candidates of one task share a prompt and, for ranking strategies, a scale).
(b) :func:`elimination_rounds` — for knockout-like strategies (those whose per-candidate extras
    carry ``eliminated_round``): the correlation of candidates eliminated in round 1 (graded once)
    against those eliminated later or crowned (graded several times), as in Table 2 of *Knockout LLM Assessment* (Sandan, Dinh & Niehues).
(c) :func:`breakdown` — the metrics within groups of tasks (any ``meta`` field: difficulty,
    language, ...) or of candidates (``system``, the examinee; tables 4.5–4.7 of the thesis *Competitive LLM Assessment*).
(d) :func:`aggregate_level` — the thesis's exam level: each system's scores summed or averaged
    over tasks (optionally within groups of tasks such as exams), correlated with the same
    aggregate of the human scores, plus pairwise ranking accuracy between the aggregates.
(e) :func:`paired_difference` — strategy A minus strategy B with a *paired* bootstrap interval:
    both are evaluated on the same resampled tasks, so the interval reflects only the noise in
    their difference (is knockout better than individual here, or within noise?).

Plus the judge-bias views of the report (:func:`position_bias`, :func:`length_bias`).

Intervals are percentile bootstrap intervals (:mod:`rankkit.stats`). The resamples are
drawn once per (number of tasks, seed) and shared by all strategies, which makes differences
paired. An interval is NaN (printed ``-``) when it cannot be computed: fewer than two tasks, or
too many resamples on which the metric is undefined (a constant side). Per-task correlations come
from :func:`rankkit.metrics.correlation` (scipy); pooled ones, needed afresh for every resample,
go to scipy in batches (:func:`row_correlations`) — the same numbers, about ten times faster.
"""

from __future__ import annotations

import inspect
import json
import math
import warnings
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

import numpy as np
from scipy import stats

from rankkit.formatting import Table, render_sections
from rankkit.judges.base import Winner
from rankkit.matches import Match
from rankkit.metrics import CORRELATIONS, METRIC_NAMES, correlation, pairwise_accuracy_counts, top1_share
from rankkit.results import RunResult, StrategyRun
from rankkit.specs import SpecError
from rankkit.stats import (DEFAULT_LEVEL, DEFAULT_RESAMPLES, Interval, bootstrap, percentile_intervals,
                           proportion_interval, resample_indices, unit_counts)
from rankkit.tasks import TaskFormatError

#: The metrics analysed by default: the paper's Pearson, rank agreement pooled and per task, and
#: pairwise ranking accuracy.
DEFAULT_METRICS = ("pearson", "spearman", "task_spearman", "pairwise_accuracy")


# -------------------------------------------------------------------------------------------------
# Reading results


def load_results(path: str | Path) -> RunResult:
    """Read a results file written by ``rankkit compare --out``; raises TaskFormatError naming the
    file and the field if it is not one."""
    path = Path(path)
    if not path.exists():
        raise FileNotFoundError(f"{path}: file not found")
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as err:
        raise TaskFormatError(path, err.lineno, None, f"malformed JSON: {err.msg}") from None
    if not isinstance(data, dict):
        raise TaskFormatError(path, None, None, "expected a JSON object (the output of rankkit compare --out)")
    return RunResult.from_dict(data, where=str(path))


def strategy_names(results: RunResult) -> list[str]:
    """The strategy labels in the file, in run order (e.g. ``knockout:debias=true``)."""
    return [s.name for s in results.strategies]


def strategy_run(results: RunResult, name: str) -> StrategyRun:
    """One strategy's results; raises SpecError naming the strategies present when absent."""
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
    extras: dict[str, dict[str, Any]]


def labelled_tasks(results: RunResult, name: str) -> list[LabelledTask]:
    """The tasks of strategy ``name`` that have human scores, in the order of the file."""
    human = human_scores(results)
    out = []
    for task in strategy_run(results, name).tasks:
        truth = human.get(task.task_id)
        if truth:
            out.append(LabelledTask(task_id=task.task_id, scores=dict(task.scores), ranking=list(task.ranking),
                                    human=truth, extras=task.extras))
    return out


# -------------------------------------------------------------------------------------------------
# Batched correlations


#: Whether this scipy's pearsonr takes ``axis`` (1.13+), i.e. can correlate many rows in one call.
_BATCHED_PEARSON = "axis" in inspect.signature(stats.pearsonr).parameters


def row_correlations(method: str, xs: Sequence[np.ndarray], ys: Sequence[np.ndarray]) -> np.ndarray:
    """``rankkit.metrics.correlation(method, xs[k], ys[k])`` for every k, batched for speed.

    A bootstrap needs the same correlation on a thousand resamples; scipy's per-call overhead
    (~0.4 ms) dominates at these sizes, so rows of equal length go to scipy together: Pearson as
    ``scipy.stats.pearsonr(X, Y, axis=1)``, Spearman as the same on ``scipy.stats.rankdata`` average
    ranks (which is how scipy's ``spearmanr`` defines it). Kendall's tau-b, and Pearson on a scipy
    without batching, fall back to :func:`rankkit.metrics.correlation` row by row. Rows with fewer
    than two points or a constant side are NaN, as in ``correlation``.
    """
    out = np.full(len(xs), math.nan)
    if method not in CORRELATIONS:
        raise SpecError(f"unknown correlation {method!r} (known: {', '.join(CORRELATIONS)})")
    if method == "kendall" or not _BATCHED_PEARSON:
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
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            out[np.asarray(rows)[defined]] = stats.pearsonr(x_rows, y_rows, axis=1)[0]
    return out


class TaskMetrics:
    """The per-task pieces of every metric of :func:`rankkit.metrics.evaluate`, computed once.

    ``values(names, samples)`` evaluates metrics on resampled multisets of tasks from these
    pieces: pooled correlations on the concatenated candidates, per-task correlations averaged
    over the tasks where they are defined, pairwise accuracy from summed counts, top-1 as a
    share — exactly what ``evaluate`` computes on the repeated tasks, without recomputing the
    per-task correlations for every resample. On all tasks once each it equals ``evaluate``.
    """

    def __init__(self, tasks: Sequence[LabelledTask]):
        self.tasks = list(tasks)
        self.scores = [np.array([t.scores[c] for c in t.human], dtype=float) for t in self.tasks]
        self.human = [np.array(list(t.human.values()), dtype=float) for t in self.tasks]
        self.task_correlation = {method: np.array([correlation(method, s, h) for s, h in zip(self.scores, self.human)])
                                 for method in CORRELATIONS}
        self.pair_counts = np.array([pairwise_accuracy_counts(t.scores, t.human) for t in self.tasks], dtype=float).reshape(-1, 2)
        self.top1 = np.array([top1_share(t.scores, t.human) for t in self.tasks], dtype=float)

    def __len__(self) -> int:
        return len(self.tasks)

    def values(self, names: Sequence[str], samples: np.ndarray) -> np.ndarray:
        """Metrics ``names`` on each row of ``samples`` (task indices, repeats allowed): a (rows, names) array."""
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


def check_metrics(names: Sequence[str]) -> list[str]:
    """Validate metric names against :data:`rankkit.metrics.METRIC_NAMES`."""
    unknown = [n for n in names if n not in METRIC_NAMES]
    if unknown:
        raise SpecError(f"unknown metric(s) {', '.join(unknown)} (known: {', '.join(METRIC_NAMES)})")
    if not names:
        raise SpecError("no metrics given")
    return list(names)


# -------------------------------------------------------------------------------------------------
# (a) correlations with intervals


def metric_intervals(tasks: Sequence[LabelledTask], metrics: Sequence[str] = DEFAULT_METRICS,
                     n_boot: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = DEFAULT_LEVEL) -> dict[str, Interval]:
    """Each metric on ``tasks`` with a bootstrap interval over tasks (see :func:`rankkit.stats.bootstrap`)."""
    metrics = check_metrics(metrics)
    pieces = TaskMetrics(tasks)
    intervals = bootstrap(lambda samples: pieces.values(metrics, samples), pieces.tasks, resamples=n_boot, seed=seed,
                          level=level, batched=True)
    return dict(zip(metrics, intervals))


class MetricDraws:
    """Every strategy's metrics on its tasks and on each bootstrap resample of them, computed once.

    The correlation table and the paired differences read the same draws: a difference is the
    difference of two strategies' values on the same resampled tasks, so it costs nothing more.
    """

    def __init__(self, results: RunResult, metrics: Sequence[str] = DEFAULT_METRICS,
                 n_boot: int = DEFAULT_RESAMPLES, seed: int = 0):
        self.results = results
        self.metrics = check_metrics(metrics)
        self.n_boot = n_boot
        self.seed = seed
        self._cache: dict[tuple[str, tuple[str, ...] | None], tuple[np.ndarray, np.ndarray]] = {}

    def get(self, name: str, task_ids: Sequence[str] | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(estimates, draws) of strategy ``name``, on all its labelled tasks or on ``task_ids`` only."""
        key = (name, None if task_ids is None else tuple(task_ids))
        if key not in self._cache:
            tasks = labelled_tasks(self.results, name)
            if task_ids is not None:
                by_id = {t.task_id: t for t in tasks}
                tasks = [by_id[t] for t in task_ids]
            pieces = TaskMetrics(tasks)
            estimates = pieces.values(self.metrics, np.arange(len(pieces))[None, :])[0]
            n_boot = self.n_boot if len(pieces) >= 2 else 0
            draws = pieces.values(self.metrics, resample_indices(len(pieces), n_boot, self.seed)) if n_boot else \
                np.empty((0, len(self.metrics)))
            self._cache[key] = (estimates, draws)
        return self._cache[key]


def correlation_table(results: RunResult, metrics: Sequence[str] = DEFAULT_METRICS,
                      n_boot: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = DEFAULT_LEVEL,
                      strategies: Sequence[str] | None = None, draws: MetricDraws | None = None) -> list[dict[str, Any]]:
    """(a) Per strategy: cost and every metric with a bootstrap interval over tasks.

    Each row: ``strategy``, ``comparisons``, ``grades`` (pointwise judgments), ``judge_calls``,
    ``tasks`` (labelled tasks used) and ``metrics`` (metric -> :class:`Interval`). Every strategy
    is resampled with the same seed, so the rows see the same resampled task sets. ``draws``
    reuses already computed resamples (it then fixes the metrics, resamples and seed).
    """
    draws = draws or MetricDraws(results, metrics, n_boot, seed)
    rows = []
    for name in strategies or strategy_names(results):
        cost = strategy_run(results, name).cost
        estimates, values = draws.get(name)
        rows.append({"strategy": name, "comparisons": cost.comparisons, "grades": cost.scores,
                     "judge_calls": cost.judge_calls, "tasks": len(labelled_tasks(results, name)),
                     "metrics": dict(zip(draws.metrics, percentile_intervals(estimates, values, level)))})
    return rows


# -------------------------------------------------------------------------------------------------
# (b) elimination rounds


def elimination_group(extras: Mapping[str, Any]) -> str:
    """``first round`` for a candidate knocked out in round 1, else ``later rounds`` (champion included)."""
    return "first round" if extras.get("eliminated_round") == 1 else "later rounds"


def elimination_rounds(results: RunResult, name: str, method: str = "pearson", n_boot: int = DEFAULT_RESAMPLES,
                       seed: int = 0, level: float = DEFAULT_LEVEL) -> dict[str, Any] | None:
    """(b) Table 2 of *Knockout LLM Assessment*: correlation of first-round losers vs the rest, for a knockout-like strategy.

    Candidates knocked out in round 1 were graded in one match; the others (eliminated in a later
    round, or the champion) in several, except a candidate that got a bye and then lost, which was
    also graded once — so the split by times graded (``played`` 1 vs more) is reported as well.
    The correlation (``method``) is pooled over the candidates of each group across tasks; the
    interval of the difference (later − first) comes from resampling tasks.

    Returns None for strategies without elimination rounds. Keys: ``strategy``, ``method``,
    ``groups`` (label -> {candidates, correlation: Interval, mean_played}), ``difference``
    (Interval of later − first), ``by_played`` (the same for graded once / several times) and
    ``rounds`` (per elimination round: candidates and correlation; ``champion`` for the winner).
    """
    if method not in CORRELATIONS:
        raise SpecError(f"unknown correlation {method!r} (known: {', '.join(CORRELATIONS)})")
    if not strategy_run(results, name).has_elimination_rounds:
        return None
    tasks = labelled_tasks(results, name)

    def members(label_of: Callable[[Mapping[str, Any]], str]) -> list[dict[str, list[str]]]:
        per_task = []
        for task in tasks:
            groups: dict[str, list[str]] = defaultdict(list)
            for cid in task.human:
                groups[label_of(task.extras[cid])].append(cid)
            per_task.append(groups)
        return per_task

    def group_correlations(per_task: list[dict[str, list[str]]], label: str, samples: np.ndarray) -> np.ndarray:
        """The pooled correlation of the group's candidates in each resample."""
        scores = [np.array([tasks[i].scores[c] for c in groups.get(label, [])], dtype=float) for i, groups in enumerate(per_task)]
        human = [np.array([tasks[i].human[c] for c in groups.get(label, [])], dtype=float) for i, groups in enumerate(per_task)]
        xs = [np.concatenate([scores[i] for i in row]) for row in samples]
        ys = [np.concatenate([human[i] for i in row]) for row in samples]
        return row_correlations(method, xs, ys)

    def split(label_of: Callable[[Mapping[str, Any]], str], first: str, later: str) -> dict[str, Any]:
        per_task = members(label_of)

        def statistic(samples: np.ndarray) -> np.ndarray:
            a, b = group_correlations(per_task, first, samples), group_correlations(per_task, later, samples)
            return np.column_stack([a, b, b - a])

        first_ci, later_ci, diff_ci = bootstrap(statistic, tasks, resamples=n_boot, seed=seed, level=level, batched=True)
        groups = {}
        for label, interval in ((first, first_ci), (later, later_ci)):
            played = [tasks[i].extras[c].get("played", math.nan) for i in range(len(tasks)) for c in per_task[i].get(label, [])]
            groups[label] = {"candidates": len(played), "correlation": interval,
                             "mean_played": float(np.mean(played)) if played else math.nan}
        return {"groups": groups, "difference": diff_ci}

    by_round = split(elimination_group, "first round", "later rounds")
    by_played = split(lambda e: "graded once" if e.get("played") == 1 else "graded several times",
                      "graded once", "graded several times")
    rounds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task in tasks:
        for cid in task.human:
            eliminated = task.extras[cid].get("eliminated_round")
            rounds["champion" if eliminated is None else f"round {eliminated}"].append((task.scores[cid], task.human[cid]))
    order = sorted(rounds, key=lambda k: (k == "champion", int(k.split()[1]) if k != "champion" else 0))
    per_round = [{"eliminated": k, "candidates": len(rounds[k]),
                  "correlation": correlation(method, [p[0] for p in rounds[k]], [p[1] for p in rounds[k]])} for k in order]
    return {"strategy": name, "method": method, "groups": by_round["groups"], "difference": by_round["difference"],
            "by_played": by_played, "rounds": per_round}


# -------------------------------------------------------------------------------------------------
# (c) breakdowns


def breakdown_fields(results: RunResult) -> list[str]:
    """Fields a breakdown can use: ``system`` and every meta field with short scalar values."""
    fields = {"system"} if any(c.system for t in results.tasks for c in t.candidates) else set()
    for task in results.tasks:
        for key, value in task.meta.items():
            if isinstance(value, (str, int, float, bool)) and len(str(value)) <= 80:
                fields.add(key)
    return sorted(fields)


def breakdown(results: RunResult, name: str, field: str, metrics: Sequence[str] = DEFAULT_METRICS,
              n_boot: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = DEFAULT_LEVEL) -> list[dict[str, Any]]:
    """(c) Metrics of strategy ``name`` within groups defined by ``field``.

    field: ``system`` groups *candidates* by the system (examinee) that wrote them; any other name
        (optionally written ``meta.NAME``) groups *tasks* by ``meta[NAME]`` (difficulty,
        language, ...). Tasks without the field are grouped under ``(none)``.

    For a meta field every metric is computed within the group's tasks, with intervals from
    resampling them. For ``system`` a group holds about one candidate per task, so only the pooled
    correlations (pearson, spearman, kendall; the thesis's Table 4.5) are defined; the interval
    resamples the group's tasks. Each row also has ``mean_score`` and ``mean_human`` (the thesis's
    Table 4.4: do judges grade higher than the experts?).
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
                groups[system].append(LabelledTask(task.task_id, {c: task.scores[c] for c in cids}, [c for c in task.ranking if c in cids],
                                                   {c: task.human[c] for c in cids}, {}))
        pooled = [m for m in metrics if m in CORRELATIONS] or ["pearson"]
        for system in sorted(groups):
            members = groups[system]
            rows.append(_group_row(field, system, members, pooled, n_boot, seed, level))
        return rows
    groups = defaultdict(list)
    for task in tasks:
        value = meta[task.task_id].get(key)
        groups["(none)" if value is None else str(value)].append(task)
    for value in sorted(groups):
        rows.append(_group_row(field, value, groups[value], metrics, n_boot, seed, level))
    return rows


def _group_row(field: str, value: str, members: Sequence[LabelledTask], metrics: Sequence[str], n_boot: int,
               seed: int, level: float) -> dict[str, Any]:
    scores = [s for t in members for s in t.scores.values()]
    human = [t.human[c] for t in members for c in t.scores]
    return {"field": field, "group": value, "tasks": len(members), "candidates": len(scores),
            "metrics": metric_intervals(members, metrics, n_boot, seed, level),
            "mean_score": float(np.mean(scores)) if scores else math.nan,
            "mean_human": float(np.mean(human)) if human else math.nan}


# -------------------------------------------------------------------------------------------------
# (d) aggregate (exam / system) level

AGGREGATES = ("sum", "mean")
AGGREGATE_METRICS = ("pearson", "spearman", "pairwise_accuracy")


class AggregateUnits:
    """Candidates grouped into aggregate units — (exam, system), or (``all``, system) — once.

    ``table(samples)`` gives, for each resample of the tasks, every unit's aggregated strategy
    score and human score (sum or mean over the unit's candidates in the resample; NaN for a unit
    with no candidate in it).
    """

    def __init__(self, tasks: Sequence[LabelledTask], systems: Mapping[str, Mapping[str, str | None]],
                 meta: Mapping[str, Mapping[str, Any]], unit_field: str | None, how: str):
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
            self.members.append((np.array(units, dtype=int), np.array(scores, dtype=float), np.array(human, dtype=float)))

    def table(self, samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(scores, human): two (resamples, units) arrays of aggregates."""
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
        """[pearson, spearman, pairwise_accuracy] across the units of each resample.

        Pairwise accuracy compares systems within the same unit (two examinees on one exam), as
        the thesis's §4.2.2 compares exam results; pairs tied in the human aggregate are left out.
        """
        scores, human = self.table(samples)
        present = [~np.isnan(row) for row in scores]
        out = np.full((len(samples), len(AGGREGATE_METRICS)), math.nan)
        for column, method in enumerate(AGGREGATE_METRICS[:2]):
            out[:, column] = row_correlations(method, [s[p] for s, p in zip(scores, present)],
                                              [h[p] for h, p in zip(human, present)])
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


def aggregate_level(results: RunResult, name: str, how: str = "mean", unit_field: str | None = None,
                    n_boot: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = DEFAULT_LEVEL) -> dict[str, Any] | None:
    """(d) Correlation between systems' aggregated scores and their aggregated human scores.

    how: ``sum`` (the thesis's exam-level grade: the sum over an exam's questions) or ``mean``
        (the same ranking when every system answers every task; fairer when some are missing).
    unit_field: a meta field grouping tasks into exams (one aggregate per exam and system, and
        pairwise accuracy within each exam); None aggregates each system over all tasks (the
        system level of MT evaluation).

    Returns None when fewer than two systems are named. Keys: ``metrics`` (pearson, spearman,
    pairwise_accuracy -> :class:`Interval`, resampling tasks), ``units``, ``systems`` and
    ``leaderboard`` (per unit and system: aggregated score and human score, best first).
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
    intervals = bootstrap(units.metrics, tasks, resamples=n_boot, seed=seed, level=level, batched=True)
    scores, human = units.table(np.arange(len(tasks))[None, :])
    leaderboard = sorted(({"unit": unit, "system": system, "score": float(scores[0, k]), "human": float(human[0, k])}
                          for k, (unit, system) in enumerate(units.keys)), key=lambda r: (r["unit"], -r["score"]))
    return {"strategy": name, "how": how, "unit_field": unit_field, "units": len(units.keys),
            "systems": len({system for _, system in units.keys}), "metrics": dict(zip(AGGREGATE_METRICS, intervals)),
            "leaderboard": leaderboard}


# -------------------------------------------------------------------------------------------------
# (e) paired differences


def paired_difference(results: RunResult, a: str, b: str, metrics: Sequence[str] = DEFAULT_METRICS,
                      n_boot: int = DEFAULT_RESAMPLES, seed: int = 0, level: float = DEFAULT_LEVEL,
                      draws: MetricDraws | None = None) -> dict[str, Any]:
    """(e) Metric of strategy ``a`` minus that of ``b``, with a paired bootstrap interval over tasks.

    Both strategies are evaluated on the same resampled tasks, which removes the between-task
    variation they share. ``verdict`` per metric: ``a better`` / ``b better`` when the interval
    excludes 0, else ``within noise``. Only tasks both strategies ranked are used.
    """
    draws = draws or MetricDraws(results, metrics, n_boot, seed)
    ids_a = [t.task_id for t in labelled_tasks(results, a)]
    ids_b = [t.task_id for t in labelled_tasks(results, b)]
    common = None if ids_a == ids_b else [t for t in ids_a if t in set(ids_b)]
    estimates_a, values_a = draws.get(a, common)
    estimates_b, values_b = draws.get(b, common)
    intervals = percentile_intervals(estimates_a - estimates_b, values_a - values_b, level)
    out = {}
    for metric, interval in zip(draws.metrics, intervals):
        if interval.low > 0:
            verdict = "a better"
        elif interval.high < 0:
            verdict = "b better"
        else:
            verdict = "within noise"
        out[metric] = {"difference": interval, "verdict": verdict}
    return {"a": a, "b": b, "tasks": len(ids_a if common is None else common), "metrics": out}


# -------------------------------------------------------------------------------------------------
# Judge bias (the report's bias views)


def distinct_matches(results: RunResult, name: str | None = None) -> list[tuple[str, Match]]:
    """The matches of strategy ``name``, or of all strategies with each judgment counted once, as
    (task id, match) pairs.

    Strategies of one run share one match graph, so the same (task, first, second) is the same
    judgment whichever strategy used it.
    """
    seen: set[tuple[str, str, str]] = set()
    out = []
    for strategy in results.strategies:
        if name is not None and strategy.name != name:
            continue
        for task in strategy.tasks:
            for match in task.matches:
                key = (task.task_id, match.first, match.second)
                if key not in seen:
                    seen.add(key)
                    out.append((task.task_id, match))
    return out


def winner_of(match: Match) -> str | None:
    """The candidate that won a decided match; None for a tie."""
    if match.judgment.winner is Winner.TIE:
        return None
    return match.first if match.judgment.winner is Winner.FIRST else match.second


def position_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """How often the judge picked the candidate shown first.

    ``first_slot_win_rate``: share of decided matches (not ties) won by the first-shown candidate,
    with an exact binomial interval; 0.5 is an unbiased judge when orders are random.
    ``order_consistency``: among pairs judged in both orders, the share where the same candidate
    won both times (1.0 = never swayed by order).
    ``human_first_better``: share of decided matches whose first-shown candidate has the higher
    human score — the rate an unbiased, human-agreeing judge would show.
    """
    matches = distinct_matches(results, name)
    human = human_scores(results)
    decided = [(task_id, m) for task_id, m in matches if winner_of(m) is not None]
    first_wins = sum(winner_of(m) == m.first for _, m in decided)
    winners = {(task_id, m.first, m.second): winner_of(m) for task_id, m in decided}
    consistent = both = 0
    for (task_id, first, second), winner in winners.items():
        other = winners.get((task_id, second, first))
        if other is None or first > second:
            continue  # count each unordered pair once
        both += 1
        consistent += winner == other
    labelled = [(task_id, m) for task_id, m in decided
                if task_id in human and human[task_id][m.first] != human[task_id][m.second]]
    human_first = sum(human[task_id][m.first] > human[task_id][m.second] for task_id, m in labelled)
    return {"matches": len(matches), "ties": len(matches) - len(decided),
            "first_slot_win_rate": proportion_interval(first_wins, len(decided), level),
            "order_consistency": proportion_interval(consistent, both, level),
            "human_first_better": proportion_interval(human_first, len(labelled), level)}


def length_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """How often the longer answer won, against how often humans prefer it.

    Length is :attr:`rankkit.tasks.Candidate.length` (characters), as in the judge report.

    ``longer_win_rate``: among decided matches between answers of different length, the share won
    by the longer one. ``human_longer_better``: among the same matches with different human
    scores, the share where the longer one is the human-better one. A judge whose rate is well
    above the humans' prefers length for its own sake.
    """
    tasks = {t.task_id: t for t in results.tasks}
    human = human_scores(results)
    longer_won = decided = human_longer = labelled = 0
    for task_id, m in distinct_matches(results, name):
        winner = winner_of(m)
        if winner is None:
            continue
        first_len, second_len = tasks[task_id].candidate(m.first).length, tasks[task_id].candidate(m.second).length
        if first_len == second_len:
            continue
        longer = m.first if first_len > second_len else m.second
        shorter = m.second if longer == m.first else m.first
        decided += 1
        longer_won += winner == longer
        truth = human.get(task_id)
        if truth and truth[longer] != truth[shorter]:
            labelled += 1
            human_longer += truth[longer] > truth[shorter]
    return {"matches": decided, "longer_win_rate": proportion_interval(longer_won, decided, level),
            "human_longer_better": proportion_interval(human_longer, labelled, level)}


# -------------------------------------------------------------------------------------------------
# Everything at once, and its text form


def default_baseline(results: RunResult) -> str | None:
    """``individual`` when present (the paper's baseline), else the first strategy."""
    names = strategy_names(results)
    if not names:
        return None
    return "individual" if "individual" in names else names[0]


def analyze(results: RunResult, by: Sequence[str] = (), baseline: str | None = None,
            metrics: Sequence[str] = DEFAULT_METRICS, n_boot: int = DEFAULT_RESAMPLES, seed: int = 0,
            level: float = DEFAULT_LEVEL, aggregate: str = "mean", unit_field: str | None = None) -> dict[str, Any]:
    """Run every analysis; the result is what ``rankkit analyze --out`` writes (after :func:`to_jsonable`).

    by: breakdown fields (``system`` or meta fields). baseline: the strategy every other one is
    compared with (default :func:`default_baseline`). aggregate / unit_field: see
    :func:`aggregate_level`. The other parameters are the bootstrap's (:func:`rankkit.stats.bootstrap`).
    """
    check_metrics(metrics)
    if not human_scores(results):
        raise SpecError("the results have no human scores (no criterion), so there is nothing to correlate with")
    names = strategy_names(results)
    baseline = baseline or default_baseline(results)
    if baseline is not None:
        strategy_run(results, baseline)  # fail early on a typo
    draws = MetricDraws(results, metrics, n_boot, seed)
    return {
        "data": results.data, "judge": results.judge_record(), "criterion": results.criterion,
        "seed": results.seed, "bootstrap": {"resamples": n_boot, "seed": seed, "level": level, "unit": "task",
                                                    "method": "percentile"},
        "correlations": correlation_table(results, level=level, draws=draws),
        "baseline": baseline,
        "differences": [paired_difference(results, name, baseline, level=level, draws=draws)
                        for name in names if baseline is not None and name != baseline],
        "elimination_rounds": [e for e in (elimination_rounds(results, name, "pearson", n_boot, seed, level) for name in names) if e],
        "aggregate_level": [a for a in (aggregate_level(results, name, aggregate, unit_field, n_boot, seed, level) for name in names) if a],
        "breakdowns": {field: {name: breakdown(results, name, field, metrics, n_boot, seed, level) for name in names} for field in by},
        "judge_bias": {"position": position_bias(results, level=level), "length": length_bias(results, level=level)},
    }


def to_jsonable(value: Any) -> Any:
    """Intervals become dicts and NaN becomes null, so the analysis is strict JSON."""
    if isinstance(value, Interval):
        return to_jsonable(value.to_dict())
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, (np.floating, np.integer)):
        return to_jsonable(value.item())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


def format_analysis(report: Mapping[str, Any], fmt: str = "table") -> str:
    """The analysis as text (what ``rankkit analyze`` prints): ``fmt`` is one of
    :data:`rankkit.formatting.FORMATS` (``json`` here is the tables; :func:`to_jsonable` gives the
    whole analysis)."""
    preamble, tables = analysis_tables(report)
    return render_sections(tables, fmt, preamble)


def analysis_tables(report: Mapping[str, Any]) -> tuple[str, list[Table]]:
    """The analysis as a preamble (data, judge, bootstrap) and one :class:`Table` per section."""
    boot = report["bootstrap"]
    pct = f"{boot['level']:.0%}"
    judge = (report.get("judge") or {}).get("description", "?")
    preamble = (f"data {report.get('data')} · criterion {report.get('criterion')} · judge {judge}\n"
                f"intervals: {pct} bootstrap over tasks ({boot['resamples']} resamples, seed {boot['seed']})")
    sections: list[Table] = []

    rows, columns = [], [("strategy", "strategy"), ("comparisons", "comparisons"), ("grades", "grades"), ("tasks", "tasks")]
    metric_names = list(report["correlations"][0]["metrics"]) if report["correlations"] else []
    columns += [(m, m) for m in metric_names]
    for row in report["correlations"]:
        rows.append({**{k: row[k] for k in ("strategy", "comparisons", "grades", "tasks")},
                     **{m: row["metrics"][m].text() for m in metric_names}})
    sections.append(Table(f"(a) agreement with the human scores, {pct} intervals", rows, columns))

    if report["differences"]:
        rows = []
        for diff in report["differences"]:
            for metric, item in diff["metrics"].items():
                rows.append({"pair": f"{diff['a']} - {diff['b']}", "metric": metric,
                             "difference": _signed(item["difference"]), "verdict": _verdict_text(item["verdict"], diff)})
        sections.append(Table(f"(e) difference to the baseline {report['baseline']} (paired bootstrap)", rows,
                              [("pair", "strategies"), ("metric", "metric"), ("difference", "difference"),
                               ("verdict", "verdict")]))

    if report["elimination_rounds"]:
        rows = []
        for item in report["elimination_rounds"]:
            groups = item["groups"]
            played = item["by_played"]["groups"]
            rows.append({"strategy": item["strategy"],
                         "first": groups["first round"]["correlation"].text(), "n_first": groups["first round"]["candidates"],
                         "later": groups["later rounds"]["correlation"].text(), "n_later": groups["later rounds"]["candidates"],
                         "difference": _signed(item["difference"]),
                         "once_vs_more": _signed(item["by_played"]["difference"]),
                         "n_once": played["graded once"]["candidates"]})
        sections.append(Table("(b) elimination rounds (Pearson of candidates knocked out in round 1 vs later; "
                              "Knockout LLM Assessment, Table 2)", rows,
                              [("strategy", "strategy"), ("first", "first round"), ("n_first", "n"),
                               ("later", "later rounds"), ("n_later", "n"), ("difference", "later - first"),
                               ("once_vs_more", "graded >1 - graded once"), ("n_once", "n once")]))

    if report["aggregate_level"]:
        first = report["aggregate_level"][0]
        unit = f"per {first['unit_field']} and system" if first["unit_field"] else "per system over all tasks"
        rows = [{"strategy": a["strategy"], "units": a["units"],
                 **{m: a["metrics"][m].text() for m in AGGREGATE_METRICS}} for a in report["aggregate_level"]]
        sections.append(Table(f"(d) aggregate level: {first['how']} of scores {unit}, vs the same aggregate of "
                              f"human scores", rows,
                              [("strategy", "strategy"), ("units", "units"), *[(m, m) for m in AGGREGATE_METRICS]]))

    for field, per_strategy in report["breakdowns"].items():
        rows = []
        for name, groups in per_strategy.items():
            for g in groups:
                rows.append({"group": g["group"], "strategy": name, "tasks": g["tasks"], "candidates": g["candidates"],
                             **{m: g["metrics"][m].text() for m in g["metrics"]},
                             "mean_score": g["mean_score"], "mean_human": g["mean_human"]})
        rows.sort(key=lambda r: (r["group"], list(per_strategy).index(r["strategy"])))
        shown = list(dict.fromkeys(m for groups in per_strategy.values() for g in groups for m in g["metrics"]))
        sections.append(Table(f"(c) by {field}", rows,
                              [("group", field), ("strategy", "strategy"), ("tasks", "tasks"),
                               ("candidates", "candidates"), *[(m, m) for m in shown],
                               ("mean_score", "mean score"), ("mean_human", "mean human")]))

    bias = report["judge_bias"]
    rows = [{"view": "first-shown candidate wins", "rate": bias["position"]["first_slot_win_rate"].text(),
             "human": bias["position"]["human_first_better"].text(), "n": bias["position"]["matches"] - bias["position"]["ties"]},
            {"view": "same winner in both orders", "rate": bias["position"]["order_consistency"].text(), "human": "-",
             "n": None},
            {"view": "longer answer wins", "rate": bias["length"]["longer_win_rate"].text(),
             "human": bias["length"]["human_longer_better"].text(), "n": bias["length"]["matches"]}]
    sections.append(Table("judge bias over all distinct matches (exact binomial intervals; 'human' = the rate a "
                          "judge agreeing with the humans would show)", rows,
                          [("view", "view"), ("rate", "judge"), ("human", "human"), ("n", "matches")]))
    return preamble, sections


def _verdict_text(verdict: str, diff: Mapping[str, Any]) -> str:
    return {"a better": f"{diff['a']} better", "b better": f"{diff['b']} better"}.get(verdict, verdict)


def _signed(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return "-"
    if math.isnan(interval.low):
        return f"{interval.estimate:+.3f}"
    return f"{interval.estimate:+.3f} [{interval.low:+.3f}, {interval.high:+.3f}]"
