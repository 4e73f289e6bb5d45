"""The package's shape, measured: module sizes, who imports whom, start-up cost (issue 15).

Architecture is measured like speed, so a refactor can quote before and after. The script measures
the checkout it lives in, or another one given with ``--repo DIR`` (say a release), and every
figure is read from that checkout's code or from running it:

* **package size** — modules under ``rankkit/`` and their total lines (``rankkit/**/*.py``); lines
  per module, how many are over 500 lines (the issue's bound for "one responsibility") and the
  largest;
* **the CLI is a leaf** — every module that imports ``rankkit.cli`` (goal: only ``__main__``);
* **import circles** — cycles among rankkit modules counting only module-level imports (statements
  at the top of a module; goal: none); the strongly connected components (groups of two or more
  modules that reach each other) counting function-level (lazy) imports too — every import that
  runs, i.e. all but those under ``if TYPE_CHECKING:``; and the same counting every import
  statement, ``TYPE_CHECKING`` ones included (as ``tests/test_architecture.py`` does: a circle closed
  by a type-only import still ties the modules together); and, every import statement counted,
  the circles between packages (each subpackage's modules taken as one: ``memo`` importing
  ``judges.base`` while ``judges.llm`` imports ``memo`` is a circle of ``memo`` and ``judges``);
* **upward imports** — every import statement (module-level, inside a function, under
  ``TYPE_CHECKING``) from a module into a module on a higher floor (:data:`FLOORS`: errors and
  specs, judgments, cache, memo, prompts, matches, strategies, judges, runner and api, front ends;
  a module may import its own floor and those below; goal: none). How many of them only under
  ``TYPE_CHECKING`` is said beside. The **core** is every module below the strategies. Modules on
  no floor are listed; a checkout older than the floors is measured with its modules' current
  names (0.2's ``engine`` as ``dispatch``);
* **one of each** — how many modules define a bootstrap, an interval type, or measure an answer's
  length (goal: one each);
* **a role in one line** — modules whose docstring's first line is missing or does not end a
  sentence on that line;
* **frames from the CLI to the first judge call** — in a subprocess with the measured checkout first
  on ``PYTHONPATH``, ``rankkit.cli.main(["compare", "--data", SAMPLE, "--strategies", "knockout",
  "--judge", "sim", "--no-cache"], standalone_mode=False)`` (SAMPLE: the bundled data file under
  ``rankkit/data/sample``) runs with the simulated judge's entry methods wrapped (whichever of
  ``compare_many``, ``compare``, ``grade_many``, ``score_many`` the classes of
  ``rankkit.judges.simulated.sim`` have, inherited ones included). At the first call of any of them the
  wrapper takes ``len(inspect.stack())`` minus the depth of the ``main(...)`` frame: the frames below
  ``main`` down to the judge method, which the wrapper's frame stands for. A second figure counts
  only those frames inside the package (their file under ``rankkit/``), the judge method included;
* **modules a run imports** — in the same subprocess, after that run: how many modules of the
  package (``rankkit`` and ``rankkit.*``) are in ``sys.modules``, which, and how many of them are
  ``rankkit.strategies.*`` (the simulated judge's module is imported before the run, to wrap it; the
  run imports it anyway);
* **a third-party strategy** — the smallest ``examples/*strategy*.py`` of the measured checkout, or,
  when it has none, the file given with ``--example FILE``: its lines (not blank, not only a
  comment, not in a docstring), and the concepts it must use: the distinct names it imports from
  ``rankkit`` (any submodule; for ``import rankkit.x as m``, the attributes it reads on ``m``) plus
  the distinct attributes it reads on the parameters of its methods (``rank``, ``plan``...) other
  than ``self``/``cls``, leaving out the task's data (attributes of a ``task`` parameter that are
  fields or properties of ``rankkit.data.tasks.Task``, such as ``candidates`` and ``candidate_ids``);
* **start-up** — wall time of ``python -c "import rankkit"`` and ``rankkit --help`` over
  ``python -c pass`` (medians of several runs, the measured checkout first on ``PYTHONPATH``);

    python benchmarks/architecture.py [--repo DIR] [--label after] [--example FILE] [--versus LABEL]

Prints the figures and writes ``benchmarks/results/architecture_<label>.md`` (in this checkout,
whichever checkout is measured). With ``--versus OLD`` it also writes
``architecture_<OLD>_vs_<label>.md``: the figures table of ``architecture_<OLD>.md`` (written by an
earlier run) and this run's, side by side. The 0.1 vs 0.2 comparison::

    python benchmarks/architecture.py --repo /path/to/0.1 --label 0.1 --example benchmarks/examples_v01/min_strategy.py
    python benchmarks/architecture.py --label 0.2 --versus 0.1
"""

from __future__ import annotations

