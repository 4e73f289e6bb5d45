"""`rankkit leaderboard --human VOTES`: the PPI++ rating end to end, the planner, bad VOTES files."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.leaderboard.board import read_board
from rankkit.leaderboard.human import pair_votes, ppi_ratings, read_votes
from rankkit.leaderboard.human_board import human_leaderboard
from rankkit.stats.ppi import pair_labels, ppi_bradley_terry, votes_needed

STRENGTHS = {f"s{i}": 1000.0 + 80 * i for i in range(6)}
JUDGE = "sim:model=fixed,accuracy=0.8,position_bias=0"
#: Ratings are Elo points (hundreds): agreeing to 1e-6 is agreeing to the optimiser's precision.
TOL = 1e-6


def task_rows(tasks):
    for task in tasks:
        yield {
            "task_id": task.task_id,
            "prompt": task.prompt,
            "candidates": [
                {"id": c.id, "text": c.text, "system": c.system, "human": dict(c.human)} for c in task.candidates
            ],
        }


@pytest.fixture(scope="module")
def judged(tmp_path_factory):
    """Planted tasks, the board the simulated judge makes of them, and a VOTES file on 60 of its pairs."""
    folder = tmp_path_factory.mktemp("human")
    tasks = planted_tasks(STRENGTHS, 24, seed=5)
    data = folder / "tasks.jsonl"
    data.write_text("".join(json.dumps(row) + "\n" for row in task_rows(tasks)), encoding="utf-8")
    common = ["--data", str(data), "--judge", JUDGE, "--cache", str(folder / "cache.sqlite"), "--quiet"]
    common += ["--bootstrap", "0", "--robustness-budget", "0"]
    result = CliRunner().invoke(main, ["leaderboard", *common, "--out", str(folder / "board.json")])
    assert result.exit_code == 0, result.output
    board = read_board(folder / "board.json")
    candidate = {(t.task_id, c.system): c for t in tasks for c in t.candidates}
    rng = random.Random(0)
    rows = []
    for (a, b, _), task in rng.sample(list(zip(board.matches, board.match_tasks)), 60):
        ca, cb = candidate[(task, a)], candidate[(task, b)]
        better = ca if ca.human["quality"] > cb.human["quality"] else cb
        rows.append({"task_id": task, "a": ca.id, "b": cb.id, "winner": better.id if rng.random() > 0.1 else None})
    votes = folder / "votes.jsonl"
    votes.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return {"folder": folder, "tasks": tasks, "board": board, "votes": votes, "common": common}


def run_board(judged, *extra):
    return CliRunner().invoke(main, ["leaderboard", *judged["common"], "--format", "json", *extra])


def test_the_rating_is_the_ppi_one_and_lambda_zero_is_human_only(judged):
    result = run_board(judged, "--human", str(judged["votes"]))
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{") :])
    paired = pair_votes(judged["board"], judged["tasks"], read_votes(judged["votes"]))
    expected = ppi_ratings(paired)
    for row in payload["systems"]:
        assert row["rating"] == pytest.approx(expected[row["name"]].ppi.estimate, abs=TOL)
        assert row["ci_low"] == pytest.approx(expected[row["name"]].ppi.low, abs=TOL)
    assert [row["rank"] for row in payload["systems"]] == list(range(1, len(STRENGTHS) + 1))
    ratings = [row["rating"] for row in payload["systems"]]
    assert ratings == sorted(ratings, reverse=True)
    index = {name: i for i, name in enumerate(paired.systems)}

    def labels(rows):
        return pair_labels([index[r[0]] for r in rows], [index[r[1]] for r in rows], [r[2] for r in rows])

    lam_zero = ppi_bradley_terry(
        paired.systems, labels(paired.labelled), [r[3] for r in paired.labelled], labels(paired.unlabelled), lam=0.0
    )
    block = payload["human"]["ratings"]
    assert payload["human"]["pair_votes"] == 60
    for name, result_zero in lam_zero.items():
        assert block[name]["human_only"]["estimate"] == pytest.approx(result_zero.ppi.estimate, abs=TOL)
        assert set(block[name]) >= {"ppi", "human_only", "judge_only", "lam", "effective_n", "n_human"}


def test_the_planner_prints_the_librarys_figure(judged):
    result = run_board(judged, "--human", str(judged["votes"]), "--human-width", "150")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{") :])
    _, correction = human_leaderboard(judged["board"], judged["tasks"], read_votes(judged["votes"]))
    for name, estimate in correction.ratings.items():
        assert payload["human"]["ratings"][name]["votes_needed"] == votes_needed(estimate, 150)
    assert any(row["votes_needed"] > 0 for row in payload["human"]["ratings"].values())


def test_the_table_shows_the_corrected_board_and_the_votes_table(judged):
    result = CliRunner().invoke(
        main, ["leaderboard", *judged["common"], "--human", str(judged["votes"]), "--human-width", "150"]
    )
    assert result.exit_code == 0, result.output
    assert "rating = PPI++" in result.output
    assert "judge_only" in result.output and "votes_needed" in result.output


@pytest.mark.parametrize(
    ("line", "field"),
    [
        ('{"task_id": "p9999", "a": "x", "b": "y", "winner": null}', "task_id"),
        ('{"task_id": "p0001", "a": "nobody", "b": "s1", "winner": null}', "a"),
        ('{"task_id": "p0001", "a": "s0", "b": "s1", "winner": "s2"}', "winner"),
        ('{"task_id": "p0001", "a": "s0", "b": "s1"}', "winner"),
    ],
)
def test_a_bad_votes_file_exits_2_naming_file_line_and_field(judged, line, field):
    votes = judged["folder"] / "bad.jsonl"
    first = judged["votes"].read_text(encoding="utf-8").splitlines()[0]
    votes.write_text(first + "\n" + line + "\n", encoding="utf-8")
    result = run_board(judged, "--human", str(votes))
    assert result.exit_code == 2, result.output
    assert f"bad.jsonl:2: field '{field}'" in result.output
    assert "Traceback" not in result.output


def test_human_width_needs_votes_and_a_positive_width(judged):
    assert run_board(judged, "--human-width", "10").exit_code == 2
    assert run_board(judged, "--human", str(judged["votes"]), "--human-width", "0").exit_code == 2


def test_compare_corrects_each_strategys_verdicts_and_the_human_only_figure_is_shared(judged):
    args = ["compare", "--data", str(judged["folder"] / "tasks.jsonl"), "--judge", JUDGE, "--quiet"]
    args += ["--cache", str(judged["folder"] / "cache.sqlite"), "--strategies", "knockout,individual"]
    result = CliRunner().invoke(main, [*args, "--format", "json", "--human", str(judged["votes"])])
    assert result.exit_code == 0, result.output
    block = json.loads(result.output[result.output.index("{") :])["human"]
    assert block["pair_votes"] == 60 and set(block["strategies"]) == {"knockout", "individual"}
    knockout, individual = block["strategies"]["knockout"], block["strategies"]["individual"]
    for item in (knockout, individual):
        assert 0.0 <= item["agreement"] <= 1.0
        assert set(item["win_rates"]) == set(STRENGTHS)
    for name in STRENGTHS:  # the humans' own estimate cannot depend on the strategy
        assert knockout["win_rates"][name]["human_only"]["estimate"] == pytest.approx(
            individual["win_rates"][name]["human_only"]["estimate"], abs=1e-12
        )
    table = CliRunner().invoke(main, [*args, "--human", str(judged["votes"]), "--human-width", "0.1"])
    assert table.exit_code == 0, table.output
    assert "agreement" in table.output and "votes_needed" in table.output
