"""A strategy's per-task scores as induced verdicts, and its agreement with human votes."""

from __future__ import annotations

import pytest

from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.leaderboard.human import HumanVotes, PairVote, pair_votes
from rankkit.leaderboard.human_compare import agreement, induced_board

TOL = 1e-12


@pytest.fixture()
def tasks():
    return planted_tasks({"s0": 1000.0, "s1": 1100.0, "s2": 1200.0}, 2, noise=0.0, seed=0)


def test_every_pair_of_a_scored_task_is_an_induced_verdict(tasks):
    scores = {t.task_id: {c.id: c.human["quality"] for c in t.candidates} for t in tasks[:1]}
    board = induced_board("oracle", tasks, scores)
    assert len(board.matches) == 3 and set(board.match_tasks) == {tasks[0].task_id}
    assert all(outcome == 0.0 for a, b, outcome in board.matches if a < b)  # s0 < s1 < s2 in quality


def test_agreement_is_one_minus_the_points_apart(tasks):
    task = tasks[0]
    scores = {task.task_id: {c.id: c.human["quality"] for c in task.candidates}}
    board = induced_board("oracle", tasks, scores)
    votes = HumanVotes(
        "votes.jsonl",
        (PairVote(task.task_id, "s0", "s1", "s1", 1), PairVote(task.task_id, "s0", "s2", None, 2)),
    )
    assert agreement(pair_votes(board, tasks, votes)) == pytest.approx((1.0 + 0.5) / 2, abs=TOL)
