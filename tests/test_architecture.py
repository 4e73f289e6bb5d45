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


def test_every_module_is_on_a_floor():
    """A new module is given its floor in ``benchmarks/architecture.py``'s FLOORS, so the test
    below checks its imports too."""
    assert architecture.without_floor(architecture.modules(ROOT)) == []


def test_no_import_reaches_a_higher_floor_counting_lazy_and_type_checking_imports():
    graph = architecture.import_graph(architecture.modules(ROOT), scope="all")
    assert architecture.upward_imports(graph) == []


def test_the_core_is_every_module_below_the_strategies_the_memo_and_the_judgments_included():
    core = architecture.core_modules(architecture.modules(ROOT))
    assert {
        "rankkit.judgments.values",
        "rankkit.judgments.memo",
        "rankkit.judgments.cache",
        "rankkit.strategies.matches",
        "rankkit.data.tasks",
        "rankkit.prompts.kway",
    } <= core
    assert not any(
        name.startswith(("rankkit.strategies", "rankkit.judges", "rankkit.runs.runner", "rankkit.judgments.dispatch"))
        for name in core
    )
    assert {name.removeprefix("rankkit.") for name in core if name.count(".") == 1} <= set(architecture.CORE)


def test_no_import_circle_between_packages():
    """A subpackage taken as one module: the memo importing ``judges.base`` while ``judges.llm``
    imports the memo would be a circle here, though no two modules import each other."""
    graph = architecture.import_graph(architecture.modules(ROOT), scope="all")
    assert architecture.circles(architecture.package_graph(graph)) == []


def test_no_import_cycle_among_module_level_imports():
    graph = architecture.import_graph(architecture.modules(ROOT), scope="module")
    assert list(nx.simple_cycles(graph)) == []


def test_no_import_cycle_counting_imports_in_functions_and_under_type_checking():
    """An import inside a function or under ``TYPE_CHECKING`` still ties two modules together: a
    cycle closed by one is a cycle (neither module can be read or moved without the other)."""
    graph = architecture.import_graph(architecture.modules(ROOT), scope="all")
    assert list(nx.simple_cycles(graph)) == []


def test_every_module_states_its_role_in_its_first_docstring_line():
    missing = [
        name
        for name, path in architecture.modules(ROOT).items()
        if not (role := architecture.first_line_role(path)) or not role.rstrip().endswith((".", ")", ":"))
    ]
    assert missing == []


def test_one_bootstrap_and_one_interval_type():
    mods = architecture.modules(ROOT)
    assert architecture.defines(mods, r"_?bootstrap\w*") == ["rankkit.stats.intervals"]
    assert architecture.defines(mods, r"\w*(Interval|Estimate)") == ["rankkit.stats.intervals"]


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


def fake_package(root, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / "rankkit" / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_a_lazy_or_type_checking_import_into_a_higher_floor_is_upward(tmp_path):
    """The floors check reads every import statement: one inside a function and one under
    ``TYPE_CHECKING`` count, and so does a package-level circle they close."""
    fake_package(
        tmp_path,
        {
            "__init__.py": '"""Package."""\n',
            "memo.py": '"""Memo."""\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n'
            "    from rankkit.judges.base import Judge\n",
            "matches.py": '"""Matches."""\ndef ask():\n    from rankkit.strategies import knockout\n',
            "judges/__init__.py": '"""Judges."""\n',
            "judges/base.py": '"""Base."""\nclass Judge:\n    pass\n',
            "judges/llm.py": '"""LLM."""\nfrom rankkit.judgments.memo import x\n',
            "strategies/__init__.py": '"""Strategies."""\n',
            "strategies/knockout.py": '"""Knockout."""\nimport rankkit.judges\n',
        },
    )
    mods = architecture.modules(tmp_path)
    everywhere = architecture.import_graph(mods, scope="all")
    assert architecture.upward_imports(everywhere) == [
        "rankkit.strategies.matches -> rankkit.strategies",
        "rankkit.strategies.matches -> rankkit.strategies.knockout",
        "rankkit.judgments.memo -> rankkit.judges.base",
        "rankkit.strategies.knockout -> rankkit.judges",
    ]
    assert architecture.upward_imports(architecture.import_graph(mods, scope="runtime")) == [
        "rankkit.strategies.matches -> rankkit.strategies",
        "rankkit.strategies.matches -> rankkit.strategies.knockout",
        "rankkit.strategies.knockout -> rankkit.judges",
    ]
    assert list(nx.simple_cycles(everywhere)) == []  # no two modules import each other...
    assert architecture.circles(architecture.package_graph(everywhere)) == [
        ["rankkit.judges", "rankkit.judgments.memo"]
    ]


def test_floors_cover_packages_and_measure_earlier_releases_under_current_names():
    floors = [label for label, _ in architecture.FLOORS]
    assert architecture.floor_of("rankkit.judges.llm.judge") == floors.index("judges")
    assert architecture.floor_of("rankkit.prompts.kway") == floors.index("prompts")
    assert architecture.floor_of("rankkit") == floors.index("front ends")
    assert architecture.floor_of("rankkit.judgments.dispatch") == floors.index("runner, api")
    for former, current in architecture.FORMER_NAMES.items():  # 0.2's engine.py is 0.3's dispatch.py
        assert architecture.floor_of(f"rankkit.{former}") == architecture.floor_of(f"rankkit.{current}")
    assert architecture.floor_of("rankkit.nowhere") is None
