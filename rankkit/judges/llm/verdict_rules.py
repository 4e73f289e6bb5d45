"""The verdict arithmetic of LLM judgments, as pure functions.

Digit expectations, choice probabilities, scores to winners, and the failure rule.

Shared by the judging modes (:mod:`rankkit.judges.llm.modes`) and calibration.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from rankkit.data.tasks import Task
from rankkit.judgments.values import ParseStatus, Verdict, Winner


def logprob_points(max_points: float) -> int:
    """K of the digit scale ``0..K`` a logprob grade reads: ``max_points`` if a whole number 1..9, else 9."""
    if float(max_points).is_integer() and 1 <= max_points <= 9:
        return int(max_points)
    return 9


def expected_digit(logprobs: Mapping[str, float]) -> tuple[float | None, float]:
    """Expected value of the digits ``"0"..."K"`` in ``logprobs``, renormalised over them.

    Returns ``(expectation, mass)``: ``mass`` is the probability on any digit; the expectation is None
    when it is zero.
    """
    probabilities = {int(k): math.exp(v) for k, v in logprobs.items() if v > -math.inf}
    mass = sum(probabilities.values())
    if mass <= 0:
        return None, 0.0
    return sum(k * p for k, p in probabilities.items()) / mass, mass


def choice_probability(logprob_first: float, logprob_second: float) -> float | None:
    """P(first) = p1 / (p1 + p2) from two log-probabilities; None when both are ``-inf``."""
    top = max(logprob_first, logprob_second)
    if top == -math.inf:
        return None
    p1, p2 = math.exp(logprob_first - top), math.exp(logprob_second - top)
    return p1 / (p1 + p2)


def sigmoid(x: float) -> float:
    """The logistic function ``1 / (1 + exp(-x))``, without overflow for large negative ``x``."""
    return 1.0 / (1.0 + math.exp(-x)) if x >= 0 else math.exp(x) / (1.0 + math.exp(x))


def winner_from_scores(first: float, second: float) -> Winner:
    """The verdict two scores give: the higher one wins; equal scores are a tie."""
    if first > second:
        return Winner.FIRST
    if second > first:
        return Winner.SECOND
    return Winner.TIE


def midpoint(task: Task) -> float:
    """The middle of the task's grading scale, ``(low + high) / 2``."""
    return (task.scale[0] + task.scale[1]) / 2


def failed_comparison(task: Task, raw: str, usage: Mapping[str, int], extras: Mapping[str, Any]) -> Verdict:
    """The failure rule of a comparison: a FAILED tie at the middle of the scale, ``probability=0.5``.

    ``raw`` is the judge's output, ``usage`` what the failed attempts cost.
    """
    middle = midpoint(task)
    return Verdict(
        first_grade=middle,
        second_grade=middle,
        winner=Winner.TIE,
        raw=raw,
        status=ParseStatus.FAILED,
        probability=0.5,
        usage=dict(usage),
        extras=dict(extras),
    )


def choice_judgment(
    task: Task,
    template: str,
    prefix: str,
    logprobs: Mapping[str, float],
    probability: float | None,
    extras: Mapping[str, Any] | None = None,
) -> Verdict:
    """A logprob comparison from its choice log-probabilities and P(first) (``probability`` None: failed).

    When ``probability`` differs from the raw P(1) / (P(1) + P(2)) of ``logprobs`` (a calibrated
    judge's), the raw one is kept in ``extras["raw_probability"]``.
    """
    extras = {"mode": "logprob", "template": template, "logprobs": dict(logprobs), **(extras or {})}
    raw_probability = choice_probability(logprobs["1"], logprobs["2"])
    if probability is None:
        return failed_comparison(task, prefix, {}, {**extras, "parse_error": "no probability on either choice"})
    if probability != raw_probability:
        extras["raw_probability"] = raw_probability
    low, high = task.scale
    first_grade = low + probability * (high - low)
    second_grade = low + (1.0 - probability) * (high - low)
    chosen = "1" if probability > 0.5 else "2" if probability < 0.5 else "1|2"
    return Verdict(
        first_grade=first_grade,
        second_grade=second_grade,
        winner=winner_from_scores(first_grade, second_grade),
        raw=f"{prefix}{chosen}",
        probability=probability,
        extras=extras,
    )
