"""The shared match graph, and the match source strategies ask for judgments through.

**MatchGraph.** One networkx ``MultiDiGraph`` per task. Nodes are candidate ids; a node's
``points`` attribute maps judge fingerprint -> :class:`Grade`. Each judged comparison is one
edge ``first -> second`` keyed by judge fingerprint, carrying the judgment (both scores, winner,
raw output), the strategy that paid for it, its round, and every strategy that used it since.
All strategies of a run share one graph per task, so a comparison is paid for once per run.

**MatchSource.** What a strategy calls. For every comparison or grade it looks in the graph, and
hands everything missing, in one batch, to the run's :class:`~rankkit.engine.JudgmentEngine`
(cache, then judge; see :mod:`rankkit.engine`), so batching and concurrent judges stay busy.
It counts what the strategy used (``comparisons``, ``scores``) and what was new (``judge_calls``)
in a :class:`Cost`.

**Presentation order.** A judge often prefers the answer shown first (or second), so which of two
answers it sees first is part of every pairwise strategy. It is one parameter, ``order``, the same
in every strategy; a strategy says which two candidates meet (``source.play_many(pairs,
order=self.order, rng=rng)``) and the match source shows them:

* ``given`` — the pair as the strategy passes it (a strategy that draws its pairs at random passes
  them in a random orientation already);
* ``random`` — a seeded coin flip per pair, from the generator the strategy ranks with. A pair the
  strategy was shown before is shown in the order it was *not* shown last, so a rematch is a new
  judgment; with ``reuse`` (heapsort, sliding) an order the match graph already holds is reused
  at no cost before any coin is flipped;
* ``both`` — the pair as passed, then reversed, combined into one :class:`Match` (grades averaged);
  it costs two judgments, and budgets count it as two.

**Default policy.** A strategy shows every pair in ``both`` orders when it judges every pair or
sorts with the judge as comparator (``elo``, ``bt``, ``heapsort``, ``sliding``), and in one order
otherwise. That one order is ``given`` when the strategy already draws its pairs at random
(``knockout``, ``pairwise``: shuffled; ``swiss``, ``active``, ``panel_elo``: a coin per pair as it
is drawn) and ``random`` when pairs can come back or come out of a sort (``double_elimination``'s
rematches; ``heapsort``, ``sliding``); ``elo`` and ``bt`` in one order list every pair in data
order (``given``), as they always have. Each strategy declares this in one place: its ``order``
field's default (plus, for the four whose default is ``both``, the class attribute
``single_order``). ``debias=true`` is an alias of ``order=both`` and ``debias=false`` of the
strategy's one order (:meth:`~rankkit.strategies.base.Strategy.undebiased_order`); labels and
results files keep the alias where it applies (``knockout:debias=true``), so specs, configs and
results written before ``order`` existed stay valid under the same names.
"""

from __future__ import annotations

import random
from dataclasses import asdict, dataclass, field
from typing import Any, Iterator, Sequence

import networkx as nx

from rankkit.engine import JudgmentEngine, Origin
from rankkit.judges.base import Judge, Verdict, ParseStatus, Grade, Winner
from rankkit.order import check_order, coin_order
from rankkit.tasks import Task


class MatchGraph:
    """All judgments made on one task: comparisons as edges, grades on nodes."""

    def __init__(self, task: Task):
        self.task = task
        self.graph = nx.MultiDiGraph(task_id=task.task_id)
        for cand in task.candidates:
            self.graph.add_node(cand.id, points={})

    # -- comparisons --------------------------------------------------------------------------
    def find_pair(self, fingerprint: str, first: str, second: str) -> Verdict | None:
        data = self.graph.get_edge_data(first, second, key=fingerprint)
        return None if data is None else data["judgment"]

    def add_pair(self, fingerprint: str, first: str, second: str, judgment: Verdict,
                 strategy: str | None = None, round: int | None = None) -> None:
        self.graph.add_edge(first, second, key=fingerprint, judgment=judgment, fingerprint=fingerprint,
                            strategy=strategy, round=round, used_by=[])

    def mark_used(self, fingerprint: str, first: str, second: str, strategy: str | None, round: int | None) -> None:
        self.graph.edges[first, second, fingerprint]["used_by"].append({"strategy": strategy, "round": round})

    def comparisons(self, fingerprint: str | None = None) -> Iterator[tuple[str, str, Verdict]]:
        """Every judged comparison (first, second, judgment), optionally of one judge only."""
        for first, second, key, data in self.graph.edges(keys=True, data=True):
            if fingerprint is None or key == fingerprint:
                yield first, second, data["judgment"]

    # -- grades -------------------------------------------------------------------------------
    def find_point(self, fingerprint: str, candidate: str) -> Grade | None:
        return self.graph.nodes[candidate]["points"].get(fingerprint)

    def add_point(self, fingerprint: str, candidate: str, judgment: Grade) -> None:
        self.graph.nodes[candidate]["points"][fingerprint] = judgment


