"""The single-elimination bracket shared by the knockout strategy and the Arena-lite leaderboard."""

from __future__ import annotations

import math
import random
from dataclasses import dataclass

import pytest

from rankkit.strategies.brackets import play_bracket


@dataclass(frozen=True)
class Played:
    """The part of a match a bracket reads."""

    a: str
    b: str
    outcome: float


def lower_id_wins(pairs, round):
    """A deterministic round: the entrant with the smaller number wins (e0 beats everyone)."""
    return [Played(a, b, 1.0 if int(a[1:]) < int(b[1:]) else 0.0) for a, b in pairs]


def always_tied(pairs, round):
    return [Played(a, b, 0.5) for a, b in pairs]


@pytest.mark.parametrize("n", [1, 2, 3, 5, 8, 13])
@pytest.mark.parametrize("reshuffle", [True, False])
def test_n_entrants_play_n_minus_one_matches_and_all_but_the_champion_lose_once(n, reshuffle):
    entrants = [f"e{i}" for i in range(n)]
    bracket = play_bracket(entrants, random.Random(n), lower_id_wins, reshuffle=reshuffle)
    assert bracket.champion == "e0"
    assert sum(len(matches) for matches in bracket.rounds) == n - 1
    assert len(bracket.rounds) == math.ceil(math.log2(n))
    assert bracket.eliminated_round["e0"] is None
    assert sorted(r for r in bracket.eliminated_round.values() if r is not None) == sorted(
        number for number, matches in enumerate(bracket.rounds, start=1) for _ in matches
    )
    alive, odd_rounds = n, 0
    for matches in bracket.rounds:  # a round with an odd number alive gives one bye
        odd_rounds += alive % 2
        alive -= len(matches)
    assert sum(bracket.byes.values()) == odd_rounds


def test_a_fixed_bracket_keeps_its_first_draw_and_winners_keep_their_order():
    entrants = [f"e{i}" for i in range(8)]
    bracket = play_bracket(entrants, random.Random(3), lower_id_wins, reshuffle=False)
    first = [entrant for match in bracket.rounds[0] for entrant in (match.a, match.b)]
    drawn = list(entrants)
    random.Random(3).shuffle(drawn)
    assert first == drawn
    winners = [min(m.a, m.b, key=lambda e: int(e[1:])) for m in bracket.rounds[0]]
    assert [entrant for match in bracket.rounds[1] for entrant in (match.a, match.b)] == winners


def test_the_tie_rule_decides_who_advances_and_changes_no_later_draw():
    entrants = [f"e{i}" for i in range(6)]
    rng_first, rng_second = random.Random(0), random.Random(0)
    first = play_bracket(entrants, rng_first, always_tied, tie="first")
    second = play_bracket(entrants, rng_second, always_tied, tie="second")
    assert [(m.a, m.b) for m in first.rounds[0]] == [(m.a, m.b) for m in second.rounds[0]]
    assert {cid for cid, r in first.eliminated_round.items() if r == 1} == {m.b for m in first.rounds[0]}
    assert {cid for cid, r in second.eliminated_round.items() if r == 1} == {m.a for m in second.rounds[0]}
    assert rng_first.getstate() == rng_second.getstate()  # a coin was drawn on every tie either way


def test_bad_tie_rule_and_empty_bracket_are_refused():
    with pytest.raises(ValueError, match="tie must be one of coin, first, second"):
        play_bracket(["a", "b"], random.Random(0), always_tied, tie="toss")
    with pytest.raises(ValueError, match="at least one entrant"):
        play_bracket([], random.Random(0), always_tied)
