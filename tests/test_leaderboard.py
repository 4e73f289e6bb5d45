"""System leaderboards: Arena-lite tournaments + BT, anchored win rates, strategy aggregation, adding
a system (binary search, anchored), reuse of stored judgments, and the ``rankkit leaderboard`` CLI."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from click.testing import CliRunner

from rankkit.cache import JudgmentCache
from rankkit.cli import main
from rankkit.judges import make_judge
from rankkit.leaderboard import (
    Leaderboard,
    LeaderboardError,
    add_system,
    anchored,
    arena,
    build,
    correlations,
    find_truth_file,
    human_system_scores,
    induced_matches,
    load_truth,
)
from rankkit.matches import MatchGraph
from rankkit.synthetic import planted_tasks

from tests.conftest import shared_dataset

PERFECT = "sim:accuracy=1,position_bias=0,noise=0"
STRENGTHS = {f"s{i}": 1000.0 + 100 * i for i in range(8)}
HUMAN_ORDER = sorted(STRENGTHS, key=lambda s: -STRENGTHS[s])


@pytest.fixture(scope="module")
def system_level_tasks():
    """8 systems x 30 prompts; every prompt agrees with the planted strengths."""
    return planted_tasks(STRENGTHS, 30, noise=0.0, seed=1)


@pytest.fixture(scope="module")
def noisy_tasks():
    """8 systems x 100 prompts; per prompt the better answer follows the BT model of the strengths."""
    return planted_tasks(STRENGTHS, 100, seed=3)


def test_planted_tasks_follow_the_strengths(system_level_tasks, noisy_tasks):
    assert len(system_level_tasks) == 30 and len(system_level_tasks[0].candidates) == 8
    human = human_system_scores(system_level_tasks)
    assert sorted(human, key=lambda s: -human[s]) == HUMAN_ORDER
    # with noise, s7 (+700) beats s0 on nearly every prompt but not by a constant margin
    wins = sum(t.human_scores()["c07"] > t.human_scores()["c00"] for t in noisy_tasks)
    assert 95 <= wins <= 100


def test_arena_with_a_perfect_judge_ranks_systems_in_human_order(system_level_tasks):
    board = arena(system_level_tasks, make_judge(PERFECT), seed=0, bootstrap_rounds=50)
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
    board = arena(system_level_tasks, make_judge(PERFECT), systems=five, bootstrap_rounds=0)
    assert board.names == ["s6", "s5", "s3", "s2", "s0"]
    assert len(board.matches) == 30 * 4
    assert board.systems[0].ci_low is None  # no bootstrap, no interval


def test_arena_brackets_are_seeded(noisy_tasks):
    judge = make_judge("sim:accuracy=0.7")
    first = arena(noisy_tasks[:20], judge, seed=4, bootstrap_rounds=0)
    assert first.matches == arena(noisy_tasks[:20], judge, seed=4, bootstrap_rounds=0).matches
    assert first.matches != arena(noisy_tasks[:20], judge, seed=5, bootstrap_rounds=0).matches


def test_debiased_arena_judges_both_orders(system_level_tasks):
    board = arena(system_level_tasks, make_judge(PERFECT), debias=True, bootstrap_rounds=0)
    assert board.cost.comparisons == 30 * 7 * 2
    assert board.names == HUMAN_ORDER


def test_anchored_is_win_rate_against_the_anchor(system_level_tasks):
    board = anchored(system_level_tasks, make_judge(PERFECT), "s3", bootstrap_rounds=30)
    assert board.scale == "win_rate" and board.anchor == "s3"
    assert board.cost.comparisons == 30 * 7
    rates = {row.name: row.rating for row in board.systems}
    assert rates == {"s7": 1.0, "s6": 1.0, "s5": 1.0, "s4": 1.0, "s3": 0.5, "s2": 0.0, "s1": 0.0, "s0": 0.0}
    # with a perfect judge the anchor only splits systems into better and worse: the failure mode
    # of baseline-mediated evaluation that Arena-lite points out (seed 003, Eq. 2)
    assert correlations(board, STRENGTHS)["spearman"] < 0.95
    with pytest.raises(LeaderboardError, match="anchor"):
        anchored(system_level_tasks, make_judge(PERFECT), "nobody")


def test_anchored_shows_the_anchor_in_both_slots(system_level_tasks):
    board = anchored(system_level_tasks, make_judge(PERFECT), "s3", bootstrap_rounds=0)
    assert board.cost.comparisons == 30 * 7
    graphs: dict[str, MatchGraph] = {}
    anchored(system_level_tasks, make_judge(PERFECT), "s3", bootstrap_rounds=0, graphs=graphs)
    firsts = [first for g in graphs.values() for first, _, _ in g.comparisons()]
    assert 0.3 < firsts.count("c03") / len(firsts) < 0.7


def test_any_strategy_aggregates_into_a_leaderboard(system_level_tasks):
    task = system_level_tasks[0]
    scores = {c.id: float(i % 3) for i, c in enumerate(task.candidates)}
    induced = induced_matches(task, scores)
    assert len(induced) == 28
    assert {m.outcome for m in induced} == {0.0, 0.5, 1.0}
    for method in ("knockout:debias=true", "heapsort", "bt"):
        board = build(system_level_tasks[:10], make_judge(PERFECT), method, bootstrap_rounds=0)
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


@pytest.mark.parametrize("newcomer", sorted(STRENGTHS))
def test_binary_search_add_places_a_planted_system_at_its_true_rank(noisy_tasks, newcomer):
    judge = make_judge(PERFECT)
    others = [s for s in STRENGTHS if s != newcomer]
    board = arena(noisy_tasks, judge, systems=others, bootstrap_rounds=0)
    added = add_system(board, noisy_tasks, judge, newcomer, "binary", bootstrap_rounds=0)
    assert added.names.index(newcomer) == HUMAN_ORDER.index(newcomer)
    assert added.system(newcomer).rating is None  # a position, not a rating
    steps = added.placement["steps"]
    assert 1 <= len(steps) <= 4 and all(step["matches"] == 100 // 2 for step in steps)  # |X| / floor(log2 7)
    assert added.cost.judge_calls == board.cost.judge_calls + added.placement["judge_calls"]
    assert len(added.matches) == len(board.matches) + added.placement["matches"]
    assert [row.rank for row in added.systems] == list(range(1, 9))


@pytest.mark.parametrize("newcomer", ["s3", "s4", "s5", "s6", "s7"])
def test_anchored_add_places_a_planted_system_at_its_true_rank(noisy_tasks, newcomer):
    judge = make_judge(PERFECT)
    board = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != newcomer], bootstrap_rounds=0)
    added = add_system(board, noisy_tasks, judge, newcomer, "anchored", bootstrap_rounds=30)
    assert added.names.index(newcomer) == HUMAN_ORDER.index(newcomer)
    row = added.system(newcomer)
    assert row.ci_low <= row.rating <= row.ci_high
    assert added.placement["opponent"] == board.names[0]
    assert added.placement["matches"] == 100


def test_anchored_add_is_within_one_rank_far_below_the_top(noisy_tasks):
    # far below the top the newcomer wins almost nothing against it, so the win rate is coarse
    judge = make_judge(PERFECT)
    for newcomer in ("s0", "s1", "s2"):
        board = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != newcomer], bootstrap_rounds=0)
        added = add_system(board, noisy_tasks, judge, newcomer, "anchored", bootstrap_rounds=0)
        assert abs(added.names.index(newcomer) - HUMAN_ORDER.index(newcomer)) <= 1


def test_adding_to_an_anchored_leaderboard_plays_its_anchor(system_level_tasks):
    judge = make_judge(PERFECT)
    board = anchored(system_level_tasks, judge, "s3", systems=[s for s in STRENGTHS if s != "s5"], bootstrap_rounds=0)
    added = add_system(board, system_level_tasks, judge, "s5", "anchored", bootstrap_rounds=0)
    assert added.placement["opponent"] == "s3"
    assert added.system("s5").rating == 1.0


def test_adding_reuses_stored_judgments(noisy_tasks, cache_path):
    judge = make_judge(PERFECT)
    board = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != "s4"], bootstrap_rounds=0)
    with JudgmentCache(cache_path) as cache:
        first = add_system(board, noisy_tasks, judge, "s4", "binary", cache=cache, bootstrap_rounds=0)
    with JudgmentCache(cache_path) as cache:
        again = add_system(board, noisy_tasks, judge, "s4", "binary", cache=cache, bootstrap_rounds=0)
    assert first.placement["judge_calls"] > 0
    assert again.placement["judge_calls"] == 0
    assert again.names == first.names
    # within one run the shared match graphs serve the same purpose
    graphs: dict[str, MatchGraph] = {}
    full = arena(noisy_tasks, judge, graphs=graphs, bootstrap_rounds=0)
    seven = arena(noisy_tasks, judge, systems=[s for s in STRENGTHS if s != "s4"], graphs=graphs, bootstrap_rounds=0)
    assert seven.cost.graph_hits > 0
    added = add_system(seven, noisy_tasks, judge, "s4", "anchored", graphs=graphs, bootstrap_rounds=0)
    assert added.placement["judge_calls"] < added.placement["matches"]
    assert full.cost.judge_calls > 0
    with pytest.raises(LeaderboardError, match="already"):
        add_system(full, noisy_tasks, judge, "s4")


def test_json_round_trip(system_level_tasks):
    board = arena(system_level_tasks[:5], make_judge(PERFECT), bootstrap_rounds=10)
    data = json.loads(json.dumps(board.to_dict()))
    assert set(data["systems"][0]) >= {"name", "rating", "ci_low", "ci_high", "rank"}
    assert data["judge_calls"] == board.cost.judge_calls and data["comparisons"] == board.cost.comparisons
    again = Leaderboard.from_dict(data)
    assert again.names == board.names and again.matches == board.matches and again.cost == board.cost


def test_truth_files(tmp_path):
    path = tmp_path / "systems.jsonl"
    path.write_text('{"system": "a", "note": "x", "elo": 1200}\n{"system": "b", "elo": 1100, "rating": 5}\n')
    assert load_truth(path) == {"a": 1200.0, "b": 5.0}
    assert load_truth(path, "elo") == {"a": 1200.0, "b": 1100.0}
    assert find_truth_file(tmp_path / "tasks.jsonl") == path
    assert find_truth_file(tmp_path / "sub" / "tasks.jsonl") is None


def write_tasks(tasks, path):
    with path.open("w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(json.dumps({
                "task_id": task.task_id, "prompt": task.prompt, "reference": None,
                "candidates": [{"id": c.id, "text": c.text, "system": c.system, "human": dict(c.human)}
                               for c in task.candidates],
                "meta": {"main_score": "quality"}}) + "\n")


def test_cli_leaderboard_and_add(tmp_path, system_level_tasks):
    data = tmp_path / "tasks.jsonl"
    write_tasks(system_level_tasks, data)
    (tmp_path / "systems.jsonl").write_text("".join(json.dumps({"system": s, "elo": v}) + "\n" for s, v in STRENGTHS.items()))
    runner = CliRunner()
    board_path, added_path = tmp_path / "board.json", tmp_path / "added.json"
    others = ",".join(s for s in STRENGTHS if s != "s2")
    result = runner.invoke(main, ["leaderboard", "--data", str(data), "--judge", PERFECT, "--no-cache", "--quiet",
                                  "--systems", others, "--bootstrap", "20", "--out", str(board_path)])
    assert result.exit_code == 0, result.output
    assert "Spearman 1.000" in result.output and "Kendall 1.000" in result.output
    stored = json.loads(board_path.read_text())
    assert [s["name"] for s in stored["systems"]] == [s for s in HUMAN_ORDER if s != "s2"]
    assert stored["judge_calls"] == 30 * 6 and stored["truth"]["spearman"] == pytest.approx(1.0)
    result = runner.invoke(main, ["leaderboard", "add", "--leaderboard", str(board_path), "--system", "s2",
                                  "--no-cache", "--quiet", "--out", str(added_path)])
    assert result.exit_code == 0, result.output
    assert "added s2 by binary: rank 6" in result.output
    added = json.loads(added_path.read_text())
    assert [s["name"] for s in added["systems"]] == HUMAN_ORDER
    result = runner.invoke(main, ["leaderboard", "--data", str(data), "--judge", PERFECT, "--no-cache", "--quiet",
                                  "--strategy", "anchored", "--anchor", "s4", "--format", "json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{"):])
    assert payload["systems"][0]["rating"] == 1.0 and payload["anchor"] == "s4"
    result = runner.invoke(main, ["leaderboard", "--data", str(data), "--judge", PERFECT, "--no-cache",
                                  "--strategy", "anchored", "--anchor", "zz"])
    assert result.exit_code == 2 and "anchor" in result.output


def test_arena_hard_with_a_simulated_judge():
    path = shared_dataset("arena_hard_v01_arena_elo")
    from rankkit.tasks import load_tasks

    tasks = load_tasks(path, limit=20)
    truth = load_truth(find_truth_file(path))
    systems = sorted(truth, key=lambda s: -truth[s])[::4]  # 8 systems spread over the Elo range
    board = arena(tasks, make_judge("sim:preset=gpt4"), systems=systems, bootstrap_rounds=0)
    assert board.cost.comparisons == 20 * 7
    assert correlations(board, truth)["spearman"] > 0.9


def test_arena_runs_tasks_concurrently_with_the_same_result(system_level_tasks):
    from tests.test_engine import PacedJudge

    paced = PacedJudge(8, delay=0.001)
    concurrent = arena(system_level_tasks, paced, seed=2, bootstrap_rounds=0)
    sequential = arena(system_level_tasks, paced.inner, seed=2, bootstrap_rounds=0)
    assert [m.record() for m in concurrent.matches] == [m.record() for m in sequential.matches]
    assert [(r.name, r.rating) for r in concurrent.systems] == [(r.name, r.rating) for r in sequential.systems]
    one_round = len(system_level_tasks[0].candidates) // 2  # the most one task asks at once
    assert paced.max_in_flight > one_round and paced.requests == concurrent.cost.judge_calls
