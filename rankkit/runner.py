"""Run strategies over tasks on one judge, one cache and one shared match graph per task.

:func:`run` is what ``rankkit compare`` and ``rankkit rank`` call, and the Python entry point::

    from rankkit import load_tasks, make_judge, make_strategy, run
    result = run(load_tasks("tasks.jsonl"), [make_strategy("knockout:debias=true")], make_judge("sim"))
    result.strategies[0].metrics["spearman"]

Every strategy ranks every task with a generator seeded by (seed, task id), so the same seed, data
and judge give the same brackets and scores, and strategies that share a random structure (say,
``knockout`` and ``knockout:debias=true``) start from the same first-round pairing.
"""

from __future__ import annotations

import random
import sys
import time
from typing import Any, Sequence

from tqdm import tqdm

from rankkit.cache import NullCache
from rankkit.judges.base import Judge
from rankkit.matches import Cost, Match, MatchGraph, MatchSource
from rankkit.metrics import evaluate
# The result classes live in rankkit.results (their schema and (de)serialisation); they are
# re-exported here, where run() builds them and where callers have always imported them from.
from rankkit.results import RunResult, StrategyRun, TaskResult, strict_json, task_record  # noqa: F401
from rankkit.strategies.base import Strategy
from rankkit.tasks import Task


def task_rng(seed: int, task_id: str) -> random.Random:
    """The generator a strategy gets for a task (str seeds hash deterministically)."""
    return random.Random(f"{seed}|{task_id}")


def run(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, cache: Any = None,
        seed: int = 0, progress: bool = True, judge_spec: str = "", data: str = "") -> RunResult:
    """Rank every task with every strategy; see the module docstring."""
    cache = cache if cache is not None else NullCache()
    judge.bind_cache(cache)
    runs = [StrategyRun(strategy=s) for s in strategies]
    graphs: dict[str, MatchGraph] = {}
    bar = tqdm(tasks, desc="ranking", unit="task", file=sys.stderr, disable=not progress)
    for task in bar:
        graph = graphs[task.task_id] = MatchGraph(task)
        for strategy_run in runs:
            strategy = strategy_run.strategy
            cost = Cost()
            source = MatchSource(task, graph, judge, cache, cost, strategy=strategy_run.name)
            started = time.perf_counter()
            ranking = strategy.rank(task, source, task_rng(seed, task.task_id))
            strategy_run.seconds += time.perf_counter() - started
            strategy_run.cost.add(cost)
            strategy_run.tasks.append(TaskResult(
                task_id=task.task_id, scores={k: float(v) for k, v in ranking.scores.items()},
                ranking=ranking.ordered(task.candidate_ids), champion=ranking.champion,
                extras={k: dict(v) for k, v in ranking.extras.items()}, matches=source.matches, cost=cost))
    by_id = {t.task_id: t for t in tasks}
    for strategy_run in runs:
        strategy_run.metrics = evaluate([(r.scores, r.ranking, by_id[r.task_id].human_scores())
                                         for r in strategy_run.tasks])
    return RunResult(judge=judge, judge_spec=judge_spec, data=data, seed=seed, tasks=list(tasks),
                     strategies=runs, graphs=graphs)
