"""The judge's persistent pair preferences, estimated from a finished run (``rankkit analyze --pair-effects``).

A pilot run's distinct pairwise judgments, pooled over its tasks, give the posterior of the judge's
pair-effect sd (:func:`rankkit.strategies._pair_sd.pair_sd_posterior`); its 95% upper value is
what ``active``, ``swiss`` and ``setwise_groups`` take as ``pair_sd=`` (``docs/stopping.md``).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from rankkit.runs.analysis.judge_bias import distinct_comparisons
from rankkit.runs.results import RunResult
from rankkit.strategies.elo import comparison_outcome


def task_outcomes(results: RunResult) -> dict[str, list[tuple[str, str, float]]]:
    """Each task's distinct decided judgments (all strategies, each (first, second) once) as
    ``(first, second, outcome for first)``, read as the stopping rule reads them
    (:func:`~rankkit.strategies.elo.comparison_outcome`); undecided ones are left out."""
    outcomes: dict[str, list[tuple[str, str, float]]] = defaultdict(list)
    for task_id, comparison in distinct_comparisons(results):
        outcome = comparison_outcome(comparison)
        if outcome is not None:
            outcomes[task_id].append(outcome)
    return outcomes


def pair_effect_record(results: RunResult, level: float = 0.95) -> dict[str, Any]:
    """The posterior of the judge's pair-effect sd from ``results``, as the analysis records it:
    the grid and its probabilities, the most probable sd, the ``level`` upper value and the spec to pass on."""
    from rankkit.strategies._bt_posterior import Evidence
    from rankkit.strategies._pair_sd import pair_sd_posterior

    by_task = {task.task_id: task for task in results.tasks}
    outcomes = task_outcomes(results)
    evidences = [Evidence.from_outcomes(found, by_task[task_id].candidate_ids) for task_id, found in outcomes.items()]
    estimate = pair_sd_posterior(evidences)
    upper = estimate.upper(level)
    return {
        "grid": list(estimate.grid),
        "posterior": list(estimate.posterior),
        "best": estimate.best,
        "upper": upper,
        "level": level,
        "tasks": estimate.tasks,
        "judgments": estimate.judgments,
        "spec": f"stopping=pair_effects,pair_sd={upper:g}",
    }
