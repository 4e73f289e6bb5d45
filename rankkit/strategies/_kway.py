"""What the k-way strategies (``setwise_knockout``, ``setwise_heapsort``, ``listwise``, ``setwise_groups``) share.

A k-way strategy shows the judge several answers at once (:mod:`rankkit.choices`); its ``order``
is ``given``, ``random``, ``both`` or ``permute`` (with ``shifts``), checked here, and its group size is at
most the 8 labels ``A``…``H`` of the k-way templates.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import ClassVar

from rankkit.choices import KWAY_ORDERS, check_kway_order
from rankkit.judgments import MAX_LABELS
from rankkit.specs import SpecError
from rankkit.strategies.base import Strategy, check_ranges


class KwayStrategy(Strategy):
    """Base of the k-way strategies: ``kind = "kway"`` and the checks of ``order``/``shifts``.

    Subclasses are frozen dataclasses with the fields ``order`` and ``shifts``; they call
    ``super().__post_init__()`` first and check their own group size with :meth:`check_size`.
    """

    kind: ClassVar[str] = "kway"
    orders: ClassVar[tuple[str, ...]] = KWAY_ORDERS

    def __post_init__(self) -> None:
        where = f"strategy {self.name}"
        for field_ in dataclasses.fields(self):
            value = getattr(self, field_.name)
            if isinstance(value, float) and not math.isfinite(value):
                raise SpecError(f"{where}: {field_.name} must be a finite number, got {value}")
        check_kway_order(where, self.order, self.shifts)
        check_ranges(self)

    def check_size(self, name: str, value: int) -> None:
        """Refuse a group size outside 2..8 (the k-way templates' labels A..H).

        Parameters
        ----------
        name : str
            The parameter's name, for the message.
        value : int
            The group size.

        Raises
        ------
        SpecError
            When ``value`` is outside 2..8.
        """
        if not 2 <= value <= MAX_LABELS:
            raise SpecError(
                f"strategy {self.name}: {name} must be 2 to {MAX_LABELS} (the labels A to "
                f"{chr(ord('A') + MAX_LABELS - 1)}), got {value}"
            )


def mean_scores(received: Mapping[str, Sequence[float]], candidate_ids: Sequence[str]) -> dict[str, float]:
    """Each answer's mean over the slot scores it received; an answer never scored (every group it
    was in was undecided) gets the mean of all scores given, 0 when none was.

    Parameters
    ----------
    received : Mapping[str, Sequence[float]]
        Candidate id -> the slot scores it received.
    candidate_ids : Sequence[str]
        Every candidate of the task.

    Returns
    -------
    dict[str, float]
        Candidate id -> mean score.

    Examples
    --------
    >>> mean_scores({"a": [4.0, 2.0], "b": [0.0], "c": []}, ["a", "b", "c"])
    {'a': 3.0, 'b': 0.0, 'c': 2.0}
    """
    given = [score for scores in received.values() for score in scores]
    neutral = statistics.fmean(given) if given else 0.0
    return {cid: statistics.fmean(received[cid]) if received[cid] else neutral for cid in candidate_ids}
