"""How fragile a ranking is: the fewest judgments whose flip, or removal, changes its #1 or top k.

Rankings are recomputed with :func:`rankkit.runs.rerank.replay`; the search is exact within a budget,
else a greedy upper bound (``≤``). Method and limits in ``docs/robustness.md``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from rankkit.data.formatting import Table
from rankkit.data.specs import SpecError
from rankkit.runs.recorded_run import RecordedStrategy
from rankkit.runs.rerank import OffRecord, RecordedJudgment, leader, recorded_judgments, replay, verdict_outcome
from rankkit.runs.results import RunResult, StrategyRun, TaskResult

#: The top k whose change is measured besides the #1.
DEFAULT_TOP_K = 3
#: The most recomputed rankings one search may try exhaustively before it turns greedy.
DEFAULT_BUDGET = 5000
#: A figure at most this share of the judgments used is flagged fragile.
FRAGILE_SHARE = 0.01
#: The two ways a judgment is changed.
CHANGES = ("flip", "remove")

#: The #1 and every candidate best first; None when undefined (a judgment the run never made).
RecomputedRanking = tuple[str, tuple[str, ...]] | None


@dataclass(frozen=True)
class Fewest:
    """The fewest judgments whose change changes a target (the #1 or the top k).

    Attributes
    ----------
    count
        The fewest found; None when no set tried changes it.
    exact
        True when ``count`` is proven the fewest (or, with ``count`` None, every set was tried);
        False: ``count`` is a greedy upper bound.
    at_least
        Every set smaller than this was tried and changed nothing.
    judgments
        The indices (into the judgments searched) of one smallest set found.
    replays
        How many recomputed rankings the search tried.
    """

    count: int | None
    exact: bool
    at_least: int
    judgments: tuple[int, ...]
    replays: int

    def text(self) -> str:
        """The figure in tables: ``2`` (exact), ``≤ 5`` (bound), ``none``, or ``> 3`` (none found up to 3)."""
        if self.count is None:
            return "none" if self.exact else f"> {self.at_least - 1}"
        return str(self.count) if self.exact else f"≤ {self.count}"

    def to_dict(self) -> dict[str, Any]:
        """The fields and ``text`` as JSON."""
        return {
            "count": self.count,
            "exact": self.exact,
            "at_least": self.at_least,
            "judgments": list(self.judgments),
            "replays": self.replays,
            "text": self.text(),
        }


def fewest_changes(
    candidates: Sequence[int],
    changes: Callable[[frozenset[int]], bool | None],
    greedy_order: Sequence[int],
    budget: int = DEFAULT_BUDGET,
) -> Fewest:
    """The smallest set of ``candidates`` for which ``changes(set)`` holds.

    A greedy search over ``greedy_order`` gives an upper bound, pruned to needed members; smaller
    sets are then tried size by size within ``budget`` sets, which makes it exact when completed.
    ``changes`` returns None when the recomputation is undefined (counted as no change).

    Examples
    --------
    >>> fewest_changes(range(6), lambda s: len(s & {1, 4}) == 2, greedy_order=[4, 0, 1]).text()
    '2'
    >>> fewest_changes(range(30), lambda s: {1, 4, 7} <= s, greedy_order=[7, 4, 1], budget=100).text()
    '≤ 3'
    """
    pool = list(candidates)
    tried = 0
    chosen: list[int] = []
    hit = False
    for index in greedy_order:
        chosen.append(index)
        tried += 1
        changed = changes(frozenset(chosen))
        if changed:
            hit = True
            break
        if changed is None:
            chosen.pop()
    if hit:
        for index in list(chosen[:-1]):  # the last one was needed: without it nothing changed
            smaller = [i for i in chosen if i != index]
            tried += 1
            if changes(frozenset(smaller)):
                chosen = smaller
    bound = len(chosen) if hit else len(pool) + 1
    searched = 0
    at_least = 1
    for size in range(1, bound):
        if searched + math.comb(len(pool), size) > budget:
            break
        for subset in combinations(pool, size):
            searched += 1
            if changes(frozenset(subset)):
                return Fewest(size, True, size, tuple(subset), tried + searched)
        at_least = size + 1
    if hit:
        return Fewest(len(chosen), at_least >= len(chosen), at_least, tuple(chosen), tried + searched)
    return Fewest(None, at_least > len(pool), at_least, (), tried + searched)


def support_order(
    pairs: Sequence[tuple[str, str, float | None]],
    ahead: str,
    behind: str,
    order: Sequence[str],
    candidates: Sequence[int],
) -> list[int]:
    """``candidates`` ordered by how much they hold ``ahead`` above ``behind``, most supporting first.

    Direct results first, then ``ahead``'s wins and ``behind``'s losses (strongest opponents first),
    then the rest. ``pairs`` holds per judgment (a, b, outcome for a: 1, 0.5, 0, or None undecided).
    """
    place = {cid: i for i, cid in enumerate(order)}

    def key(index: int) -> tuple[int, int, int]:
        a, b, outcome = pairs[index]
        if outcome is None or outcome == 0.5:
            return 3, 0, index
        winner, loser = (a, b) if outcome == 1.0 else (b, a)
        if {winner, loser} == {ahead, behind}:
            return (0 if winner == ahead else 2), 0, index
        if winner == ahead:
            return 1, place.get(loser, 0), index
        if loser == behind:
            return 1, place.get(winner, 0), index
        return 2, 0, index

    return sorted(candidates, key=key)


def ranking_robustness(
    pairs: Sequence[tuple[str, str, float | None]],
    recompute: Callable[[frozenset[int], frozenset[int]], RecomputedRanking],
    baseline: tuple[str, Sequence[str]],
    used: int,
    k: int = DEFAULT_TOP_K,
    budget: int = DEFAULT_BUDGET,
) -> dict[str, Any]:
    """The four figures of one ranking: the fewest flips and removals changing its #1 and its top k.

    Parameters
    ----------
    pairs
        Per judgment (a, b, outcome for a) as in :func:`support_order`; flips are searched among
        decided non-ties, removals among decided ones.
    recompute
        ``recompute(flips, removals)``: the #1 and ranking with those changed, or None if undefined.
    used
        The judgments the ranking used (the fragile flag's denominator).
    k
        Not measured with at most k candidates.

    Returns
    -------
    dict[str, Any]
        ``judgments``, ``k``, ``top1`` and ``top_k`` (each ``{flip: Fewest, remove: Fewest}``;
        ``top_k`` may be None) and ``fragile``: figures at most :data:`FRAGILE_SHARE` of ``used``.
    """
    first, order = baseline[0], list(baseline[1])
    top = frozenset(order[:k])
    seen: dict[tuple[frozenset[int], frozenset[int]], RecomputedRanking] = {}

    def ranking(flips: frozenset[int], removals: frozenset[int]) -> RecomputedRanking:
        key = (flips, removals)
        if key not in seen:
            seen[key] = recompute(flips, removals)
        return seen[key]

    def test(change: str, target: str) -> Callable[[frozenset[int]], bool | None]:
        def changes(subset: frozenset[int]) -> bool | None:
            got = ranking(subset, frozenset()) if change == "flip" else ranking(frozenset(), subset)
            if got is None:
                return None
            return got[0] != first if target == "top1" else frozenset(got[1][:k]) != top

        return changes

    candidates = {
        "flip": [i for i, p in enumerate(pairs) if p[2] in (0.0, 1.0)],
        "remove": [i for i, p in enumerate(pairs) if p[2] is not None],
    }
    runner_up = next((cid for cid in order if cid != first), first)
    targets = {"top1": (first, runner_up)}
    if len(order) > k:
        targets["top_k"] = (order[k - 1], order[k])
    figures: dict[str, Any] = {"judgments": used, "k": k, "top1": None, "top_k": None}
    fragile = []
    for target, (ahead, behind) in targets.items():
        figures[target] = {}
        for change in CHANGES:
            greedy = support_order(pairs, ahead, behind, order, candidates[change])
            found = fewest_changes(candidates[change], test(change, target), greedy, budget)
            figures[target][change] = found
            if found.count is not None and used and found.count <= FRAGILE_SHARE * used:
                fragile.append(f"{target} {change}")
    figures["fragile"] = fragile
    return figures


# Per task and strategy


def task_robustness(
    strategy_run: StrategyRun,
    result: TaskResult,
    task: Any,
    seed: int,
    k: int = DEFAULT_TOP_K,
    budget: int = DEFAULT_BUDGET,
) -> dict[str, Any]:
    """One strategy's robustness on one task, from the judgments it used, replayed.

    Returns ``task_id``, ``strategy``, ``defined`` and either the :func:`ranking_robustness`
    figures or ``reason`` (grading or k-way strategies have no verdict to reverse; unknown ones
    cannot be rebuilt). The strategy's generator is ``task_rng(seed, task_id)``.
    """
    head = {"task_id": result.task_id, "strategy": strategy_run.name}
    record = recorded_judgments(result)
    verdicts = [i for i, item in enumerate(record) if item.kind == "verdict"]
    reason = _undefined_reason(strategy_run, record, verdicts)
    if reason is None:
        strategy, ids = strategy_run.strategy, task.candidate_ids

        def recompute(flips: frozenset[int], removals: frozenset[int]) -> RecomputedRanking:
            try:
                ranking = replay(
                    strategy, task, record, seed, {verdicts[i] for i in flips}, {verdicts[i] for i in removals}
                )
            except OffRecord:
                return None
            return leader(ranking, ids), tuple(ranking.ordered(list(ids)))

        base = recompute(frozenset(), frozenset())
        expected = (result.champion if result.champion is not None else result.ranking[0], tuple(result.ranking))
        if base != expected:
            reason = "replaying the recorded judgments does not reproduce the ranking"
    if reason is not None:
        return {**head, "defined": False, "reason": reason, "judgments": len(record)}
    pairs = [(record[i].shown[0], record[i].shown[1], verdict_outcome(record[i])) for i in verdicts]
    figures = ranking_robustness(pairs, recompute, expected, used=len(record), k=k, budget=budget)
    return {**head, "defined": True, **figures}


def _undefined_reason(
    strategy_run: StrategyRun, record: Sequence[RecordedJudgment], verdicts: Sequence[int]
) -> str | None:
    if isinstance(strategy_run.strategy, RecordedStrategy):
        return "the strategy cannot be rebuilt here, so its ranking cannot be recomputed"
    if not verdicts:
        if any(item.kind == "grade" for item in record):
            return "grades judge one answer alone: no winner to reverse"
        if record:
            return "k-way judgments have no single winner to reverse"
        return "no judgments"
    return None


def robustness_report(results: RunResult, k: int = DEFAULT_TOP_K, budget: int = DEFAULT_BUDGET) -> list[dict[str, Any]]:
    """Every strategy's robustness on every task of a results file, with a summary per strategy.

    ``k`` (>= 1) is the top k measured besides the #1; ``budget`` each search's budget.
    Returns per strategy ``strategy``, ``tasks`` and ``summary`` (:func:`summarize`).
    """
    if k < 1:
        raise SpecError(f"robustness: k must be >= 1, got {k}")
    if budget < 0:
        raise SpecError(f"robustness: budget must be >= 0, got {budget}")
    by_id = {task.task_id: task for task in results.tasks}
    out = []
    for strategy_run in results.strategies:
        tasks = [
            task_robustness(strategy_run, result, by_id[result.task_id], results.seed, k, budget)
            for result in strategy_run.tasks
            if result.task_id in by_id
        ]
        out.append({"strategy": strategy_run.name, "k": k, "summary": summarize(tasks), "tasks": tasks})
    return out


def summarize(tasks: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """One strategy's per-task figures summarised.

    ``tasks``, ``undefined`` and ``reasons``, ``fragile_tasks``, ``exact_share`` and each figure's
    median (``top1_flip_median``, ...; ``none`` counts as the judgments used + 1).
    """
    defined = [t for t in tasks if t["defined"]]
    summary: dict[str, Any] = {
        "tasks": len(defined),
        "undefined": len(tasks) - len(defined),
        "reasons": sorted({t["reason"] for t in tasks if not t["defined"]}),
        "fragile_tasks": [t["task_id"] for t in defined if t["fragile"]],
    }
    figures = [f for t in defined for target in ("top1", "top_k") if t[target] for f in t[target].values()]
    summary["exact_share"] = sum(f.exact for f in figures) / len(figures) if figures else None
    for target in ("top1", "top_k"):
        for change in CHANGES:
            values = [
                (t[target][change].count if t[target][change].count is not None else t["judgments"] + 1)
                for t in defined
                if t[target]
            ]
            summary[f"{target}_{change}_median"] = statistics.median(values) if values else None
    return summary


def robustness_tables(report: Sequence[Mapping[str, Any]]) -> list[Table]:
    """A summary table per strategy and the figures per task (none for an empty report)."""
    if not report:
        return []
    k = report[0]["k"]
    defined = [item for item in report if item["summary"]["tasks"]]
    undefined = [  # defined on no task: a reason, not a row of dashes
        f"{item['strategy']} ({'; '.join(item['summary']['reasons'])})"
        for item in report
        if not item["summary"]["tasks"]
    ]
    summary_rows = [robustness_summary_row(item["strategy"], item["summary"]) for item in defined]
    task_rows = [robustness_task_row(item["strategy"], task) for item in defined for task in item["tasks"]]
    figure_columns = robustness_figure_columns(k)
    left_out = f"\nnot defined, so left out: {', '.join(undefined)}" if undefined else ""
    summary_columns = [
        ("strategy", "strategy"),
        ("tasks", "tasks"),
        *[(f"{key}_median", header) for key, header in figure_columns],
        ("exact", "exact"),
        ("fragile", "fragile"),
        *([("note", "not defined")] if any(row["note"] for row in summary_rows) else []),
    ]
    return [
        Table(
            "robustness",
            summary_rows,
            summary_columns,
            f"fewest judgments whose flip (winner reversed) or removal changes the #1 or the top {k}\n"
            f"median over tasks ('none' counted as judgments + 1); exact = share of exact figures\n"
            f"fragile = tasks with a figure <= {FRAGILE_SHARE:.0%} of the judgments{left_out}",
        ),
        Table(
            "robustness per task",
            task_rows,
            [
                ("strategy", "strategy"),
                ("task_id", "task"),
                ("judgments", "judgments"),
                *figure_columns,
                ("fragile", "fragile"),
            ],
            "replayed from the judgments each strategy used; n = the exact fewest; '≤ n' = a greedy upper bound\n"
            "'none' = no change of that kind changes it\n"
            "'> n' = no set of up to n judgments changes it, and the search budget ran out before larger sets",
        ),
    ]


def robustness_summary_row(strategy: str, summary: Mapping[str, Any]) -> dict[str, Any]:
    """A strategy's row of the robustness summary: its tasks, the medians, the share of exact figures,
    its fragile tasks and why some tasks are not defined."""
    return {
        "strategy": strategy,
        "tasks": summary["tasks"],
        **{key: summary[key] for key in summary if key.endswith("_median")},
        "exact": summary["exact_share"],
        "fragile": len(summary["fragile_tasks"]),
        "note": "; ".join(summary["reasons"]),
    }


def robustness_task_row(strategy: str, task: Mapping[str, Any]) -> dict[str, Any]:
    """One task's row of the per-task robustness table: each figure as text and which are fragile,
    or why the figures are not defined."""
    row = {"strategy": strategy, "task_id": task["task_id"], "judgments": task["judgments"]}
    if not task["defined"]:
        return {**row, "fragile": f"n/a: {task['reason']}"}
    for target in ("top1", "top_k"):
        for change in CHANGES:
            row[f"{target}_{change}"] = task[target][change].text() if task[target] else "-"
    row["fragile"] = ", ".join(task["fragile"])
    return row


def robustness_figure_columns(k: int) -> list[tuple[str, str]]:
    """The four figures' columns (key, header): the #1 and the top ``k``, each by flips and by removals."""
    return [
        ("top1_flip", "#1 flip"),
        ("top1_remove", "#1 remove"),
        ("top_k_flip", f"top-{k} flip"),
        ("top_k_remove", f"top-{k} remove"),
    ]
