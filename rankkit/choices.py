"""k-way judgments as strategies use them: groups shown in a presentation order, and their records.

More in ``docs/matches.md``.
"""

from __future__ import annotations

import random
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from rankkit.judgments import CHOICE_KIND, MAX_LABELS, RANKING_KIND, GroupChoice, GroupRanking, ParseStatus
from rankkit.specs import SpecError


class GroupSource(Protocol):
    """What :func:`play_groups` needs of a :class:`~rankkit.matches.MatchSource` (named here by
    its method only, so that this module and ``matches`` do not import each other)."""

    def group_judgments(self, kind: str, shown: Sequence[tuple[str, ...]], round: int | None = None) -> list[Any]:
        """The judge's k-way judgment of each group, members in the order shown.

        Parameters
        ----------
        kind : str
            ``choice`` or ``ranking``.
        shown : Sequence[tuple[str, ...]]
            Each group's candidate ids, in the order shown.
        round : int or None
            The strategy's round.

        Returns
        -------
        list[GroupJudgment]
            One per group, in order.
        """


#: The presentation orders of a k-way strategy (see ``docs/matches.md``).
KWAY_ORDERS = ("given", "random", "both", "permute")


def check_kway_order(where: str, order: str, shifts: int) -> None:
    """Raise :class:`SpecError` unless ``order`` is one of :data:`KWAY_ORDERS` and ``shifts`` is 0..8.

    Parameters
    ----------
    where : str
        What to name in the error (the strategy).
    order : str
        The presentation order.
    shifts : int
        The number of extra cyclic shifts.

    Raises
    ------
    SpecError
        When either is not allowed.
    """
    if order not in KWAY_ORDERS:
        raise SpecError(f"{where}: order must be one of {', '.join(KWAY_ORDERS)}, got {order!r}")
    if not 0 <= shifts <= MAX_LABELS:
        raise SpecError(f"{where}: shifts must be 0 (every cyclic shift) to {MAX_LABELS}, got {shifts}")


def judgments_per_group(order: str, size: int, shifts: int = 0) -> int:
    """What one group of ``size`` costs in judgments under ``order`` (``permute``: its shifts).

    Parameters
    ----------
    order : str
        The presentation order.
    size : int
        The group's size.
    shifts : int
        Extra cyclic shifts (``permute``).

    Returns
    -------
    int
        The number of judgments.

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
    """One k-way judgment as a strategy used it: the candidates in the order shown, the judgment
    (a :class:`~rankkit.judgments.GroupChoice` or :class:`~rankkit.judgments.GroupRanking`)
    and the strategy's round."""

    shown: tuple[str, ...]
    judgment: GroupChoice | GroupRanking
    round: int | None = None

    @property
    def kind(self) -> str:
        """``choice`` or ``ranking``."""
        return CHOICE_KIND if isinstance(self.judgment, GroupChoice) else RANKING_KIND

    @property
    def ranking(self) -> tuple[str, ...] | None:
        """The candidates the judge put first: the chosen one alone for a choice, all of them
        best first for a ranking; None when parsing failed."""
        judgment = self.judgment
        if isinstance(judgment, GroupChoice):
            return None if judgment.chosen is None else (self.shown[judgment.chosen],)
        return None if judgment.permutation is None else tuple(self.shown[slot] for slot in judgment.permutation)

    def to_dict(self) -> dict[str, Any]:
        """The k-way judgment as the results JSON stores it (the judgment's fields flattened in).

        Returns
        -------
        dict[str, Any]
            ``kind``, ``shown``, ``round`` and the judgment's fields.
        """
        return {"kind": self.kind, "shown": list(self.shown), "round": self.round, **self.judgment.to_dict()}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> GroupComparison:
        """A k-way judgment read back from :meth:`to_dict`'s dict.

        Parameters
        ----------
        data : dict[str, Any]
            A stored k-way judgment.

        Returns
        -------
        GroupComparison
            The judgment.
        """
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
    """Combine the judgments of one group (in any orders) into a :class:`GroupMatch`.

    Parameters
    ----------
    members : Sequence[str]
        The group's candidate ids.
    comparisons : Sequence[GroupComparison]
        Its judgments.

    Returns
    -------
    GroupMatch
        The combined match.
    """
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
    """The orders a group is shown in (``docs/matches.md``). ``random`` draws from ``rng``.

    Parameters
    ----------
    members : Sequence[str]
        The group's candidate ids.
    order : str
        ``given``, ``random``, ``both`` or ``permute``.
    rng : random.Random or None
        The generator for ``random``.
    shifts : int
        Extra cyclic shifts (``permute``).

    Returns
    -------
    list[tuple[str, ...]]
        The orders shown.

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
    """Show every group in its presentation orders and combine each group's judgments.

    Every presentation is drawn before any judgment, and all of them are asked in one batch.

    Parameters
    ----------
    source : GroupSource
        Where the judgments come from (a :class:`~rankkit.matches.MatchSource`).
    groups : Sequence[Sequence[str]]
        The groups of candidate ids.
    order : str
        The presentation order.
    rng : random.Random | None
        The generator for ``random``.
    round : int | None
        The strategy's round.
    shifts : int
        Extra cyclic shifts (``permute``).
    kind : str
        ``choice`` or ``ranking``. Groups of one member are not judged (their member wins).

    Returns
    -------
    list[GroupMatch]
        One per group, in order.
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