import argparse
import ast
import io
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
import tokenize
from collections.abc import Iterator
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]  # the checkout this script lives in (and writes to)
RESULTS = ROOT / "benchmarks" / "results"
MAX_LINES = 500
#: The package's stages, lowest first (issue 41): the folders of ``rankkit/`` in the order a run
#: flows through them, from reading a task file to a report. A module may import modules of its own
#: stage and of lower ones, never of a higher one, not even lazily or under ``TYPE_CHECKING``. A
#: stage is a folder (or a top-level module) of ``rankkit``; ``""`` is ``rankkit/__init__.py`` (its
#: lazy public names). ``tests/test_architecture.py`` checks that every entry of ``rankkit/`` is here.
STAGES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("errors", ("errors",)),
    ("data: reading and validating tasks, tables and spec strings", ("data",)),
    ("stats: intervals, agreement, rating models", ("stats",)),
    ("judgments: values, memo, cache", ("judgments",)),
    ("prompts", ("prompts",)),
    ("strategies and the matches they play", ("strategies",)),
    ("judges", ("judges",)),
    ("runs: running and results", ("runs",)),
    ("leaderboard", ("leaderboard",)),
    ("reports: presentation", ("reports",)),
    ("api", ("api",)),
    ("front ends", ("cli", "__main__", "")),
)
#: ``judges/`` grouped by kind, lowest first; the same rule holds between the groups. ``judges``
#: itself (its ``__init__``, ``base`` and ``backends``: the protocol and the registry) is the lowest;
#: ``trust`` checks specs of every kind, panels included.
JUDGE_GROUPS: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("judges: protocol and registry", ("judges", "judges.base", "judges.backends")),
    ("judges: LLM prompting and verdict reading", ("judges.llm",)),
    (
        "judges: local runtimes, hosted APIs, simulated and recorded",
        ("judges.local", "judges.hosted", "judges.simulated"),
    ),
    ("judges: composite", ("judges.composite",)),
    ("judges: trust of specs read from files", ("judges.trust",)),
)
#: The floors the checks use: the stages, with ``judges`` opened into its groups.
FLOORS: tuple[tuple[str, tuple[str, ...]], ...] = tuple(
    floor for stage in STAGES for floor in (JUDGE_GROUPS if stage[1] == ("judges",) else (stage,))
)
#: The core: every floor below the strategies.
CORE = tuple(name for label, names in FLOORS[: [f[1] for f in FLOORS].index(("strategies",))] for name in names)
#: Modules of earlier releases measured under their current name (a checkout given with --repo):
#: 0.2's ``engine``, and every module 0.4 moved into a stage folder.
FORMER_NAMES = {
    "engine": "judgments.dispatch",
    "dispatch": "judgments.dispatch",
    "specs": "data.specs",
    "formatting": "data.formatting",
    "frames": "data.frames",
    "task_files": "data.task_files",
    "tasks": "data.tasks",
    "file_checks": "data.file_checks",
    "samples": "data.samples",
    "stats": "stats.intervals",
    "metrics": "stats.metrics",
    "ratings": "stats.ratings",
    "judgments": "judgments.values",
    "cache": "judgments.cache",
    "memo": "judgments.memo",
    "matches": "strategies.matches",
    "choices": "strategies.choices",
    "order": "strategies.order",
    "brackets": "strategies.brackets",
    "synthetic": "judges.simulated.synthetic",
    "runner": "runs.runner",
    "results": "runs.results",
    "bill": "runs.bill",
    "scale": "runs.scale",
    "recording": "runs.recording",
    "rerank": "runs.rerank",
    "rejudging": "runs.rejudging",
    "plan": "runs.plan",
    "analysis": "runs.analysis",
    "report": "reports.report",
    "plots": "reports.plots",
    "judge_report": "reports.judge_report",
    "cli_support": "cli.support",
    "config": "cli.config",
    "judges.kway": "prompts.kway_verdicts",
    "judges.llm": "judges.llm.judge",
    "judges.llm_runtime": "judges.llm.runtime",
    "judges.modes": "judges.llm.modes",
    "judges.kway_llm": "judges.llm.kway",
    "judges.calibration": "judges.llm.calibration",
    "judges.context": "judges.llm.context",
    "judges.prepair": "judges.llm.prepair",
    "judges.hf": "judges.local.hf",
    "judges.hf_runtime": "judges.local.hf_runtime",
    "judges.hf_batching": "judges.local.hf_batching",
    "judges.hf_loading": "judges.local.hf_loading",
    "judges.hf_exact": "judges.local.hf_exact",
    "judges.chat_tokens": "judges.local.chat_tokens",
    "judges.vllm": "judges.local.vllm",
    "judges.openai_compat": "judges.hosted.openai_compat",
    "judges.anthropic": "judges.hosted.anthropic",
    "judges.batches": "judges.hosted.batches",
    "judges.batch_options": "judges.hosted.batch_options",
    "judges.pacing": "judges.hosted.pacing",
    "judges.prices": "judges.hosted.prices",
    "judges.hosted_verdict": "judges.hosted.verdict",
    "judges.http_client": "judges.hosted.http_client",
    "judges.sim": "judges.simulated.sim",
    "judges.sim_targets": "judges.simulated.sim_targets",
    "judges.replay": "judges.simulated.replay",
    "judges.panel": "judges.composite.panel",
    "data.make_samples": "cli",
}
JUDGE_METHODS = ("compare_many", "compare", "grade_many", "score_many")
SIM_MODULES = ("rankkit.judges.simulated.sim", "rankkit.judges.sim")  # 0.4's place, then the earlier one
DATA_SUFFIXES = (".jsonl", ".csv", ".tsv", ".parquet", ".json")


