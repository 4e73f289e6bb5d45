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
from pathlib import Path
from typing import Any

from rankkit.errors import RankkitError, TaskFormatError
from rankkit.runs.recorded_run import JudgeRecord
from rankkit.runs.results import RunResult, StrategyRun, read_results
from rankkit.runs.runner import add_metrics
from rankkit.runs.shards import ShardPart, shard_part_from_record
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
    for where, run in named:
        _check_same_run(where, run, reference_where, reference)
        _check_part_size(where, run)
    order = shards_in_order([(where, run.shard) for where, run in named])  # type: ignore[misc]
    return [named[i] for i in order]


def shards_in_order(claims: Sequence[tuple[str, ShardPart]]) -> list[int]:
    """Positions in ``claims`` (each a file and its part's record) in shard order, after checking
    that they are the shards of one run (the first claim's), each once, and all there.

    Raises :class:`TaskFormatError` naming the file of a part of another run or of a shard given
    twice, :class:`MissingShardsError` naming the missing shards.
    """
    reference_where, reference = claims[0]
    by_index: dict[int, int] = {}
    for position, (where, part) in enumerate(claims):
        differing = _differing_claim(part, reference)
        if differing:
            raise TaskFormatError(
                where,
                None,
                differing,
                f"a part of a different run than {reference_where} (its data, strategies, judge, seed or "
                f"number of shards differ); merge the parts of one run",
            )
        if part.shard.index in by_index:
            other = claims[by_index[part.shard.index]][0]
            raise TaskFormatError(where, None, "shard.index", f"shard {part.shard} given twice (also {other})")
        by_index[part.shard.index] = position
    count = reference.shard.count
    missing = [f"{i}/{count}" for i in range(count) if i not in by_index]
    if missing:
        given = ", ".join(f"{where} ({part.shard})" for where, part in claims)
        raise MissingShardsError(f"merge: shard(s) {', '.join(missing[:10])} missing; given {given}")
    return [by_index[i] for i in range(count)]


def _differing_claim(part: ShardPart, reference: ShardPart) -> str | None:
    """The first field of ``part``'s record that places it in another run than ``reference``, or None."""
    differences = {
        "shard.count": part.shard.count != reference.shard.count,
        "shard.total_tasks": part.total_tasks != reference.total_tasks,
        "shard.run_fingerprint": part.run_fingerprint != reference.run_fingerprint,
    }
    return next((name for name, differs in differences.items() if differs), None)


def _check_same_run(where: str, run: RunResult, reference_where: str, reference: RunResult) -> None:
    """Refuse a part whose judge, seed or strategies differ from the reference part's (whatever its fingerprint claims)."""
    differences = {
        "judge": run.judge.fingerprint != reference.judge.fingerprint,
        "seed": run.seed != reference.seed,
        "strategies": [s.name for s in run.strategies] != [s.name for s in reference.strategies],
    }
    for name, differs in differences.items():
        if differs:
            raise TaskFormatError(
                where,
                None,
                name,
                f"a part of a different run than {reference_where} (not the same {name}); merge the parts of one run",
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
    strategies = [_combine_strategy([run.strategies[k] for run in runs]) for k in range(len(first.strategies))]
    add_metrics(strategies, tasks)  # over all tasks, as the single run computes them
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


def _combine_strategy(parts: Sequence[StrategyRun]) -> StrategyRun:
    """One strategy over all tasks: its task results in task order, costs added up in that order (as
    the single run adds them), seconds summed (metrics are set over all tasks afterwards)."""
    results = _interleave([part.tasks for part in parts])
    cost = Cost()
    for result in results:
        cost.add(result.cost)
    return StrategyRun(strategy=parts[0].strategy, tasks=results, cost=cost, seconds=sum(p.seconds for p in parts))


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


# -- recordings (``rankkit record --shard I/N``) -------------------------------------------------------


def merge_recordings(parts: Sequence[str | PathLike[str]]) -> list[dict[str, Any]]:
    """The rows of the whole recording from the recordings of all its shards, given in any order:
    in task order, as one ``rankkit record`` writes them, without the parts' ``shard`` marks.

    Raises :class:`TaskFormatError` (naming the file and line) for a malformed part, a row of another
    part, a task missing from its part, a part of another recording or a shard given twice, and
    :class:`MissingShardsError` when a shard is missing.

    Parameters
    ----------
    parts
        The parts' recording files (``rankkit record --shard I/N --out PART.jsonl``).
    """
    read = [_read_recording_part(Path(part)) for part in parts]
    if not read:
        raise MissingShardsError("merge: no parts given")
    order = shards_in_order([(str(path), part) for path, part, _ in read])
    rows = [(position, row) for i in order for position, row in read[i][2]]
    rows.sort(key=lambda item: item[0])  # stable: a task's rows keep the order they were recorded in
    return [row for _, row in rows]


def _read_recording_part(path: Path) -> tuple[Path, ShardPart, list[tuple[int, dict[str, Any]]]]:
    """A recording part's record, and its rows without their marks, each with its task's position."""
    from rankkit.judges.simulated.replay import read_rows

    part, rows, positions = None, [], set()
    for line, row in read_rows(path):
        marks = row.pop("shard", None)
        if marks is None:
            raise TaskFormatError(path, line, "shard", "missing: not a part of a sharded recording (record --shard)")
        position = marks.pop("position", None) if isinstance(marks, dict) else None
        claimed = shard_part_from_record(marks, f"{path}:{line}")
        if part is None:
            part = claimed
        if claimed != part:
            raise TaskFormatError(path, line, "shard", "not the part the file's first row belongs to")
        if isinstance(position, bool) or not isinstance(position, int) or position not in _positions(part):
            raise TaskFormatError(path, line, "shard.position", f"not a task position of shard {part.shard}")
        positions.add(position)
        rows.append((position, row))
    if part is None:
        raise TaskFormatError(path, None, None, "no rows: not a part of a sharded recording (record --shard)")
    missing = sorted(set(_positions(part)) - positions)
    if missing:
        raise TaskFormatError(path, None, "shard.position", f"no rows for the task at position {missing[0]}")
    return path, part, rows


def _positions(part: ShardPart) -> range:
    """The task positions of a part's shard."""
    return range(part.shard.index, part.total_tasks, part.shard.count)
