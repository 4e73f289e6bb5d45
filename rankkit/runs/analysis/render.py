"""The analysis as text tables (table, CSV, markdown) and as strict JSON."""

from __future__ import annotations

import math
import string
from collections.abc import Iterator, Mapping
from dataclasses import replace
from typing import Any

import numpy as np

from rankkit.data.formatting import Table, fit_columns, number_text, render_sections
from rankkit.judgments.values import labels
from rankkit.runs.analysis.breakdowns import AGGREGATE_METRICS
from rankkit.runs.analysis.robustness import Fewest, robustness_tables
from rankkit.runs.bill import total_line
from rankkit.stats.intervals import Interval


def to_jsonable(value: Any) -> Any:
    """The analysis as strict JSON: intervals and robustness figures become dicts, NaN becomes null."""
    if isinstance(value, (Interval, Fewest)):
        return to_jsonable(value.to_dict())
    if isinstance(value, float):
        return None if math.isnan(value) or math.isinf(value) else value
    if isinstance(value, (np.floating, np.integer)):
        return to_jsonable(value.item())
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    return value


#: Columns whose intervals are differences, shown with a sign (``+0.012 [-0.020, +0.041]``).
SIGNED_COLUMNS = frozenset({"difference", "once_vs_more"})


#: Columns a ``table`` leaves out, first listed first, until it fits the width it is given.
FOLDABLE_COLUMNS = (("comparisons", "grades"), "pearson")


def format_analysis(report: Mapping[str, Any], fmt: str = "table", width: int | None = None) -> str:
    """The analysis as text (what ``rankkit analyze`` prints); ``json`` here is the tables, not :func:`to_jsonable`.

    In ``table`` and ``markdown`` an interval is one cell, ``0.680 [0.631, 0.722]``; in ``csv`` and
    ``json`` it is three full-precision columns: ``<header>``, ``<header> low``, ``<header> high``.

    Parameters
    ----------
    fmt
        ``table``, ``markdown``, ``csv`` or ``json``.
    width
        ``table`` only: leave :data:`FOLDABLE_COLUMNS` out of a table wider than this, saying so
        under its title (None: every column).
    """
    preamble, tables = analysis_tables(report)
    split = fmt in ("csv", "json")
    tables = [interval_cells(table, split) for table in tables]
    if fmt == "table" and width is not None:
        tables = [fit_table(table, width) for table in tables]
    return render_sections(tables, fmt, preamble)


def fit_table(table: Table, width: int) -> Table:
    """``table`` without as few :data:`FOLDABLE_COLUMNS` as make it fit ``width``, noting which."""
    columns, dropped = fit_columns(table.rows, table.columns, width, FOLDABLE_COLUMNS)
    if not dropped:
        return table
    note = f"not shown, to fit {width} columns: {', '.join(dropped)} (--format wide shows them)"
    return replace(table, columns=columns, note="\n".join(filter(None, [table.note, note])))


def interval_cells(table: Table, split: bool) -> Table:
    """``table`` without :class:`Interval` cells: split in estimate, low, high columns if ``split``, else text."""
    interval_keys = {key for key, _ in table.columns if any(isinstance(row.get(key), Interval) for row in table.rows)}
    if not split:
        rows = [
            {
                key: (_interval_text(value, key in SIGNED_COLUMNS) if isinstance(value, Interval) else value)
                for key, value in row.items()
            }
            for row in table.rows
        ]
        return replace(table, rows=rows)
    columns: list[tuple[str, str]] = []
    for key, header in table.columns:
        columns.append((key, header))
        if key in interval_keys:
            columns += [(f"{key} low", f"{header} low"), (f"{key} high", f"{header} high")]
    rows = []
    for row in table.rows:
        plain = dict(row)
        for key in interval_keys:
            value = row.get(key)
            if isinstance(value, Interval):
                plain.update({key: value.estimate, f"{key} low": value.low, f"{key} high": value.high})
        rows.append(plain)
    return replace(table, rows=rows, columns=columns)


