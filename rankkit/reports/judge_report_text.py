"""A judge report as the plain-text tables ``rankkit judge-report`` prints."""

from __future__ import annotations

from typing import Any

METRIC_LABELS = (
    ("first_slot", "first-slot preference (0.5 = none)"),
    ("order_consistency", "order consistency"),
    ("length_judge", "judge picks the longer answer"),
    ("length_human", "humans prefer the longer answer"),
    ("accuracy_single", "accuracy, one order"),
    ("accuracy_both", "accuracy, both orders (decided pairs)"),
    ("accuracy_both_strict", "accuracy, both orders (draw = wrong)"),
)


def report_rows(report: dict[str, Any]) -> list[dict[str, Any]]:
    """Table rows (metric, value, interval, n) for the command line.

    Returns one row per metric.

    Parameters
    ----------
    report
        A :func:`~rankkit.reports.judge_report.judge_report` report.
    """
    rows = []
    for name, label in METRIC_LABELS:
        metric = report["metrics"][name]
        interval = "-" if metric["low"] is None else f"[{metric['low']:.3f}, {metric['high']:.3f}]"
        rows.append(
            {
                "metric": label,
                "value": metric["value"],
                "interval": interval,
                "n": None if metric["n"] is None else int(metric["n"]),
            }
        )
    return rows


def panel_rows(report: dict[str, Any]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(member rows, threshold rows) of a panel report, for the command line.

    Returns the member rows and the threshold rows.

    Parameters
    ----------
    report
        A :func:`~rankkit.reports.judge_report.judge_report` report of a panel judge.
    """
    members = []
    for member in report["panel"]["members"]:
        metrics = member["metrics"]
        members.append(
            {
                "member": member["member"],
                "acc1": metrics["accuracy_single"]["value"],
                "acc2": metrics["accuracy_both"]["value"],
                "strict": metrics["accuracy_both_strict"]["value"],
                "first": metrics["first_slot"]["value"],
                "consistency": metrics["order_consistency"]["value"],
                "failed": member["failed"],
            }
        )
    return members, list(report["panel"]["thresholds"])


def format_report(report: dict[str, Any]) -> str:
    """The report as the plain-text tables ``rankkit judge-report`` prints.

    Returns the tables.

    Parameters
    ----------
    report
        A :func:`~rankkit.reports.judge_report.judge_report` report.
    """
    from rankkit.data.formatting import format_table

    counts = report["counts"]
    lines = [
        f"judge {report['judge']['description']} · {report['tasks']} tasks, {report['pairs']} pairs, "
        f"{report['judgments']} judgments (each pair in both orders) · seed {report['seed']}",
        f"ties {counts['ties']} · failed {counts['failed']} (replay misses {counts['misses']}) · "
        f"judge calls {counts['judge_calls']} · cache hits {counts['cache_hits']}",
        format_table(
            report_rows(report),
            [
                ("metric", "metric"),
                ("value", "value"),
                ("interval", f"{report['bootstrap']['confidence']:.0%} CI"),
                ("n", "n"),
            ],
        ),
    ]
    if "panel" in report:
        lines += panel_tables(report)
    return "\n".join(lines)


#: The member table's columns: (row key, header).
MEMBER_COLUMNS = [
    ("member", "member"),
    ("acc1", "acc_1order"),
    ("acc2", "acc_2orders"),
    ("strict", "acc_strict"),
    ("first", "first_slot"),
    ("consistency", "consistency"),
    ("failed", "failed"),
]
#: The threshold table's columns: (row key, header).
THRESHOLD_COLUMNS = [
    ("threshold", "threshold"),
    ("decisions", "decisions"),
    ("draws", "draws"),
    ("accuracy", "acc_draw=1/2"),
    ("accuracy_decided", "acc_decided"),
    ("accuracy_strict", "acc_strict"),
]


def panel_tables(report: dict[str, Any]) -> list[str]:
    """A panel report's lines after the metrics: its members, their agreement, and decisions by threshold.

    Returns the lines.
    """
    from rankkit.data.formatting import format_table

    members, thresholds = panel_rows(report)
    alpha = report["panel"]["krippendorff_alpha"]
    return [
        "",
        "panel members (accuracy: one order / both orders on decided pairs / both orders, draw = wrong):",
        format_table(members, MEMBER_COLUMNS),
        f"inter-judge agreement (Krippendorff's alpha, nominal): {'-' if alpha is None else f'{alpha:.3f}'}",
        "",
        "decisions by agreement threshold:",
        format_table(thresholds, THRESHOLD_COLUMNS),
    ]
