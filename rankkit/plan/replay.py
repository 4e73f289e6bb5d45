"""The judgment cache as a dry run sees it: opened read-only, and a strategy replayed on it by a judge that answers nothing.

When a strategy's later judgments depend on earlier verdicts, :func:`replay_on_cache` runs it with
:class:`CacheOnlyJudge`, which has the real judge's identity but raises :class:`NotCached` the
moment the strategy asks for a judgment the cache lacks; :class:`RecordingCache` notes which
judgments it found. A fully cached task thus gives exact figures; otherwise the replay stops at
the first judgment not cached.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

from rankkit.cache import NullCache, is_failed, judgment_key
from rankkit.judges.base import Judge, ComparisonRequest, GradeRequest
from rankkit.matches import Cost, MatchGraph, MatchSource
from rankkit.strategies.base import Strategy
from rankkit.tasks import Candidate, Task, task_rng

#: One judgment as the run's match graph knows it: its kind (``pair``/``point``) and the candidate
#: ids in the order shown.
Key = tuple[str, tuple[str, ...]]


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

    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[Any]:
        raise NotCached
        yield  # a generator, like every judge's batch method

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[Any]:
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
    from rankkit.judges.base import Verdict, Grade

    graph = MatchGraph(task)
    faithful = not uncertain
    fingerprint = judge.fingerprint
    for kind, ids in made_before:
        stored = cache.get(fingerprint, kind, judge.request_key(task, *(task.candidate(c) for c in ids)))
        if stored is None:
            faithful = False  # made new earlier in the run: its verdict is not known yet
        elif kind == "pair":
            graph.add_pair(fingerprint, ids[0], ids[1], Verdict.from_dict(stored))
        else:
            graph.add_point(fingerprint, ids[0], Grade.from_dict(stored))
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


def read_only_cache(path: str | Path | None, disabled: bool) -> Any:
    """The cache a dry run reads: the file when it exists (never created), else an empty one."""
    from rankkit.cache import DEFAULT_CACHE_PATH, JudgmentCache

    path = Path(path) if path else DEFAULT_CACHE_PATH
    if disabled or not path.exists():
        return NullCache()
    return JudgmentCache(path)

