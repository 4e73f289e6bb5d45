"""PREPAIR: pointwise reasoning inside a pairwise decision (The Comparative Trap, figures 2 and 7).

Each answer is analysed on its own (once, cached), then a pairwise decision prompt holds both
answers and both analyses. More in ``docs/judges-llm.md``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from typing import Any

from rankkit.judges.base import add_usage, content_key
from rankkit.prompts import (
    TEMPLATE_DIR,
    Template,
    defuse,
    load_template_dir,
    task_values,
)
from rankkit.tasks import Candidate, Task

#: Bump when what an analysis is changes (how it is generated or stored).
ANALYSIS_VERSION = "1"
#: Cache ``kind`` of stored analyses.
ANALYSIS_KIND = "prepair-analysis"
PREPAIR_TEMPLATE_DIR = TEMPLATE_DIR / "prepair"
#: Shown in the decision prompt when the judge wrote nothing for an answer.
EMPTY_ANALYSIS = "(no explanation was written)"


@cache
def prepair_templates() -> dict[str, Template]:
    """The PREPAIR templates shipped in ``rankkit/templates/prepair``, by name."""
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
    values["answer"] = defuse_all(candidate.text)
    return template, template.render(values)


def render_decision(
    task: Task, first: Candidate, second: Candidate, first_analysis: str, second_analysis: str, max_points: float
) -> tuple[Template, str]:
    """The decision prompt ``(template, text)``: ``first`` as answer 1, ``second`` as answer 2, with their analyses."""
    template = decision_template(task)
    values = task_values(task, max_points)
    values.update(
        answer_1=defuse_all(first.text),
        answer_2=defuse_all(second.text),
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


#: Generates analyses: takes conversations, yields ``(index, Generation)`` (a runtime's ``generate``
#: with decoding already bound).
Generate = Callable[[Sequence[list[dict[str, str]]]], Iterator[tuple[int, Any]]]


class AnalysisStore:
    """Looks analyses up in memory, then in the run's cache, and generates the rest in one batch.

    ``fingerprint`` is a function giving :func:`analysis_fingerprint`, called on first lookup so
    building a judge asks its runtime nothing. Analyses are looked up through ``judge``'s memo, so
    they are cached like judgments. ``stats`` counts ``generated``, ``cache_hits`` and ``memo_hits``.
    """

    def __init__(self, fingerprint: Callable[[], str], generate: Generate, judge: Any):
        self.fingerprint = fingerprint
        self.generate = generate
        self.judge = judge
        self.memo: dict[str, str] = {}
        self.stats = {"generated": 0, "memo_hits": 0, "cache_hits": 0}

    @staticmethod
    def _key(task: Task, candidate: Candidate) -> str:
        return json.dumps(analysis_parts(task, candidate), ensure_ascii=False)

    def text(self, task: Task, candidate: Candidate) -> str:
        """The analysis of an answer that :meth:`ensure` has already produced."""
        return self.memo[self._key(task, candidate)]

    def ensure(self, answers: Sequence[tuple[Task, Candidate]]) -> dict[str, Analysis]:
        """Make sure every ``(task, answer)`` has an analysis; the ones generated now, by memo key (the rest were reused)."""
        from rankkit.memo import Origin, memo_of

        missing: dict[str, tuple[Task, Candidate]] = {}
        for task, candidate in answers:
            key = self._key(task, candidate)
            if key in missing:
                continue
            if key in self.memo:
                self.stats["memo_hits"] += 1
                continue
            missing[key] = (task, candidate)
        if not missing:
            return {}
        keys = list(missing)

        def ask(indices: list[int]) -> Iterator[tuple[int, Analysis]]:
            conversations = [[{"role": "user", "content": render_analysis(*missing[keys[i]])[1]}] for i in indices]
            for index, generation in self.generate(conversations):
                yield index, Analysis(generation.text, dict(generation.usage))

        found = memo_of(self.judge).fetch(
            self.fingerprint(),
            ANALYSIS_KIND,
            [analysis_parts(*missing[k]) for k in keys],
            ask,
            lambda payload: Analysis(payload["text"]),
            Analysis.to_dict,
        )
        fresh: dict[str, Analysis] = {}
        for key, (analysis, origin) in zip(keys, found):
            self.memo[key] = analysis.text
            if origin is Origin.JUDGE:
                self.stats["generated"] += 1
                fresh[key] = analysis
            else:
                self.stats["cache_hits"] += 1
        return fresh

    def charges(
        self, requests: Sequence[tuple[Task, Candidate, Candidate]], fresh: Mapping[str, Analysis]
    ) -> list[dict[str, int]]:
        """Per request, the usage of the ``fresh`` analyses it is the first to use (each charged once)."""
        charged: set[str] = set()
        out = []
        for task, first, second in requests:
            usage: dict[str, int] = {}
            for candidate in (first, second):
                key = self._key(task, candidate)
                if key in fresh and key not in charged:
                    charged.add(key)
                    usage["analyses"] = usage.get("analyses", 0) + 1
                    add_usage(usage, fresh[key].usage)
            out.append(usage)
        return out
