"""Bias diagnostics for a pairwise judge: ``rankkit judge-report``.

More in ``docs/analysis.md``.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import Any

from rankkit.data.tasks import Task
from rankkit.judges.base import Judge
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import Verdict
from rankkit.reports.judge_report_agreement import all_metrics, length_buckets
from rankkit.reports.judge_report_pairs import (
    PairRecord,
    metric_json,
    pair_record,
    sample_pairs,
    verdict_counts,
)
from rankkit.reports.judge_report_panel import panel_section
from rankkit.stats.agreement import CALIBRATION_BINS
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES
from rankkit.strategies.matches import Cost, MatchSource


def collect(
    tasks: Sequence[Task],
    judge: Judge,
    cache: Any = None,
    pairs_per_task: int | None = None,
    seed: int = 0,
    progress: bool = False,
    memo: JudgmentMemo | None = None,
) -> tuple[list[PairRecord], list[tuple[Task, list[Verdict]]], Cost]:
    """Judge every sampled pair of every task in both orders (one batch per task).

    Returns ``(records, judgments, cost)``: a :class:`PairRecord` per pair, the raw judgments per
    task (a-first and b-first alternating, in record order), and what was spent.

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

    memo = memo if memo is not None else JudgmentMemo(judge, cache)
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
            records.append(pair_record(task, a, b, a_first, b_first))
    memo.flush()
    return records, raw, cost


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
    from rankkit.judges.composite.panel import PanelJudge
    from rankkit.judges.simulated.replay import is_miss

    memo = JudgmentMemo(judge, cache)  # kept: a panel's section reads its members' votes back from it
    records, raw, cost = collect(tasks, judge, cache, pairs_per_task, seed, progress, memo)
    estimates = all_metrics(records, resamples, level, seed)
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
        "calibration_bins": CALIBRATION_BINS,
        "length_buckets": length_buckets(records, resamples, level, seed),
    }
    if isinstance(judge, PanelJudge):
        report["panel"] = panel_section(judge, memo, tasks, records, resamples, level, seed)
    return report
