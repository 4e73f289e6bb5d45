"""The dollar estimate of a dry run: the new judgments' rendered prompt tokens priced as the judge would be.

Only a judge with a price (:mod:`rankkit.judges.hosted.prices`) gets one. ``generate`` mode counts
``max_new_tokens`` (an upper bound) plus one verdict read per score; ``logprob`` mode one read;
the batch discount applies; no prompt-cache hits or retries (:data:`ASSUMPTIONS`).
"""

from __future__ import annotations

import functools

from rankkit.judges.base import Judge
from rankkit.judges.hosted.prices import BATCH_DISCOUNT, Price
from rankkit.judges.hosted.runtime import HostedRuntime
from rankkit.judges.llm.calibrated_judge import CalibratedJudge
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judgments.spend import Meter
from rankkit.runs.plan.tokens import PromptSizes, judgment_estimate

#: Tokens of rankkit's follow-up question (or verdict prefix) added to each verdict read.
READ_OVERHEAD_TOKENS = 40
#: What the estimate assumes, as the dry run notes it.
ASSUMPTIONS = (
    "USD estimated from the list price: max_new_tokens generated per new generate-mode judgment, "
    "its prompt and explanation sent again for each verdict read (2 per comparison, 1 per grade) "
    "with 1 output token; the batch discount with batch=true; no prompt-cache hits or retries"
)


def llm_judge(judge: Judge) -> LLMJudge | None:
    """The LLM judge of ``judge`` (itself, or inside a calibration wrapper); None for another judge."""
    if isinstance(judge, CalibratedJudge):
        return judge.judge
    return judge if isinstance(judge, LLMJudge) else None


def hosted_runtime(judge: Judge) -> HostedRuntime | None:
    """The hosted runtime (a provider's API, billed) of ``judge``'s LLM judge; None for a model run here."""
    inner = llm_judge(judge)
    return inner.runtime if inner is not None and isinstance(inner.runtime, HostedRuntime) else None


def judge_price(judge: Judge) -> Price | None:
    """The list price of ``judge``'s hosted runtime (through a calibration wrapper); None when it has none."""
    hosted = hosted_runtime(judge)
    return None if hosted is None else hosted.price


def estimate_usd(judge: Judge, kind: str, new: int, prompt_tokens: float) -> float | None:
    """The estimated USD of ``new`` judgments of ``kind`` whose prompts hold ``prompt_tokens`` in all.

    ``kind`` is ``pairwise``, ``pointwise`` or ``kway``; None for a judge without a price.

    Examples
    --------
    >>> from rankkit.judges.hosted.http_client import ClientConfig
    >>> from rankkit.judges.hosted.openai_compat import OpenAIRuntime
    >>> from rankkit.judges.hosted.prices import Price
    >>> runtime = OpenAIRuntime("m", ClientConfig("openai", "http://127.0.0.1:9/v1"), price=Price(2.0, 8.0))
    >>> judge = LLMJudge(runtime, mode="logprob")
    >>> round(estimate_usd(judge, "pairwise", 10, 5000.0), 6)  # (5000 + 10*40) * 2e-6 + 10 * 8e-6
    0.01088
    """
    inner, hosted = llm_judge(judge), hosted_runtime(judge)
    if inner is None or hosted is None or hosted.price is None:
        return None
    price = hosted.price
    if inner.mode == "generate":
        generated = inner.max_new_tokens
        reads = 2 if kind == "pairwise" else 1
        input_tokens = prompt_tokens * (1 + reads) + new * reads * (generated + READ_OVERHEAD_TOKENS)
        output_tokens = new * (generated + reads)
    else:
        input_tokens = prompt_tokens + new * READ_OVERHEAD_TOKENS
        output_tokens = new
    discount = BATCH_DISCOUNT if hosted.batched else 1.0
    return (input_tokens * price.input + output_tokens * price.output) / 1e6 * discount


def judge_meter(judge: Judge) -> Meter:
    """The :class:`~rankkit.judgments.spend.Meter` of ``judge``'s budgets: its list price (none when it has
    none) and, for judgments that report no usage, the dry run's prompt estimate (an LLM judge's own
    templates; the bare question and answers for another judge)."""
    price = judge_price(judge)
    inner = llm_judge(judge)
    kwargs = {} if inner is None else {"estimate": functools.partial(judgment_estimate, PromptSizes(inner))}
    if price is None:
        return Meter(**kwargs)
    return Meter(price_in=price.input, price_out=price.output, **kwargs)
