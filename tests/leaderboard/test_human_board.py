"""A leaderboard re-rated by human votes: PPI++ ratings as the board's rating, grades, the planner."""

from __future__ import annotations

import pytest

from rankkit.errors import TaskFormatError
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.leaderboard.build import arena
from rankkit.leaderboard.human import GradeVote, HumanVotes, PairVote
from rankkit.leaderboard.human_board import human_leaderboard, judge_answer_points, judge_voted_pairs, unjudged_votes
from rankkit.stats.ppi import votes_needed

STRENGTHS = {f"s{i}": 1000.0 + 150 * i for i in range(4)}
TOL = 1e-9


@pytest.fixture(scope="module")
def judged():
    tasks = planted_tasks(STRENGTHS, 30, seed=2)
    board = arena(tasks, make_judge("sim:model=fixed,accuracy=0.9,position_bias=0"), seed=0, resamples=0)
    return tasks, board


def pair_votes_on(board, tasks, count):
    quality = {(t.task_id, c.system): c.human["quality"] for t in tasks for c in t.candidates}
    votes = []
    for line, ((a, b, _), task) in enumerate(zip(board.matches[:count], board.match_tasks[:count]), start=1):
        votes.append(PairVote(task, a, b, a if quality[(task, a)] > quality[(task, b)] else b, line))
    return tuple(votes)


def test_the_board_is_reranked_by_the_ppi_rating(judged):
    tasks, board = judged
    corrected, correction = human_leaderboard(board, tasks, HumanVotes("v.jsonl", pair_votes_on(board, tasks, 50)))
    for row in corrected.systems:
        assert row.rating == pytest.approx(correction.ratings[row.name].ppi.estimate, abs=TOL)
        assert row.ci_low < row.rating < row.ci_high
    assert [row.rank for row in corrected.systems] == [1, 2, 3, 4]
    assert [row.rating for row in corrected.systems] == sorted((row.rating for row in corrected.systems), reverse=True)


def test_grades_give_a_ppi_mean_score_predicted_by_the_answers_share_of_points(judged):
    tasks, board = judged
    predicted = judge_answer_points(board, tasks)
    assert all(0.0 <= value <= 1.0 for value in predicted.values())
    grades = tuple(
        GradeVote(t.task_id, c.id, c.human["quality"], line)
        for line, (t, c) in enumerate(((t, c) for t in tasks[:10] for c in t.candidates), start=1)
    )
    unchanged, correction = human_leaderboard(board, tasks, HumanVotes("v.jsonl", (), grades))
    assert unchanged is board and not correction.ratings
    assert set(correction.scores) == set(STRENGTHS)
    assert correction.scores["s3"].ppi.estimate > correction.scores["s0"].ppi.estimate


def test_the_planner_figure_is_the_librarys(judged):
    tasks, board = judged
    votes = HumanVotes("v.jsonl", pair_votes_on(board, tasks, 50))
    _, correction = human_leaderboard(board, tasks, votes, width=100.0)
    block = correction.to_dict()
    for name, result in correction.ratings.items():
        assert block["ratings"][name]["votes_needed"] == votes_needed(result, 100.0)
    assert block["width"] == pytest.approx(100.0, abs=TOL)


def test_votes_on_pairs_the_tournament_never_played_are_judged_first(judged):
    tasks, board = judged
    judge = make_judge("sim:model=fixed,accuracy=0.9,position_bias=0")
    played = {(task, *sorted((a, b))) for (a, b, _), task in zip(board.matches, board.match_tasks)}
    unplayed = [
        (t.task_id, a, b)
        for t in tasks
        for a in sorted(STRENGTHS)
        for b in sorted(STRENGTHS)
        if a < b and (t.task_id, a, b) not in played
    ][:20]
    votes = HumanVotes("v.jsonl", tuple(PairVote(task, b, a, b, line) for line, (task, a, b) in enumerate(unplayed, 1)))
    with pytest.raises(TaskFormatError, match="never compared"):
        human_leaderboard(board, tasks, votes)
    extended = judge_voted_pairs(board, tasks, votes, judge)
    assert unjudged_votes(extended, tasks, votes) == {}
    added = len(extended.matches) - len(board.matches)
    assert 1 <= added <= len(unplayed)  # one outcome per decided voted pair (an undecided one adds none)
    assert extended.cost.judge_calls == board.cost.judge_calls + len(unplayed)
    corrected, correction = human_leaderboard(extended, tasks, votes)
    assert correction.pair_votes == len(unplayed)
    assert {row.name for row in corrected.systems} == set(STRENGTHS)
    assert judge_voted_pairs(extended, tasks, votes, judge) is extended  # nothing left to ask
