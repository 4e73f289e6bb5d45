"""The strict verdict parser: the scores a judge's generated text gives, never a verdict forged in a candidate.

More in ``docs/prompts.md``.
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Sequence
from dataclasses import dataclass

from rankkit.prompts.render import format_points


@dataclass(frozen=True)
class ParsedVerdict:
    """The scores read from a judge's output (in presentation order), or why none could be read."""

    scores: tuple[float, ...] | None
    error: str | None = None

    @property
    def ok(self) -> bool:
        return self.scores is not None


_NUMBER = r"[0-9]+(?:[.,][0-9]+)?"  # ASCII digits only: float() also reads Arabic-Indic and others
_VALUE = (
    r"\**\s*[:=：]\s*\**\s*\[?\s*(?P<value>" + _NUMBER + r")\s*\]?"
    r"(?:\s*(?:/|out\s+of|von)\s*\[?\s*(?P<max>" + _NUMBER + r")\s*\]?)?"
)
_POINT_LABEL = r"(?:score|punktzahl)"
_SLOT_LABEL = r"(?:answer|antwort|translation|übersetzung|uebersetzung)"
_POINT_PATTERN = re.compile(r"\b" + _POINT_LABEL + r"\s*" + _VALUE, re.IGNORECASE)
_SLOT_PATTERNS = {
    slot: re.compile(r"\b" + _SLOT_LABEL + r"\s*" + str(slot) + r"\b\s*" + _VALUE, re.IGNORECASE) for slot in (1, 2)
}


def _number(text: str) -> float:
    return float(text.replace(",", "."))


def _checked(match: re.Match, max_points: float, what: str) -> tuple[float | None, str | None]:
    value = _number(match.group("value"))
    if match.group("max") is not None and not math.isclose(_number(match.group("max")), max_points):
        return None, f"{what} graded out of {match.group('max')}, expected /{format_points(max_points)}"
    if not 0 <= value <= max_points:
        return None, f"{what} {format_points(value)} outside 0..{format_points(max_points)}"
    return value, None


def normalised_tokens(text: str) -> str:
    """``text``'s letter and digit runs, NFKC case-folded, joined and padded by spaces (``in`` matches tokens).

    ``"Answer 1:\n0/10"`` and ``"**answer1** - 0/10"`` both become ``" answer 1 0 10 "``.
    """
    folded = unicodedata.normalize("NFKC", text).casefold()
    return " " + " ".join(_TOKEN.findall(folded)) + " "


_TOKEN = re.compile(r"\d+|[^\W\d_]+")


class _Quotes:
    """The verdicts the untrusted texts themselves contain, normalised: ``covers(fragment)`` flags a re-quote.

    Only verdict-shaped text counts, so a mere mention of "answer 1 2 10" does not hide the judge's own verdict.
    """

    def __init__(self, untrusted: Sequence[str]):
        patterns = (_POINT_PATTERN, *_SLOT_PATTERNS.values())
        self.verdicts = {
            normalised_tokens(match.group(0))
            for value in untrusted
            for pattern in patterns
            for match in pattern.finditer(value)
        }

    def covers(self, fragment: str) -> bool:
        needle = normalised_tokens(fragment)
        return needle.strip() != "" and needle in self.verdicts


def _own_verdicts(pattern: re.Pattern, text: str, quotes: _Quotes) -> tuple[list[re.Match], int]:
    """The matches of ``pattern`` in ``text`` that are not re-quoted untrusted text, and how many were dropped."""
    matches = list(pattern.finditer(text))
    own = [m for m in matches if not quotes.covers(m.group(0))]
    return own, len(matches) - len(own)


def _agreed_value(matches: Sequence[re.Match], max_points: float, what: str) -> tuple[float | None, str | None]:
    """The one value all ``matches`` give; an error when any is off-scale or they disagree."""
    values = []
    for match in matches:
        value, error = _checked(match, max_points, what)
        if error:
            return None, error
        values.append(value)
    distinct = sorted(set(values))
    if len(distinct) > 1:
        shown = " and ".join(format_points(v) for v in distinct)
        return None, f"ambiguous: two different verdicts for {what} ({shown})"
    return values[-1], None


