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

import math
import random
import sys
import time
from dataclasses import dataclass, field
from typing import Any, Sequence

from tqdm import tqdm

from rankkit.cache import NullCache
from rankkit.judges.base import Judge
from rankkit.matches import Cost, Match, MatchGraph, MatchSource
from rankkit.metrics import evaluate
from rankkit.strategies.base import Strategy, check_compatible
from rankkit.tasks import Task


@dataclass
class TaskResult:
    """One strategy's result on one task."""

    task_id: str
    scores: dict[str, float]
    ranking: list[str]
    champion: str | None
    extras: dict[str, dict[str, Any]]
    matches: list[Match]
    cost: Cost

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "scores": self.scores, "ranking": self.ranking,
                "champion": self.champion, "extras": self.extras,
                "comparisons": self.cost.comparisons, "judge_calls": self.cost.judge_calls,
                "matches": [m.to_dict() for m in self.matches]}


@dataclass
class StrategyRun:
    """One strategy over all tasks: its per-task results, total cost, time and metrics."""

    strategy: Strategy
    tasks: list[TaskResult] = field(default_factory=list)
    cost: Cost = field(default_factory=Cost)
    seconds: float = 0.0
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def name(self) -> str:
        return self.strategy.label

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "strategy": self.strategy.name, "params": self.strategy.params(),
                "comparisons": self.cost.comparisons, "scores": self.cost.scores,
                "judge_calls": self.cost.judge_calls, "cache_hits": self.cost.cache_hits,
                "cost": self.cost.to_dict(), "seconds": round(self.seconds, 4),
                "metrics": self.metrics, "tasks": [t.to_dict() for t in self.tasks]}


@dataclass
class RunResult:
    """Everything a run produced; ``to_dict`` is the ``--out`` JSON."""

    judge: Judge
    judge_spec: str
    data: str
    seed: int
    tasks: list[Task]
    strategies: list[StrategyRun]
    graphs: dict[str, MatchGraph]

    def to_dict(self) -> dict[str, Any]:
        return strict_json({
            "judge": {"spec": self.judge_spec, "description": self.judge.description,
                      "fingerprint": self.judge.fingerprint, "simulated": self.judge.simulated},
            "data": self.data,
            "seed": self.seed,
            "criterion": self.tasks[0].criterion if self.tasks else None,
            "strategies": [s.to_dict() for s in self.strategies],
            "task_data": [task_record(t) for t in self.tasks],
        })


def task_record(task: Task) -> dict[str, Any]:
    """A task as stored in results JSON (enough for analyses and reports to work offline)."""
    return {"task_id": task.task_id, "prompt": task.prompt, "reference": task.reference,
            "meta": dict(task.meta), "scale": list(task.scale),
            "candidates": [{"id": c.id, "system": c.system, "text": c.text,
                            "human": c.human.get(task.criterion) if task.criterion else None}
                           for c in task.candidates]}


def strict_json(value: Any) -> Any:
    """Make a structure strict JSON: NaN and infinities (which JSON lacks) become null."""
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, dict):
        return {k: strict_json(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [strict_json(v) for v in value]
    return value


def task_rng(seed: int, task_id: str) -> random.Random:
    """The generator a strategy gets for a task (str seeds hash deterministically)."""
    return random.Random(f"{seed}|{task_id}")


def run(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, cache: Any = None,
        seed: int = 0, progress: bool = True, judge_spec: str = "", data: str = "") -> RunResult:
    """Rank every task with every strategy; see the module docstring."""
    check_compatible(strategies, judge)  # before any judgment is paid for
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
