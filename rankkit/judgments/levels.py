"""Verdict scales: how finely a pairwise verdict says which answer is better.

A level is an int from the first answer's side: ``2`` the first is much better (``A>>B``), ``1``
better (``A>B``), ``0`` a tie (``A=B``), ``-1`` and ``-2`` the same for the second. Swapping the
order negates the level. ``binary`` (the default) has no level on the verdict; ``tie`` has the levels
-1, 0, 1 and ``graded`` all five (Arena-Hard's A>>B ... B>>A).

Example
-------
>>> scale_levels("graded")
(2, 1, 0, -1, -2)
>>> level_label(-2), label_level("A=B")
('B>>A', 0)
"""

from __future__ import annotations

from rankkit.judgments.values import Winner

#: The verdict scales of pairwise judging, the default first.
VERDICT_SCALES = ("binary", "tie", "graded")

_LEVELS = {"binary": (1, -1), "tie": (1, 0, -1), "graded": (2, 1, 0, -1, -2)}
_LABELS = {2: "A>>B", 1: "A>B", 0: "A=B", -1: "B>A", -2: "B>>A"}
#: The strongest level either way.
STRONGEST = 2


def check_scale(scale: str) -> str:
    """``scale`` if it is one of :data:`VERDICT_SCALES`; ValueError naming them otherwise."""
    if scale not in VERDICT_SCALES:
        raise ValueError(f"verdicts must be one of {', '.join(VERDICT_SCALES)}, got {scale!r}")
    return scale


def scale_levels(scale: str) -> tuple[int, ...]:
    """The levels of ``scale``, the first answer's strongest first."""
    return _LEVELS[check_scale(scale)]


def level_label(level: int) -> str:
    """The label of a level (``A>>B`` ... ``B>>A``)."""
    return _LABELS[level]


def label_level(label: str) -> int:
    """The level of a label; KeyError for anything else."""
    return {text: level for level, text in _LABELS.items()}[label]


def scale_labels(scale: str) -> tuple[str, ...]:
    """The labels of ``scale``'s levels, in :func:`scale_levels` order."""
    return tuple(_LABELS[level] for level in scale_levels(scale))


def level_winner(level: int) -> Winner:
    """The winner a level names: the first above 0, the second below, a tie at 0."""
    if level > 0:
        return Winner.FIRST
    if level < 0:
        return Winner.SECOND
    return Winner.TIE