# -- the import graph --------------------------------------------------------------------------


def module_name(path: Path, repo: Path) -> str:
    parts = list(path.relative_to(repo).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def modules(repo: Path) -> dict[str, Path]:
    """Module name -> file, for every module of the checkout ``repo``'s package ``rankkit``."""
    return {module_name(p, repo): p for p in sorted((repo / "rankkit").rglob("*.py"))}


def is_type_checking(node: ast.AST) -> bool:
    """``if TYPE_CHECKING:`` or ``if typing.TYPE_CHECKING:``."""
    test = node.test if isinstance(node, ast.If) else None
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"
    )


def runtime_nodes(node: ast.AST) -> Iterator[ast.AST]:
    """Every node below ``node`` except the bodies of ``if TYPE_CHECKING:`` (their ``else`` runs)."""
    for child in ast.iter_child_nodes(node):
        yield child
        if is_type_checking(child):
            for branch in child.orelse:
                yield branch
                yield from runtime_nodes(branch)
        else:
            yield from runtime_nodes(child)


#: Which import statements an import graph counts (see :func:`import_nodes`).
SCOPES = ("module", "runtime", "all")


def import_nodes(tree: ast.Module, scope: str) -> list[ast.AST]:
    """``module``: the module's top-level statements; ``runtime``: every import that can run
    (module-level and lazy, not ``TYPE_CHECKING``); ``all``: every import statement."""
    if scope not in SCOPES:
        raise ValueError(f"scope must be one of {', '.join(SCOPES)}, got {scope!r}")
    if scope == "module":
        return tree.body
    return list(runtime_nodes(tree)) if scope == "runtime" else list(ast.walk(tree))


def imports(path: Path, name: str, scope: str) -> set[str]:
    """The rankkit modules ``path`` imports (``from rankkit.x import y`` counts ``rankkit.x``, and
    ``rankkit.x.y`` too when that is a module)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found: set[str] = set()
    for node in import_nodes(tree, scope):
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


def import_graph(mods: dict[str, Path], scope: str) -> nx.DiGraph:
    """Who imports whom among ``mods``: an edge a -> b when a imports b.

    scope: which import statements count (see :func:`import_nodes`): ``module``, ``runtime`` or ``all``.
    """
    graph = nx.DiGraph()
    graph.add_nodes_from(mods)
    for name, path in mods.items():
        for target in imports(path, name, scope):
            if target in mods and target != name:
                graph.add_edge(name, target)
    return graph


def current_name(relative: str) -> str:
    """``relative`` (a module name relative to ``rankkit``) under its current name (:data:`FORMER_NAMES`)."""
    parts = relative.split(".")
    for cut in range(len(parts), 0, -1):
        head = ".".join(parts[:cut])
        if head in FORMER_NAMES and not (cut == 1 and len(parts) > 1 and f"{head}.{parts[1]}" in FORMER_NAMES):
            return ".".join([FORMER_NAMES[head], *parts[cut:]])
    return relative


def floor_of(module: str) -> int | None:
    """The index in :data:`FLOORS` of ``module`` (a full name, ``rankkit.x.y``): the floor of the
    longest entry that is the module or a package above it; None when no entry covers it. An earlier
    release's module is placed under its current name (:data:`FORMER_NAMES`; a former name that is
    now a package, such as ``stats``, lies on the same floor either way)."""
    relative = current_name(module.removeprefix("rankkit").removeprefix("."))
    best: tuple[int, int] | None = None  # (length of the entry, floor)
    for floor, (_, names) in enumerate(FLOORS):
        for name in names:
            covers = relative == name or (name and relative.startswith(name + ".")) or (not name and not relative)
            if covers and (best is None or len(name) > best[0]):
                best = (len(name), floor)
    return None if best is None else best[1]


def unplaced_entries(repo: Path) -> list[str]:
    """The entries of ``rankkit/`` and ``rankkit/judges/`` (modules and folders) that no stage or
    judge group names: a new folder or top-level module must be given its place in the flow."""
    named = {name for _, names in FLOORS for name in names}
    found = []
    for folder, prefix in ((repo / "rankkit", ""), (repo / "rankkit" / "judges", "judges.")):
        for entry in folder.iterdir():
            if entry.name.startswith(("_", ".")) and entry.name != "__main__.py":
                continue
            if entry.suffix == ".py" or (entry / "__init__.py").exists():
                name = prefix + entry.name.removesuffix(".py")
                if name not in named:
                    found.append(name)
    return sorted(found)


def without_floor(mods: dict[str, Path]) -> list[str]:
    """The modules on no floor of :data:`FLOORS` (a new module must be given one)."""
    return sorted(name for name in mods if floor_of(name) is None)


def core_modules(mods: dict[str, Path]) -> set[str]:
    """The modules of ``mods`` below the strategies' floor."""
    strategies = [names for _, names in FLOORS].index(("strategies",))
    return {name for name in mods if (floor := floor_of(name)) is not None and floor < strategies}


