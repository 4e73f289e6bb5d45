"""System leaderboards: rank the *systems* that wrote the candidates, not the candidates of one task.

Candidates carry ``system``; a leaderboard pools what the judge said on every task into one rating
per system. Three ways to build one, all asking the judge through a :class:`~rankkit.matches.MatchSource`
on one :class:`~rankkit.matches.MatchGraph` per task and the judgment cache, like every strategy:

* **arena** — Arena-lite (Algorithm 1): on every task a single-elimination tournament
  between the systems' answers. The bracket is a seeded shuffle of the systems; each round pairs
  neighbours in bracket order, and with an odd number the last one gets a bye. N systems cost
  N − 1 matches per task. All matches of all tasks are fitted together by Bradley–Terry
  (:func:`rankkit.ratings.bradley_terry`; ratings on the Elo scale, a tie is half a win each
  way), with percentile-bootstrap intervals over the matches.
* **anchored** — the baseline-mediated practice (AlpacaEval, Arena-Hard-Auto): every system's
  answer against the ``anchor`` system's answer on the same task; the rating is the win rate
  against the anchor (a tie counts half; the anchor itself sits at 0.5). N − 1 matches per task.
* **any per-task strategy** (``knockout``, ``elo``, ``bt``, ``heapsort`` …): the strategy ranks
  each task's candidates as usual (:func:`rankkit.runner.run`); each task's scores are then read
  as all their induced pairwise results between systems — the higher-scored system beats the
  lower, equal scores tie — and those are fitted by Bradley–Terry exactly like the arena matches.
  Every task therefore weighs the same whatever its strategy's score scale (grades, Elo, ranks).
  The induced results of one task are not independent, so bootstrap intervals over them are
  narrower than they should be; read them as a rough guide.

**Adding a system** to a stored leaderboard without rebuilding it (Arena-lite, appendix A.6):

* ``binary`` — Algorithm 2: binary search over the leaderboard's order. With |L| systems and |X|
  tasks, each step plays ⌊|X| / ⌊log2 |L|⌋⌋ matches of the newcomer against the system in the
  middle, on tasks drawn without replacement from a shuffled doubled task list; more than half
  the points moves the search up, fewer moves it down, exactly half plays another batch (or
  ends as a tie when the tasks run out). It yields a *position*, not a rating: the newcomer's
  rating is left empty.
* ``anchored`` — A.6.2: the newcomer plays the current top system on every task. On a
  Bradley–Terry leaderboard its win rate p is turned back into a rating,
  ``R_top + scale · log_base(p / (1 − p))`` (p clipped to [½|X|⁻¹, 1 − ½|X|⁻¹]), which is
  the rating the BT model says wins p of the time against the top; on an anchored leaderboard
  the newcomer simply plays the leaderboard's anchor and its rating is that win rate.

Judgments are reused wherever they already exist: in the run's match graphs (pass ``graphs``) and
in the persistent cache, so adding a system pays only for matches never judged before. The
stored leaderboard's own matches are kept in its JSON and carried over.
"""

from __future__ import annotations

import math
import random
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterable, Mapping, Sequence

from rankkit.errors import RankkitError
from rankkit.judges.base import Judge
from rankkit.matches import Cost, MatchGraph, MatchSource
from rankkit.ratings import (
    ELO_BASE,
    ELO_SCALE,
    MatchRecord,
    bradley_terry,
    win_rates,
)
from rankkit.results import strict_json
from rankkit.stats import Interval, bootstrap
from rankkit.tasks import Task

BUILD_METHODS = ("arena", "anchored")
ADD_METHODS = ("binary", "anchored")


class LeaderboardError(RankkitError, ValueError):
    """Input a leaderboard cannot be built from (missing systems, unknown anchor, ...)."""


# ---------------------------------------------------------------------------------------------
# Data types


