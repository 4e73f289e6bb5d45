"""The pairs a judge report judges in both orders, and what is measured on them.

Position and length preference, order consistency and accuracy against the human scores, with
bootstrap intervals over tasks.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations

import numpy as np

from rankkit.data.tasks import Task, longer_candidate, task_rng
from rankkit.judgments.values import ParseStatus, Verdict, Winner
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES, Interval, bootstrap

#: A verdict on a pair: the winning candidate id, "tie", or None (the judgment failed / was a miss).
Preference = str | None
TIE = "tie"

PANEL_THRESHOLDS = (1.0, 0.75, 0.5)


@dataclass(frozen=True)
class PairRecord:
    """One pair judged in both orders. ``a`` comes before ``b`` in the task's candidate order.

    Attributes
    ----------
    task_id
        The task.
    a, b : str
        The two candidate ids.
    a_first, b_first : Preference
        The verdict when a / b was shown first.
    human
        The human-preferred candidate, "tie" when the humans scored both equally, None without labels.
    longer
        The longer candidate (:attr:`rankkit.data.tasks.Candidate.length`), None when equally long.
    length_gap
        The two answers' length difference in characters, ``|len a - len b|``.
    a_win_probabilities
        The judge's P(a wins) when a / b was shown first, None where it gave no probability.
    """

    task_id: str
    a: str
    b: str
    a_first: Preference
    b_first: Preference
    human: Preference
    longer: str | None
    length_gap: int | None = None
    a_win_probabilities: tuple[float | None, float | None] = (None, None)


def verdict_of(judgment: Verdict, first: str, second: str) -> Preference:
    """A judgment of (first shown, second shown) as a verdict naming a candidate.

    Returns the winner's id, ``"tie"``, or None when the verdict failed.

    Parameters
    ----------
    judgment
        The judge's verdict.
    first, second : str
        The candidate ids, in the order shown.
    """
    if judgment.status is ParseStatus.FAILED:
        return None
    if judgment.winner is Winner.TIE:
        return TIE
    return first if judgment.winner is Winner.FIRST else second


def a_win_probability(judgment: Verdict, a_shown_second: bool) -> float | None:
    """The judge's P(a wins) from a judgment's P(first shown wins); None when it gave none or failed."""
    if judgment.status is ParseStatus.FAILED or judgment.probability is None:
        return None
    return 1.0 - judgment.probability if a_shown_second else judgment.probability


def pair_record(task: Task, a: str, b: str, a_first: Verdict, b_first: Verdict) -> PairRecord:
    """The :class:`PairRecord` of pair (a, b) judged with a shown first (``a_first``) and b shown first."""
    return PairRecord(
        task_id=task.task_id,
        a=a,
        b=b,
        a_first=verdict_of(a_first, a, b),
        b_first=verdict_of(b_first, b, a),
        human=human_preference(task, a, b),
        longer=longer_candidate(task, a, b),
        length_gap=abs(task.candidate(a).length - task.candidate(b).length),
        a_win_probabilities=(a_win_probability(a_first, False), a_win_probability(b_first, True)),
    )


def combine_orders(one: Preference, other: Preference) -> Preference:
    """One verdict from the two orders: the decisive one when they agree or only one is decisive,
    a tie when they disagree or both are ties, None when both failed.

    Returns a candidate id, ``"tie"`` or None.

    Parameters
    ----------
    one, other : Preference
        The verdicts of the two orders.
    """
    decisive = {v for v in (one, other) if v not in (None, TIE)}
    if len(decisive) == 1:
        return decisive.pop()
    if decisive or TIE in (one, other):
        return TIE
    return None


def credit(verdict: Preference, human: str) -> float:
    """Accuracy credit of a verdict against the human-preferred candidate (tie/failed = ½).

    Returns 1, 0 or ½.

    Parameters
    ----------
    verdict
        The judge's verdict.
    human
        The human-preferred candidate id.
    """
    if verdict in (None, TIE):
        return 0.5
    return 1.0 if verdict == human else 0.0


def human_preference(task: Task, a: str, b: str) -> Preference:
    """The candidate the humans scored higher, ``"tie"`` when equal, None without labels.

    Returns ``a``, ``b``, ``"tie"`` or None.

    Parameters
    ----------
    task
        The task.
    a, b : str
        The candidate ids.
    """
    scores = task.human_scores()
    if not scores:
        return None
    if scores[a] == scores[b]:
        return TIE
    return a if scores[a] > scores[b] else b


def sample_pairs(task: Task, pairs_per_task: int | None, seed: int) -> list[tuple[str, str]]:
    """The task's unordered pairs to judge, each as (earlier, later) in the candidate order.

    Returns the pairs.

    Parameters
    ----------
    task
        The task.
    pairs_per_task
        How many pairs to sample (None: all).
    seed
        Seeds the sample (with the task id).
    """
    pairs = list(combinations(task.candidate_ids, 2))
    if pairs_per_task is not None and pairs_per_task < len(pairs):
        position = {pair: i for i, pair in enumerate(pairs)}
        pairs = sorted(task_rng(seed, task.task_id).sample(pairs, pairs_per_task), key=position.__getitem__)
    return pairs


def ratio_estimate(
    numerators: Sequence[float],
    denominators: Sequence[float],
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    seed: int = 0,
) -> Interval:
    """``sum(numerators) / sum(denominators)`` with a percentile bootstrap interval over tasks.

    Tasks with a zero denominator take no part in the statistic and are left out of the
    resampling.

    Returns the ratio; its ``n`` is the denominator (how many judgments or pairs the ratio is a
    share of); the bounds are NaN when fewer than two tasks contribute
    (:func:`rankkit.stats.intervals.bootstrap`).

    Parameters
    ----------
    numerators, denominators : Sequence[float]
        One entry per task.
    resamples
        The bootstrap's number of resamples.
    level
        The interval's coverage.
    seed
        Seeds the resampling.
    """
    num = np.asarray(numerators, dtype=float)
    den = np.asarray(denominators, dtype=float)
    keep = den > 0
    num, den = num[keep], den[keep]
    total = float(den.sum())
    if total == 0:
        return Interval(math.nan, level=level, n=0.0)

    def ratio(rows: np.ndarray) -> np.ndarray:  # rows: resampled task indices, one resample per row
        return num[rows].sum(axis=1) / den[rows].sum(axis=1)

    interval = bootstrap(ratio, range(len(num)), resamples=resamples, level=level, seed=seed, batched=True)
    return replace(interval, n=total)


def metric_json(interval: Interval) -> dict[str, float | None]:
    """A metric as the report's JSON stores it: ``value``, ``low``, ``high``, ``n`` (NaN as None).

    Returns ``value``, ``low``, ``high``, ``n``.

    Parameters
    ----------
    interval
        The metric.
    """
    return {
        name: None if value is None or math.isnan(value) else value
        for name, value in (
            ("value", interval.estimate),
            ("low", interval.low),
            ("high", interval.high),
            ("n", interval.n),
        )
    }


def metric_counts(records: Sequence[PairRecord]) -> dict[str, tuple[list[float], list[float]]]:
    """Per-task (numerator, denominator) lists for every metric in ``docs/analysis.md``.

    Returns metric name to its per-task numerators and denominators.

    Parameters
    ----------
    records
        The judged pairs.
    """
    task_ids = list(dict.fromkeys(r.task_id for r in records))
    index = {tid: i for i, tid in enumerate(task_ids)}
    names = (
        "first_slot",
        "order_consistency",
        "length_judge",
        "length_human",
        "accuracy_single",
        "accuracy_both",
        "accuracy_both_strict",
    )
    counts = {name: ([0.0] * len(task_ids), [0.0] * len(task_ids)) for name in names}

    def add(name: str, i: int, num: float, den: float = 1.0) -> None:
        counts[name][0][i] += num
        counts[name][1][i] += den

    for r in records:
        i = index[r.task_id]
        for shown_first, verdict in ((r.a, r.a_first), (r.b, r.b_first)):
            if verdict in (None, TIE):
                continue
            add("first_slot", i, float(verdict == shown_first))
            if r.longer is not None:
                add("length_judge", i, float(verdict == r.longer))
        if r.a_first is not None and r.b_first is not None:
            add("order_consistency", i, float(r.a_first == r.b_first))
        if r.human in (r.a, r.b):
            add("accuracy_single", i, credit(r.a_first, r.human) + credit(r.b_first, r.human), 2.0)
            combined = combine_orders(r.a_first, r.b_first)
            if combined not in (None, TIE):
                add("accuracy_both", i, float(combined == r.human))
            add("accuracy_both_strict", i, float(combined == r.human))
            if r.longer is not None:
                add("length_human", i, float(r.human == r.longer))
    return counts


def measure(
    records: Sequence[PairRecord], resamples: int = DEFAULT_RESAMPLES, level: float = DEFAULT_LEVEL, seed: int = 0
) -> dict[str, Interval]:
    """Every metric in ``docs/analysis.md``, with its bootstrap interval.

    Returns metric name to its estimate and interval.

    Parameters
    ----------
    records
        The judged pairs.
    resamples
        The bootstrap's number of resamples.
    level
        The intervals' coverage.
    seed
        Seeds the bootstrap.
    """
    return {
        name: ratio_estimate(num, den, resamples, level, seed) for name, (num, den) in metric_counts(records).items()
    }


def verdict_counts(records: Sequence[PairRecord]) -> dict[str, int]:
    """How many of the verdicts (both orders of every pair) were ties and how many failed.

    Returns ``ties`` and ``failed``.

    Parameters
    ----------
    records
        The judged pairs.
    """
    verdicts = [v for r in records for v in (r.a_first, r.b_first)]
    return {"ties": sum(v == TIE for v in verdicts), "failed": sum(v is None for v in verdicts)}
