"""The report of ``rankkit rejudge`` as text tables: agreement per strategy, and the winners that changed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankkit.data.formatting import Table


def rejudge_tables(report: Mapping[str, Any]) -> tuple[str, list[Table]]:
    """The rejudge report as text tables.

    Returns a preamble (the two judges, what the new judgments cost) and two tables: per strategy,
    then the winners that changed.

    Parameters
    ----------
    report:
        :func:`rankkit.runs.rejudging.rejudge`'s result.
    """
    cost, overall = report["cost"], report["agreement"]
    preamble = (
        f"{report['original_judge'].get('description')} -> {report['judge']['description']} · "
        f"{overall['judgments']} distinct judgments re-asked ({cost['judge_calls']} new judge calls, "
        f"{cost['cache_hits']} from the cache)"
    )
    tables = [agreement_table(report), changed_winners_table(report)]
    if report.get("skipped"):
        tables.append(
            Table("strategies not rejudged", list(report["skipped"]), [("strategy", "strategy"), ("reason", "why")])
        )
    return preamble, tables


#: The columns a strategy's row of the agreement table takes from the report.
AGREEMENT_FIELDS = ("strategy", "judgments", "same_winner", "grade_correlation", "rank_correlation", "aggregation")


def agreement_table(report: Mapping[str, Any]) -> Table:
    """Agreement over all distinct judgments, then per strategy with its rank correlation and winners changed."""
    overall = report["agreement"]
    rows = [
        {
            "strategy": "all (distinct judgments)",
            "judgments": overall["judgments"],
            "same_winner": overall["same_winner"],
            "grade_correlation": overall["grade_correlation"],
        }
    ]
    rows += [
        {key: item[key] for key in AGREEMENT_FIELDS}
        | {"winners_changed": f"{item['winners_changed']} of {len(item['tasks'])}"}
        for item in report["strategies"]
    ]
    return Table(
        "agreement per judgment (same winner; grades: Pearson) and per task (Spearman of the two "
        "rankings, mean over tasks; aggregation: how the new ranking was computed)",
        rows,
        [
            ("strategy", "strategy"),
            ("judgments", "judgments"),
            ("same_winner", "same winner"),
            ("grade_correlation", "grade correlation"),
            ("rank_correlation", "rank correlation"),
            ("winners_changed", "winners changed"),
            ("aggregation", "aggregation"),
        ],
    )


def changed_winners_table(report: Mapping[str, Any]) -> Table:
    """The tasks whose #1 changed, per strategy: the old and new winner and the rank correlation."""
    changed = [
        {
            "strategy": item["strategy"],
            "task_id": row["task_id"],
            "old_winner": row["old_winner"],
            "new_winner": row["new_winner"],
            "spearman": row["spearman"],
        }
        for item in report["strategies"]
        for row in item["tasks"]
        if row["changed"]
    ]
    return Table(
        "winners that changed" + ("" if changed else ": none"),
        changed,
        [
            ("strategy", "strategy"),
            ("task_id", "task"),
            ("old_winner", "was"),
            ("new_winner", "now"),
            ("spearman", "rank correlation"),
        ],
    )
