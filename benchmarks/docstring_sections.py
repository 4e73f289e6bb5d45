"""How many public functions lack numpy ``Parameters`` / ``Returns`` sections, and which use another style.

Counts the public functions and methods (names without a leading underscore, in modules and classes
without one; properties and overloads left out) of ``rankkit/``, by default outside
``rankkit/judges/``. A function needs ``Parameters`` when it takes an argument besides ``self`` /
``cls``, and ``Returns`` (or ``Yields``) when it returns a value. "Other style" is a docstring that
documents its arguments as ``name: text`` lines or Google-style ``Args:`` / ``Parameters:`` blocks
instead of numpy sections.

    python benchmarks/docstring_sections.py [--all] [--list]

``--all`` counts ``rankkit/judges/`` too; ``--list`` prints every function still missing a section.
"""

from __future__ import annotations

import argparse
import ast
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def section(name: str) -> re.Pattern[str]:
    """A numpy section header ``name`` underlined with dashes."""
    return re.compile(rf"^\s*{name}\n\s*-{{3,}}\s*$", re.M)


PARAMETERS, RETURNS, YIELDS = section("Parameters"), section("Returns"), section("Yields")
GOOGLE = re.compile(r"^\s*(Args|Arguments|Parameters|Returns|Raises|Yields):\s*$|^\s*:param |^\s*:returns?:", re.M)


def public_functions(tree: ast.Module) -> Iterator[tuple[ast.FunctionDef | ast.AsyncFunctionDef, bool]]:
    """Each public function of a module and of its public classes, with whether it is a method."""
    functions = (ast.FunctionDef, ast.AsyncFunctionDef)
    for node in tree.body:
        if isinstance(node, functions) and not node.name.startswith("_"):
            yield node, False
        if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
            for item in node.body:
                if isinstance(item, functions) and not item.name.startswith("_"):
                    yield item, True


def arguments(function: ast.FunctionDef | ast.AsyncFunctionDef, is_method: bool) -> list[str]:
    """The names a ``Parameters`` section should document."""
    args = function.args
    names = [a.arg for a in args.posonlyargs + args.args + args.kwonlyargs]
    if is_method and names and names[0] in ("self", "cls"):
        names = names[1:]
    names += [a.arg for a in (args.vararg, args.kwarg) if a is not None]
    return names


def returns_value(function: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    """Whether the function returns something other than None."""
    if function.returns is not None:
        return ast.unparse(function.returns).strip("'\"") not in ("None", "NoReturn")
    return any(isinstance(node, ast.Return) and node.value is not None for node in ast.walk(function))


def other_style(doc: str, names: list[str]) -> bool:
    """Whether the docstring documents arguments in a style other than numpy's."""
    if GOOGLE.search(doc):
        return True
    return not PARAMETERS.search(doc) and any(re.search(rf"^\s*{name}(?: \([^)]*\))?: ", doc, re.M) for name in names)


def count(include_judges: bool) -> tuple[Counter[str], list[str]]:
    """The counts, and one line per function that misses a section or uses another style."""
    counts: Counter[str] = Counter()
    missing: list[str] = []
    for path in sorted((ROOT / "rankkit").rglob("*.py")):
        relative = path.relative_to(ROOT)
        private = any(part.startswith("_") and part not in ("__init__.py", "__main__.py") for part in relative.parts)
        if private or (not include_judges and relative.parts[1] == "judges"):
            continue
        for function, is_method in public_functions(ast.parse(path.read_text(encoding="utf-8"))):
            decorators = {ast.unparse(d) for d in function.decorator_list}
            if "property" in decorators or "overload" in decorators or any(d.endswith(".setter") for d in decorators):
                continue
            doc = ast.get_docstring(function) or ""
            names = arguments(function, is_method)
            generator = any(isinstance(node, (ast.Yield, ast.YieldFrom)) for node in ast.walk(function))
            lacks_parameters = bool(names) and not PARAMETERS.search(doc)
            lacks_returns = (returns_value(function) or generator) and not (RETURNS.search(doc) or YIELDS.search(doc))
            other = other_style(doc, names)
            counts["public functions"] += 1
            counts["without a docstring"] += not doc
            counts["lacking Parameters"] += lacks_parameters
            counts["lacking Returns/Yields"] += lacks_returns
            counts["lacking either"] += lacks_parameters or lacks_returns
            counts["in another style"] += other
            if lacks_parameters or lacks_returns or other:
                flags = [
                    flag
                    for flag, on in (
                        ("Parameters", lacks_parameters),
                        ("Returns", lacks_returns),
                        ("other style", other),
                    )
                    if on
                ]
                missing.append(f"{relative}:{function.lineno} {function.name}: {', '.join(flags)}")
    return counts, missing


def main() -> None:
    """Print the counts (and, with ``--list``, the functions)."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--all", action="store_true", help="count rankkit/judges/ too")
    parser.add_argument("--list", action="store_true", help="list the functions missing a section")
    options = parser.parse_args()
    counts, missing = count(options.all)
    for key in (
        "public functions",
        "without a docstring",
        "lacking Parameters",
        "lacking Returns/Yields",
        "lacking either",
        "in another style",
    ):
        print(f"{key:24s} {counts[key]}")
    if options.list:
        print("\n".join(missing))


if __name__ == "__main__":
    main()
