"""A judge report's agreement with the humans: kappa, alpha, calibration and accuracy by length bucket.

Each comes with a percentile bootstrap interval over tasks.

The unit of kappa and alpha is one judgment (a pair in one presentation order) on a pair the humans
labelled; its category is the earlier candidate, the later one, or a tie (a judge's tie and a human
tie are the same category); failed judgments are left out.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import numpy as np

from rankkit.reports.judge_report_pairs import TIE, PairRecord, Preference, measure, metric_json, ratio_estimate
from rankkit.stats.agreement import (
    CALIBRATION_BINS,
    calibration_bins,
    cohen_kappa,
    expected_calibration_error,
    nominal_alpha,
)
from rankkit.stats.intervals import Interval, bootstrap

#: The length buckets: terciles of the pairs' length difference.
LENGTH_BUCKETS = 3


def category(verdict: Preference, record: PairRecord) -> int | None:
    """0 for the pair's earlier candidate, 1 for the later one, 2 for a tie, None for a failed verdict."""
    if verdict is None:
        return None
    return {record.a: 0, record.b: 1, TIE: 2}[verdict]


def task_index(records: Sequence[PairRecord]) -> dict[str, int]:
    """Each task id's position, in the order the records first name it."""
    return {task_id: i for i, task_id in enumerate(dict.fromkeys(r.task_id for r in records))}


def confusions(records: Sequence[PairRecord]) -> np.ndarray:
    """Per task, the 3x3 confusion of judge verdicts (rows) against the human label (columns)."""
    index = task_index(records)
    counts = np.zeros((len(index), 3, 3))
    for r in records:
        human = category(r.human, r) if r.human is not None else None
        if human is None:
            continue
        for verdict in (r.a_first, r.b_first):
            judged = category(verdict, r)
            if judged is not None:
                counts[index[r.task_id], judged, human] += 1
    return counts


def order_vote_probability(record: PairRecord) -> float | None:
    """P(a wins) from the two orders' votes: the share of the two verdicts naming ``a`` (a tie counts
    half); None when either order failed. Takes the values 0, 1/4, 1/2, 3/4 and 1."""
    if record.a_first is None or record.b_first is None:
        return None
    votes = [1.0 if v == record.a else 0.5 if v == TIE else 0.0 for v in (record.a_first, record.b_first)]
    return sum(votes) / 2


def calibration_tables(
    records: Sequence[PairRecord], probability: Callable[[PairRecord], list[float]]
) -> np.ndarray | None:
    """Per task, the calibration bins of P(a wins) against ``human == a`` on pairs with a decisive human
    label; ``probability`` gives a record's probabilities (one per judgment that has one). None when no
    judgment has a probability."""
    index = task_index(records)
    tables = np.zeros((len(index), CALIBRATION_BINS, 3))
    for r in records:
        if r.human not in (r.a, r.b):
            continue
        p = probability(r)
        if p:
            tables[index[r.task_id]] += calibration_bins(np.array(p), np.full(len(p), float(r.human == r.a)))
    return tables if tables[..., 0].sum() > 0 else None


def stacked_estimate(
    per_task: np.ndarray,
    statistic: Callable[[np.ndarray], np.ndarray],
    units: float,
    resamples: int,
    level: float,
    seed: int,
) -> Interval:
    """``statistic`` of the tasks' summed counts (``per_task``: one count array per task) with a
    percentile bootstrap interval over tasks; ``units`` is the number of units counted, the interval's n."""
    interval = bootstrap(
        lambda rows: statistic(per_task[rows].sum(axis=1)),
        range(len(per_task)),
        resamples=resamples,
        level=level,
        seed=seed,
        batched=True,
    )
    return replace(interval, n=units)


def agreement_metrics(records: Sequence[PairRecord], resamples: int, level: float, seed: int) -> dict[str, Interval]:
    """Cohen's kappa, Krippendorff's alpha (nominal) and the expected calibration errors, with intervals.

    ``ece`` uses the judge's own probabilities (absent when it gives none); ``ece_orders`` the
    :func:`order_vote_probability` every judge has.
    """
    matrices = confusions(records)
    metrics = {
        name: stacked_estimate(matrices, statistic, float(matrices.sum()), resamples, level, seed)
        for name, statistic in (("kappa", cohen_kappa), ("alpha", nominal_alpha))
    }
    for name, probability in (("ece", judge_probabilities), ("ece_orders", order_votes)):
        tables = calibration_tables(records, probability)
        metrics[name] = (
            Interval(math.nan, level=level)
            if tables is None
            else stacked_estimate(
                tables, expected_calibration_error, float(tables[..., 0].sum()), resamples, level, seed
            )
        )
    return metrics


def all_metrics(records: Sequence[PairRecord], resamples: int, level: float, seed: int) -> dict[str, Interval]:
    """Every metric of a judge report: :func:`~rankkit.reports.judge_report_pairs.measure`'s and
    :func:`agreement_metrics`'."""
    return {**measure(records, resamples, level, seed), **agreement_metrics(records, resamples, level, seed)}


def judge_probabilities(record: PairRecord) -> list[float]:
    """The judge's own P(a wins) of each order that has one."""
    return [p for p in record.a_win_probabilities if p is not None]


def order_votes(record: PairRecord) -> list[float]:
    """The :func:`order_vote_probability` of the pair, when both orders were decided."""
    p = order_vote_probability(record)
    return [] if p is None else [p]


def length_buckets(records: Sequence[PairRecord], resamples: int, level: float, seed: int) -> list[dict[str, Any]]:
    """One-order accuracy against the humans by tercile of the pair's length difference (characters,
    |len a - len b|), on the pairs with a decisive human label; the tercile edges come from those pairs.

    Returns one row per bucket: ``low``, ``high`` (the length differences it covers, both inclusive),
    ``pairs`` and ``accuracy_single`` (as in the report's metrics: a tie or failed verdict counts half).
    """
    from rankkit.reports.judge_report_pairs import credit

    labelled = [r for r in records if r.human in (r.a, r.b) and r.length_gap is not None]
    if not labelled:
        return []
    gaps = np.array([r.length_gap for r in labelled], dtype=float)
    edges = np.quantile(gaps, np.linspace(0, 1, LENGTH_BUCKETS + 1))
    bucket_of = np.minimum(np.searchsorted(edges[1:-1], gaps, side="right"), LENGTH_BUCKETS - 1)
    index = task_index(labelled)
    rows = []
    for bucket in range(LENGTH_BUCKETS):
        numerators, denominators = np.zeros(len(index)), np.zeros(len(index))
        members = [r for r, b in zip(labelled, bucket_of) if b == bucket]
        for r in members:
            numerators[index[r.task_id]] += credit(r.a_first, r.human) + credit(r.b_first, r.human)
            denominators[index[r.task_id]] += 2.0
        in_bucket = gaps[bucket_of == bucket]
        rows.append(
            {
                "low": float(in_bucket.min()) if len(in_bucket) else None,
                "high": float(in_bucket.max()) if len(in_bucket) else None,
                "pairs": len(members),
                "accuracy_single": metric_json(ratio_estimate(numerators, denominators, resamples, level, seed)),
            }
        )
    return rows
