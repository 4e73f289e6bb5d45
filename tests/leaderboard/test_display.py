"""What ``rankkit leaderboard`` and ``rankkit leaderboard add`` print and store, end to end."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from tests.leaderboard.conftest import HUMAN_ORDER, PERFECT, STRENGTHS


def write_tasks(tasks, path):
    with path.open("w", encoding="utf-8") as handle:
        for task in tasks:
            handle.write(
                json.dumps(
                    {
                        "task_id": task.task_id,
                        "prompt": task.prompt,
                        "reference": None,
                        "candidates": [
                            {"id": c.id, "text": c.text, "system": c.system, "human": dict(c.human)}
                            for c in task.candidates
                        ],
                        "meta": {"main_score": "quality"},
                    }
                )
                + "\n"
            )


def test_cli_leaderboard_and_add(tmp_path, system_level_tasks):
    data = tmp_path / "tasks.jsonl"
    write_tasks(system_level_tasks, data)
    (tmp_path / "systems.jsonl").write_text(
        "".join(json.dumps({"system": s, "elo": v}) + "\n" for s, v in STRENGTHS.items())
    )
    runner = CliRunner()
    board_path, added_path = tmp_path / "board.json", tmp_path / "added.json"
    others = ",".join(s for s in STRENGTHS if s != "s2")
    result = runner.invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            PERFECT,
            "--no-cache",
            "--quiet",
            "--systems",
            others,
            "--bootstrap",
            "20",
            "--out",
            str(board_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "Spearman 1.000" in result.output and "Kendall 1.000" in result.output
    stored = json.loads(board_path.read_text())
    assert [s["name"] for s in stored["systems"]] == [s for s in HUMAN_ORDER if s != "s2"]
    assert stored["judge_calls"] == 30 * 6 and stored["truth"]["spearman"] == pytest.approx(1.0)
    result = runner.invoke(
        main,
        [
            "leaderboard",
            "add",
            "--leaderboard",
            str(board_path),
            "--system",
            "s2",
            "--no-cache",
            "--quiet",
            "--out",
            str(added_path),
        ],
    )
    assert result.exit_code == 0, result.output
    assert "added s2 by binary: rank 6" in result.output
    added = json.loads(added_path.read_text())
    assert [s["name"] for s in added["systems"]] == HUMAN_ORDER
    result = runner.invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            PERFECT,
            "--no-cache",
            "--quiet",
            "--strategy",
            "anchored",
            "--anchor",
            "s4",
            "--format",
            "json",
        ],
    )
    assert result.exit_code == 0, result.output
    payload = json.loads(result.output[result.output.index("{") :])
    assert payload["systems"][0]["rating"] == pytest.approx(1.0, abs=1e-12) and payload["anchor"] == "s4"
    assert payload["anchor_ceiling"]["saturated"] is True  # a perfect judge: every match 1 or 0
    table = runner.invoke(
        main,
        ["leaderboard", "--data", str(data), "--judge", PERFECT, "--no-cache", "--quiet"]
        + ["--strategy", "anchored", "--anchor", "s4"],
    )
    assert table.exit_code == 0, table.output
    assert "anchor at the ceiling: 7 of 7 systems" in table.output
    assert f"--anchor {payload['anchor_ceiling']['suggestion']}" in table.output
    result = runner.invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            PERFECT,
            "--no-cache",
            "--strategy",
            "anchored",
            "--anchor",
            "zz",
        ],
    )
    assert result.exit_code == 2 and "anchor" in result.output


def test_leaderboard_add_help_and_output_agree_on_defaults_and_rating(tmp_path, system_level_tasks):
    # Issue 24 item 16: the help said --data defaults to the bundled sample while the command
    # takes the leaderboard's; the added system was shown with rating "-" and no reason.
    help_text = " ".join(CliRunner().invoke(main, ["leaderboard", "add", "--help"]).output.split())
    assert "default: the data the leaderboard was built on" in help_text
    assert "default: the leaderboard's judge" in help_text
    assert "default: the bundled synthetic sample)" not in help_text
    data = tmp_path / "tasks.jsonl"
    write_tasks(system_level_tasks, data)
    board_path, added_path = tmp_path / "board.json", tmp_path / "added.json"
    others = ",".join(s for s in STRENGTHS if s != "s2")
    built = CliRunner().invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            PERFECT,
            "--no-cache",
            "--quiet",
            "--systems",
            others,
            "--bootstrap",
            "20",
            "--out",
            str(board_path),
        ],
    )
    assert built.exit_code == 0, built.output
    result = CliRunner().invoke(
        main,
        [
            "leaderboard",
            "add",
            "--leaderboard",
            str(board_path),
            "--system",
            "s2",
            "--no-cache",
            "--quiet",
            "--out",
            str(added_path),
            "--format",
            "csv",
        ],
    )
    assert result.exit_code == 0, result.output
    rows = {row["name"]: row for row in json.loads(added_path.read_text())["systems"]}
    added = rows["s2"]
    assert added["rating"] is not None and added["ci_low"] <= added["rating"] <= added["ci_high"]
    assert rows["s3"]["rating"] > added["rating"] > rows["s1"]["rating"]  # between its neighbours
    text = (
        CliRunner()
        .invoke(
            main, ["leaderboard", "add", "--leaderboard", str(board_path), "--system", "s2", "--no-cache", "--quiet"]
        )
        .output
    )
    assert "s2: rating fitted to its" in text and "its rank is the binary search's" in text
    # On a win-rate (anchored) leaderboard binary search gives no rating, and says why.
    anchored_path = tmp_path / "anchored.json"
    built = CliRunner().invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            PERFECT,
            "--no-cache",
            "--quiet",
            "--systems",
            others,
            "--strategy",
            "anchored",
            "--anchor",
            "s4",
            "--out",
            str(anchored_path),
        ],
    )
    assert built.exit_code == 0, built.output
    text = (
        CliRunner()
        .invoke(
            main, ["leaderboard", "add", "--leaderboard", str(anchored_path), "--system", "s2", "--no-cache", "--quiet"]
        )
        .output
    )
    assert "s2: no rating: on this leaderboard a rating is the win rate against s4" in text
