"""The judgments a judge gives, as values, with their cache kinds and the k-way slot labels.

One name per kind in types, cache kinds, JSON and judge methods: :class:`Grade` (``grade``,
``grade_many``), :class:`Verdict` on two answers as shown (``verdict``, ``compare_many``),
:class:`GroupChoice` of the best of a group (``choice``, ``choose_many``) and :class:`GroupRanking`
of a group, best first (``ranking``, ``rank_many``). Imports nothing above the tasks.

Example
-------
>>> verdict = Verdict(first_grade=7.0, second_grade=4.0, winner=Winner.FIRST, probability=0.8)
>>> verdict.swapped().winner, round(verdict.swapped().probability, 3)
(<Winner.SECOND: 'second'>, 0.2)
>>> Verdict.from_dict(verdict.to_dict()) == verdict
True
"""

from __future__ import annotations

import enum
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from rankkit.data.tasks import Candidate, Task

#: The cache kind of each judgment (the memo's and the cache's name for it).
VERDICT_KIND = "verdict"
GRADE_KIND = "grade"
CHOICE_KIND = "choice"
RANKING_KIND = "ranking"


class Winner(str, enum.Enum):
    """Which presented candidate won a comparison."""

    FIRST = "first"
    SECOND = "second"
    TIE = "tie"


class ParseStatus(str, enum.Enum):
    """How a judge's raw output was read: cleanly, after a retry, or not at all."""

    OK = "ok"
    RETRIED = "retried"
    FAILED = "failed"


# -- reading a stored judgment back (the cache is often someone else's file) ------------------------
# Each reader returns the field as stored or raises ValueError naming it, so that a row of the wrong
# shape is reported (rankkit.judgments.memo names its key) instead of deciding a match with a string or NaN.


def _number(data: Mapping[str, Any], name: str, optional: bool = False) -> Any:
    value = data.get(name) if optional else data[name]
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        raise ValueError(f"{name} is {value!r}, not a finite number")
    return value


def _numbers(data: Mapping[str, Any], name: str, items_optional: bool = False) -> tuple | None:
    value = data.get(name)
    if value is None:
        return None
    if not isinstance(value, list):
        raise ValueError(f"{name} is {value!r}, not a list")
    return tuple(_number({name: item}, name, optional=items_optional) for item in value)


def _slot(data: Mapping[str, Any], name: str) -> int | None:
    value = data.get(name)
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 0):
        raise ValueError(f"{name} is {value!r}, not a slot number")
    return value


def _text(data: Mapping[str, Any], name: str) -> str:
    value = data.get(name, "")
    if not isinstance(value, str):
        raise ValueError(f"{name} is {value!r}, not text")
    return value


def _object(data: Mapping[str, Any], name: str) -> dict[str, Any]:
    value = data.get(name) or {}
    if not isinstance(value, dict):
        raise ValueError(f"{name} is {value!r}, not an object")
    return dict(value)


def _status(data: Mapping[str, Any]) -> ParseStatus:
    return ParseStatus(data.get("status", "ok"))


@dataclass(frozen=True)
class Grade:
    """The judge's grade for one answer alone. ``value`` is on the task's scale (None only when parsing failed)."""

    value: float | None
    raw: str = ""
    status: ParseStatus = ParseStatus.OK
    usage: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the cache stores, one entry per field."""
        return {
            "value": self.value,
            "raw": self.raw,
            "status": self.status.value,
            "usage": dict(self.usage),
            "extras": dict(self.extras),
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Grade:
        """A grade read back from :meth:`to_dict`'s dict."""
        return cls(
            value=_number(data, "value", optional=True),
            raw=_text(data, "raw"),
            status=_status(data),
            usage=_object(data, "usage"),
            extras=_object(data, "extras"),
        )


