"""The dry run: what each strategy of a run will ask the judge, and where each judgment would come from.

For every strategy and task, :meth:`rankkit.strategies.Strategy.plan` says how many comparisons
and grades the strategy will use — exactly, or as an upper bound — and which of them are known in
advance. Then each judgment is placed where the run would find it:

* **cached** — already in the persistent judgment cache (looked up under the judge's fingerprint
  and :meth:`~rankkit.judges.base.Judge.request_key`, as the run does);
* **shared** — made earlier in the same run by a strategy listed before it (the shared match
  graph), so free;
* **new** — to be paid for.

When a strategy's judgments are all known in advance (``individual``, ``pairwise``, ``elo``,
``bt``, ``panel_elo``) every figure is exact. When later judgments depend on earlier verdicts
(knockout after round 1, swiss, active, heapsort, sliding), the strategy is *replayed on the
cache*: it runs with a stand-in judge that answers only from the cache, so a fully cached task
gives exact figures, and otherwise the replay stops at the first judgment not cached — what it
found is a lower bound of the cached ones, and ``new`` is an upper bound. Rows say which.

Judgments are counted per candidate, as the run counts them: two candidates with the same text
are the same question to a judge that reads only the text, and the run asks both when they come in
one batch (as every strategy whose pairs are known in advance asks), but may find the second in
the cache when it comes in a later round; the dry run then counts one judgment too many.

For judges that read prompts (``hf:``, ``smollm2``, ``openai:``), the prompts of the new judgments
are rendered and their tokens estimated at 4 characters per token (no tokenizer is loaded); a new
judgment whose pair is not known in advance counts as the task's mean prompt.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Iterable, Sequence

from rankkit.cache import NullCache
from rankkit.judges.base import Judge
from rankkit.plan.replay import Key, replay_on_cache
from rankkit.plan.tokens import CHARS_PER_TOKEN, PromptSizes
from rankkit.strategies.base import Plan, Strategy
from rankkit.tasks import Task, task_rng


@dataclass
class PlanRow:
    """One strategy's figures over all tasks (see the module docstring for the columns).

    prompt_tokens: estimated prompt tokens of the new judgments (None for judges without prompts).
    bounds: the figures that are not exact, each with ``≤`` (at most), ``≥`` (at least) or ``~``
        (approximate: a bound in one direction on some tasks and the other on others). Whatever the
        bounds, ``new`` is never below the judgments the run pays for.
    notes: why figures are not exact.
    """

    strategy: str
    comparisons: int = 0
    grades: int = 0
    cached: int = 0
    shared: int = 0
    new: int = 0
    prompt_tokens: float | None = None
    bounds: dict[str, str] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)

    @property
    def exact(self) -> bool:
        return not self.bounds

    def mark(self, figure: str, symbol: str, note: str = "") -> None:
        """Record that ``figure`` is a bound (``≤`` or ``≥``) on at least one task, and why."""
        previous = self.bounds.get(figure)
        self.bounds[figure] = symbol if previous in (None, symbol) else "~"
        if note and note not in self.notes:
            self.notes.append(note)

    def as_dict(self) -> dict[str, Any]:
        tokens = None if self.prompt_tokens is None else round(self.prompt_tokens)
        return {"strategy": self.strategy, "comparisons": self.comparisons, "grades": self.grades,
                "cached": self.cached, "shared": self.shared, "new": self.new, "est_prompt_tokens": tokens,
                "exact": self.exact, "bounds": " ".join(f"{k}{v}" for k, v in self.bounds.items()),
                "note": "; ".join(self.notes)}


@dataclass
class DryRun:
    """The figures of a dry run: one row per strategy, the number of tasks and judge-level notes."""

    rows: list[PlanRow]
    tasks: int
    judge: str
    notes: list[str] = field(default_factory=list)

    @property
    def new(self) -> int:
        return sum(row.new for row in self.rows)

    @property
    def exact(self) -> bool:
        return all(row.exact for row in self.rows)


def dry_run(tasks: Sequence[Task], strategies: Sequence[Strategy], judge: Judge, cache: Any = None,
            seed: int = 0) -> DryRun:
    """Work out what ``run(tasks, strategies, judge, cache, seed)`` would ask, without asking.

    judge: the judge's identity is all that is used (build it with :func:`plan_judge` to avoid
        loading a model); cache: the persistent cache (None: empty).
    """
    cache = cache if cache is not None else NullCache()
    cache_empty = len(cache) == 0
    sizes = PromptSizes(judge) if PromptSizes.applies(judge) else None
    states = {task.task_id: TaskState() for task in tasks}
    rows = []
    for strategy in strategies:
        row = PlanRow(strategy.label, prompt_tokens=0.0 if sizes else None)
        for task in tasks:
            _plan_task(row, strategy, task, judge, cache, cache_empty, seed, states[task.task_id], sizes)
        rows.append(row)
    notes = []
    if sizes is not None:
        notes.append(f"prompt tokens estimated at {CHARS_PER_TOKEN} characters per token")
        if getattr(judge, "mode", "") == "generate":
            notes.append(f"plus up to {judge.max_new_tokens} generated tokens per new judgment (and one retry "
                         f"per verdict that fails to parse)")
        if getattr(judge, "prepair", False):
            notes.append("PREPAIR: one analysis per answer not yet analysed comes on top, and its text on top of "
                         "each decision prompt")
        if getattr(judge, "calibrate", False):
            notes.append("calibrate: a comparison whose swapped order is not judged anyway is also read swapped "
                         "(up to twice the prompt tokens of comparisons)")
    return DryRun(rows=rows, tasks=len(tasks), judge=judge.description, notes=notes)


def _keys(plan: Plan) -> list[Key]:
    """The judgments a plan names."""
    return [("pair", pair) for pair in dict.fromkeys(plan.pairs)] + [("point", (c,)) for c in dict.fromkeys(plan.points)]


def _in_cache(cache: Any, judge: Judge, task: Task, key: Key) -> bool:
    """Whether the cache holds the judgment, looked up as the match layer does."""
    return cache.get(judge.fingerprint, key[0], judge.request_key(task, *map(task.candidate, key[1]))) is not None


@dataclass
class TaskState:
    """What the strategies planned so far know about one task's judgments.

    seen: the judgments earlier strategies are known to make.
    uncertain: the kinds (``pair``, ``point``) of which some earlier strategy makes judgments not
        identified in advance (knockout's later rounds), which may coincide with this strategy's:
        then its cached and new figures become bounds.
    """

    seen: set[Key] = field(default_factory=set)
    uncertain: set[str] = field(default_factory=set)
    #: How many comparisons not identified in advance earlier strategies make, when that is known
    #: exactly (one such strategy, the first on the task, with an exact count and nothing cached).
    unidentified_pairs: int | None = None

    def affects(self, plan: Plan) -> bool:
        """Whether judgments not identified in advance may coincide with this plan's."""
        return bool(("pair" in self.uncertain and plan.comparisons) or ("point" in self.uncertain and plan.grades))


UNCERTAIN_NOTE = "an earlier strategy's later judgments are not known in advance; some may be reused here"


def _plan_task(row: PlanRow, strategy: Strategy, task: Task, judge: Judge, cache: Any, cache_empty: bool,
               seed: int, state: TaskState, sizes: PromptSizes | None) -> None:
    """Add one task's figures to ``row`` (the cases are those of the module docstring)."""
    plan = strategy.plan(task, task_rng(seed, task.task_id))
    seen = state.seen
    known = _keys(plan)
    cached_known = {key for key in known if key not in seen and _in_cache(cache, judge, task, key)}
    uncertain = state.affects(plan)
    if plan.complete:
        row.comparisons += plan.comparisons
        row.grades += plan.grades
        new_keys = [key for key in known if key not in seen and key not in cached_known]
        row.cached += len(cached_known)
        row.shared += len(set(known) & seen)
        n = len(task.candidates)
        if (uncertain and "point" not in state.uncertain and state.unidentified_pairs is not None
                and len(set(plan.pairs)) == n * (n - 1)):
            # It judges every ordered pair, so it reuses whatever comparisons were made before,
            # identified or not — and how many were not is known.
            row.shared += state.unidentified_pairs
            row.new += len(new_keys) - state.unidentified_pairs
            if sizes is not None:  # which pairs are reused is not known: charge the mean prompt
                row.prompt_tokens += (len(new_keys) - state.unidentified_pairs) * sizes.mean(task, "pair")
            seen.update(known)
            # Every ordered pair is now made, so the unidentified comparisons are among them.
            state.uncertain.discard("pair")
            state.unidentified_pairs = None
            return
        row.new += len(new_keys)
        if uncertain:
            for figure, symbol in (("cached", "≤"), ("shared", "≥"), ("new", "≤")):
                row.mark(figure, symbol, UNCERTAIN_NOTE)
        if sizes is not None:
            row.prompt_tokens += sum(_size(sizes, task, key) for key in new_keys)
        _add_seen(state, known)
        return
    replay = None if cache_empty else replay_on_cache(strategy, task, judge, cache, seed, seen, bool(state.uncertain))
    if replay is not None and replay.finished and replay.faithful:
        # Every judgment it asks is in the graph or the cache: its path, hence every figure, is known.
        used = replay.cost.comparisons + replay.cost.grades
        row.comparisons += replay.cost.comparisons
        row.grades += replay.cost.grades
        row.cached += replay.cost.cache_hits
        row.shared += used - replay.cost.cache_hits
        seen.update(replay.hits)
        return
    row.comparisons += plan.comparisons
    row.grades += plan.grades
    if not plan.exact:
        row.mark("comparisons", "≤", plan.note or "an upper bound")
        if plan.grades:
            row.mark("grades", "≤")
    if _all_made_before(task, plan, seen):
        # Whatever the verdicts, every judgment it could ask was made earlier in the run.
        row.shared += plan.comparisons + plan.grades
        if not plan.exact:
            row.mark("shared", "≤")
        return
    # Only a replay that followed the run's path tells which judgments the run will use.
    hits = set(replay.hits) if replay and replay.faithful else set()
    found = set(known) | hits
    shared = found & seen
    cached = (cached_known | hits) - seen
    unknown_pairs = plan.comparisons - sum(kind == "pair" for kind, _ in found)
    unknown_points = plan.grades - sum(kind == "point" for kind, _ in found)
    unknown = unknown_pairs + unknown_points
    # Judgments found cached or made earlier are never new, so `new` never undercounts.
    new = plan.comparisons + plan.grades - len(shared) - len(cached)
    row.cached += len(cached)
    row.shared += len(shared)
    row.new += new
    # Judgments not identified in advance might be cached or made by an earlier strategy, unless
    # there are none, or there is nothing cached and no earlier strategy on this task.
    exact = plan.exact and not uncertain and (unknown == 0 or (cache_empty and not seen))
    if not exact:
        note = UNCERTAIN_NOTE if plan.exact and uncertain else plan.note or "an upper bound"
        row.mark("new", "≤", note)
        if not cache_empty:  # an empty cache holds nothing, whatever is asked
            row.mark("cached", "~" if uncertain else "≥")
        if seen or state.uncertain:  # with no strategy before it on the task, nothing is shared
            row.mark("shared", "≥")
    if sizes is not None:
        known_new = [key for key in known if key not in seen and key not in cached]
        row.prompt_tokens += sum(_size(sizes, task, key) for key in known_new)
        rest = max(0, new - len(known_new))
        row.prompt_tokens += rest * sizes.mean(task, "pair" if plan.comparisons else "point")
    first_on_task = not seen and not state.uncertain
    _add_seen(state, found)
    if unknown_pairs > 0:
        exact_count = first_on_task and plan.exact and cache_empty and unknown_points == 0
        state.unidentified_pairs = unknown_pairs if exact_count else None
    state.uncertain |= {kind for kind, count in (("pair", unknown_pairs), ("point", unknown_points)) if count > 0}


def _add_seen(state: TaskState, keys: Iterable[Key]) -> None:
    """Record judgments a strategy makes. Once identified comparisons join unidentified ones, how
    many distinct comparisons were made is no longer known (they may coincide)."""
    if "pair" in state.uncertain:
        state.unidentified_pairs = None
    state.seen.update(keys)


def _all_made_before(task: Task, plan: Plan, seen: set[Key]) -> bool:
    """Whether earlier strategies of the run made every judgment of the task this plan could need
    (every ordered pair, and every grade if it grades)."""
    ids = task.candidate_ids
    n = len(ids)
    if len(seen) < (n * (n - 1) if plan.comparisons else 0) + (n if plan.grades else 0):
        return False  # cheap exit: too few judgments made to cover them all
    pairs = all(("pair", (a, b)) in seen for a in ids for b in ids if a != b) if plan.comparisons else True
    return pairs and (not plan.grades or all(("point", (c,)) in seen for c in ids))


def _size(sizes: PromptSizes, task: Task, key: Key) -> int:
    cands = [task.candidate(c) for c in key[1]]
    return sizes.pair(task, *cands) if key[0] == "pair" else sizes.point(task, cands[0])

