"""``CalibratedJudge``: an LLM judge's logprob comparisons with the slot bias removed, as a judge of its own.

``LLMJudge(..., calibrate=True)`` judges the same way itself; the arithmetic is in
:mod:`rankkit.judges.llm.calibration`. More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.base import Judge, answer_directly
from rankkit.judges.llm.calibration import CALIBRATION_METHOD, both_orders, calibrated_verdicts
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judgments.judge_protocol import Capabilities, Found, Needed
from rankkit.judgments.values import VERDICT_KIND, ComparisonRequest, Grade, GradeRequest, Verdict


class CalibratedJudge(Judge):
    """An LLM judge's logprob comparisons with the slot bias removed by both-order log-odds averaging.

    ``judge`` is an :class:`LLMJudge` in ``logprob`` mode; its raw comparisons are cached under its
    :attr:`LLMJudge.raw_fingerprint`, so calibrated and uncalibrated runs share them.
    ``CalibratedJudge(LLMJudge(runtime, mode="logprob"))`` judges exactly as
    ``LLMJudge(runtime, mode="logprob", calibrate=True)``; the method is in
    :mod:`rankkit.judges.llm.calibration`. Grades pass through to the wrapped judge.
    """

    def __init__(self, judge: LLMJudge):
        if judge.mode != "logprob":
            raise SpecError(
                f"{judge.backend}: calibration corrects choice probabilities and needs "
                f"mode=logprob (mode is {judge.mode})"
            )
        self.judge = judge
        self.backend = judge.backend  # instance attributes: the fingerprint names the real backend
        self.version = judge.version

    # -- identity and plumbing: the wrapped judge's -------------------------------------------
    def fingerprint_fields(self) -> dict[str, Any]:
        """The wrapped judge's fingerprint fields, with the calibration method."""
        return {**self.judge.fingerprint_fields(), "calibrate": CALIBRATION_METHOD}

    @property
    def raw_fingerprint(self) -> str:
        """The fingerprint the raw judgments are cached under: the wrapped judge's, uncalibrated."""
        return self.judge.raw_fingerprint

    def needs(self, kind: str, requests: Sequence[Any]) -> list[Needed]:
        """Comparisons need the raw ones in both orders (grades pass through)."""
        if kind != VERDICT_KIND:
            return []
        return [Needed(self.judge.raw_comparisons, VERDICT_KIND, both_orders(requests))]

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Any]]:
        """Calibrated comparisons from the raw ones in both orders; other kinds from the wrapped judge."""
        if kind != VERDICT_KIND:
            return super().answer(kind, requests, found)
        return calibrated_verdicts(requests, found[0], self.judge.pair_template)

    @property
    def description(self) -> str:
        return self.judge.describe(calibrated=True)

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        """The wrapped judge's request key."""
        return self.judge.request_key(task, *candidates)

    @property
    def capabilities(self) -> Capabilities:  # type: ignore[override]
        """The wrapped judge's, without k-way judgments (this wrapper gives none)."""
        return replace(self.judge.capabilities, kway=False)

    def close(self) -> None:
        self.judge.close()

    def show_progress(self, note: Callable[[str], None]) -> None:
        """Pass the progress bar's ``note`` on to the wrapped judge."""
        self.judge.show_progress(note)

    # -- judgments ----------------------------------------------------------------------------
    def grade(self, task: Task, candidate: Candidate) -> Grade:
        """The wrapped judge's grade (calibration applies to comparisons only)."""
        return self.judge.grade(task, candidate)

    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        """The wrapped judge's grades (calibration applies to comparisons only)."""
        return self.judge.grade_many(requests)

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        """The calibrated verdict on ``first`` and ``second`` as shown (one request of :meth:`compare_many`)."""
        return next(self.compare_many([(task, first, second)]))[1]

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Each pair read in both orders, calibrated, asking the wrapped judge directly (outside a run)."""
        return answer_directly(self, VERDICT_KIND, requests)
