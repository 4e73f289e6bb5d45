"""The report's sections besides judge bias: the leaderboard, untrusted text and robustness.

Every renderer takes the run as ``results``; ``resamples``, ``seed`` and ``level`` are its
bootstrap's number of resamples, seed and interval coverage.
"""

from __future__ import annotations

import math
from typing import Any

from rankkit.reports.report_data import system_leaderboard
from rankkit.reports.report_html import esc, interval_cell, number_html, table_html
from rankkit.runs.analysis import correlation_table, human_scores, strategy_names, strategy_run
from rankkit.runs.analysis.combined import ANALYZE_BUDGET
from rankkit.runs.analysis.robustness import DEFAULT_TOP_K, FRAGILE_SHARE, robustness_report
from rankkit.runs.bill import payers, run_total, total_line
from rankkit.runs.results import RunResult

REPORT_METRICS = ("pearson", "spearman", "task_spearman", "pairwise_accuracy", "top1_accuracy")


def leaderboard_html(results: RunResult, resamples: int, seed: int, level: float) -> str:
    """The strategies table (cost and metrics with intervals) and each strategy's system leaderboard.

    Returns an HTML fragment.
    """
    labelled = bool(human_scores(results))
    rows_data = strategy_rows(results, resamples, seed, level, labelled)
    priced = any(row["usd"] for row in rows_data)
    paid_by = payers(results)
    rows = [strategy_row_html(row, labelled, priced, paid_by.get(row["strategy"], [])) for row in rows_data]
    headers = ["strategy", "comparisons", "grades", "judge calls", *(["usd"] if priced else [])]
    headers += list(REPORT_METRICS) if labelled else []
    bill = "".join(f"<p class=note>{esc(line)}</p>" for line in total_line(run_total(results), priced).splitlines())
    note = (
        f"<p class=note>Sorted by task_spearman. Brackets: {level:.0%} bootstrap intervals over tasks "
        f"({resamples} resamples, seed {seed}).</p>"
        if labelled
        else "<p class=note>These results have no human scores, so only the cost is shown.</p>"
    )
    return (
        table_html(headers, rows, "leaderboard")
        + note
        + bill
        + systems_html(results)
        + style_controlled_html(results, resamples, seed)
    )


def strategy_rows(results: RunResult, resamples: int, seed: int, level: float, labelled: bool) -> list[dict[str, Any]]:
    """Per strategy its cost, and with human scores its metrics with intervals, best task_spearman first.

    Returns the rows of :func:`~rankkit.runs.analysis.correlation_table` (without human scores: cost only,
    in the run's order, ``metrics`` empty).
    """
    if not labelled:
        return [
            {
                "strategy": s.name,
                "comparisons": s.cost.comparisons,
                "grades": s.cost.grades,
                "judge_calls": s.cost.judge_calls,
                "usd": s.cost.usd,
                "tasks": len(s.tasks),
                "metrics": {},
            }
            for s in results.strategies
        ]
    rows = correlation_table(results, REPORT_METRICS, resamples, seed, level)
    return sorted(rows, key=lambda row: -_nan_as(row["metrics"]["task_spearman"].estimate, -9))


def _nan_as(value: float, instead: float) -> float:
    return instead if math.isnan(value) else value


def strategy_row_html(row: dict[str, Any], labelled: bool, priced: bool, payer: list[str]) -> str:
    """One strategy's row of the strategies table; a strategy that reused others' judgments shows
    who paid for them (``payer``) instead of a price.

    Returns a ``<tr>`` element.
    """
    cells = "".join(interval_cell(row["metrics"][m]) for m in REPORT_METRICS) if labelled else ""
    usd = ""
    if priced:
        paid = "paid by " + ", ".join(payer) if payer and not row["judge_calls"] else row["usd"]
        usd = f"<td class=num>{number_html(paid, 4)}</td>"
    return (
        f"<tr><td>{esc(row['strategy'])}</td><td class=num>{number_html(row['comparisons'])}</td>"
        f"<td class=num>{number_html(row['grades'])}</td><td class=num>{number_html(row['judge_calls'])}</td>{usd}{cells}</tr>"
    )


