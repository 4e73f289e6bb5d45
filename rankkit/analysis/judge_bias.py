"""The judge's position and length biases over the comparisons of a run, with exact binomial intervals.

The report's bias views: how often the candidate shown first won, whether a pair judged in both
orders got the same winner, and how often the longer answer won — each next to the rate a judge
agreeing with the humans would show.
"""

from __future__ import annotations

from typing import Any

from rankkit.analysis.labelled import human_scores
from rankkit.judges.base import Winner
from rankkit.matches import Comparison
from rankkit.results import RunResult
from rankkit.stats import DEFAULT_LEVEL, proportion_interval
from rankkit.tasks import longer_candidate


def distinct_comparisons(results: RunResult, name: str | None = None) -> list[tuple[str, Comparison]]:
    """The comparisons of strategy ``name``, or of all strategies with each judgment counted once, as
    (task id, comparison) pairs.

    Strategies of one run share one match graph, so the same (task, first, second) is the same
    judgment whichever strategy used it.
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
    """The candidate that won a decided comparison; None for a tie."""
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
    labelled = [(task_id, c) for task_id, c in decided
                if task_id in human and human[task_id][c.first] != human[task_id][c.second]]
    human_first = sum(human[task_id][c.first] > human[task_id][c.second] for task_id, c in labelled)
    return {"matches": len(comparisons), "ties": len(comparisons) - len(decided),
            "first_slot_win_rate": proportion_interval(first_wins, len(decided), level),
            "order_consistency": proportion_interval(consistent, both, level),
            "human_first_better": proportion_interval(human_first, len(labelled), level)}


def length_bias(results: RunResult, name: str | None = None, level: float = DEFAULT_LEVEL) -> dict[str, Any]:
    """How often the longer answer won, against how often humans prefer it.

    Length is :attr:`rankkit.tasks.Candidate.length` (characters), as in the judge report.

    ``matches``: how many decided comparisons there are between answers of different length;
    ``longer_win_rate``: the share of them won by the longer one. ``human_longer_better``: among
    the same comparisons with different human scores, the share where the longer one is the
    human-better one. A judge whose rate is well above the humans' prefers length for its own sake.
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
    return {"matches": decided, "longer_win_rate": proportion_interval(longer_won, decided, level),
            "human_longer_better": proportion_interval(human_longer, labelled, level)}
