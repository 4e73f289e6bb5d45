"""How fragile a ranking is: the fewest judgments whose flip, or removal, changes its #1 or top k.

Per task and strategy the ranking is recomputed from the judgments the strategy used
(:func:`rankkit.rerank.replay`: a rating strategy refits, a bracket replays its decisions) with
some verdicts flipped (winner reversed) or removed (no answer); for a leaderboard its battles are
refitted. The search is exact while the sets to try fit a budget, else a greedy upper bound (``≤``).
The method and its limits are in ``docs/robustness.md``.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from itertools import combinations
from typing import Any

from rankkit.formatting import Table
from rankkit.rerank import OffRecord, RecordedJudgment, leader, recorded_judgments, replay, verdict_outcome
from rankkit.results import RecordedStrategy, RunResult, StrategyRun, TaskResult
from rankkit.specs import SpecError

#: The top k whose change is measured besides the #1.
DEFAULT_TOP_K = 3
#: The most recomputed rankings one search may try exhaustively before it turns greedy.
DEFAULT_BUDGET = 5000
#: A figure at most this share of the judgments used is flagged fragile (Huang et al., ICLR
#: 2026: 2 of 57,477 Chatbot Arena votes, 0.003%, change its #1).
FRAGILE_SHARE = 0.01
#: The two ways a judgment is changed.
CHANGES = ("flip", "remove")

#: What a recomputation gives: the #1 and every candidate best first; None when it is not defined
#: (the strategy asked for a judgment the run never made).
Outcome = tuple[str, tuple[str, ...]] | None


@dataclass(frozen=True)
class Fewest:
    """The fewest judgments whose change changes a target (the #1 or the top k).

    Attributes
    ----------
    count : int | None
        The fewest found; None when no set tried changes it.
    exact : bool
        True when ``count`` is proven the fewest (every smaller set was tried), or, with ``count``
        None, when every set was tried; False: ``count`` is a greedy upper bound.
    at_least : int
        Every set smaller than this was tried and changed nothing.
    judgments : tuple[int, ...]
        The indices (into the judgments searched) of one smallest set found.
    replays : int
        How many recomputed rankings the search tried.
    """

    count: int | None
    exact: bool
    at_least: int
    judgments: tuple[int, ...]
    replays: int

    def text(self) -> str:
        """The figure as shown in tables.

        Returns
        -------
        str
            ``2`` (exact), ``≤ 5`` (an upper bound), ``none`` (nothing changes it) or ``> 3``
            (nothing found: every set of up to 3 tried, the greedy search found none).
        """
        if self.count is None:
            return "none" if self.exact else f"> {self.at_least - 1}"
        return str(self.count) if self.exact else f"≤ {self.count}"

    def to_dict(self) -> dict[str, Any]:
        """The figure as JSON.

        Returns
        -------
        dict[str, Any]
            The fields, and ``text`` (:meth:`text`).
        """
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

    First a greedy search adds ``greedy_order``'s candidates one by one (skipping one whose
    addition makes the recomputation undefined) until ``changes`` holds, then drops every member
    it can do without: a set of size ``u``, an upper bound. Then every smaller set is tried, size
    by size, while the sets tried stay within ``budget``: a hit there is the exact fewest, and when
    every size below ``u`` was tried without one, ``u`` is. Otherwise ``u`` stays an upper bound.
    When the greedy search finds nothing, every size is tried within the budget.

    Parameters
    ----------
    candidates:
        The indices that may be changed.
    changes:
        Whether changing exactly this set changes the target; None when the recomputation is not
        defined (counted as no change, and left out of the greedy set).
    greedy_order:
        The candidates most likely to change the target first.
    budget:
        The most sets tried exhaustively.

    Returns
    -------
    Fewest
        The figure.

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
    """The candidates ordered by how much they hold ``ahead`` above ``behind``: their direct
    results first, then ``ahead``'s wins and ``behind``'s losses (against the strongest
    opponents first), then every other candidate.

    Parameters
    ----------
    pairs:
        Per judgment (a, b, outcome for a): 1 a won, 0.5 a tie, 0 b won; None when it decided nothing.
    ahead:
        The candidate to be moved below ``behind``.
    behind:
        The candidate to be moved above ``ahead``.
    order:
        The current ranking, best first.
    candidates:
        The indices to order.

    Returns
    -------
    list[int]
        ``candidates``, most supporting first.
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
    recompute: Callable[[frozenset[int], frozenset[int]], Outcome],
    baseline: tuple[str, Sequence[str]],
    used: int,
    k: int = DEFAULT_TOP_K,
    budget: int = DEFAULT_BUDGET,
) -> dict[str, Any]:
    """The four figures of one ranking: the fewest flips and removals changing its #1 and its top k.

    Parameters
    ----------
    pairs:
        Per judgment that may be changed (a, b, outcome for a), as in :func:`support_order`; the
        flips are searched among the decided non-ties, the removals among the decided ones.
    recompute:
        ``recompute(flips, removals)``: the #1 and the ranking with those judgments changed, or
        None when that is not defined.
    baseline:
        The #1 and the ranking with nothing changed.
    used:
        The judgments the ranking used (the denominator of the fragile flag).
    k:
        The top k measured (not measured when there are at most k candidates).
    budget:
        Each search's budget (:func:`fewest_changes`).

    Returns
    -------
    dict[str, Any]
        ``judgments`` (used), ``k``, ``top1`` and ``top_k`` (each ``{flip: Fewest, remove: Fewest}``;
        ``top_k`` None when not measured) and ``fragile``: the figures at most
        :data:`FRAGILE_SHARE` of ``used`` (e.g. ``["top1 flip"]``).
    """
    first, order = baseline[0], list(baseline[1])
    top = frozenset(order[:k])
    seen: dict[tuple[frozenset[int], frozenset[int]], Outcome] = {}

    def outcome(flips: frozenset[int], removals: frozenset[int]) -> Outcome:
        key = (flips, removals)
        if key not in seen:
            seen[key] = recompute(flips, removals)
        return seen[key]

    def test(change: str, target: str) -> Callable[[frozenset[int]], bool | None]:
        def changes(subset: frozenset[int]) -> bool | None:
            got = outcome(subset, frozenset()) if change == "flip" else outcome(frozenset(), subset)
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


