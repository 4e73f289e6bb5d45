"""The judge protocol every backend implements (the judgments it returns: :mod:`rankkit.judgments.values`).

More in ``docs/judges.md``.
"""

from __future__ import annotations

import inspect
import json
from collections.abc import Callable, Iterator, Mapping, Sequence
from typing import Any, ClassVar

from rankkit.data.conversations import as_json
from rankkit.data.tasks import Candidate, Task
from rankkit.errors import RankkitError
from rankkit.judgments.judge_protocol import Capabilities, Found, Needed
from rankkit.judgments.values import (
    CHOICE_KIND,
    GRADE_KIND,
    RANKING_KIND,
    VERDICT_KIND,
    ComparisonRequest,
    Grade,
    GradeRequest,
    GroupChoice,
    GroupRanking,
    GroupRequest,
    Verdict,
)


def content_key(task: Task, *candidates: Candidate) -> list[Any]:
    """What a prompt-reading judge sees of a request: prompt, reference, scale, metadata and the texts in order.

    JSON-ready values in a fixed order; see :meth:`Judge.request_key`. A conversation is its whole
    message list (every turn is in the key); a checklist is appended only when the task has one, so
    the keys of tasks without conversations or checklists are what they were.
    """
    key = [task.prompt, task.reference, list(task.scale), task.meta_key, *(candidate.text for candidate in candidates)]
    key = [as_json(value) if isinstance(value, tuple) else value for value in key]
    return [*key, {"checklist": list(task.checklist)}] if task.checklist else key


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
    #: What the judge can do (:class:`~rankkit.judgments.judge_protocol.Capabilities`): a judge that cannot
    #: grade, or can give k-way judgments, or works on several requests at once, declares it here.
    capabilities: Capabilities = Capabilities()
    #: The spec the judge was built from (:func:`rankkit.judges.make_judge` sets it; empty otherwise).
    spec: str = ""

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

    # -- k-way judgments (rankkit.prompts.kway_verdicts) -------------------------------------------------
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

    # -- the memo's one call (rankkit.judgments.memo.Answering) -----------------------------------------
    def needs(self, kind: str, requests: Sequence[Any]) -> list[Needed]:
        """Other judgments the answers of ``kind`` to ``requests`` are built from; none by default.

        A composite judge (a panel, a calibrated or PREPAIR LLM judge) names them here; the memo
        looks them up, asks for the missing ones, and passes them to :meth:`answer`.
        """
        return []

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, judgment)`` of ``kind`` for each request (``found``: what :meth:`needs` named).

        By default the batched method of ``kind``; a composite judge builds its answers from ``found``.
        """
        batched = {
            VERDICT_KIND: self.compare_many,
            GRADE_KIND: self.grade_many,
            CHOICE_KIND: self.choose_many,
            RANKING_KIND: self.rank_many,
        }
        return batched[kind](requests)

    def latent(self, task: Task) -> dict[str, float]:
        """Per candidate id, the simulated truth a judge declaring ``capabilities.latent`` reads noisily.

        Higher is better; its order is the judge's in the limit of unlimited judgments (``docs/stopping.md``).
        """
        raise NotImplementedError(f"judge {self.description!r} knows no latent truth")

    def close(self) -> None:
        """Release resources (connections, models). Judges are usable as context managers."""

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Called by the runner with its progress bar's ``note``, for a judge with a state to show beside the counts."""

    def __enter__(self) -> Judge:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def answer_directly(judge: Judge, kind: str, requests: Sequence[Any]) -> Iterator[tuple[int, Any]]:
    """A composite judge's answers without a memo: each need asked of its source directly.

    What its batched methods do when called outside a run. Requests with equal keys within one
    call are asked once (the first is the fresh one); nothing is remembered between calls (a run's
    :class:`~rankkit.judgments.memo.JudgmentMemo` looks needs up in memory and the cache instead).
    """
    found = []
    for need in judge.needs(kind, requests):
        keys = [
            json.dumps(need.source.request_key(request[0], *_shown(request)), sort_keys=True, default=str)
            for request in need.requests
        ]
        first: dict[str, int] = {}
        for index, key in enumerate(keys):
            first.setdefault(key, index)
        asked = list(first.values())
        answered = answer_directly(need.source, need.kind, [need.requests[i] for i in asked])
        by_key = {keys[asked[position]]: judgment for position, judgment in answered}
        found.append([(by_key[key], first[key] == index) for index, key in enumerate(keys)])
    return judge.answer(kind, requests, found)


def _shown(request: tuple[Any, ...]) -> tuple[Candidate, ...]:
    """The candidates of a request, in the order shown: ``(task, *candidates)`` or ``(task, candidates)``."""
    rest = request[1:]
    return tuple(rest[0]) if len(rest) == 1 and not isinstance(rest[0], Candidate) else tuple(rest)
