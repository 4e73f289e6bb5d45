"""Strict parsers of k-way verdicts: setwise ``Best: C`` and listwise ``Ranking: B > A > C``.

Verdicts are read only from the judge's own text, after a fixed prefix, the last verdict line
counting. More in ``docs/judges-llm.md``.

Example
-------
>>> parse_ranking("Ranking: B > A > C", 3)
((1, 0, 2), None)
>>> parse_ranking("Ranking: B > A > B", 3)[1]
'label B named twice'
>>> parse_choice("I compared them.\\nBest: C", 3)
(2, None)
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence

from rankkit.judgments.values import LABELS, labels

#: The verdict lines a k-way template asks the judge to end with.
CHOICE_PREFIX = "Best:"
RANKING_PREFIX = "Ranking:"


# ---------------------------------------------------------------------------------------------
# Strict parsers of generated text


def _last_line_after(text: str, prefix: str) -> str | None:
    """What follows the last line of ``text`` starting with ``prefix`` (emphasis allowed), or None."""
    pattern = re.compile(rf"^[ \t*_#>-]*{re.escape(prefix)}[*_]*(.*)$", re.MULTILINE | re.IGNORECASE)
    found = pattern.findall(text)
    return found[-1].strip() if found else None


def parse_choice(text: str, k: int, prefix: str = CHOICE_PREFIX) -> tuple[int | None, str | None]:
    """``(slot, None)`` from the last ``Best: X`` line of the judge's generated ``text``, else ``(None, reason)``.

    The line must name exactly one of the ``k`` labels.

    Examples
    --------
    >>> parse_choice("Best: [B]", 2)
    (1, None)
    >>> parse_choice("Best: E", 3)
    (None, "'E' is not one of the labels A, B, C")
    """
    line = _last_line_after(text, prefix)
    if line is None:
        return None, f"no line starting with {prefix!r}"
    names = labels(k)
    # Standalone capital letters are label candidates ("Best: [B]", "Best: B."); the same label
    # repeated ("Best: A (answer A)") is one choice, two different ones are no choice.
    found = set(re.findall(r"(?<![A-Za-z])([A-Z])(?![A-Za-z])", line)) & set(LABELS)
    if len(found) != 1:
        return None, f"the {prefix} line names {len(found)} labels: {line!r}"
    label = found.pop()
    if label not in names:
        return None, f"{label!r} is not one of the labels {', '.join(names)}"
    return names.index(label), None


def parse_ranking(text: str, k: int, prefix: str = RANKING_PREFIX) -> tuple[tuple[int, ...] | None, str | None]:
    """``(slots best first, None)`` from the last ``Ranking: X > Y > ...`` line, else ``(None, reason)``.

    Every one of the ``k`` labels must appear exactly once, separated by ``>`` (or commas).

    Examples
    --------
    >>> parse_ranking("Ranking: [C] > [A] > [B]", 3)
    ((2, 0, 1), None)
    >>> parse_ranking("Ranking: A > B", 3)[1]
    'label C missing'
    """
    line = _last_line_after(text, prefix)
    if line is None:
        return None, f"no line starting with {prefix!r}"
    names = labels(k)
    parts = [part.strip(" []().*_`'\"") for part in re.split(r">|,", line.rstrip(". "))]
    ranking: list[int] = []
    for part in parts:
        label = part.upper()
        if label not in names:
            return None, f"{part!r} is not one of the labels {', '.join(names)}"
        slot = names.index(label)
        if slot in ranking:
            return None, f"label {label} named twice"
        ranking.append(slot)
    missing = [names[slot] for slot in range(k) if slot not in ranking]
    if missing:
        return None, f"label{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing"
    return tuple(ranking), None


def probabilities_from_logprobs(logprobs: Mapping[str, float], k: int) -> tuple[float, ...] | None:
    """P(best = slot i) from the label tokens' log-probabilities, renormalised over the k labels; None: no mass.

    Examples
    --------
    >>> [round(p, 3) for p in probabilities_from_logprobs({"A": math.log(0.3), "B": math.log(0.1)}, 2)]
    [0.75, 0.25]
    """
    values = [logprobs.get(label, -math.inf) for label in labels(k)]
    top = max(values)
    if top == -math.inf:
        return None
    weights = [math.exp(value - top) for value in values]
    total = sum(weights)
    return tuple(weight / total for weight in weights)


def ranking_from_scores(scores: Sequence[float]) -> tuple[int, ...]:
    """Slots ordered by score, highest first; equal scores keep the order shown.

    Examples
    --------
    >>> ranking_from_scores([0.2, 0.5, 0.3])
    (1, 2, 0)
    """
    return tuple(sorted(range(len(scores)), key=lambda slot: (-scores[slot], slot)))
