"""Reading a verdict level (``[[A>>B]]`` ... ``[[B>>A]]``) from a judge: the instruction, the strict parser, the label probabilities.

A is the answer shown first (``Answer 1``), B the second. Levels and scales are in
:mod:`rankkit.judgments.levels`. Nothing a candidate writes is read as the judge's verdict: echoes
and verbatim copies of the candidates are removed first (:func:`~rankkit.prompts.verdicts.strip_echoes`),
and a label a candidate itself wrote in brackets is never taken from the judge's text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from rankkit.judgments.levels import label_level, scale_labels
from rankkit.prompts.verdicts import strip_echoes

#: What a continuation path appends before reading the label (the judge's own turn, never a candidate's).
LEVEL_PREFIX = "Final verdict: [["
_LABEL = re.compile(r"\[\[\s*([AB]\s*(?:>>|>|=)\s*[AB])\s*\]\]")


def level_instruction(scale: str) -> str:
    """The closing instruction of a pairwise prompt on ``scale`` (Answer 1 is A, Answer 2 is B).

    Examples
    --------
    >>> level_instruction("tie")
    'Answer 1 is A and Answer 2 is B. End with your final verdict as exactly one of: [[A>B]], [[A=B]], [[B>A]].'
    """
    labels = ", ".join(f"[[{label}]]" for label in scale_labels(scale))
    return f"Answer 1 is A and Answer 2 is B. End with your final verdict as exactly one of: {labels}."


@dataclass(frozen=True)
class ParsedLevel:
    """The level read from a judge's output, or why none could be read."""

    level: int | None
    error: str | None = None


def _labels_in(text: str) -> list[tuple[re.Match, str]]:
    return [(match, re.sub(r"\s+", "", match.group(1))) for match in _LABEL.finditer(text)]


def parse_level(generated: str, scale: str, untrusted: Sequence[str] = ()) -> ParsedLevel:
    """The level of the ``[[label]]`` verdicts in ``generated`` on ``scale``; repeated verdicts must agree.

    ``untrusted`` are the texts the judge was shown but did not write: their echoes are removed, and
    a label one of them writes in brackets is not taken from the judge's text (a re-quote). A label
    off the scale (``A>>B`` on the ``tie`` scale) fails.
    """
    quoted = {label for value in untrusted for _, label in _labels_in(value)}
    found = _labels_in(strip_echoes(generated, untrusted))
    own = [label for _, label in found if label not in quoted]
    note = f" ({len(found) - len(own)} label(s) a candidate also wrote ignored)" if len(own) < len(found) else ""
    if not own:
        return ParsedLevel(None, "no [[A>B]]-style verdict in the output" + note)
    allowed = scale_labels(scale)
    for label in own:
        if label not in allowed:
            return ParsedLevel(None, f"verdict [[{label}]] is not on the {scale} scale ({', '.join(allowed)})")
    if len(set(own)) > 1:
        return ParsedLevel(None, f"ambiguous: different verdicts {', '.join(sorted(set(own)))}")
    return ParsedLevel(label_level(own[0]))


def level_probabilities(logprobs: Mapping[str, float], scale: str) -> dict[int, float] | None:
    """P(level) from the log-probabilities of ``scale``'s labels after :data:`LEVEL_PREFIX`, renormalised over
    them; None when none has any mass. Labels missing from ``logprobs`` count as impossible."""
    weights = {label_level(label): math.exp(logprobs.get(label, -math.inf)) for label in scale_labels(scale)}
    mass = sum(weights.values())
    if mass <= 0:
        return None
    return {level: weight / mass for level, weight in weights.items()}


def level_reading(probabilities: Mapping[int, float]) -> tuple[int, float]:
    """The most probable level (the weaker one on a tie of probabilities) and P(first wins), a tie counting half.

    Examples
    --------
    >>> level_reading({2: 0.1, 1: 0.5, 0: 0.2, -1: 0.1, -2: 0.1})
    (1, 0.7)
    """
    level = max(probabilities, key=lambda lv: (probabilities[lv], -abs(lv)))
    first = sum(p for lv, p in probabilities.items() if lv > 0) + probabilities.get(0, 0.0) / 2
    return level, round(first, 12)
