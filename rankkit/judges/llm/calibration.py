"""Position-bias calibration of logprob comparisons (``calibrate=true``), as pure functions.

The raw comparisons in both orders in, the calibrated verdicts out.

More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import replace

from rankkit.data.tasks import Task
from rankkit.judges.base import add_usage
from rankkit.judges.llm.verdict_rules import choice_judgment, sigmoid
from rankkit.judgments.values import ComparisonRequest, Verdict
from rankkit.prompts import Template

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


def both_orders(requests: Sequence[ComparisonRequest]) -> list[ComparisonRequest]:
    """The raw comparisons calibrating ``requests`` needs: the requests as given, then each swapped."""
    return list(requests) + [(task, second, first) for task, first, second in requests]


def calibrated_verdict(
    task: Task, template: Template, forward: dict[str, float], backward: dict[str, float]
) -> Verdict:
    """The calibrated judgment of a pair from its choice log-probabilities in both orders (``template``: the pair's)."""
    name, prefix = template.name, template.choice_prefix + " "
    forward_odds, backward_odds = choice_log_odds(forward), choice_log_odds(backward)
    if forward_odds is None or backward_odds is None:
        return choice_judgment(
            task, name, prefix, forward, None, {"calibration": CALIBRATION_METHOD, "swapped_logprobs": backward}
        )
    calibrated, bias = both_orders_log_odds(forward_odds, backward_odds)
    extras = {
        "calibration": CALIBRATION_METHOD,
        "swapped_logprobs": dict(backward),
        "raw_log_odds": forward_odds,
        "swapped_raw_log_odds": backward_odds,
        "slot_bias": bias,
    }
    return choice_judgment(task, name, prefix, forward, sigmoid(calibrated), extras)


def calibrated_verdicts(
    requests: Sequence[ComparisonRequest],
    raw: Sequence[tuple[Verdict, bool]],
    template_of: Callable[[Task], Template],
) -> Iterator[tuple[int, Verdict]]:
    """Yield ``(index, calibrated verdict)`` per request, in order.

    ``raw`` holds the raw verdicts of :func:`both_orders` with whether each was asked now: a fresh
    one's usage is charged to the request that needed it (each once).
    """
    for index, (task, _, _) in enumerate(requests):
        (forward, forward_fresh), (backward, backward_fresh) = raw[index], raw[len(requests) + index]
        judgment = calibrated_verdict(
            task, template_of(task), dict(forward.extras["logprobs"]), dict(backward.extras["logprobs"])
        )
        usage: dict[str, int] = {}
        for used, fresh in ((forward, forward_fresh), (backward, backward_fresh)):
            if fresh:
                add_usage(usage, used.usage)
        yield index, replace(judgment, usage=usage) if usage else judgment
