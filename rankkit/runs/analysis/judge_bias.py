"""The judge's position, length and slot biases and its style preference, with exact binomial intervals.

Each rate sits next to the rate a judge agreeing with the humans would show.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rankkit.data.tasks import longer_candidate
from rankkit.judgments.values import ParseStatus, Winner
from rankkit.runs.analysis.labelled import human_scores
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, Interval, bootstrap, proportion_interval
from rankkit.strategies.choices import GroupComparison
from rankkit.strategies.matches import Comparison


def distinct_comparisons(results: RunResult, name: str | None = None) -> list[tuple[str, Comparison]]:
    """``(task id, comparison)`` pairs of strategy ``name``, or of all strategies (None) with each judgment once."""
    seen: set[tuple[str, str, str]] = set()
    out = []
    for strategy in results.strategies:
        if name is not None and strategy.name != name:
            continue
        for task in strategy.tasks:
            for comparison in task.comparisons:
                key = (task.task_id, comparison.first, comparison.second)
                if key not in seen:
                    seen.add(key)
                    out.append((task.task_id, comparison))
    return out


def winner_of(comparison: Comparison) -> str | None:
    """The candidate that won a decided comparison; None for a tie."""
    if comparison.verdict.winner is Winner.TIE:
        return None
    return comparison.first if comparison.verdict.winner is Winner.FIRST else comparison.second


def position_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """How often the judge picked the candidate shown first.

    Returns ``matches`` (distinct comparisons) and ``ties``; ``first_slot_win_rate`` over decided
    comparisons with an exact binomial interval (0.5 is unbiased under random orders);
    ``order_consistency``, the share of pairs judged in both orders with the same winner both times;
    ``human_first_better``, the rate a human-agreeing judge would show. ``name`` None: all
    strategies, each judgment once.
    """
    comparisons = distinct_comparisons(results, name)
    human = human_scores(results)
    decided = [(task_id, c) for task_id, c in comparisons if winner_of(c) is not None]
    first_wins = sum(winner_of(c) == c.first for _, c in decided)
    winners = {(task_id, c.first, c.second): winner_of(c) for task_id, c in decided}
    consistent = both = 0
    for (task_id, first, second), winner in winners.items():
        other = winners.get((task_id, second, first))
        if other is None or first > second:
            continue  # count each unordered pair once
        both += 1
        consistent += winner == other
    labelled = [
        (task_id, c)
        for task_id, c in decided
        if task_id in human and human[task_id][c.first] != human[task_id][c.second]
    ]
    human_first = sum(human[task_id][c.first] > human[task_id][c.second] for task_id, c in labelled)
    return {
        "matches": len(comparisons),
        "ties": len(comparisons) - len(decided),
        "first_slot_win_rate": proportion_interval(first_wins, len(decided), level),
        "order_consistency": proportion_interval(consistent, both, level),
        "human_first_better": proportion_interval(human_first, len(labelled), level),
    }


def length_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """How often the longer answer (in characters) won, against how often humans prefer it.

    Returns ``matches`` (decided comparisons of unequal lengths), ``longer_win_rate`` and
    ``human_longer_better`` (among those with different human scores). ``name`` None: all
    strategies, each judgment once.
    """
    tasks = {t.task_id: t for t in results.tasks}
    human = human_scores(results)
    longer_won = decided = human_longer = labelled = 0
    for task_id, c in distinct_comparisons(results, name):
        winner = winner_of(c)
        if winner is None:
            continue
        longer = longer_candidate(tasks[task_id], c.first, c.second)
        if longer is None:
            continue
        shorter = c.second if longer == c.first else c.first
        decided += 1
        longer_won += winner == longer
        truth = human.get(task_id)
        if truth and truth[longer] != truth[shorter]:
            labelled += 1
            human_longer += truth[longer] > truth[shorter]
    return {
        "matches": decided,
        "longer_win_rate": proportion_interval(longer_won, decided, level),
        "human_longer_better": proportion_interval(human_longer, labelled, level),
    }


# Slot bias of k-way judgments (setwise and listwise strategies)


def distinct_group_comparisons(results: RunResult, name: str | None = None) -> list[tuple[str, GroupComparison]]:
    """``(task id, k-way judgment)`` pairs of strategy ``name``, or of all strategies (None) with each judgment once.

    A judgment is one (task, kind, group in slot order), whichever strategy or round used it.
    """
    seen: set[tuple[str, str, tuple[str, ...]]] = set()
    out = []
    for strategy in results.strategies:
        if name is not None and strategy.name != name:
            continue
        for task in strategy.tasks:
            for group in task.group_comparisons:
                key = (task.task_id, group.kind, tuple(group.shown))
                if key not in seen:
                    seen.add(key)
                    out.append((task.task_id, group))
    return out


def top_slot(group: GroupComparison) -> int | None:
    """The slot the judge put first (0 = shown first); None when the judgment failed to parse.

    Examples
    --------
    >>> from rankkit.judgments.values import GroupChoice, GroupRanking
    >>> top_slot(GroupComparison(("a", "b", "c"), GroupChoice(chosen=2)))
    2
    >>> top_slot(GroupComparison(("a", "b", "c"), GroupRanking(permutation=(1, 0, 2))))
    1
    """
    if group.judgment.status is ParseStatus.FAILED or not group.ranking:
        return None
    return group.shown.index(group.ranking[0])


def human_best_shares(shown: Sequence[str], human: Mapping[str, float]) -> tuple[float, ...]:
    """Each slot's share of the human-best answer: 1 for its slot, split evenly among tied best answers.

    Examples
    --------
    >>> human_best_shares(["a", "b", "c"], {"a": 1.0, "b": 3.0, "c": 2.0})
    (0.0, 1.0, 0.0)
    >>> human_best_shares(["a", "b", "c", "d"], {"a": 3.0, "b": 1.0, "c": 3.0, "d": 2.0})
    (0.5, 0.0, 0.5, 0.0)
    """
    best = max(human[cid] for cid in shown)
    tied = sum(human[cid] == best for cid in shown)
    return tuple(1.0 / tied if human[cid] == best else 0.0 for cid in shown)


def slot_rates(
    top_slots: Sequence[int], human_shares: Sequence[Sequence[float]], k: int, level: float = DEFAULT_LEVEL
) -> list[dict[str, Any]]:
    """One row per slot of the parsed k-way judgments of group size ``k``.

    Each row: ``slot`` (0 = shown first), ``chosen``, ``rate`` with its exact binomial interval,
    ``uniform`` (1/k) and ``human`` (share of labelled judgments whose human-best answer is in the
    slot; NaN without any).

    Examples
    --------
    >>> rows = slot_rates([0, 0, 1], [(0.0, 1.0), (1.0, 0.0)], k=2)
    >>> [(row["slot"], row["chosen"], round(row["rate"].estimate, 3), row["uniform"], row["human"]) for row in rows]
    [(0, 2, 0.667, 0.5, 0.5), (1, 1, 0.333, 0.5, 0.5)]
    """
    rows = []
    for slot in range(k):
        chosen = sum(top == slot for top in top_slots)
        human = sum(shares[slot] for shares in human_shares) / len(human_shares) if human_shares else math.nan
        rows.append(
            {
                "slot": slot,
                "chosen": chosen,
                "rate": proportion_interval(chosen, len(top_slots), level),
                "uniform": 1.0 / k,
                "human": human,
            }
        )
    return rows


def slot_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> list[dict[str, Any]]:
    """How often a k-way judge chose the answer in each slot, per group size k.

    A choice counts for the slot chosen, a ranking for its first slot. One entry per group size,
    smallest first: ``k``, ``judgments`` (parsed), ``failed``, ``labelled`` and ``slots``
    (:func:`slot_rates`); empty without k-way judgments. ``name`` None: all strategies, each judgment once.
    """
    human = human_scores(results)
    by_k: dict[int, list[tuple[str, GroupComparison]]] = {}
    for task_id, group in distinct_group_comparisons(results, name):
        by_k.setdefault(len(group.shown), []).append((task_id, group))
    out = []
    for k, judgments in sorted(by_k.items()):
        parsed = [(task_id, group, top) for task_id, group in judgments if (top := top_slot(group)) is not None]
        shares = [human_best_shares(group.shown, human[task_id]) for task_id, group, _ in parsed if task_id in human]
        out.append(
            {
                "k": k,
                "judgments": len(parsed),
                "failed": len(judgments) - len(parsed),
                "labelled": len(shares),
                "slots": slot_rates([top for _, _, top in parsed], shares, k, level),
            }
        )
    return out


# Style preference beyond the human scores (a logistic regression of the verdict)

#: The covariates of :func:`style_preference`, after the human-score difference.
STYLE_TERMS = ("length", "format")


def style_rows(results: RunResult, name: str | None = None) -> dict[str, list[tuple[float, float, float, float]]]:
    """Decided pairwise comparisons on labelled tasks as regression rows, by task id.

    Each row, first minus second: ``(first won, human difference / task spread, log2 length ratio,
    format-score difference)``. Ties and unlabelled tasks are left out.
    """
    tasks = {t.task_id: t for t in results.tasks}
    human = human_scores(results)
    grouped: dict[str, list[tuple[float, float, float, float]]] = {}
    for task_id, c in distinct_comparisons(results, name):
        winner = winner_of(c)
        if winner is None or task_id not in human:
            continue
        task = tasks[task_id]
        first, second = task.candidate(c.first).style, task.candidate(c.second).style
        spread = task.human_spread
        row = (
            1.0 if winner == c.first else 0.0,
            (human[task_id][c.first] - human[task_id][c.second]) / spread,
            math.log2(max(1, first.chars) / max(1, second.chars)),
            first.format_score - second.format_score,
        )
        grouped.setdefault(task_id, []).append(row)
    return grouped


def _style_fit(data: Any) -> dict[str, float]:
    """The regression on an (n, 4) array of :func:`style_rows` rows."""
    import numpy as np

    from rankkit.stats.intervals import logistic_regression

    design = np.column_stack([np.ones(len(data)), data[:, 1:]])
    # A light ridge: keeps a perfectly separating judge (always right) finite; negligible otherwise.
    beta = logistic_regression(design, data[:, 0], np.full(design.shape[1], 1e-3))
    human = beta[1]
    out = {
        "human": float(human),
        "slot": float(beta[0]),
        "length_logit": float(beta[2]),
        "format_logit": float(beta[3]),
    }
    for key, column in (("slot_sd", 0), ("length", 2), ("format", 3)):
        out[key] = float(beta[column] / human) if human > 0 else math.nan
    for key, column in (("length", 2), ("format", 3)):
        if not np.any(data[:, column]):  # no such differences (plain-text answers): nothing to estimate
            out[key] = out[f"{key}_logit"] = math.nan
    return out


def style_preference(
    results: RunResult, name: str | None = None, resamples: int = 1000, seed: int = 0, level: float = DEFAULT_LEVEL
) -> dict[str, Any]:
    """The judge's preference for length and formatting beyond what the human scores explain.

    A logistic regression of the verdict on the human-score difference and style differences
    (:func:`style_rows`); style coefficients over the human one are in human-score spreads per
    doubling, the units of the simulator's biases, so a planted bias is recovered as itself.
    Intervals are a percentile bootstrap over tasks.

    Returns
    -------
    dict[str, Any]
        ``matches``, ``tasks``, then intervals ``length``, ``format``, ``slot_sd`` (spreads),
        ``human``, ``length_logit``, ``format_logit``, ``slot`` (log-odds). All NaN below 20
        comparisons or when the human coefficient is ≤ 0; a style term NaN when no answers differ in it.
    """
    grouped = style_rows(results, name)
    matches = sum(len(rows) for rows in grouped.values())
    keys = ("length", "format", "slot_sd", "human", "length_logit", "format_logit", "slot")
    if matches < 20:
        return {"matches": matches, "tasks": len(grouped), **{key: Interval(math.nan, level=level) for key in keys}}
    import numpy as np

    # All rows in one array, task after task; a resample of tasks is a selection of row ranges.
    data = np.array([row for rows in grouped.values() for row in rows], dtype=float)
    ends = np.cumsum([len(rows) for rows in grouped.values()])
    starts = ends - np.array([len(rows) for rows in grouped.values()])

    def fit(sample: Sequence[int]) -> dict[str, float]:
        rows = np.concatenate([np.arange(starts[i], ends[i]) for i in sample])
        return _style_fit(data[rows]) if len(rows) >= 2 else dict.fromkeys(keys, math.nan)

    intervals = bootstrap(fit, range(len(grouped)), resamples=resamples, seed=seed, level=level)
    return {"matches": matches, "tasks": len(grouped), **{key: intervals[key] for key in keys}}