@dataclass
class Cost:
    """What a strategy spent. ``comparisons``/``grades`` are distinct judgments it used;
    ``judge_calls`` those that were new (not in the graph or the cache) and so were paid for."""

    comparisons: int = 0
    grades: int = 0
    judge_calls: int = 0
    cache_hits: int = 0
    shared_hits: int = 0
    parse_failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    retries: int = 0  # requests a judge had to repeat (HTTP backends: 429, 5xx, timeouts)
    analyses: int = 0  # PREPAIR per-answer analyses generated (their tokens are in the token counts)

    def add(self, other: "Cost") -> None:
        for name, value in asdict(other).items():
            setattr(self, name, getattr(self, name) + value)

    def to_dict(self) -> dict[str, int]:
        return asdict(self)


@dataclass(frozen=True)
class Comparison:
    """One comparison as a strategy used it: who was shown first, the round, and the verdict."""

    first: str
    second: str
    judgment: Verdict
    round: int | None = None

    def to_dict(self) -> dict[str, Any]:
        return {"first": self.first, "second": self.second, "round": self.round,
                "first_grade": self.judgment.first_grade, "second_grade": self.judgment.second_grade,
                "winner": self.judgment.winner.value, "probability": self.judgment.probability,
                "status": self.judgment.status.value, "raw": self.judgment.raw}


@dataclass(frozen=True)
class Match:
    """The outcome of playing a against b: a shown first, and with ``order=both`` also b first.

    ``grade_a``/``grade_b`` are the grades averaged over the orders played; ``outcome`` is 1.0 when
    a won, 0.0 when b won and 0.5 for a tie. It comes from the averaged scores; when they are equal
    the judges' own verdicts decide (they may carry information the scores lack, e.g. choice-token
    probabilities), and only when those balance too is it a tie.
    """

    a: str
    b: str
    grade_a: float
    grade_b: float
    outcome: float
    matches: tuple[Comparison, ...] = field(default=())


def _verdict_for_a(match: Comparison, a: str) -> float:
    if match.judgment.winner is Winner.TIE:
        return 0.5
    first_won = match.judgment.winner is Winner.FIRST
    return 1.0 if first_won == (match.first == a) else 0.0


def make_match(a: str, b: str, matches: Sequence[Comparison]) -> Match:
    """Combine the matches between a and b (either order) into a :class:`Match`."""
    grade_a = grade_b = 0.0
    for match in matches:
        sa, sb = (match.judgment.first_grade, match.judgment.second_grade) if match.first == a else (
            match.judgment.second_grade, match.judgment.first_grade)
        grade_a += sa
        grade_b += sb
    grade_a /= len(matches)
    grade_b /= len(matches)
    if grade_a != grade_b:
        outcome = 1.0 if grade_a > grade_b else 0.0
    else:
        votes = sum(_verdict_for_a(m, a) for m in matches) / len(matches)
        outcome = 1.0 if votes > 0.5 else 0.0 if votes < 0.5 else 0.5
    return Match(a=a, b=b, grade_a=grade_a, grade_b=grade_b, outcome=outcome, matches=tuple(matches))


