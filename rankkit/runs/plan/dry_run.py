"""The dry run: what each strategy of a run will ask the judge, and where each judgment would come from.

The run itself on a stand-in judge and a read-only cache, repeated under every stand-in policy
to tell exact figures from bounds and estimates. More in ``docs/dry-run.md``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from rankkit.data.tasks import Task
from rankkit.errors import RankkitError
from rankkit.judges.base import Judge
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judgments.cache import NullCache
from rankkit.runs.plan.batches import batch_note
from rankkit.runs.plan.stand_in import POLICIES, ReadOnlyCache, StandInJudge
from rankkit.runs.plan.tokens import CHARS_PER_TOKEN, PromptSizes
from rankkit.runs.plan.usd import ASSUMPTIONS as USD_ASSUMPTIONS
from rankkit.runs.plan.usd import estimate_usd, judge_price
from rankkit.strategies.base import Strategy, most_judgments
from rankkit.strategies.matches import Cost

if TYPE_CHECKING:  # results imports every strategy; planning reads only the runs it gets
    from rankkit.runs.results import TaskResult

#: The most judgments a dry run simulates (each once per stand-in policy, about 0.15 ms each);
#: a larger run is counted by arithmetic where that is exact, else refused.
SIMULATION_LIMIT = 20_000


class DryRunTooLarge(RankkitError, ValueError):
    """A dry run too large to simulate and not countable by arithmetic (exit code 2)."""


#: Why a figure is marked, shown in the row's note.
BOUND_NOTE = "its path depends on verdicts: at most its declared max_judgments"
ESTIMATE_NOTE = "its path depends on verdicts: the most seen under stand-in verdicts (no max_judgments declared)"


def column_counts(cost: Cost) -> dict[str, int]:
    """A run's cost on one task as the columns of :data:`COUNTS`.

    ``shared`` is what was used and neither cached nor new, so a judgment the strategy reuses
    from its own earlier rounds is not counted twice.
    """
    used = cost.comparisons + cost.grades
    return {
        "comparisons": cost.comparisons,
        "grades": cost.grades,
        "cached": cost.cache_hits,
        "shared": used - cost.cache_hits - cost.judge_calls,
        "new": cost.judge_calls,
    }


def asked_of(task_result: TaskResult) -> tuple[tuple[str, ...], ...]:
    """What a strategy asked on a task, in order: each comparison (first, second) as shown, then each k-way group."""
    return (*((c.first, c.second) for c in task_result.comparisons), *(g.shown for g in task_result.group_comparisons))


#: The figures that are counted (tokens are estimated, and follow ``new``).
COUNTS = ("comparisons", "grades", "cached", "shared", "new")
#: The counts of judgments used, whatever their origin.
USED = ("comparisons", "grades")


@dataclass
class PlanRow:
    """One strategy's figures over all tasks (columns in ``docs/dry-run.md``).

    Parameters
    ----------
    prompt_tokens
        Estimated prompt tokens of the new judgments (None for judges without prompts).
    bounds
        The figures that are not exact, each with ``≤`` (at most) or ``~`` (an estimate).
    notes
        Why figures are not exact.
    """

    strategy: str
    comparisons: int = 0
    grades: int = 0
    cached: int = 0
    shared: int = 0
    new: int = 0
    prompt_tokens: float | None = None
    usd: float | None = None  # estimated USD of the new judgments (rankkit.runs.plan.usd); None: no price
    bounds: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    #: The judgments a strategy with a stopping target is forecast to need (:func:`target_forecast`).
    to_target: Any = None
    #: Answers one judgment shows (2 a comparison, k a k-way judgment, 1 a grade): the forecast in answers.
    answers_per_judgment: float = 2.0

    @property
    def exact(self) -> bool:
        return not self.bounds

    def mark(self, figure: str, symbol: str, note: str = "") -> None:
        """Mark ``figure`` as a bound (``≤``) or estimate (``~``), adding ``note`` once; mixed marks give ``~``."""
        previous = self.bounds.get(figure)
        self.bounds[figure] = symbol if previous in (None, symbol) else "~"
        if note and note not in self.notes:
            self.notes.append(note)

    def as_dict(self) -> dict[str, Any]:
        """The row by column name, for csv, json and the table (tokens rounded, ``est_usd`` to 4 decimals)."""
        tokens = None if self.prompt_tokens is None else round(self.prompt_tokens)
        return {
            "strategy": self.strategy,
            "comparisons": self.comparisons,
            "grades": self.grades,
            "cached": self.cached,
            "shared": self.shared,
            "new": self.new,
            "est_prompt_tokens": tokens,
            "est_usd": None if self.usd is None else round(self.usd, 4),
            "exact": self.exact,
            "bounds": " ".join(f"{k}{v}" for k, v in self.bounds.items()),
            "note": "; ".join(self.notes),
        }


@dataclass
class DryRun:
    """The figures of a dry run: one row per strategy, judge-level notes and context warnings."""

    rows: list[PlanRow]
    tasks: int
    judge: str
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def new(self) -> int:
        return sum(row.new for row in self.rows)

    @property
    def exact(self) -> bool:
        return all(row.exact for row in self.rows)


def dry_run(
    tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, cache: Any = None, seed: int = 0
) -> DryRun:
    """Work out what ``run(tasks, strategies, judge, cache, seed)`` would ask, without asking.

    Parameters
    ----------
    judge
        Only its identity is used (``make_judge(spec, stand_in=True)`` avoids loading a model).
    cache
        The persistent cache, read and never written (None: no cache).

    Returns
    -------
    DryRun
        One :class:`PlanRow` per strategy, in order.

    Raises
    ------
    DryRunTooLarge
        Over :data:`SIMULATION_LIMIT` judgments and not countable by arithmetic.
    """
    sizes = PromptSizes(judge) if PromptSizes.applies(judge) else None
    cache_empty = cache is None or len(cache) == 0
    if (planned := planned_judgments(tasks, strategies)) > SIMULATION_LIMIT:
        rows = [arithmetic_row(strategies, tasks, judge, sizes, cache_empty, planned)]
        return DryRun(
            rows=rows,
            tasks=len(tasks),
            judge=judge.description,
            notes=judge_notes(judge, sizes),
            warnings=over_context(tasks, judge, sizes),
        )
    runs = [stand_in_run(tasks, strategies, judge, cache, seed, policy, sizes) for policy in POLICIES]
    rows = []
    for index, strategy in enumerate(strategies):
        row = PlanRow(strategy.label, prompt_tokens=0.0 if sizes else None)
        for task_index, task in enumerate(tasks):
            # Per policy, the figures on this task of every strategy up to this one (this one last).
            history = [[per_task[task_index] for per_task in figures[: index + 1]] for figures in runs]
            add_task(row, strategy, task, history, cache_empty, sizes)
        if row.prompt_tokens is not None:
            row.usd = estimate_usd(judge, strategy.kind, row.new, row.prompt_tokens)
        row.to_target = target_forecast(strategy, tasks)
        row.answers_per_judgment = answers_per_judgment(strategy)
        rows.append(row)
    notes = judge_notes(judge, sizes)
    batches = batch_note(tasks, strategies, judge, seed)  # batch=true: the sequential batches, its wall time
    return DryRun(
        rows=rows,
        tasks=len(tasks),
        judge=judge.description,
        notes=notes + ([batches] if batches else []),
        warnings=over_context(tasks, judge, sizes),
    )


def planned_judgments(tasks: Sequence[Task], strategies: Sequence[Strategy]) -> int:
    """The most judgments the run can ask (as :func:`rankkit.runs.scale.plan_scale` counts them)."""
    total = 0
    for task in tasks:
        n = len(task.candidates)
        counts, _ = most_judgments(n, strategies)
        total += min(sum(count for _, count in counts), n * (n - 1) + n)
    return total


def arithmetic_row(
    strategies: Sequence[Strategy],
    tasks: Sequence[Task],
    judge: Judge,
    sizes: PromptSizes | None,
    cache_empty: bool,
    planned: int,
) -> PlanRow:
    """The row of a run too large to simulate, counted by arithmetic.

    Only one strategy with a fixed number of distinct requests on an empty cache is countable;
    tokens are the task's mean prompt per judgment.

    Raises
    ------
    DryRunTooLarge
        Any other run; the message names ``planned``.
    """
    (strategy, *others) = strategies
    n_values = {len(task.candidates) for task in tasks}
    countable = (
        not others
        and cache_empty
        and strategy.distinct_requests
        and all(strategy.exact_judgments(n) is not None for n in n_values)
    )
    if not countable:
        raise DryRunTooLarge(
            f"this run plans up to {planned:,} judgments: too many to simulate in a dry run (the limit "
            f"is {SIMULATION_LIMIT:,}, each simulated under every stand-in policy); plan fewer candidates "
            f"or tasks at a time (--limit), or one strategy that asks a fixed number of judgments on an "
            f"empty cache (bt, elo), which is counted instead"
        )
    row = PlanRow(strategy.label, prompt_tokens=0.0 if sizes else None)
    kind = "point" if strategy.kind == "pointwise" else "pair"
    for task in tasks:
        count = strategy.exact_judgments(len(task.candidates))
        row.comparisons += count if kind == "pair" else 0
        row.grades += count if kind == "point" else 0
        row.new += count
        if sizes is not None:
            row.prompt_tokens += count * sizes.mean(task, kind)
            longest = sorted(task.candidates, key=lambda candidate: candidate.length)[-2:]
            sizes.pair(task, *longest) if kind == "pair" else sizes.point(task, longest[-1])
    if row.prompt_tokens is not None:
        row.usd = estimate_usd(judge, strategy.kind, row.new, row.prompt_tokens)
    row.to_target = target_forecast(strategy, tasks)
    row.answers_per_judgment = answers_per_judgment(strategy)
    return row


def answers_per_judgment(strategy: Strategy) -> float:
    """Answers one of the strategy's judgments shows: 1 a grade, k a k-way judgment, 2 a comparison."""
    if strategy.kind == "pointwise":
        return 1.0
    return float(getattr(strategy, "k", 2)) if strategy.kind == "kway" else 2.0


