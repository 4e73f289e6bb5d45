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
    ("kappa", "Cohen's kappa vs humans"),
    ("alpha", "Krippendorff's alpha vs humans"),
    ("ece", "calibration error, judge's P(win)"),
    ("ece_orders", "calibration error, order votes"),
)

#: The side-by-side table of several judges: (metric, column header).
SIDE_BY_SIDE = (
    ("accuracy_single", "acc_1order"),
    ("kappa", "kappa"),
    ("alpha", "alpha"),
    ("ece", "ece"),
    ("ece_orders", "ece_orders"),
    ("order_consistency", "consistency"),
    ("first_slot", "first_slot"),
    ("length_judge", "picks_longer"),
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
                "value": "n/a" if metric["value"] is None else metric["value"],
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
    lines += length_bucket_lines(report)
    if "panel" in report:
        lines += panel_tables(report)
    return "\n".join(lines)


def with_interval(metric: dict[str, Any]) -> str:
    """A metric as ``value [low, high]`` (``n/a`` without a value, no bounds without an interval)."""
    if metric["value"] is None:
        return "n/a"
    if metric["low"] is None:
        return f"{metric['value']:.3f}"
    return f"{metric['value']:.3f} [{metric['low']:.2f}, {metric['high']:.2f}]"


def length_bucket_lines(report: dict[str, Any]) -> list[str]:
    """The one-order accuracy by tercile of the pairs' length difference, one line."""
    buckets = report["length_buckets"]
    if not buckets:
        return []
    parts = [
        f"{b['low']:.0f}-{b['high']:.0f} chars: {with_interval(b['accuracy_single'])} ({b['pairs']} pairs)"
        for b in buckets
        if b["pairs"]
    ]
    return ["accuracy, one order, by length difference |len a - len b| (terciles): " + " · ".join(parts)]


def format_side_by_side(reports: list[dict[str, Any]]) -> str:
    """Several judges' reports on the same pairs as one table, each metric with its bootstrap interval.

    Returns the table with a header line.
    """
    from rankkit.data.formatting import format_table

    first = reports[0]
    rows = [
        {
            "judge": report["judge"]["description"],
            **{key: with_interval(report["metrics"][key]) for key, _ in SIDE_BY_SIDE},
        }
        for report in reports
    ]
    return "\n".join(
        [
            f"{len(reports)} judges on the same {first['pairs']} pairs of {first['tasks']} tasks (both orders) · "
            f"seed {first['seed']} · {first['bootstrap']['confidence']:.0%} bootstrap intervals over tasks · "
            f"ece over {first['calibration_bins']} equal-width bins (n/a: the judge gives no probability)",
            format_table(rows, [("judge", "judge"), *SIDE_BY_SIDE]),
        ]
    )


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