def upward_imports(graph: nx.DiGraph) -> list[str]:
    """Edges ``a -> b`` of ``graph`` where ``b`` is on a higher floor than ``a``."""
    return sorted(
        f"{a} -> {b}" for a, b in graph.edges if None not in (floor_of(a), floor_of(b)) and floor_of(a) < floor_of(b)
    )


def package_graph(graph: nx.DiGraph) -> nx.DiGraph:
    """``graph`` with every subpackage's modules merged into one node (``rankkit.judges.llm.judge`` ->
    ``rankkit.judges``): a circle through a package (the memo importing ``judges.base`` while
    ``judges.llm`` imports the memo) ties the two together as much as a circle between modules."""

    def unit(name: str) -> str:
        return ".".join(name.split(".")[:2])

    merged = nx.DiGraph()
    merged.add_nodes_from(unit(n) for n in graph)
    merged.add_edges_from((unit(a), unit(b)) for a, b in graph.edges if unit(a) != unit(b))
    return merged


def circles(graph: nx.DiGraph) -> list[list[str]]:
    """Strongly connected components of two or more modules, largest first."""
    return sorted(
        (sorted(c) for c in nx.strongly_connected_components(graph) if len(c) > 1), key=lambda c: (-len(c), c)
    )


# -- reading modules ---------------------------------------------------------------------------


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
        calls = (
            n
            for n in ast.walk(tree)
            if isinstance(n, ast.Call) and isinstance(n.func, ast.Name) and n.func.id == "len" and n.args
        )
        if any(regex.search(ast.unparse(call.args[0])) for call in calls):
            hits.append(name)
    return hits


# -- a run of the CLI, probed ------------------------------------------------------------------

#: Runs in a subprocess: argv = output JSON, package dir, judge module, data file. Wraps the judge
#: module's entry methods, runs ``compare`` through ``rankkit.cli.main`` and writes what it saw.
PROBE = rf"""
import functools, importlib, inspect, json, os, sys

out_path, package_dir, judge_module, data = sys.argv[1:5]
METHODS = {JUDGE_METHODS!r}
import rankkit

def inside(filename):
    return os.path.abspath(filename).startswith(package_dir + os.sep)

if not inside(rankkit.__file__):
    sys.exit(f"rankkit was imported from {{rankkit.__file__}}, not from {{package_dir}}")
seen, anchor, wrapped = {{}}, {{}}, []

def recorder(method, name):
    @functools.wraps(method)
    def wrapper(*args, **kwargs):
        if not seen and anchor:  # the first call during the run
            stack = inspect.stack(0)  # stack[0]: this wrapper, standing for the judge method
            below = len(stack) - anchor["depth"]  # frames below main's: stack[below] is main's frame
            main_thread = 0 < below < len(stack) - 1 and stack[below + 1].frame is anchor["frame"]
            between = stack[1:below] if main_thread else []
            seen.update(method=f"{{type(args[0]).__name__}}.{{name}}",
                        defined_in=f"{{method.__module__}}.{{method.__qualname__}}",
                        main_thread=main_thread, frames=below if main_thread else None,
                        rankkit_frames=sum(inside(f.filename) for f in between) + inside(method.__code__.co_filename)
                        if main_thread else None,
                        path=[f"{{os.path.relpath(f.filename, package_dir)}}:{{f.function}}"
                              for f in reversed(between) if inside(f.filename)])
        return method(*args, **kwargs)
    wrapper.probe_wrapped = True
    return wrapper

judges = importlib.import_module(judge_module)
for cls in list(vars(judges).values()):
    if isinstance(cls, type) and cls.__module__ == judges.__name__:
        for name in METHODS:
            method = inspect.getattr_static(cls, name, None)
            if inspect.isfunction(method) and not getattr(method, "probe_wrapped", False):
                setattr(cls, name, recorder(method, name))
                wrapped.append(f"{{cls.__name__}}.{{name}}")

def drive():
    from rankkit.cli import main
    args = ["compare", "--data", data, "--strategies", "knockout", "--judge", "sim", "--no-cache"]
    anchor.update(frame=inspect.currentframe(), depth=len(inspect.stack(0)) + 1)  # main(...)'s frame
    try:
        main(args, standalone_mode=False) if hasattr(main, "main") else main(args)  # a click command, or not
        return 0
    except SystemExit as stop:
        return stop.code or 0

status = drive()
names = sorted(n for n in list(sys.modules) if n == "rankkit" or n.startswith("rankkit."))
with open(out_path, "w", encoding="utf-8") as out:
    json.dump({{**seen, "status": status, "wrapped": wrapped, "modules": names}}, out)
"""


