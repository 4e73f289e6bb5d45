"""Position-bias calibration of logprob comparisons (``calibrate=true``): the method, as pure functions.

Each pair is read in both orders and the log-odds averaged, which cancels the judge's
position bias (:func:`both_orders_log_odds`).

More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

#: Log-odds are clamped to this magnitude so an impossible choice (-inf) stays arithmetic.
MAX_LOG_ODDS = 50.0
CALIBRATION_METHOD = "both-orders-logodds-v1"


def choice_log_odds(logprobs: Mapping[str, float]) -> float | None:
    """log P("1") - log P("2") of a choice, clamped to ±MAX_LOG_ODDS; None when both are impossible.

    Parameters
    ----------
    logprobs : Mapping[str, float]
        The log-probabilities of the choices ``"1"`` and ``"2"``.

    Returns
    -------
    float | None
        The log-odds, or None.
    """
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

    Parameters
    ----------
    forward : float
        Raw log-odds that the first slot wins, with a first.
    backward : float
        The same with b first.

    Returns
    -------
    tuple[float, float]
        The calibrated log-odds ``l(a, b) - β̂`` and the slot bias ``β̂ = (l(a, b) + l(b, a)) / 2``.
    """
    bias = (forward + backward) / 2.0
    return forward - bias, bias


def prior_balancing_threshold(log_odds: Sequence[float]) -> float:
    """The threshold β of Liusie et al.'s prior matching: the median raw log-odds, so that
    deciding "first" when l > β picks the first slot for half of the presented pairs.

    Parameters
    ----------
    log_odds : Sequence[float]
        Raw log-odds of the presented pairs.

    Returns
    -------
    float
        The median.
    """
    import numpy as np  # only this dataset-level variant needs it: a calibrated judge never loads it

    if len(log_odds) == 0:
        raise ValueError("no log-odds to estimate a threshold from")
    return float(np.median(np.asarray(log_odds, dtype=float)))
