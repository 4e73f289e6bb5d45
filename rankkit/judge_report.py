"""Bias diagnostics for a pairwise judge: ``rankkit judge-report``.

More in ``docs/analysis.md``.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import combinations
from typing import Any

import numpy as np

from rankkit.judges.base import Judge
from rankkit.judgments import ParseStatus, Verdict, Winner
from rankkit.matches import Cost, MatchSource
from rankkit.memo import JudgmentMemo
from rankkit.stats import DEFAULT_LEVEL, DEFAULT_RESAMPLES, Interval, bootstrap
from rankkit.tasks import Task, longer_candidate, task_rng

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
        The longer candidate (:attr:`rankkit.tasks.Candidate.length`), None when equally long.
    """

    task_id: str
    a: str
    b: str
    a_first: Preference
    b_first: Preference
    human: Preference
    longer: str | None


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


# ---------------------------------------------------------------------------------------------
# Statistics


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
    (:func:`rankkit.stats.bootstrap`).

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


# ---------------------------------------------------------------------------------------------
# Collecting judgments


def collect(
    tasks: Sequence[Task],
    judge: Judge,
    cache: Any = None,
    pairs_per_task: int | None = None,
    seed: int = 0,
    progress: bool = False,
) -> tuple[list[PairRecord], list[tuple[Task, list[Verdict]]], Cost]:
    """Judge every sampled pair of every task in both orders (one batch per task).

    Returns ``(records, judgments, cost)``: a :class:`PairRecord` per pair, the raw judgments per
    task (a-first and b-first alternating, in record order), and what was spent.

    Returns ``(records, judgments, cost)``.

    Parameters
    ----------
    tasks
        The tasks.
    judge
        The judge.
    cache
        The judgment cache (None: no persistent cache).
    pairs_per_task
        Pairs sampled per task (None: all).
    seed
        Seeds the pair sample.
    progress
        Show a progress bar.
    """
    from tqdm import tqdm

    memo = JudgmentMemo(judge, cache)
    judge.check_tasks(tasks)  # before any judgment (the sim judge needs human scores)
    cost = Cost()
    records: list[PairRecord] = []
    raw: list[tuple[Task, list[Verdict]]] = []
    for task in tqdm(tasks, desc="judging", unit="task", file=sys.stderr, disable=not progress):
        pairs = sample_pairs(task, pairs_per_task, seed)
        source = MatchSource(task, memo, strategy="judge-report")
        ordered = [order for a, b in pairs for order in ((a, b), (b, a))]
        judgments = source.compare_many(ordered, round=1)
        cost.add(source.cost)
        raw.append((task, judgments))
        for (a, b), a_first, b_first in zip(pairs, judgments[0::2], judgments[1::2]):
            records.append(
                PairRecord(
                    task_id=task.task_id,
                    a=a,
                    b=b,
                    a_first=verdict_of(a_first, a, b),
                    b_first=verdict_of(b_first, b, a),
                    human=human_preference(task, a, b),
                    longer=longer_candidate(task, a, b),
                )
            )
    memo.flush()
    return records, raw, cost