class MatchSource:
    """Graph -> cache -> judge lookup of judgments for one task and one strategy.

    task / graph: the task and its shared match graph.
    judge / cache: the run's judge and cache (a :class:`~rankkit.cache.JudgmentCache`, a
        ``NullCache``, or the run's :class:`~rankkit.engine.JudgmentStore`).
    cost: where what the strategy used and paid is counted.
    strategy: the label recorded on the graph's edges.
    engine: the run's :class:`~rankkit.engine.JudgmentEngine` (the runner passes one shared by all
        tasks, so concurrent tasks meet in one dispatcher); by default one is made for this source.
    order / rng: the presentation order of a duel whose caller names none (see the module
        docstring), and the generator ``random`` flips its coins with when the caller passes none.
    """

    def __init__(self, task: Task, graph: MatchGraph, judge: Judge, cache: Any, cost: Cost,
                 strategy: str | None = None, engine: JudgmentEngine | None = None, progress: Any = None,
                 order: str = "given", rng: random.Random | None = None):
        check_order("match source", order)
        self.task = task
        self.graph = graph
        self.judge = judge
        self.engine = engine if engine is not None else JudgmentEngine(judge, cache)
        self.cost = cost
        self.strategy = strategy
        self.progress = progress  # told about every batch of judgments (the run's progress bar)
        self.fingerprint = self.engine.fingerprint
        self.matches: list[Comparison] = []
        self._used_pairs: set[tuple[str, str]] = set()
        self._used_points: set[str] = set()
        self.order = order
        self.rng = rng
        self._last_shown: dict[frozenset[str], tuple[str, str]] = {}  # per pair, the order shown last

    def _charge(self, judgment: Verdict | Grade, origin: Origin) -> None:
        if origin is not Origin.JUDGE:  # the cache, or another task paying for it at that moment
            self.cost.cache_hits += 1
            return
        self.cost.judge_calls += 1
        self.cost.prompt_tokens += int(judgment.usage.get("prompt_tokens", 0))
        self.cost.completion_tokens += int(judgment.usage.get("completion_tokens", 0))
        self.cost.retries += int(judgment.usage.get("retries", 0))
        self.cost.analyses += int(judgment.usage.get("analyses", 0))
        if judgment.status is ParseStatus.FAILED:
            self.cost.parse_failures += 1

    def _resolve(self, kind: str, wanted: Sequence[Any], round: int | None) -> dict[Any, Any]:
        """The judgment of every distinct item of ``wanted`` (a pair or a candidate id): from the
        graph if it holds one, else through the engine (cache, then judge), added to the graph."""
        task, graph, fingerprint = self.task, self.graph, self.fingerprint
        results: dict[Any, Any] = {}
        missing: list[Any] = []
        for item in wanted:
            if item in results:
                continue
            judgment = graph.find_pair(fingerprint, *item) if kind == "pair" else graph.find_point(fingerprint, item)
            if judgment is not None:
                self.cost.shared_hits += 1
                results[item] = judgment
            else:
                results[item] = None  # placeholder: keeps de-duplication O(1)
                missing.append(item)
        if missing:
            if kind == "pair":
                requests = [(task, task.candidate(a), task.candidate(b)) for a, b in missing]
            else:
                requests = [(task, task.candidate(c)) for c in missing]
            for item, (judgment, origin) in zip(missing, self.engine.judgments(kind, requests)):
                if kind == "pair":
                    graph.add_pair(fingerprint, item[0], item[1], judgment, self.strategy, round)
                else:
                    graph.add_point(fingerprint, item, judgment)
                self._charge(judgment, origin)
                results[item] = judgment
        return results

    def _report(self, before: tuple[int, ...]) -> None:
        """Tell the run's progress bar what the last call used (distinct judgments) and paid."""
        if self.progress is not None:
            cost = self.cost
            self.progress.judged(cost.comparisons + cost.grades - before[0], cost.judge_calls - before[1],
                                 cost.cache_hits - before[2], cost.shared_hits - before[3])

    def _snapshot(self) -> tuple[int, ...]:
        cost = self.cost
        return (cost.comparisons + cost.grades, cost.judge_calls, cost.cache_hits, cost.shared_hits)

    # -- comparisons --------------------------------------------------------------------------
    def known(self, first: str, second: str) -> Verdict | None:
        """The judgment of (first, second) if the graph already holds it; never calls the judge."""
        return self.graph.find_pair(self.fingerprint, first, second)

    def compare_many(self, pairs: Sequence[tuple[str, str]], round: int | None = None) -> list[Verdict]:
        """Judge each (first, second) pair, reusing the graph and the cache; returns in order."""
        for first, second in pairs:
            if first == second:
                raise ValueError(f"cannot compare candidate {first!r} with itself")
        before = self._snapshot()
        results = self._resolve("pair", pairs, round)
        out = []
        for pair in pairs:
            judgment = results[pair]
            if pair not in self._used_pairs:
                self._used_pairs.add(pair)
                self.cost.comparisons += 1
                self.graph.mark_used(self.fingerprint, pair[0], pair[1], self.strategy, round)
                self.matches.append(Comparison(pair[0], pair[1], judgment, round))
            out.append(judgment)
        self._report(before)
        return out

    def compare(self, first: str, second: str, round: int | None = None) -> Verdict:
        return self.compare_many([(first, second)], round)[0]

    def play_many(self, pairs: Sequence[tuple[str, str]], debias: bool | None = None, round: int | None = None,
                  *, order: str | None = None, rng: random.Random | None = None, reuse: bool = False) -> list[Match]:
        """Play each pair (a, b) in the presentation order ``order`` (see the module docstring);
        returns one :class:`Match` per pair, whose ``a`` is the candidate shown first.

        order: ``given``, ``random`` or ``both``; None: ``both`` when ``debias`` (the older
            spelling), else the source's own order.
        rng: the generator ``random`` flips its coins with (the strategy's); the source's when None.
        reuse: with ``random``, show a pair in an order the match graph already holds, when it
            holds one, instead of flipping a coin (no new judgment).
        """
        order = order if order is not None else "both" if debias else self.order
        check_order("duel", order)
        shown = [self._present(a, b, order, rng, reuse) for a, b in pairs]  # every coin before any judgment
        ordered = shown + ([(b, a) for a, b in shown] if order == "both" else [])
        judgments = dict(zip(ordered, self.compare_many(ordered, round)))
        duels = []
        for first, second in shown:
            played = [Comparison(first, second, judgments[(first, second)], round)]
            if order == "both":
                played.append(Comparison(second, first, judgments[(second, first)], round))
            duels.append(make_match(first, second, played))
        return duels

    def play(self, a: str, b: str, debias: bool | None = None, round: int | None = None, *, order: str | None = None,
             rng: random.Random | None = None, reuse: bool = False) -> Match:
        """One pair's :meth:`play_many`."""
        return self.play_many([(a, b)], debias, round, order=order, rng=rng, reuse=reuse)[0]

    def _present(self, a: str, b: str, order: str, rng: random.Random | None, reuse: bool) -> tuple[str, str]:
        """The order (a, b) is shown in first: as given, unless ``order`` is ``random`` (see the
        module docstring: a rematch reversed, else with ``reuse`` an order the graph holds, else a coin)."""
        pair = frozenset((a, b))
        if order != "random":
            shown = (a, b)
        elif pair in self._last_shown:
            last = self._last_shown[pair]
            shown = (last[1], last[0])
        elif reuse and self.known(a, b) is not None:
            shown = (a, b)
        elif reuse and self.known(b, a) is not None:
            shown = (b, a)
        else:
            generator = rng if rng is not None else self.rng
            if generator is None:
                raise ValueError("order=random needs a generator: pass rng= to the duel or to the MatchSource")
            shown = coin_order(a, b, generator)
        self._last_shown[pair] = shown
        return shown

    # -- grades -------------------------------------------------------------------------------
    def grade_many(self, candidates: Sequence[str]) -> list[Grade]:
        """Grade each candidate, reusing the graph and the cache; returns in order."""
        before = self._snapshot()
        results = self._resolve("point", candidates, None)
        for cand in candidates:
            if cand not in self._used_points:
                self._used_points.add(cand)
                self.cost.grades += 1
        self._report(before)
        return [results[c] for c in candidates]

    def grade(self, candidate: str) -> Grade:
        return self.grade_many([candidate])[0]
