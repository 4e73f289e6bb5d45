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

from rankkit.judges.base import Judge
from rankkit.judges.llm import CalibratedJudge, LLMJudge
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
    """The LLM judge of ``judge``: itself, or the one inside a calibration wrapper; None for
    another judge (a simulated or recorded one has no price).

    Parameters
    ----------
    judge : Judge
        Any judge.

    Returns
    -------
    LLMJudge or None
        The LLM judge, or None.
    """
    if isinstance(judge, CalibratedJudge):
        return judge.judge
    return judge if isinstance(judge, LLMJudge) else None


def judge_price(judge: Judge) -> Price | None:
    """The price of ``judge``'s runtime (through a calibration wrapper), or None: not an LLM judge,
    or a runtime without a price.

    Parameters
    ----------
    judge : Judge
        Any judge.

    Returns
    -------
    Price or None
        The runtime's list price, or None.
    """
    inner = llm_judge(judge)
    return None if inner is None else inner.runtime.price


def estimate_usd(judge: Judge, kind: str, new: int, prompt_tokens: float) -> float | None:
    """The estimated USD of ``new`` judgments of ``kind`` whose prompts hold ``prompt_tokens`` in all.

    Parameters
    ----------
    judge : Judge
        The dry run's judge; only an LLM judge whose runtime has a ``price`` gets an estimate.
    kind : str
        ``pairwise``, ``pointwise`` or ``kway``.
    new : int
        How many new (uncached) judgments.
    prompt_tokens : float
        Their prompts' tokens, in all.

    Returns
    -------
    float or None
        USD, or None for a judge without a price.

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
