"""PREPAIR: pointwise reasoning inside a pairwise decision (The Comparative Trap, figures 2 and 7).

Each answer is analysed on its own (once, cached), then a pairwise decision prompt holds both
answers and both analyses. More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from rankkit.data.tasks import Candidate, Task
from rankkit.judges.base import Judge, add_usage, content_key
from rankkit.judgments.judge_protocol import Found, Needed
from rankkit.prompts import (
    TEMPLATE_DIR,
    Template,
    defuse,
    load_template_dir,
    render_text,
    task_values,
)

#: Bump when what an analysis is changes (how it is generated or stored).
ANALYSIS_VERSION = "1"
#: Cache ``kind`` of stored analyses.
ANALYSIS_KIND = "prepair-analysis"
PREPAIR_TEMPLATE_DIR = TEMPLATE_DIR / "prepair"
#: Shown in the decision prompt when the judge wrote nothing for an answer.
EMPTY_ANALYSIS = "(no explanation was written)"


@cache
def prepair_templates() -> dict[str, Template]:
    """The PREPAIR templates shipped in ``rankkit/prompts/builtin/prepair``, by name."""
    return load_template_dir(PREPAIR_TEMPLATE_DIR)


def analysis_template(task: Task) -> Template:
    """The pointwise analysis prompt for ``task`` (the ``-ref`` variant when it has a reference)."""
    return prepair_templates()["prepair-analysis-ref" if task.reference else "prepair-analysis"]


def decision_template(task: Task) -> Template:
    """The pairwise decision prompt for ``task`` (the ``-ref`` variant when it has a reference)."""
    return prepair_templates()["prepair-pairwise-ref" if task.reference else "prepair-pairwise"]


def templates_fingerprint() -> dict[str, str]:
    """``{template name: sha}`` of every PREPAIR template (what the judge fingerprint covers)."""
    return {name: template.sha for name, template in prepair_templates().items()}


_ANALYSIS_TAG = re.compile(r"<(\s*/?\s*)(analysis_1|analysis_2)(\s*)>", re.IGNORECASE)


def defuse_all(text: str) -> str:
    """:func:`rankkit.prompts.defuse` plus the analysis tags, so neither an answer nor an analysis can close its box."""
    return _ANALYSIS_TAG.sub(lambda m: f"‹{m.group(1)}{m.group(2)}{m.group(3)}›", defuse(text))


def render_analysis(task: Task, candidate: Candidate) -> tuple[Template, str]:
    """The analysis prompt for one answer: ``(template, rendered text)``."""
    template = analysis_template(task)
    values = task_values(task, 10.0)  # analysis prompts use no scale; the value is never shown
    values["answer"] = render_text(candidate.text, defuse_all)
    return template, template.render(values)


def render_decision(
    task: Task, first: Candidate, second: Candidate, first_analysis: str, second_analysis: str, max_points: float
) -> tuple[Template, str]:
    """The decision prompt ``(template, text)``: ``first`` as answer 1, ``second`` as answer 2, with their analyses."""
    template = decision_template(task)
    values = task_values(task, max_points)
    values.update(
        answer_1=render_text(first.text, defuse_all),
        answer_2=render_text(second.text, defuse_all),
        analysis_1=defuse_all(first_analysis.strip() or EMPTY_ANALYSIS),
        analysis_2=defuse_all(second_analysis.strip() or EMPTY_ANALYSIS),
    )
    return template, template.render(values)


def analysis_fingerprint(model: Mapping[str, Any], max_new_tokens: int, temperature: float, seed: int) -> str:
    """The identity of an analysis generator: model, analysis prompts, decoding, version.

    It leaves out how the judge decides (mode, decision template, calibration), so judges sharing a
    model and analysis decoding share analyses.
    """
    import json

    fields = {
        "model": dict(model),
        "analysis_templates": {n: t.sha for n, t in prepair_templates().items() if t.kind == "pointwise"},
        "max_new_tokens": max_new_tokens,
        "temperature": temperature,
        "seed": seed,
        "version": ANALYSIS_VERSION,
    }
    return json.dumps(fields, sort_keys=True, separators=(",", ":"), default=str)


def analysis_parts(task: Task, candidate: Candidate) -> list[str | None]:
    """The cache key's content part of an analysis: the judge's view of the task and the one answer."""
    return content_key(task, candidate)


@dataclass(frozen=True)
class Analysis:
    """One answer's analysis: the generated text and what generating it cost (empty if reused)."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The analysis as a JSON-ready mapping, ``text`` and ``usage`` (how the memo stores it)."""
        return {"text": self.text, "usage": dict(self.usage)}

    @classmethod
    def from_dict(cls, payload: Mapping[str, Any]) -> Analysis:
        """A stored analysis: its text; reusing it costs nothing, so no usage."""
        return cls(payload["text"])


#: Generates analyses: takes conversations, yields ``(index, Generation)`` (a runtime's ``generate``
#: with decoding already bound).
Generate = Callable[[Sequence[list[dict[str, str]]]], Iterator[tuple[int, Any]]]


class Analyser(Judge):
    """PREPAIR's analyses as judgments of their own: one per ``(task, answer)``, cached (kind
    :data:`ANALYSIS_KIND`) under :func:`analysis_fingerprint`, which a PREPAIR judge :meth:`needs`.

    ``fingerprint`` is a function giving :func:`analysis_fingerprint`, called on first lookup so
    building a judge asks its runtime nothing. ``stats["generated"]`` counts the analyses generated.
    """

    def __init__(self, fingerprint: Callable[[], str], generate: Generate):
        self._fingerprint = fingerprint
        self.generate = generate
        self.stats = {"generated": 0}

    @property
    def fingerprint(self) -> str:
        return self._fingerprint()

    def needed(self, requests: Sequence[tuple[Task, Candidate, Candidate]]) -> Needed:
        """The analyses of both answers of every comparison (answers as shown), first then second."""
        answers = [(task, candidate) for task, first, second in requests for candidate in (first, second)]
        return Needed(self, ANALYSIS_KIND, answers, Analysis)

    def answer(self, kind: str, requests: Sequence[Any], found: Found) -> Iterator[tuple[int, Analysis]]:
        """Generate the analysis of each ``(task, answer)`` request, in one batch."""
        conversations = [[{"role": "user", "content": render_analysis(task, answer)[1]}] for task, answer in requests]
        for index, generation in self.generate(conversations):
            self.stats["generated"] += 1
            yield index, Analysis(generation.text, dict(generation.usage))


def analyses_of(found: Sequence[tuple[Analysis, bool]]) -> list[tuple[str, str]]:
    """Per comparison, the texts of its two answers' analyses (``found`` as :meth:`Analyser.needed` orders it)."""
    return [(found[i][0].text, found[i + 1][0].text) for i in range(0, len(found), 2)]


def analysis_charges(found: Sequence[tuple[Analysis, bool]]) -> list[dict[str, int]]:
    """Per comparison, the usage of the analyses generated for it (each charged once: to the first that used it)."""
    out = []
    for i in range(0, len(found), 2):
        usage: dict[str, int] = {}
        for analysis, fresh in found[i : i + 2]:
            if fresh:
                usage["analyses"] = usage.get("analyses", 0) + 1
                add_usage(usage, analysis.usage)
        out.append(usage)
    return out
