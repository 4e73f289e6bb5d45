"""The API reference says what the signatures say.

mkdocstrings renders each ``::: module`` line of ``docs/api/*.md`` from the module's docstrings and
signatures. A numpy ``Parameters`` entry that groups names (``judge, cache, seed:``) is split by
griffe into one entry per name, each given the *first* name's type, so the reference showed
``seed`` as ``str | Judge | None = None`` where the signature says ``int = 0``. These tests load
every documented module with griffe (the library mkdocstrings uses) and check each entry: one
name per entry, a name the signature has, and no type or default that contradicts the signature.
"""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

griffe = pytest.importorskip("griffe")

ROOT = Path(__file__).resolve().parents[1]
DIRECTIVE = re.compile(r"^:::\s+([\w.]+)\s*$", re.MULTILINE)
SECTION_RULE = re.compile(r"^\s*-{3,}\s*$")
# A numpy entry line: ``name``, ``name : type`` or ``name: text`` at the section's indentation.
ENTRY = re.compile(r"^(?P<names>\*{0,2}[A-Za-z_][\w]*(?:\s*,\s*\*{0,2}[A-Za-z_]\w*)*)\s*(?::(?P<spec>.*))?$")
DEFAULT = re.compile(r"(?:^|,)\s*default(?:\s*[=:]\s*|\s+)(?P<value>.+?)\s*$")


@dataclass(frozen=True)
class Entry:
    """One line of a docstring's ``Parameters`` section that names parameters."""

    names: tuple[str, ...]
    spec: str  # the text after the colon ('' when none): a numpy type, or a description in ``name:`` style
    spaced: bool  # ``name : type`` (numpy type field) rather than ``name:`` (description follows)


def documented_modules() -> list[str]:
    """The modules named by a ``::: module`` line in ``docs/api/*.md``."""
    names = []
    for page in sorted((ROOT / "docs" / "api").glob("*.md")):
        names += DIRECTIVE.findall(page.read_text(encoding="utf-8"))
    return names


def parameter_entries(docstring: str) -> list[Entry]:
    """The entries of the docstring's ``Parameters`` and ``Other Parameters`` sections."""
    lines = docstring.expandtabs().splitlines()
    entries: list[Entry] = []
    index = 0
    while index < len(lines) - 1:
        title = lines[index].strip()
        if title in ("Parameters", "Other Parameters") and SECTION_RULE.match(lines[index + 1]):
            indent = len(lines[index]) - len(lines[index].lstrip())
            index += 2
            while index < len(lines):
                line = lines[index]
                if line.strip() and len(line) - len(line.lstrip()) <= indent:
                    if index + 1 < len(lines) and SECTION_RULE.match(lines[index + 1]):
                        break  # the next section
                    if len(line) - len(line.lstrip()) < indent:
                        break
                    match = ENTRY.match(line.strip())
                    if match:
                        names = tuple(n.strip().lstrip("*") for n in match.group("names").split(","))
                        spec = (match.group("spec") or "").strip()
                        spaced = bool(re.match(r"^\*{0,2}[\w, *]*?\s:", line.strip()))
                        entries.append(Entry(names, spec, spaced))
                index += 1
            continue
        index += 1
    return entries


def normalized(text: str) -> str:
    """A type or default in one spelling: no spaces, one quote style, ``X or Y`` as ``X | Y``, ``np.``."""
    text = re.sub(r"\s+or\s+", " | ", str(text))
    text = re.sub(r"\bnumpy\.", "np.", text)
    return re.sub(r"\s+", "", text).replace('"', "'")


def same_type(stated: str, annotation: object) -> bool:
    """Whether a docstring's type says what the annotation says (a bare generic may leave out its arguments)."""
    stated, annotated = normalized(stated), normalized(annotation)
    return annotated in ("Any", stated) or stated == annotated.split("[", 1)[0]


@functools.cache
def loaded_package(name: str) -> griffe.Module:
    """The top-level package, loaded with griffe once per process.

    ``griffe.load("rankkit.judgments.memo")`` reads the whole ``rankkit`` package to return one module, so
    every documented module reads the same package: loading it once keeps this file fast.
    """
    return griffe.load(name, search_paths=[str(ROOT)], docstring_parser="numpy")


