"""Single-elimination brackets, for the ``knockout`` strategy and the Arena-lite leaderboard.

Each round pairs neighbours of the current order (first with second, ...) and hands all pairs to
the caller at once, so a batching judge gets the whole round; winners advance in their pairs'
order, and with an odd number the last entrant advances unplayed (a bye).
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # rankkit.strategies.matches loads networkx; a bracket only reads a match's a, b and outcome
    from rankkit.strategies.matches import Match

#: Who advances from a tied match: ``coin`` (a seeded coin flip), ``first`` (the match's ``a``,
#: the answer shown first) or ``second`` (its ``b``).
TIE_RULES = ("coin", "first", "second")

#: Plays one round: ``play_round(pairs, round=number)`` returns one :class:`~rankkit.strategies.matches.Match`
#: per pair (a, b), in order, whose ``outcome`` is 1.0 when its ``a`` won, 0.0 when its ``b`` won
#: and 0.5 for a tie — :meth:`MatchSource.play_many <rankkit.strategies.matches.MatchSource.play_many>` with
#: its presentation order bound (``functools.partial(source.play_many, order=...)``).
PlayRound = Callable[..., Sequence["Match"]]


@dataclass(frozen=True)
class Bracket:
    """A bracket played to the end.

    Attributes
    ----------
    rounds
        The matches of each round in play order, round 1 first.
    eliminated_round
        The round each entrant lost in; None for the champion.
    byes
        How many rounds each entrant advanced unplayed.
    """

    rounds: tuple[tuple[Match, ...], ...]
    champion: str
    eliminated_round: Mapping[str, int | None]
    byes: Mapping[str, int]


def play_bracket(
    entrants: Sequence[str], rng: random.Random, play_round: PlayRound, reshuffle: bool = True, tie: str = "coin"
) -> Bracket:
    """Play a single-elimination bracket between ``entrants`` (at least one).

    ``rng`` draws the shuffles and the tie coins; ``reshuffle`` shuffles before every round (Knockout
    Assessment) rather than only before the first (Arena-lite); ``tie`` is one of :data:`TIE_RULES`.
    An undecided match lets the answer shown first advance.
    """
    if tie not in TIE_RULES:
        raise ValueError(f"tie must be one of {', '.join(TIE_RULES)}, got {tie!r}")
    if not entrants:
        raise ValueError("a bracket needs at least one entrant")
    alive = list(entrants)
    eliminated: dict[str, int | None] = dict.fromkeys(alive)
    byes = dict.fromkeys(alive, 0)
    rounds: list[tuple[Match, ...]] = []
    while len(alive) > 1:
        if reshuffle or not rounds:
            rng.shuffle(alive)
        number = len(rounds) + 1
        pairs = [(alive[i], alive[i + 1]) for i in range(0, len(alive) - 1, 2)]
        played = tuple(play_round(pairs, round=number))
        advancing = []
        for match in played:
            if match.outcome is None:  # undecided: the answer shown first goes on (rankkit.strategies.matches)
                a_wins = True
            elif match.outcome == 0.5:
                a_wins = _a_wins_tie(tie, rng)
            else:
                a_wins = match.outcome == 1.0
            winner, loser = (match.a, match.b) if a_wins else (match.b, match.a)
            advancing.append(winner)
            eliminated[loser] = number
        if len(alive) % 2:
            byes[alive[-1]] += 1
            advancing.append(alive[-1])
        rounds.append(played)
        alive = advancing
    return Bracket(rounds=tuple(rounds), champion=alive[0], eliminated_round=eliminated, byes=byes)


def _a_wins_tie(tie: str, rng: random.Random) -> bool:
    """Whether a tied match's ``a`` advances. The coin is drawn whatever the rule, so that the rule
    changes who advances from this tie and nothing else: the later draws stay the same."""
    coin = rng.random() < 0.5
    return {"coin": coin, "first": True, "second": False}[tie]
