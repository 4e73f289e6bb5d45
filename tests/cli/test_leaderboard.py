"""`rankkit leaderboard`'s graded-verdict options: --ties, --strong-weight, --length-margin."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main


def _run(*args: str):
    return CliRunner().invoke(
        main, ["leaderboard", "--bootstrap", "0", "--robustness-budget", "0", "--no-cache", "--quiet", *args]
    )


def test_graded_options_reach_the_board(tmp_path):
    out = tmp_path / "board.json"
    result = _run("--judge", "sim:verdicts=graded", "--ties", "davidson", "--strong-weight", "3", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "Davidson rating" in result.output
    assert json.loads(out.read_text())["weighting"] == {"ties": "davidson", "strong_weight": 3, "length_margin": None}


def test_ordinal_ties_reach_the_board_and_need_levels(tmp_path):
    out = tmp_path / "board.json"
    result = _run("--judge", "sim:verdicts=graded", "--ties", "ordinal", "--out", str(out))
    assert result.exit_code == 0, result.output
    assert "ordinal rating" in result.output
    assert json.loads(out.read_text())["weighting"] == {"ties": "ordinal", "strong_weight": 1, "length_margin": None}
    binary = _run("--judge", "sim:seed=0", "--ties", "ordinal")
    assert binary.exit_code == 2 and "verdicts=tie or verdicts=graded" in binary.output


@pytest.mark.parametrize(
    "args",
    [
        ("--ties", "third"),
        ("--strong-weight", "0"),
        ("--length-margin", "-5"),
        ("--strategy", "anchored", "--anchor", "student-1", "--ties", "davidson"),
        ("--ties", "ordinal", "--strong-weight", "3"),
    ],
)
def test_bad_graded_options_exit_2(args):
    result = _run("--judge", "sim:verdicts=graded", *args)
    assert result.exit_code == 2, result.output