def _interval_text(interval: Interval, signed: bool) -> str:
    return _signed(interval) if signed else interval.text()


def analysis_tables(report: Mapping[str, Any]) -> tuple[str, list[Table]]:
    """The analysis as a preamble (data, judge, bootstrap) and one :class:`Table` per section, intervals kept."""
    pct = f"{report['bootstrap']['level']:.0%}"
    sections = [
        agreement_table(report, pct),
        *([difference_table(report)] if report["differences"] else []),
        *([elimination_table(report["elimination_rounds"])] if report["elimination_rounds"] else []),
        *([aggregate_table(report["aggregate_level"])] if report["aggregate_level"] else []),
        *[breakdown_table(field, per_strategy) for field, per_strategy in report["breakdowns"].items()],
        *judge_bias_tables(report["judge_bias"]),
        *robustness_tables(report.get("robustness") or []),
        *([pair_effect_table(report["pair_effects"])] if report.get("pair_effects") else []),
    ]
    return analysis_preamble(report, pct), [
        replace(table, title=f"({letter}) {table.title}") for letter, table in zip(_letters(), sections)
    ]


def pair_effect_table(record: Mapping[str, Any]) -> Table:
    """The posterior of the judge's pair-effect sd, one row per sd weighed, and the spec to pass on."""
    rows = [{"pair_sd": sd, "probability": p} for sd, p in zip(record["grid"], record["posterior"])]
    note = (
        f"from {record['judgments']} distinct judgments of {record['tasks']} tasks; most probable "
        f"{record['best']:g}, {record['level']:.0%} upper {record['upper']:g}: pass {record['spec']}"
    )
    return Table(
        "judge's pair-effect sd (logit units)", rows, [("pair_sd", "pair_sd"), ("probability", "posterior")], note
    )


def analysis_preamble(report: Mapping[str, Any], pct: str) -> str:
    """What the analysis is of: data, criterion, judge, how the intervals were made and, when the
    report has one, the bill."""
    boot = report["bootstrap"]
    judge = (report.get("judge") or {}).get("description", "?")
    bill = report.get("bill")
    priced = any(row.get("usd") for row in report["correlations"])
    return (
        f"data {report.get('data')} · criterion {report.get('criterion')} · judge {judge}\n"
        f"intervals: {pct} percentile bootstrap over tasks ({boot['resamples']} resamples, seed {boot['seed']}), "
        "widened to hold the estimate" + (f"\n{total_line(bill, priced)}" if bill else "")
    )


def agreement_table(report: Mapping[str, Any], pct: str) -> Table:
    """Per strategy what it used (and with prices what it cost) and how its scores correlate with the humans'."""
    priced = any(row.get("usd") for row in report["correlations"])
    paid_by = (report.get("bill") or {}).get("paid_by", {})
    columns = [("strategy", "strategy"), ("comparisons", "comparisons"), ("grades", "grades"), ("tasks", "tasks")]
    if priced:
        columns.insert(3, ("usd", "usd"))
    metric_names = list(report["correlations"][0]["metrics"]) if report["correlations"] else []
    columns += [(m, m) for m in metric_names]
    rows = [
        {
            **{k: row[k] for k in ("strategy", "comparisons", "grades", "tasks")},
            "usd": _usd_cell(row, paid_by.get(row["strategy"], [])),
            **{m: row["metrics"][m] for m in metric_names},
        }
        for row in report["correlations"]
    ]
    return Table(
        f"agreement with the human scores, {pct} intervals",
        rows,
        columns,
        "what each strategy used"
        + (" (usd: what its new judgments cost)" if priced else "")
        + " and how its scores correlate with the humans'",
    )


