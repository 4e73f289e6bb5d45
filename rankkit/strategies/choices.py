"""k-way judgments as strategies use them: groups shown in presentation orders (``docs/matches.md``)."""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rankkit.data.specs import SpecError
from rankkit.judgments.values import CHOICE_KIND, MAX_LABELS, RANKING_KIND, GroupChoice, GroupRanking, ParseStatus


class GroupSource(Protocol):
    """What :func:`play_groups` needs of a :class:`~rankkit.strategies.matches.MatchSource` (a protocol, so neither module imports the other)."""

    def group_judgments(self, kind: str, shown: Sequence[tuple[str, ...]], round: int | None = None) -> list[Any]:
        """The judge's ``choice`` or ``ranking`` judgment of each group shown, members in the order shown, one per group."""


#: The presentation orders of a k-way strategy (see ``docs/matches.md``).
KWAY_ORDERS = ("given", "random", "both", "permute")


def check_kway_order(where: str, order: str, shifts: int) -> None:
    """Raise :class:`SpecError` naming ``where`` unless ``order`` is in :data:`KWAY_ORDERS` and ``shifts`` is 0..8."""
    if order not in KWAY_ORDERS:
        raise SpecError(f"{where}: order must be one of {', '.join(KWAY_ORDERS)}, got {order!r}")
    if not 0 <= shifts <= MAX_LABELS:
        raise SpecError(f"{where}: shifts must be 0 (every cyclic shift) to {MAX_LABELS}, got {shifts}")


def judgments_per_group(order: str, size: int, shifts: int = 0) -> int:
    """What one group of ``size`` costs in judgments under ``order`` (``permute``: ``shifts`` cyclic shifts, 0: all).

    Examples
    --------
    >>> judgments_per_group("given", 4), judgments_per_group("both", 4), judgments_per_group("permute", 4, 3)
    (1, 2, 3)
    """
    if size < 2:
        return 0
    if order == "both":
        return 2
    if order != "permute":
        return 1
    return min(size, shifts) if shifts else size


@dataclass(frozen=True)
class GroupComparison:
    """One k-way judgment as a strategy used it: the candidates in the order shown, the judgment and the round."""

    shown: tuple[str, ...]
    judgment: GroupChoice | GroupRanking
    round: int | None = None

    @property
    def kind(self) -> str:
        """``choice`` or ``ranking``."""
        return CHOICE_KIND if isinstance(self.judgment, GroupChoice) else RANKING_KIND

    @property
    def ranking(self) -> tuple[str, ...] | None:
        """The chosen candidate alone (a choice) or all of them best first (a ranking); None when parsing failed."""
        judgment = self.judgment
        if isinstance(judgment, GroupChoice):
            return None if judgment.chosen is None else (self.shown[judgment.chosen],)
        return None if judgment.permutation is None else tuple(self.shown[slot] for slot in judgment.permutation)

    def to_dict(self) -> dict[str, Any]:
        """The results JSON's form: ``kind``, ``shown``, ``round`` and the judgment's fields."""
        return {"kind": self.kind, "shown": list(self.shown), "round": self.round, **self.judgment.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupComparison:
        """A k-way judgment read back from :meth:`to_dict`'s dict."""
        decode = GroupChoice.from_dict if data.get("kind", CHOICE_KIND) == CHOICE_KIND else GroupRanking.from_dict
        return cls(shown=tuple(data["shown"]), judgment=decode(data), round=data.get("round"))


@dataclass(frozen=True)
class GroupMatch:
    """The outcome of showing one group: its members as passed, each member's mean score over the
    orders shown, the winner (None: undecided) and the judgments it was made of."""

    members: tuple[str, ...]
    scores: dict[str, float]
    winner: str | None
    comparisons: tuple[GroupComparison, ...]

    @property
    def ranking(self) -> tuple[str, ...]:
        """The members by score, best first (ties: as passed)."""
        return tuple(sorted(self.members, key=lambda cid: -self.scores[cid]))


def _slot_scores(judgment: GroupChoice | GroupRanking, k: int) -> tuple[float, ...] | None:
    """Each slot's score in one judgment (``docs/matches.md``); None when parsing failed."""
    if judgment.status is ParseStatus.FAILED:
        return None
    if isinstance(judgment, GroupChoice):
        return judgment.slot_scores(k)
    scores = [0.0] * k
    for position, slot in enumerate(judgment.permutation or ()):
        scores[slot] = float(k - 1 - position)
    return tuple(scores)


def make_group_match(members: Sequence[str], comparisons: Sequence[GroupComparison]) -> GroupMatch:
    """Combine the judgments of one group, in any orders, into a :class:`GroupMatch`."""
    k = len(members)
    totals = dict.fromkeys(members, 0.0)
    firsts = dict.fromkeys(members, 0)
    counted = 0
    for comparison in comparisons:
        scores = _slot_scores(comparison.judgment, k)
        if scores is None:
            continue
        counted += 1
        for slot, cid in enumerate(comparison.shown):
            totals[cid] += scores[slot]
        top = comparison.ranking
        if top:
            firsts[top[0]] += 1
    if not counted:
        return GroupMatch(tuple(members), dict.fromkeys(members, 0.0), None, tuple(comparisons))
    means = {cid: total / counted for cid, total in totals.items()}
    winner = max(members, key=lambda cid: (means[cid], firsts[cid]))  # max keeps the first of equals
    return GroupMatch(tuple(members), means, winner, tuple(comparisons))


def presentations(
    members: Sequence[str], order: str, rng: random.Random | None, shifts: int = 0
) -> list[tuple[str, ...]]:
    """The orders a group is shown in: ``given``, ``random`` (drawn from ``rng``), ``both`` or ``permute`` (``shifts``).

    Examples
    --------
    >>> presentations(["a", "b", "c"], "permute", None)
    [('a', 'b', 'c'), ('b', 'c', 'a'), ('c', 'a', 'b')]
    """
    members = tuple(members)
    if order == "given":
        return [members]
    if order == "random":
        if rng is None:
            raise ValueError("order=random needs the strategy's generator: pass rng=")
        shuffled = list(members)
        rng.shuffle(shuffled)
        return [tuple(shuffled)]
    if order == "both":
        return [members, members[::-1]]
    if order == "permute":
        count = judgments_per_group(order, len(members), shifts)
        return [members[i:] + members[:i] for i in range(count)]
    raise SpecError(f"order must be one of {', '.join(KWAY_ORDERS)}, got {order!r}")


def play_groups(
    source: GroupSource,
    kind: str,
    groups: Sequence[Sequence[str]],
    order: str,
    rng: random.Random | None,
    round: int | None,
    shifts: int,
) -> list[GroupMatch]:
    """Show every group in its presentation orders and combine each group's ``choice`` or ``ranking`` judgments.

    All presentations are drawn first, then asked in one batch; a group of one member is not judged
    (it wins). One :class:`GroupMatch` per group, in order.
    """
    shown_per_group = [presentations(group, order, rng, shifts) if len(group) >= 2 else [] for group in groups]
    asked = [shown for shown_list in shown_per_group for shown in shown_list]
    judgments = dict(zip(asked, source.group_judgments(kind, asked, round)))
    matches = []
    for group, shown_list in zip(groups, shown_per_group):
        if len(group) < 2:
            matches.append(GroupMatch(tuple(group), dict.fromkeys(group, 0.0), group[0] if group else None, ()))
            continue
        played = [GroupComparison(shown, judgments[shown], round) for shown in shown_list]
        matches.append(make_group_match(group, played))
    return matches
