"""rankkit.reports.report_data: the page's embedded data, its brackets and system leaderboards (no browser)."""

from __future__ import annotations

import json

import pytest

from rankkit.reports import report_data
from rankkit.runs.results import RunResult, TaskResult
from tests.reports.test_report import INJECTED_CLOSE
from tests.runs.analysis.hand import cost, hand_results


def test_embedded_json_cannot_close_its_script_element():
    data = {"text": INJECTED_CLOSE + " & <!-- \u2028", "n": [1, 2.5, None]}
    embedded = report_data.embed_json(data)
    assert "<" not in embedded and ">" not in embedded and "&" not in embedded
    assert json.loads(embedded) == data


def test_bracket_round_by_round_from_the_hand_fixture():
    ko_t2 = TaskResult.from_dict(hand_results()["strategies"][0]["tasks"][1])
    bracket = report_data.knockout_bracket(ko_t2)
    assert bracket["champion"] == "d"
    first, final = bracket["rounds"]
    assert [(p["a"], p["b"], p["winner"]) for p in first["pairings"]] == [("a", "b", "b"), ("c", "d", "d")]
    assert [(p["a"], p["b"], p["winner"]) for p in final["pairings"]] == [("d", "b", "d")]
    assert final["pairings"][0]["matches"] == [2]
    assert first["byes"] == [] and final["byes"] == []


def test_bracket_with_a_bye_and_pairs_in_both_orders():
    # Three candidates: x gets a bye in round 1 and loses the final to z; y lost to z in round 1.
    # Round 1 is in both orders, so the grades are averaged over the two comparisons.
    def comparison(first, second, round, s1, s2, winner):
        return {
            "first": first,
            "second": second,
            "round": round,
            "first_grade": s1,
            "second_grade": s2,
            "winner": winner,
            "probability": None,
            "status": "ok",
            "raw": "",
        }

    result = {
        "task_id": "t",
        "scores": {},
        "ranking": [],
        "champion": "z",
        "extras": {
            "x": {"eliminated_round": 2, "played": 1, "byes": 1},
            "y": {"eliminated_round": 1, "played": 1, "byes": 0},
            "z": {"eliminated_round": None, "played": 2, "byes": 0},
        },
        "comparisons": [
            comparison("y", "z", 1, 1.0, 3.0, "second"),
            comparison("z", "y", 1, 4.0, 2.0, "first"),
            comparison("x", "z", 2, 2.0, 5.0, "second"),
        ],
        "cost": cost(3, 0, 3),
    }
    bracket = report_data.knockout_bracket(TaskResult.from_dict(result))
    first, final = bracket["rounds"]
    (pairing,) = first["pairings"]
    assert (pairing["a"], pairing["b"], pairing["winner"]) == ("y", "z", "z")
    assert (pairing["grade_a"], pairing["grade_b"]) == pytest.approx((1.5, 3.5), abs=1e-12)
    assert pairing["matches"] == [0, 1]
    assert first["byes"] == ["x"]
    assert [(p["a"], p["b"], p["winner"]) for p in final["pairings"]] == [("x", "z", "z")]
    unplayed = {
        "task_id": "t",
        "scores": {"x": 1.0},
        "ranking": ["x"],
        "champion": "x",
        "extras": {"x": {"played": 1}},
        "comparisons": [],
        "cost": cost(),
    }
    assert report_data.knockout_bracket(TaskResult.from_dict(unplayed)) is None


def test_system_leaderboard_ranks_by_mean_position():
    board = report_data.system_leaderboard(RunResult.from_dict(hand_results()), "ko")
    # ko ranks d first and c second everywhere; b is 3rd twice and 4th once (t3).
    assert [r["system"] for r in board] == ["sd", "sc", "sb", "sa"]
    assert board[0]["won"] == 3 and board[0]["mean_rank"] == pytest.approx(1.0, abs=1e-12)
    assert board[2]["mean_rank"] == pytest.approx((3 + 3 + 4) / 3)
    assert board[0]["mean_human"] == pytest.approx(3.0)
