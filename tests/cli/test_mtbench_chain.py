"""Issue 39's chain on the loopback stand-ins: MT-Bench-style two-turn questions -> ``rankkit generate``
with three hosted models -> ``rankkit leaderboard`` with ``verdicts=graded`` -> a board with intervals;
the judgments keep their levels and the conversations, and a rerun pays nothing."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.tasks import load_tasks
from tests.adversarial.stub_judge import HonestJudgeServer
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, _text_of

ANTHROPIC_KEY = "sk-ant-test-0123456789"
QUESTIONS = [
    {"task_id": f"q{i}", "turns": [f"Question {i}: name a prime above {10 * i}.", "Now explain why it is prime."]}
    for i in range(1, 7)
]
#: The honest judge's points for every turn each model wrote: the order the board must find.
MODEL_POINTS = {"gpt": 9.0, "local": 5.0, "claude": 1.0}


def invoke(args: list[str]):
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.output + repr(result.exception)
    return result


def judged_levels(cache_path: Path) -> list[int | None]:
    """The level of every pairwise verdict stored in the cache (None: a binary verdict)."""
    import sqlite3

    with sqlite3.connect(cache_path) as db:
        payloads = [json.loads(row[0]) for row in db.execute("SELECT payload FROM judgments")]
    return [p.get("level") for p in payloads if "winner" in p]


def written_answer(body: dict) -> str:
    """What a stand-in model writes to a question: its name, the turn it answers and the question."""
    users = [m for m in body["messages"] if m["role"] == "user"]
    return f"{body['model']} on turn {len(users)}: {_text_of(users[-1]['content'])}"


class WritingOpenAIServer(OpenAILikeServer):
    """The OpenAI stand-in whose models write an answer of their own (the stand-in counts otherwise)."""

    def complete_fresh(self, body: dict) -> dict:
        reply = super().complete_fresh(body)
        reply["choices"][0]["message"]["content"] = written_answer(body)
        return reply


class WritingAnthropicServer(AnthropicLikeServer):
    def reply(self, body: dict) -> dict:
        reply = super().reply(body)
        reply["content"][0]["text"] = written_answer(body)
        return reply


@pytest.fixture()
def stand_ins(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with WritingOpenAIServer({}) as openai, WritingAnthropicServer({}, api_key=ANTHROPIC_KEY) as anthropic:
        yield openai, anthropic


def test_two_turn_questions_go_from_three_models_to_a_graded_board_and_a_rerun_pays_nothing(stand_ins, tmp_path):
    openai, anthropic = stand_ins
    questions = tmp_path / "questions.jsonl"
    questions.write_text("".join(json.dumps(q) + "\n" for q in QUESTIONS), encoding="utf-8")
    answers, cache = tmp_path / "answers.jsonl", tmp_path / "cache.sqlite"
    models = ",".join(
        [
            f"openai:gpt-4.1,base_url={openai.base_url},backoff=0.01,name=gpt",
            f"openai:local-model,base_url={openai.base_url},backoff=0.01,name=local",
            f"anthropic:claude-sonnet-4-5,base_url={anthropic.base_url},backoff=0.01,name=claude",
        ]
    )
    generate = ["generate", "--questions", str(questions), "--models", models, "--out", str(answers)]
    invoke([*generate, "--cache", str(cache), "-q"])
    tasks = load_tasks(answers)
    assert len(tasks) == len(QUESTIONS) and all(len(task.candidates) == 3 for task in tasks)
    for task in tasks:  # each answer is the two-turn continuation: assistant, the second question, assistant
        for candidate in task.candidates:
            assert [m.role for m in candidate.text] == ["assistant", "user", "assistant"]
            assert candidate.text[1].content == "Now explain why it is prime."

    quality = {
        m.content: MODEL_POINTS[c.system] for t in tasks for c in t.candidates for m in c.text if m.role == "assistant"
    }
    with HonestJudgeServer(quality, continues=True) as judge_server:
        judge = f"openai:honest,base_url={judge_server.base_url},verdicts=graded,backoff=0.01"
        board_path = tmp_path / "board.json"
        args = ["leaderboard", "--data", str(answers), "--judge", judge, "--order", "both", "--bootstrap", "50"]
        args += ["--strong-weight", "3", "--ties", "davidson", "--cache", str(cache), "-q"]
        invoke([*args, "--out", str(board_path)])
        asked = sum(judge_server.requests.values())
        board = json.loads(board_path.read_text(encoding="utf-8"))
        assert [row["name"] for row in board["systems"]] == ["gpt", "local", "claude"]
        assert all(row["ci_low"] < row["rating"] < row["ci_high"] for row in board["systems"])
        assert board["weighting"] == {"ties": "davidson", "strong_weight": 3, "length_margin": None}
        levels = judged_levels(cache)
        assert levels and all(level in (-2, -1, 0, 1, 2) for level in levels)
        assert {abs(level) for level in levels} >= {2}  # 9 against 1 points is a strong verdict

        rerun_path = tmp_path / "rerun.json"
        invoke([*args, "--out", str(rerun_path)])
        assert sum(judge_server.requests.values()) == asked  # the rerun paid nothing
        rerun = json.loads(rerun_path.read_text(encoding="utf-8"))
        assert rerun["judge_calls"] == 0
        assert [row["rating"] for row in rerun["systems"]] == pytest.approx(
            [row["rating"] for row in board["systems"]], abs=1e-9
        )
    generated_before = len(openai.bodies) + len(anthropic.bodies)
    invoke([*generate, "--cache", str(cache), "-q"])
    assert len(openai.bodies) + len(anthropic.bodies) == generated_before  # answers too come from the cache
