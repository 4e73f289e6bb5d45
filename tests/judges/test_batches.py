"""Batch APIs (rankkit/judges/batches.py) against the loopback OpenAI- and Anthropic-like servers."""

from __future__ import annotations

import json
import math

import pytest

import rankkit
from rankkit.cache import JudgmentCache
from rankkit.judges import make_judge
from rankkit.judges.batches import BatchJournal, request_key
from rankkit.specs import SpecError
from rankkit.tasks import load_tasks
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, human_quality
from tests.judges.test_openai_hosted import SAMPLE

KEY = "sk-ant-batch-test"
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
    assert (judge.capacity, judge.fills_batches) == (64, True)
    assert (direct.capacity, direct.fills_batches) == (4, False)
    with pytest.raises(SpecError, match="batch_size must be >= 1"):
        make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,batch=true,batch_size=0")


def test_the_progress_bar_shows_each_batchs_state(tasks, tmp_path, capsys):
    with make_server("anthropic", tasks) as server:
        judge = make_judge(judge_spec("anthropic", server, tmp_path / "b.json"))
        rankkit.compare(tasks[:1], ["bt"], judge=judge, progress=True)
        judge.close()
    shown = capsys.readouterr().err
    assert "batch msgbatch_1 in_progress 0/" in shown  # the bar's postfix while the batch runs