def sample_data(repo: Path) -> Path:
    """The bundled sample's tasks: ``rankkit/data/sample/tasks.jsonl``, else the first data file
    there (0.2 also ships recorded judgments beside it), else that folder."""
    folder = repo / "rankkit" / "data" / "sample"
    if (folder / "tasks.jsonl").exists():
        return folder / "tasks.jsonl"
    files = sorted(p for p in folder.glob("*") if p.suffix in DATA_SUFFIXES)
    return files[0] if files else folder


def probe_cli_run(repo: Path) -> dict:
    """Run ``compare`` through ``rankkit.cli.main`` in a subprocess with PROBE (see above)."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    with tempfile.TemporaryDirectory() as scratch:  # the run's cwd: whatever it writes stays out of the repo
        out = Path(scratch) / "probe.json"
        command = [
            sys.executable,
            "-c",
            PROBE,
            str(out),
            str(repo / "rankkit"),
            sim_module(repo),
            str(sample_data(repo)),
        ]
        done = subprocess.run(command, capture_output=True, text=True, cwd=scratch, env=env)
        if done.returncode or not out.exists():
            raise RuntimeError(f"the probed run failed ({done.returncode}):\n{done.stderr[-3000:]}")
        found = json.loads(out.read_text(encoding="utf-8"))
    if found["status"]:
        raise RuntimeError(f"rankkit compare exited with {found['status']}")
    if "method" not in found:
        raise RuntimeError(f"no judge method was called (wrapped: {', '.join(found['wrapped']) or 'none'})")
    return found


# -- a third-party strategy --------------------------------------------------------------------


def docstring_lines(tree: ast.Module) -> set[int]:
    """Line numbers of the module's, classes' and functions' docstrings."""
    lines: set[int] = set()
    for node in [tree, *ast.walk(tree)]:
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body:
            first = node.body[0]
            if (
                isinstance(first, ast.Expr)
                and isinstance(first.value, ast.Constant)
                and isinstance(first.value.value, str)
            ):
                lines.update(range(first.lineno, first.end_lineno + 1))
    return lines


def code_lines(path: Path) -> int:
    """Lines holding code: not blank, not only a comment, not in a docstring."""
    text = path.read_text(encoding="utf-8")
    skip = {
        tokenize.COMMENT,
        tokenize.NL,
        tokenize.NEWLINE,
        tokenize.INDENT,
        tokenize.DEDENT,
        tokenize.ENCODING,
        tokenize.ENDMARKER,
    }
    lines: set[int] = set()
    for token in tokenize.generate_tokens(io.StringIO(text).readline):
        if token.type not in skip:
            lines.update(range(token.start[0], token.end[0] + 1))
    return len(lines - docstring_lines(ast.parse(text)))


def find_example(repo: Path, given: str | None) -> Path | None:
    """The smallest ``examples/*strategy*.py`` of ``repo``, else ``given`` (relative to the working
    directory, or to this checkout)."""
    found = sorted((repo / "examples").glob("*strategy*.py"))
    if found:
        return min(found, key=code_lines)
    if given is None:
        return None
    path = Path(given)
    return next((p.resolve() for p in (path, ROOT / path) if p.is_file()), None)


def sim_module(repo: Path) -> str:
    """The simulated judge's module in ``repo`` (it moved in 0.4)."""
    return next(m for m in SIM_MODULES if (repo / (m.replace(".", "/") + ".py")).is_file())