@dataclass(frozen=True)
class Verdict:
    """A pairwise verdict on (first, second) in the order they were presented.

    ``first_grade`` / ``second_grade`` are the grades the judge gave each; ``winner`` is its
    verdict (it may disagree with the scores only when the backend decides by another signal,
    e.g. choice-token probabilities). ``probability`` is P(first wins) when the backend knows it.
    ``level`` is the verdict's strength on a ``tie`` or ``graded`` scale (:mod:`rankkit.judgments.levels`:
    2 is ``A>>B``, 0 a tie, -2 ``B>>A``), None on the binary scale.
    """

    first_grade: float
    second_grade: float
    winner: Winner
    raw: str = ""
    status: ParseStatus = ParseStatus.OK
    probability: float | None = None
    usage: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)
    level: int | None = None

    def swapped(self) -> Verdict:
        """The same judgment seen from the other side: grades swapped, winner and level mirrored, probability ``1 - p``."""
        flip = {Winner.FIRST: Winner.SECOND, Winner.SECOND: Winner.FIRST, Winner.TIE: Winner.TIE}
        return Verdict(
            first_grade=self.second_grade,
            second_grade=self.first_grade,
            winner=flip[self.winner],
            raw=self.raw,
            status=self.status,
            probability=None if self.probability is None else 1.0 - self.probability,
            usage=self.usage,
            extras=self.extras,
            level=None if self.level is None else -self.level,
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the cache stores, one entry per field (``level`` only when set, so binary rows keep their form)."""
        level = {} if self.level is None else {"level": self.level}
        return {
            "first_grade": self.first_grade,
            "second_grade": self.second_grade,
            "winner": self.winner.value,
            "raw": self.raw,
            "status": self.status.value,
            "probability": self.probability,
            "usage": dict(self.usage),
            "extras": dict(self.extras),
            **level,
        }

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Verdict:
        """A verdict read back from :meth:`to_dict`'s dict."""
        probability = _number(data, "probability", optional=True)
        if probability is not None and not 0.0 <= probability <= 1.0:
            raise ValueError(f"probability is {probability!r}, not between 0 and 1")
        return cls(
            first_grade=_number(data, "first_grade"),
            second_grade=_number(data, "second_grade"),
            winner=Winner(data["winner"]),
            raw=_text(data, "raw"),
            status=_status(data),
            probability=probability,
            usage=_object(data, "usage"),
            extras=_object(data, "extras"),
            level=_level(data),
        )


def _level(data: Mapping[str, Any]) -> int | None:
    level = data.get("level")
    if level is not None and (isinstance(level, bool) or not isinstance(level, int) or abs(level) > 2):
        raise ValueError(f"level is {level!r}, not an integer from -2 to 2")
    return level


#: What a judge is asked: a task and one answer (a grade), two answers as shown (a verdict), or
#: a task and the candidates in the order shown (a k-way judgment).
GradeRequest = tuple[Task, Candidate]
ComparisonRequest = tuple[Task, Candidate, Candidate]
GroupRequest = tuple[Task, tuple[Candidate, ...]]


#: The labels a k-way prompt names its slots with, in slot order; k is at most their number.
LABELS = ("A", "B", "C", "D", "E", "F", "G", "H")
MAX_LABELS = len(LABELS)


def labels(k: int) -> tuple[str, ...]:
    """The labels of k slots (``A``, ``B``, ...); ValueError outside 2..:data:`MAX_LABELS`.

    Examples
    --------
    >>> labels(3)
    ('A', 'B', 'C')
    """
    if not 2 <= k <= MAX_LABELS:
        raise ValueError(f"a k-way judgment shows 2 to {MAX_LABELS} answers, got {k}")
    return LABELS[:k]


@dataclass(frozen=True)
class GroupChoice:
    """The judge's choice of the best of k answers, in the order they were shown.

    Attributes
    ----------
    chosen
        The slot chosen (0-based; None when parsing failed).
    probabilities
        P(best = slot i) per slot when the backend knows them (logprob mode).
    grades
        A grade per slot on the task's scale when the backend gives them (the simulator).
    """

    chosen: int | None
    probabilities: tuple[float, ...] | None = None
    grades: tuple[float, ...] | None = None
    raw: str = ""
    status: ParseStatus = ParseStatus.OK
    usage: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def slot_scores(self, k: int) -> tuple[float, ...]:
        """One score per slot, for strategies that average over rounds.

        ``k · P(best)`` when probabilities are known (a uniform choice gives each slot 1), else the
        grades, else ``k`` for the chosen slot and 0 for the others (all 1 when parsing failed).
        """
        if self.probabilities is not None:
            return tuple(k * p for p in self.probabilities)
        if self.grades is not None:
            return self.grades
        if self.chosen is None:
            return (1.0,) * k
        return tuple(float(k) if slot == self.chosen else 0.0 for slot in range(k))

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the cache stores, one entry per field."""
        return {
            "chosen": self.chosen,
            "probabilities": None if self.probabilities is None else list(self.probabilities),
            "grades": None if self.grades is None else list(self.grades),
            "raw": self.raw,
            "status": self.status.value,
            "usage": dict(self.usage),
            "extras": dict(self.extras),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupChoice:
        """A choice read back from :meth:`to_dict`'s dict."""
        return cls(
            chosen=_slot(data, "chosen"),
            probabilities=_numbers(data, "probabilities"),
            grades=_numbers(data, "grades", items_optional=True),
            raw=_text(data, "raw"),
            status=_status(data),
            usage=_object(data, "usage"),
            extras=_object(data, "extras"),
        )


@dataclass(frozen=True)
class GroupRanking:
    """The judge's ranking of k answers: ``permutation`` holds the slots shown, best first, each once (None when parsing failed)."""

    permutation: tuple[int, ...] | None
    raw: str = ""
    status: ParseStatus = ParseStatus.OK
    usage: dict[str, int] = field(default_factory=dict)
    extras: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """The JSON form the cache stores, one entry per field."""
        return {
            "permutation": None if self.permutation is None else list(self.permutation),
            "raw": self.raw,
            "status": self.status.value,
            "usage": dict(self.usage),
            "extras": dict(self.extras),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> GroupRanking:
        """A ranking read back from :meth:`to_dict`'s dict."""
        permutation = data.get("permutation")
        if permutation is not None:
            if not isinstance(permutation, list) or sorted(permutation) != list(range(len(permutation))):
                raise ValueError(f"permutation is {permutation!r}, not a permutation of the slots")
            if any(isinstance(slot, bool) for slot in permutation):
                raise ValueError(f"permutation is {permutation!r}, not a permutation of the slots")
        return cls(
            permutation=None if permutation is None else tuple(permutation),
            raw=_text(data, "raw"),
            status=_status(data),
            usage=_object(data, "usage"),
            extras=_object(data, "extras"),
        )
