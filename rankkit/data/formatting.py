"""Text renderers for tables: a fixed-width table, Markdown, CSV and JSON.

More in ``docs/cli.md``.
"""

from __future__ import annotations

import csv
import io
import json
import math
import os
import re
import shutil
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

#: The output formats every table-printing command accepts.
FORMATS = ("table", "json", "csv", "markdown")
#: The table width when stdout is not a terminal (a pipe, a file, CI).
DEFAULT_WIDTH = 120

#: What :func:`inert` escapes: C0 controls, DEL, C1 controls, the bidirectional embeddings,
#: overrides, isolates and marks (U+202A-U+202E, U+2066-U+2069, U+200E/F, U+061C), which make a
#: terminal show text reordered, and the invisible format characters (soft hyphen, zero-width
#: space, joiners, word joiner, byte-order mark), which make two different names show alike.
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")
#: The ones ``json.dumps`` leaves raw (it escapes C0 controls in strings; newlines outside strings are layout).
_RAW_IN_JSON = re.compile("[\x7f-\x9f\xad\u061c\u180e\u200b-\u200f\u202a-\u202e\u2060-\u206f\ufeff]")


def inert(text: str, keep: str = "\n\t") -> str:
    r"""``text`` safe to print to a terminal: every control character except those in ``keep``
    shown as its escape (``\x1b``, ``\u202e``), so nothing in it acts on the terminal.

    Used for everything rankkit prints for people that may hold data: tables, progress bar
    labels, notes and error messages. Backslashes are left as they are (a path stays readable),
    so the escaping is for safety, not a reversible encoding.

    Parameters
    ----------
    text:
        The text to print (anything else is converted with ``str``).
    keep:
        Control characters to leave as they are: by default newline and tab, which lay out a
        message; a table cell keeps none.

    Examples
    --------
    >>> inert("sys\x1b]0;owned\x07tem")
    'sys\\x1b]0;owned\\x07tem'
    >>> inert("two\nlines\u202e"), inert("a\tb", keep="")
    ('two\nlines\\u202e', 'a\\x09b')
    """

    def escape(match: re.Match) -> str:
        char = match.group()
        if char in keep:
            return char
        return f"\\x{ord(char):02x}" if ord(char) < 0x100 else f"\\u{ord(char):04x}"

    return _CONTROL.sub(escape, str(text))


def inert_json(text: str) -> str:
    r"""JSON text with the control characters :func:`inert` escapes written as JSON escapes
    (````): the same data for any JSON reader, nothing raw for a terminal. ``json.dumps``
    escapes C0 controls itself but, with ``ensure_ascii=False``, not DEL, C1 controls,
    bidirectional overrides or invisible format characters.

    Returns the same JSON with those characters escaped.

    Parameters
    ----------
    text
        JSON text.

    Examples
    --------
    >>> import json
    >>> text = inert_json(json.dumps({"id": "a2J‮"}, ensure_ascii=False))
    >>> text, json.loads(text) == {"id": "a2J‮"}
    ('{"id": "a\\u009b2J\\u202e"}', True)
    """
    return _RAW_IN_JSON.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


#: A table's columns: ``(key, header)`` pairs, in display order.
Columns = Sequence[tuple[str, str]]
#: A table's rows: one mapping per row, read by column key (a missing key is a missing cell).
Rows = Sequence[Mapping[str, Any]]


@dataclass(frozen=True)
class Table:
    """One titled table of a report with several sections (``rankkit analyze``).

    Attributes
    ----------
    title
        The line printed above the table (a heading in Markdown, the ``section`` column in CSV).
    rows
        The row mappings.
    columns
        ``(key, header)`` pairs, in display order.
    note
        Lines printed under the title in ``table`` and ``markdown`` (what the table shows, a legend).
    """

    title: str
    rows: Rows
    columns: Columns = field(default_factory=tuple)
    note: str = ""


def _missing(value: Any) -> bool:
    return value is None or (isinstance(value, float) and math.isnan(value))


def number_text(value: float, digits: int = 3, signed: bool = False) -> str:
    """``value`` at ``digits`` decimals, never as a negative zero (``-0.000`` reads as a direction
    the figure does not have); ``signed`` adds ``+`` to the non-negative.

    >>> number_text(-0.0001), number_text(-0.0001, signed=True), number_text(-0.25, 1)
    ('0.000', '+0.000', '-0.2')
    """
    text = f"{value:+.{digits}f}" if signed else f"{value:.{digits}f}"
    if text.lstrip("+-").strip("0.") == "":  # rounds to zero
        return text.replace("-", "+" if signed else "")
    return text