def difference_table(report: Mapping[str, Any]) -> Table:
    """Each strategy's metrics minus the baseline's, on the same resampled tasks."""
    rows = [
        {
            "pair": f"{diff['a']} - {diff['b']}",
            "metric": metric,
            "difference": item["difference"],
            "verdict": _verdict_text(item["verdict"], diff),
        }
        for diff in report["differences"]
        for metric, item in diff["metrics"].items()
    ]
    return Table(
        f"difference to the baseline {report['baseline']} (paired bootstrap)",
        rows,
        [("pair", "strategies"), ("metric", "metric"), ("difference", "difference"), ("verdict", "verdict")],
        "each strategy's metric minus the baseline's on the same resampled tasks; 'within noise': the interval holds 0",
    )


def elimination_table(elimination_rounds: list[Mapping[str, Any]]) -> Table:
    """For knockout-like strategies: agreement of the candidates out in round 1 against those out later."""
    rows = []
    for item in elimination_rounds:
        groups = item["groups"]
        played = item["by_played"]["groups"]
        rows.append(
            {
                "strategy": item["strategy"],
                "first": groups["first round"]["correlation"],
                "n_first": groups["first round"]["candidates"],
                "later": groups["later rounds"]["correlation"],
                "n_later": groups["later rounds"]["candidates"],
                "difference": item["difference"],
                "once_vs_more": item["by_played"]["difference"],
                "n_once": played["graded once"]["candidates"],
            }
        )
    return Table(
        "elimination rounds",
        rows,
        [
            ("strategy", "strategy"),
            ("first", "first round"),
            ("n_first", "n"),
            ("later", "later rounds"),
            ("n_later", "n"),
            ("difference", "later - first"),
            ("once_vs_more", "graded >1 - graded once"),
            ("n_once", "n once"),
        ],
        "Pearson of the candidates knocked out in round 1 vs later (Knockout LLM Assessment, Table 2); "
        "graded >1: in 2+ rounds",
    )


def aggregate_table(aggregate_level: list[Mapping[str, Any]]) -> Table:
    """Per strategy the agreement of its aggregated scores (per system, or per unit and system) with the humans'."""
    first = aggregate_level[0]
    unit = f"per {first['unit_field']} and system" if first["unit_field"] else "per system over all tasks"
    rows = [
        {"strategy": a["strategy"], "units": a["units"], **{m: a["metrics"][m] for m in AGGREGATE_METRICS}}
        for a in aggregate_level
    ]
    return Table(
        "aggregate level",
        rows,
        [("strategy", "strategy"), ("units", "units"), *[(m, m) for m in AGGREGATE_METRICS]],
        f"the {first['how']} of the scores {unit}, correlated with the same aggregate of the human scores",
    )


def breakdown_table(field: str, per_strategy: Mapping[str, list[Mapping[str, Any]]]) -> Table:
    """The agreement within each group of tasks sharing a value of the meta field ``field``, per strategy."""
    rows = [
        {
            "group": g["group"],
            "strategy": name,
            "tasks": g["tasks"],
            "candidates": g["candidates"],
            **{m: g["metrics"][m] for m in g["metrics"]},
            "mean_score": g["mean_score"],
            "mean_human": g["mean_human"],
        }
        for name, groups in per_strategy.items()
        for g in groups
    ]
    rows.sort(key=lambda r: (r["group"], list(per_strategy).index(r["strategy"])))
    shown = list(dict.fromkeys(m for groups in per_strategy.values() for g in groups for m in g["metrics"]))
    return Table(
        f"by {field}",
        rows,
        [
            ("group", field),
            ("strategy", "strategy"),
            ("tasks", "tasks"),
            ("candidates", "candidates"),
            *[(m, m) for m in shown],
            ("mean_score", "mean score"),
            ("mean_human", "mean human"),
        ],
        f"the agreement within each group of tasks of the same {field}",
    )


