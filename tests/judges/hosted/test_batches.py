"""Batch APIs (rankkit/judges/hosted/batches.py) against the loopback OpenAI- and Anthropic-like servers."""

from __future__ import annotations

import json
import math
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import rankkit
from rankkit.data.specs import SpecError
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.judges.hosted.batch_apis import AnthropicBatches, OpenAIBatches
from rankkit.judges.hosted.batch_journal import ANSWER_RETENTION, BatchJournal, request_key
from rankkit.judges.hosted.http_retry import BadResponse
from rankkit.judgments.cache import JudgmentCache
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, human_quality
from tests.judges.hosted.test_openai_hosted import SAMPLE

KEY = "sk-ant-batch-test"
ROOT = Path(__file__).resolve().parents[3]
STRATEGIES = ["knockout", "bt"]


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(SAMPLE, limit=3)


def make_server(kind: str, tasks):
    quality = human_quality(tasks)
    return OpenAILikeServer(quality) if kind == "openai" else AnthropicLikeServer(quality, api_key=KEY)


def judge_spec(kind: str, server, journal, extra: str = "") -> str:
    model = "gpt-4.1,price_in=2,price_out=8" if kind == "openai" else "claude-sonnet-4-5,price_in=3,price_out=15"
    return (
        f"{kind}:{model},base_url={server.base_url},backoff=0.01,batch=true,batch_poll=0.01,"
        f"batch_journal={journal}" + (f",{extra}" if extra else "")
    )


def direct_spec(kind: str, server) -> str:
    model = "gpt-4.1,price_in=2,price_out=8" if kind == "openai" else "claude-sonnet-4-5,price_in=3,price_out=15"
    return f"{kind}:{model},base_url={server.base_url},backoff=0.01"


@pytest.fixture(autouse=True)
def anthropic_key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_batched_judgments_equal_the_direct_ones_at_half_the_price(kind, tasks, tmp_path):
    with make_server(kind, tasks) as server:
        direct = rankkit.compare(tasks, STRATEGIES, judge=direct_spec(kind, server))
    with make_server(kind, tasks) as server:
        batched = rankkit.compare(tasks, STRATEGIES, judge=judge_spec(kind, server, tmp_path / "b.json"))
        outside = server.direct_chats
        created = len(server.batch_jobs)
        batched_requests = server.batched_chats
    assert outside == (1 if kind == "openai" else 0)  # the continuation probe, nothing else
    assert server.refused == []
    # the dispatcher gathers what the tasks in progress ask into one call, so batches hold several
    # requests each (not one batch per request; the exact grouping depends on the tasks' timing)
    assert created >= 2 and batched_requests >= 3 * created, (created, batched_requests)
    for one, other in zip(direct.strategies, batched.strategies):
        assert [t.ranking for t in one.tasks] == [t.ranking for t in other.tasks], one.name
        assert [[c.verdict.raw for c in t.comparisons] for t in one.tasks] == [
            [c.verdict.raw for c in t.comparisons] for t in other.tasks
        ]
        assert other.cost.prompt_tokens == one.cost.prompt_tokens
        assert other.cost.usd == pytest.approx(one.cost.usd / 2, rel=1e-3)  # the batch discount
    assert json.loads((tmp_path / "b.json").read_text()) == {}  # every batch read, nothing left to resume


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_failed_requests_go_out_again_in_a_new_batch(kind, tasks, tmp_path):
    with make_server(kind, tasks) as server:
        server.batch_failures = {"#0", "#1"}  # knockout's first round: both of its matches
        result = rankkit.compare(tasks[:1], ["knockout"], judge=judge_spec(kind, server, tmp_path / "b.json"))
        jobs = [
            server.batch_jobs[batch_id] for batch_id in sorted(server.batch_jobs, key=lambda b: int(b.split("_")[1]))
        ]
    assert result.strategies[0].cost.parse_failures == 0
    counts = jobs[0]["request_counts"]
    assert counts.get("failed", counts.get("errored")) == 2
    assert len(jobs[1].get("lines") or jobs[1].get("requests")) == 2  # the failed requests, again, in a new batch


