"""Agreement between a strategy's scores and the human scores (``docs/analysis.md``)."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # numpy and scipy load when metrics are computed, not on `import rankkit`
    import numpy as np

#: Correlation name -> the scipy.stats function that computes it (tau-b for Kendall, which
#: corrects for ties).
CORRELATIONS = {
    "pearson": "pearsonr",
    "spearman": "spearmanr",
    "kendall": "kendalltau",
}

METRIC_NAMES = (
    "pearson",
    "spearman",
    "kendall",
    "task_pearson",
    "task_spearman",
    "task_kendall",
    "pairwise_accuracy",
    "top1_accuracy",
)

#: Tasks are evaluated in chunks holding at most this many within-task pairs (bounded memory).
_PAIRS_PER_CHUNK = 1 << 20


def correlation(method: str, x: Sequence[float], y: Sequence[float]) -> float:
    """The ``pearson``, ``spearman`` or ``kendall`` (tau-b) coefficient; NaN with fewer than 2 points or a constant side.

    Pearson and Spearman use closed forms (:func:`row_pearson`): ``scipy.stats.pearsonr`` warns on
    nearly constant input, and hiding that needs ``warnings.catch_warnings``, which is not thread-safe.
    """
    import numpy as np
    from scipy import stats

    x_arr, y_arr = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
    if len(x_arr) < 2 or np.ptp(x_arr) == 0 or np.ptp(y_arr) == 0:
        return math.nan
    if method == "pearson":
        return float(row_pearson(x_arr[None, :], y_arr[None, :])[0])
    if method == "spearman":
        return float(row_pearson(stats.rankdata(x_arr)[None, :], stats.rankdata(y_arr)[None, :])[0])
    # kendalltau warns only on constant input, excluded above.
    return float(getattr(stats, CORRELATIONS[method])(x_arr, y_arr)[0])


def pairwise_accuracy_counts(scores: Mapping[str, float], human: Mapping[str, float]) -> tuple[int, int]:
    """(correct, total): the pairs of one task the humans do not tie, and those the scores order alike (a tie in the scores is wrong)."""
    import numpy as np

    ids = list(human)
    signs = _pair_signs(
        np.array([[scores[c] for c in ids]], dtype=float), np.array([list(human.values())], dtype=float)
    )
    return int(signs["correct"][0]), int(signs["untied_human"][0])


def top1_correct(ranking: Sequence[str], human: Mapping[str, float]) -> bool:
    """Whether ``ranking[0]`` has the best human score (ties in the ranking are not seen; :func:`top1_share` sees them)."""
    return human[ranking[0]] == max(human.values())


def top1_share(scores: Mapping[str, float], human: Mapping[str, float]) -> float:
    """Top-1 accuracy of one task: of the candidates sharing the top score, the share with the best human score.

    1.0 or 0.0 without a tie at the top; a candidate tied with the human best counts as best.
    """
    top = max(scores[c] for c in human)
    best = max(human.values())
    tied = [c for c in human if scores[c] == top]
    return sum(human[c] == best for c in tied) / len(tied)


def _pair_signs(scores: np.ndarray, human: np.ndarray) -> dict[str, np.ndarray]:
    """For each row (task) of score and human arrays, from the signs of all within-task pair
    differences: the tau-b numerator (``concordance``: concordant minus discordant pairs), the
    pairs untied in the scores and in the human scores, and the pairs ordered like the humans
    (``correct``; a tie in the scores is not)."""
    import numpy as np

    first, second = np.triu_indices(scores.shape[1], 1)
    score_sign = np.sign(scores[:, second] - scores[:, first]).astype(np.int8)
    human_sign = np.sign(human[:, second] - human[:, first]).astype(np.int8)
    agree = score_sign * human_sign
    return {
        "concordance": agree.sum(axis=1, dtype=np.int64),
        "untied_scores": np.abs(score_sign).sum(axis=1, dtype=np.int64),
        "untied_human": np.abs(human_sign).sum(axis=1, dtype=np.int64),
        "correct": (agree > 0).sum(axis=1),
    }


def row_pearson(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Pearson's r of each row pair of two (k, n) arrays, as scipy.stats.pearsonr computes it, clipped to [-1, 1]; NaN for a constant row."""
    import numpy as np

    xm = x - x.mean(axis=1, keepdims=True)
    ym = y - y.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = np.sum(
            (xm / np.linalg.norm(xm, axis=1, keepdims=True)) * (ym / np.linalg.norm(ym, axis=1, keepdims=True)), axis=1
        )
    return np.clip(r, -1.0, 1.0)


