"""Run strategies over tasks on one judge and one judgment memo.

:func:`run` is what :func:`rankkit.compare`, ``rankkit compare`` and ``rankkit rank`` call. Every
strategy ranks every task with its own :class:`~rankkit.strategies.matches.MatchSource` and a generator
seeded by (seed, task id), and asks for judgments through the run's one
:class:`~rankkit.judgments.memo.JudgmentMemo`, so a judgment is paid for once per run (and once ever, with a
cache) while what each strategy is given depends only on its own requests: a strategy's result is
the same alone or beside any others.
"""

from __future__ import annotations

import collections
import dataclasses
import importlib
import itertools
import sys
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from typing import Any, TypeVar

from tqdm import tqdm

from rankkit.data.tasks import Task, task_rng
from rankkit.judges.base import Judge
from rankkit.judgments.cache import JudgmentCache, NullCache
from rankkit.judgments.dispatch import Dispatcher
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.spend import Meter
from rankkit.judgments.values import ParseStatus
from rankkit.runs.judgment_stream import JudgmentStream
from rankkit.runs.plan.usd import judge_meter
from rankkit.runs.results import RunResult, StrategyRun, TaskResult
from rankkit.runs.shards import Shard, ShardPart, run_fingerprint
from rankkit.stats.metrics import evaluate
from rankkit.strategies._spend import unpriced
from rankkit.strategies.base import CandidateExtras, Strategy, check_compatible
from rankkit.strategies.matches import Comparison, MatchSource

R = TypeVar("R")


def run(
    tasks: Sequence[Task],
    strategies: Sequence[Strategy],
    judge: Judge,
    cache: JudgmentCache | NullCache | None = None,
    seed: int = 0,
    progress: bool = False,
    judge_spec: str = "",
    data: str = "",
    workers: int | None = None,
    expected: tuple[int, str] | None = None,
    shard: Shard | None = None,
    stream: JudgmentStream | None = None,
) -> RunResult:
    """Rank every task with every strategy.

    Returns a :class:`~rankkit.runs.results.RunResult` with one :class:`~rankkit.runs.results.StrategyRun` per
    strategy.

    Parameters
    ----------
    tasks, strategies, judge:
        What to rank, how, and who judges.
    cache:
        The persistent :class:`~rankkit.judgments.cache.JudgmentCache` (None: none).
    seed:
        Seeds every strategy's generator, per task.
    progress:
        Show a progress bar on stderr (the CLI does; library calls default to quiet).
    expected:
        The judgments the run is expected to use and how sure that is, ``(total, mark)`` with mark
        ``""`` exact, ``"≤"`` at most, ``"~"`` an estimate: the bar's total (the CLI gives
        :func:`rankkit.runs.plan.expected_judgments`); None counts tasks.
    judge_spec, data:
        Recorded in the result (how the judge and data were named).
    workers:
        How many tasks are ranked at once (see :func:`map_tasks`). Results do not depend on it.
    shard:
        Rank only this shard's part of ``tasks`` (:class:`~rankkit.runs.shards.Shard`); the result
        records which part it is, for :func:`rankkit.runs.merge.merge_parts`. None: every task.
    stream:
        Where each task's judgments go as it finishes; the result then keeps none of them (its
        memory is the summaries', whatever the number of judgments). None: kept in the result.
    """
    check_compatible(strategies, judge)  # before any judgment is paid for
    check_priced(strategies, judge_meter(judge))  # a usd budget needs a price: refused before any judgment
    judge.check_tasks(tasks)  # a judge that cannot judge this data says so now (sim: human scores)
    part = None if shard is None else part_of(tasks, strategies, judge, seed, shard)
    tasks = tasks if shard is None else shard.select(tasks)
    warm_up_seconds = warm_up()  # one-off start-up, charged to no strategy
    started = time.perf_counter()
    bar = RunProgress(len(tasks), disable=not progress, expected=expected)
    judge.show_progress(bar.note)  # a batching judge: its batches' state on the bar
    runs = [StrategyRun(strategy=s) for s in strategies]

    def rank_task(task: Task, memo: JudgmentMemo) -> list[tuple[TaskResult, float]]:
        results = [_rank_one(task, strategy_run, memo, bar, seed) for strategy_run in runs]
        bar.task_done(task.task_id)
        return results

    stats: dict[str, Any] = {}
    try:
        for results in map_tasks(tasks, rank_task, judge, cache, workers, stats):
            for strategy_run, (task_result, seconds) in zip(runs, results):
                _add(strategy_run, task_result, seconds, stream)
    finally:
        bar.close()
    add_metrics(runs, tasks)
    return RunResult(
        judge=judge,
        judge_spec=judge_spec,
        data=data,
        seed=seed,
        tasks=list(tasks),
        strategies=runs,
        dispatch=stats,
        wall_seconds=time.perf_counter() - started,
        warm_up_seconds=warm_up_seconds,
        shard=part,
        judgments_file=None if stream is None else stream.name,
        streamed_verdict_paths={} if stream is None else dict(stream.verdict_paths),
    )


