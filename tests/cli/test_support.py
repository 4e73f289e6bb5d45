"""What the commands share: a file never chooses where prompts and keys go, nor what a run file overwrites."""

from __future__ import annotations

import json
import threading

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.cli.support import rankkit_output
from rankkit.data.tasks import SAMPLE_DATA
from rankkit.judges.simulated.synthetic import planted_tasks
from tests.adversarial.stub_judge import HonestJudgeServer

SYSTEMS = {"s0": 1000.0, "s1": 1100.0, "s2": 1200.0, "s3": 1300.0}


class CountingJudge(HonestJudgeServer):
    """The honest stub judge, counting every request and keeping the keys it was sent."""

    def __init__(self, quality):
        super().__init__(quality)
        self.count = 0
        self.keys: set[str] = set()
        self._count_lock = threading.Lock()

    def _seen(self, request) -> None:
        with self._count_lock:
            self.count += 1
            self.keys.add(request.headers.get("Authorization") or "")

    def get(self, request) -> None:
        self._seen(request)
        super().get(request)

    def post(self, request, body) -> None:
        self._seen(request)
        super().post(request, body)


@pytest.fixture
def board(tmp_path):
    """A leaderboard of s0, s1, s3 built with the sim judge, and its tasks (s2 is to be added)."""
    tasks = planted_tasks(SYSTEMS, 4, noise=0.0, seed=1)
    data = tmp_path / "tasks.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": t.task_id,
                    "prompt": t.prompt,
                    "candidates": [
                        {"id": c.id, "text": c.text, "system": c.system, "human": dict(c.human)} for c in t.candidates
                    ],
                    "meta": {"main_score": "quality"},
                }
            )
            + "\n"
            for t in tasks
        )
    )
    path = tmp_path / "board.json"
    result = CliRunner().invoke(
        main,
        [
            "leaderboard",
            "--data",
            str(data),
            "--judge",
            "sim:preset=gpt4",
            "--no-cache",
            "--quiet",
            "--systems",
            "s0,s1,s3",
            "--bootstrap",
            "0",
            "--out",
            str(path),
        ],
    )
    assert result.exit_code == 0, result.output
    return path, tasks


def foreign_board(board_path, spec):
    """The board as a crafted copy would be: its judge spec replaced, the fingerprint blanked."""
    stored = json.loads(board_path.read_text())
    stored["judge"] = {**stored["judge"], "spec": spec, "fingerprint": None}
    board_path.write_text(json.dumps(stored))


def test_leaderboard_add_refuses_a_boards_foreign_endpoint_and_key_before_any_request(board, monkeypatch):
    board_path, tasks = board
    monkeypatch.setenv("RANKKIT_TEST_SECRET", "s3cret")
    quality = {c.text: c.human["quality"] for t in tasks for c in t.candidates}
    with CountingJudge(quality) as server:
        spec = f"openai:stub,base_url={server.base_url},api_key_env=RANKKIT_TEST_SECRET,mode=logprob"
        foreign_board(board_path, spec)
        args = ["leaderboard", "add", "--leaderboard", str(board_path), "--system", "s2", "--no-cache", "--quiet"]
        refused = CliRunner().invoke(main, args)
        assert refused.exit_code == 2, refused.output
        assert server.count == 0
        message = " ".join(refused.output.split())
        assert f"{board_path}: field 'judge.spec'" in message
        assert f"base_url={server.base_url}" in message and "api_key_env=RANKKIT_TEST_SECRET" in message
        assert "--trust-file-judge" in message and "Nothing was sent" in message

        # The same judge given on the command line is the user's choice: it runs, with the key.
        confirmed = CliRunner().invoke(main, [*args, "--judge", spec])
        assert confirmed.exit_code == 0, confirmed.output
        assert "added s2" in confirmed.output
        assert server.count > 0 and server.keys == {"Bearer s3cret"}

        before = server.count
        trusted = CliRunner().invoke(main, [*args, "--trust-file-judge"])
        assert trusted.exit_code == 0, trusted.output
        assert server.count > before


def test_leaderboard_add_uses_a_boards_local_judge_without_confirmation(board):
    board_path, _ = board
    result = CliRunner().invoke(
        main, ["leaderboard", "add", "--leaderboard", str(board_path), "--system", "s2", "--no-cache", "--quiet"]
    )
    assert result.exit_code == 0, result.output


def run_file(tmp_path, judge, out=None):
    path = tmp_path / "run.toml"
    lines = [f'data = "{SAMPLE_DATA}"', f'judge = "{judge}"', "no_cache = true", 'strategies = ["individual"]']
    if out is not None:
        lines.append(f'out = "{out}"')
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize("extra", [[], ["--dry-run"]])
def test_a_run_files_network_judge_needs_the_command_line(tmp_path, extra):
    with CountingJudge({}) as server:
        spec = f"openai:stub,base_url={server.base_url}"
        path = run_file(tmp_path, spec)
        refused = CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet", *extra])
        assert refused.exit_code == 2, refused.output
        assert f"{path}: field 'judge'" in refused.output and server.count == 0
    # A local judge in the same file needs nothing.
    path = run_file(tmp_path, "sim:preset=gpt4")
    assert CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet", *extra]).exit_code == 0


