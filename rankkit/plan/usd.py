"""The dollar estimate of a dry run: the new judgments' rendered prompt tokens priced as the judge would be.

Only a judge with a price (:mod:`rankkit.judges.prices`: a built-in one for its model, or the
spec's ``price_in=``/``price_out=``) gets one. What it assumes, stated in the dry run's notes
(:data:`ASSUMPTIONS`):

* ``generate`` mode: each new judgment generates ``max_new_tokens`` (an upper bound), then reads
  its verdict by sending the prompt and the explanation again with a short question
  (:data:`READ_OVERHEAD_TOKENS`) once per score it reads (two for a comparison, one for a grade
  or a k-way choice), one output token each;
* ``logprob`` mode: one read per judgment (prompt plus question, one output token);
* the batch discount where the judge batches (``batch=true``); no prompt-cache hits, no retries
  (each of which only lowers or raises the bill by what the run's ``cost.usd`` then reports).
"""

from __future__ import annotations

from typing import Any

from rankkit.judges.prices import BATCH_DISCOUNT, Price

#: Tokens of rankkit's follow-up question (or verdict prefix) added to each verdict read.
READ_OVERHEAD_TOKENS = 40
#: What the estimate assumes, as the dry run notes it.
ASSUMPTIONS = ("USD estimated from the list price: max_new_tokens generated per new generate-mode judgment, "
               "its prompt and explanation sent again for each verdict read (2 per comparison, 1 per grade) "
               "with 1 output token; the batch discount with batch=true; no prompt-cache hits or retries")


def inner_judge(judge: Any) -> Any:
    """The LLM judge inside a calibration wrapper (the judge itself otherwise)."""
    return getattr(judge, "judge", judge)


def judge_price(judge: Any) -> Price | None:
    """The price of an LLM judge's engine (through a calibration wrapper), or None."""
    return getattr(getattr(inner_judge(judge), "engine", None), "price", None)


def estimate_usd(judge: Any, kind: str, new: int, prompt_tokens: float) -> float | None:
    """The estimated USD of ``new`` judgments of ``kind`` (``pairwise``, ``pointwise``, ``kway``)
    whose prompts hold ``prompt_tokens`` in all, or None for a judge without a price.

    >>> class Engine: price = Price(2.0, 8.0)
    >>> class Judge: engine, mode, max_new_tokens = Engine(), "logprob", 256
    >>> round(estimate_usd(Judge(), "pairwise", 10, 5000.0), 6)  # (5000 + 10*40) * 2e-6 + 10 * 8e-6
    0.01088
    """
    price = judge_price(judge)
    if price is None:
        return None
    inner = inner_judge(judge)
    if getattr(inner, "mode", "generate") == "generate":
        generated = int(getattr(inner, "max_new_tokens", 256))
        reads = 2 if kind == "pairwise" else 1
        input_tokens = prompt_tokens * (1 + reads) + new * reads * (generated + READ_OVERHEAD_TOKENS)
        output_tokens = new * (generated + reads)
    else:
        input_tokens = prompt_tokens + new * READ_OVERHEAD_TOKENS
        output_tokens = new
    discount = BATCH_DISCOUNT if getattr(getattr(inner, "engine", None), "batcher", None) is not None else 1.0
    return (input_tokens * price.input + output_tokens * price.output) / 1e6 * discount
