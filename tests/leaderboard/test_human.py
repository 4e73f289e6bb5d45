"""VOTES files read as untrusted input, paired with a leaderboard's judged pairs, and PPI++ from them."""

from __future__ import annotations

import json

import pytest

from rankkit.errors import TaskFormatError
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.leaderboard.board import LeaderboardError
from rankkit.leaderboard.build import arena
from rankkit.leaderboard.human import (
    GradeVote,
    PairVote,
    pair_votes,
    ppi_ratings,
    ppi_scores,
    ppi_win_rates,
    read_votes,
)

TOL = 1e-9


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_jsonl_file_holds_pair_votes_ties_and_grades(tmp_path):
    votes = read_votes(
        write_jsonl(
            tmp_path / "votes.jsonl",
            [
                {"task_id": "t1", "a": "c1", "b": "c2", "winner": "c2"},
                {"task_id": 7, "a": "c1", "b": "c2", "winner": None},
                {"task_id": "t1", "candidate": "c1", "score": 4},
            ],
        )
    )
    assert votes.pairs == (PairVote("t1", "c1", "c2", "c2", 1), PairVote("7", "c1", "c2", None, 2))
    assert [vote.points for vote in votes.pairs] == [0.0, 0.5]
    assert votes.grades == (GradeVote("t1", "c1", 4.0, 3),)


def test_a_csv_file_reads_an_empty_winner_as_a_tie(tmp_path):
    path = tmp_path / "votes.csv"
    path.write_text("task_id,a,b,winner\nt1,c1,c2,c1\nt1,c2,c3,\n", encoding="utf-8")
    votes = read_votes(path)
    assert [(vote.winner, vote.line, vote.points) for vote in votes.pairs] == [("c1", 2, 1.0), (None, 3, 0.5)]


BAD_JSONL_ROWS = [
    ({"task_id": "t1", "a": "c1", "b": "c2", "winner": "c3"}, "winner", "expected 'c1', 'c2' or null"),
    ({"task_id": "t1", "a": "c1", "b": "c2"}, "winner", "missing"),
    ({"task_id": "t1", "a": "c1", "b": "c1", "winner": None}, "b", "two different candidates"),
    ({"task_id": "", "a": "c1", "b": "c2", "winner": None}, "task_id", "non-empty string"),
    ({"task_id": "t1", "a": ["c1"], "b": "c2", "winner": None}, "a", "non-empty string"),
    ({"task_id": "t1", "candidate": "c1", "score": "high"}, "score", "finite number"),
    ({"task_id": "t1", "candidate": "c1", "score": True}, "score", "finite number"),
    ({"task_id": "t1", "candidate": "c1"}, "score", "missing"),
]


@pytest.mark.parametrize(("row", "field", "message"), BAD_JSONL_ROWS)
def test_a_bad_row_names_the_file_line_and_field(tmp_path, row, field, message):
    good = {"task_id": "t0", "a": "c1", "b": "c2", "winner": "c1"}
    path = write_jsonl(tmp_path / "votes.jsonl", [good, row])
    with pytest.raises(TaskFormatError, match=message) as caught:
        read_votes(path)
    assert (caught.value.path, caught.value.line, caught.value.field) == (str(path), 2, field)
    assert caught.value.exit_code == 2


@pytest.mark.parametrize(
    ("text", "line", "message"),
    [
        ('{"task_id": "t1", "a": "c1", "b": "c2", "winner": null}\n{"task_id": \n', 2, "malformed JSON"),
        ('["t1", "c1"]\n', 1, "JSON object"),
        ('{"task_id": "t1", "candidate": "c1", "score": 1e999}\n', 1, "finite number"),
        ("", None, "no votes"),
    ],
)
def test_a_malformed_jsonl_file_is_refused_with_its_line(tmp_path, text, line, message):
    path = tmp_path / "votes.jsonl"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaskFormatError, match=message) as caught:
        read_votes(path)
    assert caught.value.line == line


@pytest.mark.parametrize(
    ("text", "line", "field", "message"),
    [
        ("task_id,a,b,winner\nt1,c1,c2\n", 2, "winner", "fewer cells"),  # not read as a tie
        ("task_id,a,b,winner\nt1,c1,c2,c1,c2\n", 2, None, "more cells"),
        ("task_id,candidate,score\nt1,c1,nan\n", 2, "score", "finite number"),
        ("task_id,candidate\nt1,c1\n", 2, "score", "missing"),
    ],
)
def test_a_bad_csv_row_names_its_line_and_field(tmp_path, text, line, field, message):
    path = tmp_path / "votes.csv"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(TaskFormatError, match=message) as caught:
        read_votes(path)
    assert (caught.value.line, caught.value.field) == (line, field)


