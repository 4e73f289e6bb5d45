"""The paper's analyses of a results file, with bootstrap confidence intervals (``rankkit analyze``).

More in ``docs/analysis.md``.
"""

from rankkit.runs.analysis.breakdowns import (
    AGGREGATE_METRICS,
    AGGREGATES,
    AggregateUnits,
    aggregate_level,
    breakdown,
    breakdown_fields,
)
from rankkit.runs.analysis.combined import analyze, default_baseline
from rankkit.runs.analysis.correlations import correlation_table, paired_difference
from rankkit.runs.analysis.draws import MetricDraws, TaskMetrics, metric_intervals, row_correlations
from rankkit.runs.analysis.elimination import elimination_group, elimination_rounds
from rankkit.runs.analysis.judge_bias import (
    distinct_comparisons,
    distinct_group_comparisons,
    length_bias,
    position_bias,
    slot_bias,
    winner_of,
)
from rankkit.runs.analysis.labelled import (
    DEFAULT_METRICS,
    LabelledTask,
    check_metrics,
    human_scores,
    labelled_tasks,
    load_results,
    strategy_names,
    strategy_run,
)
from rankkit.runs.analysis.render import analysis_tables, format_analysis, to_jsonable
from rankkit.runs.analysis.robustness import (
    Fewest,
    fewest_changes,
    ranking_robustness,
    robustness_report,
    robustness_tables,
    task_robustness,
)

__all__ = [
    "AGGREGATES",
    "AGGREGATE_METRICS",
    "DEFAULT_METRICS",
    "AggregateUnits",
    "Fewest",
    "LabelledTask",
    "MetricDraws",
    "TaskMetrics",
    "aggregate_level",
    "analysis_tables",
    "analyze",
    "breakdown",
    "breakdown_fields",
    "check_metrics",
    "correlation_table",
    "default_baseline",
    "distinct_comparisons",
    "distinct_group_comparisons",
    "elimination_group",
    "elimination_rounds",
    "fewest_changes",
    "format_analysis",
    "human_scores",
    "labelled_tasks",
    "length_bias",
    "load_results",
    "metric_intervals",
    "paired_difference",
    "position_bias",
    "ranking_robustness",
    "robustness_report",
    "robustness_tables",
    "row_correlations",
    "slot_bias",
    "strategy_names",
    "strategy_run",
    "task_robustness",
    "to_jsonable",
    "winner_of",
]
