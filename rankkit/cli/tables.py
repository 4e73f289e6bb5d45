"""The tables ``rankkit compare`` and ``rankkit rank`` print: their columns, rows and the notes under them."""

from __future__ import annotations

from typing import Any

from rankkit.data.formatting import render

TABLE_METRICS = tuple(
    (name, name) for name in ("pearson", "spearman", "kendall", "task_spearman", "pairwise_accuracy", "top1_accuracy")
)
#: The columns of `rankkit compare`: what each strategy used (comparisons + grades), where each
#: judgment came from (judge_calls = new and paid for, cache_hits = the persistent cache, shared_hits
#: = reused inside this run), its time and its agreement with the humans.
COMPARE_COLUMNS = (
    ("name", "strategy"),
    ("comparisons", "comparisons"),
    ("grades", "grades"),
    ("judge_calls", "judge_calls"),
    ("cache_hits", "cache_hits"),
    ("shared_hits", "shared_hits"),
    ("seconds", "seconds"),
    *TABLE_METRICS,
)
#: Added after ``shared_hits`` when any strategy has judgments that failed to parse (counted as ties).
FAILURE_COLUMN = ("parse_failures", "parse_failures")
#: Added before ``seconds`` when the judge is priced: what the strategy's new judgments cost in USD.
USD_COLUMN = ("usd", "usd")
#: What the default table leaves out, first listed first, until it fits the terminal (``--format wide`` keeps all).
FOLDABLE_COLUMNS = ("kendall", "pearson", ("comparisons", "grades"), "top1_accuracy", "cache_hits", "task_spearman")
#: The columns of `rankkit rank`, in the order of its JSONL rows (``champion`` only for a strategy
#: that crowns one: see :func:`rank_columns`).
RANK_COLUMNS = tuple(
    (key, key) for key in ("task_id", "candidate_id", "system", "strategy", "score", "rank", "champion", "human")
)


def rank_columns(strategy_run: Any) -> tuple[tuple[str, str], ...]:
    """RANK_COLUMNS without ``champion`` for a strategy that crowns no champion (a column that is
    false everywhere would only suggest that no candidate won)."""
    if any(task.champion is not None for task in strategy_run.tasks):
        return RANK_COLUMNS
    return tuple(column for column in RANK_COLUMNS if column[0] != "champion")


def champion_note(strategy_run: Any) -> str:
    """A one-line note when a task's champion is not ranked first ("" otherwise).

    A tournament's scores are means over the rounds a candidate played (as in the paper), so the
    champion, who won its last match, can score below a candidate knocked out later with better
    grades; the ``champion`` column says who won.
    """
    tasks = [task for task in strategy_run.tasks if task.champion is not None]
    unranked = [task.task_id for task in tasks if task.ranking and task.ranking[0] != task.champion]
    if not unranked:
        return ""
    shown = ", ".join(unranked[:3]) + (", ..." if len(unranked) > 3 else "")
    return (
        f"note: in {len(unranked)} of {len(tasks)} tasks ({shown}) the {strategy_run.name} champion is not "
        f"ranked first: scores are means over the rounds played; the champion column marks the winner"
    )


def compare_rows(result: Any) -> list[dict[str, Any]]:
    """One row per strategy of a run, keyed as in COMPARE_COLUMNS; ``usd`` reads ``paid by <strategy>``
    where the strategy made no judgment and reused those of strategies before it."""
    from rankkit.runs.bill import payers, usd_cell

    paid_by = payers(result)
    rows = []
    for s in result.strategies:
        row = {
            "name": s.name,
            "comparisons": s.cost.comparisons,
            "grades": s.cost.grades,
            "judge_calls": s.cost.judge_calls,
            "cache_hits": s.cost.cache_hits,
            "shared_hits": s.cost.shared_hits,
            "parse_failures": s.cost.parse_failures,
            "usd": usd_cell(s, paid_by.get(s.name, [])),
            "seconds": s.seconds,
        }
        row.update(s.metrics)
        rows.append(row)
    return rows


def total_row(total: dict[str, Any]) -> dict[str, Any]:
    """The row under the strategies: what the whole run paid, each judgment counted once
    (:func:`rankkit.runs.bill.run_total`), its seconds the run's wall time."""
    return {
        "name": "total",
        "judge_calls": total["judge_calls"],
        "cache_hits": total["cache_hits"],
        "shared_hits": total["shared_hits"],
        "usd": round(total["usd"], 6),
        "seconds": total["wall_seconds"],
    }


def compare_columns(rows: list[dict[str, Any]], priced: bool = False) -> tuple[tuple[str, str], ...]:
    """COMPARE_COLUMNS, with the ``parse_failures`` column when any strategy has failed judgments
    and the ``usd`` column (before ``seconds``) when the judge is priced."""
    columns = COMPARE_COLUMNS
    if priced or any(isinstance(row.get("usd"), float) and row["usd"] for row in rows):
        at = [key for key, _ in columns].index("seconds")
        columns = (*columns[:at], USD_COLUMN, *columns[at:])
    if not any(row.get("parse_failures") for row in rows):
        return columns
    at = [key for key, _ in columns].index("shared_hits") + 1
    return (*columns[:at], FAILURE_COLUMN, *columns[at:])


def compare_table(result: Any, output_format: str, width: int) -> tuple[str, list[str]]:
    """The compare table in ``output_format`` and the lines to print under it.

    ``table`` drops :data:`FOLDABLE_COLUMNS` (first listed first) until it fits ``width``
    characters and says which; ``wide`` is the table with every column. Both, and ``markdown``,
    end with the total row; ``csv`` is one row per strategy, for programs.
    """
    from rankkit.data.formatting import fit_columns
    from rankkit.runs.bill import is_priced, price_note, run_total, total_line

    rows = compare_rows(result)
    priced = is_priced(result)
    columns = compare_columns(rows, priced)
    if output_format == "csv":  # for programs: the USD as a number everywhere
        for row, strategy_run in zip(rows, result.strategies):
            row["usd"] = round(strategy_run.cost.usd, 6)
        return render(rows, columns, "csv"), []
    total = run_total(result)
    rows.append(total_row(total))
    notes = [total_line(total, priced)]
    if USD_COLUMN in columns and any(isinstance(row["usd"], str) for row in rows):
        notes.append("paid by X: every judgment the strategy used was made, and paid for, by X earlier in this run")
    if output_format == "table":
        columns, dropped = fit_columns(rows, columns, width, FOLDABLE_COLUMNS)
        if dropped:
            notes.append(f"not shown, to fit {width} columns: {', '.join(dropped)} (--format wide shows them)")
    note = price_note(result)
    if note:
        notes.append(note)
    return render(rows, columns, "markdown" if output_format == "markdown" else "table"), notes