def _add(strategy_run: StrategyRun, task_result: TaskResult, seconds: float, stream: JudgmentStream | None) -> None:
    """Count a finished task in its strategy's run; with a stream, its judgments are written and not kept."""
    strategy_run.seconds += seconds
    strategy_run.cost.add(task_result.cost)
    strategy_run.tasks.append(task_result if stream is None else stream.write(strategy_run.name, task_result))


def part_of(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, seed: int, shard: Shard) -> ShardPart:
    """What the part of ``shard`` records: the whole run's identity, which every shard computes alike."""
    return ShardPart(shard, len(tasks), run_fingerprint(tasks, strategies, judge.fingerprint, seed))


def add_metrics(runs: Sequence[StrategyRun], tasks: Sequence[Task]) -> None:
    """Set each strategy's metrics: its agreement with the tasks' human scores."""
    by_id = {t.task_id: t for t in tasks}
    for strategy_run in runs:
        strategy_run.metrics = evaluate(
            [(r.scores, r.ranking, by_id[r.task_id].human_scores()) for r in strategy_run.tasks]
        )


def check_priced(strategies: Sequence[Strategy], meter: Meter) -> None:
    """Refuse a budget in USD when the judge has no price (:class:`SpecError`, exit 2)."""
    for strategy in strategies:
        if strategy.budget_in() == "usd" and not meter.priced:
            raise unpriced(strategy.name, strategy.budget)  # type: ignore[attr-defined]


def _rank_one(
    task: Task, strategy_run: StrategyRun, memo: JudgmentMemo, bar: RunProgress, seed: int
) -> tuple[TaskResult, float]:
    """One strategy's ranking of one task, with its own match source on the run's memo, and the
    seconds it took."""
    source = MatchSource(task, memo, strategy=strategy_run.name, progress=bar, meter=judge_meter(memo.judge))
    started = time.perf_counter()
    ranking = strategy_run.strategy.rank(task, source, task_rng(seed, task.task_id))
    seconds = time.perf_counter() - started
    return (
        TaskResult(
            task_id=task.task_id,
            scores={k: float(v) for k, v in ranking.scores.items()},
            ranking=ranking.ordered(task.candidate_ids),
            champion=ranking.champion,
            extras=with_undecided(ranking.extras, source.comparisons, source.group_comparisons, strategy_run.strategy),
            comparisons=source.comparisons,
            cost=source.cost,
            group_comparisons=source.group_comparisons,
            grades=source.grades,
        ),
        seconds,
    )


#: The scientific libraries strategies and metrics import on first use (about 1 s together on a
#: laptop): imported before the clock starts, so that no strategy's ``seconds`` carry them.
WARM_UP_IMPORTS = (
    "numpy",
    "scipy.linalg",
    "scipy.optimize",
    "scipy.sparse.linalg",
    "scipy.special",
    "scipy.stats",
    "networkx",
    "choix",
)


def warm_up() -> float:
    """Seconds spent importing :data:`WARM_UP_IMPORTS` (0 once they are imported): one-off start-up,
    reported apart from every strategy. A judge's own first contact (a hosted API's verdict probe) is
    not made here, since a run whose judgments are all cached must not contact the server."""
    started = time.perf_counter()
    for name in WARM_UP_IMPORTS:
        importlib.import_module(name)
    return time.perf_counter() - started