def systems_html(results: RunResult) -> str:
    """Each strategy's systems by the mean position it gave their answers, in fold-outs; "" when no
    strategy's candidates name systems.

    Returns an HTML fragment, or "".
    """
    boards = []
    for name in strategy_names(results):
        board = system_leaderboard(results, name)
        if not board:
            continue
        board_rows = [
            f"<tr><td class=num>{i}</td><td>{esc(r['system'])}</td><td class=num>{r['mean_rank']:.2f}</td>"
            f"<td class=num>{number_html(r['mean_score'])}</td><td class=num>{r['won']}</td>"
            f"<td class=num>{number_html(r['mean_human'])}</td><td class=num>{r['tasks']}</td></tr>"
            for i, r in enumerate(board, start=1)
        ]
        boards.append(
            f"<details><summary>{esc(name)}: systems</summary>"
            + table_html(["#", "system", "mean rank", "mean score", "ranked first", "mean human", "tasks"], board_rows)
            + "</details>"
        )
    if not boards:
        return ""
    return (
        "<h3>Systems per strategy</h3><p class=note>Ranked by the mean position each strategy gave the "
        "system's answers (1 = best), which is comparable across strategies whatever their score scale.</p>"
        + "".join(boards)
    )


#: The most bootstrap resamples of a style-controlled system leaderboard in the report: each refits
#: it, and an all-pairs strategy on 100 prompts x 32 systems induces 49,600 results per refit.
STYLE_RESAMPLES = 50


def style_controlled_html(results: RunResult, resamples: int, seed: int) -> str:
    """Each strategy's systems rated by style-controlled Bradley–Terry (length and format) on the
    pairwise results its per-task rankings induce, with the style coefficients and their intervals
    (:mod:`rankkit.leaderboard.style`); "" when the candidates do not all name a system.

    Returns an HTML fragment, or "".
    """
    from rankkit.leaderboard import LeaderboardError, all_systems, from_strategy

    try:
        if len(all_systems(results.tasks)) < 2:
            return ""
    except LeaderboardError:
        return ""
    draws = min(resamples, STYLE_RESAMPLES)
    blocks = []
    for name in strategy_names(results):
        board = from_strategy(
            strategy_run(results, name), results.tasks, seed=seed, resamples=draws, control=("length", "format")
        )
        rows = [
            f"<tr><td class=num>{row.rank}</td><td>{esc(row.name)}</td><td class=num>{number_html(row.rating, 1)}</td>"
            f"<td class=num>{number_html(row.ci_low, 1)} – {number_html(row.ci_high, 1)}</td>"
            f"<td class=num>{number_html(row.unadjusted, 1)}</td></tr>"
            for row in board.systems
        ]
        coefficients = [
            f"<tr><td>{esc(term)}</td><td class=num>{number_html(value['estimate'])}</td>"
            f"<td class=num>{number_html(value['ci_low'])} – {number_html(value['ci_high'])}</td></tr>"
            for term, value in board.style["coefficients"].items()
        ]
        blocks.append(
            f"<details><summary>{esc(name)}: style-controlled systems</summary>"
            + table_html(["#", "system", "style-controlled rating", "95% interval", "plain BT rating"], rows)
            + table_html(
                ["style covariate", "coefficient (log-odds per unit of (a-b)/(a+b))", "95% interval"], coefficients
            )
            + "</details>"
        )
    return (
        "<h3>Systems with style control</h3><p class=note>Bradley–Terry ratings (Elo scale) fitted on the "
        "pairwise results each strategy's per-task rankings induce, jointly with the answers' normalised "
        "length (tokens ≈ characters / 4), header, list-item and bold differences (LMArena's style control), "
        f"ranked by the style-adjusted rating; {draws} bootstrap resamples of the induced results. A positive "
        "coefficient: the ranking favours that style beyond the systems' strengths.</p>" + "".join(blocks)
    )


def suspicious_html(results: RunResult) -> str:
    """The table of candidates carrying judge-protocol text ("" when there are none).

    Returns an HTML fragment, or "".
    """
    by_id = {t.task_id: t for t in results.tasks}
    rows = []
    for task_id, by_task in results.suspicious.items():
        task = by_id[task_id]
        for cid, names in by_task.items():
            rows.append(
                f"<tr><td>{esc(task_id)}</td><td>{esc(cid)}</td><td>{esc(task.candidate(cid).system)}</td>"
                f"<td>{esc(', '.join(names))}</td></tr>"
            )
    if not rows:
        return ""
    return (
        f'<section id="untrusted"><h2>Untrusted text</h2><p class=note>{len(rows)} candidate(s) carry text that '
        "rankkit's judge prompts and verdict continuations use, or a chat template's turn markers. No verdict is "
        "read from it, but a model's reading is conditioned on it; an LLM judge's <code>sanitize=true</code> "
        "rewrites it before judging.</p>"
        + table_html(["task", "candidate", "system", "carries"], rows, "suspicious")
        + "</section>"
    )