@dataclass(frozen=True)
class SystemMatch:
    """One match between two systems' answers on one task: ``outcome`` is for system ``a``."""

    task_id: str
    a: str
    b: str
    outcome: float
    round: int | None = None

    def record(self) -> MatchRecord:
        return (self.a, self.b, self.outcome)

    def to_dict(self) -> dict[str, Any]:
        return {"task_id": self.task_id, "a": self.a, "b": self.b, "outcome": self.outcome, "round": self.round}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SystemMatch":
        return cls(task_id=str(data["task_id"]), a=data["a"], b=data["b"], outcome=float(data["outcome"]),
                   round=data.get("round"))


@dataclass(frozen=True)
class SystemRating:
    """A leaderboard row. ``rating`` is None for a system placed by binary search (a position only)."""

    name: str
    rating: float | None
    ci_low: float | None
    ci_high: float | None
    rank: int
    matches: int = 0

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "rating": self.rating, "ci_low": self.ci_low, "ci_high": self.ci_high,
                "rank": self.rank, "matches": self.matches}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "SystemRating":
        return cls(name=data["name"], rating=data.get("rating"), ci_low=data.get("ci_low"),
                   ci_high=data.get("ci_high"), rank=int(data["rank"]), matches=int(data.get("matches", 0)))


@dataclass
class Leaderboard:
    """A system leaderboard, best first, with what it cost; ``to_dict`` is the ``--out`` JSON.

    method: ``arena``, ``anchored`` or the label of the per-task strategy that was aggregated.
    scale: ``elo`` (Bradley–Terry ratings on the Elo scale) or ``win_rate`` (against ``anchor``).
    matches: every system-level match the ratings came from.
    placement: for a leaderboard made by :func:`add_system`, how the newcomer was placed.
    """

    method: str
    systems: list[SystemRating]
    matches: list[SystemMatch]
    cost: Cost = field(default_factory=Cost)
    scale: str = "elo"
    anchor: str | None = None
    seed: int = 0
    debias: bool = False
    judge: dict[str, Any] = field(default_factory=dict)
    data: str = ""
    placement: dict[str, Any] | None = None

    @property
    def names(self) -> list[str]:
        return [s.name for s in self.systems]

    def system(self, name: str) -> SystemRating:
        for row in self.systems:
            if row.name == name:
                return row
        raise KeyError(f"system {name!r} is not on the leaderboard")

    def to_dict(self) -> dict[str, Any]:
        return strict_json({
            "method": self.method, "scale": self.scale, "anchor": self.anchor, "seed": self.seed,
            "debias": self.debias, "judge": self.judge, "data": self.data,
            "systems": [s.to_dict() for s in self.systems],
            "judge_calls": self.cost.judge_calls, "comparisons": self.cost.comparisons,
            "cost": self.cost.to_dict(), "placement": self.placement,
            "matches": [m.to_dict() for m in self.matches],
        })

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "Leaderboard":
        cost = Cost(**{k: int(v) for k, v in (data.get("cost") or {}).items() if k in Cost.__dataclass_fields__})
        return cls(method=data["method"], systems=[SystemRating.from_dict(s) for s in data["systems"]],
                   matches=[SystemMatch.from_dict(m) for m in data.get("matches") or []], cost=cost,
                   scale=data.get("scale", "elo"), anchor=data.get("anchor"), seed=int(data.get("seed", 0)),
                   debias=bool(data.get("debias", False)), judge=dict(data.get("judge") or {}),
                   data=data.get("data", ""), placement=data.get("placement"))


def _judge_info(judge: Judge, spec: str = "") -> dict[str, Any]:
    return {"spec": spec, "description": judge.description, "fingerprint": judge.fingerprint,
            "simulated": judge.simulated}


# ---------------------------------------------------------------------------------------------
# Systems in tasks


def systems_of(task: Task) -> dict[str, str]:
    """System name -> candidate id for one task. Every candidate needs a distinct ``system``."""
    found: dict[str, str] = {}
    for cand in task.candidates:
        if cand.system is None:
            raise LeaderboardError(f"task {task.task_id!r}: candidate {cand.id!r} has no system; "
                             f"system leaderboards need a 'system' on every candidate")
        if cand.system in found:
            raise LeaderboardError(f"task {task.task_id!r}: system {cand.system!r} has two candidates "
                             f"({found[cand.system]!r} and {cand.id!r})")
        found[cand.system] = cand.id
    return found