class Killed(BaseException):
    """Stands for the run being killed while it waits for a batch."""


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_killed_run_resumes_its_batch_and_pays_nothing_twice(kind, tasks, tmp_path):
    journal = tmp_path / "batches.json"
    with make_server(kind, tasks) as server:
        reference = rankkit.compare(tasks[:2], ["knockout"], judge=judge_spec(kind, server, tmp_path / "ref.json"))
        paid_once = server.batched_chats
    with make_server(kind, tasks) as server, JudgmentCache(tmp_path / "cache.sqlite") as cache:
        killed = make_judge(judge_spec(kind, server, journal))

        def kill(seconds: float) -> None:
            raise Killed()

        killed.runtime.batcher.sleep = kill
        with pytest.raises(Killed):
            rankkit.compare(tasks[:2], ["knockout"], judge=killed, cache=cache)
        killed.close()
        waiting = json.loads(journal.read_text())
        # every batch submitted (one per task: the run judges tasks side by side) was journaled before the kill
        assert waiting and {entry["batch_id"] for entry in waiting.values()} == set(server.batch_jobs)
        created_before = len(server.batch_jobs)
        resumed = make_judge(judge_spec(kind, server, journal))
        result = rankkit.compare(tasks[:2], ["knockout"], judge=resumed, cache=cache)
        assert resumed.runtime.batcher.resumed == created_before  # each killed batch waited for, not resent
        resumed.close()
        assert server.batched_chats == paid_once  # the first batch was waited for, not sent again
    assert [t.ranking for t in result.strategies[0].tasks] == [t.ranking for t in reference.strategies[0].tasks]
    assert json.loads(journal.read_text()) == {}


def test_the_journal_key_names_the_provider_the_server_and_the_request(tmp_path):
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}]}
    key = request_key("openai", "http://a/v1", body)
    assert key != request_key("anthropic", "http://a/v1", body) != request_key("openai", "http://b/v1", body)
    assert key != request_key("openai", "http://a/v1", {**body, "max_tokens": 1})
    journal = BatchJournal(tmp_path / "j.json")
    entry = {"batch_id": "batch_1", "provider": "openai", "custom_id": "rk-0123456789abcdef-0", "created": 1.0}
    journal.put(key, entry)
    assert BatchJournal(tmp_path / "j.json").get(key) == entry
    journal.remove(key)
    assert journal.get(key) is None


