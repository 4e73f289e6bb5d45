"""The leaderboard's data: its JSON round trip."""

from __future__ import annotations

import json
import socket

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.tasks import SAMPLE_DATA, load_tasks
from rankkit.judges import make_judge
from rankkit.leaderboard import Leaderboard, arena
from rankkit.leaderboard.board import read_board
from tests.crafted_files import BOARD_CASES, write_crafted
from tests.leaderboard.conftest import PERFECT


def test_json_round_trip(system_level_tasks):
    board = arena(system_level_tasks[:5], make_judge(PERFECT), resamples=10)
    data = json.loads(json.dumps(board.to_dict()))
    assert set(data["systems"][0]) >= {"name", "rating", "ci_low", "ci_high", "rank"}
    assert data["judge_calls"] == board.cost.judge_calls and data["comparisons"] == board.cost.comparisons
    again = Leaderboard.from_dict(data)
    assert again.names == board.names and again.matches == board.matches and again.cost == board.cost


# --- a leaderboard file is untrusted input -----------------------------------------------------------


@pytest.fixture(scope="module")
def stored_board() -> dict:
    """A leaderboard of the sample data without ``student-5``, as ``rankkit leaderboard --out`` writes it."""
    sample_tasks = load_tasks(SAMPLE_DATA)
    systems = ["student-1", "student-2", "student-3", "student-4"]
    board = arena(
        sample_tasks, make_judge("sim"), systems=systems, resamples=0, judge_spec="sim", data=str(SAMPLE_DATA)
    )
    return json.loads(json.dumps(board.to_dict()))


def add_to(board_file, *extra: str):
    return CliRunner().invoke(
        main,
        [
            "leaderboard",
            "add",
            "--leaderboard",
            str(board_file),
            "--system",
            "student-5",
            "--no-cache",
            "--quiet",
            *extra,
        ],
    )


def test_a_clean_board_is_added_to(stored_board, tmp_path):
    board_file = tmp_path / "board.json"
    board_file.write_text(json.dumps(stored_board), encoding="utf-8")
    result = add_to(board_file, "--out", str(tmp_path / "out.json"))
    assert result.exit_code == 0, result.output
    assert "student-5" in read_board(tmp_path / "out.json").names


@pytest.mark.parametrize(("name", "field_name", "change"), BOARD_CASES, ids=[c[0] for c in BOARD_CASES])
def test_a_crafted_board_exits_2_naming_the_file_and_field(stored_board, tmp_path, name, field_name, change):
    crafted = write_crafted(stored_board, change, tmp_path / "crafted.json")
    result = add_to(crafted)
    assert result.exit_code == 2, (name, result.output, result.exception)
    assert isinstance(result.exception, SystemExit)  # a clean exit, no traceback
    message = result.output.replace("\n", " ")
    assert f"{crafted}:" in message
    assert f"field '{field_name}" in message if field_name else "field" in message or "malformed JSON" in message


def test_a_board_whose_judge_loads_a_model_is_refused_without_the_network(stored_board, tmp_path, monkeypatch):
    def no_network(*args, **kwargs):
        raise AssertionError("rankkit tried to open a connection")

    monkeypatch.setattr(socket.socket, "connect", no_network)
    monkeypatch.setattr(socket, "create_connection", no_network)
    crafted = write_crafted(
        stored_board, lambda b: b["judge"].update(spec="hf:some-org/some-model"), tmp_path / "b.json"
    )
    result = add_to(crafted)
    assert result.exit_code == 2, result.output
    message = " ".join(result.output.split())
    assert f"{crafted}: field 'judge.spec'" in message
    assert "'hf:some-org/some-model'" in message and "--trust-file-judge" in message
