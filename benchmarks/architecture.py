"""The package's shape, measured: module sizes, who imports whom, start-up cost (issue 15).

Architecture is measured like speed, so a refactor can quote before and after:

* **module sizes** — lines per module under ``rankkit/``; how many are over 500 lines (the issue's
  bound for "one responsibility") and the largest;
* **the CLI is a leaf** — every module that imports ``rankkit.cli`` (goal: only ``__main__``);
* **dependencies point one way** — imports from the core (``tasks``, ``matches``, ``cache``,
  ``metrics``, ``ratings``, ``specs``, ``engine``, ``stats``) into a strategy or a judge backend by
  name (their ``base`` modules, the interfaces, are allowed; goal: none), and import cycles among
  modules counting only module-level imports (goal: none);
* **one of each** — how many modules define a bootstrap, an interval type, or measure an answer's
  length (goal: one each);
* **a role in one line** — modules whose docstring's first line is missing or does not end a
  sentence on that line;
* **start-up** — wall time of ``python -c "import rankkit"`` and ``rankkit --help`` over
  ``python -c pass`` (medians of several runs);
* **repeated code** — rows reported by the ``duplicates`` tool, when it is on the PATH.

    python benchmarks/architecture.py [--label after]

Prints the figures and writes ``benchmarks/results/architecture_<label>.md``.
"""

from __future__ import annotations

import argparse
import ast
import os
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "rankkit"
RESULTS = ROOT / "benchmarks" / "results"
MAX_LINES = 500
CORE = ("tasks", "matches", "cache", "metrics", "ratings", "specs", "engine", "stats")


def module_name(path: Path) -> str:
    parts = list(path.relative_to(ROOT).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules() -> dict[str, Path]:
    return {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def imports(path: Path, name: str, top_level_only: bool) -> set[str]:
    """The rankkit modules ``path`` imports (``from rankkit.x import y`` counts ``rankkit.x``, and
    ``rankkit.x.y`` too when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    nodes = tree.body if top_level_only else list(ast.walk(tree))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names if alias.name.startswith("rankkit"))
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                anchor = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(anchor + ([base] if base else []))
            if base.startswith("rankkit"):
                found.add(base)
                found.update(f"{base}.{alias.name}" for alias in node.names)
    return found


def import_graph(mods: dict[str, Path], top_level_only: bool) -> nx.DiGraph:
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        for target in imports(path, name, top_level_only):
            if target in mods and target != name:
                graph.add_edge(name, target)
    return graph


def first_line_role(path: Path) -> str | None:
    """The docstring's first line, or None when the module has no docstring."""
    doc = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    return doc.strip().splitlines()[0] if doc and doc.strip() else None


def defines(mods: dict[str, Path], pattern: str) -> list[str]:
    """Modules with a top-level function or class whose name matches ``pattern``."""
    regex = re.compile(pattern)
    hits = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        if any(isinstance(n, (ast.FunctionDef, ast.ClassDef)) and regex.fullmatch(n.name) for n in tree.body):
            hits.append(name)
    return hits


def length_definitions(mods: dict[str, Path]) -> list[str]:
    """Modules that measure a candidate answer's length themselves: a ``len(...)`` of something
    that names a candidate's text (``cand.text``, ``c["text"]``, ``texts[...]``), words or characters."""
    regex = re.compile(r"\.text\b|\[\"text\"\]|\btexts\[")
    hits = []
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        calls = (n for n in ast.walk(tree) if isinstance(n, ast.Call) and isinstance(n.func, ast.Name)
                 and n.func.id == "len" and n.args)
        if any(regex.search(ast.unparse(call.args[0])) for call in calls):
            hits.append(name)
    return hits


def median_seconds(command: list[str], runs: int = 15) -> float:
    """Median wall time of ``command``, with this checkout first on the path (not an installed
    rankkit, whose import hooks would be timed too)."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=ROOT, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def duplicate_rows() -> int | None:
    if shutil.which("duplicates") is None:
        return None
    out = subprocess.run(["duplicates", "--repo", str(PACKAGE), "--most", "200", "--seconds", "120"],
                         capture_output=True, text=True).stdout
    return sum(1 for line in out.splitlines() if re.match(r"D\d+ ", line))


def measure() -> dict[str, object]:
    mods = modules()
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in mods.items()}
    everywhere = import_graph(mods, top_level_only=False)
    top_level = import_graph(mods, top_level_only=True)
    cli_importers = sorted(n for n in everywhere.predecessors("rankkit.cli")) if "rankkit.cli" in everywhere else []
    core = {f"rankkit.{c}" for c in CORE}
    backward = sorted(f"{a} -> {b}" for a, b in everywhere.edges
                      if a in core and (b.startswith("rankkit.strategies.") or b.startswith("rankkit.judges."))
                      and not b.endswith(".base"))
    cycles = sorted(sorted(c) for c in nx.simple_cycles(top_level))
    no_role = sorted(name for name, path in mods.items()
                     if not (role := first_line_role(path)) or not role.rstrip().endswith((".", ")", ":")))
    python = [sys.executable, "-c", "pass"]
    floor = median_seconds(python)
    return {
        "modules": len(mods),
        "lines": sum(sizes.values()),
        "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:5],
        "over_limit": sorted((n, s) for n, s in sizes.items() if s > MAX_LINES),
        "cli_importers": cli_importers,
        "backward_imports": backward,
        "cycles": cycles,
        "bootstraps": defines(mods, r"_?bootstrap\w*"),
        "interval_types": defines(mods, r"\w*(Interval|Estimate)"),
        "length_definitions": length_definitions(mods),
        "no_one_line_role": no_role,
        "import_seconds": median_seconds([sys.executable, "-c", "import rankkit"]) - floor,
        "help_seconds": median_seconds([sys.executable, "-m", "rankkit", "--help"]) - floor,
        "duplicates": duplicate_rows(),
    }


def report(figures: dict[str, object], label: str) -> str:
    def names(items: list) -> str:
        return ", ".join(str(i) for i in items) if items else "none"

    largest = ", ".join(f"{n} {s}" for n, s in figures["largest"])
    over = ", ".join(f"{n} {s}" for n, s in figures["over_limit"]) or "none"
    rows = [
        ("modules / lines", f"{figures['modules']} / {figures['lines']}"),
        ("largest modules", largest),
        (f"modules over {MAX_LINES} lines", f"{len(figures['over_limit'])}: {over}"),
        ("modules importing rankkit.cli", names(figures["cli_importers"])),
        ("core -> strategy/backend imports", names(figures["backward_imports"])),
        ("import cycles (module level)", str(len(figures["cycles"]))),
        ("modules defining a bootstrap", names(figures["bootstraps"])),
        ("modules defining an interval type", names(figures["interval_types"])),
        ("modules measuring answer length", names(figures["length_definitions"])),
        ("modules without a one-line role", names(figures["no_one_line_role"])),
        ("import rankkit (s over python)", f"{figures['import_seconds']:.3f}"),
        ("rankkit --help (s over python)", f"{figures['help_seconds']:.3f}"),
        ("duplicates rows", "n/a" if figures["duplicates"] is None else str(figures["duplicates"])),
    ]
    lines = [f"# Architecture figures ({label})", "", "Written by `python benchmarks/architecture.py --label "
             f"{label}`.", "", "| figure | value |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in rows]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="current", help="names the results file: architecture_<label>.md")
    args = parser.parse_args()
    text = report(measure(), args.label)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"architecture_{args.label}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