def target_forecast(strategy: Strategy, tasks: Sequence[Task]) -> Any:
    """The judgments a strategy with a stopping target is forecast to need on ``tasks`` (a prior-based
    estimate), or None when it has no target or a task has no forecast.
    """
    forecast = getattr(strategy, "forecast_judgments", None)
    if forecast is None:
        return None
    from rankkit.strategies._stopping import task_seed

    total = None
    for task in tasks:
        one = forecast(len(task.candidates), task_seed(task.task_id))
        if one is None:
            return None
        total = one if total is None else total + one
    return total


def over_context(tasks: Sequence[Task], judge: Judge, sizes: PromptSizes | None) -> list[str]:
    """One warning per task whose largest prompt would not fit the LLM judge's context.

    Empty when the context is unknown; sizes are estimates, so a prompt near the limit may go either way.
    """
    context = judge.runtime.context if isinstance(judge, LLMJudge) else None
    if sizes is None or context is None:
        return []
    limit, setting = context
    return [
        f"task {task.task_id!r}: its largest prompt is about {sizes.largest[task.task_id]:,} tokens (estimated), "
        f"past the judge's context of {limit:,} tokens ({setting}): the run would stop there (exit 2)"
        for task in tasks
        if sizes.largest.get(task.task_id, 0) > limit
    ]


