"""How a leaderboard counts graded verdicts and ties (``verdicts=tie|graded`` judges; ``docs/graded-verdicts.md``).

:class:`VerdictWeighting` holds the three options: ``ties`` (``half``: Bradley–Terry with a tie as
half a win each way; ``davidson``: Davidson's tie model; ``ordinal``: the ordinal model, which reads
every verdict's level, ties and strong verdicts alike), ``strong_weight`` (how many wins a strong
verdict counts as: arena-hard-auto's 3) and ``length_margin`` (WildBench's rule: a "slightly better"
verdict becomes a tie when its winner is longer by more than this many characters). The default
changes nothing: a match's outcome is its :class:`~rankkit.strategies.matches.Match` outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from rankkit.leaderboard.board import LeaderboardError
from rankkit.stats.graded import TIE_MODELS, GradedMatch, length_penalised_level, level_outcome
from rankkit.stats.ratings import Outcome
from rankkit.strategies.matches import Match, decided


@dataclass(frozen=True)
class VerdictWeighting:
    """How graded verdicts become a leaderboard's outcomes and ratings (see the module docstring)."""

    ties: str = "half"
    strong_weight: int = 1
    length_margin: int | None = None

    def __post_init__(self) -> None:
        if self.ties not in TIE_MODELS:
            raise LeaderboardError(f"ties must be one of {', '.join(TIE_MODELS)}, got {self.ties!r}")
        if isinstance(self.strong_weight, bool) or not isinstance(self.strong_weight, int) or self.strong_weight < 1:
            raise LeaderboardError(f"strong_weight must be a whole number >= 1, got {self.strong_weight!r}")
        if self.ties == "ordinal" and self.strong_weight != 1:
            raise LeaderboardError("ties=ordinal reads a strong verdict as its own level: leave strong_weight at 1")
        if self.length_margin is not None and (not isinstance(self.length_margin, int) or self.length_margin < 0):
            raise LeaderboardError(
                f"length_margin must be a whole number of characters >= 0, got {self.length_margin!r}"
            )

    @property
    def reweights(self) -> bool:
        """Whether outcomes come from the verdicts' levels (a strong weight, a length margin or ``ties=ordinal``)."""
        return self.strong_weight != 1 or self.length_margin is not None or self.ties == "ordinal"

    def for_win_rate(self) -> VerdictWeighting:
        """This weighting, for a win rate: a LeaderboardError for ``ties=davidson|ordinal`` (fits, not rates)."""
        if self.ties in ("davidson", "ordinal"):
            raise LeaderboardError(
                f"the anchored leaderboard rates by win rate: ties={self.ties} applies to arena only"
            )
        return self

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``ties``, ``strong_weight``, ``length_margin``."""
        return {"ties": self.ties, "strong_weight": self.strong_weight, "length_margin": self.length_margin}

    def stored(self) -> dict[str, Any] | None:
        """What a leaderboard stores: :meth:`to_dict`, or None for the default (boards keep their form)."""
        return None if self == VerdictWeighting() else self.to_dict()


#: A match record: its outcome ``(a, b, a's points)`` and the verdict level it rests on, from a's side
#: (None: a binary judge, or several verdicts averaged into one outcome).
LevelledOutcome = tuple[Outcome, int | None]

#: Binary counting: every match its one outcome, fitted by Bradley–Terry (the default of every leaderboard).
AS_BINARY = VerdictWeighting()


def match_outcomes(
    match: Match, a: str, b: str, weighting: VerdictWeighting, lengths: Mapping[str, int]
) -> list[Outcome]:
    """The outcomes ``(a, b, a's points)`` of a decided match between systems ``a`` and ``b``.

    With :attr:`VerdictWeighting.reweights`, each read comparison counts by its level (seen from
    ``match.a``, the length rule applied with ``lengths`` of the candidates' texts), a strong verdict
    ``strong_weight`` times; a match any of whose read comparisons has no level (a binary judge)
    keeps its one outcome.
    """
    return [outcome for outcome, _ in match_records(match, a, b, weighting, lengths)]


def match_records(
    match: Match, a: str, b: str, weighting: VerdictWeighting, lengths: Mapping[str, int]
) -> list[LevelledOutcome]:
    """:func:`match_outcomes`, each with the level it rests on, from ``a``'s (``match.a``'s) side.

    The level is None for a binary judge, and for a match whose one outcome averages several
    verdicts (both orders shown, no reweighting): a leaderboard keeps it per match record.
    """
    read = [c for c in match.comparisons if decided(c)]
    levels = [c.verdict.level if c.first == match.a else _negated(c.verdict.level) for c in read]
    if not weighting.reweights or not read or any(level is None for level in levels):
        return [((a, b, match.outcome), levels[0] if len(levels) == 1 else None)]
    records = []
    for level in levels:
        if weighting.length_margin is not None:
            level = length_penalised_level(level, lengths[match.a], lengths[match.b], weighting.length_margin)
        count = weighting.strong_weight if abs(level) == 2 else 1
        records += [((a, b, level_outcome(level)), level)] * count
    return records


def _negated(level: int | None) -> int | None:
    return None if level is None else -level


def graded_matches(outcomes: Sequence[Outcome], levels: Sequence[int | None]) -> list[GradedMatch]:
    """The ``(a, b, level from a's side)`` of match records, for the ordinal fit.

    Raises
    ------
    LeaderboardError
        When a record has no level: a binary judge's verdicts carry none (judge with ``verdicts=tie``
        or ``graded`` for ``ties=ordinal``).
    """
    if any(level is None for level in levels):
        raise LeaderboardError(
            "ties=ordinal reads each verdict's level, and some matches have none: use a judge with "
            "verdicts=tie or verdicts=graded"
        )
    return [(a, b, level) for (a, b, _), level in zip(outcomes, levels)]