def judge_bias_tables(bias: Mapping[str, Any]) -> list[Table]:
    """The judge's position and length bias over all distinct matches, then its style preference and
    k-way slot bias when the analysis has them."""
    position, length = bias["position"], bias["length"]
    rows = [
        {
            "view": "first-shown candidate wins",
            "rate": position["first_slot_win_rate"],
            "human": position["human_first_better"],
            "n": position["matches"] - position["ties"],
        },
        {"view": "same winner in both orders", "rate": position["order_consistency"], "human": None, "n": None},
        {
            "view": "longer answer wins",
            "rate": length["longer_win_rate"],
            "human": length["human_longer_better"],
            "n": length["matches"],
        },
    ]
    tables = [
        Table(
            "judge bias over all distinct matches",
            rows,
            [("view", "view"), ("rate", "judge"), ("human", "human"), ("n", "matches")],
            "exact binomial intervals; 'human' = the rate a judge agreeing with the humans would show",
        )
    ]
    if bias.get("style") and bias["style"]["matches"]:
        tables.append(style_table(bias["style"]))
    if bias.get("slots"):
        tables.append(slot_table(bias["slots"]))
    return tables


def _letters() -> Iterator[str]:
    """a, b, ..., z, then aa, ab, ...: the sections' letters in print order."""
    letters = string.ascii_lowercase
    yield from letters
    for first in letters:
        for second in letters:
            yield first + second


def _usd_cell(row: Mapping[str, Any], paid_by: list[str]) -> float | str:
    if not row.get("judge_calls") and paid_by:
        return "paid by " + ", ".join(paid_by)
    return row.get("usd")


def style_table(style: Mapping[str, Any]) -> Table:
    """The judge's style preference beyond the human scores (the analysis's ``judge_bias.style``)."""
    rows = [
        {
            "term": "length (per doubling of the length ratio)",
            "spreads": style["length"],
            "logit": style["length_logit"],
        },
        {
            "term": "formatting (per doubling of 1 + headers, list items, bold)",
            "spreads": style["format"],
            "logit": style["format_logit"],
        },
        {"term": "first slot", "spreads": style["slot_sd"], "logit": style["slot"]},
        {"term": "human score (per spread)", "spreads": None, "logit": style["human"]},
    ]
    return Table(
        "judge style preference beyond the human scores",
        rows,
        [("term", "term"), ("spreads", "spreads"), ("logit", "log-odds")],
        f"logistic regression of 'first shown won' on the human-score and style differences ({style['matches']} "
        f"matches, {style['tasks']} tasks; bootstrap)\n"
        "spreads = the term's coefficient over the human-score one: the human-score spreads it is worth to the judge",
    )


def slot_table(slots: list[Mapping[str, Any]]) -> Table:
    """The slot bias of k-way judgments: one row per (k, slot), slots labelled as the judge sees them (A = first)."""
    rows = []
    for size in slots:
        names = labels(size["k"])
        for row in size["slots"]:
            rows.append(
                {
                    "k": size["k"],
                    "slot": names[row["slot"]],
                    "rate": row["rate"],
                    "uniform": row["uniform"],
                    "human": row["human"],
                    "chosen": row["chosen"],
                    "judgments": size["judgments"],
                    "failed": size["failed"],
                }
            )
    return Table(
        "k-way slot bias over all distinct k-way judgments",
        rows,
        [
            ("k", "k"),
            ("slot", "slot"),
            ("rate", "judge"),
            ("uniform", "uniform"),
            ("human", "human"),
            ("chosen", "chosen"),
            ("judgments", "judgments"),
            ("failed", "failed"),
        ],
        "how often the answer in each slot was chosen (rankings: ranked first; exact binomial intervals; "
        "failed judgments left out)\n'uniform' = 1/k; 'human' = the rate a judge agreeing with the humans would show",
    )


def _verdict_text(verdict: str, diff: Mapping[str, Any]) -> str:
    return {"a better": f"{diff['a']} better", "b better": f"{diff['b']} better"}.get(verdict, verdict)


def _signed(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return "-"
    if math.isnan(interval.low):
        return number_text(interval.estimate, signed=True)
    return (
        f"{number_text(interval.estimate, signed=True)} "
        f"[{number_text(interval.low, signed=True)}, {number_text(interval.high, signed=True)}]"
    )
