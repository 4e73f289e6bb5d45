"""Cost before spending: what a run will ask the judge, worked out without asking it (``--dry-run``).

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

:func:`plan_judge` builds the judge for a dry run: LLM judges get their real fingerprint and
prompts but no model — nothing is loaded and nothing is called.
"""

from __future__ import annotations

import math
import os
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from rankkit.cache import NullCache, is_failed, judgment_key
from rankkit.judges.base import Judge, JudgeError, PairRequest, PointRequest
from rankkit.matches import Cost, MatchGraph, MatchSource
from rankkit.strategies.base import Plan, Strategy
from rankkit.tasks import Candidate, Task

#: Characters per token of the estimate (OpenAI's rule of thumb for English text).
CHARS_PER_TOKEN = 4

#: One judgment as the run's match graph knows it: its kind (``pair``/``point``) and the candidate
#: ids in the order shown.
Key = tuple[str, tuple[str, ...]]


def task_rng(seed: int, task_id: str) -> random.Random:
    """The run's generator for a task (:func:`rankkit.runner.task_rng`), imported late: the
    runner pulls in tqdm and the metrics, which a dry run never needs."""
    from rankkit.runner import task_rng as runner_task_rng

    return runner_task_rng(seed, task_id)


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


# -------------------------------------------------------------------------------------------
# Replaying a strategy on the cache


class NotCached(Exception):
    """Raised by :class:`CacheOnlyJudge` the moment a strategy needs a judgment the cache lacks."""


class CacheOnlyJudge(Judge):
    """Stands in for a judge with its identity (fingerprint, request keys) and answers nothing:
    the match layer finds cached judgments before it asks the judge, so asking means not cached.
    It remembers which candidates each request key it handed out was for (``rows``: cache row key
    -> (kind, candidate ids)), so the cache view can say which judgments it found."""

    backend = "cache-only"

    def __init__(self, inner: Judge):
        self.inner = inner
        self.rows: dict[str, Key] = {}

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        key = self.inner.request_key(task, *candidates)
        kind = "point" if len(candidates) == 1 else "pair"
        self.rows[judgment_key(self.fingerprint, kind, key)] = (kind, tuple(c.id for c in candidates))
        return key

    def score_many(self, requests: Sequence[PointRequest]) -> Iterator[Any]:
        raise NotCached
        yield  # a generator, like every judge's batch method

    def compare_many(self, requests: Sequence[PairRequest]) -> Iterator[Any]:
        raise NotCached
        yield


class RecordingCache:
    """A read-only view of a cache that remembers which judgments it found (by candidate ids,
    read from the stand-in judge that made the request key)."""

    def __init__(self, inner: Any, judge: CacheOnlyJudge):
        self.inner = inner
        self.judge = judge
        self.hits: set[Key] = set()

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        found = self.inner.get_keys(keys)
        for key, payload in zip(keys, found):
            if payload is not None and not is_failed(payload):  # what the run would be served
                self.hits.add(self.judge.rows[key])
        return found

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        return None  # a dry run writes nothing

    def flush(self) -> None:
        return None


@dataclass
class Replay:
    """A strategy replayed on the cache.

    finished: it got every judgment it asked for, so ``cost`` is what the run will use.
    faithful: its graph held everything the run's shared graph will hold when it starts (what
        earlier strategies made, all of it cached), so it took the path the run will take.
    hits: the judgments it found in the cache (not in the graph).
    """

    finished: bool
    faithful: bool
    cost: Cost
    hits: set[Key]


def replay_on_cache(strategy: Strategy, task: Task, judge: Judge, cache: Any, seed: int,
                    made_before: Iterable[Key] = (), uncertain: bool = False) -> Replay:
    """Run ``strategy`` on ``task`` answering only from ``cache`` (see the module docstring).

    made_before: judgments earlier strategies of the run make (key -> candidate ids); the cached
        ones are put in the replay's graph first, since strategies such as heapsort look there.
    uncertain: earlier strategies also make judgments not identified in advance.
    """
    from rankkit.judges.base import PairJudgment, PointJudgment

    graph = MatchGraph(task)
    faithful = not uncertain
    fingerprint = judge.fingerprint
    for kind, ids in made_before:
        stored = cache.get(fingerprint, kind, judge.request_key(task, *(task.candidate(c) for c in ids)))
        if stored is None:
            faithful = False  # made new earlier in the run: its verdict is not known yet
        elif kind == "pair":
            graph.add_pair(fingerprint, ids[0], ids[1], PairJudgment.from_dict(stored))
        else:
            graph.add_point(fingerprint, ids[0], PointJudgment.from_dict(stored))
    stand_in = CacheOnlyJudge(judge)
    recorder = RecordingCache(cache, stand_in)
    cost = Cost()
    source = MatchSource(task, graph, stand_in, recorder, cost, strategy=strategy.label)
    try:
        strategy.rank(task, source, task_rng(seed, task.task_id))
        finished = True
    except NotCached:
        finished = False
    return Replay(finished, faithful, cost, recorder.hits)


