"""Reading a verdict level (``[[A>>B]]`` ... ``[[B>>A]]``) from a judge: the instruction, the strict parser, the label probabilities.

A is the answer shown first (``Answer 1``), B the second. Levels and scales are in
:mod:`rankkit.judgments.levels`. Nothing a candidate writes is read as the judge's verdict: echoes
and verbatim copies of the candidates are removed first (:func:`~rankkit.prompts.verdicts.strip_echoes`),
and a label copied from a candidate with the words before it is never taken as the judge's.
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


#: How many words before a label must also precede it in a candidate for it to be a re-quote.
REQUOTE_WORDS = 2
_WORD = re.compile(r"\w+")


def _label_of(match: re.Match) -> str:
    return re.sub(r"\s+", "", match.group(1))


def _with_words_before(text: str, match: re.Match) -> tuple[tuple[str, ...], str]:
    """The label of ``match`` and the (up to) :data:`REQUOTE_WORDS` words before it, case-folded."""
    words = _WORD.findall(text[: match.start()].casefold())[-REQUOTE_WORDS:]
    return tuple(words), _label_of(match)


def _candidate_labels(untrusted: Sequence[str]) -> set[tuple[tuple[str, ...], str]]:
    return {_with_words_before(value, match) for value in untrusted for match in _LABEL.finditer(value)}


def parse_level(generated: str, scale: str, untrusted: Sequence[str] = ()) -> ParsedLevel:
    """The level of the ``[[label]]`` verdicts in ``generated`` on ``scale``; repeated verdicts must agree.

    ``untrusted`` are the texts the judge was shown but did not write: their echoes and verbatim
    copies are removed, and a label copied with the words before it from one of them
    (:data:`REQUOTE_WORDS` words) is a re-quote, not taken, unless it closes the reply, where the
    instruction asks for the judge's own verdict. So a candidate can neither slip a label in nor void
    the judge's own label by writing the same one. A label off the scale (``A>>B`` on the ``tie``
    scale) fails.
    """
    quoted = _candidate_labels(untrusted)
    text = strip_echoes(generated, untrusted)
    found = list(_LABEL.finditer(text))
    own = [_label_of(m) for m in found if _with_words_before(text, m) not in quoted]
    if not own and found and not text[found[-1].end() :].strip(" \t\n.!*\"'"):
        own = [_label_of(found[-1])]  # the closing verdict is the judge's own
    note = f" ({len(found) - len(own)} label(s) re-quoted from a candidate ignored)" if len(own) < len(found) else ""
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
