"""The judge's position and length biases over the comparisons of a run, with exact binomial intervals.

The report's bias views: how often the candidate shown first won, whether a pair judged in both
orders got the same winner, and how often the longer answer won — each next to the rate a judge
agreeing with the humans would show. For k-way judgments (setwise and listwise strategies),
:func:`slot_bias` gives how often the answer in each of the k slots was chosen, next to the
uniform rate 1/k and the human rate. :func:`style_preference` regresses the verdicts on the human
scores and the answers' style differences: the judge's preference for length and formatting beyond
what the humans' scores explain, in human-score spreads, with bootstrap intervals over tasks.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from rankkit.analysis.labelled import human_scores
from rankkit.choices import GroupComparison
from rankkit.judgments import ParseStatus, Winner
from rankkit.matches import Comparison
from rankkit.results import RunResult
from rankkit.stats import DEFAULT_LEVEL, Interval, bootstrap, proportion_interval
from rankkit.tasks import longer_candidate


def distinct_comparisons(results: RunResult, name: str | None = None) -> list[tuple[str, Comparison]]:
    """The comparisons of strategy ``name``, or of all strategies with each judgment counted once, as
    (task id, comparison) pairs.

    Strategies of one run share one match graph, so the same (task, first, second) is the same
    judgment whichever strategy used it.

    Parameters
    ----------
    results : RunResult
        The run.
    name : str or None
        A strategy label (None: all strategies).

    Returns
    -------
    list[tuple[str, Comparison]]
        ``(task id, comparison)`` pairs.
    """
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
    """The candidate that won a decided comparison; None for a tie.

    Parameters
    ----------
    comparison : Comparison
        A decided comparison.

    Returns
    -------
    str or None
        The winner's id.
    """
    if comparison.verdict.winner is Winner.TIE:
        return None
    return comparison.first if comparison.verdict.winner is Winner.FIRST else comparison.second


def position_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """How often the judge picked the candidate shown first.

    ``matches``: how many distinct comparisons there are (the key the report and the analysis tables read);
    ``ties``: how many of them were ties.
    ``first_slot_win_rate``: share of decided comparisons (not ties) won by the first-shown candidate,
    with an exact binomial interval; 0.5 is an unbiased judge when orders are random.
    ``order_consistency``: among pairs judged in both orders, the share where the same candidate
    won both times (1.0 = never swayed by order).
    ``human_first_better``: share of decided comparisons whose first-shown candidate has the higher
    human score — the rate an unbiased, human-agreeing judge would show.

    Parameters
    ----------
    results : RunResult
        The run.
    name : str or None
        A strategy label (None: all strategies, each judgment once).
    level : float
        The intervals' coverage.

    Returns
    -------
    dict[str, Any]
        The keys above.
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
    """How often the longer answer won, against how often humans prefer it.

    Length is :attr:`rankkit.tasks.Candidate.length` (characters), as in the judge report.

    ``matches``: how many decided comparisons there are between answers of different length;
    ``longer_win_rate``: the share of them won by the longer one. ``human_longer_better``: among
    the same comparisons with different human scores, the share where the longer one is the
    human-better one. A judge whose rate is well above the humans' prefers length for its own sake.

    Parameters
    ----------
    results : RunResult
        The run.
    name : str or None
        A strategy label (None: all strategies, each judgment once).
    level : float
        The intervals' coverage.

    Returns
    -------
    dict[str, Any]
        The keys above.
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


# ---------------------------------------------------------------------------------------------
# Slot bias of k-way judgments (setwise and listwise strategies)


def distinct_group_comparisons(results: RunResult, name: str | None = None) -> list[tuple[str, GroupComparison]]:
    """The k-way judgments of strategy ``name``, or of all strategies with each judgment counted
    once, as (task id, :class:`~rankkit.choices.GroupComparison`) pairs.

    As for :func:`distinct_comparisons`: the memo shares a judgment exactly when the same group is
    shown in the same order and asked the same question (choice or ranking), so (task, kind,
    group in slot order) is one judgment whichever strategy or round used it.

    Parameters
    ----------
    results : RunResult
        The run.
    name : str or None
        A strategy label (None: all strategies).

    Returns
    -------
    list[tuple[str, GroupComparison]]
        ``(task id, judgment)`` pairs.
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
    """The slot the judge put first: the chosen slot of a choice, the first of a ranking; None
    when the judgment failed to parse.

    Parameters
    ----------
    group : GroupComparison
        A k-way judgment.

    Returns
    -------
    int or None
        The slot (0 = shown first).

    Examples
    --------
    >>> from rankkit.judgments import GroupChoice, GroupRanking
    >>> top_slot(GroupComparison(("a", "b", "c"), GroupChoice(chosen=2)))
    2
    >>> top_slot(GroupComparison(("a", "b", "c"), GroupRanking(permutation=(1, 0, 2))))
    1
    """
    if group.judgment.status is ParseStatus.FAILED or not group.ranking:
        return None
    return group.shown.index(group.ranking[0])


