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


def test_every_folder_and_top_level_module_is_a_stage_of_the_flow():
    """A new folder or top-level module of ``rankkit/`` (or of ``rankkit/judges/``) is given its
    place in ``benchmarks/architecture.py``'s STAGES or JUDGE_GROUPS, so the test below checks its
    imports too."""
    assert architecture.unplaced_entries(ROOT) == []
    assert architecture.without_floor(architecture.modules(ROOT)) == []


def test_the_package_shows_about_ten_entries_besides_api_cli_and_init():
    entries = {
        p.name.removesuffix(".py")
        for p in (ROOT / "rankkit").iterdir()
        if p.suffix == ".py" or (p / "__init__.py").exists()
    }
    others = entries - {"api", "cli", "__init__"}
    assert len(others) <= 11, sorted(others)
    assert not (ROOT / "rankkit" / "templates").exists() and not (ROOT / "rankkit" / "assets").exists()


def documented_modules(page: str) -> set[str]:
    """The module paths of the page's ``rankkit/`` tree (two spaces of indent per folder level)."""
    tree = page.split("```\nrankkit/\n", 1)[1].split("```", 1)[0]
    folders: list[str] = []
    paths = set()
    for line in tree.splitlines():
        indent = len(line) - len(line.lstrip(" "))
        name = line.split()[0] if line.strip() else ""
        if indent % 2 or not name.endswith(("/", ".py")) or indent // 2 > len(folders) + 1:
            continue  # a description's continuation line
        folders = folders[: indent // 2 - 1]
        if name.endswith("/"):
            folders.append(name)
        else:
            paths.add("".join(folders) + name)
    return paths


def test_docs_architecture_lists_every_module_and_no_other():
    """docs/architecture.md's module map is the package's tree, so the page cannot fall behind a move."""
    page = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    package = {p.relative_to(ROOT / "rankkit").as_posix() for p in (ROOT / "rankkit").rglob("*.py")}
    assert documented_modules(page) == package


def test_no_import_reaches_a_higher_floor_counting_lazy_and_type_checking_imports():
    graph = architecture.import_graph(architecture.modules(ROOT), scope="all")
    assert architecture.upward_imports(graph) == []


def test_the_core_is_every_module_below_the_strategies_the_memo_and_the_judgments_included():
    core = architecture.core_modules(architecture.modules(ROOT))
    assert {
        "rankkit.judgments.values",
        "rankkit.judgments.memo",
        "rankkit.judgments.cache",
        "rankkit.data.tasks",
        "rankkit.stats.intervals",
        "rankkit.prompts.kway",
    } <= core
    assert not any(name.startswith(("rankkit.strategies", "rankkit.judges", "rankkit.runs")) for name in core)
    assert {name.split(".")[1] for name in core} == set(architecture.CORE)


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
            "judgments/__init__.py": '"""Judgments."""\n',
            "judgments/memo.py": '"""Memo."""\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n'
            "    from rankkit.judges.base import Judge\n",
            "prompts/__init__.py": '"""Prompts."""\n',
            "prompts/render.py": '"""Render."""\ndef ask():\n    from rankkit.strategies import knockout\n',
            "judges/__init__.py": '"""Judges."""\n',
            "judges/base.py": '"""Base."""\nclass Judge:\n    pass\n',
            "judges/llm/__init__.py": '"""LLM."""\n',
            "judges/llm/judge.py": '"""LLM."""\nfrom rankkit.judgments.memo import x\n',
            "judges/local/__init__.py": '"""Local."""\n',
            "judges/local/hf.py": '"""HF."""\nfrom rankkit.judges.llm import judge\n',
            "judges/llm/modes.py": '"""Modes."""\nfrom rankkit.judges.local import hf\n',
            "strategies/__init__.py": '"""Strategies."""\n',
            "strategies/knockout.py": '"""Knockout."""\nimport rankkit.judges\n',
        },
    )
    mods = architecture.modules(tmp_path)
    everywhere = architecture.import_graph(mods, scope="all")
    assert architecture.upward_imports(everywhere) == [
        "rankkit.judges.llm.modes -> rankkit.judges.local",
        "rankkit.judges.llm.modes -> rankkit.judges.local.hf",
        "rankkit.judgments.memo -> rankkit.judges.base",
        "rankkit.prompts.render -> rankkit.strategies",
        "rankkit.prompts.render -> rankkit.strategies.knockout",
        "rankkit.strategies.knockout -> rankkit.judges",
    ]
    assert architecture.upward_imports(architecture.import_graph(mods, scope="runtime")) == [
        "rankkit.judges.llm.modes -> rankkit.judges.local",
        "rankkit.judges.llm.modes -> rankkit.judges.local.hf",
        "rankkit.prompts.render -> rankkit.strategies",
        "rankkit.prompts.render -> rankkit.strategies.knockout",
        "rankkit.strategies.knockout -> rankkit.judges",
    ]
    assert architecture.circles(architecture.package_graph(everywhere)) == [["rankkit.judges", "rankkit.judgments"]]


def test_a_new_folder_or_module_is_unplaced_until_given_a_stage(tmp_path):
    fake_package(
        tmp_path,
        {
            "__init__.py": '"""Package."""\n',
            "errors.py": '"""Errors."""\n',
            "helpers.py": '"""Helpers."""\n',
            "judges/__init__.py": '"""Judges."""\n',
            "judges/base.py": '"""Base."""\n',
            "judges/extra/__init__.py": '"""Extra."""\n',
            "data/__init__.py": '"""Data."""\n',
        },
    )
    assert architecture.unplaced_entries(tmp_path) == ["helpers", "judges.extra"]


def test_floors_follow_the_folders_and_measure_earlier_releases_under_current_names():
    floors = [names for _, names in architecture.FLOORS]
    judges = [names for _, names in architecture.JUDGE_GROUPS]
    assert architecture.floor_of("rankkit.judges.llm.judge") == floors.index(judges[1])
    assert architecture.floor_of("rankkit.judges.local.hf") == floors.index(judges[2])
    assert architecture.floor_of("rankkit.judges.composite.panel") == floors.index(judges[3])
    assert architecture.floor_of("rankkit.prompts.kway") == floors.index(("prompts",))
    assert architecture.floor_of("rankkit") == len(floors) - 1
    assert architecture.floor_of("rankkit.judgments.dispatch") == floors.index(("judgments",))
    assert architecture.floor_of("rankkit.runs.plan.dry_run") == floors.index(("runs",))
    for former, current in architecture.FORMER_NAMES.items():  # 0.3's tasks.py is 0.4's data/tasks.py
        assert architecture.floor_of(f"rankkit.{former}") == architecture.floor_of(f"rankkit.{current}")
    assert architecture.floor_of("rankkit.nowhere") is None