def test_a_run_files_out_does_not_overwrite_a_file_rankkit_did_not_write(tmp_path):
    victim = tmp_path / "notes.txt"
    victim.write_text("my own notes\n")
    path = run_file(tmp_path, "sim:preset=gpt4", out=victim)
    refused = CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet"])
    assert refused.exit_code == 2, refused.output
    assert f"{path}: field 'out'" in refused.output and "--force" in refused.output
    assert victim.read_text() == "my own notes\n"
    forced = CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet", "--force"])
    assert forced.exit_code == 0, forced.output
    assert "task_data" in json.loads(victim.read_text())
    # Now the file holds rankkit's results: the run file may replace them without --force.
    again = CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet"])
    assert again.exit_code == 0, again.output
    # --out on the command line is the user's own choice.
    victim.write_text("my own notes\n")
    typed = CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet", "--out", str(victim)])
    assert typed.exit_code == 0, typed.output


@pytest.mark.parametrize("output_format", ["jsonl", "json", "csv", "table", "markdown"])
def test_rank_output_in_every_format_is_recognised_as_rankkits(tmp_path, output_format):
    out = tmp_path / "ranked.txt"
    result = CliRunner().invoke(
        main,
        [
            "rank",
            "--data",
            str(SAMPLE_DATA),
            "--judge",
            "sim:preset=gpt4",
            "--no-cache",
            "--quiet",
            "--limit",
            "2",
            "--format",
            output_format,
            "--out",
            str(out),
        ],
    )
    assert result.exit_code == 0, result.output
    assert rankkit_output(out)


@pytest.mark.parametrize("text", ["my notes\n", '{"task_id": 1}\n', "[1, 2]", "task_id,prompt\n", "\x00\xff"])
def test_other_files_are_not_rankkits(tmp_path, text):
    path = tmp_path / "f"
    path.write_bytes(text.encode("latin-1"))
    assert not rankkit_output(path)


def test_a_2mb_candidate_exits_2_before_judging_and_the_limit_is_an_option(tmp_path):
    data = tmp_path / "big.jsonl"
    data.write_text(
        json.dumps(
            {
                "task_id": "q1",
                "prompt": "Say A.",
                "candidates": [
                    {"id": "a", "text": "A" * 2_000_000, "human": {"s": 1}},
                    {"id": "b", "text": "A", "human": {"s": 2}},
                ],
            }
        )
        + "\n"
    )
    for command in (["rank"], ["compare"], ["rank", "--dry-run"]):
        result = CliRunner().invoke(main, [*command, "--data", str(data), "--judge", "sim", "--no-cache", "--quiet"])
        assert result.exit_code == 2, result.output
        assert (
            f"{data}:1: field 'candidates[0].text': candidate 'a' of task 'q1' is 2,000,000 characters" in result.output
        )
        assert "judge:" not in result.output  # refused before the judge was built
    lifted = CliRunner().invoke(
        main, ["rank", "--data", str(data), "--judge", "sim", "--no-cache", "--quiet", "--max-candidate-chars", "0"]
    )
    assert lifted.exit_code == 0, lifted.output
    tight = CliRunner().invoke(
        main,
        ["rank", "--data", str(SAMPLE_DATA), "--judge", "sim", "--no-cache", "--quiet", "--max-prompt-chars", "10"],
    )
    assert tight.exit_code == 2 and "field 'prompt'" in tight.output and "over the limit of 10 " in tight.output


def test_a_run_file_sets_the_size_limits(tmp_path):
    path = run_file(tmp_path, "sim:preset=gpt4")
    path.write_text(path.read_text() + "max_prompt_chars = 10\n")
    result = CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet"])
    assert result.exit_code == 2 and "over the limit of 10 (max_prompt_chars" in result.output
    # the command line wins
    assert (
        CliRunner().invoke(main, ["compare", "--config", str(path), "--quiet", "--max-prompt-chars", "0"]).exit_code
        == 0
    )


def test_a_results_file_re_runs_with_the_size_limits_it_was_given(tmp_path):
    data = tmp_path / "big.jsonl"
    data.write_text(
        json.dumps(
            {
                "task_id": "q1",
                "prompt": "Say A.",
                "candidates": [
                    {"id": "a", "text": "A" * 100_001, "human": {"s": 1}},
                    {"id": "b", "text": "A", "human": {"s": 2}},
                ],
            }
        )
        + "\n"
    )
    results = tmp_path / "results.json"
    first = CliRunner().invoke(
        main,
        [
            "compare",
            "--data",
            str(data),
            "--judge",
            "sim",
            "--no-cache",
            "--quiet",
            "--strategies",
            "individual",
            "--max-candidate-chars",
            "0",
            "--out",
            str(results),
        ],
    )
    assert first.exit_code == 0, first.output
    assert json.loads(results.read_text())["config"]["max_candidate_chars"] == 0
    again = CliRunner().invoke(main, ["compare", "--config", str(results), "--quiet"])
    assert again.exit_code == 0, again.output
