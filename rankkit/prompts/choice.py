"""Choosing a template per task and kind: the rule by domain, language and reference, or ``template=``.

:class:`TemplateChoice` picks a template per task and kind (pointwise/pairwise):
translation tasks (``meta.domain`` mentions "translat") get the MT prompts of the thesis; German
tasks (``meta.language`` "de") the paper's German prompts; tasks with a ``meta.domain`` that is not
an exam get the generic prompts; everything else the paper's English exam prompts. Each has a
``-ref`` variant used when the task has a reference answer. ``template=`` overrides this.
"""

from __future__ import annotations

from rankkit.prompts.templates import (
    FAMILIES,
    KINDS,
    Template,
    TemplateError,
    builtin_templates,
    load_template,
)
from rankkit.tasks import Task


def is_translation(task: Task) -> bool:
    """Whether the task's ``meta['domain']`` says translation.

    Parameters
    ----------
    task : Task
        The task (its ``meta``).

    Returns
    -------
    bool
        True when the domain contains ``translat``.
    """
    return "translat" in str(task.meta.get("domain", "")).lower()


def is_german(task: Task) -> bool:
    """Whether the task's ``meta['language']`` is German.

    Parameters
    ----------
    task : Task
        The task (its ``meta``).

    Returns
    -------
    bool
        True for ``de``, ``ger``, ``deu``, ``german`` or ``deutsch``.
    """
    return str(task.meta.get("language", "")).lower() in {"de", "ger", "deu", "german", "deutsch"}


def is_exam(task: Task) -> bool:
    """No domain given (the bundled sample, user CSVs) or a domain that says exam/grading.

    Parameters
    ----------
    task : Task
        The task (its ``meta``).

    Returns
    -------
    bool
        True for no domain, or one naming exam, grading, university or school.
    """
    domain = str(task.meta.get("domain", "")).lower()
    return not domain or any(word in domain for word in ("exam", "grading", "university", "school"))


def auto_template_name(task: Task, kind: str, family: str = "auto") -> str:
    """The built-in template a task gets (see the module docstring for the rule).

    Parameters
    ----------
    task : Task
        The task (its domain, language and reference).
    kind : str
        The template kind (``pointwise``, ``pairwise``).
    family : str, default "auto"
        ``auto`` (chosen from the task), ``paper``, ``generic`` or ``mt``.

    Returns
    -------
    str
        The built-in template's name (``paper-pairwise-en-ref``).

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
    if family == "mt":
        return f"mt-{kind}"
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

    ``spec`` is ``auto`` (the rule above), a family (``paper``, ``generic``, ``mt``: that family,
    still picking language and reference variants), a built-in template name, or a template file;
    several may be joined with ``+`` (``my-pair.txt+my-point.txt``) — a name or file replaces the
    choice for its own kind only.
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
        """The template this choice uses for ``task`` and ``kind``.

        Parameters
        ----------
        task : Task
            The task.
        kind : str
            The template kind.

        Returns
        -------
        Template
            The fixed template of that kind, else the built-in one the family's rule picks.
        """
        if kind in self.fixed:
            return self.fixed[kind]
        return builtin_templates()[auto_template_name(task, kind, self.family)]

    def candidates(self, kind: str) -> list[Template]:
        """Every template this choice may return for ``kind`` (what the fingerprint covers).

        Parameters
        ----------
        kind : str
            The template kind.

        Returns
        -------
        list[Template]
            The fixed template, or the family's built-ins of that kind (sorted by name).
        """
        if kind in self.fixed:
            return [self.fixed[kind]]
        return [builtin_templates()[n] for n in _family_names(self.family, kind)]

    def fingerprint(self) -> dict[str, dict[str, str]]:
        """``{kind: {template name: sha}}`` for every template that may be used.

        Returns
        -------
        dict[str, dict[str, str]]
            Kind -> template name -> the template's sha.
        """
        return {kind: {t.name: t.sha for t in self.candidates(kind)} for kind in KINDS}
