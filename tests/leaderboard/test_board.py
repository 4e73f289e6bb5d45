"""The leaderboard's data: its JSON round trip."""

from __future__ import annotations

import json

from rankkit.judges import make_judge
from rankkit.leaderboard import Leaderboard, arena
from tests.leaderboard.conftest import PERFECT


def test_json_round_trip(system_level_tasks):
    board = arena(system_level_tasks[:5], make_judge(PERFECT), resamples=10)
    data = json.loads(json.dumps(board.to_dict()))
    assert set(data["systems"][0]) >= {"name", "rating", "ci_low", "ci_high", "rank"}
    assert data["judge_calls"] == board.cost.judge_calls and data["comparisons"] == board.cost.comparisons
    again = Leaderboard.from_dict(data)
    assert again.names == board.names and again.matches == board.matches and again.cost == board.cost
