"""The paper's analyses of a results file, with bootstrap confidence intervals (``rankkit analyze``).

Everything here reads a run's results — the JSON that ``rankkit compare --out r.json`` writes,
read back into a :class:`~rankkit.results.RunResult` by :func:`load_results`, or a live run —
and needs neither the data nor the judge again::

    from rankkit.analysis import load_results, analyze
    results = load_results("r.json")
    report = analyze(results, by=["difficulty", "system"], baseline="individual")

The analyses, each a pure function of the results (plus a bootstrap seed):

(a) :func:`correlation_table` — every metric of :mod:`rankkit.metrics` per strategy, with a
    bootstrap 95% interval over **tasks** (tasks are resampled with replacement and the metric is
    recomputed on the resample; tasks, not candidates, are the independent units, because the
    candidates of one task share a prompt and, for ranking strategies, a scale).
(b) :func:`elimination_rounds` — for knockout-like strategies
    (:attr:`~rankkit.results.StrategyRun.has_elimination_rounds`): the correlation of candidates
    eliminated in round 1 (graded once) against those eliminated later or crowned (graded several
    times), as in Table 2 of *Knockout LLM Assessment* (Sandan, Dinh & Niehues).
(c) :func:`breakdown` — the metrics within groups of tasks (any ``meta`` field: difficulty,
    language, ...) or of candidates (``system``, the examinee; tables 4.5–4.7 of the thesis
    *Competitive LLM Assessment*).
(d) :func:`aggregate_level` — the thesis's exam level: each system's scores summed or averaged
    over tasks (optionally within groups of tasks such as exams), correlated with the same
    aggregate of the human scores, plus pairwise ranking accuracy between the aggregates.
(e) :func:`paired_difference` — strategy A minus strategy B with a *paired* bootstrap interval:
    both are evaluated on the same resampled tasks, so the interval reflects only the noise in
    their difference (is knockout better than individual here, or within noise?).

Plus the judge-bias views of the report (:func:`position_bias`, :func:`length_bias`, and for
k-way judgments :func:`slot_bias`: how often the answer in each of the k slots was chosen).

Intervals are percentile bootstrap intervals (:mod:`rankkit.stats`), widened to the estimate when
resampling bias puts the estimate outside them, so each contains its estimate. The resamples are
drawn once per (number of tasks, seed) and shared by all strategies, which makes differences
paired. An interval is NaN (printed ``-``) when it cannot be computed: fewer than two tasks, or
too many resamples on which the metric is undefined (a constant side).

The modules, in the order the analyses build on each other:

* :mod:`~rankkit.analysis.labelled` — the input: results as a RunResult, and each strategy's
  tasks with human scores;
* :mod:`~rankkit.analysis.draws` — metrics on bootstrap resamples of tasks, vectorised;
* :mod:`~rankkit.analysis.correlations` — (a) and (e);
* :mod:`~rankkit.analysis.elimination` — (b);
* :mod:`~rankkit.analysis.breakdowns` — (c) and (d);
* :mod:`~rankkit.analysis.judge_bias` — position and length bias, and the slot bias of k-way judgments;
* :mod:`~rankkit.analysis.combined` — all of them at once (:func:`analyze`);
* :mod:`~rankkit.analysis.render` — the analysis as text tables and strict JSON.
"""

from rankkit.analysis.breakdowns import (
    AGGREGATE_METRICS,
    AGGREGATES,
    AggregateUnits,
    aggregate_level,
    breakdown,
    breakdown_fields,
)
from rankkit.analysis.combined import analyze, default_baseline
from rankkit.analysis.correlations import correlation_table, paired_difference
from rankkit.analysis.draws import MetricDraws, TaskMetrics, metric_intervals, row_correlations
from rankkit.analysis.elimination import elimination_group, elimination_rounds
from rankkit.analysis.judge_bias import (
    distinct_comparisons,
    distinct_group_comparisons,
    length_bias,
    position_bias,
    slot_bias,
    winner_of,
)
from rankkit.analysis.labelled import (
    DEFAULT_METRICS,
    LabelledTask,
    check_metrics,
    human_scores,
    labelled_tasks,
    load_results,
    strategy_names,
    strategy_run,
)
from rankkit.analysis.render import analysis_tables, format_analysis, to_jsonable

__all__ = [
    "AGGREGATES", "AGGREGATE_METRICS", "DEFAULT_METRICS", "AggregateUnits", "LabelledTask", "MetricDraws",
    "TaskMetrics", "aggregate_level", "analysis_tables", "analyze", "breakdown", "breakdown_fields",
    "check_metrics", "correlation_table", "default_baseline", "distinct_comparisons", "distinct_group_comparisons",
    "elimination_group",
    "elimination_rounds", "format_analysis", "human_scores", "labelled_tasks", "length_bias", "load_results",
    "metric_intervals", "paired_difference", "position_bias", "row_correlations", "strategy_names",
    "slot_bias", "strategy_run", "to_jsonable", "winner_of",
]
