"""The parts of a sharded run combined into the results of the whole run (``rankkit merge``).

Each part (``rankkit compare --shard i/n --out PART``) holds its shard's tasks, ranked as the whole
run ranks them (every task has its own generator and strategies rank tasks one by one). Merging
puts the tasks back in the order of the input file, adds the costs up task by task and recomputes
the metrics over all tasks, so the merged file is the single-process run's, except for the timing
keys (``wall_seconds`` and ``warm_up_seconds``: the longest part's; each strategy's ``seconds``:
the parts' sum). Parts are untrusted files: each is read with the results file's checks, and every
claim a part makes about the run (its shard, fingerprint, size) is checked against the others;
nothing in a part chooses where anything is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from os import PathLike

from rankkit.errors import RankkitError, TaskFormatError
from rankkit.runs.recorded_run import JudgeRecord
from rankkit.runs.results import RunResult, StrategyRun, read_results
from rankkit.stats.metrics import evaluate
from rankkit.strategies.matches import Cost


class MissingShardsError(RankkitError):
    """The parts given do not cover every shard of the run (exit 2)."""


Part = tuple[str, RunResult]  # (the file, or "part N" for a RunResult given in memory; its run)


def merge_parts(parts: Sequence[str | PathLike[str] | RunResult]) -> RunResult:
    """The whole run's result from the results of all its shards, given in any order.

    Raises :class:`TaskFormatError` (naming the file) for a part that is malformed, is not a part,
    belongs to another run or repeats a shard, and :class:`MissingShardsError` when a shard is missing.

    Parameters
    ----------
    parts
        The parts' results files, or their :class:`~rankkit.runs.results.RunResult` objects.

    Examples
    --------
    >>> from rankkit import compare
    >>> from rankkit.data.tasks import SAMPLE_DATA
    >>> from rankkit.runs.shards import Shard
    >>> halves = [compare(SAMPLE_DATA, ["bt"], judge="sim", shard=Shard(i, 2)) for i in (0, 1)]
    >>> whole = compare(SAMPLE_DATA, ["bt"], judge="sim")
    >>> merge_parts(halves).strategies[0].metrics == whole.strategies[0].metrics
    True
    """
    named = [_read_part(part, index) for index, part in enumerate(parts)]
    if not named:
        raise MissingShardsError("merge: no parts given")
    ordered = _check_parts(named)
    return _combine(ordered)


def _read_part(part: str | PathLike[str] | RunResult, index: int) -> Part:
    """The part read (a results file's checks) and named; a TaskFormatError when it is not a part."""
    if isinstance(part, RunResult):  # in memory: written and read back, so it is checked as a file is
        where = f"part {index}"
        run = RunResult.from_dict(part.to_dict(), where)
    else:
        where, run = str(part), read_results(part)
    if run.shard is None:
        raise TaskFormatError(
            where, None, "shard", "missing: not a part of a sharded run (rankkit compare --shard I/N)"
        )
    return where, run


def _check_parts(named: Sequence[Part]) -> list[Part]:
    """The parts in shard order, after checking they are the shards of one run, each once, all there."""
    reference_where, reference = named[0]
    by_index: dict[int, Part] = {}
    for where, run in named:
        _check_same_run(where, run, reference_where, reference)
        index = run.shard.shard.index  # type: ignore[union-attr]  (checked by _read_part)
        if index in by_index:
            raise TaskFormatError(
                where, None, "shard.index", f"shard {run.shard.shard} given twice (also {by_index[index][0]})"
            )
        by_index[index] = (where, run)
        _check_part_size(where, run)
    count = reference.shard.shard.count  # type: ignore[union-attr]
    missing = [f"{i}/{count}" for i in range(count) if i not in by_index]
    if missing:
        given = ", ".join(f"{where} ({run.shard.shard})" for where, run in named)  # type: ignore[union-attr]
        raise MissingShardsError(f"merge: shard(s) {', '.join(missing[:10])} missing; given {given}")
    return [by_index[i] for i in range(count)]


def _check_same_run(where: str, run: RunResult, reference_where: str, reference: RunResult) -> None:
    """Refuse a part whose run (fingerprint, split, judge, seed, strategies) differs from the reference part's."""
    part, first = run.shard, reference.shard
    assert part is not None and first is not None
    differences = [
        ("run_fingerprint", part.run_fingerprint != first.run_fingerprint),
        ("count", part.shard.count != first.shard.count),
        ("total_tasks", part.total_tasks != first.total_tasks),
        ("judge", run.judge.fingerprint != reference.judge.fingerprint),
        ("seed", run.seed != reference.seed),
        ("strategies", [s.name for s in run.strategies] != [s.name for s in reference.strategies]),
    ]
    for name, differs in differences:
        if differs:
            raise TaskFormatError(
                where,
                None,
                name if name in ("judge", "seed", "strategies") else f"shard.{name}",
                f"a part of a different run than {reference_where} (its data, strategies, judge, seed or "
                f"number of shards differ); merge the parts of one run",
            )


def _check_part_size(where: str, run: RunResult) -> None:
    """Refuse a part whose tasks are not its shard's share of the run, or whose strategies ranked others."""
    part = run.shard
    assert part is not None
    expected = part.shard.size(part.total_tasks)
    if len(run.tasks) != expected:
        raise TaskFormatError(
            where,
            None,
            "task_data",
            f"holds {len(run.tasks)} tasks; shard {part.shard} of a run of {part.total_tasks} tasks has {expected}",
        )
    ids = [task.task_id for task in run.tasks]
    for number, strategy_run in enumerate(run.strategies):
        if [result.task_id for result in strategy_run.tasks] != ids:
            raise TaskFormatError(where, None, f"strategies[{number}].tasks", "not the part's tasks, in its order")


def _interleave(columns: Sequence[Sequence]) -> list:
    """Items back in the order the shards took them from: position p is ``columns[p % n][p // n]``."""
    total = sum(len(column) for column in columns)
    return [columns[p % len(columns)][p // len(columns)] for p in range(total)]


def _combine(ordered: Sequence[Part]) -> RunResult:
    """One run from its parts, given in shard order and checked."""
    runs = [run for _, run in ordered]
    tasks = _interleave([run.tasks for run in runs])
    seen: dict[str, int] = {}
    for position, task in enumerate(tasks):
        if task.task_id in seen:  # two parts claim the same task: neither can be trusted
            where = ordered[position % len(runs)][0]
            raise TaskFormatError(where, None, "task_data", f"task {task.task_id!r} is also in another part")
        seen[task.task_id] = position
    first = runs[0]
    strategies = [_combine_strategy([run.strategies[k] for run in runs], tasks) for k in range(len(first.strategies))]
    return RunResult(
        judge=_combined_judge(runs, [task.task_id for task in tasks]),
        judge_spec=first.judge_spec,
        data=first.data,
        seed=first.seed,
        tasks=tasks,
        strategies=strategies,
        config=first.config,
        wall_seconds=max(run.wall_seconds for run in runs),
        warm_up_seconds=max(run.warm_up_seconds for run in runs),
    )


def _combine_strategy(parts: Sequence[StrategyRun], tasks: Sequence) -> StrategyRun:
    """One strategy over all tasks: its task results in task order, costs added up in that order (as
    the single run adds them), seconds summed, metrics recomputed over all tasks."""
    results = _interleave([part.tasks for part in parts])
    cost = Cost()
    for result in results:
        cost.add(result.cost)
    humans = [task.human_scores() for task in tasks]
    return StrategyRun(
        strategy=parts[0].strategy,
        tasks=results,
        cost=cost,
        seconds=sum(part.seconds for part in parts),
        metrics=evaluate([(r.scores, r.ranking, human) for r, human in zip(results, humans)]),
    )


def _combined_judge(runs: Sequence[RunResult], task_ids: Sequence[str]) -> JudgeRecord:
    """The parts' judge, with a simulated judge's recorded truth for every task, in task order."""
    judge = runs[0].judge
    assert isinstance(judge, JudgeRecord)
    latent: dict[str, dict[str, float]] = {}
    for run in runs:
        latent.update(getattr(run.judge, "recorded_latent", None) or {})
    return JudgeRecord(
        spec=judge.spec,
        description=judge.description,
        fingerprint=judge.fingerprint,
        simulated=judge.simulated,
        latent={task_id: latent[task_id] for task_id in task_ids if task_id in latent} if latent else None,
    )
