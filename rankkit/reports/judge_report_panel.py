"""A panel judge's part of a judge report: each member measured, their agreement, and draws by threshold."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import numpy as np

from rankkit.data.tasks import Task
from rankkit.judgments.values import Winner
from rankkit.reports.judge_report_agreement import all_metrics
from rankkit.reports.judge_report_pairs import (
    PANEL_THRESHOLDS,
    TIE,
    PairRecord,
    a_win_probability,
    credit,
    metric_json,
    verdict_counts,
    verdict_of,
)

if TYPE_CHECKING:
    from rankkit.judges.composite.panel import VoteCount
    from rankkit.judgments.memo import JudgmentMemo


def panel_section(
    panel: Any,
    memo: JudgmentMemo,
    tasks: Sequence[Task],
    records: Sequence[PairRecord],
    resamples: int,
    level: float,
    seed: int,
) -> dict[str, Any]:
    """Per-member metrics, inter-member agreement and draws by threshold for a panel judge.

    Reads the member votes the panel gathered while judging back from ``memo`` (the run's memory or
    the cache), so it costs no new judgments. Krippendorff's alpha treats each (pair, presentation order) as a unit
    and each member as a rater; a failed vote is a missing value. ``resamples``, ``level`` and ``seed``
    are the bootstrap's, as in :func:`~rankkit.reports.judge_report_pairs.measure`.

    Returns the report's ``panel`` section.

    Parameters
    ----------
    panel
        The panel judge.
    records
        The panel's judged pairs.
    """
    from rankkit.judges.composite.panel import krippendorff_alpha

    member_records, alpha_rows, decided = member_votes(panel, memo, tasks, records)
    members = [
        {
            "member": member.description,
            **verdict_counts(recs),
            "metrics": {k: metric_json(v) for k, v in all_metrics(recs, resamples, level, seed).items()},
        }
        for member, recs in zip(panel.members, member_records)
    ]
    by_threshold = [threshold_row(t, decided) for t in sorted({*PANEL_THRESHOLDS, panel.threshold}, reverse=True)]
    alpha = krippendorff_alpha(alpha_rows)
    return {"members": members, "krippendorff_alpha": None if math.isnan(alpha) else alpha, "thresholds": by_threshold}


def member_votes(
    panel: Any, memo: JudgmentMemo, tasks: Sequence[Task], records: Sequence[PairRecord]
) -> tuple[list[list[PairRecord]], list[list[float | None]], list[tuple[PairRecord, VoteCount]]]:
    r"""The members' votes on the panel's judged pairs, read back from what the panel gathered.

    Returns per member its pairs as :class:`~rankkit.reports.judge_report_pairs.PairRecord`\ s, per member
    its votes in both orders (Krippendorff's alpha's rows; None for a failed vote), and each pair
    with the panel's vote count.
    """
    from rankkit.judges.composite.panel import VoteCount
    from rankkit.judgments.values import VERDICT_KIND

    by_task = {task.task_id: task for task in tasks}
    member_records: list[list[PairRecord]] = [[] for _ in panel.members]
    alpha_rows: list[list[float | None]] = [[] for _ in panel.members]
    decided: list[tuple[PairRecord, VoteCount]] = []
    for record in records:
        task = by_task[record.task_id]
        request = [(task, task.candidate(record.a), task.candidate(record.b))]
        (per_member,), _ = panel.member_judgments(request, memo.needed(panel.needs(VERDICT_KIND, request)))
        for m, (a_first, b_first) in enumerate(per_member):
            member_records[m].append(
                replace(
                    record,
                    a_first=verdict_of(a_first, record.a, record.b),
                    b_first=verdict_of(b_first, record.b, record.a),
                    a_win_probabilities=(a_win_probability(a_first, False), a_win_probability(b_first, True)),
                )
            )
        votes = panel.votes(per_member)
        for m in range(len(panel.members)):
            alpha_rows[m].extend(votes[2 * m : 2 * m + 2])
        decided.append((record, VoteCount.of(votes)))
    return member_records, alpha_rows, decided


def threshold_row(threshold: float, decided: Sequence[tuple[PairRecord, VoteCount]]) -> dict[str, Any]:
    """What the panel decides at one agreement threshold: its draws, and on labelled pairs its
    accuracy counting a draw as half right, over the decided pairs, and counting a draw as wrong.

    Returns the row of the report's ``panel.thresholds``.
    """
    from rankkit.judges.composite.panel import decide

    draws, credits, decided_right = 0, [], []
    for record, count in decided:
        decision = decide(count, threshold)
        draws += decision is Winner.TIE
        if record.human in (record.a, record.b):
            verdict = TIE if decision is Winner.TIE else (record.a if decision is Winner.FIRST else record.b)
            credits.append(credit(verdict, record.human))
            if verdict != TIE:
                decided_right.append(float(verdict == record.human))
    return {
        "threshold": threshold,
        "decisions": len(decided),
        "draws": draws,
        "accuracy": float(np.mean(credits)) if credits else None,
        "accuracy_decided": float(np.mean(decided_right)) if decided_right else None,
        "accuracy_strict": float(np.sum(decided_right) / len(credits)) if credits else None,
    }