def panel_section(
    panel: Any, tasks: Sequence[Task], records: Sequence[PairRecord], resamples: int, level: float, seed: int
) -> dict[str, Any]:
    """Per-member metrics, inter-member agreement and draws by threshold for a panel judge.

    Reads the member votes the panel gathered while judging (its memory or the cache), so it
    costs no new judgments. Krippendorff's alpha treats each (pair, presentation order) as a unit
    and each member as a rater; a failed vote is a missing value.

    Returns the report's ``panel`` section.

    Parameters
    ----------
    panel
        The panel judge.
    tasks
        The tasks.
    records
        The panel's judged pairs.
    resamples
        The bootstrap's number of resamples.
    level
        The intervals' coverage.
    seed
        Seeds the bootstrap.
    """
    from rankkit.judges.panel import VoteCount, decide, krippendorff_alpha

    by_task = {task.task_id: task for task in tasks}
    member_records: list[list[PairRecord]] = [[] for _ in panel.members]
    alpha_rows: list[list[float | None]] = [[] for _ in panel.members]
    decided: list[tuple[PairRecord, VoteCount]] = []
    for record in records:
        task = by_task[record.task_id]
        (per_member,), _ = panel.member_judgments([(task, task.candidate(record.a), task.candidate(record.b))])
        for m, (a_first, b_first) in enumerate(per_member):
            member_records[m].append(
                PairRecord(
                    task_id=record.task_id,
                    a=record.a,
                    b=record.b,
                    a_first=verdict_of(a_first, record.a, record.b),
                    b_first=verdict_of(b_first, record.b, record.a),
                    human=record.human,
                    longer=record.longer,
                )
            )
        votes = panel.votes(per_member)
        for m in range(len(panel.members)):
            alpha_rows[m].extend(votes[2 * m : 2 * m + 2])
        decided.append((record, VoteCount.of(votes)))
    members = []
    for member, recs in zip(panel.members, member_records):
        estimates = measure(recs, resamples, level, seed)
        members.append(
            {
                "member": member.description,
                **verdict_counts(recs),
                "metrics": {k: metric_json(v) for k, v in estimates.items()},
            }
        )
    by_threshold = []
    for threshold in sorted({*PANEL_THRESHOLDS, panel.threshold}, reverse=True):
        draws, credits, decided_right = 0, [], []
        for record, count in decided:
            decision = decide(count, threshold)
            draws += decision is Winner.TIE
            if record.human in (record.a, record.b):
                verdict = TIE if decision is Winner.TIE else (record.a if decision is Winner.FIRST else record.b)
                credits.append(credit(verdict, record.human))
                if verdict != TIE:
                    decided_right.append(float(verdict == record.human))
        by_threshold.append(
            {
                "threshold": threshold,
                "decisions": len(decided),
                "draws": draws,
                "accuracy": float(np.mean(credits)) if credits else None,
                "accuracy_decided": float(np.mean(decided_right)) if decided_right else None,
                "accuracy_strict": float(np.sum(decided_right) / len(credits)) if credits else None,
            }
        )
    alpha = krippendorff_alpha(alpha_rows)
    return {"members": members, "krippendorff_alpha": None if math.isnan(alpha) else alpha, "thresholds": by_threshold}


# ---------------------------------------------------------------------------------------------
# The report


def judge_report(
    tasks: Sequence[Task],
    judge: Judge,
    cache: Any = None,
    pairs_per_task: int | None = None,
    seed: int = 0,
    resamples: int = DEFAULT_RESAMPLES,
    level: float = DEFAULT_LEVEL,
    progress: bool = False,
    judge_spec: str = "",
    data: str = "",
) -> dict[str, Any]:
    """Judge the sampled pairs in both orders and measure the judge; returns the report as a dict.

    Returns the report (JSON-ready; see ``docs/analysis.md``).

    Parameters
    ----------
    progress
        Show a progress bar.
    judge_spec, data : str
        The judge spec and the data path, as the report records them.
    tasks
        The tasks (with human labels for the accuracy and human length rows).
    judge, cache
        The judge and the judgment cache (None = no persistent cache).
    pairs_per_task
        Pairs sampled per task (None = all).
    seed
        Seeds the pair sample and the bootstrap.
    resamples, level
        The bootstrap's number of resamples and interval coverage (stored in the report as
        ``bootstrap.resamples`` and ``bootstrap.confidence``).
    """
    from rankkit.judges.panel import PanelJudge
    from rankkit.judges.replay import is_miss

    records, raw, cost = collect(tasks, judge, cache, pairs_per_task, seed, progress)
    estimates = measure(records, resamples, level, seed)
    misses = sum(is_miss(j) for _, judgments in raw for j in judgments)
    report: dict[str, Any] = {
        "judge": {
            "spec": judge_spec,
            "description": judge.description,
            "fingerprint": judge.fingerprint,
            "simulated": judge.simulated,
        },
        "data": data,
        "seed": seed,
        "pairs_per_task": pairs_per_task,
        "bootstrap": {"resamples": resamples, "confidence": level, "unit": "task"},
        "tasks": len(tasks),
        "pairs": len(records),
        "judgments": 2 * len(records),
        "counts": {
            **verdict_counts(records),
            "misses": misses,
            "judge_calls": cost.judge_calls,
            "cache_hits": cost.cache_hits,
            "prompt_tokens": cost.prompt_tokens,
            "completion_tokens": cost.completion_tokens,
        },
        "metrics": {name: metric_json(estimate) for name, estimate in estimates.items()},
    }
    if isinstance(judge, PanelJudge):
        report["panel"] = panel_section(judge, tasks, records, resamples, level, seed)
    return report


