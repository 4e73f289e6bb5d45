"""System-level truth: human scores per system and truth files."""

from __future__ import annotations

from rankkit.leaderboard import find_truth_file, human_system_scores, load_truth
from tests.leaderboard.conftest import HUMAN_ORDER


def test_planted_tasks_follow_the_strengths(system_level_tasks, noisy_tasks):
    assert len(system_level_tasks) == 30 and len(system_level_tasks[0].candidates) == 8
    human = human_system_scores(system_level_tasks)
    assert sorted(human, key=lambda s: -human[s]) == HUMAN_ORDER
    # with noise, s7 (+700) beats s0 on nearly every prompt but not by a constant margin
    wins = sum(t.human_scores()["c07"] > t.human_scores()["c00"] for t in noisy_tasks)
    assert 95 <= wins <= 100


def test_truth_files(tmp_path):
    path = tmp_path / "systems.jsonl"
    path.write_text('{"system": "a", "note": "x", "elo": 1200}\n{"system": "b", "elo": 1100, "rating": 5}\n')
    assert load_truth(path) == {"a": 1200.0, "b": 5.0}
    assert load_truth(path, "elo") == {"a": 1200.0, "b": 1100.0}
    assert find_truth_file(tmp_path / "tasks.jsonl") == path
    assert find_truth_file(tmp_path / "sub" / "tasks.jsonl") is None
