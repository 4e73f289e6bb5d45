"""Position-bias calibration of logprob comparisons (``calibrate=true``): the method, as pure functions.

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

**The wrapper** that applies it to a judge is :class:`~rankkit.judges.llm.CalibratedJudge`, beside
the LLM judge it wraps (the two call each other: the judge routes its comparisons through the
wrapper, the wrapper reads the judge's raw ones). This module needs no judge.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

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
    import numpy as np  # only this dataset-level variant needs it: a calibrated judge never loads it

    if len(log_odds) == 0:
        raise ValueError("no log-odds to estimate a threshold from")
    return float(np.median(np.asarray(log_odds, dtype=float)))