def all_systems(tasks: Iterable[Task]) -> list[str]:
    """Every system of the tasks, in order of first appearance."""
    names: dict[str, None] = {}
    for task in tasks:
        for name in systems_of(task):
            names.setdefault(name, None)
    return list(names)


def restrict(tasks: Sequence[Task], systems: Iterable[str]) -> list[Task]:
    """The tasks with only the candidates of ``systems`` (tasks left with fewer than 2 dropped).

    Candidate ids and texts are unchanged, so cached judgments still apply.
    """
    keep = set(systems)
    out = []
    for task in tasks:
        candidates = tuple(c for c in task.candidates if c.system in keep)
        if len(candidates) >= 2:
            out.append(replace(task, candidates=candidates))
    return out


def human_system_scores(tasks: Sequence[Task]) -> dict[str, float]:
    """The mean human score of each system's candidates: the system-level truth the data imply
    when no separate truth file is given (for Arena-Hard it is the system's Chatbot Arena Elo)."""
    totals: dict[str, list[float]] = {}
    for task in tasks:
        human = task.human_scores()
        for cand in task.candidates:
            if cand.id in human and cand.system is not None:
                totals.setdefault(cand.system, []).append(human[cand.id])
    return {name: sum(values) / len(values) for name, values in totals.items()}


