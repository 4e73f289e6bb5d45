"""How much of rankkit is code, how much docstring and comment, and how many words the docs site's prose holds.

A line of ``rankkit/*.py`` counts once, as the first of: docstring (a module, class or function
docstring), code (any other token), comment (a ``#`` comment alone on its line); blank lines are
not counted. Prose words are the whitespace-separated words of ``docs/*.md`` outside fenced code
blocks (the generated API reference, ``docs/api``, is left out). The issue's goal (issue 38) is
docstring + comment lines at most 60% of code lines.

    python benchmarks/docstrings.py                      # this tree
    python benchmarks/docstrings.py --before ../base     # also a tree to compare with (e.g. 0.3.0)
    python benchmarks/docstrings.py --modules metrics.py stats.py   # also those modules' sum

Prints the table and writes it to ``benchmarks/results/docstrings.md``.
"""

from __future__ import annotations

import argparse
import ast
import io
import subprocess
import tokenize
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RESULTS = REPO / "benchmarks" / "results" / "docstrings.md"
NOT_CODE = {tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER, tokenize.COMMENT}


@dataclass(frozen=True)
class Lines:
    """Line counts of some Python source."""

    code: int = 0
    docstring: int = 0
    comment: int = 0

    def __add__(self, other: Lines) -> Lines:
        return Lines(self.code + other.code, self.docstring + other.docstring, self.comment + other.comment)

    @property
    def ratio(self) -> float:
        """Docstring + comment lines per code line."""
        return (self.docstring + self.comment) / self.code if self.code else 0.0


def docstring_lines(tree: ast.AST) -> set[int]:
    """The line numbers (from 1) of every module, class and function docstring."""
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)):
            first = node.body[0] if node.body else None
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                if isinstance(first.value.value, str):
                    lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def count_lines(source: str) -> Lines:
    """The code, docstring and comment lines of one file."""
    docstrings = docstring_lines(ast.parse(source))
    code: set[int] = set()
    comments: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type == tokenize.COMMENT:
            comments.add(token.start[0])
        elif token.type not in NOT_CODE:
            code.update(line for line in range(token.start[0], token.end[0] + 1) if line not in docstrings)
    return Lines(len(code), len(docstrings), len(comments - code - docstrings))


def package_lines(package: Path, only: set[str] | None = None) -> Lines:
    """The sum over the package's ``.py`` files (only those named, relative to it, when given)."""
    total = Lines()
    for path in sorted(package.rglob("*.py")):
        if only is None or path.relative_to(package).as_posix() in only:
            total += count_lines(path.read_text(encoding="utf-8"))
    return total


def prose_words(docs: Path) -> int:
    """Words of the docs site's pages outside fenced code blocks, ``docs/api`` left out."""
    words = 0
    for page in sorted(docs.glob("*.md")):
        fenced = False
        for line in page.read_text(encoding="utf-8").splitlines():
            if line.lstrip().startswith(("```", "~~~")):
                fenced = not fenced
            elif not fenced:
                words += len(line.split())
    return words


def measure(repo: Path, modules: set[str] | None) -> dict[str, Lines | int]:
    """The figures of one tree: the whole package, the named modules' sum, the prose words."""
    figures: dict[str, Lines | int] = {"package": package_lines(repo / "rankkit")}
    if modules:
        figures["modules"] = package_lines(repo / "rankkit", modules)
    figures["words"] = prose_words(repo / "docs")
    return figures


def table(trees: dict[str, dict[str, Lines | int]], modules: set[str] | None) -> str:
    """The figures as a Markdown table, one column per tree."""
    names = list(trees)
    rows = ["| | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]
    for scope, title in (("package", "rankkit/"), ("modules", "the named modules")):
        if scope == "modules" and not modules:
            continue
        for field in ("code", "docstring", "comment"):
            values = [str(getattr(trees[name][scope], field)) for name in names]
            rows.append(f"| {title} {field} lines | " + " | ".join(values) + " |")
        ratios = [f"{trees[name][scope].ratio:.0%}" for name in names]
        rows.append(f"| {title} (docstring + comment) / code | " + " | ".join(ratios) + " |")
    rows.append(
        "| docs prose words (docs/*.md, not docs/api) | " + " | ".join(str(trees[n]["words"]) for n in names) + " |"
    )
    return "\n".join(rows)


def commit_of(repo: Path) -> str:
    """The short commit a checkout is at, or its folder name when it is not a git checkout."""
    try:
        done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    except OSError:
        return repo.name
    return done.stdout.strip() or repo.name


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", type=Path, help="another checkout to compare with (its root folder)")
    parser.add_argument("--modules", nargs="*", help="module paths relative to rankkit/ to sum apart")
    args = parser.parse_args()
    modules = set(args.modules) if args.modules else None
    trees = {}
    if args.before:
        trees[f"before ({commit_of(args.before)})"] = measure(args.before.resolve(), modules)
    trees[f"this tree ({commit_of(REPO)})"] = measure(REPO, modules)
    text = table(trees, modules)
    if modules:
        text += "\n\nNamed modules: " + ", ".join(sorted(modules))
    print(text)
    RESULTS.write_text(
        "# Docstring, comment and code lines; docs prose words\n\n"
        "Written by `python benchmarks/docstrings.py` (see its docstring for what counts as what).\n\n" + text + "\n",
        encoding="utf-8",
    )


if __name__ == "__main__":
    main()