def test_other_extensions_and_bad_bytes_are_refused(tmp_path):
    (tmp_path / "votes.txt").write_text("x", encoding="utf-8")
    with pytest.raises(TaskFormatError, match=r"\.jsonl or \.csv"):
        read_votes(tmp_path / "votes.txt")
    (tmp_path / "votes.csv").write_bytes(b"task_id,a,b,winner\nt1,c1,c2,\xff\n")
    with pytest.raises(TaskFormatError, match="UTF-8"):
        read_votes(tmp_path / "votes.csv")


STRENGTHS = {f"s{i}": 1000.0 + 100 * i for i in range(4)}


@pytest.fixture(scope="module")
def tasks():
    return planted_tasks(STRENGTHS, 40, seed=3)


@pytest.fixture(scope="module")
def board(tasks):
    return arena(tasks, make_judge("sim:model=fixed,accuracy=0.8,position_bias=0"), seed=0, resamples=20)


def votes_on_the_boards_pairs(board, tasks, path, every: int = 2):
    """A human vote on every ``every``-th judged match, by candidate id, agreeing with the judge but for ties."""
    candidate = {(t.task_id, c.system): c.id for t in tasks for c in t.candidates}
    rows = []
    for index, ((a, b, outcome), task) in enumerate(zip(board.matches, board.match_tasks)):
        if index % every == 0:
            ca, cb = candidate[(task, a)], candidate[(task, b)]
            winner = None if index % 10 == 0 else ca if outcome == 1 else cb
            rows.append({"task_id": task, "a": ca, "b": cb, "winner": winner})
    return read_votes(write_jsonl(path, rows))


def test_votes_pair_with_the_judged_pairs_of_a_board(tmp_path, board, tasks):
    votes = votes_on_the_boards_pairs(board, tasks, tmp_path / "votes.jsonl")
    paired = pair_votes(board, tasks, votes)
    assert len(paired.labelled) == len(votes.pairs)
    assert len(paired.labelled) + len(paired.unlabelled) == len(board.matches)  # arena: each pair once per task
    assert all(a < b for a, b, *_ in paired.labelled + paired.unlabelled)
    disagreements = [row for row in paired.labelled if abs(row[2] - row[3]) > TOL]
    assert all(abs(row[2] - 0.5) < TOL for row in disagreements)  # only the ties differ from the judge
    ratings = ppi_ratings(paired)
    assert set(ratings) == set(STRENGTHS)
    for row in ratings.values():
        assert row.ppi.low <= row.ppi.estimate <= row.ppi.high
        assert 0 <= row.lam <= 1 and row.n_human == len(votes.pairs)
    rates = ppi_win_rates(paired)
    assert all(0 <= row.human_only.estimate <= 1 for row in rates.values())


def test_a_vote_on_an_unknown_candidate_or_an_unjudged_pair_is_refused(tmp_path, board, tasks):
    unknown = write_jsonl(tmp_path / "a.jsonl", [{"task_id": tasks[0].task_id, "a": "c00", "b": "zz", "winner": None}])
    with pytest.raises(TaskFormatError, match="neither a candidate nor a system") as caught:
        pair_votes(board, tasks, read_votes(unknown))
    assert (caught.value.line, caught.value.field) == (1, "b")
    judged = {(task, frozenset((a, b))) for (a, b, _), task in zip(board.matches, board.match_tasks)}
    task = tasks[0].task_id
    never = next((a, b) for a in STRENGTHS for b in STRENGTHS if a != b and (task, frozenset((a, b))) not in judged)
    path = write_jsonl(tmp_path / "b.jsonl", [{"task_id": task, "a": never[0], "b": never[1], "winner": never[0]}])
    with pytest.raises(TaskFormatError, match="never compared"):
        pair_votes(board, tasks, read_votes(path))
    ghost = write_jsonl(tmp_path / "c.jsonl", [{"task_id": "nope", "a": "c00", "b": "c01", "winner": None}])
    with pytest.raises(TaskFormatError, match="not a task"):
        pair_votes(board, tasks, read_votes(ghost))


def test_a_board_without_match_tasks_cannot_be_paired(tmp_path, board, tasks):
    from dataclasses import replace

    votes = votes_on_the_boards_pairs(board, tasks, tmp_path / "votes.jsonl")
    with pytest.raises(LeaderboardError, match="no task per match"):
        pair_votes(replace(board, match_tasks=[]), tasks, votes)


def test_grades_give_each_system_a_ppi_mean_score(tmp_path, tasks):
    judge = {(t.task_id, c.id): 3.0 + (c.system == "s3") for t in tasks for c in t.candidates}
    rows = [
        {"task_id": t.task_id, "candidate": c.system, "score": 2.0 + (c.system == "s3") + (i % 2)}
        for i, t in enumerate(tasks[:10])
        for c in t.candidates
    ]
    scores = ppi_scores(tasks, read_votes(write_jsonl(tmp_path / "g.jsonl", rows)), judge)
    assert scores["s3"].human_only.estimate == pytest.approx(3.5, abs=TOL)
    assert scores["s0"].judge_only == pytest.approx(3.0, abs=TOL)
    assert scores["s3"].n_judged == 30 and scores["s3"].n_human == 10
