"""Adding a system to a stored leaderboard: binary search, anchored, and reuse of stored judgments."""

from __future__ import annotations

import pytest

from rankkit.judges import make_judge
from rankkit.judgments.cache import JudgmentCache
from rankkit.leaderboard import LeaderboardError, add_system, anchored, arena
from tests.leaderboard.conftest import HUMAN_ORDER, PERFECT, STRENGTHS


@pytest.mark.parametrize("newcomer", sorted(STRENGTHS))
def test_binary_search_add_places_a_planted_system_at_its_true_rank(noisy_tasks, newcomer):
    judge = make_judge(PERFECT)
    others = [s for s in STRENGTHS if s != newcomer]
    board = arena(noisy_tasks, judge, systems=others, resamples=0)
    added = add_system(board, noisy_tasks, judge, newcomer, "binary", resamples=0)
    assert added.names.index(newcomer) == HUMAN_ORDER.index(newcomer)
    row = added.system(newcomer)  # placed by the search, rated by its matches
    assert row.rating is not None and row.ci_low is None  # resamples=0: no interval
    steps = added.placement["steps"]
    assert 1 <= len(steps) <= 4 and all(step["matches"] == 100 // 2 for step in steps)  # |X| / floor(log2 7)
    assert added.cost.judge_calls == board.cost.judge_calls + added.placement["judge_calls"]
    assert len(added.matches) == len(board.matches) + added.placement["matches"]
    assert [row.rank for row in added.systems] == list(range(1, 9))


@pytest.mark.parametrize("newcomer", ["s3", "s4", "s5", "s6", "s7"])
def test_anchored_add_places_a_planted_system_at_its_true_rank(noisy_tasks, newcomer):
    judge = make_judge(PERFECT)
    board = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != newcomer], resamples=0)
    added = add_system(board, noisy_tasks, judge, newcomer, "anchored", resamples=30)
    assert added.names.index(newcomer) == HUMAN_ORDER.index(newcomer)
    row = added.system(newcomer)
    assert row.ci_low <= row.rating <= row.ci_high
    assert added.placement["opponent"] == board.names[0]
    assert added.placement["matches"] == 100


def test_anchored_add_is_within_one_rank_far_below_the_top(noisy_tasks):
    # far below the top the newcomer wins almost nothing against it, so the win rate is coarse
    judge = make_judge(PERFECT)
    for newcomer in ("s0", "s1", "s2"):
        board = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != newcomer], resamples=0)
        added = add_system(board, noisy_tasks, judge, newcomer, "anchored", resamples=0)
        assert abs(added.names.index(newcomer) - HUMAN_ORDER.index(newcomer)) <= 1


def test_adding_to_an_anchored_leaderboard_plays_its_anchor(system_level_tasks):
    judge = make_judge(PERFECT)
    board = anchored(system_level_tasks, judge, "s3", systems=[s for s in STRENGTHS if s != "s5"], resamples=0)
    added = add_system(board, system_level_tasks, judge, "s5", "anchored", resamples=0)
    assert added.placement["opponent"] == "s3"
    assert added.system("s5").rating == pytest.approx(1.0, abs=1e-12)


def test_a_newcomer_is_shown_in_both_orders_when_the_board_was(system_level_tasks):
    judge = make_judge(PERFECT)
    others = [s for s in STRENGTHS if s != "s5"]
    for order, per_match in (("given", 1), ("both", 2)):
        board = arena(system_level_tasks, judge, systems=others, order=order, resamples=0)
        added = add_system(board, system_level_tasks, judge, "s5", "anchored", resamples=0)
        assert added.order == order
        assert added.cost.comparisons - board.cost.comparisons == per_match * added.placement["matches"]


def test_adding_reuses_stored_judgments(noisy_tasks, cache_path):
    judge = make_judge(PERFECT)
    board = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != "s4"], resamples=0)
    with JudgmentCache(cache_path) as cache:
        first = add_system(board, noisy_tasks, judge, "s4", "binary", cache=cache, resamples=0)
    with JudgmentCache(cache_path) as cache:
        again = add_system(board, noisy_tasks, judge, "s4", "binary", cache=cache, resamples=0)
    assert first.placement["judge_calls"] > 0
    assert again.placement["judge_calls"] == 0
    assert again.names == first.names
    # one cache file serves several leaderboards the same way
    with JudgmentCache(cache_path) as cache:
        full = arena(noisy_tasks, judge, cache=cache, resamples=0)
        seven = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != "s4"], cache=cache, resamples=0)
        # Seven systems make other tasks (the simulator reads each task's human-score spread),
        # so nothing may be served from the eight-system run: requests are keyed by content.
        assert seven.cost.cache_hits == 0
        added = add_system(seven, noisy_tasks, judge, "s4", "anchored", cache=cache, resamples=0)
    assert added.placement["judge_calls"] < added.placement["matches"]
    assert full.cost.judge_calls > 0
    with pytest.raises(LeaderboardError, match="already"):
        add_system(full, noisy_tasks, judge, "s4")


def test_rating_against_one_opponent_is_the_anchored_rating():
    import math

    from rankkit.leaderboard.add import rating_against
    from rankkit.stats.ratings import ELO_BASE, ELO_SCALE

    outcomes = [("new", "top", 1.0)] * 7 + [("new", "top", 0.0)] * 3
    expected = 1200.0 + ELO_SCALE * math.log(0.7 / 0.3, ELO_BASE)
    assert rating_against(outcomes, {"top": 1200.0}) == pytest.approx(expected, abs=1e-6)
    # Won everything: finite, at the clipped win rate 1 - 1/(2n).
    swept = rating_against([("new", "top", 1.0)] * 10, {"top": 1200.0})
    assert swept == pytest.approx(1200.0 + ELO_SCALE * math.log(0.95 / 0.05, ELO_BASE), abs=1e-6)
