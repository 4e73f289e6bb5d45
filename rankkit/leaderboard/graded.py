"""How a leaderboard counts graded verdicts and ties (``verdicts=tie|graded`` judges; ``docs/graded-verdicts.md``).

:class:`VerdictWeighting` holds the three options: ``ties`` (``half``: Bradley–Terry with a tie as
half a win each way; ``davidson``: the tie-aware fit), ``strong_weight`` (how many wins a strong
verdict counts as: arena-hard-auto's 3) and ``length_margin`` (WildBench's rule: a "slightly better"
verdict becomes a tie when its winner is longer by more than this many characters). The default
changes nothing: a match's outcome is its :class:`~rankkit.strategies.matches.Match` outcome.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from rankkit.leaderboard.board import LeaderboardError
from rankkit.stats.graded import TIE_MODELS, length_penalised_level, level_outcome
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
        if self.length_margin is not None and (not isinstance(self.length_margin, int) or self.length_margin < 0):
            raise LeaderboardError(
                f"length_margin must be a whole number of characters >= 0, got {self.length_margin!r}"
            )

    @property
    def reweights(self) -> bool:
        """Whether outcomes come from the verdicts' levels (a strong weight or a length margin)."""
        return self.strong_weight != 1 or self.length_margin is not None

    def for_win_rate(self) -> VerdictWeighting:
        """This weighting, for a win rate: a LeaderboardError for ``ties=davidson`` (a fit, not a rate)."""
        if self.ties == "davidson":
            raise LeaderboardError("the anchored leaderboard rates by win rate: ties=davidson applies to arena only")
        return self

    def to_dict(self) -> dict[str, Any]:
        """The JSON form: ``ties``, ``strong_weight``, ``length_margin``."""
        return {"ties": self.ties, "strong_weight": self.strong_weight, "length_margin": self.length_margin}

    def stored(self) -> dict[str, Any] | None:
        """What a leaderboard stores: :meth:`to_dict`, or None for the default (boards keep their form)."""
        return None if self == VerdictWeighting() else self.to_dict()


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
    plain = [(a, b, match.outcome)]
    read = [c for c in match.comparisons if decided(c)]
    if not weighting.reweights or not read or any(c.verdict.level is None for c in read):
        return plain
    outcomes = []
    for comparison in read:
        level = comparison.verdict.level if comparison.first == match.a else -comparison.verdict.level
        if weighting.length_margin is not None:
            level = length_penalised_level(level, lengths[match.a], lengths[match.b], weighting.length_margin)
        count = weighting.strong_weight if abs(level) == 2 else 1
        outcomes += [(a, b, level_outcome(level))] * count
    return outcomes
