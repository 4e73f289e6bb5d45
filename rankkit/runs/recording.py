"""Recording judgments for replay: a grid of judgments, or a run's results, as rows replay reads.

The format is described in :mod:`rankkit.judges.simulated.replay` (``replay:FILE``).

This is the writer side of replay. It sits above what it records (the match layer, the memo and
a run's :class:`~rankkit.runs.results.RunResult`), so the replay judge itself only reads files.
``rankkit record`` wraps it.

Example
-------
>>> from rankkit.judgments.values import ParseStatus, Verdict, Winner
>>> from rankkit.data.tasks import Candidate, Task
>>> task = Task("t", "2+2?", (Candidate("a", "4"), Candidate("b", "5")))
>>> judgment_row(task, "b", "a", Verdict(3.0, 8.0, Winner.SECOND), "my-judge", "grid")["winner"]
'a'
>>> judgment_row(task, "a", "b", Verdict(0.0, 0.0, Winner.TIE, status=ParseStatus.FAILED), "j", "m")["winner"] is None
True
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections.abc import Iterable, Mapping, Sequence
from itertools import permutations
from pathlib import Path
from typing import Any

from rankkit.data.tasks import Task
from rankkit.judges.base import Judge
from rankkit.judges.simulated.replay import TIE
from rankkit.judgments.cache import JudgmentCache, NullCache
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import CHOICE_KIND, ParseStatus, Verdict, Winner
from rankkit.runs.results import RunResult
from rankkit.runs.shards import Shard, ShardPart, run_fingerprint
from rankkit.strategies.choices import GroupComparison
from rankkit.strategies.matches import Cost, MatchSource


def recorded_winner(verdict: Verdict, first: str, second: str) -> str | None:
    """The winner as a recording names it: a candidate id, ``"tie"``, or None when the judge's
    output could not be parsed (so that replaying it is a counted miss, not a made-up verdict).

    Parameters
    ----------
    verdict:
        The judgment on ``first`` and ``second`` as shown.
    first, second:
        The ids of the candidates shown first and second.
    """
    if verdict.status is ParseStatus.FAILED:
        return None
    if verdict.winner is Winner.TIE:
        return TIE
    return first if verdict.winner is Winner.FIRST else second


def judgment_row(
    task: Task, first: str, second: str, judgment: Verdict, judge_label: str, method: str
) -> dict[str, Any]:
    """One judged comparison as a recording row (``swap`` = shown against the task's order).

    Returns the row (:func:`recorded_winner` names its winner).

    Parameters
    ----------
    task:
        The task judged.
    first, second:
        The ids of the candidates shown first and second.
    judgment:
        The judge's verdict on them.
    judge_label, method:
        The row's ``judge`` and ``method`` labels (what ``replay:FILE,judge=...,method=...`` filter on).
    """
    order = task.candidate_ids
    return {
        "task_id": task.task_id,
        "judge": judge_label,
        "method": method,
        "swap": order.index(first) > order.index(second),
        "a": first,
        "b": second,
        "winner": recorded_winner(judgment, first, second),
        "score_a": judgment.first_grade,
        "score_b": judgment.second_grade,
        **({} if judgment.probability is None else {"probability": judgment.probability}),  # P(a, shown first, wins)
    }


def record_grid(
    tasks: Sequence[Task],
    judge: Judge,
    cache: JudgmentCache | NullCache | None,
    judge_label: str,
    method: str,
    progress: bool = False,
    shard: Shard | None = None,
) -> tuple[list[dict[str, Any]], Cost]:
    """Judge every ordered pair of every task (N·(N−1) comparisons per task) and return the rows.

    Judgments go through the usual memory -> cache -> judge lookup, one batch per task, so an
    interrupted recording resumes from the cache. With ``shard``, only that shard's tasks are
    judged, and each row says which part of which recording it is (:func:`part_marks`), for
    :func:`rankkit.runs.merge.merge_recordings`.

    Returns the rows, and what they cost.

    Parameters
    ----------
    tasks:
        The tasks whose candidates are judged pair by pair, in both orders.
    judge:
        The judge to record.
    cache:
        The persistent cache (None: none).
    judge_label, method:
        The rows' labels (see :func:`judgment_row`).
    progress:
        Show a progress bar on stderr.
    shard:
        Judge only this shard's part of the tasks (None: all).
    """
    from tqdm import tqdm

    memo = JudgmentMemo(judge, cache)
    judge.check_tasks(tasks)  # before any judgment (the sim judge needs human scores)
    marks = part_marks(tasks, shard, judge.fingerprint, judge_label, method)
    mine = shard.select(tasks) if shard is not None else tasks
    cost = Cost()
    rows: list[dict[str, Any]] = []
    try:
        for number, task in enumerate(tqdm(mine, desc="recording", unit="task", file=sys.stderr, disable=not progress)):
            source = MatchSource(task, memo, strategy="record")
            pairs = list(permutations(task.candidate_ids, 2))
            for (first, second), verdict in zip(pairs, source.compare_many(pairs, round=1)):
                row = judgment_row(task, first, second, verdict, judge_label, method)
                rows.append(row if marks is None else {**row, "shard": marks[number]})
            cost.add(source.cost)
    finally:
        memo.flush()
    return rows, cost


def part_marks(
    tasks: Sequence[Task], shard: Shard | None, judge_fingerprint: str, judge_label: str, method: str
) -> list[dict[str, Any]] | None:
    """What each row of a shard's recording carries under ``shard``, per task of the shard: the
    part's record (as a results part's ``shard`` key, for the whole recording) and the task's
    ``position`` in the task list, so that merging puts the rows back in order. None without a shard.
    """
    if shard is None:
        return None
    identity = [run_fingerprint(tasks, [], judge_fingerprint, 0), judge_label, method]
    fingerprint = hashlib.sha256(json.dumps(identity).encode()).hexdigest()
    part = ShardPart(shard, len(tasks), fingerprint).to_dict()
    return [{**part, "position": position} for position in range(shard.index, len(tasks), shard.count)]


def rows_from_results(
    results: RunResult, judge_label: str | None = None, method: str = "recorded"
) -> list[dict[str, Any]]:
    """Every distinct judgment of a run (e.g. a ``rankkit compare --out`` file read by
    :meth:`rankkit.runs.results.RunResult.from_dict`), as recording rows.

    The results hold each strategy's comparisons (who was shown first and the verdict) and k-way
    judgments (the group as shown); a judgment used by several strategies is written once.

    Parameters
    ----------
    results:
        The run.
    judge_label:
        The rows' ``judge`` label (default: the run's judge spec).
    method:
        The rows' ``method`` label.
    """
    label = judge_label or results.judge_spec or "unknown"
    order = {t.task_id: t.candidate_ids for t in results.tasks}
    seen: set[tuple[str, str, Any]] = set()
    rows = []
    for strategy in results.strategies:
        for task in strategy.tasks:
            for comparison in task.comparisons:
                key = (task.task_id, comparison.first, comparison.second)
                if key in seen:
                    continue
                seen.add(key)
                verdict = comparison.verdict
                ids = order.get(task.task_id, [])
                swap = ids.index(comparison.first) > ids.index(comparison.second) if comparison.first in ids else None
                rows.append(
                    {
                        "task_id": task.task_id,
                        "judge": label,
                        "method": method,
                        "swap": swap,
                        "a": comparison.first,
                        "b": comparison.second,
                        "winner": recorded_winner(verdict, comparison.first, comparison.second),
                        "score_a": verdict.first_grade,
                        "score_b": verdict.second_grade,
                    }
                )
            for group in task.group_comparisons:
                kway_key = (task.task_id, group.kind, group.shown)
                if kway_key in seen:
                    continue
                seen.add(kway_key)
                rows.append(kway_row(task.task_id, group, label, method))
    return rows


def kway_row(task_id: str, group: GroupComparison, judge_label: str, method: str) -> dict[str, Any]:
    """One k-way judgment as a recording row; an unparsed one records null, so that replaying it is
    a counted miss.

    Parameters
    ----------
    task_id:
        The task's id.
    group:
        The judgment as a strategy used it (the candidates as shown and the judge's answer).
    judge_label, method:
        The row's labels (see :func:`judgment_row`).
    """
    judgment = group.judgment
    row: dict[str, Any] = {
        "task_id": task_id,
        "judge": judge_label,
        "method": method,
        "kind": group.kind,
        "shown": list(group.shown),
    }
    ranking = group.ranking
    if group.kind == CHOICE_KIND:
        row["chosen"] = None if ranking is None else ranking[0]
        for name in ("probabilities", "grades"):
            if getattr(judgment, name) is not None:
                row[name] = list(getattr(judgment, name))
    else:
        row["ranking"] = None if ranking is None else list(ranking)
    return row


def write_judgments(rows: Iterable[Mapping[str, Any]], path: str | Path) -> int:
    """Write recording rows as JSON Lines.

    Returns how many rows were written.

    Parameters
    ----------
    rows:
        The rows (:func:`record_grid`, :func:`rows_from_results`).
    path:
        The file to write (replaced).
    """
    count = 0
    with Path(path).open("w", encoding="utf-8") as handle:
        for row in rows:
            handle.write(json.dumps(row, ensure_ascii=False) + "\n")
            count += 1
    return count
