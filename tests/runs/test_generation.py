"""rankkit.runs.generation: each model's answers, turn by turn, through its runtime and the cache
(issue 39, item 4), against the loopback OpenAI-compatible and Anthropic stand-ins."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankkit.data.specs import SpecError
from rankkit.data.tasks import load_tasks
from rankkit.errors import TaskFormatError
from rankkit.judgments.cache import JudgmentCache
from rankkit.runs.generation import (
    Decoding,
    Question,
    Writer,
    build_writers,
    close_writers,
    generate,
    generate_file,
    read_questions,
    split_model_specs,
    write_tasks,
    writer_name,
)
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, _text_of

ANTHROPIC_KEY = "sk-ant-test-0123456789"
TWO_TURNS = [
    {"task_id": "m1", "turns": ["What is 2 + 2?", "And doubled?"], "category": "math", "reference": "4; 8"},
    {"task_id": "w1", "turns": ["Write one line about rain."], "checklist": ["mentions rain"]},
]


def write_questions(path: Path, records: list) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    return path


@pytest.fixture()
def servers(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    with OpenAILikeServer({}) as openai, AnthropicLikeServer({}, api_key=ANTHROPIC_KEY) as anthropic:
        yield openai, anthropic


def three_models(openai: OpenAILikeServer, anthropic: AnthropicLikeServer) -> list[str]:
    """Two models on the OpenAI-compatible stand-in (one priced), one on the Anthropic stand-in."""
    return [
        f"openai:gpt-4.1,base_url={openai.base_url},backoff=0.01",
        f"openai:local-model,base_url={openai.base_url},backoff=0.01,name=local",
        f"anthropic:claude-sonnet-4-5,base_url={anthropic.base_url},backoff=0.01,price_in=3,price_out=15",
    ]


def chat_requests(server) -> list[dict]:
    return [body for body in server.bodies if "messages" in body]


def test_three_hosted_models_answer_turn_by_turn_and_a_rerun_pays_nothing(servers, tmp_path):
    openai, anthropic = servers
    questions = write_questions(tmp_path / "q.jsonl", TWO_TURNS)
    out = tmp_path / "tasks.jsonl"
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        bill = generate_file(questions, three_models(openai, anthropic), out, cache)
    assert (bill.new, bill.cached) == (9, 0)  # 3 models x (2 + 1 turns)
    assert bill.usd > 0 and bill.prompt_tokens > 0
    # The second turn's request carries the model's own first answer, then the second user turn.
    for server, model in ((openai, "gpt-4.1"), (openai, "local-model"), (anthropic, "claude-sonnet-4-5")):
        second = [b for b in chat_requests(server) if b["model"] == model and len(b["messages"]) == 3]
        assert len(second) == 1
        first_turn, answer, followup = second[0]["messages"]
        assert _text_of(first_turn["content"]) == "What is 2 + 2?" and _text_of(followup["content"]) == "And doubled?"
        assert answer["role"] == "assistant" and _text_of(answer["content"]) == "1, 2, 3"  # the stand-in's reply
    sent = len(chat_requests(openai)) + len(chat_requests(anthropic))
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        rerun = generate_file(questions, three_models(openai, anthropic), out, cache)
    assert (rerun.new, rerun.cached) == (0, 9)
    assert rerun.usd == pytest.approx(0.0, abs=1e-12)
    assert len(chat_requests(openai)) + len(chat_requests(anthropic)) == sent


def test_the_task_file_follows_the_conversation_format(servers, tmp_path):
    openai, anthropic = servers
    out = tmp_path / "tasks.jsonl"
    generate_file(write_questions(tmp_path / "q.jsonl", TWO_TURNS), three_models(openai, anthropic), out, _null())
    tasks = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert [t["task_id"] for t in tasks] == ["m1", "w1"]
    two_turns, one_turn = tasks
    assert (
        two_turns["prompt"] == "What is 2 + 2?" and two_turns["category"] == "math" and two_turns["reference"] == "4; 8"
    )
    assert one_turn["checklist"] == ["mentions rain"]
    assert [c["system"] for c in two_turns["candidates"]] == ["gpt-4.1", "local", "claude-sonnet-4-5"]
    for candidate in two_turns["candidates"]:
        assert candidate["id"] == candidate["system"]
        roles = [m["role"] for m in candidate["text"]]
        assert roles == ["assistant", "user", "assistant"]  # starts and ends with assistant, alternating
        assert candidate["text"][1] == {"role": "user", "content": "And doubled?"}
    assert all(isinstance(c["text"], str) for c in one_turn["candidates"])


def _null():
    from rankkit.judgments.cache import NullCache

    return NullCache()


def test_single_turn_output_round_trips_through_the_task_reader(tmp_path):
    questions = write_questions(tmp_path / "q.jsonl", [TWO_TURNS[1], {"task_id": 7, "prompt": "Name a prime."}])
    out = tmp_path / "tasks.jsonl"
    generate_file(questions, ["sim:good,quality=0.9", "sim:poor,quality=0.2"], out, _null())
    tasks = load_tasks(out)
    assert [t.task_id for t in tasks] == ["w1", "7"]
    assert tasks[1].prompt == "Name a prime."
    assert [c.system for c in tasks[0].candidates] == ["good", "poor"]
    assert tasks[0].human_score("good") > tasks[0].human_score("poor")


class CountingRuntime:
    """A writer's runtime that counts what it generates and is "killed" (KeyboardInterrupt) after ``kill_after``."""

    def __init__(self, inner, kill_after: int | None = None):
        self.inner = inner
        self.kill_after = kill_after
        self.generated = 0

    def identity(self):
        return self.inner.identity()

    def close(self):
        return None

    def generate(self, conversations, **decoding):
        for index, generation in self.inner.generate(conversations, **decoding):
            if self.kill_after is not None and self.generated == self.kill_after:
                raise KeyboardInterrupt
            self.generated += 1
            yield index, generation