def robustness_html(results: RunResult, top_k: int = DEFAULT_TOP_K, budget: int = ANALYZE_BUDGET) -> str:
    """The report's robustness section.

    Returns HTML: per strategy the median fewest judgments whose flip or removal changes each task's
    #1 and top k, and its tasks in a fold-out table with the fragile ones marked.

    Parameters
    ----------
    top_k, budget:
        As in :func:`rankkit.runs.analysis.robustness.robustness_report`.
    """
    report = robustness_report(results, top_k, budget)
    figures = robustness_figures(top_k)
    summary_rows = [robustness_summary_row(item["strategy"], item["summary"], figures) for item in report]
    details = [
        f"<details><summary>{esc(item['strategy'])}: per task</summary>"
        + table_html(
            ["task", "judgments", *[h for _, _, h in figures], "fragile"],
            [robustness_task_row(task, figures) for task in item["tasks"]],
        )
        + "</details>"
        for item in report
        if item["summary"]["tasks"]
    ]
    note = (
        f"<p class=note>The fewest judgments whose flip (winner reversed) or removal changes the #1 or the top "
        f"{top_k}, recomputed from the judgments each strategy used (ratings refitted, brackets replayed): a "
        f"number is exact, <code>≤ n</code> a greedy upper bound, <code>none</code>: no such change does. Medians "
        f"over tasks (<code>none</code> counted as the judgments + 1). Fragile: a figure at most "
        f"{FRAGILE_SHARE:.0%} of the judgments used. See docs/robustness.md.</p>"
    )
    return (
        table_html(["strategy", "tasks", *[h for _, _, h in figures], "fragile tasks"], summary_rows, "robustness")
        + note
        + "".join(details)
    )


#: One robustness figure: (target, change, column header), target ``top1`` or ``top_k``, change ``flip`` or ``remove``.
RobustnessFigure = tuple[str, str, str]


def robustness_figures(top_k: int) -> list[RobustnessFigure]:
    """The four figures of the robustness tables, in column order."""
    return [
        ("top1", "flip", "#1 flip"),
        ("top1", "remove", "#1 remove"),
        ("top_k", "flip", f"top-{top_k} flip"),
        ("top_k", "remove", f"top-{top_k} remove"),
    ]


def robustness_summary_row(strategy: str, summary: dict[str, Any], figures: list[RobustnessFigure]) -> str:
    """A strategy's row of the robustness summary: the median of each figure over its tasks and how
    many tasks are fragile, or why the figures are not defined for it.

    Returns a ``<tr>`` element.
    """
    if not summary["tasks"]:
        return (
            f"<tr><td>{esc(strategy)}</td><td class=num>0</td>"
            f"<td colspan={len(figures) + 1}>not defined: {esc('; '.join(summary['reasons']))}</td></tr>"
        )
    fragile = len(summary["fragile_tasks"])
    cells = "".join(
        f"<td class=num>{number_html(summary[f'{target}_{change}_median'], 1)}</td>" for target, change, _ in figures
    )
    return (
        f"<tr><td>{esc(strategy)}</td><td class=num>{summary['tasks']}</td>{cells}"
        f"<td class='num{' fragile' if fragile else ''}'>{fragile}</td></tr>"
    )


def robustness_task_row(task: dict[str, Any], figures: list[RobustnessFigure]) -> str:
    """One task's row of a strategy's robustness fold-out: each figure and which are fragile, or why
    they are not defined.

    Returns a ``<tr>`` element.
    """
    if not task["defined"]:
        return (
            f"<tr><td>{esc(task['task_id'])}</td><td class=num>{task['judgments']}</td>"
            f"<td colspan={len(figures) + 1}>not defined: {esc(task['reason'])}</td></tr>"
        )
    cells = "".join(
        f"<td class=num>{esc(task[target][change].text() if task[target] else '–')}</td>"
        for target, change, _ in figures
    )
    return (
        f"<tr><td>{esc(task['task_id'])}</td><td class=num>{task['judgments']}</td>{cells}"
        f"<td class=fragile>{esc(', '.join(task['fragile']))}</td></tr>"
    )