METRIC_LABELS = (
    ("first_slot", "first-slot preference (0.5 = none)"),
    ("order_consistency", "order consistency"),
    ("length_judge", "judge picks the longer answer"),
    ("length_human", "humans prefer the longer answer"),
    ("accuracy_single", "accuracy, one order"),
    ("accuracy_both", "accuracy, both orders (decided pairs)"),
    ("accuracy_both_strict", "accuracy, both orders (draw = wrong)"),
)


def report_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Table rows (metric, value, interval, n) for the command line.

    Returns one row per metric.

    Parameters
    ----------
    report
        A :func:`judge_report` report.
    """
    rows = []
    for name, label in METRIC_LABELS:
        metric = report["metrics"][name]
        interval = "-" if metric["low"] is None else f"[{metric['low']:.3f}, {metric['high']:.3f}]"
        rows.append(
            {
                "metric": label,
                "value": metric["value"],
                "interval": interval,
                "n": None if metric["n"] is None else int(metric["n"]),
            }
        )
    return rows


def panel_rows(report: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(member rows, threshold rows) of a panel report, for the command line.

    Returns the member rows and the threshold rows.

    Parameters
    ----------
    report
        A :func:`judge_report` report of a panel judge.
    """
    members = []
    for member in report["panel"]["members"]:
        metrics = member["metrics"]
        members.append(
            {
                "member": member["member"],
                "acc1": metrics["accuracy_single"]["value"],
                "acc2": metrics["accuracy_both"]["value"],
                "strict": metrics["accuracy_both_strict"]["value"],
                "first": metrics["first_slot"]["value"],
                "consistency": metrics["order_consistency"]["value"],
                "failed": member["failed"],
            }
        )
    return members, list(report["panel"]["thresholds"])


def format_report(report: dict[str, Any]) -> str:
    """The report as the plain-text tables ``rankkit judge-report`` prints.

    Returns the tables.

    Parameters
    ----------
    report
        A :func:`judge_report` report.
    """
    from rankkit.formatting import format_table

    counts = report["counts"]
    lines = [
        f"judge {report['judge']['description']} · {report['tasks']} tasks, {report['pairs']} pairs, "
        f"{report['judgments']} judgments (each pair in both orders) · seed {report['seed']}",
        f"ties {counts['ties']} · failed {counts['failed']} (replay misses {counts['misses']}) · "
        f"judge calls {counts['judge_calls']} · cache hits {counts['cache_hits']}",
        format_table(
            report_rows(report),
            [
                ("metric", "metric"),
                ("value", "value"),
                ("interval", f"{report['bootstrap']['confidence']:.0%} CI"),
                ("n", "n"),
            ],
        ),
    ]
    if "panel" in report:
        members, thresholds = panel_rows(report)
        alpha = report["panel"]["krippendorff_alpha"]
        lines += [
            "",
            "panel members (accuracy: one order / both orders on decided pairs / both orders, draw = wrong):",
            format_table(
                members,
                [
                    ("member", "member"),
                    ("acc1", "acc_1order"),
                    ("acc2", "acc_2orders"),
                    ("strict", "acc_strict"),
                    ("first", "first_slot"),
                    ("consistency", "consistency"),
                    ("failed", "failed"),
                ],
            ),
            f"inter-judge agreement (Krippendorff's alpha, nominal): {'-' if alpha is None else f'{alpha:.3f}'}",
            "",
            "decisions by agreement threshold:",
            format_table(
                thresholds,
                [
                    ("threshold", "threshold"),
                    ("decisions", "decisions"),
                    ("draws", "draws"),
                    ("accuracy", "acc_draw=1/2"),
                    ("accuracy_decided", "acc_decided"),
                    ("accuracy_strict", "acc_strict"),
                ],
            ),
        ]
    return "\n".join(lines)