# -------------------------------------------------------------------------------------------
# Per task and strategy


def task_robustness(
    strategy_run: StrategyRun,
    result: TaskResult,
    task: Any,
    seed: int,
    k: int = DEFAULT_TOP_K,
    budget: int = DEFAULT_BUDGET,
) -> dict[str, Any]:
    """The robustness of one strategy's ranking of one task (:func:`ranking_robustness`), from
    the judgments it used, replayed by :func:`rankkit.rerank.replay`.

    Parameters
    ----------
    strategy_run:
        The strategy's run (its strategy is rebuilt from the results file).
    result:
        Its result on the task.
    task:
        The task (:class:`~rankkit.tasks.Task`).
    seed:
        The run's seed (the strategy's generator is ``task_rng(seed, task_id)``).
    k:
        The top k measured, as in :func:`ranking_robustness`.
    budget:
        Each search's budget (:func:`fewest_changes`).

    Returns
    -------
    dict[str, Any]
        ``task_id``, ``strategy``, ``defined`` and either the figures of :func:`ranking_robustness`
        or ``reason``: why they are not defined (a strategy that grades answers alone or judges
        groups has no verdict to reverse; one this rankkit cannot rebuild cannot be replayed).
    """
    head = {"task_id": result.task_id, "strategy": strategy_run.name}
    record = recorded_judgments(result)
    verdicts = [i for i, item in enumerate(record) if item.kind == "verdict"]
    reason = _undefined_reason(strategy_run, record, verdicts)
    if reason is None:
        strategy, ids = strategy_run.strategy, task.candidate_ids

        def recompute(flips: frozenset[int], removals: frozenset[int]) -> Outcome:
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
    """Every strategy's robustness on every task of a results file (:func:`task_robustness`),
    with a summary per strategy.

    Parameters
    ----------
    results:
        The run (a ``rankkit compare --out`` file read back).
    k:
        The top k measured besides the #1 (>= 1).
    budget:
        Each search's budget of recomputed rankings (:func:`fewest_changes`).

    Returns
    -------
    list[dict[str, Any]]
        Per strategy: ``strategy``, ``tasks`` (the per-task figures) and ``summary``: tasks with
        figures, the median of each figure over them (``none`` counted as the judgments used + 1),
        the share of exact figures and the fragile tasks.
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

    Parameters
    ----------
    tasks:
        The per-task figures (:func:`task_robustness`).

    Returns
    -------
    dict[str, Any]
        ``tasks`` (with figures), ``undefined`` and their ``reasons``, ``fragile_tasks``,
        ``exact_share`` and the median of each figure (``top1_flip_median``, ...; a ``none``
        counts as one more than the judgments used).
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
    """The robustness report as tables.

    Parameters
    ----------
    report:
        :func:`robustness_report`'s result.

    Returns
    -------
    list[Table]
        A summary per strategy and the figures per task (none for an empty report).
    """
    if not report:
        return []
    k = report[0]["k"]
    summary_rows, task_rows, undefined = [], [], []
    for item in report:
        summary = item["summary"]
        if not summary["tasks"]:  # defined on no task: a reason, not a row of dashes
            undefined.append(f"{item['strategy']} ({'; '.join(summary['reasons'])})")
            continue
        summary_rows.append(
            {
                "strategy": item["strategy"],
                "tasks": summary["tasks"],
                **{key: summary[key] for key in summary if key.endswith("_median")},
                "exact": summary["exact_share"],
                "fragile": len(summary["fragile_tasks"]),
                "note": "; ".join(summary["reasons"]),
            }
        )
        for task in item["tasks"]:
            row = {"strategy": item["strategy"], "task_id": task["task_id"], "judgments": task["judgments"]}
            if task["defined"]:
                for target in ("top1", "top_k"):
                    for change in CHANGES:
                        row[f"{target}_{change}"] = task[target][change].text() if task[target] else "-"
                row["fragile"] = ", ".join(task["fragile"])
            else:
                row["fragile"] = f"n/a: {task['reason']}"
            task_rows.append(row)
    figure_columns = [
        ("top1_flip", "#1 flip"),
        ("top1_remove", "#1 remove"),
        ("top_k_flip", f"top-{k} flip"),
        ("top_k_remove", f"top-{k} remove"),
    ]
    left_out = f"\nnot defined, so left out: {', '.join(undefined)}" if undefined else ""
    summary_columns = [
        ("strategy", "strategy"),
        ("tasks", "tasks"),
        *[(f"{key}_median", header) for key, header in figure_columns],
        ("exact", "exact"),
        ("fragile", "fragile"),
    ]
    if any(row["note"] for row in summary_rows):
        summary_columns.append(("note", "not defined"))
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
