"""The report's judge-bias section: position, length, style and k-way slot preferences.

Every renderer takes the run as ``results``; ``resamples``, ``seed`` and ``level`` are its
bootstrap's number of resamples, seed and interval coverage.
"""

from __future__ import annotations

from rankkit.judgments.values import LABELS
from rankkit.reports.report_html import bar_svg, esc, number_html, table_html
from rankkit.runs.analysis import length_bias, position_bias, slot_bias, strategy_names
from rankkit.runs.analysis.judge_bias import style_preference
from rankkit.runs.results import RunResult
from rankkit.stats.intervals import DEFAULT_RESAMPLES

POSITION_HEADERS = (
    "matches of",
    "decided",
    "first shown wins",
    "humans prefer first",
    "judge (blue) vs humans (red)",
    "same winner in both orders",
)
LENGTH_HEADERS = (
    "matches of",
    "decided, lengths differ",
    "longer wins",
    "humans prefer longer",
    "judge (blue) vs humans (red)",
)
SLOT_HEADERS = (
    "judgments of",
    "k",
    "slot",
    "judgments",
    "chosen (rankings: ranked first)",
    "uniform 1/k",
    "human-best in slot",
    "judge (blue) vs humans (red)",
    "failed",
)


def bias_scopes(results: RunResult) -> list[tuple[str, str | None]]:
    """What the bias tables have a row for: all strategies' judgments (each once, strategy None), then each strategy.

    Returns (row label, strategy name or None) pairs.
    """
    return [("all strategies (each judgment once)", None)] + [(n, n) for n in strategy_names(results)]


def bias_html(results: RunResult, level: float, resamples: int = DEFAULT_RESAMPLES, seed: int = 0) -> str:
    """First-slot and longer-answer win rates over all distinct comparisons and per strategy, the
    style preference beyond the human scores (:func:`style_html`), and the slot bias of the k-way
    judgments when there are any (:func:`slot_bias_html`).

    Returns an HTML fragment.
    """
    pairwise = pairwise_bias_html(results, level)
    slots = slot_bias_html(results, level)
    if not pairwise and not slots:
        return "<p class=note>No pairwise or k-way matches in these results (pointwise strategies only).</p>"
    return pairwise + style_html(results, level, resamples, seed) + slots


def style_html(results: RunResult, level: float, resamples: int, seed: int) -> str:
    """The judge's preference for length, formatting and the first slot beyond what the human scores
    explain (:func:`~rankkit.runs.analysis.judge_bias.style_preference`); "" without labelled pairwise matches.

    Returns an HTML fragment, or "".
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
        + table_html(["term", "worth to the judge, in human-score spreads", "log-odds"], rows, "bias")
        + f"<p class=note>A logistic regression of 'first shown won' on the human-score difference (in the task's "
        f"spreads) and the answers' style differences, over the {style['matches']} decided matches on "
        f"{style['tasks']} labelled tasks; {level:.0%} bootstrap intervals over tasks ({resamples} resamples). "
        "A term's worth is its coefficient over the human-score one; 0 means no preference beyond the "
        "humans'. '-' : the answers never differ in it.</p>"
    )


def pairwise_bias_html(results: RunResult, level: float) -> str:
    """First-slot and longer-answer win rates of the pairwise comparisons ("" when there are none).

    Returns an HTML fragment, or "".
    """
    position_rows, length_rows = [], []
    for label, name in bias_scopes(results):
        position = position_bias(results, name, level)
        length = length_bias(results, name, level)
        if position["matches"] == 0:
            continue
        first, human_first = position["first_slot_win_rate"], position["human_first_better"]
        longer, human_longer = length["longer_win_rate"], length["human_longer_better"]
        position_rows.append(
            f"<tr><td>{esc(label)}</td><td class=num>{position['matches'] - position['ties']}</td>"
            f"<td class=num>{first.text()}</td><td class=num>{human_first.text()}</td><td>{bar_svg(first, human_first.estimate)}</td>"
            f"<td class=num>{position['order_consistency'].text()}</td></tr>"
        )
        length_rows.append(
            f"<tr><td>{esc(label)}</td><td class=num>{length['matches']}</td>"
            f"<td class=num>{longer.text()}</td><td class=num>{human_longer.text()}</td><td>{bar_svg(longer, human_longer.estimate)}</td></tr>"
        )
    if not position_rows:
        return ""
    return (
        "<h3>Position: does the candidate shown first win?</h3>"
        + table_html(
            POSITION_HEADERS,
            position_rows,
            "bias",
        )
        + "<h3>Length: does the longer answer win?</h3>"
        + table_html(
            LENGTH_HEADERS,
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
    """
    rows = []
    for label, name in bias_scopes(results):
        for size in slot_bias(results, name, level):
            for row in size["slots"]:
                rate, k = row["rate"], size["k"]
                rows.append(
                    f"<tr><td>{esc(label)}</td><td class=num>{k}</td><td>{LABELS[row['slot']]}</td>"
                    f"<td class=num>{size['judgments']}</td><td class=num>{rate.text()}</td>"
                    f"<td class=num>{row['uniform']:.3f}</td><td class=num>{number_html(row['human'])}</td>"
                    f"<td>{bar_svg(rate, row['human'], reference=row['uniform'])}</td>"
                    f"<td class=num>{size['failed']}</td></tr>"
                )
    if not rows:
        return ""
    return (
        "<h3>Slots: is the answer shown first chosen in a k-way judgment?</h3>"
        + table_html(
            SLOT_HEADERS,
            rows,
            "bias",
        )
        + f"<p class=note>Each slot's share of the parsed k-way judgments (slot A is shown first) with exact "
        f"{level:.0%} binomial intervals; failed judgments are left out and counted. Bars: blue = the judge's "
        "rate with its interval, red tick = the share of judgments whose human-best answer sits in that slot "
        "(ties split evenly), dotted line = 1/k. A slot chosen well above its human rate is slot bias.</p>"
    )
