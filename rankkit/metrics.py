"""Agreement between a strategy's scores and the human scores (scipy does the statistics).

Correlations are computed two ways:

* **pooled** (``pearson``, ``spearman``, ``kendall``): over all candidates of all tasks at once —
  the paper's question-level correlation. Meaningful when scores share one scale across tasks,
  as grades from ``individual`` and ``knockout`` do.
* **per task, averaged** (``task_pearson``, ``task_spearman``, ``task_kendall``): computed within
  each task, then averaged over the tasks where it is defined (a task whose human or strategy
  scores are all equal has no correlation and is left out). This is the fair comparison between
  strategies whose scores live on per-task scales (ranks, Elo ratings).

Plus ``pairwise_accuracy`` (Kocmi et al. 2021): over all candidate pairs within a task whose human
scores differ, the share whose score difference has the same sign as the human difference; a tie
in the strategy's scores has no sign and so counts as wrong. And ``top1_accuracy``: the share of
tasks whose top-ranked candidate has the best human score (any of them, if several tie).
"""

from __future__ import annotations

import math
import warnings
from itertools import combinations
from typing import Mapping, Sequence

import numpy as np
from scipy import stats

CORRELATIONS = {
    "pearson": stats.pearsonr,
    "spearman": stats.spearmanr,
    "kendall": stats.kendalltau,  # tau-b, which corrects for ties
}

METRIC_NAMES = ("pearson", "spearman", "kendall", "task_pearson", "task_spearman", "task_kendall",
                "pairwise_accuracy", "top1_accuracy")


def correlation(method: str, x: Sequence[float], y: Sequence[float]) -> float:
    """One correlation coefficient; NaN when undefined (fewer than 2 points or a constant side)."""
    x_arr, y_arr = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x_arr) < 2 or np.ptp(x_arr) == 0 or np.ptp(y_arr) == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        value = CORRELATIONS[method](x_arr, y_arr)[0]
    return float(value)


def pairwise_accuracy_counts(scores: Mapping[str, float], human: Mapping[str, float]) -> tuple[int, int]:
    """(correct, total) over the pairs of one task with different human scores."""
    correct = total = 0
    for a, b in combinations(list(human), 2):
        dh = human[a] - human[b]
        if dh == 0:
            continue
        total += 1
        ds = scores[a] - scores[b]
        correct += int(ds != 0 and (ds > 0) == (dh > 0))
    return correct, total


def top1_correct(ranking: Sequence[str], human: Mapping[str, float]) -> bool:
    """Whether the first-ranked candidate is a human-best one."""
    return human[ranking[0]] == max(human.values())


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return float(np.mean(finite)) if finite else math.nan


def evaluate(per_task: Sequence[tuple[Mapping[str, float], Sequence[str], Mapping[str, float]]]) -> dict[str, float]:
    """All metrics over tasks given as (scores, ranking, human scores) triples.

    Tasks without human scores are skipped; everything is NaN when none has them.
    """
    labelled = [(s, r, h) for s, r, h in per_task if h]
    result: dict[str, float] = {}
    pooled_s = [s[c] for s, _, h in labelled for c in h]
    pooled_h = [h[c] for _, _, h in labelled for c in h]
    for method in CORRELATIONS:
        result[method] = correlation(method, pooled_s, pooled_h)
        result[f"task_{method}"] = _mean([correlation(method, [s[c] for c in h], list(h.values())) for s, _, h in labelled])
    correct = total = 0
    for s, _, h in labelled:
        c, t = pairwise_accuracy_counts(s, h)
        correct, total = correct + c, total + t
    result["pairwise_accuracy"] = correct / total if total else math.nan
    result["top1_accuracy"] = (sum(top1_correct(r, h) for _, r, h in labelled) / len(labelled)) if labelled else math.nan
    result["tasks_evaluated"] = len(labelled)
    return result
