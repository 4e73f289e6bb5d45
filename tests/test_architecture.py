"""The package's shape (issue 15): dependencies point one way, no import cycles, one role per module.

These read the source with :mod:`ast`, as ``benchmarks/architecture.py`` does for its figures;
they fail when a change makes the core import a backend, closes an import cycle, or leaves a
module without a one-line statement of what it is for.
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("architecture", ROOT / "benchmarks" / "architecture.py")
architecture = importlib.util.module_from_spec(spec)
spec.loader.exec_module(architecture)


def test_the_core_never_imports_a_strategy_or_a_judge_backend():
    graph = architecture.import_graph(architecture.modules(ROOT), scope="all")
    core = {f"rankkit.{name}" for name in architecture.CORE}
    backward = [(a, b) for a, b in graph.edges if a in core and b.startswith(("rankkit.strategies.", "rankkit.judges."))
                and not b.endswith(".base")]
    assert backward == []


def test_no_import_cycle_among_module_level_imports():
    graph = architecture.import_graph(architecture.modules(ROOT), scope="module")
    assert list(nx.simple_cycles(graph)) == []


def test_no_import_cycle_counting_imports_in_functions_and_under_type_checking():
    """An import inside a function or under ``TYPE_CHECKING`` still ties two modules together: a
    cycle closed by one is a cycle (neither module can be read or moved without the other)."""
    graph = architecture.import_graph(architecture.modules(ROOT), scope="all")
    assert list(nx.simple_cycles(graph)) == []


def test_every_module_states_its_role_in_its_first_docstring_line():
    missing = [name for name, path in architecture.modules(ROOT).items()
               if not (role := architecture.first_line_role(path)) or not role.rstrip().endswith((".", ")", ":"))]
    assert missing == []


def test_one_bootstrap_and_one_interval_type():
    mods = architecture.modules(ROOT)
    assert architecture.defines(mods, r"_?bootstrap\w*") == ["rankkit.stats"]
    assert architecture.defines(mods, r"\w*(Interval|Estimate)") == ["rankkit.stats"]


def test_the_import_graph_sees_a_cycle_when_there_is_one(tmp_path, monkeypatch):
    """The checks above can fail: two modules importing each other are a cycle to import_graph."""
    package = tmp_path / "rankkit"
    package.mkdir()
    (package / "__init__.py").write_text('"""Package."""\n')
    (package / "a.py").write_text('"""A."""\nfrom rankkit.b import x\n')
    (package / "b.py").write_text('"""B."""\nfrom rankkit import a\nx = 1\n')
    graph = architecture.import_graph(architecture.modules(tmp_path), scope="module")
    assert sorted(map(sorted, nx.simple_cycles(graph))) == [["rankkit.a", "rankkit.b"]]
    assert ast.get_docstring(ast.parse((package / "a.py").read_text())) == "A."