def task_context(task: Task, history: Sequence[Sequence[TaskResult]], cache_empty: bool) -> set[str]:
    """What holds on a task for a strategy whatever the verdicts.

    ``all_cached`` (nothing new under any policy), ``first_on_task`` (no earlier strategy used a
    judgment on it), ``pairs_covered`` (earlier strategies asked every ordered pair), ``cache_empty``.
    ``history`` holds, per policy, every strategy's result up to this one (this one last).
    """
    n = len(task.candidates)
    earlier = [result.cost for policy in history for result in policy[:-1]]
    context = {"cache_empty"} if cache_empty else set()
    if not any(result.cost.judge_calls for policy in history for result in policy):
        context.add("all_cached")
    if not any(cost.comparisons + cost.grades for cost in earlier):
        context.add("first_on_task")
    if all(
        len({pair for result in policy[:-1] for pair in asked_of(result) if len(pair) == 2}) == n * (n - 1)
        for policy in history
    ):
        context.add("pairs_covered")
    return context


def stand_in_run(
    tasks: Sequence[Task],
    strategies: Sequence[Strategy],
    judge: Judge,
    cache: Any,
    seed: int,
    policy: str,
    sizes: PromptSizes | None = None,
) -> list[list[TaskResult]]:
    """Each strategy's results per task on stand-in verdicts of ``policy`` (the cache never written)."""
    from rankkit.runs.runner import run  # the runner pulls in the metrics, which listing plans never needs

    # --no-cache remembers nothing across strategies beyond the run's own memo; a cache does.
    memo = NullCache() if cache is None or isinstance(cache, NullCache) else ReadOnlyCache(cache)
    result = run(tasks, strategies, StandInJudge(judge, policy, sizes), memo, seed=seed, progress=False)
    return [list(strategy_run.tasks) for strategy_run in result.strategies]