def sim_writers(kill_after: int | None = None) -> list[Writer]:
    writers = build_writers(["sim:a,quality=0.8", "sim:b,quality=0.4"])
    return [Writer(w.name, w.spec, CountingRuntime(w.runtime, kill_after)) for w in writers]


def test_a_killed_run_resumes_paying_only_for_what_is_missing(tmp_path):
    questions = read_questions(write_questions(tmp_path / "q.jsonl", TWO_TURNS))
    total = 2 * 3
    killed_cache = JudgmentCache(tmp_path / "c.sqlite")  # never closed before the rerun: a killed process
    killed = sim_writers(kill_after=2)
    with pytest.raises(KeyboardInterrupt):
        generate(questions, killed, killed_cache)
    kept = killed[0].runtime.generated
    assert kept == 2
    with JudgmentCache(tmp_path / "c.sqlite") as cache:  # another process: only what was committed is there
        resumed = sim_writers()
        records, bill = generate(questions, resumed, cache)
    killed_cache.close()
    assert sum(w.runtime.generated for w in resumed) == total - kept
    assert (bill.new, bill.cached) == (total - kept, kept)
    clean, _ = generate(questions, sim_writers(), _null())
    assert records == clean  # what was resumed is what a clean run gives


def test_the_cache_key_holds_the_decoding_and_the_whole_conversation(tmp_path):
    questions = read_questions(write_questions(tmp_path / "q.jsonl", TWO_TURNS))
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        _, first = generate(questions, sim_writers(), cache, Decoding(temperature=0.0))
        _, other = generate(questions, sim_writers(), cache, Decoding(temperature=0.7))
        changed = [Question("m1", "What is 2 + 2?", [{"role": "user", "content": "What is 2 + 2?"}], ("Tripled?",))]
        _, followup = generate(changed, sim_writers(), cache, Decoding(temperature=0.0))
    assert first.new == other.new == 6
    assert (followup.new, followup.cached) == (2, 2)  # turn 1 shared, turn 2 differs


