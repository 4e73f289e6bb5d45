"""The library in four calls: :func:`rank`, :func:`compare`, :func:`rejudge` and :func:`merge`.

:func:`rank` ranks one task, :func:`compare` compares strategies, :func:`rejudge` re-asks a run's
judgments of another judge, and :func:`merge` combines the parts of a sharded run.

More in ``docs/library.md``.

>>> import rankkit
>>> task = {"task_id": "q1", "prompt": "What is the capital of France?", "candidates": [
...     {"id": "a", "text": "Paris.", "human": {"score": 5}},
...     {"id": "b", "text": "Lyon.", "human": {"score": 1}},
...     {"id": "c", "text": "Paris, on the Seine.", "human": {"score": 4}}]}
>>> ranking = rankkit.rank(task, strategy="knockout", judge="sim:preset=gpt4", seed=0)
>>> ranking.ranking
['a', 'c', 'b']
>>> result = rankkit.compare([task], strategies=["knockout", "bt"], judge="sim:preset=gpt4")
>>> [(run.name, run.cost.comparisons, run.cost.shared_hits) for run in result.strategies]
[('knockout', 2, 0), ('bt', 6, 2)]
>>> report = rankkit.rejudge(result, judge="sim:preset=gpt4")  # the same judge: the same answers
>>> report["agreement"]["same_winner"], report["cost"]["judge_calls"], report["strategies"][1]["winners_changed"]
(1.0, 6, 0)
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping, Sequence
from os import PathLike
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task, load_tasks, tasks_from_records
from rankkit.judges.backends import Executor
from rankkit.judges.base import Judge
from rankkit.judgments.cache import JudgmentCache, NullCache
from rankkit.judgments.cache_postgres import open_judgment_cache
from rankkit.runs.results import RunResult
from rankkit.runs.shards import Shard, parse_shard
from rankkit.strategies.base import Ranking, Strategy, make_strategy


def rank(
    task: Task | Mapping[str, Any] | Sequence[str],
    strategy: str | Strategy = "knockout",
    judge: str | Judge | None = None,
    seed: int = 0,
    cache: str | PathLike[str] | JudgmentCache | None = None,
    prompt: str | None = None,
    max_judgments: int | float | None = None,
) -> Ranking:
    """Rank one task's candidates with one strategy.

    Returns the strategy's :class:`~rankkit.strategies.base.Ranking`: ``ranking`` (ids best first),
    ``scores``, ``champion`` and the typed per-candidate ``extras``.

    Parameters
    ----------
    task:
        A :class:`~rankkit.data.tasks.Task`, a dict in the task schema (one JSONL line of a data file),
        or a list of answer texts (then ``prompt`` is required; candidates are named ``c0``, ``c1``...).
    strategy:
        A spec string such as ``"knockout:order=both"`` or a strategy object.
    judge:
        A spec string such as ``"sim:preset=gpt4"`` or ``"hf:DIR"``, or a :class:`~rankkit.judges.base.Judge`;
        None: the default judge (the embedded SmolLM2 when installed).
    seed:
        Seeds the strategy's random choices.
    cache:
        A judgment cache file (its path, or an open :class:`~rankkit.judgments.cache.JudgmentCache`); None: none.
    prompt:
        The question, when ``task`` is a list of answer texts.
    max_judgments:
        As in :func:`compare`.
    """
    (one,) = _tasks([_as_task(task, prompt)])
    result = compare([one], [strategy], judge=judge, cache=cache, seed=seed, max_judgments=max_judgments)
    (outcome,) = result.strategies[0].tasks
    return Ranking(scores=outcome.scores, ranking=outcome.ranking, champion=outcome.champion, extras=outcome.extras)


def compare(
    tasks: Any,
    strategies: Sequence[str | Strategy] = ("knockout", "bt"),
    judge: str | Judge | None = None,
    cache: str | PathLike[str] | JudgmentCache | None = None,
    seed: int = 0,
    progress: bool = False,
    criterion: str | None = None,
    workers: int | None = None,
    data: str = "",
    max_judgments: int | float | None = None,
    shard: Shard | str | None = None,
    stream_judgments: str | PathLike[str] | None = None,
    executor: str | Executor = "local",
) -> RunResult:
    """Run several strategies on the same tasks and the same judge, sharing its judgments.

    Returns a :class:`~rankkit.runs.results.RunResult`: per strategy its cost, its agreement with the
    human scores (``metrics``) and every task's ranking; ``to_pandas()`` gives the long table.

    Parameters
    ----------
    tasks:
        A data file's path (JSONL, CSV, Parquet, a JSON array), a pandas DataFrame or Dataset in
        long form, or a list of :class:`~rankkit.data.tasks.Task` objects or task-schema dicts.
    strategies:
        Spec strings or strategy objects; each ranks every task on its own (its result does not
        depend on the others), and a judgment two of them ask for is paid for once.
    judge:
        A spec string or a :class:`~rankkit.judges.base.Judge`, as in :func:`rank`.
    cache:
        A judgment cache file (its path, or an open :class:`~rankkit.judgments.cache.JudgmentCache`); None: none.
    seed:
        Seeds the strategies' random choices.
    progress:
        Show a progress bar on stderr.
    criterion:
        The human score to compare with (default: the data's ``meta.main_score``, or its only one).
    workers:
        Tasks ranked at once (default: from the judge's capacity); results do not depend on it.
    data:
        How the result names the data (default: the path, when ``tasks`` is one).
    max_judgments:
        The most judgments the run may plan (None: 50,000; ``math.inf``: no limit); a run that
        plans more raises :class:`~rankkit.runs.scale.TooManyJudgments` before judging.
    shard:
        Rank only this worker's part of the tasks: a :class:`~rankkit.runs.shards.Shard` or ``"i/n"``
        (worker i of n, from 0); :func:`merge` combines the parts. None: every task.
    stream_judgments:
        The results file the run will be written to (``result.to_dict()``): each task's judgments go,
        as it finishes, to the sidecar beside it (``RESULTS.judgments.jsonl``) and the result keeps
        none of them (``rejudge`` and the analyses need ``read_results(RESULTS)``, which reads them back).
        None: the result keeps them (inline).
    executor:
        Where a judge given as a spec runs its model, when it is an in-process engine (hf, smollm2, vllm):
        ``"local"`` (this process), ``"ray"`` (Ray actors, one per GPU or CPU of the cluster at
        ``$RAY_ADDRESS``, else of a local one), or a :class:`~rankkit.judges.local.ray_executor.RayExecutor`.
        Results are the local run's.
    """
    loaded = _tasks(tasks, criterion)
    built = [_as_strategy(s) for s in strategies]
    if not built:
        raise SpecError("compare: no strategies given")
    part = parse_shard(shard) if isinstance(shard, str) else shard
    mine = part.select(loaded) if part is not None else loaded  # what this worker judges
    with _judge(judge, executor) as (judge_object, spec), _cache(cache) as cache_object:
        from rankkit.runs.scale import check_scale

        check_scale(mine, built, judge_object, max_judgments)  # before anything is judged
        expected = None
        if progress and not judge_object.simulated:  # a simulated judge is as fast as the estimate
            from rankkit.runs.plan import expected_judgments  # the dry run's machinery, for the bar's total

            expected = expected_judgments(mine, built, seed, judge_object)
        from rankkit.runs.runner import run

        label = data or (str(tasks) if isinstance(tasks, (str, PathLike)) else "")
        with _stream(stream_judgments) as stream:
            return run(
                loaded,
                built,
                judge_object,
                cache_object,
                seed=seed,
                progress=progress,
                judge_spec=spec,
                data=label,
                workers=workers,
                expected=expected,
                shard=part,
                stream=stream,
            )


def merge(parts: Sequence[RunResult | str | PathLike[str]]) -> RunResult:
    """The whole run's result from the results of its shards (``compare(..., shard="i/n")``), in any order.

    It equals the single-process run's except for the timing (``wall_seconds``, ``warm_up_seconds``
    and each strategy's ``seconds``). Parts of another run, a shard given twice or missing, and a
    malformed part are refused (:class:`~rankkit.errors.RankkitError`, naming the file).

    Parameters
    ----------
    parts:
        The parts' results files (``rankkit compare --shard i/n --out PART``) or their results.
    """
    from rankkit.runs.merge import merge_parts

    return merge_parts(parts)


def rejudge(
    results: RunResult | str | PathLike[str],
    judge: str | Judge,
    cache: str | PathLike[str] | JudgmentCache | None = None,
    progress: bool = False,
    workers: int | None = None,
) -> dict[str, Any]:
    """Re-ask every judgment a finished run used of another judge, and compare the rankings.

    Returns :func:`rankkit.runs.rejudging.rejudge`'s report: the cost of the new judgments, per-judgment
    agreement, per strategy the rank correlation of the two rankings and the winners that changed.

    Parameters
    ----------
    results:
        The run: a :class:`~rankkit.runs.results.RunResult` or the path of a ``rankkit compare --out``
        file. Its own judge is never rebuilt from the file.
    judge:
        The judge or panel to ask again: a spec string or a :class:`~rankkit.judges.base.Judge`.
    cache:
        As in :func:`rank`: an interrupted rejudge resumes from it without paying twice.
    progress:
        Show a progress bar on stderr.
    workers:
        Tasks judged at once (default: from the judge's capacity); results do not depend on it.
    """
    from rankkit.runs.rejudging import rejudge as rejudge_run
    from rankkit.runs.results import read_results

    if judge is None:
        raise SpecError("rejudge: give the judge to ask again (a spec string or a Judge)")
    run_result = results if isinstance(results, RunResult) else read_results(results)
    if run_result.judgments_file is not None:  # a streamed run's own result kept no judgment to ask again
        raise SpecError(
            f"rejudge: the run streamed its judgments to {run_result.judgments_file}; pass its results file"
        )
    with _judge(judge) as (judge_object, spec), _cache(cache) as cache_object:
        return rejudge_run(run_result, judge_object, cache_object, judge_spec=spec, progress=progress, workers=workers)


# ---------------------------------------------------------------------------------------------
# What the calls accept


def _as_task(task: Any, prompt: str | None) -> Task | Mapping[str, Any]:
    if isinstance(task, (Task, Mapping)):
        return task
    if isinstance(task, Sequence) and not isinstance(task, str) and all(isinstance(t, str) for t in task):
        if prompt is None:
            raise SpecError("rank: a list of answer texts needs prompt= (the question they answer)")
        return Task(
            task_id="task",
            prompt=prompt,
            candidates=tuple(Candidate(id=f"c{i}", text=text) for i, text in enumerate(task)),
        )
    raise SpecError(
        f"rank: task must be a Task, a dict in the task schema or a list of answer texts, got {type(task).__name__}"
    )


def _tasks(tasks: Any, criterion: str | None = None) -> list[Task]:
    """Tasks from any accepted form (see :func:`compare`)."""
    if isinstance(tasks, Sequence) and not isinstance(tasks, str) and tasks:
        if all(isinstance(t, Task) for t in tasks):
            return list(tasks)
        if all(isinstance(t, Mapping) and "candidates" in t for t in tasks):
            return tasks_from_records(tasks, criterion)
    return load_tasks(tasks, criterion=criterion)  # a file, a table, long rows, or a clear error


def _as_strategy(strategy: Any) -> Strategy:
    if isinstance(strategy, Strategy):
        return strategy
    if isinstance(strategy, str):
        return make_strategy(strategy)
    raise SpecError(f"strategy must be a spec string or a rankkit Strategy, got {type(strategy).__name__}")


@contextlib.contextmanager
def _judge(judge: Any, executor: str | Executor = "local") -> Iterator[tuple[Judge, str]]:
    """The judge and its spec; a judge built here from a spec (its model run by ``executor``) is closed afterwards."""
    if isinstance(judge, Judge):
        if executor != "local":
            raise SpecError("executor: give the judge as a spec string (a built judge already runs its model)")
        yield judge, judge.spec or judge.description  # make_judge records its spec
        return
    if judge is not None and not isinstance(judge, str):
        raise SpecError(f"judge must be a spec string or a rankkit Judge, got {type(judge).__name__}")
    from rankkit.judges import default_judge_spec, make_judge

    spec = judge or default_judge_spec()
    built = make_judge(spec, executor=_executor(executor))
    try:
        yield built, spec
    finally:
        built.close()


def _executor(executor: str | Executor) -> Executor | None:
    """The executor named ``executor`` (None: this process)."""
    if executor == "local":
        return None
    if executor == "ray":
        from rankkit.judges.local.ray_executor import RayExecutor

        return RayExecutor()
    if isinstance(executor, str):
        raise SpecError(f"executor must be 'local', 'ray' or an executor object, got {executor!r}")
    return executor


@contextlib.contextmanager
def _cache(cache: Any) -> Iterator[JudgmentCache | NullCache]:
    """The judgment cache; one opened here from a path is closed (committed) afterwards."""
    if cache is None:
        yield NullCache()
    elif isinstance(cache, (JudgmentCache, NullCache)):
        yield cache
    elif isinstance(cache, (str, PathLike)):
        with open_judgment_cache(cache) as opened:
            yield opened
    else:
        raise SpecError(f"cache must be a path or a JudgmentCache, got {type(cache).__name__}")


@contextlib.contextmanager
def _stream(results: str | PathLike[str] | None) -> Iterator[Any]:
    """The judgments' sidecar beside ``results`` (None: no stream), closed afterwards."""
    if results is None:
        yield None
        return
    from rankkit.runs.judgment_stream import JudgmentStream

    stream = JudgmentStream(results)
    try:
        yield stream
    finally:
        stream.close()