#: One figure of one task: its value, and its mark ("" exact, "≤" at most, "~" an estimate).
Estimate = tuple[int, str]


def add_task(
    row: PlanRow,
    strategy: Strategy,
    task: Task,
    history: Sequence[Sequence[TaskResult]],
    cache_empty: bool,
    sizes: PromptSizes | None,
) -> None:
    """Add one task's figures and the prompt tokens of its new judgments to ``row``."""
    observed = [policy[-1] for policy in history]
    figures = task_figures(strategy, task, observed, task_context(task, history, cache_empty))
    for figure, (value, mark) in figures.items():
        setattr(row, figure, getattr(row, figure) + value)
        if mark:
            row.mark(figure, mark, BOUND_NOTE if mark == "≤" else ESTIMATE_NOTE if figure in ("new", *USED) else "")
    if sizes is not None:
        # The most tokens seen; judgments the declared bound adds count the task's mean prompt.
        added = figures["new"][0] - max(result.cost.judge_calls for result in observed)
        kind = "point" if strategy.kind == "pointwise" else "pair"
        row.prompt_tokens += max(result.cost.prompt_tokens for result in observed) + added * sizes.mean(task, kind)


def task_figures(
    strategy: Strategy, task: Task, observed: Sequence[TaskResult], context: set[str]
) -> dict[str, Estimate]:
    """One task's figures with their marks, from what the strategy did under each policy."""
    n = len(task.candidates)
    exact, worst = strategy.exact_judgments(n), strategy.max_judgments(n)
    counts = [column_counts(result.cost) for result in observed]
    seen = {figure: [count[figure] for count in counts] for figure in COUNTS}
    if strategy.kind == "kway":  # k-way judgments are never among the pairs others asked
        context = context - {"pairs_covered"}
    if takes_the_run_path(observed, exact, worst, context):
        return {figure: (values[0], "") for figure, values in seen.items()}
    figures = used_figures(strategy.kind, seen, exact, worst)
    figures.update(origin_figures(figures, seen, worst, context))
    return figures


def takes_the_run_path(observed: Sequence[TaskResult], exact: int | None, worst: int | None, context: set[str]) -> bool:
    """Rules 1 and 2: all verdicts cached, or one path under every policy and not declared adaptive."""
    if "all_cached" in context:
        return True
    declared_adaptive = worst is not None and exact is None
    paths = {(asked_of(result), tuple(column_counts(result.cost).values())) for result in observed}
    return not declared_adaptive and len(paths) == 1


def used_figures(kind: str, seen: dict[str, list[int]], exact: int | None, worst: int | None) -> dict[str, Estimate]:
    """Rule 3 for ``comparisons`` and ``grades``: exact when the declared fixed number was used under every policy."""
    totals = set(map(sum, zip(seen["comparisons"], seen["grades"])))
    fixed = totals == {exact} and len(set(seen["comparisons"])) == 1
    main = "grades" if kind == "pointwise" else "comparisons"
    figures = {}
    for figure in USED:
        unused = figure != main and not any(seen[figure])  # e.g. the grades of a pairwise strategy
        figures[figure] = (seen[figure][0], "") if fixed or unused else at_most(seen[figure], worst)
    return figures


