"""Choosing a template per task and kind: the rule by domain, language and reference, or ``template=``.

Translation tasks (``meta.domain`` mentions "translat") get the MT prompts; German tasks
(``meta.language`` "de") the German prompts; non-exam domains the generic prompts; everything
else the English exam prompts. Each has a ``-ref`` variant for tasks with a reference answer.
The ``checklist`` family (never chosen by ``auto``) shows the task's reference and checklist.
"""

from __future__ import annotations

from rankkit.data.tasks import Task
from rankkit.prompts.templates import (
    FAMILIES,
    KINDS,
    Template,
    TemplateError,
    builtin_templates,
    load_template,
)


def is_translation(task: Task) -> bool:
    """Whether the task's ``meta['domain']`` contains ``translat``."""
    return "translat" in str(task.meta.get("domain", "")).lower()


def is_german(task: Task) -> bool:
    """Whether the task's ``meta['language']`` is ``de``, ``ger``, ``deu``, ``german`` or ``deutsch``."""
    return str(task.meta.get("language", "")).lower() in {"de", "ger", "deu", "german", "deutsch"}


def is_exam(task: Task) -> bool:
    """Whether the task has no domain, or one naming exam, grading, university or school."""
    domain = str(task.meta.get("domain", "")).lower()
    return not domain or any(word in domain for word in ("exam", "grading", "university", "school"))


def auto_template_name(task: Task, kind: str, family: str = "auto") -> str:
    """The built-in template name a task gets (e.g. ``paper-pairwise-en-ref``), by the module's rule.

    ``family`` is ``auto``, ``paper``, ``generic``, ``mt`` or ``checklist``.

    Raises
    ------
    TemplateError
        For an unknown family.
    """
    ref = "-ref" if task.reference else ""
    if family == "auto":
        if is_translation(task):
            family = "mt"
        elif is_german(task) or is_exam(task):
            family = "paper"
        else:
            family = "generic"
    if family in ("mt", "checklist"):
        return f"{family}-{kind}"
    if family == "paper":
        return f"paper-{kind}-{'de' if is_german(task) else 'en'}{ref}"
    if family == "generic":
        return f"generic-{kind}{ref}"
    raise TemplateError(f"unknown template family {family!r} (known: {', '.join(FAMILIES)})")


def _family_names(family: str, kind: str) -> list[str]:
    names = builtin_templates()
    if family == "auto":
        prefixes = ("paper-", "generic-", "mt-")
    else:
        prefixes = (f"{family}-",)
    return sorted(n for n in names if n.startswith(prefixes) and names[n].kind == kind)


class TemplateChoice:
    """Which template a judge uses for each task and kind.

    ``spec`` is ``auto``, a family (``paper``, ``generic``, ``mt``: still picking language and
    reference variants), a built-in name or a template file; several join with ``+``
    (``my-pair.txt+my-point.txt``), a name or file replacing the choice for its own kind only.
    """

    def __init__(self, spec: str = "auto"):
        self.spec = spec or "auto"
        self.family = "auto"
        self.fixed: dict[str, Template] = {}
        for part in (p.strip() for p in self.spec.split("+")):
            if not part:
                continue
            if part in FAMILIES:
                self.family = part
                continue
            template = load_template(part)
            if template.kind in self.fixed:
                raise TemplateError(f"template={self.spec}: two {template.kind} templates given")
            self.fixed[template.kind] = template

    def template(self, task: Task, kind: str) -> Template:
        """The fixed template of ``kind``, else the built-in one the family's rule picks for ``task``."""
        if kind in self.fixed:
            return self.fixed[kind]
        return builtin_templates()[auto_template_name(task, kind, self.family)]

    def candidates(self, kind: str) -> list[Template]:
        """Every template this choice may return for ``kind`` (what the fingerprint covers), sorted by name."""
        if kind in self.fixed:
            return [self.fixed[kind]]
        return [builtin_templates()[n] for n in _family_names(self.family, kind)]

    def fingerprint(self) -> dict[str, dict[str, str]]:
        """``{kind: {template name: sha}}`` for every template that may be used."""
        return {kind: {t.name: t.sha for t in self.candidates(kind)} for kind in KINDS}
