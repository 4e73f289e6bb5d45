"""The judge protocol every backend implements (the judgments it returns: :mod:`rankkit.judgments`).

:class:`Judge`: ``grade`` / ``compare`` (and k-way ``choose`` / ``rank``), their batched ``*_many``
forms yielding ``(index, judgment)`` as each is ready, and the ``fingerprint`` that keys the cache.

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
    """What a prompt-reading judge sees of a request: prompt, reference, scale, metadata (in a
    stable text form) and the candidates' texts in the order shown. See :meth:`Judge.request_key`.

    Parameters
    ----------
    task : Task
        The task: prompt, reference, grading scale and metadata.
    *candidates : Candidate
        The candidates, in the order shown.

    Returns
    -------
    list[Any]
        The key: JSON-ready values, in a fixed order.
    """
    return [task.prompt, task.reference, list(task.scale), task.meta_key, *(candidate.text for candidate in candidates)]


def add_usage(total: dict[str, int], usage: Mapping[str, int]) -> None:
    """Add a judgment's ``usage`` counters (tokens, retries, analyses...) into ``total``.

    Parameters
    ----------
    total : dict[str, int]
        The counters summed so far; updated in place.
    usage : Mapping[str, int]
        One judgment's counters.
    """
    for key, value in usage.items():
        total[key] = total.get(key, 0) + int(value)


class JudgeError(RankkitError, RuntimeError):
    """A judge could not produce a judgment (the backend failed, not the parse); a rerun may
    succeed and resumes from the cache."""

    exit_code = 1
    resumable = True


class Judge:
    """Base class of all judges; subclasses implement ``grade`` and/or ``compare``.

    **Identity.** The :attr:`fingerprint` is the cache's name for a judge: two judges with the
    same fingerprint are served each other's judgments. By default it names the judge's class
    (module and qualified name) and its public constructor parameters (each ``__init__``
    parameter stored on the instance under the same name), so two judges written by users never
    share cached judgments unless they are the same class built with the same parameters. A judge
    declares a different identity by setting ``backend`` (a name of its own instead of the class)
    and overriding :meth:`fingerprint_fields` (everything that changes a judgment: model,
    template, decoding...); bump ``version`` when the same parameters start giving other answers.
    ``simulated`` marks judges whose output is not a real LLM's, so reports can say so.

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
        """Everything that changes a judgment: model, template, decoding parameters...

        The default is the public constructor parameters (see the class docstring); a value that
        is itself a judge stands for its fingerprint. Raises :class:`TypeError` for a parameter
        whose value has no stable text form (an object printed with its memory address): such a
        judge must say what its identity is by overriding this method.

        Returns
        -------
        dict[str, Any]
            The fields, by name: JSON-ready values.
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
        """Everything besides the fingerprint that this judge's answer to a request depends on.

        It is the cache key of the request, so it must be complete: two requests with equal keys
        must be interchangeable, or the cache would change results. The default covers a judge that
        reads what is rendered into its prompt: the task's prompt, reference, grading scale and
        metadata (templates look at ``meta.language``, ``meta.domain``, ``meta.max_points``...)
        and the candidates' texts in the order shown. Candidate ids are not part of it: the same
        texts under other ids are the same question to such a judge. Judges that look at anything
        else (the simulator reads ids and human scores) extend it.

        Parameters
        ----------
        task : Task
            The task: prompt, reference, grading scale and metadata.
        *candidates : Candidate
            The candidates, in the order shown.

        Returns
        -------
        list[Any]
            The key: JSON-ready values (see :func:`content_key`).
        """
        return content_key(task, *candidates)

    def check_tasks(self, tasks: Sequence[Task]) -> None:
        """Raise a :class:`~rankkit.errors.RankkitError` when this judge cannot judge ``tasks``.

        Called by :func:`rankkit.runner.run` before any judgment, so a judge that needs something
        of the data (the simulator reads human scores) stops at once with a message, not after
        judgments were paid for. The default accepts any tasks; judges that wrap others pass it on.

        Parameters
        ----------
        tasks : Sequence[Task]
            The tasks the run will judge.
        """

    # -- single judgments ---------------------------------------------------------------------
    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """A pointwise grade of ``candidate`` on the task's scale.

        Parameters
        ----------
        task : Task
            The task: prompt, reference, grading scale and metadata.
        candidate : Candidate
            The answer judged.

        Returns
        -------
        Grade
            The grade.
        """
        raise NotImplementedError(f"judge {self.description!r} does not grade single answers")

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """A verdict on ``first`` and ``second``, shown in that order, with a score for each.

        Parameters
        ----------
        task : Task
            The task: prompt, reference, grading scale and metadata.
        first : Candidate
            The candidate shown first.
        second : Candidate
            The candidate shown second.

        Returns
        -------
        Verdict
            The verdict.
        """
        raise NotImplementedError(f"judge {self.description!r} does not compare pairs")

    # -- batched judgments --------------------------------------------------------------------
    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Yield ``(index, judgment)`` for each request as it is ready (default: one by one).

        Parameters
        ----------
        requests : Sequence[GradeRequest]
            ``(task, candidate)`` requests.

        Yields
        ------
        tuple[int, Grade]
            ``(index, grade)``: the index of the request in ``requests`` and its grade.
        """
        for index, (task, candidate) in enumerate(requests):
            yield index, self.grade(task, candidate)

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Yield ``(index, judgment)`` for each request as it is ready (default: one by one).

        Parameters
        ----------
        requests : Sequence[ComparisonRequest]
            ``(task, first, second)`` requests, each pair in the order shown.

        Yields
        ------
        tuple[int, Verdict]
            ``(index, verdict)``: the index of the request in ``requests`` and its verdict.
        """
        for index, (task, first, second) in enumerate(requests):
            yield index, self.compare(task, first, second)

    # -- k-way judgments (rankkit.judges.kway) -------------------------------------------------
    def choose(self, task: Task, candidates: Sequence[Candidate]) -> GroupChoice:
        """The best of ``candidates`` as shown, in this order.

        Parameters
        ----------
        task : Task
            The task: prompt, reference, grading scale and metadata.
        candidates : Sequence[Candidate]
            The candidates, in the order shown (slot 0 first).

        Returns
        -------
        GroupChoice
            The chosen slot, with the slots' probabilities or grades where the judge knows them.
        """
        raise NotImplementedError(f"judge {self.description!r} does not give k-way judgments")

    def rank(self, task: Task, candidates: Sequence[Candidate]) -> GroupRanking:
        """``candidates`` ranked best first.

        Parameters
        ----------
        task : Task
            The task: prompt, reference, grading scale and metadata.
        candidates : Sequence[Candidate]
            The candidates, in the order shown (slot 0 first).

        Returns
        -------
        GroupRanking
            The permutation of slots, best first.
        """
        raise NotImplementedError(f"judge {self.description!r} does not give k-way judgments")

    def choose_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupChoice]]:
        """Yield ``(index, GroupChoice)`` for each ``(task, candidates)`` request (default: one by one).

        Parameters
        ----------
        requests : Sequence[GroupRequest]
            ``(task, candidates)`` requests, the candidates in the order shown.

        Yields
        ------
        tuple[int, GroupChoice]
            ``(index, choice)``: the index of the request in ``requests`` and its choice.
        """
        for index, (task, candidates) in enumerate(requests):
            yield index, self.choose(task, candidates)

    def rank_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupRanking]]:
        """Yield ``(index, GroupRanking)`` for each ``(task, candidates)`` request (default: one by one).

        Parameters
        ----------
        requests : Sequence[GroupRequest]
            ``(task, candidates)`` requests, the candidates in the order shown.

        Yields
        ------
        tuple[int, GroupRanking]
            ``(index, ranking)``: the index of the request in ``requests`` and its ranking.
        """
        for index, (task, candidates) in enumerate(requests):
            yield index, self.rank(task, candidates)

    def kway_key(self) -> list[Any]:
        """What a k-way judgment depends on besides the fingerprint and the request key (an LLM
        judge's k-way templates); appended to the k-way cache keys. Default: nothing.

        Returns
        -------
        list[Any]
            JSON-ready values (empty by default).
        """
        return []

    def bind_memo(self, memo: Any) -> None:
        """Called by the runner with the run's :class:`~rankkit.memo.JudgmentMemo`.

        Judges built on other judgments (a panel's member votes, a calibrated judge's raw
        judgments, PREPAIR's per-answer analyses) look those up in it (:func:`rankkit.memo.memo_of`),
        so they are cached and shared like every other judgment. Judges that wrap others pass it on.

        Parameters
        ----------
        memo : JudgmentMemo
            The run's judgment memo.
        """
        object.__setattr__(self, "_bound_memo", memo)  # judges may be frozen dataclasses

    def close(self) -> None:
        """Release resources (connections, models). Judges are usable as context managers."""

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Called by the runner with its progress bar's ``note``: a judge with something to show
        beside the counts (a batching LLM judge: each batch's state) reports it there.

        Parameters
        ----------
        note : Callable[[str], None]
            The progress bar's note: shows a line of text beside the counts.
        """

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
