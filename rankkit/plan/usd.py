"""The dollar estimate of a dry run: the new judgments' rendered prompt tokens priced as the judge would be.

Only a judge with a price (:mod:`rankkit.judges.prices`) gets one. ``generate`` mode counts
``max_new_tokens`` (an upper bound) plus one verdict read per score; ``logprob`` mode one read;
the batch discount applies; no prompt-cache hits or retries (:data:`ASSUMPTIONS`).
"""

from __future__ import annotations

from rankkit.judges.base import Judge
from rankkit.judges.calibrated_judge import CalibratedJudge
from rankkit.judges.llm import LLMJudge
from rankkit.judges.prices import BATCH_DISCOUNT, Price

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


def judge_price(judge: Judge) -> Price | None:
    """The list price of ``judge``'s runtime (through a calibration wrapper); None when it has none."""
    inner = llm_judge(judge)
    return None if inner is None else inner.runtime.price


def estimate_usd(judge: Judge, kind: str, new: int, prompt_tokens: float) -> float | None:
    """The estimated USD of ``new`` judgments of ``kind`` whose prompts hold ``prompt_tokens`` in all.

    ``kind`` is ``pairwise``, ``pointwise`` or ``kway``; None for a judge without a price.

    Examples
    --------
    >>> from rankkit.judges.llm_runtime import StandInRuntime
    >>> from rankkit.judges.prices import Price
    >>> runtime = StandInRuntime("openai", {"model": "m"})
    >>> runtime.price = Price(2.0, 8.0)
    >>> judge = LLMJudge(runtime, mode="logprob")
    >>> round(estimate_usd(judge, "pairwise", 10, 5000.0), 6)  # (5000 + 10*40) * 2e-6 + 10 * 8e-6
    0.01088
    """
    inner, price = llm_judge(judge), judge_price(judge)
    if inner is None or price is None:
        return None
    if inner.mode == "generate":
        generated = inner.max_new_tokens
        reads = 2 if kind == "pairwise" else 1
        input_tokens = prompt_tokens * (1 + reads) + new * reads * (generated + READ_OVERHEAD_TOKENS)
        output_tokens = new * (generated + reads)
    else:
        input_tokens = prompt_tokens + new * READ_OVERHEAD_TOKENS
        output_tokens = new
    discount = BATCH_DISCOUNT if inner.runtime.batched else 1.0
    return (input_tokens * price.input + output_tokens * price.output) / 1e6 * discount