def test_batch_options_need_batch_true():
    with pytest.raises(SpecError, match="need batch=true"):  # batch_poll, batch_journal and batch_size
        make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,batch_poll=3")
    with pytest.raises(SpecError, match="batch_poll must be > 0"):
        make_judge("anthropic:claude-sonnet-4-5,base_url=http://127.0.0.1:9/v1,batch=true,batch_poll=0")


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_each_knockout_round_of_every_task_goes_out_as_one_batch_per_read(kind, tmp_path):
    # Six tasks of 4 or 5 answers: 3 rounds (the 5-answer tasks need ceil(log2 5) = 3). Each round
    # of every task is one step: the explanations, then the two score reads (the second depends on
    # the first's digit), whatever each task's score scale: 3 batches per round, 9 in all.
    tasks = load_tasks(SAMPLE)
    assert {len(t.candidates) for t in tasks} == {4, 5} and len({t.scale for t in tasks}) > 1
    with make_server(kind, tasks) as server:
        result = rankkit.compare(tasks, ["knockout:order=both"], judge=judge_spec(kind, server, tmp_path / "b.json"))
        sizes = [len(job.get("lines") or job.get("requests") or []) for job in server.batch_jobs.values()]
    rounds = math.ceil(math.log2(max(len(t.candidates) for t in tasks)))
    assert len(sizes) == 3 * rounds, sizes
    first_round = sum(2 * (len(t.candidates) // 2) for t in tasks)  # every pair of round 1, both orders
    assert sizes[:3] == [first_round] * 3
    assert sum(sizes) == 3 * result.strategies[0].cost.comparisons


def test_a_batching_judge_asks_the_dispatcher_for_whole_steps():
    judge = make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,concurrency=4,batch=true,batch_size=64")
    direct = make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,concurrency=4")
    assert (judge.capabilities.capacity, judge.capabilities.fills_batches) == (64, True)
    assert (direct.capabilities.capacity, direct.capabilities.fills_batches) == (4, False)
    with pytest.raises(SpecError, match="batch_size must be >= 1"):
        make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,batch=true,batch_size=0")


def test_the_progress_bar_shows_each_batchs_state(tasks, tmp_path, capsys):
    with make_server("anthropic", tasks) as server:
        judge = make_judge(judge_spec("anthropic", server, tmp_path / "b.json"))
        rankkit.compare(tasks[:1], ["bt"], judge=judge, progress=True)
        judge.close()
    shown = capsys.readouterr().err
    assert "batch msgbatch_1 in_progress 0/" in shown  # the bar's postfix while the batch runs


# -- bought exactly once: kills, lost replies, lost batches, bad journals ------------------------------------


def four_answer_task(folder) -> tuple:
    """The sample's first task of 4 answers, as its own task file: knockout takes 2 rounds of 3
    steps (the explanations, then two score reads), one batch each: 6 batches."""
    line = next(text for text in SAMPLE.read_text().splitlines() if len(json.loads(text)["candidates"]) == 4)
    path = folder / "tasks.jsonl"
    path.write_text(line + "\n")
    return path, load_tasks(path)


FRESH_BATCHES = 6


def cli(kind: str, server, folder, tasks_path) -> list[str]:
    return [sys.executable, "-m", "rankkit", "rank", "--data", str(tasks_path), "--strategy", "knockout"] + [
        "--judge",
        judge_spec(kind, server, folder / "batches.json"),
        "--cache",
        str(folder / "cache.sqlite"),
        "--quiet",
    ]


def cli_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(ROOT), "ANTHROPIC_API_KEY": KEY}


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_run_killed_after_its_second_batch_buys_only_the_batches_it_had_not(kind, tmp_path):
    tasks_path, tasks = four_answer_task(tmp_path)
    with make_server(kind, tasks) as server:
        server.vary_explanations = True  # a re-asked step would change every later request
        server.hold_from = 2  # the second batch (the first score reads) stays in progress
        child = subprocess.Popen(cli(kind, server, tmp_path, tasks_path), env=cli_env(), cwd=ROOT)
        deadline = time.monotonic() + 60
        while server.batches_created < 2 and child.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)
        child.send_signal(signal.SIGKILL)
        assert child.wait() == -signal.SIGKILL and server.batches_created == 2
        journal = json.loads((tmp_path / "batches.json").read_text())
        assert sum("answer" in entry for entry in journal.values()) == 2  # the first step's explanations
        server.hold_from = None
        resumed = subprocess.run(cli(kind, server, tmp_path, tasks_path), env=cli_env(), cwd=ROOT, timeout=120)
        assert resumed.returncode == 0
        assert server.batches_created - 2 == FRESH_BATCHES - 2  # the killed run's two batches not bought again
        assert server.refused == []
    assert json.loads((tmp_path / "batches.json").read_text()) == {}  # a run that ended well leaves nothing


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_batch_creation_whose_reply_is_lost_is_found_not_created_again(kind, tmp_path, caplog):
    _, tasks = four_answer_task(tmp_path)
    with make_server(kind, tasks) as server:
        server.drop_creations = 1  # accepted, then the connection drops: the client cannot tell
        judge = make_judge(judge_spec(kind, server, tmp_path / "b.json"))
        result = rankkit.compare(tasks, ["knockout"], judge=judge)
        created, batcher = server.batches_created, judge.runtime.batcher
        judge.close()
        first = server.batch_jobs[("batch_1" if kind == "openai" else "msgbatch_1")]
    assert created == batcher.created == FRESH_BATCHES
    assert (
        first.get("metadata", {"rankkit_tag": "-"})["rankkit_tag"]
        in (first.get("lines") or first["requests"])[0]["custom_id"]
    )  # tagged on both: the OpenAI metadata and the custom ids
    assert result.strategies[0].cost.parse_failures == 0
    assert "looking the batch up" in caplog.text
    assert json.loads((tmp_path / "b.json").read_text()) == {}


