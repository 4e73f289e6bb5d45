"""Every analysis at once: what ``rankkit analyze`` computes and writes (:func:`analyze`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankkit.data.specs import SpecError
from rankkit.runs.analysis.breakdowns import aggregate_level, breakdown
from rankkit.runs.analysis.correlations import correlation_table, paired_difference
from rankkit.runs.analysis.draws import MetricDraws
from rankkit.runs.analysis.elimination import elimination_rounds
from rankkit.runs.analysis.judge_bias import length_bias, position_bias, slot_bias, style_preference
from rankkit.runs.analysis.labelled import DEFAULT_METRICS, check_metrics, human_scores, strategy_names, strategy_run
from rankkit.runs.analysis.pair_effects import pair_effect_record
from rankkit.runs.analysis.robustness import DEFAULT_TOP_K, robustness_report
from rankkit.runs.bill import payers, run_total
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_LEVEL, DEFAULT_RESAMPLES

#: The robustness searches' budget in ``rankkit analyze`` and the HTML report: smaller than the
#: library's default, so that a large run's analysis stays quick.
ANALYZE_BUDGET = 300


def default_baseline(results: RunResult) -> str | None:
    """``individual`` when present (the paper's baseline), else the first strategy; None without strategies."""
    names = strategy_names(results)
    if not names:
        return None
    return "individual" if "individual" in names else names[0]


def analyze(
    results: RunResult,
    by: Sequence[str] = (),
    baseline: str | None = None,
    metrics: Sequence[str] = DEFAULT_METRICS,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    aggregate: str = "mean",
    unit_field: str | None = None,
    top_k: int = DEFAULT_TOP_K,
    robustness_budget: int = ANALYZE_BUDGET,
    pair_effects: bool = False,
) -> dict[str, Any]:
    """Run every analysis; the result is what ``rankkit analyze --out`` writes (after :func:`to_jsonable`).

    Parameters
    ----------
    by
        Breakdown fields (``system`` or meta fields).
    baseline
        The strategy every other one is compared with (default :func:`default_baseline`).
    aggregate
        How the aggregate level combines units (``mean`` or ``sum``).
    unit_field
        The meta field that names a unit; None: each system over all tasks.
    robustness_budget
        Each robustness search's budget; 0 leaves the report out.
    pair_effects
        Add the judge's pair-effect sd (:func:`~rankkit.runs.analysis.pair_effects.pair_effect_record`;
        a few seconds per 10 tasks).
    """
    baseline = checked_baseline(results, metrics, baseline)
    names = strategy_names(results)
    draws = MetricDraws(results, metrics, resamples, seed)
    return {
        "data": results.data,
        "judge": results.judge_record(),
        "criterion": results.criterion,
        "seed": results.seed,
        "bootstrap": {"resamples": resamples, "seed": seed, "level": level, **BOOTSTRAP},
        "bill": {**run_total(results), "paid_by": payers(results)},
        "correlations": correlation_table(results, level=level, draws=draws),
        "baseline": baseline,
        "differences": [
            paired_difference(results, name, baseline, level=level, draws=draws)
            for name in names
            if baseline is not None and name != baseline
        ],
        "elimination_rounds": [
            e for e in (elimination_rounds(results, name, "pearson", resamples, seed, level) for name in names) if e
        ],
        "aggregate_level": [
            a
            for a in (aggregate_level(results, name, aggregate, unit_field, resamples, seed, level) for name in names)
            if a
        ],
        "breakdowns": {
            field: {name: breakdown(results, name, field, metrics, resamples, seed, level) for name in names}
            for field in by
        },
        "judge_bias": judge_bias(results, level, resamples, seed),
        "robustness": robustness_report(results, top_k, robustness_budget) if robustness_budget else [],
        **({"pair_effects": pair_effect_record(results, level)} if pair_effects else {}),
    }


#: How every interval of the analysis is made (with its resamples, seed and level).
BOOTSTRAP = {"unit": "task", "method": "percentile, widened to contain the estimate"}


def checked_baseline(results: RunResult, metrics: Sequence[str], baseline: str | None) -> str | None:
    """The strategy the others are compared with (default :func:`default_baseline`), once the metrics
    are known and the run has human scores; SpecError otherwise or when no strategy has that name."""
    check_metrics(metrics)
    if not human_scores(results):
        raise SpecError("the results have no human scores (no criterion), so there is nothing to correlate with")
    baseline = baseline or default_baseline(results)
    if baseline is not None:
        strategy_run(results, baseline)  # fail early on a typo
    return baseline


def judge_bias(
    results: RunResult, level: float = DEFAULT_LEVEL, resamples: int = DEFAULT_RESAMPLES, seed: int = 0
) -> dict[str, Any]:
    """Position and length bias, style preference (bootstrapped over tasks) and, for k-way runs only, ``slots``."""
    bias = {
        "position": position_bias(results, level=level),
        "length": length_bias(results, level=level),
        "style": style_preference(results, resamples=resamples, seed=seed, level=level),
    }
    slots = slot_bias(results, level=level)
    if slots:
        bias["slots"] = slots
    return bias
