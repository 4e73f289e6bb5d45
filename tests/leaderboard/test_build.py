"""Building leaderboards: Arena-lite tournaments + BT, anchored win rates, strategy aggregation."""

from __future__ import annotations

from dataclasses import replace

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.leaderboard import (
    Leaderboard,
    LeaderboardError,
    anchored,
    arena,
    build,
    correlations,
    find_truth_file,
    induced_outcomes,
    load_truth,
)
from tests.conftest import shared_dataset
from tests.helpers import CountingJudge
from tests.leaderboard.conftest import HUMAN_ORDER, PERFECT, STRENGTHS


def test_arena_with_a_perfect_judge_ranks_systems_in_human_order(system_level_tasks):
    board = arena(system_level_tasks, make_judge(PERFECT), seed=0, resamples=50)
    assert board.names == HUMAN_ORDER
    assert board.cost.comparisons == board.cost.judge_calls == 30 * 7  # N - 1 matches per task
    assert len(board.matches) == 30 * 7
    assert [row.rank for row in board.systems] == list(range(1, 9))
    for row in board.systems:
        assert row.ci_low <= row.rating <= row.ci_high
    # the champion plays log2(8) = 3 rounds on every task, a first-round loser once
    assert board.system("s7").matches == 90 and board.system("s0").matches == 30
    assert correlations(board, STRENGTHS)["spearman"] == pytest.approx(1.0)


def test_arena_handles_an_odd_number_of_systems_with_byes(system_level_tasks):
    five = ["s0", "s2", "s3", "s5", "s6"]
    board = arena(system_level_tasks, make_judge(PERFECT), systems=five, resamples=0)
    assert board.names == ["s6", "s5", "s3", "s2", "s0"]
    assert len(board.matches) == 30 * 4
    assert board.systems[0].ci_low is None  # no bootstrap, no interval


def test_arena_brackets_are_seeded(noisy_tasks):
    judge = make_judge("sim:model=fixed,accuracy=0.7")
    first = arena(noisy_tasks[:20], judge, seed=4, resamples=0)
    assert first.matches == arena(noisy_tasks[:20], judge, seed=4, resamples=0).matches
    assert first.matches != arena(noisy_tasks[:20], judge, seed=5, resamples=0).matches


def test_arena_in_both_orders_judges_both_orders(system_level_tasks):
    board = arena(system_level_tasks, make_judge(PERFECT), order="both", resamples=0)
    assert board.cost.comparisons == 30 * 7 * 2
    assert board.names == HUMAN_ORDER
    assert board.order == "both" and Leaderboard.from_dict(board.to_dict()).order == "both"


def test_an_order_is_for_arena_and_anchored_only(system_level_tasks):
    assert build(system_level_tasks[:3], make_judge(PERFECT), "arena", resamples=0).order == "given"
    assert build(system_level_tasks[:3], make_judge(PERFECT), "anchored", anchor="s3", resamples=0).order == "random"
    with pytest.raises(LeaderboardError, match=r"takes its own in the spec \(e.g. knockout:order=both\)"):
        build(system_level_tasks[:3], make_judge(PERFECT), "knockout", order="both")
    with pytest.raises(SpecError, match="order must be one of"):
        build(system_level_tasks[:3], make_judge(PERFECT), "arena", order="sideways")


def test_anchored_is_win_rate_against_the_anchor(system_level_tasks):
    board = anchored(system_level_tasks, make_judge(PERFECT), "s3", resamples=30)
    assert board.scale == "win_rate" and board.anchor == "s3"
    assert board.cost.comparisons == 30 * 7
    rates = {row.name: row.rating for row in board.systems}
    assert rates == pytest.approx(
        {"s7": 1.0, "s6": 1.0, "s5": 1.0, "s4": 1.0, "s3": 0.5, "s2": 0.0, "s1": 0.0, "s0": 0.0}, abs=1e-12
    )
    # with a perfect judge the anchor only splits systems into better and worse: the failure mode
    # of baseline-mediated evaluation that Arena-lite points out (seed 003, Eq. 2)
    assert correlations(board, STRENGTHS)["spearman"] < 0.95
    with pytest.raises(LeaderboardError, match="anchor"):
        anchored(system_level_tasks, make_judge(PERFECT), "nobody")


def test_anchored_shows_the_anchor_in_both_slots(system_level_tasks):
    board = anchored(system_level_tasks, make_judge(PERFECT), "s3", resamples=0)
    assert board.cost.comparisons == 30 * 7
    judge = CountingJudge(make_judge(PERFECT))
    anchored(system_level_tasks, judge, "s3", resamples=0)
    firsts = judge.shown_first
    assert 0.3 < firsts.count("c03") / len(firsts) < 0.7


def test_any_strategy_aggregates_into_a_leaderboard(system_level_tasks):
    task = system_level_tasks[0]
    scores = {c.id: float(i % 3) for i, c in enumerate(task.candidates)}
    induced = induced_outcomes(task, scores)
    assert len(induced) == 28
    assert {outcome for _, _, outcome in induced} == {0.0, 0.5, 1.0}
    for method in ("knockout:order=both", "heapsort", "bt"):
        board = build(system_level_tasks[:10], make_judge(PERFECT), method, resamples=0)
        assert board.names == HUMAN_ORDER, method
        assert board.method == method
        assert board.cost.judge_calls > 0


def test_candidates_need_systems(system_level_tasks):
    task = system_level_tasks[0]
    broken = replace(task, candidates=(replace(task.candidates[0], system=None), *task.candidates[1:]))
    with pytest.raises(LeaderboardError, match="system"):
        arena([broken], make_judge(PERFECT))
    with pytest.raises(LeaderboardError, match="anchor"):
        build([task], make_judge(PERFECT), "anchored")


def test_arena_hard_with_a_simulated_judge():
    path = shared_dataset("arena_hard_v01_arena_elo")
    from rankkit.data.tasks import load_tasks

    tasks = load_tasks(path, limit=20)
    truth = load_truth(find_truth_file(path))
    systems = sorted(truth, key=lambda s: -truth[s])[::4]  # 8 systems spread over the Elo range
    board = arena(tasks, make_judge("sim:preset=gpt4"), systems=systems, resamples=0)
    assert board.cost.comparisons == 20 * 7
    assert correlations(board, truth)["spearman"] > 0.9


def test_arena_runs_tasks_concurrently_with_the_same_result(system_level_tasks):
    from tests.judgments.test_dispatch import PacedJudge

    paced = PacedJudge(8, delay=0.001)
    concurrent = arena(system_level_tasks, paced, seed=2, resamples=0)
    sequential = arena(system_level_tasks, paced.inner, seed=2, resamples=0)
    assert concurrent.matches == sequential.matches
    assert [(r.name, r.rating) for r in concurrent.systems] == [(r.name, r.rating) for r in sequential.systems]
    one_round = len(system_level_tasks[0].candidates) // 2  # the most one task asks at once
    assert paced.max_in_flight > one_round and paced.requests == concurrent.cost.judge_calls
