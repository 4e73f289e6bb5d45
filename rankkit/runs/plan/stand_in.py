"""What a dry run puts in place of the judge and the cache, so that a strategy's own ``rank()`` runs for free.

:class:`StandInJudge` has the run judge's identity and answers at once with a stand-in verdict
from one of the :data:`POLICIES` (status OK, ``extras={"stand_in": True}``, estimated prompt
tokens in ``usage``). :class:`ReadOnlyCache` serves the persistent cache and never writes it.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rankkit.data.tasks import Candidate, Task
from rankkit.judges.base import Judge
from rankkit.judgments.cache import NullCache
from rankkit.judgments.judge_protocol import Capabilities
from rankkit.judgments.values import Grade, GroupChoice, GroupRanking, Verdict, Winner
from rankkit.prompts.kway_verdicts import ranking_from_scores
from rankkit.runs.plan.tokens import PromptSizes

#: A policy grades the answers of one request, as shown: two for a comparison, one for a grade.
Policy = Callable[[Task, Sequence[Candidate]], list[float]]


def _first(task: Task, shown: Sequence[Candidate]) -> list[float]:
    """The answer shown first wins; a lone answer gets the midpoint."""
    low, high = task.scale
    return [high] + [low] * (len(shown) - 1) if len(shown) >= 2 else [(low + high) / 2]


@functools.lru_cache(maxsize=64)
def _places(salt: str, task_id: str, candidate_ids: tuple[str, ...]) -> dict[str, float]:
    """Each candidate's place (0 bottom, 1 top) in a pseudo-random order per ``salt``, stable across machines."""

    def key(cid: str) -> bytes:
        return hashlib.sha256(f"{salt}\x00{task_id}\x00{cid}".encode()).digest()

    ordered = sorted(candidate_ids, key=key)
    return {cid: i / max(1, len(ordered) - 1) for i, cid in enumerate(ordered)}


def _consistent(salt: str, reverse: bool = False) -> Policy:
    """A consistent judge grading each answer by its place in a fixed order (upside down with ``reverse``)."""

    def grades(task: Task, shown: Sequence[Candidate]) -> list[float]:
        low, high = task.scale
        places = _places(salt, task.task_id, tuple(task.candidate_ids))
        return [low + (high - low) * (1 - places[c.id] if reverse else places[c.id]) for c in shown]

    return grades


#: The stand-in verdict policies: first shown wins; a consistent judge, its opposite, and one with
#: an order of its own. A dry run runs every strategy under each.
POLICIES: dict[str, Policy] = {
    "first": _first,
    "ranked": _consistent("ranked"),
    "reversed": _consistent("ranked", reverse=True),
    "shuffled": _consistent("shuffled"),
}


class StandInJudge(Judge):
    """The run's judge as a dry run sees it: its identity, and stand-in verdicts.

    Parameters
    ----------
    inner
        The judge stood in for (e.g. ``make_judge(spec, stand_in=True)``); never asked anything.
    policy
        A name in :data:`POLICIES`.
    sizes
        Prompt sizes to put in each verdict's ``usage`` (None: no prompts to count).
    """

    backend = "stand-in"

    def __init__(self, inner: Judge, policy: str = "ranked", sizes: PromptSizes | None = None):
        self.inner = inner
        self.policy = policy
        self._grades = POLICIES[policy]
        self.sizes = sizes
        gives = inner.capabilities
        # capacity 1: one thread, one batch at a time; the run needs no dispatcher
        self.capabilities = Capabilities(pointwise=gives.pointwise, pairwise=gives.pairwise, kway=gives.kway)

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def description(self) -> str:
        return self.inner.description

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """The inner judge's request key, so cache keys match the run's."""
        return self.inner.request_key(task, *candidates)

    def kway_key(self) -> list[Any]:
        """The inner judge's k-way key."""
        return self.inner.kway_key()

    def _usage(self, tokens: Callable[[], int]) -> dict[str, int]:
        return {} if self.sizes is None else {"prompt_tokens": tokens()}

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """A stand-in verdict: the higher policy grade wins, equal grades tie."""
        first_grade, second_grade = self._grades(task, (first, second))
        winner = (
            Winner.FIRST if first_grade > second_grade else Winner.SECOND if second_grade > first_grade else Winner.TIE
        )
        return Verdict(
            first_grade=first_grade,
            second_grade=second_grade,
            winner=winner,
            raw=f"stand-in verdict ({self.policy})",
            usage=self._usage(lambda: self.sizes.pair(task, first, second)),
            extras={"stand_in": True, "policy": self.policy},
        )

    def choose(self, task: Task, candidates: Sequence[Candidate]) -> GroupChoice:
        """A stand-in choice of the best-graded of ``candidates``."""
        grades = tuple(self._grades(task, candidates))
        return GroupChoice(
            chosen=ranking_from_scores(grades)[0],
            grades=grades,
            raw=f"stand-in choice ({self.policy})",
            usage=self._usage(lambda: self.sizes.group(task, candidates, "choice")),
            extras={"stand_in": True, "policy": self.policy},
        )

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        """A stand-in ranking of ``candidates`` by the policy's grades."""
        grades = self._grades(task, candidates)
        return GroupRanking(
            permutation=ranking_from_scores(grades),
            raw=f"stand-in ranking ({self.policy})",
            usage=self._usage(lambda: self.sizes.group(task, candidates, "ranking")),
            extras={"stand_in": True, "policy": self.policy},
        )

    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A stand-in grade of ``candidate`` from the policy."""
        (value,) = self._grades(task, (candidate,))
        return Grade(
            value=value,
            raw=f"stand-in grade ({self.policy})",
            usage=self._usage(lambda: self.sizes.point(task, candidate)),
            extras={"stand_in": True, "policy": self.policy},
        )


class ReadOnlyCache:
    """A cache that serves ``inner`` and never writes it; what the run stores is kept in memory."""

    def __init__(self, inner: Any):
        self.inner = inner
        self._written: dict[str, dict[str, Any]] = {}

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """One payload per key (None where none): what this dry run stored first, else what the file holds."""
        stored = self.inner.get_keys(keys)
        # What the run stored (only where the file had nothing it would serve) comes first.
        return [self._written.get(key, payload) for key, payload in zip(keys, stored)]

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        """Keep ``payload`` in memory under ``key`` (first stored wins); the file is never written."""
        self._written.setdefault(key, payload)

    def flush(self) -> None:
        return None


def read_only_cache(path: str | Path | None, disabled: bool) -> Any:
    """The cache a dry run reads: the file when it exists (never created), else an empty one.

    ``path`` None or empty means :data:`~rankkit.judgments.cache.DEFAULT_CACHE_PATH`; ``disabled`` (``--no-cache``)
    gives an empty cache whatever the file.
    """
    from rankkit.judgments.cache import DEFAULT_CACHE_PATH, JudgmentCache
    from rankkit.judgments.cache_postgres import PostgresJudgmentCache, is_postgres_url

    if not disabled and is_postgres_url(path):
        return PostgresJudgmentCache(path)
    path = Path(path) if path else DEFAULT_CACHE_PATH
    if disabled or not path.exists():
        return NullCache()
    return JudgmentCache(path)
