"""Leaderboards over graded verdicts and ties (rankkit.leaderboard.graded): weighting, Davidson, WildBench's rule."""

from __future__ import annotations

import pytest

from rankkit.judges import make_judge
from rankkit.judgments.values import ParseStatus, Verdict, Winner
from rankkit.leaderboard.board import Leaderboard, LeaderboardError
from rankkit.leaderboard.build import anchored, arena, build
from rankkit.leaderboard.graded import VerdictWeighting, match_outcomes, match_records
from rankkit.strategies.matches import Comparison, Match

LENGTHS = {"x": 100, "y": 2000}


def _match(*levels: int | None, first: str = "x") -> Match:
    comparisons = tuple(
        Comparison(
            first if i % 2 == 0 else ("y" if first == "x" else "x"),
            ("y" if first == "x" else "x") if i % 2 == 0 else first,
            Verdict(1.0, 0.0, Winner.FIRST, level=level),
        )
        for i, level in enumerate(levels)
    )
    return Match("x", "y", 1.0, 0.0, 1.0, comparisons)


def test_the_default_keeps_the_matchs_one_outcome():
    assert match_outcomes(_match(2), "X", "Y", VerdictWeighting(), LENGTHS) == [("X", "Y", 1.0)]


def test_a_strong_verdict_counts_strong_weight_times_and_ties_once():
    weighting = VerdictWeighting(strong_weight=3)
    assert match_outcomes(_match(2), "X", "Y", weighting, LENGTHS) == [("X", "Y", 1.0)] * 3
    # order=both: the second comparison shows y first, so its level is from y's side
    assert match_outcomes(_match(2, 0), "X", "Y", weighting, LENGTHS) == [("X", "Y", 1.0)] * 3 + [("X", "Y", 0.5)]
    assert match_outcomes(_match(2, 2), "X", "Y", weighting, LENGTHS) == [("X", "Y", 1.0)] * 3 + [("X", "Y", 0.0)] * 3


def test_match_records_carry_the_level_from_the_first_systems_side():
    assert match_records(_match(2), "X", "Y", VerdictWeighting(), LENGTHS) == [(("X", "Y", 1.0), 2)]
    # "x" shown second: its level is the negated verdict level
    assert match_records(_match(-1, first="y"), "X", "Y", VerdictWeighting(), LENGTHS)[0][1] == 1
    # two verdicts averaged into one outcome: no single level
    assert match_records(_match(2, -1), "X", "Y", VerdictWeighting(), LENGTHS)[0][1] is None
    assert match_records(_match(None), "X", "Y", VerdictWeighting(), LENGTHS)[0][1] is None
    weighted = match_records(_match(2, 0), "X", "Y", VerdictWeighting(strong_weight=3), LENGTHS)
    assert [level for _, level in weighted] == [2, 2, 2, 0]


def test_binary_comparisons_keep_the_plain_outcome_under_any_weighting():
    assert match_outcomes(_match(None), "X", "Y", VerdictWeighting(strong_weight=3), LENGTHS) == [("X", "Y", 1.0)]


def test_failed_comparisons_are_left_out():
    match = _match(1, 2)
    failed = Comparison("y", "x", Verdict(0.5, 0.5, Winner.TIE, status=ParseStatus.FAILED, level=None))
    match = Match("x", "y", 1.0, 0.0, 1.0, (match.comparisons[0], failed))
    assert match_outcomes(match, "X", "Y", VerdictWeighting(strong_weight=3), LENGTHS) == [("X", "Y", 1.0)]


def test_wildbench_rule_ties_a_slight_win_of_the_much_longer_answer():
    lengths = {"x": 3000, "y": 100}
    weighting = VerdictWeighting(length_margin=500)
    assert match_outcomes(_match(1), "X", "Y", weighting, lengths) == [("X", "Y", 0.5)]
    assert match_outcomes(_match(2), "X", "Y", weighting, lengths) == [("X", "Y", 1.0)]
    assert match_outcomes(_match(1), "X", "Y", weighting, {"x": 100, "y": 3000}) == [("X", "Y", 1.0)]


@pytest.mark.parametrize(
    "options",
    [
        {"ties": "third"},
        {"strong_weight": 0},
        {"strong_weight": True},
        {"length_margin": -1},
        {"ties": "ordinal", "strong_weight": 3},
    ],
)
def test_bad_weightings_are_leaderboard_errors(options):
    with pytest.raises(LeaderboardError):
        VerdictWeighting(**options)


def test_arena_with_arena_hard_weighting_counts_strong_verdicts_thrice(system_level_tasks):
    judge = make_judge("sim:verdicts=graded,seed=1")
    plain = arena(system_level_tasks, judge, resamples=0)
    weighted = arena(system_level_tasks, judge, resamples=0, weighting=VerdictWeighting(strong_weight=3))
    assert len(weighted.matches) > len(plain.matches)
    assert weighted.to_dict()["weighting"] == {"ties": "half", "strong_weight": 3, "length_margin": None}
    assert "weighting" not in plain.to_dict()
    assert Leaderboard.from_dict(weighted.to_dict()).weighting == weighted.weighting