def killed_in_its_first_batch(kind: str, server, journal, tasks) -> str:
    """Run knockout until it waits for its first batch, then stop it as a kill would; the batch's id."""
    judge = make_judge(judge_spec(kind, server, journal))

    def kill(seconds: float) -> None:
        raise Killed()

    judge.runtime.batcher.sleep = kill
    with pytest.raises(Killed):
        rankkit.compare(tasks, ["knockout"], judge=judge)
    judge.close()
    (batch_id,) = server.batch_jobs
    return batch_id


@pytest.mark.parametrize(
    ("kind", "fault"),
    [("openai", "forget"), ("anthropic", "forget"), ("openai", "expired"), ("openai", "cancelled")]
    + [("anthropic", "expired"), ("anthropic", "canceled")],
)
def test_a_lost_batch_is_reported_once_and_its_requests_asked_again(kind, fault, tmp_path, caplog):
    _, tasks = four_answer_task(tmp_path)
    journal = tmp_path / "b.json"
    with make_server(kind, tasks) as server:
        batch_id = killed_in_its_first_batch(kind, server, journal, tasks)
        server.forget(batch_id) if fault == "forget" else server.end(batch_id, fault)
        caplog.clear()
        judge = make_judge(judge_spec(kind, server, journal))
        result = rankkit.compare(tasks, ["knockout"], judge=judge)
        batcher = judge.runtime.batcher
        judge.close()
    said = "unknown to the server" if fault == "forget" else f"ended {fault} before running 2"
    assert [record.getMessage() for record in caplog.records if said in record.getMessage()] != []
    assert len([r for r in caplog.records if r.levelname == "WARNING" and batch_id in r.getMessage()]) == 1
    assert batcher.reasked == 2 and batcher.created == FRESH_BATCHES  # counted; the lost step bought again
    assert result.strategies[0].cost.parse_failures == 0
    assert json.loads(journal.read_text()) == {}


ENTRY = {"provider": "openai", "custom_id": "rk-0123456789abcdef-0", "created": 1.0}


@pytest.mark.parametrize(
    ("journal", "said"),
    [
        ({"a" * 64: "x"}, "the entry is str"),
        ({"a" * 64: {}}, "provider is not"),
        ({"a" * 64: {**ENTRY, "batch_id": {"id": "batch_1"}}}, "batch_id is not a batch id"),
        ({"a" * 64: {**ENTRY, "batch_id": "../files/x/content"}}, "batch_id is not a batch id"),
        ({"not-a-key": {**ENTRY, "batch_id": "batch_1"}}, "not a request key"),
        (["x"], "not a JSON object"),
        ("{", "is not JSON"),
    ],
)
def test_a_malformed_journal_exits_2_naming_the_file_and_the_entry(journal, said, tmp_path):
    tasks_path, tasks = four_answer_task(tmp_path)
    path = tmp_path / "batches.json"
    path.write_text(journal if isinstance(journal, str) else json.dumps(journal))
    with make_server("openai", tasks) as server:
        done = subprocess.run(
            cli("openai", server, tmp_path, tasks_path), env=cli_env(), cwd=ROOT, capture_output=True, text=True
        )
        asked = server.batches_created + server.uploads
    assert done.returncode == 2, done.stderr
    assert said in done.stderr and str(path) in done.stderr and "Traceback" not in done.stderr
    if isinstance(journal, dict):
        assert next(iter(journal)) in done.stderr
    assert asked == 0  # nothing sent: no batch, no upload, no path a journal chose