def task_data(repo: Path) -> set[str]:
    """Fields and properties of ``rankkit.data.tasks.Task`` in ``repo``: the task's data, not concepts."""
    path = next(p for p in (repo / "rankkit" / "data" / "tasks.py", repo / "rankkit" / "tasks.py") if p.is_file())
    tree = ast.parse(path.read_text(encoding="utf-8"))
    task = next((n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Task"), None)
    data: set[str] = set()
    for node in task.body if task else []:
        if isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
            data.add(node.target.id)
        elif isinstance(node, ast.FunctionDef) and any(
            ast.unparse(d).rpartition(".")[2] in ("property", "cached_property") for d in node.decorator_list
        ):
            data.add(node.name)
    return data


def rankkit_imports(tree: ast.Module) -> set[str]:
    """Names imported from rankkit, and attributes read on a module imported as ``import rankkit.x as m``."""
    names: set[str] = set()
    aliases: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and not node.level and (node.module or "").startswith("rankkit"):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.Import):
            aliases.update(a.asname for a in node.names if a.asname and a.name.startswith("rankkit"))
    names.update(
        n.attr
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name) and n.value.id in aliases
    )
    return names


def received_attributes(tree: ast.Module, data: set[str]) -> set[str]:
    """Attributes read on the parameters of the classes' methods (not ``self``/``cls``; on ``task``,
    only those that are not in ``data``)."""
    names: set[str] = set()
    for cls in (n for n in ast.walk(tree) if isinstance(n, ast.ClassDef)):
        for method in (n for n in cls.body if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef))):
            every = [*method.args.posonlyargs, *method.args.args, *method.args.kwonlyargs]
            params = {a.arg for a in every} - {"self", "cls"}
            for node in ast.walk(method):
                if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in params:
                    if not (node.value.id == "task" and node.attr in data):
                        names.add(node.attr)
    return names


