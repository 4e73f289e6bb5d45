"""What the k-way strategies share: the checks of ``order``, ``shifts`` and group size.

``order`` is ``given``, ``random``, ``both`` or ``permute`` (with ``shifts``); a group holds at
most the 8 labels ``A``…``H`` of the k-way templates.
"""

from __future__ import annotations

import dataclasses
import math
import statistics
from collections.abc import Mapping, Sequence
from typing import ClassVar

from rankkit.data.specs import SpecError
from rankkit.judgments.values import MAX_LABELS
from rankkit.strategies.base import Strategy, check_ranges
from rankkit.strategies.choices import KWAY_ORDERS, check_kway_order


class KwayStrategy(Strategy):
    """Base of the k-way strategies: ``kind = "kway"`` and the checks of ``order`` and ``shifts``.

    Subclasses call ``super().__post_init__()`` first and check their group size with :meth:`check_size`.
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
        """Refuse a group size outside 2..8; ``name`` is the parameter's, for the message.

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
    """Each answer's mean slot score; one never scored gets the mean of all scores given (0 when none).

    Examples
    --------
    >>> mean_scores({"a": [4.0, 2.0], "b": [0.0], "c": []}, ["a", "b", "c"])
    {'a': 3.0, 'b': 0.0, 'c': 2.0}
    """
    given = [score for scores in received.values() for score in scores]
    neutral = statistics.fmean(given) if given else 0.0
    return {cid: statistics.fmean(received[cid]) if received[cid] else neutral for cid in candidate_ids}