# -------------------------------------------------------------------------------------------
# Prompt sizes


def estimate_tokens(text: str) -> int:
    return math.ceil(len(text) / CHARS_PER_TOKEN)


class PromptSizes:
    """Estimated prompt tokens of an LLM judge's requests, rendered with its own templates."""

    def __init__(self, judge: Any):
        self.judge = judge
        self._means: dict[tuple[str, str], float] = {}

    @staticmethod
    def applies(judge: Any) -> bool:
        return hasattr(judge, "point_prompt") and hasattr(judge, "pair_prompts") and hasattr(judge, "mode")

    def point(self, task: Task, candidate: Candidate) -> int:
        if self.judge.mode == "loglik":  # the bare question, then the answer
            return estimate_tokens(task.prompt + candidate.text)
        return self._conversation(self.judge.point_prompt(task, candidate).conversation)

    def pair(self, task: Task, first: Candidate, second: Candidate) -> int:
        if self.judge.mode == "loglik":  # each answer after the bare question
            return estimate_tokens(2 * task.prompt + first.text + second.text)
        if getattr(self.judge, "prepair", False):
            # Rendering PREPAIR's decision prompt would need the analyses; the plain pairwise
            # prompt is the same size but for them (noted in the output).
            from rankkit.prompts import PAIRWISE, prompt_max_points, render_pairwise

            template = self.judge.templates.template(task, PAIRWISE)
            return estimate_tokens(render_pairwise(template, task, first, second, prompt_max_points(task, template)))
        return self._conversation(self.judge.pair_prompts([(task, first, second)])[0].conversation)

    def mean(self, task: Task, kind: str) -> float:
        """The task's mean prompt size of a grade (``point``) or a comparison (``pair``: over
        neighbouring candidates in data order, both orders, which covers every answer twice)."""
        key = (task.task_id, kind)
        if key not in self._means:
            cands = task.candidates
            if kind == "point":
                sizes = [self.point(task, c) for c in cands]
            else:
                pairs = [(cands[i], cands[(i + 1) % len(cands)]) for i in range(len(cands))]
                sizes = [self.pair(task, a, b) for a, b in pairs]
            self._means[key] = sum(sizes) / len(sizes)
        return self._means[key]

    @staticmethod
    def _conversation(conversation: Sequence[dict[str, str]]) -> int:
        return estimate_tokens("".join(turn["content"] for turn in conversation))


# -------------------------------------------------------------------------------------------
# The dry run


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
        used = replay.cost.comparisons + replay.cost.scores
        row.comparisons += replay.cost.comparisons
        row.grades += replay.cost.scores
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


# -------------------------------------------------------------------------------------------
# Judges without a model


class PlanEngine:
    """An :class:`~rankkit.judges.llm.LLMEngine` with a model's identity and no model: enough for
    the judge's fingerprint and prompts; any request raises :class:`JudgeError`."""

    def __init__(self, backend: str, identity: dict[str, Any]):
        self.backend = backend
        self._identity = identity

    def identity(self) -> dict[str, Any]:
        return dict(self._identity)

    def _refuse(self, *args: Any, **kwargs: Any) -> Iterator[Any]:
        raise JudgeError("a dry-run judge has no model loaded")

    generate = next_token_logprobs = answer_logliks = _refuse

    def close(self) -> None:
        return None


def plan_judge(spec: str) -> Judge:
    """The judge of ``spec`` for a dry run: ``hf:`` and ``smollm2`` judges with their real
    fingerprint and prompts but no model loaded; panels of such members; any other judge as
    :func:`rankkit.judges.make_judge` builds it (they load nothing heavy: sim, replay, openai)."""
    from rankkit.judges import make_judge
    from rankkit.specs import convert_value, parse_spec

    parsed = parse_spec(spec)
    if parsed.name in ("hf", "smollm2"):
        return _llm_plan_judge(parsed)
    if parsed.name == "panel":
        from rankkit.judges.panel import PanelJudge, split_panel_spec

        members, options = split_panel_spec(spec)
        threshold = convert_value(options.get("threshold", "0.5"), float, where="panel: threshold")
        return PanelJudge([plan_judge(member) for member in members], threshold=threshold)
    return make_judge(parsed)


