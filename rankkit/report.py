"""A self-contained HTML report of a results file (``rankkit report results.json -o report.html``).

More in ``docs/analysis.md``.
"""

from __future__ import annotations

import base64
import hashlib
import html
import json
import math
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from rankkit.analysis import (
    correlation_table,
    human_scores,
    length_bias,
    position_bias,
    slot_bias,
    strategy_names,
    strategy_run,
)
from rankkit.analysis.combined import ANALYZE_BUDGET
from rankkit.analysis.judge_bias import style_preference
from rankkit.analysis.robustness import DEFAULT_TOP_K, FRAGILE_SHARE, robustness_report
from rankkit.bill import payers, run_total, total_line
from rankkit.formatting import inert, inert_json, number_text, plain
from rankkit.judgments import LABELS
from rankkit.results import RunResult, TaskResult
from rankkit.stats import DEFAULT_LEVEL, DEFAULT_RESAMPLES, Interval

REPORT_METRICS = ("pearson", "spearman", "task_spearman", "pairwise_accuracy", "top1_accuracy")
#: Meta values longer than this are left out of the embedded data (the prompt already holds them).
MAX_META_CHARS = 200


# -------------------------------------------------------------------------------------------------
# Pure pieces (tested without a browser)


def embed_json(data: Any) -> str:
    """JSON that is safe inside ``<script type="application/json">``: no ``<``, ``>`` or ``&`` appear raw,
    so no string in it can end the element (``</script>``) or open a comment.

    Returns the JSON text, with ``<``, ``>`` and ``&`` as JSON unicode escapes.

    Parameters
    ----------
    data
        JSON-serialisable data.
    """
    text = json.dumps(data, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for raw, escaped in (
        ("&", "\\u0026"),
        ("<", "\\u003c"),
        (">", "\\u003e"),
        ("\u2028", "\\u2028"),
        ("\u2029", "\\u2029"),
    ):
        text = text.replace(raw, escaped)
    return inert_json(text)  # no raw bidirectional or invisible character in the file either


def knockout_bracket(task_result: TaskResult) -> dict[str, Any] | None:
    """The bracket of one knockout-like task result, round by round.

    Rebuilt from the per-candidate extras (``eliminated_round``) and the comparisons (with their
    ``round``). Each round lists its pairings — the two candidates, each one's grade averaged
    over the pair's comparisons (two with ``order=both``), the winner (the one not eliminated in
    that round) and, under the page's key ``matches``, the indices of the pair's comparisons in
    ``task_result.comparisons`` — and the candidates that advanced on a bye. Returns None when the
    result has no elimination rounds.

    Returns ``rounds`` and ``champion``, or None.

    Parameters
    ----------
    task_result
        One strategy's result on one task.
    """
    if not task_result.has_elimination_rounds:
        return None
    comparisons = task_result.comparisons
    eliminated = {cid: e.eliminated_round for cid, e in task_result.extras.items()}
    last_round = max([c.round or 0 for c in comparisons] + [r for r in eliminated.values() if r is not None] + [0])
    rounds = []
    for number in range(1, last_round + 1):
        pairs: dict[frozenset, dict[str, Any]] = {}
        for index, comparison in enumerate(comparisons):
            if comparison.round != number:
                continue
            key = frozenset((comparison.first, comparison.second))
            pair = pairs.setdefault(
                key, {"a": comparison.first, "b": comparison.second, "grades": defaultdict(list), "matches": []}
            )
            pair["grades"][comparison.first].append(comparison.verdict.first_grade)
            pair["grades"][comparison.second].append(comparison.verdict.second_grade)
            pair["matches"].append(index)
        pairings = []
        for pair in pairs.values():
            a, b = pair["a"], pair["b"]
            grade_a = sum(pair["grades"][a]) / len(pair["grades"][a])
            grade_b = sum(pair["grades"][b]) / len(pair["grades"][b])
            if eliminated.get(b) == number and eliminated.get(a) != number:
                winner = a
            elif eliminated.get(a) == number and eliminated.get(b) != number:
                winner = b
            else:  # not a knockout match (e.g. a strategy that also plays extra games): higher grade
                winner = a if grade_a >= grade_b else b
            pairings.append(
                {"a": a, "b": b, "grade_a": grade_a, "grade_b": grade_b, "winner": winner, "matches": pair["matches"]}
            )
        alive = [cid for cid, r in eliminated.items() if r is None or r >= number]
        playing = {cid for p in pairings for cid in (p["a"], p["b"])}
        rounds.append({"round": number, "pairings": pairings, "byes": [cid for cid in alive if cid not in playing]})
    return {"rounds": rounds, "champion": task_result.champion}


def system_leaderboard(results: RunResult, name: str) -> list[dict[str, Any]]:
    """Systems ranked by one strategy: mean rank it gave them (1 = best; scale-free), mean score,
    tasks won (ranked first) and the mean human score, best mean rank first.

    Returns one row per system.

    Parameters
    ----------
    results
        The run.
    name
        The strategy's label.
    """
    systems = {t.task_id: {c.id: c.system for c in t.candidates} for t in results.tasks}
    human = human_scores(results)
    collected: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for strategy in results.strategies:
        if strategy.name != name:
            continue
        for task in strategy.tasks:
            for position, cid in enumerate(task.ranking, start=1):
                system = systems.get(task.task_id, {}).get(cid)
                if system is None:
                    continue
                row = collected[system]
                row["rank"].append(position)
                row["score"].append(task.scores[cid])
                row["won"].append(float(position == 1))
                if task.task_id in human:
                    row["human"].append(human[task.task_id][cid])
    board = []
    for system, row in collected.items():
        board.append(
            {
                "system": system,
                "tasks": len(row["rank"]),
                "mean_rank": sum(row["rank"]) / len(row["rank"]),
                "mean_score": sum(row["score"]) / len(row["score"]),
                "won": int(sum(row["won"])),
                "mean_human": sum(row["human"]) / len(row["human"]) if row["human"] else math.nan,
            }
        )
    return sorted(board, key=lambda r: (r["mean_rank"], -r["mean_score"]))


JUDGMENT_FIELDS = ("first", "second", "first_grade", "second_grade", "winner", "probability", "status", "raw")


def report_data(results: RunResult, max_tasks: int | None = None) -> dict[str, Any]:
    """What the page's script reads: tasks, their judgments, and per strategy its per-task results.

    Strategies of one run share their judgments (one match graph), so each task's distinct
    judgments are stored once in ``judgments[task_id]`` and a strategy's comparisons (the page's
    key ``matches``) are ``[judgment index, round]`` pairs into that list — all-pairs strategies would otherwise repeat
    the same judge outputs several times over.

    Returns the page's data, ready for JSON.

    Parameters
    ----------
    max_tasks
        Keep only the first N tasks in the task and match views (a smaller file for very
        large runs); the leaderboard and bias views always use every task.
    """
    tasks = results.tasks[:max_tasks] if max_tasks else results.tasks
    kept = {t.task_id for t in tasks}
    data_tasks = []
    for task in tasks:
        meta = {
            k: v
            for k, v in task.meta.items()
            if isinstance(v, (str, int, float, bool)) and len(str(v)) <= MAX_META_CHARS
        }
        data_tasks.append(
            {
                "task_id": task.task_id,
                "prompt": task.prompt,
                "reference": task.reference,
                "meta": meta,
                "candidates": [
                    {
                        "id": c.id,
                        "system": c.system,
                        "text": c.text,
                        "human": c.human.get(task.criterion) if task.criterion else None,
                    }
                    for c in task.candidates
                ],
            }
        )
    judgments: dict[str, list[dict[str, Any]]] = defaultdict(list)
    judgment_index: dict[tuple[str, str, str], int] = {}
    strategies = []
    for strategy in results.strategies:
        per_task = {}
        for task_result in strategy.tasks:
            task_id = task_result.task_id
            if task_id not in kept:
                continue
            comparisons = []
            for comparison in task_result.comparisons:
                key = (task_id, comparison.first, comparison.second)
                if key not in judgment_index:
                    judgment_index[key] = len(judgments[task_id])
                    stored = comparison.to_dict()
                    judgments[task_id].append({k: stored[k] for k in JUDGMENT_FIELDS})
                comparisons.append([judgment_index[key], comparison.round])
            for group in task_result.group_comparisons:  # a k-way judgment: one card with k answers
                key = (task_id, group.kind, *group.shown)
                if key not in judgment_index:
                    judgment_index[key] = len(judgments[task_id])
                    judgments[task_id].append(group_judgment_record(group))
                comparisons.append([judgment_index[key], group.round])
            extras = {
                cid: {k: v for k, v in e.to_dict().items() if k in ("eliminated_round", "played", "byes", "undecided")}
                for cid, e in task_result.extras.items()
            }
            per_task[task_id] = {
                "scores": task_result.scores,
                "ranking": task_result.ranking,
                "champion": task_result.champion,
                "extras": extras,
                "bracket": knockout_bracket(task_result),
                "matches": comparisons,
            }
        strategies.append({"name": strategy.name, "knockout_like": strategy.has_elimination_rounds, "tasks": per_task})
    return plain(
        {"criterion": results.criterion, "tasks": data_tasks, "judgments": dict(judgments), "strategies": strategies}
    )


def group_judgment_record(group: Any) -> dict[str, Any]:
    """A k-way judgment (:class:`rankkit.choices.GroupComparison`) as the page reads it: the ids in
    the order shown, each slot's grade or P(best), the judge's pick (``best``) or its ranking
    (``ranking``, best first), parse status and raw output.

    Returns JSON-ready.

    Parameters
    ----------
    group
        The k-way judgment.
    """
    judgment = group.judgment
    scores = getattr(judgment, "grades", None) or getattr(judgment, "probabilities", None)
    ranking = group.ranking
    return {
        "shown": list(group.shown),
        "kind": group.kind,
        "scores": None if scores is None else list(scores),
        "score_kind": "grade" if getattr(judgment, "grades", None) else "P(best)",
        "best": ranking[0] if ranking else None,
        "ranking": list(ranking) if ranking and group.kind == "ranking" else None,
        "status": judgment.status.value,
        "raw": judgment.raw,
    }


# -------------------------------------------------------------------------------------------------
# HTML pieces rendered in Python (every dynamic string through esc)


def esc(value: Any) -> str:
    """Any value as escaped HTML text (None as an empty string).

    Returns its ``str``, HTML-escaped, with control, bidirectional and invisible format characters
    shown as escapes (:func:`rankkit.formatting.inert`): a ``\\u202e`` in a candidate's id cannot
    reorder the page.

    Parameters
    ----------
    value
        The value.
    """
    return "" if value is None else html.escape(inert(str(value)), quote=True)


def _number(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return number_text(value, digits)
    return esc(value)


def _interval_cell(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return "<td class=num>–</td>"
    bounds = (
        ""
        if math.isnan(interval.low)
        else f"<span class=ci>[{number_text(interval.low)}, {number_text(interval.high)}]</span>"
    )
    return f"<td class=num>{number_text(interval.estimate)} {bounds}</td>"


def _table(headers: Sequence[str], rows: Sequence[str], css_class: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table class='{css_class}'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def leaderboard_html(results: RunResult, resamples: int, seed: int, level: float) -> str:
    """The strategies table (cost and metrics with intervals) and each strategy's system leaderboard.

    Returns an HTML fragment.

    Parameters
    ----------
    results
        The run.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap.
    level
        The intervals' coverage.
    """
    labelled = bool(human_scores(results))
    rows_data = (
        correlation_table(results, REPORT_METRICS, resamples, seed, level)
        if labelled
        else [
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
    )
    if labelled:
        rows_data.sort(
            key=lambda r: (
                -(
                    r["metrics"]["task_spearman"].estimate
                    if not math.isnan(r["metrics"]["task_spearman"].estimate)
                    else -9
                )
            )
        )
    total = run_total(results)
    paid_by = payers(results)
    priced = any(row["usd"] for row in rows_data)
    rows = []
    for row in rows_data:
        cells = "".join(_interval_cell(row["metrics"][m]) for m in REPORT_METRICS) if labelled else ""
        usd = ""
        if priced:
            payer = paid_by.get(row["strategy"], [])
            usd = f"<td class=num>{_number('paid by ' + ', '.join(payer) if payer and not row['judge_calls'] else row['usd'], 4)}</td>"
        rows.append(
            f"<tr><td>{esc(row['strategy'])}</td><td class=num>{_number(row['comparisons'])}</td>"
            f"<td class=num>{_number(row['grades'])}</td><td class=num>{_number(row['judge_calls'])}</td>{usd}{cells}</tr>"
        )
    headers = ["strategy", "comparisons", "grades", "judge calls", *(["usd"] if priced else [])]
    headers += list(REPORT_METRICS) if labelled else []
    bill = "".join(f"<p class=note>{esc(line)}</p>" for line in total_line(total, priced).splitlines())
    note = (
        f"<p class=note>Sorted by task_spearman. Brackets: {level:.0%} bootstrap intervals over tasks "
        f"({resamples} resamples, seed {seed}).</p>"
        if labelled
        else "<p class=note>These results have no human scores, so only the cost is shown.</p>"
    )
    boards = []
    for name in strategy_names(results):
        board = system_leaderboard(results, name)
        if not board:
            continue
        board_rows = [
            f"<tr><td class=num>{i}</td><td>{esc(r['system'])}</td><td class=num>{r['mean_rank']:.2f}</td>"
            f"<td class=num>{_number(r['mean_score'])}</td><td class=num>{r['won']}</td>"
            f"<td class=num>{_number(r['mean_human'])}</td><td class=num>{r['tasks']}</td></tr>"
            for i, r in enumerate(board, start=1)
        ]
        boards.append(
            f"<details><summary>{esc(name)}: systems</summary>"
            + _table(["#", "system", "mean rank", "mean score", "ranked first", "mean human", "tasks"], board_rows)
            + "</details>"
        )
    systems = (
        (
            "<h3>Systems per strategy</h3><p class=note>Ranked by the mean position each strategy gave the "
            "system's answers (1 = best), which is comparable across strategies whatever their score scale.</p>"
            + "".join(boards)
        )
        if boards
        else ""
    )
    return (
        _table(headers, rows, "leaderboard") + note + bill + systems + style_controlled_html(results, resamples, seed)
    )


#: The most bootstrap resamples of a style-controlled system leaderboard in the report: each refits
#: it, and an all-pairs strategy on 100 prompts x 32 systems induces 49,600 results per refit.
STYLE_RESAMPLES = 50


def style_controlled_html(results: RunResult, resamples: int, seed: int) -> str:
    """Each strategy's systems rated by style-controlled Bradley–Terry (length and format) on the
    pairwise results its per-task rankings induce, with the style coefficients and their intervals
    (:mod:`rankkit.leaderboard.style`); "" when the candidates do not all name a system.

    Returns an HTML fragment, or "".

    Parameters
    ----------
    results
        The run.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap.
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
            f"<tr><td class=num>{row.rank}</td><td>{esc(row.name)}</td><td class=num>{_number(row.rating, 1)}</td>"
            f"<td class=num>{_number(row.ci_low, 1)} – {_number(row.ci_high, 1)}</td>"
            f"<td class=num>{_number(row.unadjusted, 1)}</td></tr>"
            for row in board.systems
        ]
        coefficients = [
            f"<tr><td>{esc(term)}</td><td class=num>{_number(value['estimate'])}</td>"
            f"<td class=num>{_number(value['ci_low'])} – {_number(value['ci_high'])}</td></tr>"
            for term, value in board.style["coefficients"].items()
        ]
        blocks.append(
            f"<details><summary>{esc(name)}: style-controlled systems</summary>"
            + _table(["#", "system", "style-controlled rating", "95% interval", "plain BT rating"], rows)
            + _table(
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


def _bar_svg(rate: Interval, human: float | None, width: int = 260, reference: float = 0.5) -> str:
    """A 0–1 bar with the interval as a whisker, ``reference`` (an unbiased judge's rate: 0.5 for
    pairs, 1/k for k slots) as a dotted line and the human rate as a red tick."""
    if math.isnan(rate.estimate):
        return "–"

    def x(value: float) -> float:
        return 10 + value * (width - 20)

    parts = [
        f"<svg class=bar width={width} height=22 viewBox='0 0 {width} 22' role=img>",
        f"<rect x=10 y=6 width={width - 20} height=10 fill='#eef1f5'/>",
        f"<rect x=10 y=6 width={x(rate.estimate) - 10:.1f} height=10 fill='#4a7bd0'/>",
        f"<line x1={x(reference):.1f} x2={x(reference):.1f} y1=2 y2=20 stroke='#888' stroke-dasharray='2,2'/>",
    ]
    if not math.isnan(rate.low):
        parts.append(
            f"<line x1={x(rate.low):.1f} x2={x(rate.high):.1f} y1=11 y2=11 stroke='#1b2a4a' stroke-width=1.5/>"
        )
    if human is not None and not math.isnan(human):
        parts.append(f"<line x1={x(human):.1f} x2={x(human):.1f} y1=3 y2=19 stroke='#d0452f' stroke-width=2.5/>")
    parts.append("</svg>")
    return "".join(parts)


def bias_html(results: RunResult, level: float, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> str:
    """First-slot and longer-answer win rates over all distinct comparisons and per strategy, the
    style preference beyond the human scores (:func:`style_html`), and the slot bias of the k-way
    judgments when there are any (:func:`slot_bias_html`).

    Returns an HTML fragment.

    Parameters
    ----------
    results
        The run.
    level
        The intervals' coverage.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap.
    """
    pairwise = pairwise_bias_html(results, level)
    slots = slot_bias_html(results, level)
    if not pairwise and not slots:
        return "<p class=note>No pairwise or k-way matches in these results (pointwise strategies only).</p>"
    return pairwise + style_html(results, level, resamples, seed) + slots


def style_html(results: RunResult, level: float, resamples: int, seed: int) -> str:
    """The judge's preference for length, formatting and the first slot beyond what the human scores
    explain (:func:`~rankkit.analysis.judge_bias.style_preference`); "" without labelled pairwise matches.

    Returns an HTML fragment, or "".

    Parameters
    ----------
    results
        The run.
    level
        The intervals' coverage.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap.
    """
    style = style_preference(results, resamples=resamples, seed=seed, level=level)
    if not style["matches"]:
        return ""
    terms = [
        ("length: per doubling of the length ratio", "length", "length_logit"),
        ("formatting: per doubling of 1 + headers, list items, bold", "format", "format_logit"),
        ("first slot", "slot_sd", "slot"),
    ]
    rows = [
        f"<tr><td>{esc(label)}</td><td class=num>{style[spreads].text()}</td><td class=num>{style[logit].text()}</td></tr>"
        for label, spreads, logit in terms
    ]
    rows.append(
        f"<tr><td>human score: per spread</td><td class=num>-</td><td class=num>{style['human'].text()}</td></tr>"
    )
    return (
        "<h3>Style: length and formatting preferred beyond the human scores?</h3>"
        + _table(["term", "worth to the judge, in human-score spreads", "log-odds"], rows, "bias")
        + f"<p class=note>A logistic regression of 'first shown won' on the human-score difference (in the task's "
        f"spreads) and the answers' style differences, over the {style['matches']} decided matches on "
        f"{style['tasks']} labelled tasks; {level:.0%} bootstrap intervals over tasks ({resamples} resamples). "
        "A term's worth is its coefficient over the human-score one; 0 means no preference beyond the "
        "humans'. '-' : the answers never differ in it.</p>"
    )


def pairwise_bias_html(results: RunResult, level: float) -> str:
    """First-slot and longer-answer win rates of the pairwise comparisons ("" when there are none).

    Returns an HTML fragment, or "".

    Parameters
    ----------
    results
        The run.
    level
        The intervals' coverage.
    """
    position_rows, length_rows = [], []
    for label, name in [("all strategies (each judgment once)", None)] + [(n, n) for n in strategy_names(results)]:
        position = position_bias(results, name, level)
        length = length_bias(results, name, level)
        if position["matches"] == 0:
            continue
        first, human_first = position["first_slot_win_rate"], position["human_first_better"]
        longer, human_longer = length["longer_win_rate"], length["human_longer_better"]
        position_rows.append(
            f"<tr><td>{esc(label)}</td><td class=num>{position['matches'] - position['ties']}</td>"
            f"<td class=num>{first.text()}</td><td class=num>{human_first.text()}</td><td>{_bar_svg(first, human_first.estimate)}</td>"
            f"<td class=num>{position['order_consistency'].text()}</td></tr>"
        )
        length_rows.append(
            f"<tr><td>{esc(label)}</td><td class=num>{length['matches']}</td>"
            f"<td class=num>{longer.text()}</td><td class=num>{human_longer.text()}</td><td>{_bar_svg(longer, human_longer.estimate)}</td></tr>"
        )
    if not position_rows:
        return ""
    return (
        "<h3>Position: does the candidate shown first win?</h3>"
        + _table(
            [
                "matches of",
                "decided",
                "first shown wins",
                "humans prefer first",
                "judge (blue) vs humans (red)",
                "same winner in both orders",
            ],
            position_rows,
            "bias",
        )
        + "<h3>Length: does the longer answer win?</h3>"
        + _table(
            [
                "matches of",
                "decided, lengths differ",
                "longer wins",
                "humans prefer longer",
                "judge (blue) vs humans (red)",
            ],
            length_rows,
            "bias",
        )
        + f"<p class=note>Rates over decided matches (ties left out) with exact {level:.0%} binomial intervals. "
        "Bars: blue = the judge's rate with its interval, red tick = the rate a judge agreeing with the humans "
        "would show, dotted line = 0.5. A first-slot rate above the human rate is position bias; a longer-answer "
        "rate above the human rate is length bias. 'Same winner in both orders' counts pairs judged both ways.</p>"
    )


def slot_bias_html(results: RunResult, level: float) -> str:
    """How often the answer in each slot of a k-way judgment was chosen (:func:`slot_bias`), over
    all distinct k-way judgments and per strategy: one row per (k, slot); "" when there are none.

    Returns an HTML fragment, or "".

    Parameters
    ----------
    results
        The run.
    level
        The intervals' coverage.
    """
    rows = []
    for label, name in [("all strategies (each judgment once)", None)] + [(n, n) for n in strategy_names(results)]:
        for size in slot_bias(results, name, level):
            for row in size["slots"]:
                rate, k = row["rate"], size["k"]
                rows.append(
                    f"<tr><td>{esc(label)}</td><td class=num>{k}</td><td>{LABELS[row['slot']]}</td>"
                    f"<td class=num>{size['judgments']}</td><td class=num>{rate.text()}</td>"
                    f"<td class=num>{row['uniform']:.3f}</td><td class=num>{_number(row['human'])}</td>"
                    f"<td>{_bar_svg(rate, row['human'], reference=row['uniform'])}</td>"
                    f"<td class=num>{size['failed']}</td></tr>"
                )
    if not rows:
        return ""
    return (
        "<h3>Slots: is the answer shown first chosen in a k-way judgment?</h3>"
        + _table(
            [
                "judgments of",
                "k",
                "slot",
                "judgments",
                "chosen (rankings: ranked first)",
                "uniform 1/k",
                "human-best in slot",
                "judge (blue) vs humans (red)",
                "failed",
            ],
            rows,
            "bias",
        )
        + f"<p class=note>Each slot's share of the parsed k-way judgments (slot A is shown first) with exact "
        f"{level:.0%} binomial intervals; failed judgments are left out and counted. Bars: blue = the judge's "
        "rate with its interval, red tick = the share of judgments whose human-best answer sits in that slot "
        "(ties split evenly), dotted line = 1/k. A slot chosen well above its human rate is slot bias.</p>"
    )


def suspicious_html(results: RunResult) -> str:
    """The table of candidates carrying judge-protocol text ("" when there are none).

    Returns an HTML fragment, or "".

    Parameters
    ----------
    results
        The run.
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
        + _table(["task", "candidate", "system", "carries"], rows, "suspicious")
        + "</section>"
    )


# -------------------------------------------------------------------------------------------------
# The page

# The page's style sheet and script are package data (rankkit/assets/), read once: they are
# CSS and JavaScript, easier to read and lint as files than as Python strings.
ASSETS = Path(__file__).parent / "assets"
CSS = (ASSETS / "report.css").read_text(encoding="utf-8")
SCRIPT = (ASSETS / "report.js").read_text(encoding="utf-8")


def robustness_html(results: RunResult, top_k: int = DEFAULT_TOP_K, budget: int = ANALYZE_BUDGET) -> str:
    """The report's robustness section.

    Returns HTML: per strategy the median fewest judgments whose flip or removal changes each task's
    #1 and top k, and its tasks in a fold-out table with the fragile ones marked.

    Parameters
    ----------
    results:
        The run.
    top_k, budget:
        As in :func:`rankkit.analysis.robustness.robustness_report`.
    """
    report = robustness_report(results, top_k, budget)
    figures = [
        ("top1", "flip", "#1 flip"),
        ("top1", "remove", "#1 remove"),
        ("top_k", "flip", f"top-{top_k} flip"),
        ("top_k", "remove", f"top-{top_k} remove"),
    ]
    summary_rows, details = [], []
    for item in report:
        summary = item["summary"]
        if not summary["tasks"]:
            summary_rows.append(
                f"<tr><td>{esc(item['strategy'])}</td><td class=num>0</td>"
                f"<td colspan={len(figures) + 1}>not defined: {esc('; '.join(summary['reasons']))}</td></tr>"
            )
            continue
        fragile = len(summary["fragile_tasks"])
        cells = "".join(
            f"<td class=num>{_number(summary[f'{target}_{change}_median'], 1)}</td>" for target, change, _ in figures
        )
        summary_rows.append(
            f"<tr><td>{esc(item['strategy'])}</td><td class=num>{summary['tasks']}</td>{cells}"
            f"<td class='num{' fragile' if fragile else ''}'>{fragile}</td></tr>"
        )
        rows = []
        for task in item["tasks"]:
            if not task["defined"]:
                rows.append(
                    f"<tr><td>{esc(task['task_id'])}</td><td class=num>{task['judgments']}</td>"
                    f"<td colspan={len(figures) + 1}>not defined: {esc(task['reason'])}</td></tr>"
                )
                continue
            cells = "".join(
                f"<td class=num>{esc(task[target][change].text() if task[target] else '–')}</td>"
                for target, change, _ in figures
            )
            flag = ", ".join(task["fragile"])
            rows.append(
                f"<tr><td>{esc(task['task_id'])}</td><td class=num>{task['judgments']}</td>{cells}"
                f"<td class=fragile>{esc(flag)}</td></tr>"
            )
        details.append(
            f"<details><summary>{esc(item['strategy'])}: per task</summary>"
            + _table(["task", "judgments", *[h for _, _, h in figures], "fragile"], rows)
            + "</details>"
        )
    note = (
        f"<p class=note>The fewest judgments whose flip (winner reversed) or removal changes the #1 or the top "
        f"{top_k}, recomputed from the judgments each strategy used (ratings refitted, brackets replayed): a "
        f"number is exact, <code>≤ n</code> a greedy upper bound, <code>none</code>: no such change does. Medians "
        f"over tasks (<code>none</code> counted as the judgments + 1). Fragile: a figure at most "
        f"{FRAGILE_SHARE:.0%} of the judgments used. See docs/robustness.md.</p>"
    )
    return (
        _table(["strategy", "tasks", *[h for _, _, h in figures], "fragile tasks"], summary_rows, "robustness")
        + note
        + "".join(details)
    )


def render_report(
    results: RunResult,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = 0,
    level: float = DEFAULT_LEVEL,
    max_tasks: int | None = None,
    title: str = "rankkit report",
    top_k: int = DEFAULT_TOP_K,
    robustness_budget: int = ANALYZE_BUDGET,
) -> str:
    """The whole report as one HTML string (see ``docs/analysis.md``); ``top_k`` and
    ``robustness_budget`` are the robustness section's (:func:`robustness_html`; a budget of 0
    leaves it out).

    Returns the HTML page.

    Parameters
    ----------
    results
        The run.
    resamples
        The bootstrap's number of resamples.
    seed
        Seeds the bootstrap.
    level
        The intervals' coverage.
    max_tasks
        Keep only the first N tasks in the task and match views (None: all; see :func:`report_data`).
    title
        The page's title.
    top_k
        The robustness section's top-k.
    robustness_budget
        The robustness section's judgment budget (0: no section).
    """
    judge = results.judge_record()
    simulated = (
        "<span class=badge>simulated judge: verdicts derive from the human labels</span>" if judge["simulated"] else ""
    )
    n_tasks = len(results.tasks)
    shown = min(n_tasks, max_tasks) if max_tasks else n_tasks
    data_json = embed_json(report_data(results, max_tasks))
    script_hash = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode("ascii")
    policy = (
        f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{script_hash}'; "
        "base-uri 'none'; form-action 'none'"
    )
    limited = f" (the first {shown} of {n_tasks})" if shown < n_tasks else ""
    robustness_section = (
        (
            f'<section id="robustness"><h2>Robustness</h2>\n{robustness_html(results, top_k, robustness_budget)}'
            f"\n</section>"
        )
        if robustness_budget
        else ""
    )
    robustness_link = '<a href="#robustness">Robustness</a>' if robustness_budget else ""
    untrusted = suspicious_html(results)
    flagged = sum(len(by_task) for by_task in results.suspicious.values())
    flagged_note = f' · <a href="#untrusted">{flagged} suspicious candidate(s)</a>' if flagged else ""
    untrusted_link = '<a href="#untrusted">Untrusted text</a>' if flagged else ""
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta http-equiv="Content-Security-Policy" content="{esc(policy)}">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}</style>
</head>
<body>
<header>
<h1>{esc(title)}</h1>
<div class="meta">data {esc(results.data)} · {n_tasks} tasks · criterion {esc(results.criterion or "none")}
 · judge {esc(judge["description"] or judge["spec"])} · seed {esc(results.seed)}{flagged_note} {simulated}</div>
</header>
<nav><a href="#leaderboard">Leaderboard</a><a href="#tasks">Tasks &amp; matches</a>{untrusted_link}<a href="#bias">Judge bias</a>{robustness_link}</nav>
<main>
<section id="leaderboard"><h2>Leaderboard</h2>
{leaderboard_html(results, resamples, seed, level)}
</section>
<section id="tasks"><h2>Tasks &amp; matches</h2>
<noscript><p class="note">The task and match views need JavaScript.</p></noscript>
<div class="controls">
<label>task{limited} <select id="task-select"></select></label>
<label>strategy <select id="strategy-select"></select></label>
</div>
<div id="task-view"></div>
<h3>Match browser</h3>
<div id="match-list" class="matchlist"></div>
<div id="match-detail"></div>
</section>
{untrusted}
<section id="bias"><h2>Judge bias</h2>
{bias_html(results, level, resamples, seed)}
</section>
{robustness_section}
</main>
<script type="application/json" id="rankkit-data">{data_json}</script>
<script>{SCRIPT}</script>
</body>
</html>
"""


def write_report(results: RunResult, path: str | Path, **options: Any) -> Path:
    """Render the report and write it to ``path`` (UTF-8); ``options`` go to :func:`render_report`.

    Returns the file written.

    Parameters
    ----------
    results
        The run.
    path
        The file to write.
    **options
        Keyword arguments of :func:`render_report`.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(render_report(results, **options), encoding="utf-8")
    return path