def cell_text(value: Any) -> str:
    """A value as the human-readable formats show it: ``-`` when missing, floats at 3 decimals.

    Returns its text.

    Parameters
    ----------
    value
        The cell's value.
    """
    if _missing(value):
        return "-"
    if isinstance(value, float):
        return number_text(value)
    return str(value)


def plain(value: Any, *, infinities: bool = False) -> Any:
    """``value`` as plain Python data, as strict JSON can hold it: NaN, pandas' NA and NaT become
    None, numpy scalars and arrays become Python numbers and lists, dicts, lists and tuples are
    converted throughout (a tuple becomes a list).

    Parameters
    ----------
    value:
        A cell, a payload, a whole results structure.
    infinities:
        Keep ±infinity (a task reader does, to refuse an infinite score by name rather than read
        it as a missing one); by default it becomes None, which JSON lacks too.

    Example
    -------
    >>> plain({"a": float("nan"), "b": [1.5, float("inf")], "c": (1, "x")})
    {'a': None, 'b': [1.5, None], 'c': [1, 'x']}
    >>> plain(float("-inf"), infinities=True)
    -inf
    """
    if value is None or isinstance(value, (str, bool, int)):
        return value
    if isinstance(value, float):
        return None if math.isnan(value) or (math.isinf(value) and not infinities) else value
    if isinstance(value, dict):
        return {key: plain(item, infinities=infinities) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(item, infinities=infinities) for item in value]
    if type(value).__name__ in ("NAType", "NaTType"):
        return None
    if hasattr(value, "item") and getattr(value, "ndim", 0) == 0:  # numpy scalars
        return plain(value.item(), infinities=infinities)
    if hasattr(value, "tolist"):  # numpy arrays (list cells of a DataFrame)
        return plain(value.tolist(), infinities=infinities)
    return value


#: A text cell that reads as a number: a count, a signed difference, an interval ``0.680 [...]``.
_NUMBER_TEXT = re.compile(r"[+-]?(\d|\.\d)")


def _is_number(value: Any) -> bool:
    if isinstance(value, bool):  # True/False read as words
        return False
    if isinstance(value, (int, float)) or (hasattr(value, "item") and not isinstance(value, (str, bytes))):
        return True
    return isinstance(value, str) and _NUMBER_TEXT.match(value) is not None


def numeric_columns(rows: Rows, columns: Columns) -> list[bool]:
    """Per column, whether it holds numbers (right-aligned) rather than text (left-aligned).

    Returns one flag per column: True when every present cell (not missing, nor already shown as
    ``-``) is a number or reads as one.
    """
    return [all(_is_number(row.get(key)) for row in rows if cell_text(row.get(key)) != "-") for key, _ in columns]


def format_table(rows: Rows, columns: Columns) -> str:
    """A plain fixed-width table: text columns left-aligned, number columns right-aligned; every
    cell :func:`inert` on one line (a newline in a cell is shown as ``\\x0a``).

    Returns the table.
    """
    body = [[inert(cell_text(row.get(key)), keep="") for key, _ in columns] for row in rows]
    headers = [inert(header, keep="") for _, header in columns]
    widths = [max(len(header), *(len(r[i]) for r in body)) if body else len(header) for i, header in enumerate(headers)]
    numeric = numeric_columns(rows, columns)

    def line(cells: Sequence[str]) -> str:
        return "  ".join(c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, numeric))

    return "\n".join([line(headers), "  ".join("-" * w for w in widths), *map(line, body)])


def terminal_width() -> int:
    """The columns a table may use: the terminal's width, or :data:`DEFAULT_WIDTH` when stdout is
    not a terminal (``COLUMNS`` in the environment wins, as :func:`shutil.get_terminal_size` reads it)."""
    if sys.stdout.isatty() or "COLUMNS" in os.environ:
        return shutil.get_terminal_size((DEFAULT_WIDTH, 24)).columns
    return DEFAULT_WIDTH


def table_width(rows: Rows, columns: Columns) -> int:
    """The width of :func:`format_table`'s widest line."""
    return max(map(len, format_table(rows, columns).splitlines()))


def fit_columns(
    rows: Rows, columns: Columns, width: int, droppable: Sequence[str | tuple[str, ...]]
) -> tuple[list[tuple[str, str]], list[str]]:
    """``columns`` without as few of ``droppable`` as make the table fit ``width`` characters, and the
    headers left out. ``droppable`` lists keys, first dropped first; a tuple of keys goes together.
    When dropping all of them is not enough, all are dropped.

    >>> rows = [{"a": "x" * 10, "b": 1.0, "c": 2.0}]
    >>> fit_columns(rows, [("a", "a"), ("b", "b"), ("c", "c")], 20, ["c", "b"])
    ([('a', 'a'), ('b', 'b')], ['c'])
    """
    kept, dropped = list(columns), []
    for keys in droppable:
        if table_width(rows, kept) <= width:
            break
        keys = (keys,) if isinstance(keys, str) else keys
        dropped += [header for key, header in kept if key in keys]
        kept = [column for column in kept if column[0] not in keys]
    return kept, dropped


