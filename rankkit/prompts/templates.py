"""Prompt templates: the file format, the built-in files, and loading a template by name or path.

More in ``docs/prompts.md``.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Any

from rankkit.data.specs import SpecError

#: The built-in template files, shipped in ``rankkit/prompts/builtin/``.
TEMPLATE_DIR = Path(__file__).parent / "builtin"

POINTWISE = "pointwise"
PAIRWISE = "pairwise"
KINDS = (POINTWISE, PAIRWISE)

#: Named fields a template may use.
FIELDS = (
    "question",
    "answer",
    "answer_1",
    "answer_2",
    "reference",
    "checklist",
    "max_points",
    "source",
    "analysis_1",
    "analysis_2",
)  # analyses: PREPAIR decision prompts (rankkit.judges.llm.prepair)

#: Template families ``template=`` accepts besides template names and files.
FAMILIES = ("auto", "paper", "generic", "mt", "checklist")


class TemplateError(SpecError):
    """A template file that cannot be used; the message names the file and the problem."""


@dataclass(frozen=True)
class Template:
    """One prompt template.

    Parameters
    ----------
    name
        The template's name.
    version
        Its version.
    language
        The prompt's language.
    source
        Where its wording comes from.
    kind
        ``pointwise`` (one answer, one score) or ``pairwise`` (two answers, two scores).
    text
        The prompt with ``{field}`` placeholders.
    max_points
        A fixed top of the scale (MT prompts grade 0-100); None means "from the task".
    score_prefix
        What the reply starts with before a pointwise score (logprob mode).
    choice_prefix
        What precedes the choice token "1"/"2" in a pairwise reply (logprob mode); its last word
        is the slot label (``Answer``, ``Antwort``, ``Translation``).
    verdict_prefix
        Appended after a generated explanation before reading the verdict's score tokens (generate mode).
    file_text
        The whole file, header included; its hash is the template's identity.
    """

    name: str
    kind: str
    text: str
    version: str = "1"
    language: str = "en"
    source: str = ""
    max_points: float | None = None
    score_prefix: str = "Score:"
    choice_prefix: str = "The better answer is Answer"
    verdict_prefix: str = "Final verdict:"
    file_text: str = ""
    path: str | None = None

    @property
    def sha(self) -> str:
        """First 16 hex digits of the SHA-256 of the file text (the template's identity)."""
        return hashlib.sha256((self.file_text or self.text).encode("utf-8")).hexdigest()[:16]

    @property
    def slot_label(self) -> str:
        """The word a verdict names a slot by: the last word of :attr:`choice_prefix`."""
        return self.choice_prefix.split()[-1]

    @property
    def fields(self) -> set[str]:
        return set(_PLACEHOLDER.findall(self.text))

    def render(self, values: Mapping[str, str]) -> str:
        """Fill every ``{field}``; values are inserted literally, never re-parsed.

        Raises
        ------
        TemplateError
            When a field has no value.
        """
        missing = self.fields - set(values)
        if missing:
            raise TemplateError(f"template {self.name!r}: no value for {', '.join(sorted(missing))}")
        return _PLACEHOLDER.sub(lambda m: values[m.group(1)], self.text)


_PLACEHOLDER = re.compile(r"\{(" + "|".join(FIELDS) + r")\}")
_ANY_PLACEHOLDER = re.compile(r"\{([A-Za-z_][A-Za-z0-9_ ]*)\}")
_HEADER_KEYS = {
    "name",
    "version",
    "kind",
    "language",
    "source",
    "max_points",
    "score_prefix",
    "choice_prefix",
    "verdict_prefix",
}


def parse_template(file_text: str, *, where: str, default_name: str = "custom") -> Template:
    """Read a template from its file text (optional ``---`` header, then the prompt).

    ``where`` names the file in errors and becomes the template's ``path``; ``default_name`` is used
    when the header gives none; the kind comes from the header, else from the fields.

    Raises
    ------
    TemplateError
        For an unclosed or unknown header line, unknown or missing fields, a bad kind or ``max_points``.
    """
    header: dict[str, str] = {}
    body = file_text
    if file_text.startswith("---"):
        lines = file_text.split("\n")
        try:
            end = next(i for i, line in enumerate(lines[1:], start=1) if line.strip() == "---")
        except StopIteration:
            raise TemplateError(f"{where}: header opened with '---' but never closed") from None
        for number, line in enumerate(lines[1:end], start=2):
            if not line.strip() or line.lstrip().startswith("#"):
                continue
            key, colon, value = line.partition(":")
            key = key.strip()
            if not colon or key not in _HEADER_KEYS:
                raise TemplateError(
                    f"{where}:{number}: unknown header line {line!r} (known keys: {', '.join(sorted(_HEADER_KEYS))})"
                )
            header[key] = value.strip()
        body = "\n".join(lines[end + 1 :])
    body = body.strip("\n")
    unknown = sorted({name for name in _ANY_PLACEHOLDER.findall(body) if name not in FIELDS})
    if unknown:
        raise TemplateError(
            f"{where}: unknown field(s) {', '.join('{' + n + '}' for n in unknown)} "
            f"(known: {', '.join('{' + f + '}' for f in FIELDS)})"
        )
    fields = set(_PLACEHOLDER.findall(body))
    kind = header.get("kind") or (PAIRWISE if {"answer_1", "answer_2"} & fields else POINTWISE)
    if kind not in KINDS:
        raise TemplateError(f"{where}: kind must be pointwise or pairwise, got {kind!r}")
    needed = {"answer_1", "answer_2"} if kind == PAIRWISE else {"answer"}
    if not needed <= fields:
        raise TemplateError(f"{where}: a {kind} template needs {', '.join('{' + f + '}' for f in sorted(needed))}")
    max_points = None
    if header.get("max_points"):
        try:
            max_points = float(header["max_points"])
        except ValueError:
            raise TemplateError(f"{where}: max_points must be a number, got {header['max_points']!r}") from None
    language = header.get("language", "en")
    german = language.lower().startswith("de")
    return Template(
        name=header.get("name") or default_name,
        kind=kind,
        text=body,
        version=header.get("version", "1"),
        language=language,
        source=header.get("source", ""),
        max_points=max_points,
        score_prefix=header.get("score_prefix") or ("Punktzahl:" if german else "Score:"),
        choice_prefix=header.get("choice_prefix")
        or ("Die bessere Antwort ist Antwort" if german else "The better answer is Answer"),
        verdict_prefix=header.get("verdict_prefix") or ("Endgültiges Urteil:" if german else "Final verdict:"),
        file_text=file_text,
        path=where,
    )


def load_template_dir(directory: Path) -> dict[str, Template]:
    """Every ``*.txt`` template in ``directory``, by name, in file-name order."""
    templates = {}
    for path in sorted(directory.glob("*.txt")):
        template = parse_template(path.read_text(encoding="utf-8"), where=str(path), default_name=path.stem)
        templates[template.name] = template
    return templates


@cache
def builtin_templates() -> dict[str, Template]:
    """Every template shipped in ``rankkit/prompts/builtin``, by name (read once, then cached)."""
    return load_template_dir(TEMPLATE_DIR)


def load_template(name_or_path: str) -> Template:
    """A built-in template by name, or a user template file by path (``~`` expanded).

    Raises
    ------
    TemplateError
        When it is neither, or the file is not a valid template.
    """
    builtins = builtin_templates()
    if name_or_path in builtins:
        return builtins[name_or_path]
    path = Path(name_or_path).expanduser()
    if not path.is_file():
        raise TemplateError(
            f"template {name_or_path!r} is neither a file nor a built-in template "
            f"(built-in: {', '.join(builtins)}; families: {', '.join(FAMILIES)})"
        )
    return parse_template(path.read_text(encoding="utf-8"), where=str(path), default_name=path.stem)


def describe_templates() -> list[dict[str, Any]]:
    """Name, kind, language and source of every built-in template (for docs and listings)."""
    return [
        {
            "name": t.name,
            "kind": t.kind,
            "language": t.language,
            "version": t.version,
            "max_points": t.max_points,
            "source": t.source,
        }
        for t in builtin_templates().values()
    ]