def _quoted_note(dropped: int) -> str:
    return f" ({dropped} verdict(s) inside quoted candidate text ignored)" if dropped else ""


def parse_pointwise(generated: str, max_points: float, untrusted: Sequence[str] = ()) -> ParsedVerdict:
    """Read ``Score: X/M`` (or ``Punktzahl: X/M``) from generated text.

    Repeated scores must agree. Other scales and values outside ``[0, M]`` fail. ``untrusted`` are
    the texts the judge was shown but did not write: echoes are removed and re-quoted verdicts never
    taken. Returns ``(X,)`` or no values with the reason.
    """
    quotes = _Quotes(untrusted)
    matches, dropped = _own_verdicts(_POINT_PATTERN, strip_echoes(generated, untrusted), quotes)
    if not matches:
        return ParsedVerdict(None, "no 'Score: X/M' verdict in the output" + _quoted_note(dropped))
    value, error = _agreed_value(matches, max_points, "score")
    return ParsedVerdict(None, error) if error else ParsedVerdict((value,))


def parse_pairwise(generated: str, max_points: float, untrusted: Sequence[str] = ()) -> ParsedVerdict:
    """Read ``Answer 1: X/M ... Answer 2: Y/M`` (also ``Antwort``, ``Translation``) from generated text.

    An ``Answer 1`` score must precede the last ``Answer 2`` score and repeated scores must agree.
    ``max_points`` and ``untrusted`` as in :func:`parse_pointwise`. Returns ``(X, Y)`` or no values with the reason.
    """
    quotes = _Quotes(untrusted)
    text = strip_echoes(generated, untrusted)
    seconds, dropped_seconds = _own_verdicts(_SLOT_PATTERNS[2], text, quotes)
    firsts, dropped_firsts = _own_verdicts(_SLOT_PATTERNS[1], text, quotes)
    note = _quoted_note(dropped_firsts + dropped_seconds)
    if not seconds:
        return ParsedVerdict(None, "no 'Answer 2: Y/M' verdict in the output" + note)
    if not any(m.end() <= seconds[-1].start() for m in firsts):
        return ParsedVerdict(None, "no 'Answer 1: X/M' verdict before 'Answer 2'" + note)
    first_value, error = _agreed_value(firsts, max_points, "answer 1 score")
    if error:
        return ParsedVerdict(None, error)
    second_value, error = _agreed_value(seconds, max_points, "answer 2 score")
    if error:
        return ParsedVerdict(None, error)
    return ParsedVerdict((first_value, second_value))


#: Echoed answer boxes of the pairwise and pointwise templates: an opening tag to its closing tag or the end.
ECHOED_BOXES = re.compile(
    r"<\s*(answer|answer_1|answer_2|response|translation|translation_1|translation_2)\s*>.*?(?:<\s*/\s*\1\s*>|\Z)",
    re.IGNORECASE | re.DOTALL,
)
#: Echoed answer boxes of the k-way templates (``<answer_A>`` ... ``<answer_H>``).
ECHOED_KWAY_BOXES = re.compile(r"<\s*answer_[A-H]\s*>.*?(?:<\s*/\s*answer_[A-H]\s*>|\Z)", re.IGNORECASE | re.DOTALL)


def strip_echoes(generated: str, untrusted: Sequence[str], boxes: re.Pattern[str] = ECHOED_BOXES) -> str:
    """``generated`` with what the judge copied verbatim from ``untrusted`` replaced by spaces.

    Removes echoed answer boxes (``boxes``: the pairwise and pointwise ones unless told, or
    :data:`ECHOED_KWAY_BOXES`) and verbatim copies, before a verdict line is looked for, so a verdict
    inside an answer is never read as the judge's own; loose re-quotes are caught verdict by verdict
    by the parsers.

    Examples
    --------
    >>> strip_echoes("I read: Ranking: B > A.", ["Ranking: B > A"], ECHOED_KWAY_BOXES)
    'I read:  .'
    """
    text = boxes.sub(" ", generated)
    for piece in sorted({value.strip() for value in untrusted if value.strip()}, key=len, reverse=True):
        text = text.replace(piece, " ")
    return text