def load_truth(path: str | Path, field_name: str | None = None) -> dict[str, float]:
    """Read a system-level ground truth: JSONL with ``system`` and a numeric score per line.

    field_name: the score's key; by default ``rating`` if present, else the first key (in file
        order) whose value is a number — ``arena_elo_hard_en`` for Arena-Hard's ``systems.jsonl``.
    """
    import json

    truth: dict[str, float] = {}
    with Path(path).open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            row = json.loads(text)
            if "system" not in row:
                raise LeaderboardError(f"{path}:{number}: no 'system' field")
            key = field_name
            if key is None:
                numeric = [k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
                key = "rating" if "rating" in numeric else (numeric[0] if numeric else None)
            value = row.get(key) if key else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                truth[str(row["system"])] = float(value)
    if not truth:
        raise LeaderboardError(f"{path}: no system with a numeric score")
    return truth


def find_truth_file(data_path: str | Path) -> Path | None:
    """``systems.jsonl`` beside the data file, if there is one."""
    candidate = Path(data_path).parent / "systems.jsonl"
    return candidate if candidate.exists() else None


def correlations(board: Leaderboard, truth: Mapping[str, float]) -> dict[str, float]:
    """Spearman and Kendall (tau-b) between the leaderboard and a system-level truth, over the
    systems both know. Ratings are used when every such system has one, else ranks."""
    from rankkit.metrics import correlation

    shared = [row for row in board.systems if row.name in truth]
    use_ratings = all(row.rating is not None and math.isfinite(row.rating) for row in shared)
    ours = [row.rating if use_ratings else -row.rank for row in shared]
    theirs = [truth[row.name] for row in shared]
    return {"spearman": correlation("spearman", ours, theirs), "kendall": correlation("kendall", ours, theirs),
            "systems": len(shared)}


# ---------------------------------------------------------------------------------------------
# Building leaderboards


def _task_rng(seed: int, task_id: str, purpose: str) -> random.Random:
    return random.Random(f"{seed}|{task_id}|{purpose}")


def play_tournament(task: Task, source: MatchSource, rng: random.Random, debias: bool = False) -> list[SystemMatch]:
    """Arena-lite on one task: a single-elimination tournament between the systems' answers.

    The bracket is a seeded shuffle of the systems; each round pairs neighbours in bracket order
    (one batch of duels per round), winners keep their bracket order, and with an odd number the
    last one gets a bye. A tied duel is recorded as a tie (half a win each way for BT); a seeded
    coin decides who advances.
    """
    candidate_of = systems_of(task)
    system_of = {cid: name for name, cid in candidate_of.items()}
    alive = list(candidate_of.values())
    rng.shuffle(alive)
    matches: list[SystemMatch] = []
    round_number = 0
    while len(alive) > 1:
        round_number += 1
        pairs = [(alive[i], alive[i + 1]) for i in range(0, len(alive) - 1, 2)]
        advancing = []
        for duel in source.duel_many(pairs, debias=debias, round=round_number):
            matches.append(SystemMatch(task.task_id, system_of[duel.a], system_of[duel.b], duel.outcome, round_number))
            a_advances = duel.outcome == 1.0 or (duel.outcome == 0.5 and rng.random() < 0.5)
            advancing.append(duel.a if a_advances else duel.b)
        if len(alive) % 2:
            advancing.append(alive[-1])
        alive = advancing
    return matches


def play_against(task: Task, source: MatchSource, rng: random.Random, opponent: str,
                 systems: Sequence[str] | None = None, debias: bool = False) -> list[SystemMatch]:
    """Every system of the task (or of ``systems``) against ``opponent``'s answer, in one batch.

    Without ``debias`` each match shows the two answers in a seeded random order, so the
    opponent is not always in the same slot. Returns nothing when the task lacks the opponent.
    """
    candidate_of = systems_of(task)
    if opponent not in candidate_of:
        return []
    names = [s for s in (systems if systems is not None else candidate_of) if s in candidate_of and s != opponent]
    anchor_id = candidate_of[opponent]
    pairs = []
    for name in names:
        pair = (candidate_of[name], anchor_id)
        pairs.append(pair if debias or rng.random() < 0.5 else pair[::-1])
    matches = []
    for name, duel in zip(names, source.duel_many(pairs, debias=debias, round=1)):
        outcome = duel.outcome if duel.a == candidate_of[name] else 1.0 - duel.outcome
        matches.append(SystemMatch(task.task_id, name, opponent, outcome, 1))
    return matches


def _play_all(tasks: Sequence[Task], play: Callable[[Task, MatchSource], list[SystemMatch]], judge: Judge,
              cache: Any, graphs: dict[str, MatchGraph] | None, progress: bool, method: str
              ) -> tuple[list[SystemMatch], Cost]:
    """Play ``play`` on every task through :func:`rankkit.runner.map_tasks` (tasks concurrently when
    the judge has capacity), and gather the matches and the cost in task order."""
    from tqdm import tqdm

    from rankkit.runner import map_tasks

    def work(task: Task, engine: Any) -> tuple[list[SystemMatch], Cost]:
        cost = Cost()
        source = MatchSource(task, _graph(graphs, task), judge, engine.store, cost, strategy=method, engine=engine)
        return play(task, source), cost

    matches: list[SystemMatch] = []
    total = Cost()
    for played, cost in tqdm(map_tasks(tasks, work, judge, cache), total=len(tasks), desc=method, unit="task",
                             file=sys.stderr, disable=not progress):
        matches += played
        total.add(cost)
    return matches, total


def _graph(graphs: dict[str, MatchGraph] | None, task: Task) -> MatchGraph:
    """The run's graph for the task (created on first use), or a fresh one when not sharing."""
    if graphs is None:
        return MatchGraph(task)
    if task.task_id not in graphs:
        graphs[task.task_id] = MatchGraph(task)
    return graphs[task.task_id]


def rate_bt(matches: Sequence[SystemMatch], systems: Sequence[str], rounds: int, seed: int,
            alpha: float = 0.01) -> list[SystemRating]:
    """Bradley–Terry ratings (Elo scale) with ``rounds`` bootstrap resamples, best first."""
    records = [m.record() for m in matches]
    intervals = bootstrap(lambda sample: bradley_terry(sample, systems, alpha=alpha), records, resamples=rounds, seed=seed)
    return _rows(intervals, records)


def rate_win_rate(matches: Sequence[SystemMatch], systems: Sequence[str], anchor: str, rounds: int,
                  seed: int) -> list[SystemRating]:
    """Win rates against the anchor with bootstrap intervals, best first; the anchor sits at 0.5."""
    records = [m.record() for m in matches]
    others = [s for s in systems if s != anchor]
    intervals = bootstrap(lambda sample: win_rates(sample, others), records, resamples=rounds, seed=seed)
    intervals = {name: intervals[name] for name in others}
    intervals[anchor] = Interval(0.5, 0.5, 0.5)
    return _rows(intervals, records)


def _rows(intervals: Mapping[str, Interval], records: Sequence[MatchRecord]) -> list[SystemRating]:
    played: dict[str, int] = {}
    for a, b, _ in records:
        played[a] = played.get(a, 0) + 1
        played[b] = played.get(b, 0) + 1
    order = sorted(intervals, key=lambda name: (-_finite(intervals[name].estimate), name))
    return [SystemRating(name, _none(intervals[name].estimate), _none(intervals[name].low), _none(intervals[name].high),
                         rank, played.get(name, 0)) for rank, name in enumerate(order, start=1)]


def _finite(value: float) -> float:
    return value if value is not None and math.isfinite(value) else -math.inf


def _none(value: float) -> float | None:
    return None if value is None or math.isnan(value) else float(value)


def arena(tasks: Sequence[Task], judge: Judge, cache: Any = None, seed: int = 0, debias: bool = False,
          bootstrap_rounds: int = 200, alpha: float = 0.01, systems: Sequence[str] | None = None,
          graphs: dict[str, MatchGraph] | None = None, progress: bool = False, judge_spec: str = "",
          data: str = "") -> Leaderboard:
    """Arena-lite: a tournament between the systems on every task, all matches fitted by BT.

    systems: only these systems take part (default: all in the data).
    debias: judge every match in both orders and decide on the averaged grades.
    bootstrap_rounds: resamples of the matches for the 95% intervals (0 = no intervals).
    alpha: the Bradley–Terry regularisation (see :func:`rankkit.ratings.bradley_terry`).
    graphs: task id -> MatchGraph, shared with other calls of the same run to reuse judgments.
    """
    names = list(systems) if systems is not None else all_systems(tasks)
    used = restrict(tasks, names)

    def play(task: Task, source: MatchSource) -> list[SystemMatch]:
        return play_tournament(task, source, _task_rng(seed, task.task_id, "arena"), debias)

    matches, cost = _play_all(used, play, judge, cache, graphs, progress, "arena")
    return Leaderboard(method="arena", systems=rate_bt(matches, names, bootstrap_rounds, seed, alpha),
                       matches=matches, cost=cost, scale="elo", seed=seed, debias=debias,
                       judge=_judge_info(judge, judge_spec), data=data)


def anchored(tasks: Sequence[Task], judge: Judge, anchor: str, cache: Any = None, seed: int = 0,
             debias: bool = False, bootstrap_rounds: int = 200, systems: Sequence[str] | None = None,
             graphs: dict[str, MatchGraph] | None = None, progress: bool = False, judge_spec: str = "",
             data: str = "") -> Leaderboard:
    """Baseline-mediated: each system against ``anchor``'s answer on every task; rating = win rate."""
    names = list(systems) if systems is not None else all_systems(tasks)
    if anchor not in names:
        raise LeaderboardError(f"anchor {anchor!r} is not among the systems ({', '.join(names)})")
    used = restrict(tasks, names)

    def play(task: Task, source: MatchSource) -> list[SystemMatch]:
        return play_against(task, source, _task_rng(seed, task.task_id, "anchored"), anchor, names, debias)

    matches, cost = _play_all(used, play, judge, cache, graphs, progress, "anchored")
    return Leaderboard(method="anchored", systems=rate_win_rate(matches, names, anchor, bootstrap_rounds, seed),
                       matches=matches, cost=cost, scale="win_rate", anchor=anchor, seed=seed, debias=debias,
                       judge=_judge_info(judge, judge_spec), data=data)


def induced_matches(task: Task, scores: Mapping[str, float]) -> list[SystemMatch]:
    """A per-task ranking read as pairwise results between its systems: the higher score wins,
    equal scores tie."""
    candidate_of = systems_of(task)
    names = list(candidate_of)
    matches = []
    for i, a in enumerate(names):
        for b in names[i + 1:]:
            sa, sb = scores[candidate_of[a]], scores[candidate_of[b]]
            matches.append(SystemMatch(task.task_id, a, b, 1.0 if sa > sb else 0.0 if sa < sb else 0.5))
    return matches


def from_strategy(strategy_run: Any, tasks: Sequence[Task], seed: int = 0, bootstrap_rounds: int = 200,
                  alpha: float = 0.01, judge: dict[str, Any] | None = None, data: str = "") -> Leaderboard:
    """A leaderboard from any per-task strategy's results (a :class:`rankkit.runner.StrategyRun`):
    each task's scores become induced pairwise results (:func:`induced_matches`), fitted by BT."""
    by_id = {t.task_id: t for t in tasks}
    matches: list[SystemMatch] = []
    for result in strategy_run.tasks:
        matches += induced_matches(by_id[result.task_id], result.scores)
    names = all_systems(tasks)
    return Leaderboard(method=strategy_run.name, systems=rate_bt(matches, names, bootstrap_rounds, seed, alpha),
                       matches=matches, cost=strategy_run.cost, scale="elo", seed=seed,
                       judge=judge or {}, data=data)


def build(tasks: Sequence[Task], judge: Judge, method: str = "arena", anchor: str | None = None,
          cache: Any = None, seed: int = 0, debias: bool = False, bootstrap_rounds: int = 200,
          systems: Sequence[str] | None = None, progress: bool = False, judge_spec: str = "",
          data: str = "") -> Leaderboard:
    """One entry point: ``method`` is ``arena``, ``anchored`` (needs ``anchor``) or any strategy
    spec (``knockout:debias=true``, ``bt`` …), whose per-task results are aggregated."""
    if method == "arena":
        return arena(tasks, judge, cache, seed, debias, bootstrap_rounds, systems=systems, progress=progress,
                     judge_spec=judge_spec, data=data)
    if method == "anchored":
        if anchor is None:
            raise LeaderboardError(f"the anchored leaderboard needs an anchor system (one of: {', '.join(all_systems(tasks))})")
        return anchored(tasks, judge, anchor, cache, seed, debias, bootstrap_rounds, systems=systems,
                        progress=progress, judge_spec=judge_spec, data=data)
    from rankkit.runner import run
    from rankkit.strategies import make_strategy

    strategy = make_strategy(method)
    used = restrict(tasks, systems) if systems is not None else list(tasks)
    all_systems(used)  # fail early when candidates lack systems
    result = run(used, [strategy], judge, cache, seed=seed, progress=progress, judge_spec=judge_spec, data=data)
    return from_strategy(result.strategies[0], used, seed, bootstrap_rounds, judge=_judge_info(judge, judge_spec),
                         data=data)


# ---------------------------------------------------------------------------------------------
# Adding a system


def _check_newcomer(board: Leaderboard, tasks: Sequence[Task], system: str) -> list[Task]:
    if system in board.names:
        raise LeaderboardError(f"system {system!r} is already on the leaderboard")
    missing = [name for name in board.names if name not in all_systems(tasks)]
    if missing:
        raise LeaderboardError(f"the data lack leaderboard system(s) {', '.join(missing)}")
    used = [t for t in restrict(tasks, [*board.names, system]) if system in systems_of(t)]
    if not used:
        raise LeaderboardError(f"no task has an answer by system {system!r}")
    return used


def binary_search_placement(board_order: Sequence[str], tasks: Sequence[Task], system: str,
                            play: Any, rng: random.Random) -> dict[str, Any]:
    """Seed 003, Algorithm 2: where ``system`` belongs in ``board_order`` (best first).

    play(task, opponent) -> points the newcomer scored on that task (1, ½ or 0).
    Returns ``{"position": 0-based index to insert at, "tie": bool, "steps": [...]}``.
    """
    n_comparisons = max(1, int(math.log2(len(board_order)))) if len(board_order) > 1 else 1
    n_matches = max(1, len(tasks) // n_comparisons)
    pool = list(tasks)
    rng.shuffle(pool)
    pool = pool + pool  # X <- concat(X; X): enough tasks for the extra steps a tie can take
    low, high = 0, len(board_order) - 1
    steps = []
    while low <= high:
        mid = (low + high) // 2
        batch = [pool.pop() for _ in range(min(n_matches, len(pool)))]
        if not batch:
            return {"position": mid, "tie": True, "steps": steps}
        wins = sum(play(task, board_order[mid]) for task in batch)
        steps.append({"opponent": board_order[mid], "wins": wins, "matches": len(batch)})
        if wins > len(batch) / 2:
            high = mid - 1
        elif wins < len(batch) / 2:
            low = mid + 1
        elif not pool:
            return {"position": mid, "tie": True, "steps": steps}
    return {"position": low, "tie": False, "steps": steps}


def add_system(board: Leaderboard, tasks: Sequence[Task], judge: Judge, system: str, method: str = "binary",
               cache: Any = None, seed: int | None = None, debias: bool | None = None,
               bootstrap_rounds: int = 200, graphs: dict[str, MatchGraph] | None = None,
               judge_spec: str = "", data: str = "") -> Leaderboard:
    """A new leaderboard with ``system`` added to ``board`` (see the module docstring).

    tasks: tasks holding the answers of the newcomer and of the leaderboard's systems.
    method: ``binary`` (Algorithm 2) or ``anchored`` (against the current top, or the board's anchor).
    seed, debias: default to the stored leaderboard's.
    """
    from rankkit.cache import NullCache

    if method not in ADD_METHODS:
        raise LeaderboardError(f"unknown add method {method!r} (choose {', '.join(ADD_METHODS)})")
    cache = cache if cache is not None else NullCache()
    judge.bind_cache(cache)
    seed = board.seed if seed is None else seed
    debias = board.debias if debias is None else debias
    used = _check_newcomer(board, tasks, system)
    cost = Cost()
    new_matches: list[SystemMatch] = []
    sources: dict[str, MatchSource] = {}

    def source_for(task: Task) -> MatchSource:
        if task.task_id not in sources:
            sources[task.task_id] = MatchSource(task, _graph(graphs, task), judge, cache, cost, strategy=f"add:{method}")
        return sources[task.task_id]

    rng = random.Random(f"{seed}|add|{system}")
    rows = [r for r in sorted(board.systems, key=lambda r: r.rank)]
    if method == "binary":
        def play(task: Task, opponent: str) -> float:
            played = play_against(task, source_for(task), rng, opponent, [system], debias)
            new_matches.extend(played)
            return played[0].outcome if played else 0.5

        placement = binary_search_placement([r.name for r in rows], used, system, play, rng)
        newcomer = SystemRating(system, None, None, None, 0, len(new_matches))
        ordered = [r.name for r in rows]
        ordered.insert(placement["position"], system)
        by_name = {r.name: r for r in rows}
        by_name[system] = newcomer
        systems = [replace(by_name[name], rank=rank) for rank, name in enumerate(ordered, start=1)]
    else:
        opponent = board.anchor if board.scale == "win_rate" and board.anchor else rows[0].name
        for task in used:
            new_matches += play_against(task, source_for(task), rng, opponent, [system], debias)
        if not new_matches:
            raise LeaderboardError(f"no task has answers by both {system!r} and {opponent!r}")
        records = [m.record() for m in new_matches]
        if board.scale == "win_rate":
            def rate(sample: Sequence[MatchRecord], items: Sequence[str]) -> dict[str, float]:
                return {system: win_rates(sample, items)[system], opponent: 0.5}
        else:
            top_rating = board.system(opponent).rating

            def rate(sample: Sequence[MatchRecord], items: Sequence[str]) -> dict[str, float]:
                p = win_rates(sample, items)[system]
                floor = 0.5 / len(sample)
                p = min(1.0 - floor, max(floor, p))
                return {system: top_rating + ELO_SCALE * math.log(p / (1.0 - p), ELO_BASE), opponent: top_rating}

        interval = bootstrap(lambda sample: rate(sample, [system, opponent]), records, resamples=bootstrap_rounds,
                             seed=rng.getrandbits(64))[system]
        newcomer = SystemRating(system, interval.estimate, _none(interval.low), _none(interval.high), 0, len(new_matches))
        ordered_rows = sorted([*rows, newcomer], key=lambda r: -_finite(r.rating))
        systems = [replace(r, rank=rank) for rank, r in enumerate(ordered_rows, start=1)]
        placement = {"position": [r.name for r in systems].index(system), "tie": False, "opponent": opponent,
                     "win_rate": win_rates(records, [system, opponent])[system]}
    placement.update(system=system, method=method, matches=len(new_matches), judge_calls=cost.judge_calls)
    total = Cost()
    total.add(board.cost)
    total.add(cost)
    return Leaderboard(method=board.method, systems=systems, matches=[*board.matches, *new_matches], cost=total,
                       scale=board.scale, anchor=board.anchor, seed=board.seed, debias=board.debias,
                       judge=board.judge or _judge_info(judge, judge_spec), data=data or board.data,
                       placement=placement)


def leaderboard_rows(board: Leaderboard, truth: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """Rows for :func:`rankkit.cli.format_table`: rank, system, rating, interval, matches (and truth)."""
    rows = []
    for row in board.systems:
        item = {"rank": row.rank, "name": row.name, "rating": row.rating, "ci_low": row.ci_low,
                "ci_high": row.ci_high, "matches": row.matches}
        if truth is not None:
            item["truth"] = truth.get(row.name)
        rows.append(item)
    return rows


# ---------------------------------------------------------------------------------------------
# Reporting (used by ``rankkit leaderboard``)


def resolve_truth(tasks: Sequence[Task], data_path: str | Path | None = None,
                  truth_path: str | Path | None = None) -> tuple[str, dict[str, float]] | None:
    """The system-level truth to correlate with, and where it came from: ``truth_path``, else a
    ``systems.jsonl`` beside the data, else the mean human score per system (None without any)."""
    if truth_path is not None:
        return str(truth_path), load_truth(truth_path)
    found = find_truth_file(data_path) if data_path is not None else None
    if found is not None:
        return str(found), load_truth(found)
    human = human_system_scores(tasks)
    return ("mean human score per system", human) if len(human) > 1 else None


def report(board: Leaderboard, truth: tuple[str, dict[str, float]] | None) -> tuple[list[dict[str, Any]], list[str], dict[str, Any] | None]:
    """Table rows, summary lines and the truth block (also stored in the JSON) for a leaderboard."""
    rows = leaderboard_rows(board, truth[1] if truth else None)
    kind = "Bradley-Terry rating (Elo scale)" if board.scale == "elo" else f"win rate against {board.anchor}"
    lines = [f"{len(board.systems)} systems · {board.method} · {kind} · "
             f"judge_calls {board.cost.judge_calls} · comparisons {board.cost.comparisons}"]
    if board.placement:
        where = board.placement
        lines.append(f"added {where['system']} by {where['method']}: rank {where['position'] + 1}"
                     f"{' (tie)' if where.get('tie') else ''} after {where['matches']} matches "
                     f"({where['judge_calls']} new judge calls)")
    block = None
    if truth is not None:
        block = {"source": truth[0], **correlations(board, truth[1])}
        lines.append(f"against {truth[0]} ({block['systems']} systems): "
                     f"Spearman {block['spearman']:.3f} · Kendall {block['kendall']:.3f}")
    return rows, lines, block