def strategy_concepts(path: Path, repo: Path) -> tuple[list[str], list[str]]:
    """(names imported from rankkit, attributes read on what rankkit hands the strategy)."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = rankkit_imports(tree)
    return sorted(imported), sorted(received_attributes(tree, task_data(repo)) - imported)


# -- start-up and the rest ---------------------------------------------------------------------


def median_seconds(command: list[str], repo: Path, runs: int = 15) -> float:
    """Median wall time of ``command``, with the measured checkout first on the path (not an
    installed rankkit, whose import hooks would be timed too)."""
    env = {**os.environ, "PYTHONPATH": str(repo)}
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        subprocess.run(command, check=True, capture_output=True, cwd=repo, env=env)
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def commit(repo: Path) -> str | None:
    done = subprocess.run(["git", "-C", str(repo), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    return done.stdout.strip() or None


def measure(repo: Path, example: str | None) -> dict[str, object]:
    mods = modules(repo)
    sizes = {name: len(path.read_text(encoding="utf-8").splitlines()) for name, path in mods.items()}
    everywhere = import_graph(mods, "all")
    runtime = import_graph(mods, "runtime")
    top_level = import_graph(mods, "module")
    cli_importers = sorted(n for n in everywhere.predecessors("rankkit.cli")) if "rankkit.cli" in everywhere else []
    core = core_modules(mods)
    no_role = sorted(
        name
        for name, path in mods.items()
        if not (role := first_line_role(path)) or not role.rstrip().endswith((".", ")", ":"))
    )
    probe = probe_cli_run(repo)
    example_path = find_example(repo, example)
    imported, received = strategy_concepts(example_path, repo) if example_path else ([], [])
    python = [sys.executable, "-c", "pass"]
    floor = median_seconds(python, repo)
    return {
        "repo": repo,
        "commit": commit(repo),
        "modules": len(mods),
        "lines": sum(sizes.values()),
        "largest": sorted(sizes.items(), key=lambda kv: -kv[1])[:5],
        "over_limit": sorted((n, s) for n, s in sizes.items() if s > MAX_LINES),
        "cli_importers": cli_importers,
        "core": sorted(core),
        "without_floor": without_floor(mods),
        "upward_imports": upward_imports(everywhere),
        "upward_type_only": sorted(set(upward_imports(everywhere)) - set(upward_imports(runtime))),
        "cycles": sorted(sorted(c) for c in nx.simple_cycles(top_level)),
        "lazy_circles": circles(runtime),
        "every_circles": circles(everywhere),
        "type_checking_circles": [c for c in circles(everywhere) if c not in circles(runtime)],
        "package_circles": circles(package_graph(everywhere)),
        "bootstraps": defines(mods, r"_?bootstrap\w*"),
        "interval_types": defines(mods, r"\w*(Interval|Estimate)"),
        "length_definitions": length_definitions(mods),
        "no_one_line_role": no_role,
        "sample": sample_data(repo).relative_to(repo),
        "probe": probe,
        "example": example_path,
        "example_lines": code_lines(example_path) if example_path else None,
        "concepts_imported": imported,
        "concepts_received": received,
        "import_seconds": median_seconds([sys.executable, "-c", "import rankkit"], repo) - floor,
        "help_seconds": median_seconds([sys.executable, "-m", "rankkit", "--help"], repo) - floor,
    }


# -- the report --------------------------------------------------------------------------------


def names(items: list) -> str:
    return ", ".join(str(i) for i in items) if items else "none"


def shown_path(path: Path) -> str:
    """``path`` relative to this checkout when it is inside it."""
    return str(path.relative_to(ROOT)) if path.is_relative_to(ROOT) else str(path)


def table_rows(f: dict) -> list[tuple[str, str]]:
    probe = f["probe"]
    modules_run = probe["modules"]
    strategies_run = [m for m in modules_run if m.startswith("rankkit.strategies.")]
    concepts = len(f["concepts_imported"]) + len(f["concepts_received"])
    largest = ", ".join(f"{n} {s}" for n, s in f["largest"])
    over = ", ".join(f"{n} {s}" for n, s in f["over_limit"]) or "none"
    type_only = f" ({len(f['upward_type_only'])} of them only under TYPE_CHECKING)" if f["upward_type_only"] else ""
    return [
        ("modules / lines", f"{f['modules']} / {f['lines']}"),
        ("largest modules", largest),
        (f"modules over {MAX_LINES} lines", f"{len(f['over_limit'])}: {over}"),
        ("modules importing rankkit.cli", names(f["cli_importers"])),
        (
            "upward imports (to a higher floor; module-level, lazy or under TYPE_CHECKING)",
            f"{len(f['upward_imports'])}{type_only}",
        ),
        ("modules on no floor", names(f["without_floor"])),
        ("import cycles (module level)", str(len(f["cycles"]))),
        (
            "import circles counting lazy imports (strongly connected components)",
            f"{len(f['lazy_circles'])} ({names([len(c) for c in f['lazy_circles']])} modules)"
            if f["lazy_circles"]
            else "0",
        ),
        (
            "import circles counting lazy and `TYPE_CHECKING` imports too (every import statement)",
            f"{len(f['every_circles'])} ({names([len(c) for c in f['every_circles']])} modules)"
            if f["every_circles"]
            else "0",
        ),
        (
            "import circles between packages (a subpackage counted as one module; every import statement)",
            f"{len(f['package_circles'])} ({names([len(c) for c in f['package_circles']])} modules)"
            if f["package_circles"]
            else "0",
        ),
        ("modules defining a bootstrap", names(f["bootstraps"])),
        ("modules defining an interval type", names(f["interval_types"])),
        ("modules measuring answer length", names(f["length_definitions"])),
        ("modules without a one-line role", names(f["no_one_line_role"])),
        (
            "frames from `main(...)` to the first judge call",
            "n/a (worker thread)" if probe["frames"] is None else f"{probe['frames']} (first call: {probe['method']})",
        ),
        ("... of them inside rankkit", "n/a" if probe["rankkit_frames"] is None else str(probe["rankkit_frames"])),
        ("rankkit modules imported by `compare --strategies knockout`", str(len(modules_run))),
        ("... of them rankkit.strategies.*", str(len(strategies_run))),
        ("lines of the smallest third-party strategy", "n/a" if f["example"] is None else str(f["example_lines"])),
        (
            "concepts a new strategy must use",
            "n/a"
            if f["example"] is None
            else f"{concepts} ({len(f['concepts_imported'])} imported + {len(f['concepts_received'])} "
            "read on what its methods get)",
        ),
        ("import rankkit (s over python)", f"{f['import_seconds']:.3f}"),
        ("rankkit --help (s over python)", f"{f['help_seconds']:.3f}"),
    ]


def detail_lists(f: dict) -> list[str]:
    probe = f["probe"]
    circle_lines = [f"  {i}. {', '.join(c)}" for i, c in enumerate(f["lazy_circles"], 1)] or ["  none"]
    lines = [
        "* **Floors**, lowest first: "
        + "; ".join(f"{label}: {', '.join(n or '(the package)' for n in names)}" for label, names in FLOORS)
        + ".",
        f"* **Core modules** (below the strategies): {names(f['core'])}.",
        f"* **Upward imports** (every import statement): {names(f['upward_imports'])}."
        + (f" Under `TYPE_CHECKING` only: {names(f['upward_type_only'])}." if f["upward_type_only"] else ""),
        "* **Import circles counting lazy imports** (strongly connected components of two or more modules):",
        *circle_lines,
        *(
            [
                f"  - Counting imports under `TYPE_CHECKING` too (they never run), also: "
                f"{'; '.join(', '.join(c) for c in f['type_checking_circles'])}."
            ]
            if f["type_checking_circles"]
            else []
        ),
        "* **Import circles between packages** (every import statement; a subpackage counted as one module): "
        + ("; ".join(", ".join(c) for c in f["package_circles"]) if f["package_circles"] else "none")
        + ".",
        f'* **The probed run**: `rankkit.cli.main(["compare", "--data", "{f["sample"]}", "--strategies", '
        f'"knockout", "--judge", "sim", "--no-cache"], standalone_mode=False)`; wrapped: '
        f"{names(probe['wrapped'])}; first called: {probe['method']} (defined as {probe['defined_in']}). "
        "Frames = `len(inspect.stack())` at that call minus the depth of the `main(...)` frame (the judge "
        "method counted, `main`'s own frame not).",
        "* **Frames inside rankkit**, from `main` down to the judge method (file:function):",
        *[f"  {i}. {step}" for i, step in enumerate(probe["path"], 1)],
        f"  {len(probe['path']) + 1}. {probe['defined_in']} (the judge method)",
        f"* **rankkit modules in `sys.modules` after the run** ({len(probe['modules'])}): {names(probe['modules'])}.",
    ]
    if f["example"] is None:
        lines.append("* **Third-party strategy**: no `examples/*strategy*.py` in the checkout, no `--example` given.")
    else:
        lines += [
            f"* **Third-party strategy**: `{shown_path(f['example'])}`. Lines: not blank, not only a comment, not in a "
            "docstring.",
            f"  Concepts = names imported from rankkit ({names(f['concepts_imported'])}) + attributes read on the "
            f"parameters of its methods other than `self`/`cls` and the task's data (fields and properties of "
            f"`rankkit.data.tasks.Task`) ({names(f['concepts_received'])}).",
        ]
    return lines


def report(figures: dict[str, object], label: str) -> str:
    where = f"`{figures['repo']}`" + (f" at {figures['commit']}" if figures["commit"] else "")
    command = shlex.join(["python", "benchmarks/architecture.py", *sys.argv[1:]])
    lines = [
        f"# Architecture figures ({label})",
        "",
        f"Written by `{command}`; measured checkout: {where}.",
        "",
        "| figure | value |",
        "|---|---|",
    ]
    lines += [f"| {k} | {v} |" for k, v in table_rows(figures)]
    lines += ["", *detail_lists(figures)]
    return "\n".join(lines) + "\n"


def figure_rows(text: str) -> dict[str, str]:
    """The figures table of a results file written by :func:`report`: figure -> value."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split(" | ")]
        if line.startswith("| ") and len(cells) == 2 and cells != ["figure", "value"]:
            rows[cells[0]] = cells[1]
    return rows