def documented_objects(module_name: str) -> list[griffe.Object]:
    """The functions, methods and classes defined in the module (a package: in its modules too).

    Private ones are included: the reference renders a package's exports from its submodules, and
    a helper's docstring is read by the next contributor the same way.
    """
    package_name, _, inner_path = module_name.partition(".")
    package = loaded_package(package_name)
    module = package[inner_path] if inner_path else package
    found: list[griffe.Object] = []

    def visit(obj: griffe.Object) -> None:
        for member in obj.members.values():
            if member.is_alias:
                continue
            if member.is_function or member.is_class:
                found.append(member)
            if member.is_class or member.is_module:
                visit(member)

    visit(module)
    return found


def signature_parameters(obj: griffe.Object) -> dict[str, griffe.Parameter]:
    """The parameters a docstring's entries are checked against (a class: its ``__init__``'s)."""
    if obj.is_class:
        try:
            parameters = obj.parameters
        except Exception:  # griffe could not work the constructor out
            return {}
    else:
        parameters = obj.parameters
    bound = obj.is_class or (obj.parent is not None and obj.parent.is_class)
    return {p.name: p for p in parameters if not (bound and p.name in ("self", "cls"))}


def mismatches(obj: griffe.Object) -> list[str]:
    """What the object's ``Parameters`` entries say that its signature contradicts, one line each."""
    if obj.docstring is None:
        return []
    where = f"{obj.path} ({obj.relative_filepath}:{obj.docstring.lineno})"
    parameters = signature_parameters(obj)
    problems = []
    for entry in parameter_entries(obj.docstring.value):
        if len(entry.names) > 1 and not (entry.spaced and entry.spec):
            # griffe gives every name of an untyped group the first name's annotation and default
            problems.append(f"{where}: entry groups {', '.join(entry.names)} without a type")
        for name in entry.names:
            parameter = parameters.get(name)
            if parameter is None:
                if parameters or not obj.is_class:
                    problems.append(f"{where}: {name} is not in the signature")
                continue
            if not entry.spaced or not entry.spec:
                continue  # ``name:`` style: the text is a description, the type comes from the signature
            type_text = DEFAULT.sub("", entry.spec).replace(", optional", "").strip(" ,")
            if type_text and parameter.annotation is not None and not same_type(type_text, parameter.annotation):
                problems.append(f"{where}: {name} documented as {type_text!r}, annotated {parameter.annotation}")
            default = DEFAULT.search(entry.spec)
            if default and parameter.default is not None:
                if normalized(default.group("value")) != normalized(parameter.default):
                    problems.append(
                        f"{where}: {name} default documented as {default.group('value')!r}, is {parameter.default}"
                    )
    return problems


def test_the_reference_documents_modules():
    assert len(documented_modules()) >= 18


def test_entry_parsing_finds_grouped_typed_and_defaulted_entries():
    text = """Summary.

    Parameters
    ----------
    judge, cache, seed:
        As in rank.
    workers : bool
        Spread.
    depth : int, default 3
        How deep.
    data:
        A description: with a colon.

    Returns
    -------
    int
        Not a parameter.
    """
    entries = parameter_entries(text)
    assert [e.names for e in entries] == [("judge", "cache", "seed"), ("workers",), ("depth",), ("data",)]
    assert [e.spaced for e in entries] == [False, True, True, False]
    assert DEFAULT.search(entries[2].spec).group("value") == "3"


@pytest.mark.parametrize("module_name", documented_modules())
def test_documented_parameters_match_the_signature(module_name):
    problems = [problem for obj in documented_objects(module_name) for problem in mismatches(obj)]
    assert not problems, "\n".join(problems)


def test_mismatches_flags_a_wrong_type_a_wrong_default_an_unknown_name_and_an_untyped_group(tmp_path):
    (tmp_path / "fake_reference.py").write_text(
        '''
def run(judge: str | None = None, seed: int = 0, workers: int | None = None) -> None:
    """Run.

    Parameters
    ----------
    judge, seed:
        As elsewhere.
    workers : bool, default 4
        Spread.
    speed : float
        Not a parameter.
    """


def right(judge: str | None = None, seed: int = 0) -> None:
    """Right.

    Parameters
    ----------
    judge : str or None, default None
        The judge.
    seed
        The seed.
    """
'''
    )
    module = griffe.load("fake_reference", search_paths=[str(tmp_path)], docstring_parser="numpy")
    problems = mismatches(module["run"])
    assert any("groups judge, seed" in p for p in problems)
    assert any("workers documented as 'bool'" in p for p in problems)
    assert any("workers default documented as '4'" in p for p in problems)
    assert any("speed is not in the signature" in p for p in problems)
    assert len(problems) == 4
    assert mismatches(module["right"]) == []
