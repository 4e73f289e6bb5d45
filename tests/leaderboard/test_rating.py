"""The anchored leaderboard's ceiling check (rankkit/leaderboard/rating.py)."""

from __future__ import annotations

import pytest

from rankkit.judges import make_judge
from rankkit.leaderboard.board import AnchorCeiling, Leaderboard
from rankkit.leaderboard.build import anchored
from rankkit.leaderboard.rating import anchor_ceiling, mean_lengths
from tests.leaderboard.conftest import PERFECT


def matches_against(anchor: str, wins: dict[str, tuple[int, int]]) -> list[tuple[str, str, float]]:
    """``wins``: system -> (won, lost) against ``anchor``; the anchor sits in either slot."""
    out = []
    for system, (won, lost) in wins.items():
        out += [(system, anchor, 1.0)] * won + [(anchor, system, 1.0)] * lost
    return out


def test_the_ceiling_is_a_win_rate_within_a_tenth_of_0_or_1():
    matches = matches_against("z", {"a": (9, 1), "b": (1, 9), "c": (8, 2), "d": (5, 5)})
    ceiling = anchor_ceiling(matches, "z")
    assert ceiling.at_ceiling == ("a", "b")  # 0.9 and 0.1 are at the ceiling; 0.8 is not
    assert ceiling.share == pytest.approx(0.5, abs=1e-12)
    assert ceiling.saturated  # more than a third
    assert ceiling.suggestion == "d"  # median win rate (b 0.1, d 0.5, c 0.8, a 0.9: the lower middle)


def test_the_suggestion_is_the_median_length_system_when_lengths_are_known():
    matches = matches_against("z", {"a": (10, 0), "b": (10, 0), "c": (10, 0)})
    ceiling = anchor_ceiling(matches, "z", lengths={"a": 3000.0, "b": 500.0, "c": 1200.0, "z": 100.0})
    assert ceiling.suggestion == "c" and ceiling.share == pytest.approx(1.0, abs=1e-12)
    assert anchor_ceiling([], "z") == AnchorCeiling("z", (), 0.0, None)


def test_a_third_at_the_ceiling_is_not_saturated():
    matches = matches_against("z", {"a": (10, 0), "b": (6, 4), "c": (4, 6)})
    ceiling = anchor_ceiling(matches, "z")
    assert ceiling.share == pytest.approx(1 / 3, abs=1e-12) and not ceiling.saturated


def test_an_anchored_board_records_the_check_and_keeps_it_in_its_json(system_level_tasks, noisy_tasks):
    # A perfect judge: every system wins or loses every match against s3, the whole field at the ceiling.
    board = anchored(system_level_tasks, make_judge(PERFECT), "s3", resamples=0)
    assert board.anchor_ceiling is not None and board.anchor_ceiling.saturated
    assert set(board.anchor_ceiling.at_ceiling) == {"s0", "s1", "s2", "s4", "s5", "s6", "s7"}
    lengths = mean_lengths(system_level_tasks)
    by_length = sorted((name for name in lengths if name != "s3"), key=lambda name: (lengths[name], name))
    assert board.anchor_ceiling.suggestion == by_length[(len(by_length) - 1) // 2]
    again = Leaderboard.from_dict(board.to_dict())
    assert again.anchor_ceiling == board.anchor_ceiling
    assert board.to_dict()["anchor_ceiling"]["saturated"] is True
    # A noisy judge and a mid-field anchor: the win rates spread around 1/2, nothing at the ceiling.
    board = anchored(noisy_tasks, make_judge("sim:preset=gpt4,seed=0"), "s4", resamples=0)
    assert board.anchor_ceiling.at_ceiling == () and not board.anchor_ceiling.saturated
    # An arena board has no anchor to check.
    assert Leaderboard.from_dict({**board.to_dict(), "anchor_ceiling": None}).anchor_ceiling is None


def test_rate_davidson_ranks_with_intervals():
    from rankkit.leaderboard.rating import rate_davidson

    outcomes = (
        [("a", "b", 1.0)] * 6
        + [("a", "b", 0.5)] * 3
        + [("b", "c", 1.0)] * 6
        + [("b", "c", 0.5)] * 3
        + [("c", "a", 0.0)] * 4
    )
    rows = rate_davidson(outcomes, ["a", "b", "c"], resamples=50, seed=0)
    assert [row.name for row in rows] == ["a", "b", "c"]
    for row in rows:
        assert row.ci_low < row.ci_high  # 50 resamples of 22 outcomes: a real interval
    assert rate_davidson(outcomes, ["a", "b", "c"], resamples=50, seed=0) == rows  # same seed, same board