def _llm_plan_judge(spec: Any) -> Judge:
    """``hf:`` / ``smollm2`` as :func:`rankkit.judges.hf.from_spec` and ``smollm2_from_spec`` build
    them (same options, defaults and identity), minus loading the weights."""
    from rankkit.judges import hf
    from rankkit.judges.llm import LLMJudge, split_llm_options
    from rankkit.specs import SpecError

    where = spec.name
    if where == "smollm2":
        if spec.positional:
            raise SpecError(f"{where}: unexpected value(s) {', '.join(spec.positional)}; use key=value")
        judge_kwargs, rest = split_llm_options(spec, where, defaults={"mode": hf.SMOLLM2_DEFAULT_MODE,
                                                                      "max_new_tokens": 192})
        options = hf._engine_options(rest, where, set(hf._ENGINE_OPTIONS))
        hf._check_judge_options(judge_kwargs, where)
        identity = hf.smollm2_identity(options.get("dtype", "bfloat16"))
        return LLMJudge(PlanEngine("hf", identity), **judge_kwargs)
    model_ref, gguf, options, judge_kwargs = hf.hf_spec_parts(spec, where)
    local = Path(model_ref).expanduser()
    identity: dict[str, Any] = {"name": Path(model_ref).name if local.is_dir() else model_ref,
                                "dtype": options.get("dtype", "bfloat16")}
    if gguf:
        identity["gguf"] = Path(gguf).name
    if local.is_dir():
        identity["weights"] = hf.directory_signature(local, gguf)
    else:
        identity["model"] = model_ref
        identity["revision"] = hub_revision(model_ref)
    return LLMJudge(PlanEngine("hf", identity), **judge_kwargs)


def hub_revision(model_ref: str) -> str | None:
    """The commit a hub model resolves to offline: ``refs/main`` of its local Hugging Face cache
    (what transformers records as the model's ``_commit_hash``); None when it was never downloaded."""
    hub = os.environ.get("HF_HUB_CACHE") or os.path.join(
        os.environ.get("HF_HOME") or os.path.join(os.path.expanduser("~"), ".cache", "huggingface"), "hub")
    ref = Path(hub) / f"models--{model_ref.replace('/', '--')}" / "refs" / "main"
    try:
        return ref.read_text(encoding="utf-8").strip() or None
    except OSError:
        return None


def read_only_cache(path: str | Path | None, disabled: bool) -> Any:
    """The cache a dry run reads: the file when it exists (never created), else an empty one."""
    from rankkit.cache import DEFAULT_CACHE_PATH, JudgmentCache

    path = Path(path) if path else DEFAULT_CACHE_PATH
    if disabled or not path.exists():
        return NullCache()
    return JudgmentCache(path)


# -------------------------------------------------------------------------------------------
# Output

#: Columns of the dry-run table: what each strategy uses and where each judgment would come from.
COLUMNS = (("strategy", "strategy"), ("comparisons", "comparisons"), ("grades", "grades"), ("cached", "cached"),
           ("shared", "shared"), ("new", "new"), ("est_prompt_tokens", "est_prompt_tokens"), ("exact", "exact"),
           ("bounds", "bounds"), ("note", "note"))


def display_rows(report: DryRun) -> list[dict[str, Any]]:
    """Rows for people: each inexact figure prefixed by its bound (``≤`` at most, ``≥`` at
    least, ``~`` approximately); estimated tokens by ``≈``."""
    rows = []
    for row in report.rows:
        record = row.as_dict()
        for figure, symbol in row.bounds.items():
            record[figure] = f"{symbol}{record[figure]}"
        if record["est_prompt_tokens"] is not None:
            record["est_prompt_tokens"] = f"{row.bounds.get('new', '≈')}{record['est_prompt_tokens']}"
        rows.append(record)
    return rows


def format_dry_run(report: DryRun, fmt: str = "table", data: str = "") -> str:
    """The dry run as ``fmt`` (table, markdown, csv or json); the human formats add a summary."""
    from rankkit.formatting import render

    if fmt in ("csv", "json"):
        return render([row.as_dict() for row in report.rows], COLUMNS, fmt)
    columns = COLUMNS[:-3] + ((("note", "note"),) if any(row.notes for row in report.rows) else ())
    if all(row.prompt_tokens is None for row in report.rows):
        columns = tuple(c for c in columns if c[0] != "est_prompt_tokens")
    total = f"{'at most ' if any('new' in row.bounds for row in report.rows) else ''}{report.new}"
    lines = [f"dry run: {report.tasks} tasks{f' from {data}' if data else ''} · judge {report.judge} · "
             f"nothing was judged, no model was loaded",
             render(display_rows(report), columns, fmt),
             f"new judgments to pay for: {total}"]
    tokens = [row.prompt_tokens for row in report.rows if row.prompt_tokens is not None]
    if tokens:
        lines[-1] += f" · estimated prompt tokens {'≤' if 'at most' in total else '≈'}{round(sum(tokens))}"
    lines += [f"note: {note}" for note in report.notes]
    if not report.exact:
        lines.append("≤ at most, ≥ at least, ~ about: where judgments depend on verdicts not yet given, the "
                     "strategy was replayed on the cache up to the first judgment it lacks")
    return ("\n\n" if fmt == "markdown" else "\n").join(lines)
