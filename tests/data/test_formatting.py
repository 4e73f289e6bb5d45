"""Text renderers: the fixed-width table, Markdown, CSV and JSON parse back to the same rows."""

from __future__ import annotations

import ast
import csv
import io
import json
import math
from pathlib import Path

import pytest

from rankkit.data.formatting import (
    DEFAULT_WIDTH,
    FORMATS,
    Table,
    cell_text,
    fit_columns,
    format_csv,
    format_json,
    format_markdown,
    format_table,
    inert,
    number_text,
    plain,
    render,
    render_sections,
    table_width,
    terminal_width,
)

ROWS = [
    {"name": "knockout:order=both", "n": 10, "r": 0.81234, "note": "a|b"},
    {"name": "individual", "n": 5, "r": float("nan"), "note": None},
]
COLUMNS = [("name", "strategy"), ("n", "comparisons"), ("r", "spearman"), ("note", "note")]


def parse_markdown(text: str) -> list[list[str]]:
    """Cells of a pipe table (header included, rule excluded), unescaping '\\|'."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip().replace("\\|", "|") for c in _split_pipes(line.strip()[1:-1])]
        if not all(set(c) <= set(":-") for c in cells):
            rows.append(cells)
    return rows


def _split_pipes(line: str) -> list[str]:
    cells, current, escaped = [], "", False
    for char in line:
        if char == "|" and not escaped:
            cells.append(current)
            current = ""
        else:
            current += char
        escaped = char == "\\" and not escaped
    return cells + [current]


def test_table_layout_is_fixed_width_with_three_decimals():
    lines = format_table(ROWS, COLUMNS).splitlines()
    assert lines[0].split() == ["strategy", "comparisons", "spearman", "note"]
    assert set(lines[1].replace(" ", "")) == {"-"}
    assert len({len(line) for line in lines}) == 1  # every line padded to the same width
    assert "0.812" in lines[2] and lines[3].split()[-2:] == ["-", "-"]


def test_csv_parses_back_at_full_precision():
    records = list(csv.DictReader(io.StringIO(format_csv(ROWS, COLUMNS))))
    assert [r["strategy"] for r in records] == ["knockout:order=both", "individual"]
    assert float(records[0]["spearman"]) == 0.81234
    assert records[1]["spearman"] == "" and records[1]["note"] == ""  # NaN and None are empty cells
    assert records[0]["note"] == "a|b"


def test_markdown_parses_back_with_escaped_pipes():
    cells = parse_markdown(format_markdown(ROWS, COLUMNS))
    assert cells[0] == ["strategy", "comparisons", "spearman", "note"]
    assert cells[1] == ["knockout:order=both", "10", "0.812", "a|b"]
    assert cells[2] == ["individual", "5", "-", "-"]


def test_json_is_strict_and_keyed_by_header():
    records = json.loads(format_json(ROWS, COLUMNS))
    assert records[0] == {"strategy": "knockout:order=both", "comparisons": 10, "spearman": 0.81234, "note": "a|b"}
    assert records[1]["spearman"] is None


def test_render_dispatches_and_rejects_unknown_formats():
    for fmt in FORMATS:
        assert "knockout:order=both" in render(ROWS, COLUMNS, fmt)
    with pytest.raises(ValueError, match="unknown format"):
        render(ROWS, COLUMNS, "xml")


def test_sections_as_one_csv_with_a_section_column():
    tables = [Table("first", ROWS, COLUMNS), Table("second", [{"k": 1}], [("k", "kappa")])]
    records = list(csv.DictReader(io.StringIO(render_sections(tables, "csv", preamble="not in csv"))))
    assert [r["section"] for r in records] == ["first", "first", "second"]
    assert records[2]["kappa"] == "1" and records[0]["kappa"] == ""
    markdown = render_sections(tables, "markdown", preamble="intro")
    assert markdown.startswith("intro") and "### second" in markdown
    sections = json.loads(render_sections(tables, "json"))
    assert [s["section"] for s in sections] == ["first", "second"] and sections[1]["rows"] == [{"kappa": 1}]
    assert math.isnan(ROWS[1]["r"])  # the renderers never modify their input


def test_only_the_command_line_imports_the_command_line():
    """The library must not depend on the click command line (issue 15): only ``__main__`` imports
    ``rankkit.cli``, and only the modules of ``rankkit/cli/`` import each other."""
    package = Path(__file__).resolve().parents[2] / "rankkit"
    offenders = []
    for path in package.rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module or ""]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                where = path.relative_to(package).as_posix()
                if (name == "rankkit.cli" or name.startswith("rankkit.cli.")) and where != "__main__.py":
                    if not where.startswith("cli/"):
                        offenders.append(f"{where} imports {name}")
    assert offenders == []


def test_text_columns_are_left_aligned_and_numbers_right_aligned():
    # Issue 24, item 19: Markdown right-aligned every column but the first, text included.
    rows = [
        {"task": "q01", "system": "gpt-4", "rank": 1, "score": 0.5, "champion": True, "ci": "0.680 [0.631, 0.722]"},
        {"task": "q01", "system": "a-much-longer-name", "rank": 12, "score": None, "champion": False, "ci": "-"},
    ]
    columns = [(k, k) for k in rows[0]]
    rule = format_markdown(rows, columns).splitlines()[1]
    assert rule == "|:---|:---|---:|---:|:---|---:|"
    lines = format_table(rows, columns).splitlines()
    assert lines[2][lines[0].index("system") :].startswith("gpt-4 ")  # text: left
    assert lines[2][lines[0].index("rank") :].startswith("   1")  # numbers: right


# -- inert output (issue 30) --------------------------------------------------------------------


def test_inert_escapes_every_control_character_and_keeps_text():
    hostile = "a\x1b]0;title\x07b\x1b[2J\x9bc\x7f\x00\r\u202eevil\u2066"
    shown = inert(hostile)
    assert shown == "a\\x1b]0;title\\x07b\\x1b[2J\\x9bc\\x7f\\x00\\x0d\\u202eevil\\u2066"
    assert all(ord(char) >= 0x20 and not 0x7F <= ord(char) <= 0x9F for char in shown)
    text = "Schrödinger's 猫 — ok\n\tindented"
    assert inert(text) == text  # printable Unicode, newlines and tabs stay
    assert inert(text, keep="") == "Schrödinger's 猫 — ok\\x0a\\x09indented"
    assert inert(3.5) == "3.5"


def test_tables_for_people_are_inert_and_machine_formats_exact():
    rows = [{"id": "c\x1b]0;owned\x07", "system": "s\x1b[31mred\nline"}]
    columns = [("id", "candidate\x1b"), ("system", "system")]
    for fmt in ("table", "markdown"):
        text = render(rows, columns, fmt)
        assert "\x1b" not in text and "\x07" not in text and "\\x1b]0;owned\\x07" in text
        assert len(text.splitlines()) == 3  # the newline in a cell does not break the row
    assert "\x1b" not in render_sections([Table("by \x1b[31m", rows, columns)], "table")
    assert list(csv.reader(io.StringIO(render(rows, columns, "csv"))))[1] == ["c\x1b]0;owned\x07", "s\x1b[31mred\nline"]
    assert json.loads(render(rows, columns, "json"))[0]["candidate\x1b"] == "c\x1b]0;owned\x07"
    c1 = [{"id": "a\x9b2J\x7f\u202e"}]  # C1 CSI, DEL, right-to-left override: json.dumps leaves them raw
    text = render(c1, [("id", "id")], "json")
    assert not any(char in text for char in "\x9b\x7f\u202e") and json.loads(text)[0]["id"] == c1[0]["id"]


def test_plain_makes_nan_infinities_and_numpy_values_strict_json_throughout():
    np = pytest.importorskip("numpy")
    value = {
        "a": np.float64("nan"),
        "b": [np.int64(3), (np.float32(0.5), math.inf)],
        "c": np.array([1.0, -math.inf]),
        "d": {"e": -math.inf},
    }
    assert plain(value) == {"a": None, "b": [3, [0.5, None]], "c": [1.0, None], "d": {"e": None}}
    assert json.loads(json.dumps(plain(value), allow_nan=False)) == plain(value)
    assert plain({"e": -math.inf}, infinities=True) == {"e": -math.inf}
    assert plain(math.nan, infinities=True) is None


def test_plain_reads_pandas_missing_values_as_none():
    pd = pytest.importorskip("pandas")
    assert plain([pd.NA, pd.NaT, pd.Timestamp("2024-01-01").year]) == [None, None, 2024]


@pytest.mark.parametrize("value", [-0.0, -1e-9, -0.0004])
def test_a_figure_that_rounds_to_zero_is_never_negative_zero(value):
    assert cell_text(value) == "0.000" and number_text(value, signed=True) == "+0.000"
    assert number_text(-0.0006) == "-0.001" and number_text(-0.04, 1) == "0.0"


def test_fit_columns_drops_the_fewest_listed_columns_first_listed_first():
    rows = [{"name": "a" * 20, "x": 1.5, "y": 2.5, "z": 3.5}]
    columns = [("name", "name"), ("x", "x_column"), ("y", "y_column"), ("z", "z_column")]
    full = table_width(rows, columns)
    assert fit_columns(rows, columns, full, ["y"]) == (columns, [])
    kept, dropped = fit_columns(rows, columns, full - 1, [("y", "z"), "x"])  # a group goes together
    assert dropped == ["y_column", "z_column"] and kept == columns[:2]
    assert table_width(rows, kept) <= full - 1
    assert fit_columns(rows, columns, 5, ["x"])[1] == ["x_column"]  # all it may drop, though still too wide


def test_terminal_width_is_the_default_off_a_terminal_unless_columns_says(monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    assert terminal_width() == DEFAULT_WIDTH == 120  # pytest's stdout is not a terminal
    monkeypatch.setenv("COLUMNS", "90")
    assert terminal_width() == 90


def test_a_section_note_is_printed_under_its_title_but_not_in_csv_or_json():
    tables = [Table("(a) one", [{"k": 1}], [("k", "k")], "what it shows")]
    assert render_sections(tables).splitlines()[:2] == ["(a) one", "what it shows"]
    assert "what it shows" in render_sections(tables, "markdown")
    assert "what it shows" not in render_sections(tables, "csv") + render_sections(tables, "json")
