"""The judge protocol every backend implements (the judgments it returns: :mod:`rankkit.judgments`).

More in ``docs/judges.md``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from rankkit.errors import RankkitError
from rankkit.judgments import ComparisonRequest, Grade, GradeRequest, GroupChoice, GroupRanking, GroupRequest, Verdict
from rankkit.tasks import Candidate, Task


def content_key(task: Task, *candidates: Candidate) -> list[Any]:
    """What a prompt-reading judge sees of a request: prompt, reference, scale, metadata and the texts in order.

    JSON-ready values in a fixed order; see :meth:`Judge.request_key`.
    """
    return [task.prompt, task.reference, list(task.scale), task.meta_key, *(candidate.text for candidate in candidates)]


def add_usage(total: dict[str, int], usage: Mapping[str, int]) -> None:
    """Add a judgment's ``usage`` counters (tokens, retries, analyses...) into ``total`` in place."""
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)


class JudgeError(RankkitError, RuntimeError):
    """A judge could not produce a judgment (the backend failed, not the parse); a rerun resumes from the cache."""

    exit_code = 1
    resumable = True


class Judge:
    """Base class of all judges; subclasses implement ``grade`` and/or ``compare``.

    The :attr:`fingerprint` is the cache's name for a judge: judges with equal fingerprints share
    judgments. By default it names the class and its public constructor parameters (each
    ``__init__`` parameter stored under the same name). A judge declares another identity by setting
    ``backend`` and overriding :meth:`fingerprint_fields`; bump ``version`` when the same parameters
    start giving other answers. ``simulated`` marks judges whose output is not a real LLM's.

    Example
    -------
    >>> class Longer(Judge):
    ...     def __init__(self, margin: float = 1.0):
    ...         self.margin = margin
    ...     def compare(self, task, first, second):
    ...         ...
    >>> Longer(2.0).fingerprint_fields()
    {'margin': 2.0}
    >>> json.loads(Longer(2.0).fingerprint)["judge"].endswith(".Longer")
    True
    >>> Longer(2.0).fingerprint == Longer(3.0).fingerprint
    False
    """

    backend: ClassVar[str | None] = None
    version: ClassVar[str] = "1"
    simulated: ClassVar[bool] = False
    supports_pointwise: ClassVar[bool] = True
    supports_pairwise: ClassVar[bool] = True
    #: Whether the judge gives k-way judgments (``choose``/``rank``, :mod:`rankkit.judges.kway`).
    supports_kway: ClassVar[bool] = False
    #: How many requests the backend can usefully work on at once (an HTTP judge: its concurrency
    #: times its replicas; a local model: its batch size). 1 means "call me from one thread, one
    #: batch at a time": the runner then ranks tasks one after another with no threads.
    capacity: int = 1
    #: Whether the backend gains from waiting until ``capacity`` requests are ready (a local
    #: model's batch) rather than getting each request as soon as a slot frees (an HTTP server).
    fills_batches: bool = False

    def fingerprint_fields(self) -> dict[str, Any]:
        """Everything that changes a judgment (JSON-ready); by default the public constructor parameters.

        A value that is itself a judge stands for its fingerprint. Raises :class:`TypeError` for a
        value with no stable text form (printed with its memory address): override this method then.
        """
        fields: dict[str, Any] = {}
        for name in inspect.signature(type(self).__init__).parameters:
            if name == "self" or name.startswith("_") or name not in vars(self):
                continue
            value = vars(self)[name]
            if isinstance(value, Judge):
                value = value.fingerprint
            elif not isinstance(value, (str, int, float, bool, type(None), list, tuple, dict)):
                text = repr(value)
                if " at 0x" in text:
                    raise TypeError(
                        f"judge {type(self).__qualname__}: parameter {name!r} ({text}) has no stable "
                        f"identity; override fingerprint_fields() to name what changes its judgments"
                    )
                value = text
            fields[name] = value
        return fields

    @property
    def fingerprint(self) -> str:
        """The judge's identity as a JSON string (see the class docstring)."""
        name = (
            {"backend": self.backend}
            if self.backend
            else {"judge": f"{type(self).__module__}.{type(self).__qualname__}"}
        )
        fields = {**name, "version": self.version, **self.fingerprint_fields()}
        return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)

    @property
    def description(self) -> str:
        """A short human-readable name for tables and reports."""
        return self.backend or type(self).__name__

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """Everything besides the fingerprint that the answer to a request depends on: its cache key.

        It must be complete: requests with equal keys must be interchangeable. The default
        (:func:`content_key`) suits a judge that reads only its rendered prompt; candidate ids are not in
        it. Judges that look at anything else (the simulator reads ids and human scores) extend it.
        """
        return content_key(task, *candidates)

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Raise a :class:`~rankkit.errors.RankkitError` when this judge cannot judge ``tasks``.

        Called before any judgment, so nothing is paid for first. The default accepts any tasks.
        """

    # -- single judgments ---------------------------------------------------------------------
    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A pointwise grade of ``candidate`` on the task's scale."""
        raise NotImplementedError(f"judge {self.description!r} does not grade single answers")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """A verdict on ``first`` and ``second``, shown in that order, with a score for each."""
        raise NotImplementedError(f"judge {self.description!r} does not compare pairs")

    # -- batched judgments --------------------------------------------------------------------
    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Yield ``(index in requests, grade)`` for each request as it is ready (default: one by one)."""
        for index, (task, candidate) in enumerate(requests):
            yield index, self.grade(task, candidate)

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Yield ``(index in requests, verdict)`` for each request as it is ready (default: one by one)."""
        for index, (task, first, second) in enumerate(requests):
            yield index, self.compare(task, first, second)

    # -- k-way judgments (rankkit.judges.kway) -------------------------------------------------
    def choose(self, task: Task, candidates: Sequence[Candidate]) -> GroupChoice:
        """The best of ``candidates`` as shown (slot 0 first), with probabilities or grades where known."""
        raise NotImplementedError(f"judge {self.description!r} does not give k-way judgments")

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        """``candidates`` (slot 0 first) ranked best first: a permutation of slots."""
        raise NotImplementedError(f"judge {self.description!r} does not give k-way judgments")

    def choose_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupChoice]]:
        """Yield ``(index in requests, GroupChoice)`` for each ``(task, candidates)`` request (default: one by one)."""
        for index, (task, candidates) in enumerate(requests):
            yield index, self.choose(task, candidates)

    def rank_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupRanking]]:
        """Yield ``(index in requests, GroupRanking)`` for each ``(task, candidates)`` request (default: one by one)."""
        for index, (task, candidates) in enumerate(requests):
            yield index, self.rank(task, candidates)

    def kway_key(self) -> list[Any]:
        """What a k-way judgment depends on besides fingerprint and request key (JSON-ready; default empty)."""
        return []

    def bind_memo(self, memo: Any) -> None:
        """Called by the runner with the run's :class:`~rankkit.memo.JudgmentMemo`.

        Judges built on other judgments (panel votes, raw calibrated judgments, PREPAIR analyses) look
        them up in it; judges that wrap others pass it on.
        """
        object.__setattr__(self, "_bound_memo", memo)  # judges may be frozen dataclasses

    def close(self) -> None:
        """Release resources (connections, models). Judges are usable as context managers."""

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Called by the runner with its progress bar's ``note``, for a judge with a state to show beside the counts."""

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