def human_best_shares(shown: Sequence[str], human: Mapping[str, float]) -> tuple[float, ...]:
    """Each slot's share of the human-best answer (highest human score) of a group in slot order:
    1 for its slot, or split evenly among the slots of tied best answers.

    Parameters
    ----------
    shown : Sequence[str]
        The candidate ids in slot order.
    human : Mapping[str, float]
        Their human scores.

    Returns
    -------
    tuple[float, ...]
        One share per slot, summing to 1.

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
    """One row per slot of the parsed k-way judgments of one group size k.

    Parameters
    ----------
    top_slots : Sequence[int]
        The slot each parsed judgment put first (:func:`top_slot`).
    human_shares : Sequence[Sequence[float]]
        :func:`human_best_shares` of each parsed judgment on a task with human scores.
    k : int
        The group size.
    level : float
        The confidence level of the binomial intervals.

    Returns
    -------
    list[dict[str, Any]]
        Per slot (0 = shown first): ``slot``; ``chosen``, how many judgments put it first; ``rate``,
        ``chosen`` over all judgments with its exact binomial interval; ``uniform``, 1/k (a judge
        blind to the answers and to their order); ``human``, the share of labelled judgments whose
        human-best answer sits in this slot (what a judge agreeing with the humans would show; NaN
        without labelled judgments).

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

    The k-way analogue of :func:`position_bias`, over the distinct k-way judgments
    (:func:`distinct_group_comparisons`): a choice counts for the slot chosen, a ranking for the
    slot it ranked first. An unbiased judge shown answers in random order chooses each slot at
    the human rate, and, blind to quality, at the uniform rate 1/k.

    Parameters
    ----------
    results : RunResult
        A run's results.
    name : str | None
        One strategy's judgments; None: all strategies', each judgment once.
    level : float
        The confidence level of the exact binomial intervals.

    Returns
    -------
    list[dict[str, Any]]
        One entry per group size present, smallest first: ``k``; ``judgments``, the parsed judgments
        (the denominator of every rate); ``failed``, the judgments that failed to parse (left out);
        ``labelled``, the parsed judgments on tasks with human scores (the denominator of the human
        rate); ``slots``, :func:`slot_rates`. Empty when the results hold no k-way judgments
        (pairwise and pointwise strategies).
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


# ---------------------------------------------------------------------------------------------
# Style preference beyond the human scores (a logistic regression of the verdict)

#: The covariates of :func:`style_preference`, after the human-score difference.
STYLE_TERMS = ("length", "format")


def style_rows(results: RunResult, name: str | None = None) -> dict[str, list[tuple[float, float, float, float]]]:
    """The decided pairwise comparisons on labelled tasks as regression rows, grouped by task.

    Each row is ``(first won: 1 or 0, human difference / the task's spread, log2 of the length ratio,
    format-score difference)``, all first minus second, lengths and formatting from
    :func:`rankkit.tasks.style_features` (characters; log2(1 + headers + list items + bold)).
    Ties and tasks without human scores are left out.

    Parameters
    ----------
    results : RunResult
        The run.
    name : str or None
        A strategy label (None: all strategies, each judgment once).

    Returns
    -------
    dict[str, list[tuple[float, float, float, float]]]
        Task id to its rows.
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

    from rankkit.stats import logistic_regression

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

    A logistic regression of the pairwise verdict (first shown won) on an intercept, the human-score
    difference in units of the task's spread, the log2 length ratio and the format-score difference
    (:func:`style_rows`). Dividing a style coefficient by the human-score coefficient puts it in
    human-score spreads: ``length`` is how many spreads of human quality one doubling of the length
    (relative to the other answer) is worth to the judge, ``format`` the same per doubling of 1 +
    the formatting elements, and ``slot_sd`` the first slot's worth — the units of the simulator's
    ``length_bias``, ``format_bias`` and ``slot_bias``, so a planted bias is recovered as itself.
    0 means no preference beyond the humans'. Intervals: percentile bootstrap over tasks (the
    comparisons of one task share answers).

    Parameters
    ----------
    results : RunResult
        A run's results (pairwise comparisons on tasks with human scores).
    name : str | None
        One strategy's comparisons; None: all strategies', each judgment once.
    resamples
        The bootstrap over tasks: its resamples.
    seed
        The bootstrap's seed.
    level
        The intervals' confidence level.

    Returns
    -------
    dict[str, Any]
        ``matches`` and ``tasks`` used, then :class:`~rankkit.stats.Interval` s: ``length``,
        ``format``, ``slot_sd`` (spreads), ``human`` (log-odds per spread), ``length_logit``,
        ``format_logit`` and ``slot`` (raw log-odds); all NaN with fewer than 20 comparisons or when
        the judge's verdicts do not follow the human scores (coefficient ≤ 0), and a style term NaN
        when no compared answers differ in it (plain-text answers have no formatting).
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