def test_davidson_arena_ranks_planted_systems(system_level_tasks):
    from tests.leaderboard.conftest import HUMAN_ORDER

    judge = make_judge("sim:verdicts=graded,seed=1,pair_noise=0.1")
    board = arena(system_level_tasks, judge, resamples=20, weighting=VerdictWeighting(ties="davidson"))
    assert board.names[:2] == HUMAN_ORDER[:2]
    assert all(row.ci_low is not None and row.ci_low <= row.ci_high for row in board.systems)


def test_davidson_is_refused_where_it_has_no_meaning(system_level_tasks):
    judge = make_judge("sim:verdicts=graded")
    davidson = VerdictWeighting(ties="davidson")
    with pytest.raises(LeaderboardError, match="arena only"):
        anchored(system_level_tasks, judge, "s0", resamples=0, weighting=davidson)
    with pytest.raises(LeaderboardError, match="style control"):
        arena(system_level_tasks, judge, resamples=0, control="length", weighting=davidson)
    with pytest.raises(LeaderboardError, match="arena and anchored"):
        build(system_level_tasks, judge, "bt", resamples=0, weighting=davidson)


def test_ordinal_arena_reads_every_verdicts_level(system_level_tasks):
    from tests.leaderboard.conftest import HUMAN_ORDER

    judge = make_judge("sim:verdicts=graded,seed=1,pair_noise=0.1")
    board = arena(system_level_tasks, judge, resamples=20, order="both", weighting=VerdictWeighting(ties="ordinal"))
    assert board.names[:2] == HUMAN_ORDER[:2]
    assert all(row.ci_low is not None and row.ci_low <= row.ci_high for row in board.systems)
    # Both orders of a match are two records, each with its own level (not one averaged outcome).
    assert None not in board.match_levels
    assert len(board.matches) == 2 * len(arena(system_level_tasks, judge, resamples=0, order="given").matches)
    assert Leaderboard.from_dict(board.to_dict()).weighting == {
        "ties": "ordinal",
        "strong_weight": 1,
        "length_margin": None,
    }


def test_ordinal_needs_verdict_levels(system_level_tasks):
    with pytest.raises(LeaderboardError, match="verdicts=tie or verdicts=graded"):
        arena(system_level_tasks, make_judge("sim:seed=1"), resamples=0, weighting=VerdictWeighting(ties="ordinal"))
    with pytest.raises(LeaderboardError, match="arena only"):
        anchored(
            system_level_tasks, make_judge("sim:verdicts=graded"), "s0", weighting=VerdictWeighting(ties="ordinal")
        )


def test_anchored_win_rate_with_strong_weight(system_level_tasks):
    judge = make_judge("sim:verdicts=graded,seed=2")
    board = anchored(system_level_tasks, judge, "s0", resamples=0, weighting=VerdictWeighting(strong_weight=3))
    assert all(a != "s0" and b == "s0" for a, b, _ in board.matches)
    assert board.system("s7").rating > board.system("s1").rating


def test_board_json_keeps_each_matchs_level_and_reads_old_boards(system_level_tasks):
    board = arena(system_level_tasks, make_judge("sim:verdicts=graded,seed=1"), resamples=0)
    records = board.to_dict()["matches"]
    assert len(board.match_levels) == len(board.matches) == len(records)
    assert {record["level"] for record in records} <= {-2, -1, 0, 1, 2}
    assert {abs(record["level"]) for record in records} == {0, 1, 2}
    for (a, b, outcome), record in zip(board.matches, records):  # the level agrees with its outcome
        assert (record["a"], record["b"]) == (a, b)
        assert outcome == pytest.approx(1.0 if record["level"] > 0 else 0.0 if record["level"] < 0 else 0.5, abs=1e-12)
    assert Leaderboard.from_dict(board.to_dict()).match_levels == board.match_levels
    old = board.to_dict()
    for record in old["matches"]:
        del record["level"]
    assert Leaderboard.from_dict(old).levels_of_matches() == [None] * len(board.matches)


def test_binary_boards_store_a_null_level(system_level_tasks):
    board = arena(system_level_tasks, make_judge("sim:seed=1"), resamples=0)
    assert {record["level"] for record in board.to_dict()["matches"]} == {None}


def test_a_board_file_with_a_bad_level_is_refused(tmp_path, system_level_tasks):
    import json

    from rankkit.errors import TaskFormatError
    from rankkit.leaderboard.board import read_board

    data = arena(system_level_tasks, make_judge("sim:verdicts=graded,seed=1"), resamples=0).to_dict()
    data["matches"][3]["level"] = 7
    path = tmp_path / "board.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    with pytest.raises(TaskFormatError, match=r"matches\[3\]\.level"):
        read_board(path)