def map_tasks(
    tasks: Sequence[Task],
    work: Callable[[Task, JudgmentMemo], R],
    judge: Judge,
    cache: JudgmentCache | NullCache | None = None,
    workers: int | None = None,
    stats: dict[str, Any] | None = None,
) -> Iterator[R]:
    """Yield ``work(task, memo)`` for every task, in task order, with the judge kept busy.

    This is how anything that judges many tasks runs (``run``, the leaderboards): one
    :class:`~rankkit.judgments.memo.JudgmentMemo` over ``cache`` bound to the judge, and, when the judge
    has ``capacity`` > 1, up to ``workers`` tasks in progress at once feeding one
    :class:`~rankkit.judgments.dispatch.Dispatcher`. ``work`` asks for judgments through the memo it is
    given (``MatchSource(task, memo)``) and must not share mutable state across tasks.

    Buffered cache writes are committed when the iteration ends, however it ends.

    Yields ``work(task, memo)``, in task order.

    Parameters
    ----------
    tasks
        The tasks.
    work
        What to do with one task.
    judge
        The judge.
    cache
        Where judgments are stored (None: memory only).
    workers
        Tasks in progress at once (default: twice the judge's capacity, since a strategy often has fewer
        requests open than the judge has slots; 1, with no threads, for capacity 1).
    stats
        Filled, when given, with ``workers``, ``capacity`` and (concurrent runs) ``batches`` (the size
        of every judge call) and ``max_in_flight``.
    """
    capacity = max(1, int(judge.capabilities.capacity))
    if workers is None:
        workers = 1 if capacity == 1 else 2 * capacity
    workers = max(1, min(int(workers), len(tasks)))
    dispatcher = Dispatcher(capacity, judge.capabilities.fills_batches) if workers > 1 else None
    memo = JudgmentMemo(judge, cache, dispatcher)
    try:
        if dispatcher is None:
            for task in tasks:
                yield work(task, memo)
        else:
            yield from _work_concurrently(tasks, lambda task: work(task, memo), dispatcher, workers)
    finally:
        if dispatcher is not None:
            dispatcher.close()
        memo.flush()
        if stats is not None:
            stats.update(workers=workers, capacity=capacity)
            if dispatcher is not None:
                stats.update(batches=list(dispatcher.batches), max_in_flight=dispatcher.max_in_flight)


def _work_concurrently(
    tasks: Sequence[Task], work: Callable[[Task], Any], dispatcher: Dispatcher, workers: int
) -> Iterator[Any]:
    """Yield ``work(task)`` for every task, in task order, with up to ``workers`` tasks in
    progress at once. The first failure cancels what is queued and is re-raised."""

    remaining = len(tasks)
    lock = threading.Lock()
    dispatcher.expect_workers(min(workers, remaining))

    def run_one(task: Task) -> Any:
        nonlocal remaining
        try:
            return work(task)
        finally:
            with lock:
                remaining -= 1
                dispatcher.expect_workers(min(workers, remaining))

    with ThreadPoolExecutor(workers, thread_name_prefix="rankkit-task") as pool:
        window: collections.deque[Future] = collections.deque()
        queue = iter(tasks)
        try:
            # A bounded window of submitted tasks keeps memory flat on very many tasks while
            # results come back in task order.
            for task in itertools.islice(queue, 2 * workers):
                window.append(pool.submit(run_one, task))
            while window:
                done = window.popleft()
                try:
                    yield done.result()
                except BaseException as error:
                    dispatcher.cancel(error)
                    raise
                for task in itertools.islice(queue, 1):
                    window.append(pool.submit(run_one, task))
        finally:
            for future in window:
                future.cancel()


#: The bar's description for each mark of its total: a total that is a bound or an estimate says
#: so, as does the ETA computed from it (the run may finish early).
PROGRESS_LABELS = {"": "judging", "≤": "judging (total at most)", "~": "judging (total estimated)"}


