"""The data the report page's script reads, embedded in the page as JSON.

Tasks, their distinct judgments, and per strategy its per-task results, brackets and system
leaderboard.
"""

from __future__ import annotations

import json
import math
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

from rankkit.data.conversations import transcript
from rankkit.data.formatting import inert_json, plain
from rankkit.data.tasks import Task
from rankkit.runs.analysis import human_scores
from rankkit.runs.result_records import candidate_records
from rankkit.runs.results import RunResult, TaskResult
from rankkit.strategies.matches import Comparison

#: Meta values longer than this are left out of the embedded data (the prompt already holds them).
MAX_META_CHARS = 200


def embed_json(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` appear raw,
    so no string in it can end the element (``</script>``) or open a comment.

    Returns the JSON text, with ``<``, ``>`` and ``&`` as JSON unicode escapes.

    Parameters
    ----------
    data
        JSON-serialisable data.
    """
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return inert_json(text)  # no raw bidirectional or invisible character in the file either


def knockout_bracket(task_result: TaskResult) -> dict[str, Any] | None:
    """The bracket of one knockout-like task result, round by round.

    Rebuilt from the per-candidate extras (``eliminated_round``) and the comparisons (with their
    ``round``). Each round lists its pairings — the two candidates, each one's grade averaged
    over the pair's comparisons (two with ``order=both``), the winner (the one not eliminated in
    that round) and, under the page's key ``matches``, the indices of the pair's comparisons in
    ``task_result.comparisons`` — and the candidates that advanced on a bye. Returns None when the
    result has no elimination rounds.

    Returns ``rounds`` and ``champion``, or None.

    Parameters
    ----------
    task_result
        One strategy's result on one task.
    """
    if not task_result.has_elimination_rounds:
        return None
    comparisons = task_result.comparisons
    eliminated = {cid: e.eliminated_round for cid, e in task_result.extras.items()}
    last_round = max([c.round or 0 for c in comparisons] + [r for r in eliminated.values() if r is not None] + [0])
    rounds = []
    for number in range(1, last_round + 1):
        pairs: dict[frozenset, dict[str, Any]] = {}
        for index, comparison in enumerate(comparisons):
            if comparison.round != number:
                continue
            key = frozenset((comparison.first, comparison.second))
            pair = pairs.setdefault(
                key, {"a": comparison.first, "b": comparison.second, "grades": defaultdict(list), "matches": []}
            )
            pair["grades"][comparison.first].append(comparison.verdict.first_grade)
            pair["grades"][comparison.second].append(comparison.verdict.second_grade)
            pair["matches"].append(index)
        pairings = []
        for pair in pairs.values():
            a, b = pair["a"], pair["b"]
            grade_a = sum(pair["grades"][a]) / len(pair["grades"][a])
            grade_b = sum(pair["grades"][b]) / len(pair["grades"][b])
            if eliminated.get(b) == number and eliminated.get(a) != number:
                winner = a
            elif eliminated.get(a) == number and eliminated.get(b) != number:
                winner = b
            else:  # not a knockout match (e.g. a strategy that also plays extra games): higher grade
                winner = a if grade_a >= grade_b else b
            pairings.append(
                {"a": a, "b": b, "grade_a": grade_a, "grade_b": grade_b, "winner": winner, "matches": pair["matches"]}
            )
        alive = [cid for cid, r in eliminated.items() if r is None or r >= number]
        playing = {cid for p in pairings for cid in (p["a"], p["b"])}
        rounds.append({"round": number, "pairings": pairings, "byes": [cid for cid in alive if cid not in playing]})
    return {"rounds": rounds, "champion": task_result.champion}


def system_leaderboard(results: RunResult, name: str) -> list[dict[str, Any]]:
    """Systems ranked by one strategy: mean rank it gave them (1 = best; scale-free), mean score,
    tasks won (ranked first) and the mean human score, best mean rank first.

    Returns one row per system.

    Parameters
    ----------
    results
        The run.
    name
        The strategy's label.
    """
    systems = {t.task_id: {c.id: c.system for c in t.candidates} for t in results.tasks}
    human = human_scores(results)
    collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for strategy in results.strategies:
        if strategy.name != name:
            continue
        for task in strategy.tasks:
            for position, cid in enumerate(task.ranking, start=1):
                system = systems.get(task.task_id, {}).get(cid)
                if system is None:
                    continue
                row = collected[system]
                row["rank"].append(position)
                row["score"].append(task.scores[cid])
                row["won"].append(float(position == 1))
                if task.task_id in human:
                    row["human"].append(human[task.task_id][cid])
    board = []
    for system, row in collected.items():
        board.append(
            {
                "system": system,
                "tasks": len(row["rank"]),
                "mean_rank": sum(row["rank"]) / len(row["rank"]),
                "mean_score": sum(row["score"]) / len(row["score"]),
                "won": int(sum(row["won"])),
                "mean_human": sum(row["human"]) / len(row["human"]) if row["human"] else math.nan,
            }
        )
    return sorted(board, key=lambda r: (r["mean_rank"], -r["mean_score"]))


JUDGMENT_FIELDS = ("first", "second", "first_grade", "second_grade", "winner", "probability", "status", "raw")


def report_data(results: RunResult, max_tasks: int | None = None) -> dict[str, Any]:
    """What the page's script reads: tasks, their judgments, and per strategy its per-task results.

    Strategies of one run share their judgments (one match graph), so each task's distinct
    judgments are stored once in ``judgments[task_id]`` and a strategy's comparisons (the page's
    key ``matches``) are ``[judgment index, round]`` pairs into that list — all-pairs strategies would otherwise repeat
    the same judge outputs several times over.

    Returns the page's data, ready for JSON.

    Parameters
    ----------
    max_tasks
        Keep only the first N tasks in the task and match views (a smaller file for very
        large runs); the leaderboard and bias views always use every task.
    """
    tasks = results.tasks[:max_tasks] if max_tasks else results.tasks
    kept = {t.task_id for t in tasks}
    judgments = TaskJudgments()
    strategies = [
        {
            "name": strategy.name,
            "knockout_like": strategy.has_elimination_rounds,
            "tasks": {
                result.task_id: task_result_record(result, judgments)
                for result in strategy.tasks
                if result.task_id in kept
            },
        }
        for strategy in results.strategies
    ]
    return plain(
        {
            "criterion": results.criterion,
            "tasks": [page_task_record(task) for task in tasks],
            "judgments": dict(judgments.records),
            "strategies": strategies,
        }
    )


def page_task_record(task: Task) -> dict[str, Any]:
    """A task as the page shows it: prompt, reference, short meta values, and the candidates with their human scores.

    Returns JSON-ready.
    """
    meta = {
        k: v for k, v in task.meta.items() if isinstance(v, (str, int, float, bool)) and len(str(v)) <= MAX_META_CHARS
    }
    return {
        "task_id": task.task_id,
        "prompt": transcript(task.prompt),  # the page shows text: a conversation as its transcript
        "reference": task.reference,
        "meta": meta,
        "candidates": [
            {**record, "text": transcript(c.text)} for record, c in zip(candidate_records(task), task.candidates)
        ],
    }


class TaskJudgments:
    """Each task's distinct judgments, stored once however many strategies used them."""

    def __init__(self) -> None:
        #: Task id -> its judgments as the page reads them, in the order first used.
        self.records: dict[str, list[dict[str, Any]]] = defaultdict(list)
        self._index: dict[tuple[str, ...], int] = {}

    def index(self, task_id: str, key: tuple[str, ...], record: Callable[[], dict[str, Any]]) -> int:
        """The index of the judgment ``key`` in the task's list; ``record()`` stores it when first seen."""
        key = (task_id, *key)
        if key not in self._index:
            self._index[key] = len(self.records[task_id])
            self.records[task_id].append(record())
        return self._index[key]


def task_result_record(task_result: TaskResult, judgments: TaskJudgments) -> dict[str, Any]:
    """A strategy's result on one task as the page reads it; its comparisons (key ``matches``) are
    ``[judgment index, round]`` pairs into ``judgments`` (pairs first, then k-way judgments).

    Returns JSON-ready.
    """
    task_id = task_result.task_id
    matches = []
    for comparison in task_result.comparisons:
        index = judgments.index(task_id, (comparison.first, comparison.second), partial(judgment_record, comparison))
        matches.append([index, comparison.round])
    for group in task_result.group_comparisons:  # a k-way judgment: one card with k answers
        index = judgments.index(task_id, (group.kind, *group.shown), partial(group_judgment_record, group))
        matches.append([index, group.round])
    extras = {
        cid: {k: v for k, v in e.to_dict().items() if k in ("eliminated_round", "played", "byes", "undecided")}
        for cid, e in task_result.extras.items()
    }
    return {
        "scores": task_result.scores,
        "ranking": task_result.ranking,
        "champion": task_result.champion,
        "extras": extras,
        "bracket": knockout_bracket(task_result),
        "matches": matches,
    }


def judgment_record(comparison: Comparison) -> dict[str, Any]:
    """A pairwise judgment as the page reads it: :data:`JUDGMENT_FIELDS` of its stored record."""
    stored = comparison.to_dict()
    return {k: stored[k] for k in JUDGMENT_FIELDS}


def group_judgment_record(group: Any) -> dict[str, Any]:
    """A k-way judgment (:class:`rankkit.strategies.choices.GroupComparison`) as the page reads it: the ids in
    the order shown, each slot's grade or P(best), the judge's pick (``best``) or its ranking
    (``ranking``, best first), parse status and raw output.

    Returns JSON-ready.

    Parameters
    ----------
    group
        The k-way judgment.
    """
    judgment = group.judgment
    scores = getattr(judgment, "grades", None) or getattr(judgment, "probabilities", None)
    ranking = group.ranking
    return {
        "shown": list(group.shown),
        "kind": group.kind,
        "scores": None if scores is None else list(scores),
        "score_kind": "grade" if getattr(judgment, "grades", None) else "P(best)",
        "best": ranking[0] if ranking else None,
        "ranking": list(ranking) if ranking and group.kind == "ranking" else None,
        "status": judgment.status.value,
        "raw": judgment.raw,
    }
