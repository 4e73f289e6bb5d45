"""Position-bias calibration of logprob comparisons (``calibrate=true``), as pure functions.

More in ``docs/judges-llm.md``.
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
    """``(l(a, b) - β̂, β̂)`` with slot bias ``β̂ = (l(a, b) + l(b, a)) / 2``, from raw log-odds in both orders."""
    bias = (forward + backward) / 2.0
    return forward - bias, bias


def prior_balancing_threshold(log_odds: Sequence[float]) -> float:
    """The median raw log-odds: Liusie et al.'s prior-matching threshold (half the pairs pick the first slot)."""
    import numpy as np  # only this dataset-level variant needs it: a calibrated judge never loads it

    if len(log_odds) == 0:
        raise ValueError("no log-odds to estimate a threshold from")
    return float(np.median(np.asarray(log_odds, dtype=float)))