def side_by_side(old_text: str, new_text: str, old_label: str, new_label: str) -> str:
    """A table of two results files' figures: every figure of either, in the new file's order,
    "—" where a file lacks it."""
    old, new = figure_rows(old_text), figure_rows(new_text)
    first_lines = [t.splitlines()[2] for t in (old_text, new_text)]  # "Written by ...; measured checkout: ..."
    lines = [
        f"# Architecture figures, {old_label} vs {new_label}",
        "",
        f"* {old_label}: {first_lines[0]}",
        f"* {new_label}: {first_lines[1]}",
        "",
        "Each file has the details (which modules, which frames, which circles).",
        "",
        f"| figure | {old_label} | {new_label} |",
        "|---|---|---|",
    ]
    lines += [
        f"| {figure} | {old.get(figure, '—')} | {new.get(figure, '—')} |"
        for figure in [*new, *(f for f in old if f not in new)]
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, default=ROOT, help="the checkout to measure (default: this one)")
    parser.add_argument("--label", default="current", help="names the results file: architecture_<label>.md")
    parser.add_argument(
        "--example",
        default=None,
        help="a third-party strategy file, used when the checkout has no examples/*strategy*.py",
    )
    parser.add_argument(
        "--versus",
        default=None,
        metavar="LABEL",
        help="also write architecture_<LABEL>_vs_<label>.md from architecture_<LABEL>.md and this run",
    )
    args = parser.parse_args()
    repo = args.repo.resolve()
    if not (repo / "rankkit" / "__init__.py").is_file():
        parser.error(f"{repo} is not a rankkit checkout (no rankkit/__init__.py)")
    text = report(measure(repo, args.example), args.label)
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"architecture_{args.label}.md").write_text(text, encoding="utf-8")
    if args.versus:
        before = RESULTS / f"architecture_{args.versus}.md"
        if not before.is_file():
            parser.error(
                f"--versus {args.versus}: {shown_path(before)} does not exist (run with --label {args.versus} first)"
            )
        both = side_by_side(before.read_text(encoding="utf-8"), text, args.versus, args.label)
        (RESULTS / f"architecture_{args.versus}_vs_{args.label}.md").write_text(both, encoding="utf-8")


if __name__ == "__main__":
    main()
