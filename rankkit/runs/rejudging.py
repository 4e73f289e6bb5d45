"""Re-ask a finished run's judgments of another judge, and say how much its rankings change.

:func:`rejudge` asks the new judge exactly the questions the run's strategies used (the same
tasks, candidates, presentation orders and kinds: verdicts, grades, k-way choices and rankings),
through the run's memo and the persistent cache, so an interrupted rejudge resumes without paying
twice. Each strategy's ranking is then recomputed from the new answers to the same questions
(:func:`rankkit.runs.rerank.replay`); ``docs/robustness.md`` says what that means for adaptive strategies.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Mapping, Sequence
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Task
from rankkit.judges.base import Judge
from rankkit.judgments.values import CHOICE_KIND, GRADE_KIND, RANKING_KIND, VERDICT_KIND, ParseStatus
from rankkit.runs.recorded_run import RecordedStrategy
from rankkit.runs.rerank import OffRecord, RecordedJudgment, leader, recorded_judgments, replay, verdict_outcome
from rankkit.runs.results import RunResult, StrategyRun, TaskResult
from rankkit.runs.runner import RunProgress, map_tasks
from rankkit.stats.metrics import correlation
from rankkit.strategies.matches import Cost, MatchSource

#: How a strategy's ranking on the new judgments was computed.
REPLAY = "replay"
MEAN_GRADE = "mean grade"
#: What each aggregation means, for the report.
AGGREGATIONS = {
    REPLAY: "the strategy recomputed from the new answers to its own questions",
    MEAN_GRADE: (
        "each answer's mean grade over the same judgments, old and new: the strategy's path depends on "
        "the verdicts, so recomputing it would ask questions the run never asked"
    ),
}
_NEEDS = {
    VERDICT_KIND: "pairwise verdicts",
    GRADE_KIND: "grades",
    CHOICE_KIND: "k-way judgments",
    RANKING_KIND: "k-way judgments",
}


def questions(results: RunResult) -> dict[str, dict[tuple[str, tuple[str, ...]], None]]:
    """The questions a run asked.

    Returns per task id, every distinct judgment any strategy used, as (kind, candidates as shown),
    in the order first used.

    Parameters
    ----------
    results:
        The finished run.
    """
    asked: dict[str, dict[tuple[str, tuple[str, ...]], None]] = {}
    for strategy_run in results.strategies:
        for result in strategy_run.tasks:
            keys = asked.setdefault(result.task_id, {})
            for item in recorded_judgments(result):
                keys.setdefault(item.key, None)
    return asked


def ask_again(
    results: RunResult, judge: Judge, cache: Any = None, progress: bool = False, workers: int | None = None
) -> tuple[dict[str, dict[tuple[str, tuple[str, ...]], Any]], Cost]:
    """The new judge's answer to every question of :func:`questions`, and what they cost.

    Returns per task id, question -> answer; and the :class:`~rankkit.strategies.matches.Cost` (``judge_calls``
    new, ``cache_hits`` from the cache).

    Parameters
    ----------
    results:
        The finished run.
    judge:
        The judge (or panel) to ask.
    cache:
        The persistent judgment cache (a :class:`~rankkit.judgments.cache.JudgmentCache`), or None.
    progress:
        Show a progress bar on stderr.
    workers:
        Tasks judged at once (:func:`rankkit.runs.runner.map_tasks`).
    """
    asked = questions(results)
    for kind in sorted({kind for keys in asked.values() for kind, _ in keys}):
        reason = unsupported(kind, judge)
        if reason:
            raise SpecError(f"the run used {reason}")
    tasks = [task for task in results.tasks if asked.get(task.task_id)]
    judge.check_tasks(tasks)
    judgments = sum(len(asked[task.task_id]) for task in tasks)  # each recorded question asked once more
    bar = RunProgress(len(tasks), disable=not progress, expected=(judgments, ""))

    def work(task: Task, memo: Any) -> tuple[str, dict[tuple[str, tuple[str, ...]], Any], Cost]:
        source = MatchSource(task, memo, strategy="rejudge", progress=bar)
        keys = list(asked[task.task_id])
        answers: dict[tuple[str, tuple[str, ...]], Any] = {}
        pairs = [shown for kind, shown in keys if kind == VERDICT_KIND]
        answers.update(((VERDICT_KIND, pair), v) for pair, v in zip(pairs, source.compare_many(pairs)))
        graded = [shown for kind, shown in keys if kind == GRADE_KIND]
        answers.update(((GRADE_KIND, one), g) for one, g in zip(graded, source.grade_many([s[0] for s in graded])))
        for kind in (CHOICE_KIND, RANKING_KIND):
            groups = [shown for k, shown in keys if k == kind]
            if groups:
                answers.update(((kind, group), j) for group, j in zip(groups, source.group_judgments(kind, groups)))
        bar.task_done()
        return task.task_id, answers, source.cost

    new: dict[str, dict[tuple[str, tuple[str, ...]], Any]] = {}
    cost = Cost()
    try:
        for task_id, answers, task_cost in map_tasks(tasks, work, judge, cache, workers):
            new[task_id] = answers
            cost.add(task_cost)
    finally:
        bar.close()
    return new, cost


def unsupported(kind: str, judge: Judge) -> str | None:
    """Why ``judge`` cannot answer a judgment of ``kind`` (None when it can).

    Returns e.g. ``grades, which judge panel:... cannot give``.

    Parameters
    ----------
    kind:
        ``verdict``, ``grade``, ``choice`` or ``ranking``.
    judge:
        The judge; it declares what it gives in its ``capabilities``.
    """
    what = _NEEDS[kind]
    return None if judge.capabilities.gives(kind) else f"{what}, which judge {judge.description} cannot give"


def rejudge(
    results: RunResult,
    judge: Judge,
    cache: Any = None,
    judge_spec: str = "",
    progress: bool = False,
    workers: int | None = None,
) -> dict[str, Any]:
    """Re-ask every judgment of a finished run of ``judge`` and compare the two rankings.

    Returns ``judge`` and ``original_judge``, ``cost`` (of the new judgments), ``agreement`` over
    every distinct judgment, and per strategy (``strategies``): its ``aggregation``, judgment
    agreement, the mean per-task Spearman correlation of the two rankings and ``tasks`` with the old
    and new #1 (``changed``); ``skipped``: the strategies whose judgments the judge cannot give (a
    pairwise-only panel and ``individual``'s grades), with the reason.

    Parameters
    ----------
    results:
        The finished run (a ``rankkit compare --out`` file read back); its judge is never rebuilt.
    judge:
        The judge or panel to ask again.
    cache:
        The persistent judgment cache, or None.
    judge_spec:
        How the judge was named, for the report.
    progress:
        Show a progress bar on stderr.
    workers:
        Tasks judged at once (:func:`rankkit.runs.runner.map_tasks`).
    """
    kept, skipped = rejudgeable(results, judge)
    results = dataclasses.replace(results, strategies=kept)
    new, cost = ask_again(results, judge, cache, progress, workers)
    by_id = {task.task_id: task for task in results.tasks}
    strategies = [
        {
            "strategy": strategy_run.name,
            **agreement(judgment_pairs(strategy_run, new)),
            **compare_rankings(strategy_run, by_id, new, results.seed),
        }
        for strategy_run in results.strategies
    ]
    everything = {  # each distinct judgment once, however many strategies used it
        (result.task_id, item.key): (item, answer)
        for strategy_run in results.strategies
        for result in strategy_run.tasks
        for item, answer in task_judgment_pairs(result, new)
    }
    return {
        "judge": {
            "spec": judge_spec,
            "description": judge.description,
            "fingerprint": judge.fingerprint,
            "simulated": judge.simulated,
        },
        "original_judge": results.judge_record(),
        "data": results.data,
        "cost": cost.to_dict(),
        "agreement": agreement(list(everything.values())),
        "strategies": strategies,
        "skipped": skipped,
    }


def rejudgeable(results: RunResult, judge: Judge) -> tuple[list[StrategyRun], list[dict[str, str]]]:
    """The strategies whose judgments ``judge`` can give, and the others with the reason
    (SpecError when there is none of the first).

    Returns the strategies kept and the ``skipped`` rows (``strategy``, ``reason``).
    """
    skipped = []
    kept = []
    for strategy_run in results.strategies:
        kinds = sorted({item.kind for result in strategy_run.tasks for item in recorded_judgments(result)})
        reasons = [reason for kind in kinds if (reason := unsupported(kind, judge))]
        if reasons:
            skipped.append({"strategy": strategy_run.name, "reason": f"it used {'; '.join(reasons)}"})
        else:
            kept.append(strategy_run)
    if not kept:
        reasons = "; ".join(f"{item['strategy']}: {item['reason']}" for item in skipped)
        raise SpecError(f"nothing to rejudge: {reasons}")
    return kept, skipped


def task_judgment_pairs(result: TaskResult, new: Mapping[str, Mapping[Any, Any]]) -> list[tuple[RecordedJudgment, Any]]:
    """Each judgment a strategy used on one task with the new answer to it."""
    return [(item, new[result.task_id][item.key]) for item in recorded_judgments(result)]


def judgment_pairs(
    strategy_run: StrategyRun, new: Mapping[str, Mapping[Any, Any]]
) -> list[tuple[RecordedJudgment, Any]]:
    """Each judgment the strategy used, task by task, with the new answer to it."""
    return [pair for result in strategy_run.tasks for pair in task_judgment_pairs(result, new)]


def agreement(pairs: Sequence[tuple[RecordedJudgment, Any]]) -> dict[str, Any]:
    """How often the new answers agree with the old.

    Returns ``judgments``; ``same_winner`` (share of the verdicts and k-way judgments with the same
    winner: the same outcome of a verdict, the same answer chosen or ranked first; a failed answer
    is a winner of its own) over ``decisive`` of them; for grades ``grades``, ``grade_correlation``
    (Pearson, over grades read on both sides) and ``same_grade``.

    Parameters
    ----------
    pairs:
        (old recorded judgment, new answer to the same question) pairs.
    """
    same = decisive = 0
    old_grades, new_grades = [], []
    equal_grades = 0
    for item, answer in pairs:
        if item.kind == GRADE_KIND:
            before, after = _grade_value(item.judgment), _grade_value(answer)
            equal_grades += before == after
            if before is not None and after is not None:
                old_grades.append(before)
                new_grades.append(after)
            continue
        decisive += 1
        same += _winner(item.kind, item.shown, item.judgment) == _winner(item.kind, item.shown, answer)
    graded = sum(1 for item, _ in pairs if item.kind == GRADE_KIND)
    return {
        "judgments": len(pairs),
        "decisive": decisive,
        "same_winner": same / decisive if decisive else None,
        "grades": graded,
        "same_grade": equal_grades / graded if graded else None,
        "grade_correlation": correlation("pearson", old_grades, new_grades) if graded else None,
    }


def _grade_value(grade: Any) -> float | None:
    return None if grade.value is None or grade.status is ParseStatus.FAILED else float(grade.value)


def _winner(kind: str, shown: tuple[str, ...], judgment: Any) -> Any:
    if kind == VERDICT_KIND:
        return verdict_outcome(RecordedJudgment(kind, shown, judgment))
    if judgment.status is ParseStatus.FAILED:
        return None
    if kind == CHOICE_KIND:
        return None if judgment.chosen is None else shown[judgment.chosen]
    return None if judgment.permutation is None else shown[judgment.permutation[0]]


def compare_rankings(
    strategy_run: StrategyRun,
    tasks: Mapping[str, Task],
    new: Mapping[str, Mapping[tuple[str, tuple[str, ...]], Any]],
    seed: int,
) -> dict[str, Any]:
    """One strategy's rankings from the old and the new judgments, task by task.

    The strategy is replayed on the new answers (:data:`REPLAY`); when it cannot be on some task
    (its path depends on the verdicts and leaves the questions asked, or it cannot be rebuilt),
    every task of it is compared by :data:`MEAN_GRADE` instead, old and new alike.

    Returns ``aggregation``, ``departed`` (tasks a replay left the record on), ``rank_correlation``
    (mean per-task Spearman over tasks where it is defined), ``winners_changed`` and ``tasks``.

    Parameters
    ----------
    strategy_run:
        The strategy's run.
    tasks:
        The tasks by id.
    new:
        Per task id, the new answer to each question (:func:`ask_again`).
    seed:
        The run's seed.
    """
    pending = []
    for result in strategy_run.tasks:
        old = recorded_judgments(result)
        fresh = [RecordedJudgment(item.kind, item.shown, new[result.task_id][item.key]) for item in old]
        pending.append((result, tasks[result.task_id], old, fresh))
    rankings, departed = replayed_rankings(strategy_run, [(task, fresh) for _, task, _, fresh in pending], seed)
    rows = [
        ranking_row(result, task, old, fresh, None if rankings is None else rankings[index])
        for index, (result, task, old, fresh) in enumerate(pending)
    ]
    defined = [row["spearman"] for row in rows if row["spearman"] is not None]
    return {
        "aggregation": REPLAY if rankings is not None else MEAN_GRADE,
        "departed": departed,
        "rank_correlation": sum(defined) / len(defined) if defined else None,
        "correlated_tasks": len(defined),
        "winners_changed": sum(row["changed"] for row in rows),
        "tasks": rows,
    }


#: A strategy's new ranking of one task: its #1 and the candidates' scores.
Replayed = tuple[str, dict[str, float]]


def replayed_rankings(
    strategy_run: StrategyRun, fresh_by_task: Sequence[tuple[Task, list[RecordedJudgment]]], seed: int
) -> tuple[list[Replayed] | None, int]:
    """The strategy replayed on the new answers, task by task (:func:`rankkit.runs.rerank.replay`).

    Returns the new rankings, or None when the strategy cannot be rebuilt or a replay left the
    record on some task; and on how many tasks it did.
    """
    if isinstance(strategy_run.strategy, RecordedStrategy):
        return None, 0
    rankings = []
    departed = 0
    for task, fresh in fresh_by_task:
        try:
            again = replay(strategy_run.strategy, task, fresh, seed)
        except OffRecord:
            departed += 1
            continue
        rankings.append((leader(again, list(task.candidate_ids)), {cid: float(v) for cid, v in again.scores.items()}))
    return (None if departed else rankings), departed


def ranking_row(
    result: TaskResult,
    task: Task,
    old: Sequence[RecordedJudgment],
    fresh: Sequence[RecordedJudgment],
    replayed: Replayed | None,
) -> dict[str, Any]:
    """One task's old and new #1 and scores, and the Spearman correlation of the two rankings.

    With a replay (``replayed``) the old side is the strategy's recorded result; without one both
    sides are :func:`mean_grades` of the old and of the new judgments.
    """
    ids = list(task.candidate_ids)
    if replayed is not None:
        old_first = result.champion if result.champion is not None else result.ranking[0]
        old_scores = result.scores
        new_first, new_scores = replayed
    else:
        old_scores, new_scores = mean_grades(old, ids), mean_grades(fresh, ids)
        old_first, new_first = _best(old_scores, ids), _best(new_scores, ids)
    rho = correlation("spearman", [old_scores[c] for c in ids], [new_scores[c] for c in ids])
    return {
        "task_id": result.task_id,
        "old_winner": old_first,
        "new_winner": new_first,
        "changed": old_first != new_first,
        "spearman": None if math.isnan(rho) else rho,
        "old_scores": dict(old_scores),
        "new_scores": new_scores,
    }


def mean_grades(record: Sequence[RecordedJudgment], ids: Sequence[str]) -> dict[str, float]:
    """Each candidate's mean grade over some judgments.

    Returns per candidate the mean over both sides of every verdict, every grade, and for a k-way
    judgment its grade per slot when the judge gave them, else 1 for the answer chosen (or ranked
    first) and 0 for the others; NaN for a candidate with none.

    Parameters
    ----------
    record:
        The judgments.
    ids:
        The task's candidates.
    """
    received: dict[str, list[float]] = {cid: [] for cid in ids}
    for item in record:
        judgment = item.judgment
        if judgment.status is ParseStatus.FAILED:
            continue
        if item.kind == VERDICT_KIND:
            received[item.shown[0]].append(judgment.first_grade)
            received[item.shown[1]].append(judgment.second_grade)
        elif item.kind == GRADE_KIND and judgment.value is not None:
            received[item.shown[0]].append(float(judgment.value))
        elif item.kind in (CHOICE_KIND, RANKING_KIND):
            grades = getattr(judgment, "grades", None)
            first = _winner(item.kind, item.shown, judgment)
            for slot, cid in enumerate(item.shown):
                received[cid].append(float(grades[slot]) if grades else float(cid == first))
    return {cid: sum(values) / len(values) if values else math.nan for cid, values in received.items()}


def _best(scores: Mapping[str, float], ids: Sequence[str]) -> str:
    """The highest score (NaN lowest; ties: the first in the data)."""
    return min(ids, key=lambda cid: (-(scores[cid] if not math.isnan(scores[cid]) else -math.inf), ids.index(cid)))