class RunProgress:
    """The run's progress bar, in judgments: how many were used so far (of ``expected`` when
    known, labelled "at most" or "estimated" when it is not exact), their rate and ETA, how many
    the judge was paid for and how many came from the cache or were shared with another strategy
    instead; and tasks done of all."""

    def __init__(self, total_tasks: int, disable: bool, expected: tuple[int, str] | None = None):
        self._lock = threading.Lock()
        #: Whether strategies with a stopping target should send forecasts (only when the bar is shown).
        self.shows_forecast = not disable
        self._forecasts: dict[tuple[str, str], Any] = {}  # (task, strategy) -> its latest Forecast
        # Without an expected count of judgments the bar counts tasks, so it always has a total.
        self._counts_judgments = expected is not None
        total, mark = expected if expected is not None else (total_tasks, "")
        self._bar = tqdm(
            total=total,
            desc=PROGRESS_LABELS[mark],
            unit="judgment" if self._counts_judgments else "task",
            file=sys.stderr,
            disable=disable,
            dynamic_ncols=True,
            mininterval=0.5,
        )
        self._tasks, self._total_tasks = 0, total_tasks
        self._paid = self._cached = self._reused = 0
        self._usd = 0.0  # what the judgments paid for so far cost (a priced judge's usage)
        self._note = ""

    def judged(self, used: int, paid: int, cached: int, reused: int, usd: float = 0.0) -> None:
        """Count judgments used (``used`` advances the bar) and where they came from.

        Parameters
        ----------
        used
            Judgments used.
        paid
            Of them, asked of the judge.
        cached
            Of them, read from the cache.
        reused
            Of them, shared with another strategy in this run.
        usd
            What the paid ones cost.
        """
        with self._lock:
            self._paid += paid
            self._usd += usd
            self._cached += cached
            self._reused += reused
            if self._counts_judgments:
                self._bar.update(used)

    def forecast(self, task_id: str, strategy: str, remaining: Any) -> None:
        """A stopping strategy's latest :class:`~rankkit.strategies._stopping.Forecast` of the
        judgments its task still needs to reach the target (shown summed over the tasks in progress).

        Parameters
        ----------
        task_id
            The task.
        strategy
            The strategy's label.
        remaining
            Its forecast.
        """
        with self._lock:
            self._forecasts[(task_id, strategy)] = remaining
            self._bar.set_postfix_str(self._postfix(), refresh=False)

    def _postfix(self) -> str:
        text = (
            f"tasks={self._tasks}/{self._total_tasks} judge_calls={self._paid} "
            f"cache_hits={self._cached} shared_hits={self._reused}"
        )
        if self._forecasts:
            total = None
            for remaining in self._forecasts.values():
                total = remaining if total is None else total + remaining
            # dollars at the mean price of the judgments paid for so far (None until one was priced)
            price = self._usd / self._paid if self._usd and self._paid else None
            text += f" to_target={total.describe(price)} ({len(self._forecasts)} in progress)"
        return text + (f" {self._note}" if self._note else "")

    def task_done(self, task_id: str | None = None) -> None:
        """Count one task done (and drop its strategies' forecasts).

        Parameters
        ----------
        task_id
            The task, when known.
        """
        with self._lock:
            self._tasks += 1
            if not self._counts_judgments:
                self._bar.update(1)
            if task_id is not None:  # its strategies have stopped: nothing more to forecast
                self._forecasts = {key: value for key, value in self._forecasts.items() if key[0] != task_id}
            self._show(refresh=False)

    def note(self, text: str) -> None:
        """Show ``text`` after the counts (a batching judge's batch: its state and request counts).

        Parameters
        ----------
        text
            The note.
        """
        with self._lock:
            self._note = text
            self._show(refresh=True)

    def _show(self, refresh: bool) -> None:
        self._bar.set_postfix_str(self._postfix(), refresh=refresh)

    def close(self) -> None:
        """Close the bar (its total set to the judgments used when it was a bound or an estimate)."""
        if 0 < self._bar.n < self._bar.total:  # not at 0: tqdm shows a total of 0 as no total
            self._bar.total = self._bar.n  # the total was a bound or an estimate: the run is complete
            self._bar.refresh()
        self._bar.close()


def with_undecided(
    extras: Mapping[str, CandidateExtras],
    comparisons: Sequence[Comparison],
    group_comparisons: Sequence[Any] = (),
    strategy: Strategy | None = None,
) -> dict[str, CandidateExtras]:
    """A strategy's candidate extras with ``undecided``: each candidate's failed comparisons (pairwise,
    and k-way judgments it was shown in), so a text that breaks the judge shows in the results
    (candidates without one are left as they are).

    Returns the extras, ``undecided`` set where a candidate had failures.

    Parameters
    ----------
    extras
        The strategy's extras per candidate id.
    comparisons
        The pairwise comparisons it used.
    group_comparisons
        The k-way judgments it used.
    strategy
        The strategy (to check its extras type).

    Raises
    ------
    TypeError
        ``strategy`` reports extras that are not its :attr:`~rankkit.strategies.base.Strategy.extras_type`
        (its results could not be read back).
    """
    extras_type = strategy.extras_type if strategy is not None else CandidateExtras
    known = {f.name for f in dataclasses.fields(extras_type)}
    for cid, reported in extras.items():
        if not isinstance(reported, extras_type) or any(f.name not in known for f in dataclasses.fields(reported)):
            raise TypeError(
                f"strategy {strategy.name!r} reports {type(reported).__name__} extras for {cid!r}; "
                f"declare extras_type = {type(reported).__name__} in the strategy class"
            )
    counts: dict[str, int] = {}
    failed = [(c.first, c.second) for c in comparisons if c.verdict.status is ParseStatus.FAILED]
    failed += [tuple(g.shown) for g in group_comparisons if g.judgment.status is ParseStatus.FAILED]
    for shown in failed:
        for cid in shown:
            counts[cid] = counts.get(cid, 0) + 1
    merged = dict(extras)
    for cid, count in counts.items():
        merged[cid] = dataclasses.replace(merged.get(cid, extras_type()), undecided=count)
    return merged
