"""PREPAIR: pointwise reasoning inside a pairwise decision (The Comparative Trap, figure 2 and figure 7).

The templates and helpers of ``prepair=true``: an analysis of each answer on its own, generated
once per answer and cached, then a pairwise decision prompt holding both answers and both analyses.

More in ``docs/judges-llm.md``.
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
    """The PREPAIR templates shipped in ``rankkit/templates/prepair``, by name.

    Returns
    -------
    dict[str, Template]
        The templates, by name.
    """
    return load_template_dir(PREPAIR_TEMPLATE_DIR)


def analysis_template(task: Task) -> Template:
    """The pointwise analysis prompt for ``task`` (the ``-ref`` variant when it has a reference).

    Parameters
    ----------
    task : Task
        The task: prompt, reference, grading scale and metadata.

    Returns
    -------
    Template
        The template.
    """
    return prepair_templates()["prepair-analysis-ref" if task.reference else "prepair-analysis"]


def decision_template(task: Task) -> Template:
    """The pairwise decision prompt for ``task`` (the ``-ref`` variant when it has a reference).

    Parameters
    ----------
    task : Task
        The task: prompt, reference, grading scale and metadata.

    Returns
    -------
    Template
        The template.
    """
    return prepair_templates()["prepair-pairwise-ref" if task.reference else "prepair-pairwise"]


def templates_fingerprint() -> dict[str, str]:
    """``{template name: sha}`` of every PREPAIR template (what the judge fingerprint covers).

    Returns
    -------
    dict[str, str]
        The SHA of each template, by name.
    """
    return {name: template.sha for name, template in prepair_templates().items()}


_ANALYSIS_TAG = re.compile(r"<(\s*/?\s*)(analysis_1|analysis_2)(\s*)>", re.IGNORECASE)


def defuse_all(text: str) -> str:
    """:func:`rankkit.prompts.defuse` plus the analysis tags only the decision prompt uses, so
    neither an answer nor an analysis can close its box.

    Parameters
    ----------
    text : str
        An answer's or an analysis's text.

    Returns
    -------
    str
        The defused text.
    """
    return _ANALYSIS_TAG.sub(lambda m: f"‹{m.group(1)}{m.group(2)}{m.group(3)}›", defuse(text))


def render_analysis(task: Task, candidate: Candidate) -> tuple[Template, str]:
    """The analysis prompt for one answer: (template, text).

    Parameters
    ----------
    task : Task
        The task: prompt, reference, grading scale and metadata.
    candidate : Candidate
        The answer analysed.

    Returns
    -------
    tuple[Template, str]
        The template and the rendered prompt text.
    """
    template = analysis_template(task)
    values = task_values(task, 10.0)  # analysis prompts use no scale; the value is never shown
    values["answer"] = defuse_all(candidate.text)
    return template, template.render(values)


def render_decision(
    task: Task, first: Candidate, second: Candidate, first_analysis: str, second_analysis: str, max_points: float
) -> tuple[Template, str]:
    """The decision prompt with ``first`` as answer 1, ``second`` as answer 2 and their analyses.

    Parameters
    ----------
    task : Task
        The task: prompt, reference, grading scale and metadata.
    first : Candidate
        The candidate shown first.
    second : Candidate
        The candidate shown second.
    first_analysis : str
        The analysis of ``first``.
    second_analysis : str
        The analysis of ``second``.
    max_points : float
        The M the prompt shows.

    Returns
    -------
    tuple[Template, str]
        The template and the rendered prompt text.
    """
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

    It deliberately leaves out how the judge decides (mode, decision template, calibration), so
    judges that share a model and analysis decoding share analyses.

    Parameters
    ----------
    model : Mapping[str, Any]
        The model's identity.
    max_new_tokens : int
        The most tokens an analysis generates.
    temperature : float
        The analyses' sampling temperature.
    seed : int
        The analyses' sampling seed.

    Returns
    -------
    str
        The fingerprint.
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
    """What an analysis depends on (the cache key's content part): the judge's view of the task
    and the one answer.

    Parameters
    ----------
    task : Task
        The task: prompt, reference, grading scale and metadata.
    candidate : Candidate
        The answer analysed.

    Returns
    -------
    list[str | None]
        The content part of the cache key.
    """
    return content_key(task, candidate)


@dataclass(frozen=True)
class Analysis:
    """One answer's analysis: the generated text and what generating it cost (empty if reused)."""

    text: str
    usage: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The analysis as a JSON-ready mapping (how the memo stores it).

        Returns
        -------
        dict[str, Any]
            ``text`` and ``usage``.
        """
        return {"text": self.text, "usage": dict(self.usage)}


#: Generates analyses: takes conversations, yields ``(index, Generation)`` (a runtime's ``generate``
#: with decoding already bound).
Generate = Callable[[Sequence[list[dict[str, str]]]], Iterator[tuple[int, Any]]]


class AnalysisStore:
    """Looks analyses up in memory, then in the run's cache, and generates the rest in one batch.

    fingerprint: gives :func:`analysis_fingerprint` of the judge (the cache key's first part); a
        function, called when analyses are first looked up, so building a judge asks its runtime
        nothing.
    generate: how to generate replies to a batch of conversations.
    judge: the judge the analyses are for; they are looked up through its ``memo`` (the run's
        :class:`~rankkit.memo.JudgmentMemo` once bound), so they are cached like judgments.

    ``stats`` counts ``generated`` analyses, ``cache_hits`` and ``memo_hits`` (lookups answered
    from memory; a compare batch looks each answer up twice: to charge it, then to build prompts).
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
        """The analysis of an answer that :meth:`ensure` has already produced.

        Parameters
        ----------
        task : Task
            The task: prompt, reference, grading scale and metadata.
        candidate : Candidate
            The answer analysed.

        Returns
        -------
        str
            The analysis text.
        """
        return self.memo[self._key(task, candidate)]

    def ensure(self, answers: Sequence[tuple[Task, Candidate]]) -> dict[str, Analysis]:
        """Make sure every (task, answer) has an analysis; returns the ones generated *now*
        (with their usage), keyed like the memo — everything else was reused.

        Parameters
        ----------
        answers : Sequence[tuple[Task, Candidate]]
            The ``(task, answer)`` pairs that need an analysis.

        Yields
        ------
        dict[str, Analysis]
            The analyses generated now, by memo key.
        """
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
        """Per request, the usage of the fresh analyses it is the first to use (charged once).

        Parameters
        ----------
        requests : Sequence[tuple[Task, Candidate, Candidate]]
            ``(task, first, second)`` requests.
        fresh : Mapping[str, Analysis]
            The analyses generated now, by memo key (:meth:`ensure`).

        Returns
        -------
        list[dict[str, int]]
            One usage mapping per request.
        """
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
