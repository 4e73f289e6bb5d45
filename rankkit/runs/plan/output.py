"""How a dry run is shown: the table of figures with their bounds, and a summary of what is to pay for."""

from __future__ import annotations

from typing import Any

from rankkit.judgments.spend import Spend
from rankkit.runs.plan.dry_run import DryRun, PlanRow
from rankkit.strategies._spend import describe_spend

#: Columns of the dry-run table: what each strategy uses and where each judgment would come from.
COLUMNS = (
    ("strategy", "strategy"),
    ("comparisons", "comparisons"),
    ("grades", "grades"),
    ("cached", "cached"),
    ("shared", "shared"),
    ("new", "new"),
    ("est_prompt_tokens", "est_prompt_tokens"),
    ("est_usd", "est_usd"),
    ("exact", "exact"),
    ("bounds", "bounds"),
    ("note", "note"),
)


def display_rows(report: DryRun) -> list[dict[str, Any]]:
    """Rows for people: inexact figures prefixed ``≤`` (at most) or ``~`` (estimate), estimated tokens by ``≈``."""
    rows = []
    for row in report.rows:
        record = row.as_dict()
        for figure, symbol in row.bounds.items():
            record[figure] = f"{symbol}{record[figure]}"
        if record["est_prompt_tokens"] is not None:
            record["est_prompt_tokens"] = f"{row.bounds.get('new', '≈')}{record['est_prompt_tokens']}"
        if record["est_usd"] is not None:
            record["est_usd"] = f"{row.bounds.get('new', '≈')}{record['est_usd']:.4f}"
        rows.append(record)
    return rows


def per_judgment(row: PlanRow) -> tuple[Spend, tuple[str, ...]]:
    """What one of the row's new judgments spends on average, and the units the estimate can tell
    (tokens with a judge that has prompts, USD with a price)."""
    new = row.new or 1
    tokens = row.prompt_tokens / new if row.prompt_tokens is not None else 0.0
    usd = row.usd / new if row.usd is not None else 0.0
    units = ("judgments", "answers") + (("tokens",) if row.prompt_tokens is not None else ())
    return Spend(1, row.answers_per_judgment, tokens, usd), units + (("usd",) if row.usd is not None else ())


def format_dry_run(report: DryRun, fmt: str = "table", data: str = "") -> str:
    """The dry run as ``table``, ``markdown``, ``csv`` or ``json``; the human formats add a summary, notes and warnings.

    ``data`` names the data in the summary line (left out when empty).
    """
    from rankkit.data.formatting import render

    if fmt in ("csv", "json"):
        return render([row.as_dict() for row in report.rows], COLUMNS, fmt)
    columns = COLUMNS[:-3] + ((("note", "note"),) if any(row.notes for row in report.rows) else ())
    if all(row.prompt_tokens is None for row in report.rows):
        columns = tuple(c for c in columns if c[0] != "est_prompt_tokens")
    if all(row.usd is None for row in report.rows):
        columns = tuple(c for c in columns if c[0] != "est_usd")
    marks = {row.bounds["new"] for row in report.rows if "new" in row.bounds}
    total = f"{'about ' if '~' in marks else 'at most ' if marks else ''}{report.new}"
    lines = [
        f"dry run: {report.tasks} tasks{f' from {data}' if data else ''} · judge {report.judge} · "
        f"nothing was judged, no model was loaded",
        render(display_rows(report), columns, fmt),
        f"new judgments to pay for: {total}",
    ]
    tokens = [row.prompt_tokens for row in report.rows if row.prompt_tokens is not None]
    if tokens:
        lines[-1] += f" · estimated prompt tokens {'≤' if marks == {'≤'} else '≈'}{round(sum(tokens))}"
    dollars = [row.usd for row in report.rows if row.usd is not None]
    if dollars:
        lines[-1] += f" · estimated USD {'≤' if marks == {'≤'} else '≈'}{sum(dollars):.4f}"
    for row in report.rows:
        if row.to_target is not None:
            lines.append(
                f"to target, {row.strategy}: {describe_spend(row.to_target, *per_judgment(row))} over all tasks "
                f"— a prior-based estimate before any judgment (docs/stopping.md), capped by the budget"
            )
    lines += [f"note: {note}" for note in report.notes]
    lines += [f"warning: {warning}" for warning in report.warnings]
    if not report.exact:
        lines.append(
            "≤ at most, ~ an estimate: where a strategy's path depends on verdicts not yet given, it "
            "was run on several kinds of stand-in verdicts (see rankkit.runs.plan.dry_run)"
        )
    return ("\n\n" if fmt == "markdown" else "\n").join(lines)
