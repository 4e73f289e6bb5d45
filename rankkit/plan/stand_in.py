"""What a dry run puts in place of the judge and the cache, so that a strategy's own ``rank()`` runs for free.

:class:`StandInJudge` has the identity of the run's judge (fingerprint, request keys, what it
supports) and answers every request at once with a *stand-in verdict*, made up by one of the
:data:`POLICIES` and marked ``extras={"stand_in": True}``, with status OK so that strategies take
it as any verdict. It never calls the judge it stands in for. For judges that read prompts it
puts the estimated size of each request's prompt in the verdict's ``usage``, so the run's own
cost accounting sums the prompt tokens of the new judgments per strategy.

:class:`ReadOnlyCache` serves what the persistent cache holds and never writes to it: what the
run would store is kept in memory for the rest of the dry run, where the run would find it too.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from rankkit.cache import NullCache
from rankkit.judges.base import Judge
from rankkit.judges.kway import ranking_from_scores
from rankkit.judgments import Grade, GroupChoice, GroupRanking, Verdict, Winner
from rankkit.plan.tokens import PromptSizes
from rankkit.tasks import Candidate, Task

#: A policy grades the answers of one request, as shown: two for a comparison, one for a grade.
Policy = Callable[[Task, Sequence[Candidate]], list[float]]


def _first(task: Task, shown: Sequence[Candidate]) -> list[float]:
    """The answer shown first wins (the scale's top, the others its bottom); a lone answer gets the
    midpoint. Shown in both orders, a pair ties."""
    low, high = task.scale
    return [high] + [low] * (len(shown) - 1) if len(shown) >= 2 else [(low + high) / 2]


@functools.lru_cache(maxsize=64)
def _places(salt: str, task_id: str, candidate_ids: tuple[str, ...]) -> dict[str, float]:
    """Where each candidate stands in a fixed pseudo-random order of its task, from 0 (bottom) to 1
    (top); ``salt`` picks the order. The same on every machine: a hash, not Python's salted ``hash``."""

    def key(cid: str) -> bytes:
        return hashlib.sha256(f"{salt}\x00{task_id}\x00{cid}".encode()).digest()

    ordered = sorted(candidate_ids, key=key)
    return {cid: i / max(1, len(ordered) - 1) for i, cid in enumerate(ordered)}


def _consistent(salt: str, reverse: bool = False) -> Policy:
    """A consistent judge: each answer graded by its place in a fixed pseudo-random order of the
    task's candidates (one order per ``salt``, upside down with ``reverse``), whichever is shown first."""

    def grades(task: Task, shown: Sequence[Candidate]) -> list[float]:
        low, high = task.scale
        places = _places(salt, task.task_id, tuple(task.candidate_ids))
        return [low + (high - low) * (1 - places[c.id] if reverse else places[c.id]) for c in shown]

    return grades


#: The stand-in verdict policies, by name: a judge that always prefers the answer shown first; a
#: consistent judge and its opposite (every verdict turned round); and a consistent judge with an
#: order of its own (not the mirror image of the first two). A dry run runs every strategy under
#: each of them (see :mod:`rankkit.plan.dry_run`).
POLICIES: dict[str, Policy] = {
    "first": _first,
    "ranked": _consistent("ranked"),
    "reversed": _consistent("ranked", reverse=True),
    "shuffled": _consistent("shuffled"),
}


class StandInJudge(Judge):
    """The run's judge as a dry run sees it: its identity, and stand-in verdicts (module docstring).

    Parameters
    ----------
    inner : Judge
        The judge stood in for (e.g. from ``make_judge(spec, stand_in=True)``); only its
        identity is read, it is never asked anything.
    policy : str, default "ranked"
        The name of the verdict policy (:data:`POLICIES`).
    sizes : PromptSizes or None, optional
        Prompt sizes to put in each verdict's ``usage`` (None: no prompts to count).
    """

    backend = "stand-in"
    capacity = 1  # one thread, one batch at a time: the run needs no dispatcher

    def __init__(self, inner: Judge, policy: str = "ranked", sizes: PromptSizes | None = None):
        self.inner = inner
        self.policy = policy
        self._grades = POLICIES[policy]
        self.sizes = sizes
        self.supports_pairwise = inner.supports_pairwise
        self.supports_pointwise = inner.supports_pointwise
        self.supports_kway = inner.supports_kway

    @property
    def fingerprint(self) -> str:
        return self.inner.fingerprint

    @property
    def description(self) -> str:
        return self.inner.description

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """The request key of the judge stood in for, so cache keys match the run's.

        Parameters
        ----------
        task : Task
            The task.
        *candidates : Candidate
            The candidates of the request, as shown.

        Returns
        -------
        list[Any]
            The inner judge's request key.
        """
        return self.inner.request_key(task, *candidates)

    def kway_key(self) -> list[Any]:
        """The k-way key of the judge stood in for.

        Returns
        -------
        list[Any]
            The inner judge's :meth:`~rankkit.judges.base.Judge.kway_key`.
        """
        return self.inner.kway_key()

    def bind_memo(self, memo: Any) -> None:
        """The judge stood in for is never bound: nothing it caches of its own is read or written.

        Parameters
        ----------
        memo : Any
            The run's memo, ignored.
        """

    def _usage(self, tokens: Callable[[], int]) -> dict[str, int]:
        return {} if self.sizes is None else {"prompt_tokens": tokens()}

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """A stand-in verdict on ``first`` against ``second``, from the policy's grades.

        Parameters
        ----------
        task : Task
            The task.
        first : Candidate
            The answer shown first.
        second : Candidate
            The answer shown second.

        Returns
        -------
        Verdict
            The higher grade wins (equal grades tie), marked ``extras={"stand_in": True, "policy": ...}``, with the prompt's estimated tokens in ``usage`` when sizes are counted.
        """
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
        """A stand-in choice of the best of ``candidates``, from the policy's grades.

        Parameters
        ----------
        task : Task
            The task.
        candidates : Sequence[Candidate]
            The group, as shown.

        Returns
        -------
        GroupChoice
            The best-graded candidate's position, with the grades, marked ``extras={"stand_in": True, "policy": ...}``, with the prompt's estimated tokens in ``usage`` when sizes are counted.
        """
        grades = tuple(self._grades(task, candidates))
        return GroupChoice(
            chosen=ranking_from_scores(grades)[0],
            grades=grades,
            raw=f"stand-in choice ({self.policy})",
            usage=self._usage(lambda: self.sizes.group(task, candidates, "choice")),
            extras={"stand_in": True, "policy": self.policy},
        )

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        """A stand-in ranking of ``candidates``, from the policy's grades.

        Parameters
        ----------
        task : Task
            The task.
        candidates : Sequence[Candidate]
            The group, as shown.

        Returns
        -------
        GroupRanking
            The positions best first, marked ``extras={"stand_in": True, "policy": ...}``, with the prompt's estimated tokens in ``usage`` when sizes are counted.
        """
        grades = self._grades(task, candidates)
        return GroupRanking(
            permutation=ranking_from_scores(grades),
            raw=f"stand-in ranking ({self.policy})",
            usage=self._usage(lambda: self.sizes.group(task, candidates, "ranking")),
            extras={"stand_in": True, "policy": self.policy},
        )

    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A stand-in grade of ``candidate``, from the policy.

        Parameters
        ----------
        task : Task
            The task.
        candidate : Candidate
            The answer graded.

        Returns
        -------
        Grade
            The policy's grade, marked ``extras={"stand_in": True, "policy": ...}``, with the prompt's estimated tokens in ``usage`` when sizes are counted.
        """
        (value,) = self._grades(task, (candidate,))
        return Grade(
            value=value,
            raw=f"stand-in grade ({self.policy})",
            usage=self._usage(lambda: self.sizes.point(task, candidate)),
            extras={"stand_in": True, "policy": self.policy},
        )


class ReadOnlyCache:
    """A cache that serves what ``inner`` holds and never writes to it; what the run would store
    is kept in memory instead, so that the rest of the dry run finds it as the run would."""

    def __init__(self, inner: Any):
        self.inner = inner
        self._written: dict[str, dict[str, Any]] = {}

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """The payloads under ``keys``: what this dry run stored first, else what the file holds.

        Parameters
        ----------
        keys : Sequence[str]
            Cache keys.

        Returns
        -------
        list[dict[str, Any] or None]
            One payload per key, None where there is none.
        """
        stored = self.inner.get_keys(keys)
        # What the run stored (only where the file had nothing it would serve) comes first.
        return [self._written.get(key, payload) for key, payload in zip(keys, stored)]

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        """Keep ``payload`` in memory under ``key`` (the first one stored wins); the file is never written.

        Parameters
        ----------
        key : str
            The cache key.
        fingerprint : str
            The judge's fingerprint (unused: kept for the cache interface).
        kind : str
            The judgment's kind (unused: kept for the cache interface).
        payload : dict[str, Any]
            The judgment as the cache stores it.
        """
        self._written.setdefault(key, payload)

    def flush(self) -> None:
        return None


def read_only_cache(path: str | Path | None, disabled: bool) -> Any:
    """The cache a dry run reads: the file when it exists (never created), else an empty one.

    Parameters
    ----------
    path : str or Path or None
        The cache file (None or empty: :data:`~rankkit.cache.DEFAULT_CACHE_PATH`).
    disabled : bool
        True for ``--no-cache``: an empty cache whatever the file.

    Returns
    -------
    Any
        A :class:`~rankkit.cache.JudgmentCache` on the file, or a :class:`~rankkit.cache.NullCache`.
    """
    from rankkit.cache import DEFAULT_CACHE_PATH, JudgmentCache

    path = Path(path) if path else DEFAULT_CACHE_PATH
    if disabled or not path.exists():
        return NullCache()
    return JudgmentCache(path)
