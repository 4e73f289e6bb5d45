"""(b) Elimination rounds: first-round losers against the rest, for knockout-like strategies.

Table 2 of *Knockout LLM Assessment*: does grading a candidate more often agree better with the humans?
"""

from __future__ import annotations

import math
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import numpy as np

from rankkit.data.specs import SpecError
from rankkit.runs.analysis.draws import row_correlations
from rankkit.runs.analysis.labelled import LabelledTask, labelled_tasks, strategy_run
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES, bootstrap
from rankkit.stats.metrics import CORRELATIONS, correlation
from rankkit.strategies.base import CandidateExtras


def elimination_group(extras: CandidateExtras) -> str:
    """``first round`` for a candidate knocked out in round 1, else ``later rounds`` (champion included)."""
    return "first round" if extras.eliminated_round == 1 else "later rounds"


def elimination_rounds(
    results: RunResult,
    name: str,
    method: str = "pearson",
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
) -> dict[str, Any] | None:
    """(b) Correlation of first-round losers vs the rest for a knockout-like strategy; None for others.

    The correlation (``method``) is pooled per group across tasks; intervals resample tasks. A bye
    then a loss is also graded once, so the split by times graded is reported too.

    Returns
    -------
    dict[str, Any] or None
        ``strategy``, ``method``, ``groups`` (label -> {candidates, correlation, mean_played}),
        ``difference`` (later − first), ``by_played`` (once vs several times) and ``rounds``
        (per round, ``champion`` for the winner).
    """
    if method not in CORRELATIONS:
        raise SpecError(f"unknown correlation {method!r} (known: {', '.join(CORRELATIONS)})")
    if not strategy_run(results, name).has_elimination_rounds:
        return None
    tasks = labelled_tasks(results, name)
    by_round = split_correlations(
        tasks, method, elimination_group, ("first round", "later rounds"), resamples, seed, level
    )
    by_played = split_correlations(
        tasks, method, played_group, ("graded once", "graded several times"), resamples, seed, level
    )
    return {
        "strategy": name,
        "method": method,
        "groups": by_round["groups"],
        "difference": by_round["difference"],
        "by_played": by_played,
        "rounds": round_correlations(tasks, method),
    }


def played_group(extras: CandidateExtras) -> str:
    """``graded once`` for a candidate graded in one round only, else ``graded several times``."""
    return "graded once" if extras.played == 1 else "graded several times"


def group_members(tasks: list[LabelledTask], group_of: Callable[[CandidateExtras], str]) -> list[dict[str, list[str]]]:
    """Per task, the labelled candidates of each group (``group_of`` their extras)."""
    per_task = []
    for task in tasks:
        groups: dict[str, list[str]] = defaultdict(list)
        for cid in task.human:
            groups[group_of(task.extras[cid])].append(cid)
        per_task.append(groups)
    return per_task


def group_correlations(
    tasks: list[LabelledTask], method: str, per_task: list[dict[str, list[str]]], group: str, samples: np.ndarray
) -> np.ndarray:
    """The pooled correlation of the group's candidates in each resample (a row of task indices)."""
    scores = [
        np.array([tasks[i].scores[c] for c in groups.get(group, [])], dtype=float) for i, groups in enumerate(per_task)
    ]
    human = [
        np.array([tasks[i].human[c] for c in groups.get(group, [])], dtype=float) for i, groups in enumerate(per_task)
    ]
    xs = [np.concatenate([scores[i] for i in row]) for row in samples]
    ys = [np.concatenate([human[i] for i in row]) for row in samples]
    return row_correlations(method, xs, ys)


def split_correlations(
    tasks: list[LabelledTask],
    method: str,
    group_of: Callable[[CandidateExtras], str],
    split: tuple[str, str],
    resamples: int,
    seed: int,
    level: float,
) -> dict[str, Any]:
    """The pooled correlation of two groups of candidates and its difference (second − first), with
    intervals from one task bootstrap.

    Returns ``groups`` (group -> {candidates, correlation, mean_played}) and ``difference``.
    """
    first, later = split
    per_task = group_members(tasks, group_of)

    def statistic(samples: np.ndarray) -> np.ndarray:
        a = group_correlations(tasks, method, per_task, first, samples)
        b = group_correlations(tasks, method, per_task, later, samples)
        return np.column_stack([a, b, b - a])

    first_ci, later_ci, diff_ci = bootstrap(statistic, tasks, resamples=resamples, seed=seed, level=level, batched=True)
    groups = {}
    for group, interval in ((first, first_ci), (later, later_ci)):
        played = [
            math.nan if (n := tasks[i].extras[c].played) is None else n
            for i in range(len(tasks))
            for c in per_task[i].get(group, [])
        ]
        groups[group] = {
            "candidates": len(played),
            "correlation": interval,
            "mean_played": float(np.mean(played)) if played else math.nan,
        }
    return {"groups": groups, "difference": diff_ci}


def round_correlations(tasks: list[LabelledTask], method: str) -> list[dict[str, Any]]:
    """Per round the correlation of the candidates eliminated in it, the champions last.

    Returns rows of ``eliminated`` (``round n`` or ``champion``), ``candidates`` and ``correlation``.
    """
    rounds: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task in tasks:
        for cid in task.human:
            eliminated = task.extras[cid].eliminated_round
            rounds["champion" if eliminated is None else f"round {eliminated}"].append(
                (task.scores[cid], task.human[cid])
            )
    order = sorted(rounds, key=lambda k: (k == "champion", int(k.split()[1]) if k != "champion" else 0))
    return [
        {
            "eliminated": k,
            "candidates": len(rounds[k]),
            "correlation": correlation(method, [p[0] for p in rounds[k]], [p[1] for p in rounds[k]]),
        }
        for k in order
    ]