def origin_figures(
    used: dict[str, Estimate], seen: dict[str, list[int]], worst: int | None, context: set[str]
) -> dict[str, Estimate]:
    """Rule 3 for ``cached``, ``shared`` and ``new``."""
    total = used["comparisons"][0] + used["grades"][0]
    marks = {mark for _, mark in used.values()} - {""}
    if "pairs_covered" in context and not any(seen["grades"]):
        # Strategies before it asked every ordered pair: whatever it asks is shared.
        return {"cached": (0, ""), "shared": (total, "~" if "~" in marks else "≤" if marks else ""), "new": (0, "")}
    cached = (0, "") if "cache_empty" in context else (min(seen["cached"]), "~")
    shared = (0, "") if "first_on_task" in context else (min(seen["shared"]), "~")
    if marks or cached[1] or shared[1]:
        return {"cached": cached, "shared": shared, "new": at_most(seen["new"], worst)}
    return {"cached": cached, "shared": shared, "new": (total - cached[0] - shared[0], "")}


def at_most(values: Sequence[int], worst: int | None) -> Estimate:
    """The most seen under any policy, raised to the declared worst case (``≤``), else an estimate (``~``)."""
    return (max(values), "~") if worst is None else (max(max(values), worst), "≤")


def judge_notes(judge: Judge, sizes: PromptSizes | None) -> list[str]:
    """What the prompt-token estimate leaves out, one sentence each (none for a judge without prompts)."""
    if sizes is None:
        return []
    gives = judge.capabilities
    notes = [f"prompt tokens estimated at {CHARS_PER_TOKEN} characters per token"]
    if gives.mode == "generate":
        notes.append(
            f"plus up to {gives.max_new_tokens} generated tokens per new judgment (and one retry "
            f"per verdict that fails to parse)"
        )
    if judge_price(judge) is not None:
        notes.append(USD_ASSUMPTIONS)
    if gives.prepair:
        notes.append(
            "PREPAIR: one analysis per answer not yet analysed comes on top, and its text on top of "
            "each decision prompt"
        )
    if gives.calibrate:
        notes.append(
            "calibrate: a comparison whose swapped order is not judged anyway is also read swapped "
            "(up to twice the prompt tokens of comparisons)"
        )
    return notes


def expected_judgments(
    tasks: Sequence[Task],
    strategies: Sequence[Strategy],
    seed: int,
    judge: Judge | None = None,
    max_candidates: int = 256,
) -> Estimate | None:
    """The judgments a run will use (cached, shared and new), for its progress bar's total, with its mark.

    Runs the strategies once on a consistent stand-in judge, no cache. Per strategy and task the
    count is exact for a declared fixed number, else at most the declared worst case (``≤``), else
    that run's count (``~``).

    Parameters
    ----------
    judge
        For its identity (request keys); None: any judge's.
    max_candidates
        Above this many candidates in a task, None.

    Returns
    -------
    Estimate or None
        ``(total, mark)`` with the worst mark; None for a simulated judge or too many candidates.
    """
    if (judge is not None and judge.simulated) or any(len(task.candidates) > max_candidates for task in tasks):
        return None
    runs = stand_in_run(tasks, strategies, judge if judge is not None else Judge(), None, seed, "ranked")
    total, marks = 0, set()
    for strategy, per_task in zip(strategies, runs):
        for task, result in zip(tasks, per_task):
            used, n = result.cost.comparisons + result.cost.grades, len(task.candidates)
            if strategy.exact_judgments(n) is not None:
                total += used
            elif (worst := strategy.max_judgments(n)) is not None:
                total, marks = total + max(used, worst), marks | {"≤"}
            else:
                total, marks = total + used, marks | {"~"}
    return total, "~" if "~" in marks else "≤" if marks else ""
