"""A griffe extension that lets mkdocstrings render rankkit's reStructuredText-flavoured numpy docstrings.

rankkit's docstrings are numpy style written for Sphinx: they cross-reference with roles
(:class:`Foo`), show code in double backquotes, put doctests in running text and use RST literal
blocks (``::``) and simple tables. mkdocstrings renders docstrings as Markdown, where a doctest's
``[0][1]`` reads as a cross-reference (a broken one, which ``mkdocs build --strict`` refuses) and a
table's ``=====`` line as a heading. This extension rewrites each docstring before it is rendered:

* a numpy ``Example`` section is named ``Examples``, the name griffe renders as code;
* a role becomes inline code (``:class:`~rankkit.judgments.memo.JudgmentMemo``` -> ``JudgmentMemo``);
* a doctest block in running text becomes a fenced ``pycon`` block (the numpy ``Examples`` section
  is left to griffe, which already renders it as code);
* a line ending in ``::`` ends in ``:`` and its indented block becomes a fenced block;
* an RST simple table becomes a Markdown table.

The source files are not touched. Loaded by ``mkdocs.yml`` (``extensions: [docs/griffe_rst.py]``).
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:py:)?(?:class|func|mod|meth|attr|data|exc|obj|const|ref|term):`(~?)\.?([^`]+)`")
TABLE_RULE = re.compile(r"^\s*=+(\s+=+)+\s*$")
SECTION_RULE = re.compile(r"^\s*-{3,}\s*$")


def _role(match: re.Match[str]) -> str:
    name = match.group(2)
    if match.group(1):  # ~ shows the last component only
        name = name.rsplit(".", 1)[-1]
    return f"``{name}``"


def _columns(rule: str) -> list[tuple[int, int]]:
    """The (start, end) of each column under an RST simple-table rule line."""
    return [(m.start(), m.end()) for m in re.finditer(r"=+", rule)]


def _table(lines: list[str]) -> list[str]:
    """An RST simple table (rule, [header, rule,] rows, rule) as a Markdown table."""
    spans = _columns(lines[0])
    indent = " " * spans[0][0]
    has_header = len(lines) > 3 and bool(TABLE_RULE.match(lines[2]))
    rows: list[list[str]] = []
    for line in lines[1:-1]:
        if TABLE_RULE.match(line):
            continue
        cells = []
        for index, (start, _end) in enumerate(spans):
            stop = spans[index + 1][0] if index + 1 < len(spans) else len(line)
            cells.append(line[start:stop].strip())
        if rows and not cells[0]:  # a continuation line of the row above
            rows[-1] = [f"{old} {new}".strip() for old, new in zip(rows[-1], cells)]
        else:
            rows.append(cells)

    def row_line(cells: list[str]) -> str:
        return indent + "| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |"

    header = rows.pop(0) if has_header else [" "] * len(spans)
    return [row_line(header), indent + "|" + "---|" * len(spans)] + [row_line(row) for row in rows]


def rewrite(text: str) -> str:
    """The docstring *text* with roles, loose doctests, literal blocks and simple tables made Markdown.

    Parameters
    ----------
    text : str
        A docstring, as written in the source.

    Returns
    -------
    str
        The same docstring in the Markdown mkdocstrings renders.
    """
    lines = ROLE.sub(_role, text).split("\n")
    out: list[str] = []
    in_examples = False
    i = 0
    while i < len(lines):
        line = lines[i]
        stripped = line.strip()
        if stripped and i + 1 < len(lines) and SECTION_RULE.match(lines[i + 1]):
            in_examples = stripped in ("Example", "Examples")  # griffe renders that section as code itself
            if stripped == "Example":  # numpy's name, the one griffe knows
                indent = line[: len(line) - len(line.lstrip())]
                out += [indent + "Examples", indent + "--------"]
                i += 2
                continue
        if TABLE_RULE.match(line):
            end = i + 1
            while end < len(lines) and lines[end].strip():
                end += 1
            block = lines[i:end]
            if len(block) >= 3 and TABLE_RULE.match(block[-1]):
                out += _table(block)
                i = end
                continue
        if stripped.startswith(">>>") and not in_examples:
            indent = line[: len(line) - len(line.lstrip())]
            out += ["", indent + "```pycon"]
            while i < len(lines) and lines[i].strip():
                out.append(lines[i])
                i += 1
            out += [indent + "```", ""]
            continue
        if stripped.endswith("::") and i + 1 < len(lines) and not lines[i + 1].strip():
            base = len(line) - len(line.lstrip())
            out.append(line[: len(line.rstrip()) - 1] if stripped != "::" else "")
            j = i + 1
            block: list[str] = []
            while j < len(lines) and (not lines[j].strip() or len(lines[j]) - len(lines[j].lstrip()) > base):
                block.append(lines[j])
                j += 1
            while block and not block[-1].strip():
                block.pop()
                j -= 1
            if block:
                body = [b for b in block if b.strip()]
                cut = min(len(b) - len(b.lstrip()) for b in body)
                out += ["", " " * base + "```"] + [(" " * base + b[cut:]) if b.strip() else "" for b in block[1:]]
                out += [" " * base + "```"]
                i = j
                continue
        out.append(line)
        i += 1
    return "\n".join(out)


class RstToMarkdown(griffe.Extension):
    """Rewrites every docstring with :func:`rewrite` once the object tree is loaded."""

    def on_object(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = rewrite(obj.docstring.value)
