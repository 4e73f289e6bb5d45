"""The HTML pieces every section of the report is built from: escaped text, numbers, tables, bars.

Every dynamic string goes through :func:`esc`.
"""

from __future__ import annotations

import html
import math
from collections.abc import Sequence
from typing import Any

from rankkit.data.formatting import inert, number_text
from rankkit.stats.intervals import Interval


def esc(value: Any) -> str:
    """Any value as escaped HTML text (None as an empty string).

    Returns its ``str``, HTML-escaped, with control, bidirectional and invisible format characters
    shown as escapes (:func:`rankkit.data.formatting.inert`): a ``\\u202e`` in a candidate's id cannot
    reorder the page.

    Parameters
    ----------
    value
        The value.
    """
    return "" if value is None else html.escape(inert(str(value)), quote=True)


def number_html(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "–"
    if isinstance(value, float):
        return number_text(value, digits)
    return esc(value)


def interval_cell(interval: Interval) -> str:
    if math.isnan(interval.estimate):
        return "<td class=num>–</td>"
    bounds = (
        ""
        if math.isnan(interval.low)
        else f"<span class=ci>[{number_text(interval.low)}, {number_text(interval.high)}]</span>"
    )
    return f"<td class=num>{number_text(interval.estimate)} {bounds}</td>"


def table_html(headers: Sequence[str], rows: Sequence[str], css_class: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    return f"<table class='{css_class}'><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def bar_svg(rate: Interval, human: float | None, width: int = 260, reference: float = 0.5) -> str:
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
