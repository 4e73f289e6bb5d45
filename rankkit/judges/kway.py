"""k-way judgments: the judge is shown k answers at once and chooses the best, or orders them all.

Two judgments, one per question a k-way prompt asks:

* ``choose(task, candidates)`` — *setwise* (Zhuang et al., SIGIR 2024): which of the k answers,
  shown in this order, is best? A :class:`GroupChoice` holds the chosen slot and, when the
  backend knows them, the probability of every slot being the best (logprob mode reads them from
  one forward pass over the label tokens ``A``…``H``) or a grade per slot (the simulator).
* ``order(task, candidates)`` — *listwise* (RankGPT, Sun et al. 2023): all k answers ordered best
  first. An :class:`GroupRanking` holds the permutation of slots.

Slots are 0-based positions in the order shown; labels are the letters the judge sees (slot 0 is
``A``). k is at most :data:`MAX_LABELS` (8).

Parsing is strict, as the pairwise parser is: only text the judge itself generated is read (the
candidates' texts are never searched, so an answer that contains ``Ranking: C > A > B`` cannot
choose for the judge), the verdict must follow a fixed prefix the template asks for
(``Best:`` / ``Ranking:``), and an ordering must name every label exactly once
(:func:`parse_ranking`). When the verdict line occurs more than once the *last* one counts: a
model that quotes an answer and then concludes is read by its conclusion.

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
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from rankkit.judgments import ParseStatus

#: The labels a k-way prompt names its slots with, in slot order; k is at most their number.
LABELS = ("A", "B", "C", "D", "E", "F", "G", "H")
MAX_LABELS = len(LABELS)
#: The cache kinds of the two judgments (see :mod:`rankkit.memo`).
CHOICE_KIND = "choice"
RANKING_KIND = "ranking"
#: The verdict lines a k-way template asks the judge to end with.
CHOICE_PREFIX = "Best:"
RANKING_PREFIX = "Ranking:"


def labels(k: int) -> tuple[str, ...]:
    """The labels of k slots (``A``, ``B``, ...). Raises ValueError outside 2..:data:`MAX_LABELS`.

    >>> labels(3)
    ('A', 'B', 'C')
    """
    if not 2 <= k <= MAX_LABELS:
        raise ValueError(f"a k-way judgment shows 2 to {MAX_LABELS} answers, got {k}")
    return LABELS[:k]


@dataclass(frozen=True)
class GroupChoice:
    """The judge's choice of the best of k answers, in the order they were shown.

    chosen: the slot chosen (0-based; None when parsing failed).
    probabilities: P(best = slot i) per slot when the backend knows them (logprob mode), else None.
    grades: a grade per slot on the task's scale when the backend gives them (the simulator), else None.
    raw / status / usage / extras: as in :class:`~rankkit.judgments.Verdict`.
    """

    chosen: int | None
    probabilities: tuple[float, ...] | None = None
    grades: tuple[float, ...] | None = None
    raw: str = ""
    status: ParseStatus = ParseStatus.OK
    usage: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def slot_scores(self, k: int) -> tuple[float, ...]:
        """One score per slot for strategies that average scores over rounds: ``k · P(best)`` when
        probabilities are known (1 is what a uniform choice gives each slot), else the grades, else
        ``k`` for the chosen slot and 0 for the others (a bare choice; all 1 when parsing failed)."""
        if self.probabilities is not None:
            return tuple(k * p for p in self.probabilities)
        if self.grades is not None:
            return self.grades
        if self.chosen is None:
            return (1.0,) * k
        return tuple(float(k) if slot == self.chosen else 0.0 for slot in range(k))

    def to_dict(self) -> dict[str, Any]:
        return {"chosen": self.chosen, "probabilities": None if self.probabilities is None else list(self.probabilities),
                "grades": None if self.grades is None else list(self.grades), "raw": self.raw,
                "status": self.status.value, "usage": dict(self.usage), "extras": dict(self.extras)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GroupChoice":
        probabilities, grades = data.get("probabilities"), data.get("grades")
        return cls(chosen=data.get("chosen"), probabilities=None if probabilities is None else tuple(probabilities),
                   grades=None if grades is None else tuple(grades), raw=data.get("raw", ""),
                   status=ParseStatus(data.get("status", "ok")), usage=dict(data.get("usage") or {}),
                   extras=dict(data.get("extras") or {}))


@dataclass(frozen=True)
class GroupRanking:
    """The judge's ordering of k answers, best first, as slots of the order shown.

    permutation: slots best first, each slot exactly once (None when parsing failed).
    raw / status / usage / extras: as in :class:`~rankkit.judgments.Verdict`.
    """

    permutation: tuple[int, ...] | None
    raw: str = ""
    status: ParseStatus = ParseStatus.OK
    usage: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return {"permutation": None if self.permutation is None else list(self.permutation), "raw": self.raw,
                "status": self.status.value, "usage": dict(self.usage), "extras": dict(self.extras)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> "GroupRanking":
        permutation = data.get("permutation")
        return cls(permutation=None if permutation is None else tuple(permutation), raw=data.get("raw", ""),
                   status=ParseStatus(data.get("status", "ok")), usage=dict(data.get("usage") or {}),
                   extras=dict(data.get("extras") or {}))


# ---------------------------------------------------------------------------------------------
# Strict parsers of generated text


def _last_line_after(text: str, prefix: str) -> str | None:
    """What follows the last line of ``text`` that starts with ``prefix`` (markdown emphasis and
    leading spaces allowed), or None when no line does."""
    pattern = re.compile(rf"^[ \t*_#>-]*{re.escape(prefix)}[*_]*(.*)$", re.MULTILINE | re.IGNORECASE)
    found = pattern.findall(text)
    return found[-1].strip() if found else None


def parse_choice(text: str, k: int, prefix: str = CHOICE_PREFIX) -> tuple[int | None, str | None]:
    """The slot a generated reply chose, from its last ``Best: X`` line.

    Parameters
    ----------
    text: what the judge generated (never the prompt, so the candidates' texts are not read).
    k: how many answers were shown.
    prefix: the verdict line's prefix.

    Returns
    -------
    ``(slot, None)``, or ``(None, reason)`` when there is no verdict line or it does not name
    exactly one of the k labels.

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
    """The ordering a generated reply gave, from its last ``Ranking: X > Y > ...`` line.

    Every one of the k labels must appear exactly once, separated by ``>`` (or commas); anything
    else is a parse failure with its reason.

    Returns
    -------
    ``(slots best first, None)``, or ``(None, reason)``.

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
    order: list[int] = []
    for part in parts:
        label = part.upper()
        if label not in names:
            return None, f"{part!r} is not one of the labels {', '.join(names)}"
        slot = names.index(label)
        if slot in order:
            return None, f"label {label} named twice"
        order.append(slot)
    missing = [names[slot] for slot in range(k) if slot not in order]
    if missing:
        return None, f"label{'s' if len(missing) > 1 else ''} {', '.join(missing)} missing"
    return tuple(order), None


_ECHOED_BOX = re.compile(r"<\s*answer_[A-H]\s*>.*?(?:<\s*/\s*answer_[A-H]\s*>|\Z)", re.IGNORECASE | re.DOTALL)


def strip_echoes(generated: str, untrusted: Sequence[str]) -> str:
    """Remove what the judge copied verbatim from the candidates before a verdict line is looked
    for: echoed answer boxes (``<answer_B> ... </answer_B>``, or to the end) and verbatim copies
    of each candidate's text, so a verdict line written inside an answer is never read as the
    judge's own, even when the judge quotes the answer.

    >>> strip_echoes("I read: Ranking: B > A.", ["Ranking: B > A"])
    'I read:  .'
    """
    text = _ECHOED_BOX.sub(" ", generated)
    for piece in sorted({value.strip() for value in untrusted if value.strip()}, key=len, reverse=True):
        text = text.replace(piece, " ")
    return text


def probabilities_from_logprobs(logprobs: Mapping[str, float], k: int) -> tuple[float, ...] | None:
    """P(best = slot i) from the label tokens' log-probabilities, renormalised over the k labels;
    None when no label has any probability.

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

    >>> ranking_from_scores([0.2, 0.5, 0.3])
    (1, 2, 0)
    """
    return tuple(sorted(range(len(scores)), key=lambda slot: (-scores[slot], slot)))
