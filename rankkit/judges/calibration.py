"""Position-bias calibration of logprob comparisons (``calibrate=true``): the :class:`CalibratedJudge` wrapper.

A logprob judge gives, for answers a and b shown in that order, the log-odds

    l(a, b) = log P("1") - log P("2")

of choosing the first slot. Model it as l(a, b) = q(a, b) + β: a content term that is
antisymmetric (q(a, b) = -q(b, a): which answer is better does not depend on where it stands)
plus a slot bias β that favours the first slot whatever it holds. SmolLM2-135M has a β so large
that it picks one slot for nearly every pair.

**Method: both-order log-odds averaging.** Asking both orders estimates the bias of this pair,
β̂ = (l(a, b) + l(b, a)) / 2, and removes it:

    l_cal(a, b) = l(a, b) - β̂ = (l(a, b) - l(b, a)) / 2,     P_cal(a first wins) = sigmoid(l_cal).

The calibrated judge is exactly order-consistent (P_cal(a, b) = 1 - P_cal(b, a)), so it prefers
the first slot in exactly half of the decisive judgments over any set of pairs asked in both
orders. With two answers per task (LLMBar) this is also the prior-balancing threshold of Liusie
et al. estimated on that task's presented pairs: over {(a, b), (b, a)} the threshold that makes
the first slot win half the time is their mean log-odds, β̂.

**Data it estimates from:** only the two orders of the pair being judged — no other pair, task or
label. A calibrated judgment is therefore a pure function of (task, a, b) and is cached under the
calibrated judge's own fingerprint; the two *raw* judgments are cached under the uncalibrated
judge's fingerprint (exactly what ``calibrate=false`` would have stored), so a calibrated and an
uncalibrated run share their forward passes. Cost: two forward passes per new pair, the second
free when the strategy plays both orders anyway (``order=both``, judge-report).

:func:`prior_balancing_threshold` is the dataset-level variant (one β for a whole task set from
single-order log-odds); the LLMBar benchmark reports it alongside for comparison.

**The wrapper.** :class:`CalibratedJudge` wraps an :class:`~rankkit.judges.llm.LLMJudge` in
``logprob`` mode: ``CalibratedJudge(LLMJudge(engine, mode="logprob"))`` judges exactly as
``LLMJudge(engine, mode="logprob", calibrate=True)``, which is that wrapper around itself (the
spec option ``calibrate=true`` builds the latter). Grades pass through to the wrapped judge.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Iterator, Mapping, Sequence

import numpy as np

from rankkit.judges.base import (
    Judge,
    Verdict,
    ComparisonRequest,
    Grade,
    GradeRequest,
    add_usage,
)
from rankkit.memo import VERDICT_KIND, JudgmentMemo, Origin
from rankkit.judges.modes import choice_judgment, sigmoid
from rankkit.specs import SpecError
from rankkit.tasks import Candidate, Task

if TYPE_CHECKING:
    from rankkit.judges.llm import LLMJudge

#: Log-odds are clamped to this magnitude so an impossible choice (-inf) stays arithmetic.
MAX_LOG_ODDS = 50.0
CALIBRATION_METHOD = "both-orders-logodds-v1"


def choice_log_odds(logprobs: Mapping[str, float]) -> float | None:
    """log P("1") - log P("2") of a choice, clamped to ±MAX_LOG_ODDS; None when both are impossible."""
    first, second = logprobs["1"], logprobs["2"]
    if first == -math.inf and second == -math.inf:
        return None
    if second == -math.inf:
        return MAX_LOG_ODDS
    if first == -math.inf:
        return -MAX_LOG_ODDS
    return max(-MAX_LOG_ODDS, min(MAX_LOG_ODDS, first - second))


def both_orders_log_odds(forward: float, backward: float) -> tuple[float, float]:
    """Calibrate l(a, b) with l(b, a): returns ``(l_cal(a, b), slot bias β̂)``.

    forward: raw log-odds that the first slot wins with a first; backward: the same with b first.
    """
    bias = (forward + backward) / 2.0
    return forward - bias, bias


def prior_balancing_threshold(log_odds: Sequence[float]) -> float:
    """The threshold β of Liusie et al.'s prior matching: the median raw log-odds, so that
    deciding "first" when l > β picks the first slot for half of the presented pairs."""
    if len(log_odds) == 0:
        raise ValueError("no log-odds to estimate a threshold from")
    return float(np.median(np.asarray(log_odds, dtype=float)))


class CalibratedJudge(Judge):
    """An LLM judge's logprob comparisons with the slot bias removed by both-order log-odds averaging.

    judge: an :class:`~rankkit.judges.llm.LLMJudge` in ``logprob`` mode. Its raw comparisons
        (:meth:`~rankkit.judges.llm.LLMJudge.compare_raw`, cached under its
        :attr:`~rankkit.judges.llm.LLMJudge.raw_fingerprint` and its own request keys, so a
        calibrated and an uncalibrated run share them) are read in both orders and combined; the
        run's memo is the judge's (``judge.memo``, set by :meth:`bind_memo`).

    A raw judgment's usage (e.g. PREPAIR analyses it paid for) is charged to the first
    calibrated judgment that needed it.
    """

    def __init__(self, judge: LLMJudge):
        if judge.mode != "logprob":
            raise SpecError(f"{judge.backend}: calibration corrects choice probabilities and needs "
                            f"mode=logprob (mode is {judge.mode})")
        self.judge = judge
        self.backend = judge.backend  # instance attributes: the fingerprint names the real backend
        self.version = judge.version

    # -- identity and plumbing: the wrapped judge's -------------------------------------------
    def fingerprint_fields(self) -> dict[str, Any]:
        return {**self.judge.fingerprint_fields(), "calibrate": CALIBRATION_METHOD}

    @property
    def raw_fingerprint(self) -> str:
        """The fingerprint the raw judgments are cached under: the wrapped judge's, uncalibrated."""
        return self.judge.raw_fingerprint

    @property
    def description(self) -> str:
        return self.judge.describe(calibrated=True)

    def request_key(self, task: Task, *candidates: Candidate) -> list[Any]:
        return self.judge.request_key(task, *candidates)

    @property
    def capacity(self) -> int:
        return self.judge.capacity

    @property
    def fills_batches(self) -> bool:
        return self.judge.fills_batches

    def bind_memo(self, memo: JudgmentMemo) -> None:
        self.judge.bind_memo(memo)

    def close(self) -> None:
        self.judge.close()

    # -- judgments ----------------------------------------------------------------------------
    def grade(self, task: Task, candidate: Candidate) -> Grade:
        return self.judge.grade(task, candidate)

    def grade_many(self, requests: Sequence[GradeRequest]) -> Iterator[tuple[int, Grade]]:
        return self.judge.grade_many(requests)

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        return next(self.compare_many([(task, first, second)]))[1]

    def compare_many(self, requests: Sequence[ComparisonRequest]) -> Iterator[tuple[int, Verdict]]:
        """Each pair read in both orders (raw judgments from memory, the store or the judge, the
        missing ones in one batch), then calibrated; yields in request order once all are read."""
        if not requests:
            return
        both_orders = list(requests) + [(task, second, first) for task, first, second in requests]
        judge = self.judge
        raw = judge.memo.fetch(judge.raw_fingerprint, VERDICT_KIND, [judge.request_key(*r) for r in both_orders],
                               lambda indices: judge.compare_raw([both_orders[i] for i in indices]),
                               Verdict.from_dict, Verdict.to_dict)
        for index, (task, _, _) in enumerate(requests):
            (forward, forward_origin), (backward, backward_origin) = raw[index], raw[len(requests) + index]
            judgment = self._calibrated(task, dict(forward.extras["logprobs"]), dict(backward.extras["logprobs"]))
            usage: dict[str, int] = {}
            for used, origin in ((forward, forward_origin), (backward, backward_origin)):
                if origin is Origin.JUDGE:  # charged once, to the first request that needed it
                    add_usage(usage, used.usage)
            yield index, replace(judgment, usage=usage) if usage else judgment

    def _calibrated(self, task: Task, forward: dict[str, float], backward: dict[str, float]) -> Verdict:
        """The calibrated judgment of a pair from its choice log-probabilities in both orders."""
        used = self.judge.pair_template(task)
        template, prefix = used.name, used.choice_prefix + " "
        forward_odds, backward_odds = choice_log_odds(forward), choice_log_odds(backward)
        if forward_odds is None or backward_odds is None:
            return choice_judgment(task, template, prefix, forward, None,
                                   {"calibration": CALIBRATION_METHOD, "swapped_logprobs": backward})
        calibrated, bias = both_orders_log_odds(forward_odds, backward_odds)
        extras = {"calibration": CALIBRATION_METHOD, "swapped_logprobs": dict(backward),
                  "raw_log_odds": forward_odds, "swapped_raw_log_odds": backward_odds, "slot_bias": bias}
        return choice_judgment(task, template, prefix, forward, sigmoid(calibrated), extras)
