"""What every judge declares and offers: :class:`Capabilities` and the :class:`JudgeProtocol` readers use.

The memo, the strategies and the planner read a judge only through these, so they never import a
judge (:mod:`rankkit.judges` is a floor above them) and never probe one for attributes.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rankkit.data.tasks import Candidate, Task
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


@dataclass(frozen=True)
class Capabilities:
    """What a judge can do, declared in one place (``Judge.capabilities``).

    Parameters
    ----------
    pointwise
        Whether it grades single answers.
    pairwise
        Whether it compares pairs.
    kway
        Whether it gives k-way choices and rankings.
    capacity
        How many requests the backend can usefully work on at once (an HTTP judge: its concurrency
        times its replicas; a local model: its batch size). 1 means "call me from one thread, one
        batch at a time": the runner then ranks tasks one after another with no threads.
    fills_batches
        Whether the backend gains from waiting until ``capacity`` requests are ready (a local
        model's batch) rather than getting each request as soon as a slot frees (an HTTP server).
    latent
        Whether the judge knows a simulated truth per candidate (``latent(task)``), which results record.
    mode
        How an LLM judge reads its model (``generate``, ``logprob``, ``loglik``); None for a judge
        that renders no LLM prompts.
    max_new_tokens
        The most tokens one ``generate`` judgment writes (0 when it writes none).
    prepair
        Whether an LLM judge compares through PREPAIR analyses.
    calibrate
        Whether an LLM judge averages logprob comparisons over both orders.
    """

    pointwise: bool = True
    pairwise: bool = True
    kway: bool = False
    capacity: int = 1
    fills_batches: bool = False
    latent: bool = False
    mode: str | None = None
    max_new_tokens: int = 0
    prepair: bool = False
    calibrate: bool = False

    def gives(self, kind: str) -> bool:
        """Whether the judge gives judgments of ``kind``: a judgment kind (``verdict``, ``grade``,
        ``choice``, ``ranking``) or a strategy kind (``pairwise``, ``pointwise``, ``kway``).

        Raises
        ------
        KeyError
            For any other kind.
        """
        return {
            VERDICT_KIND: self.pairwise,
            "pairwise": self.pairwise,
            GRADE_KIND: self.pointwise,
            "pointwise": self.pointwise,
            CHOICE_KIND: self.kway,
            RANKING_KIND: self.kway,
            "kway": self.kway,
        }[kind]


class JudgeProtocol(Protocol):
    """What the memo, the strategies and the planner need of a judge (every
    :class:`rankkit.judges.base.Judge` has it): its identity, what it can do, each request's key,
    and one batched method per kind of judgment, each yielding ``(index, judgment)`` as
    judgments are ready."""

    spec: str

    @property
    def fingerprint(self) -> str:
        """The cache's name for the judge: judges with equal fingerprints share judgments."""

    @property
    def description(self) -> str:
        """A short human-readable name for tables and reports."""

    @property
    def capabilities(self) -> Capabilities:
        """What the judge can do."""

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """The cache key of one request (JSON-ready): what the judge is shown of the task and candidates."""

    def kway_key(self) -> list[Any]:
        """What a k-way request's key adds to :meth:`request_key` (its k-way prompt and reading)."""

    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """Grade each ``(task, candidate)`` request; yield ``(index, grade)`` as each is ready."""

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Judge each ``(task, first, second)`` request; yield ``(index, verdict)`` as each is ready."""

    def choose_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupChoice]]:
        """Choose the best of each ``(task, candidates)`` request; yield ``(index, choice)``."""

    def rank_many(self, requests: Sequence[GroupRequest]) -> Iterator[tuple[int, GroupRanking]]:
        """Rank each ``(task, candidates)`` request best first; yield ``(index, ranking)``."""

    def needs(self, kind: str, requests: Sequence[Any]) -> list[Needed]:
        """Other judgments the answers of ``kind`` to ``requests`` are built from (none for a plain judge)."""

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Any]]:
        """Yield ``(index, judgment)`` of ``kind`` for each request, given what :meth:`needs` named, found."""


@dataclass(frozen=True)
class Needed:
    """Judgments a composite judge builds its answers from, which the memo looks up or asks for.

    A panel needs its members' verdicts in both orders; a calibrated LLM judge its raw comparisons
    in both orders; a PREPAIR judge an analysis per answer. The memo hands them to
    :meth:`JudgeProtocol.answer` (the judge never asks the memo itself).

    Parameters
    ----------
    source
        Whose judgments: cached under its fingerprint and its request keys.
    kind
        The kind of judgment (a cache kind, e.g. ``"verdict"`` or ``"prepair-analysis"``).
    requests
        The requests, as ``source``'s batched method for ``kind`` takes them.
    judgment_type
        The judgments' type (its ``from_dict``/``to_dict`` are their cached form); None for the
        four kinds of :mod:`rankkit.judgments.values`.
    """

    source: JudgeProtocol
    kind: str
    requests: Sequence[Any]
    judgment_type: Any = None


#: Per :class:`Needed`, one ``(judgment, fresh)`` per request: ``fresh`` when it was asked (and paid for) now.
Found = Sequence[Sequence[tuple[Any, bool]]]