def _task_metrics(scores: np.ndarray, human: np.ndarray) -> dict[str, np.ndarray]:
    """Per-task correlations, pairwise-accuracy counts and top-1 shares for tasks of one size
    (one row per task)."""
    import numpy as np
    from scipy.stats import rankdata

    defined = (
        (np.ptp(scores, axis=1) > 0) & (np.ptp(human, axis=1) > 0)
        if scores.shape[1] >= 2
        else np.zeros(len(scores), dtype=bool)
    )
    out = {name: np.full(len(scores), math.nan) for name in CORRELATIONS}
    signs = _pair_signs(scores, human)
    if defined.any():
        s, h = scores[defined], human[defined]
        out["pearson"][defined] = row_pearson(s, h)
        out["spearman"][defined] = row_pearson(rankdata(s, axis=1), rankdata(h, axis=1))
        # tau-b = (concordant − discordant) / sqrt(pairs untied in x) / sqrt(pairs untied in y),
        # divided in that order as scipy.stats.kendalltau does.
        tau = (
            signs["concordance"][defined]
            / np.sqrt(signs["untied_scores"][defined])
            / np.sqrt(signs["untied_human"][defined])
        )
        out["kendall"][defined] = np.clip(tau, -1.0, 1.0)
    top = scores == scores.max(axis=1, keepdims=True)
    best = human == human.max(axis=1, keepdims=True)
    out["top1"] = (top & best).sum(axis=1) / top.sum(axis=1)
    out["correct"], out["total"] = signs["correct"], signs["untied_human"]
    return out


def evaluate(per_task: Sequence[tuple[Mapping[str, float], Sequence[str], Mapping[str, float]]]) -> dict[str, float]:
    """All metrics over ``(scores, ranking, human)`` triples, one per task.

    Each correlation pooled over the tasks and (``task_<method>``) averaged per task,
    ``pairwise_accuracy``, ``top1_accuracy`` and ``tasks_evaluated``. Tasks without human scores are
    skipped (all NaN when none has them); the ranking is unused (top-1 applies :func:`top1_share`'s
    tie rule to the scores).
    """
    import numpy as np

    labelled = [(s, h) for s, _, h in per_task if h]
    by_size: dict[int, list[tuple[Mapping[str, float], Mapping[str, float]]]] = {}
    for s, h in labelled:
        by_size.setdefault(len(h), []).append((s, h))
    parts: dict[str, list[np.ndarray]] = {}
    for size, tasks in by_size.items():
        chunk = max(1, _PAIRS_PER_CHUNK // max(1, size * (size - 1) // 2))
        for start in range(0, len(tasks), chunk):
            rows = tasks[start : start + chunk]
            scores = np.array([[s[c] for c in h] for s, h in rows], dtype=float)
            human = np.array([list(h.values()) for _, h in rows], dtype=float)
            for name, values in _task_metrics(scores, human).items():
                parts.setdefault(name, []).append(values)
    per = {name: np.concatenate(values) for name, values in parts.items()}
    pooled_s = [s[c] for s, h in labelled for c in h]
    pooled_h = [v for _, h in labelled for v in h.values()]
    result: dict[str, float] = {}
    for method in CORRELATIONS:
        result[method] = correlation(method, pooled_s, pooled_h)
        defined = per[method][~np.isnan(per[method])] if per else np.array([])
        result[f"task_{method}"] = float(np.mean(defined)) if len(defined) else math.nan
    total = int(per["total"].sum()) if per else 0
    result["pairwise_accuracy"] = int(per["correct"].sum()) / total if total else math.nan
    result["top1_accuracy"] = float(np.mean(per["top1"])) if labelled else math.nan
    result["tasks_evaluated"] = len(labelled)
    return result