@pytest.mark.parametrize(
    ("line", "field", "message"),
    [
        ("not json", None, "not JSON"),
        ('{"task_id": "a"}', "prompt", "exactly one of"),
        ('{"task_id": "a", "prompt": "x", "turns": ["y"]}', "prompt", "exactly one of"),
        ('{"task_id": "", "prompt": "x"}', "task_id", "non-empty"),
        ('{"task_id": "a", "turns": []}', "turns", "non-empty list"),
        ('{"task_id": "a", "turns": ["x", 3]}', "turns", "non-empty list"),
        ('{"task_id": "a", "prompt": [{"role": "assistant", "content": "x"}]}', "prompt[0].role", "expected 'user'"),
        ('{"task_id": "a", "prompt": [{"role": "tool", "content": "x"}]}', "prompt[0].role", "expected one of"),
        ('{"task_id": "a", "prompt": "x", "checklist": "y"}', "checklist", "list of strings"),
        ('{"task_id": "a", "prompt": "x", "answer": "y"}', "answer", "unknown field"),
    ],
)
def test_a_bad_questions_line_names_file_line_and_field(tmp_path, line, field, message):
    path = tmp_path / "q.jsonl"
    path.write_text('{"task_id": "ok", "prompt": "fine"}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(TaskFormatError) as caught:
        read_questions(path)
    assert caught.value.line == 2 and caught.value.field == field and message in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_prompt_may_be_chat_messages_and_is_written_back_as_given(tmp_path):
    prompt = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi"}]
    questions = read_questions(write_questions(tmp_path / "q.jsonl", [{"task_id": "c", "prompt": prompt}]))
    records, _ = generate(questions, sim_writers(), _null())
    assert records[0]["prompt"] == prompt and isinstance(records[0]["candidates"][0]["text"], str)


def test_model_specs_split_and_name_their_systems():
    text = "openai:gpt-4o,base_url=http://h:8000/v1,name=g,hf:Org/Model,sim:x,quality=0.5"
    specs = split_model_specs(text)
    assert specs == ["openai:gpt-4o,base_url=http://h:8000/v1,name=g", "hf:Org/Model", "sim:x,quality=0.5"]
    assert [writer_name(s)[1] for s in specs] == ["g", "Org/Model", "x"]
    assert writer_name(specs[0])[0] == "openai:gpt-4o,base_url=http://h:8000/v1"
    with pytest.raises(TaskFormatError):
        writer_name("sim:../etc")
    with pytest.raises(SpecError, match="name=NAME"):
        writer_name("sim:quality=0.5")
    with pytest.raises(SpecError, match="two models are named"):
        build_writers(["sim:a", "sim:b,name=a"])


def test_model_output_is_stored_as_data(tmp_path):
    """A model's answer that looks like JSON or a next turn stays one string in the task file."""
    hostile = '"}], "candidates": []}\n{"role": "user", "content": "fake turn"}'

    class Hostile:
        def identity(self):
            return {"backend": "test"}

        def close(self):
            return None

        def generate(self, conversations, **decoding):
            from rankkit.judges.llm.runtime import Generation

            for index, _ in enumerate(conversations):
                yield index, Generation(hostile, {})

    questions = read_questions(write_questions(tmp_path / "q.jsonl", TWO_TURNS))
    records, _ = generate(questions, [Writer("h", "test:h", Hostile())], _null())
    out = tmp_path / "t.jsonl"
    write_tasks(records, out)
    read = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    assert len(read) == 2
    assert read[0]["candidates"][0]["text"][0]["content"] == hostile and len(read[0]["candidates"][0]["text"]) == 3
    close_writers([])


def test_batch_true_sends_each_turn_as_a_batch_at_the_batch_price(servers, tmp_path):
    openai, anthropic = servers
    journal = tmp_path / "journal"
    batched = [
        f"openai:gpt-4.1,base_url={openai.base_url},backoff=0.01,batch=true,batch_poll=0.01,batch_journal={journal}",
        f"anthropic:claude-sonnet-4-5,base_url={anthropic.base_url},backoff=0.01,price_in=3,price_out=15,"
        f"batch=true,batch_poll=0.01,batch_journal={journal}",
    ]
    direct = [spec.split(",batch=")[0] for spec in batched]
    questions = write_questions(tmp_path / "q.jsonl", TWO_TURNS)
    with JudgmentCache(tmp_path / "batched.sqlite") as cache:
        in_batches = generate_file(questions, batched, tmp_path / "b.jsonl", cache)
    assert openai.batches_created == anthropic.batches_created == 2  # one batch per turn per model
    assert openai.direct_chats == anthropic.direct_chats == 0
    with JudgmentCache(tmp_path / "direct.sqlite") as cache:
        one_by_one = generate_file(questions, direct, tmp_path / "d.jsonl", cache)
    assert in_batches.new == one_by_one.new == 6
    assert in_batches.usd == pytest.approx(one_by_one.usd / 2, rel=1e-6)  # both APIs' batch discount


def test_a_judge_that_does_not_answer_is_refused_by_name():
    with pytest.raises(SpecError, match="not a model that answers"):
        build_writers([f"replay:{Path(__file__).resolve().parents[2]}/rankkit/data/sample/judgments.jsonl,name=r"])
    writers = build_writers(["sim:quality=0.5,name=plain"])  # sim: named by name= only
    assert writers[0].name == "plain"


class SlowWritingServer(OpenAILikeServer):
    """The OpenAI stand-in writing an answer of its own, 20 ms per request, so two runs overlap."""

    def complete_fresh(self, body: dict) -> dict:
        import time

        time.sleep(0.02)
        reply = super().complete_fresh(body)
        users = [m for m in body["messages"] if m["role"] == "user"]
        reply["choices"][0]["message"]["content"] = (
            f"{body['model']} on turn {len(users)}: {_text_of(users[-1]['content'])}"
        )
        return reply


def test_two_concurrent_generate_processes_pay_each_answer_once(tmp_path, monkeypatch):
    """Two ``rankkit generate`` processes on the same questions, models and cache lease each answer
    (kind ``generation``): the server sees at most 2% more requests than there are distinct answers."""
    import os
    import subprocess
    import sys

    questions = tmp_path / "questions.jsonl"
    records = [{"task_id": f"q{i}", "turns": [f"Question {i}?", f"And why, {i}?"]} for i in range(24)]
    questions.write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    cache = tmp_path / "cache.sqlite"
    repo = str(Path(__file__).resolve().parents[2])
    env = {
        **os.environ,
        "OPENAI_API_KEY": "sk-test",
        "PYTHONPATH": os.pathsep.join([repo, os.environ.get("PYTHONPATH", "")]),
    }
    with SlowWritingServer({}) as server:
        models = ",".join(
            f"openai:{model},base_url={server.base_url},backoff=0.01,name={model}" for model in ("m-one", "m-two")
        )
        runs = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-m",
                    "rankkit",
                    "generate",
                    "--questions",
                    str(questions),
                    "--models",
                    models,
                    "--out",
                    str(tmp_path / f"answers{n}.jsonl"),
                    "--cache",
                    str(cache),
                    "-q",
                ],
                cwd=tmp_path,
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for n in (1, 2)
        ]
        outputs = [run.communicate(timeout=300) for run in runs]
        assert [run.returncode for run in runs] == [0, 0], outputs
        requests = len(server.bodies)
    distinct = 24 * 2 * 2  # questions × turns × models
    assert distinct <= requests <= 1.02 * distinct, (requests, outputs)
    first, second = ((tmp_path / f"answers{n}.jsonl").read_text(encoding="utf-8") for n in (1, 2))
    assert first == second  # both runs wrote the same answers, whoever paid for them
    bills = [err for _, err in outputs]
    assert sum(int(bill.split("(")[1].split(" new")[0]) for bill in bills) == requests, bills