JOURNAL_WRITER = """
import sys
from rankkit.judges.hosted.batch_apis import AnthropicBatches, OpenAIBatches
from rankkit.judges.hosted.batch_journal import ANSWER_RETENTION, BatchJournal, request_key
from rankkit.judges.hosted.http_retry import BadResponse
journal = BatchJournal(sys.argv[1])
for number in range(300):
    key = request_key("openai", sys.argv[2], {"n": number})
    journal.put(key, {"provider": "openai", "custom_id": f"rk-0123456789abcdef-{number}", "created": 1.0,
                      "batch_id": f"batch_{number}"})
"""


def test_two_processes_writing_one_journal_lose_no_entry(tmp_path):
    path = tmp_path / "shared.json"
    writers = [
        subprocess.Popen([sys.executable, "-c", JOURNAL_WRITER, str(path), server], env=cli_env(), cwd=ROOT)
        for server in ("http://a/v1", "http://b/v1")
    ]
    assert [writer.wait(timeout=120) for writer in writers] == [0, 0]
    assert len(json.loads(path.read_text())) == 600


def test_answers_older_than_the_retention_are_dropped_and_pending_batches_kept(tmp_path):
    journal = BatchJournal(tmp_path / "j.json")
    old, new = time.time() - ANSWER_RETENTION - 1, time.time()
    journal.put_many(
        {
            "a" * 64: {**ENTRY, "batch_id": "batch_1", "answer": {}, "answered": old},
            "b" * 64: {**ENTRY, "batch_id": "batch_1", "answer": {}, "answered": new},
            "c" * 64: {**ENTRY, "batch_id": "batch_2", "created": old},  # still waited for
        }
    )
    assert sorted(json.loads((tmp_path / "j.json").read_text())) == ["b" * 64, "c" * 64]


class RecordingTransport:
    """A transport that records each call and answers with ``reply``."""

    def __init__(self, reply):
        self.reply, self.calls = reply, []

    def call(self, method, path, **kwargs):
        self.calls.append((method, path))
        return self.reply


@pytest.mark.parametrize("protocol", [OpenAIBatches(), AnthropicBatches()])
def test_an_id_that_is_not_one_never_reaches_a_url(protocol):
    transport = RecordingTransport({"id": "../files/x/content"})
    with pytest.raises(BadResponse, match="not an id"):
        protocol.status(transport, "../files/x/content")
    assert transport.calls == []
    with pytest.raises(BadResponse, match="not an id"):  # a server's reply is checked too
        protocol.submit(transport, [("rk-0123456789abcdef-0", {"model": "m"})], "0123456789abcdef")
    with pytest.raises(BadResponse, match="not an id"):
        protocol.results(transport, {"id": "../x", "output_file_id": {"x": 1}, "processing_status": "ended"})
    assert all(".." not in path and "{" not in path for _, path in transport.calls)


@pytest.mark.parametrize("kind", ["openai", "anthropic"])
def test_a_run_killed_while_creating_a_batch_finds_it_by_its_tag(kind, tmp_path):
    _, tasks = four_answer_task(tmp_path)
    journal = tmp_path / "b.json"
    with make_server(kind, tasks) as server:
        killed = make_judge(judge_spec(kind, server, journal))
        protocol = killed.runtime.batcher.protocol
        submit = protocol.submit

        def submit_then_die(*args):
            submit(*args)  # the server has the batch; the run dies before it journals the id
            raise Killed()

        protocol.submit = submit_then_die
        with pytest.raises(Killed):
            rankkit.compare(tasks, ["knockout"], judge=killed)
        killed.close()
        waiting = json.loads(journal.read_text()).values()
        assert len(waiting) == 2 and not any("batch_id" in entry for entry in waiting)
        resumed = make_judge(judge_spec(kind, server, journal))
        rankkit.compare(tasks, ["knockout"], judge=resumed)
        batcher = resumed.runtime.batcher
        resumed.close()
    assert server.batches_created == FRESH_BATCHES and batcher.created == FRESH_BATCHES - 1
    assert batcher.reasked == 0 and batcher.resumed == 1
    assert json.loads(journal.read_text()) == {}
