"""What a run paid, in one place.

The total under ``rankkit compare``'s table (and in ``analyze`` and the report), who paid for the
judgments a strategy reused, and the note when the judge has no price.

Each judgment is paid for once per run: a strategy that reuses one another strategy made counts it
under ``shared_hits`` and pays nothing for it, so the run's total is the sum of the strategies'
``judge_calls`` (and ``cache_hits``, tokens, USD), not of the judgments they used.
"""

from __future__ import annotations

from typing import Any

from rankkit.runs.results import RunResult, StrategyRun


def judgment_keys(strategy_run: StrategyRun) -> set[tuple]:
    """The judgments a strategy used, one key each: (task, ``c``, first shown, second shown) for a
    comparison, (task, ``g``, candidate) for a grade, (task, ``k``, shown...) for a k-way judgment."""
    keys: set[tuple] = set()
    for task in strategy_run.tasks:
        keys.update((task.task_id, "c", c.first, c.second) for c in task.comparisons)
        keys.update((task.task_id, "g", candidate) for candidate, _ in task.grades)
        keys.update((task.task_id, "k", *g.shown) for g in task.group_comparisons)
    return keys


def payers(result: RunResult) -> dict[str, list[str]]:
    """Per strategy that reused judgments made in this run (``shared_hits``), the strategies before
    it, in run order, that paid for some of them (a task's strategies run in the order given)."""
    keys = [judgment_keys(s) for s in result.strategies]
    paid_by: dict[str, list[str]] = {}
    for at, strategy_run in enumerate(result.strategies):
        if not strategy_run.cost.shared_hits:
            continue
        paid_by[strategy_run.name] = [
            earlier.name
            for earlier, earlier_keys in zip(result.strategies[:at], keys[:at])
            if earlier.cost.judge_calls and earlier_keys & keys[at]
        ]
    return paid_by


def usd_cell(strategy_run: StrategyRun, paid_by: list[str]) -> float | str:
    """The ``usd`` cell: what the strategy's new judgments cost, or ``paid by <strategy>`` when it
    made none and reused those of strategies before it."""
    if strategy_run.cost.judge_calls == 0 and paid_by:
        return "paid by " + ", ".join(paid_by)
    return round(strategy_run.cost.usd, 6)


def run_total(result: RunResult) -> dict[str, Any]:
    """What the whole run paid, each judgment counted once: ``judgments`` (distinct, new or from the
    cache), ``judge_calls``, ``cache_hits``, ``shared_hits`` (reuses, free), ``prompt_tokens``,
    ``completion_tokens``, ``usd``, ``seconds`` (the strategies' own), ``wall_seconds`` and
    ``warm_up_seconds`` (one-off start-up, charged to no strategy)."""
    costs = [s.cost for s in result.strategies]
    judge_calls = sum(c.judge_calls for c in costs)
    cache_hits = sum(c.cache_hits for c in costs)
    return {
        "judgments": judge_calls + cache_hits,
        "judge_calls": judge_calls,
        "cache_hits": cache_hits,
        "shared_hits": sum(c.shared_hits for c in costs),
        "prompt_tokens": sum(c.prompt_tokens for c in costs),
        "completion_tokens": sum(c.completion_tokens for c in costs),
        "usd": sum(c.usd for c in costs),
        "seconds": sum(s.seconds for s in result.strategies),
        "wall_seconds": result.wall_seconds,
        "warm_up_seconds": result.warm_up_seconds,
    }


def total_line(total: dict[str, Any], priced: bool) -> str:
    """The run's total as two lines: the judgments (each once; the reuses of them are free), tokens,
    USD (when ``priced``) and wall time; then the warm-up, charged to no strategy.

    >>> print(total_line({"judgments": 96, "judge_calls": 90, "cache_hits": 6, "shared_hits": 21,
    ...     "prompt_tokens": 1200, "completion_tokens": 30, "usd": 0.0123, "seconds": 1.0,
    ...     "wall_seconds": 1.2, "warm_up_seconds": 0.9}, priced=True))
    total: 96 judgments (90 new, 6 cached) + 21 reused · 1,230 tokens (1,200 in, 30 out) · usd 0.0123 · wall 1.200 s
    warm-up: 0.900 s of one-off start-up (imports), charged to no strategy
    """
    tokens = total["prompt_tokens"] + total["completion_tokens"]
    parts = [
        f"total: {total['judgments']} judgments ({total['judge_calls']} new, {total['cache_hits']} cached) "
        f"+ {total['shared_hits']} reused",
        f"{tokens:,} tokens ({total['prompt_tokens']:,} in, {total['completion_tokens']:,} out)",
    ]
    if priced:
        parts.append(f"usd {total['usd']:.4f}")
    parts.append(f"wall {total['wall_seconds']:.3f} s")
    warm_up = f"warm-up: {total['warm_up_seconds']:.3f} s of one-off start-up (imports), charged to no strategy"
    return " · ".join(parts) + "\n" + warm_up


def price_note(result: RunResult) -> str:
    """A one-line note when the run's judge has no price, so its ``usd`` is not counted ("" when it
    has one, or when it costs nothing: a simulated or recorded judge)."""
    from rankkit.runs.plan.usd import hosted_runtime

    hosted = hosted_runtime(result.judge)  # a model run here (hf:, smollm2, vllm:) bills no tokens
    if hosted is None or hosted.price is not None:
        return ""
    return f"note: usd not counted: {hosted.model} has no built-in price (add price_in=,price_out=, USD per 1M tokens)"


def is_priced(result: RunResult) -> bool:
    """Whether the run's USD figures mean anything: its judge has a price, or some judgment cost money
    (a results file read back has no live judge to ask)."""
    from rankkit.runs.plan.usd import judge_price

    return any(s.cost.usd for s in result.strategies) or judge_price(result.judge) is not None