def _markdown_cell(text: str) -> str:
    # A pipe would end the cell and a newline the row; both are legal inside candidate text.
    # Other control characters are escaped (inert), as in the table.
    return inert(text.replace("\\", "\\\\").replace("|", "\\|").replace("\r", " ").replace("\n", " "), keep="")


def format_markdown(rows: Rows, columns: Columns) -> str:
    """A GitHub-flavoured Markdown table (text left-aligned, numbers right-aligned, as in
    :func:`format_table`).

    Returns the table.
    """
    header = "| " + " | ".join(_markdown_cell(h) for _, h in columns) + " |"
    rule = "|" + "|".join("---:" if right else ":---" for right in numeric_columns(rows, columns)) + "|"
    body = ["| " + " | ".join(_markdown_cell(cell_text(row.get(key))) for key, _ in columns) + " |" for row in rows]
    return "\n".join([header, rule, *body])


def format_csv(rows: Rows, columns: Columns) -> str:
    """CSV with a header line; full-precision values, missing values as empty cells.

    Returns the CSV text.
    """
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow([h for _, h in columns])
    for row in rows:
        writer.writerow(["" if _missing(v := plain(row.get(key))) else v for key, _ in columns])
    return buffer.getvalue().rstrip("\n")


def table_records(rows: Rows, columns: Columns) -> list[dict[str, Any]]:
    """The rows as plain objects keyed by header (what ``format_json`` writes).

    Returns one dict per row.
    """
    return [{header: plain(row.get(key)) for key, header in columns} for row in rows]


def format_json(rows: Rows, columns: Columns) -> str:
    """A JSON list of objects keyed by header (strict JSON: NaN becomes null).

    Returns the JSON text.
    """
    return inert_json(json.dumps(table_records(rows, columns), indent=1, ensure_ascii=False))


_RENDERERS = {"table": format_table, "markdown": format_markdown, "csv": format_csv, "json": format_json}


def render(rows: Rows, columns: Columns, fmt: str = "table") -> str:
    """Render one table in ``fmt`` (one of :data:`FORMATS`).

    Returns the rendered table.

    Parameters
    ----------
    fmt
        ``table``, ``markdown``, ``csv`` or ``json``.

    Raises
    ------
    ValueError
        For an unknown format.
    """
    if fmt not in _RENDERERS:
        raise ValueError(f"unknown format {fmt!r} (choose from {', '.join(FORMATS)})")
    return _RENDERERS[fmt](rows, columns)


def render_sections(tables: Sequence[Table], fmt: str = "table", preamble: str = "") -> str:
    """Render a report made of several tables.

    ``table`` and ``markdown``: the preamble, then each table under its title (a ``###`` heading in
    Markdown). ``csv``: one table — a ``section`` column holding the title, then the union of all
    headers in first-seen order — so any CSV reader loads the whole report at once. ``json``: a list
    of ``{"section": title, "rows": [...]}`` (the preamble is for people and is left out of both).

    Returns the rendered report.

    Parameters
    ----------
    tables
        The report's tables.
    fmt
        ``table``, ``markdown``, ``csv`` or ``json``.
    preamble
        Text printed first (``table`` and ``markdown`` only).
    """
    if fmt == "csv":
        headers = list(dict.fromkeys(h for t in tables for _, h in t.columns))
        rows = [{"section": t.title, **record} for t in tables for record in table_records(t.rows, t.columns)]
        return format_csv(rows, [("section", "section"), *((h, h) for h in headers)])
    if fmt == "json":
        return inert_json(
            json.dumps(
                [{"section": t.title, "rows": table_records(t.rows, t.columns)} for t in tables],
                indent=1,
                ensure_ascii=False,
            )
        )
    if fmt == "markdown":
        parts = [inert(preamble)] if preamble else []
        parts += [
            f"### {inert(t.title, keep='')}\n\n"
            + (f"{inert(t.note)}\n\n" if t.note else "")
            + format_markdown(t.rows, t.columns)
            for t in tables
        ]
        return "\n\n".join(parts)
    parts = [inert(preamble)] if preamble else []
    parts += [
        f"{inert(t.title, keep='')}\n" + (f"{inert(t.note)}\n" if t.note else "") + render(t.rows, t.columns, fmt)
        for t in tables
    ]
    return "\n\n".join(parts)
