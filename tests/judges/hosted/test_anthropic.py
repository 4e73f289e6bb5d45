"""The anthropic judge against a server that behaves like the Messages API (tests/hosted_servers.py)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import rankkit
from rankkit.data.specs import SpecError
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.judges.hosted.anthropic import AnthropicRuntime, read_message
from rankkit.judges.hosted.http_client import ClientConfig
from tests.hosted_servers import AnthropicLikeServer, human_quality
from tests.judges.hosted.test_openai_hosted import champions_are_top

SAMPLE = Path(__file__).resolve().parents[3] / "rankkit" / "data" / "sample" / "tasks.jsonl"
KEY = "sk-ant-test-0123456789"


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(SAMPLE)


@pytest.fixture()
def key(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
    return KEY


def spec(server: AnthropicLikeServer, extra: str = "") -> str:
    return f"anthropic:claude-sonnet-4-5,base_url={server.base_url},price_in=3,price_out=15,backoff=0.01" + (
        f",{extra}" if extra else ""
    )


def test_done_when_compare_runs_on_prefilled_verdicts_with_a_dollar_cost(tasks, tmp_path):
    out = tmp_path / "r.json"
    with AnthropicLikeServer(human_quality(tasks), api_key=KEY) as server:
        result = subprocess.run(
            [
                sys.executable,
                "-m",
                "rankkit",
                "compare",
                "--strategies",
                "knockout,knockout:order=both,bt,individual",
                "--judge",
                f"anthropic:claude-sonnet-4-5,base_url={server.base_url},price_in=3,price_out=15",
                "--out",
                str(out),
                "--no-cache",
            ],
            capture_output=True,
            text=True,
            timeout=300,
            env={**os.environ, "ANTHROPIC_API_KEY": KEY, "PYTHONPATH": str(Path(__file__).resolve().parents[3])},
        )
        refused = list(server.refused)
        headers = list(server.headers_seen)
    assert result.returncode == 0, result.stderr[-3000:]
    assert refused == []
    assert all(
        h["x-api-key"] == KEY and h["anthropic-version"] == "2023-06-01" and "authorization" not in h for h in headers
    )
    record = json.loads(out.read_text())
    assert set(record["judge"]["verdict_paths"]) == {"prefill"}
    assert all(s["cost"]["usd"] > 0 and s["cost"]["parse_failures"] == 0 for s in record["strategies"])
    knockout = next(s for s in record["strategies"] if s["name"] == "knockout")
    assert champions_are_top({t["task_id"]: t["ranking"][0] for t in knockout["tasks"]}, tasks)
    assert KEY not in out.read_text() and KEY not in result.stdout + result.stderr


def test_the_verdict_is_a_prefill_without_trailing_whitespace_and_a_two_token_reply(tasks, key):
    with AnthropicLikeServer(human_quality(tasks), api_key=key) as server:
        rankkit.compare(tasks[:1], ["knockout"], judge=spec(server))
        reads = [b for b in server.bodies if b["messages"][-1]["role"] == "assistant"]
    assert reads and all(b["max_tokens"] == 2 and b["temperature"] == 0.0 for b in reads)
    assert all(
        b["messages"][-1]["content"].endswith(("Answer 1:", "Answer 2:", "Antwort 1:", "Antwort 2:")) for b in reads
    )


def test_system_messages_go_top_level_and_the_prompt_is_marked_for_caching():
    runtime = AnthropicRuntime("claude-sonnet-4-5", ClientConfig("anthropic", "http://127.0.0.1:9/v1", api_key=KEY))
    body = runtime.message_body(
        [{"role": "system", "content": "Be fair."}, {"role": "user", "content": "Q"}], 10, 0.0, prefill="Score: "
    )
    assert body["system"] == "Be fair."
    assert body["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "Q", "cache_control": {"type": "ephemeral"}}]},
        {"role": "assistant", "content": "Score:"},
    ]
    plain = AnthropicRuntime(
        "claude-sonnet-4-5", ClientConfig("anthropic", "http://127.0.0.1:9/v1"), prompt_cache=False
    )
    assert plain.message_body([{"role": "user", "content": "Q"}], 10, 0.0)["messages"][0]["content"] == "Q"
    assert "x-api-key" not in plain.client.headers and "api_key=none" in repr(plain)
    assert runtime.client.headers == {"anthropic-version": "2023-06-01", "x-api-key": KEY} and KEY not in repr(runtime)


def test_cache_reads_and_writes_are_counted_and_priced(tasks, key):
    costs = {}
    for minimum in (10**9, 1):
        with AnthropicLikeServer(human_quality(tasks), api_key=key, cache_min_tokens=minimum) as server:
            costs[minimum] = rankkit.compare(tasks[:2], ["knockout"], judge=spec(server)).strategies[0].cost
    assert costs[10**9].cached_tokens == 0 and costs[1].cached_tokens > 0
    # reads at 0.1x outweigh writes at 1.25x: each prompt is written once and read by its verdict reads
    assert costs[1].usd < costs[10**9].usd


def test_429_529_and_500_are_retried(tasks, key):
    with AnthropicLikeServer(human_quality(tasks), api_key=key) as server:
        server.faults = [(429, {"retry-after": "0"}), (529, {}), (500, {})]
        judge = make_judge(spec(server))
        try:
            result = rankkit.compare(tasks[:1], ["knockout"], judge=judge)
            stats = judge.runtime.client.stats.to_dict()
        finally:
            judge.close()
    assert stats["retries"] == {"429": 1, "5xx": 2}
    assert result.strategies[0].cost.parse_failures == 0


@pytest.mark.parametrize(
    "options, message",
    [
        ("mode=logprob", "mode other than generate needs log-probabilities"),
        ("mode=loglik", "needs log-probabilities.*got 'loglik'"),
        ("api_key=x", "do not put the API key"),
        ("colour=red", "unknown option 'colour' for anthropic"),
    ],
)
def test_bad_specs_are_refused(options, message, key):
    with pytest.raises(SpecError, match=message):
        make_judge(f"anthropic:claude-sonnet-4-5,{options}")


def test_no_key_and_no_base_url_is_refused(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(SpecError, match="export ANTHROPIC_API_KEY"):
        make_judge("anthropic:claude-sonnet-4-5")


def test_a_wrong_key_fails_with_the_key_redacted(tasks, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-wrong-key-42")
    with AnthropicLikeServer(human_quality(tasks), api_key=KEY) as server:
        with pytest.raises(rankkit.judges.JudgeError) as caught:
            rankkit.compare(tasks[:1], ["knockout"], judge=spec(server))
    assert "401" in str(caught.value) and "sk-ant-wrong-key-42" not in str(caught.value)


def test_read_message_rejects_a_body_without_content_blocks():
    from rankkit.judges.hosted.http_retry import BadResponse

    with pytest.raises(BadResponse, match="content"):
        read_message({"content": "text"})


def test_kway_strategies_read_the_prefilled_best_label(tasks, key):
    with AnthropicLikeServer(human_quality(tasks), api_key=key) as server:
        result = rankkit.compare(tasks, ["setwise_knockout"], judge=spec(server))
    assert server.refused == []
    run = result.strategies[0]
    assert champions_are_top({t.task_id: t.ranking[0] for t in run.tasks}, tasks)
    judgments = [g.judgment for t in run.tasks for g in t.group_comparisons]
    assert judgments and {j.extras["verdict_path"] for j in judgments} == {"prefill"}


def test_a_listwise_ranking_is_read_place_by_place(tasks, key):
    """No log-probabilities: the ranking is k - 1 prefilled reads (``Ranking: B > ...``), so the
    whole order is the judge's, not just its first place."""
    with AnthropicLikeServer(human_quality(tasks), api_key=key) as server:
        result = rankkit.compare(tasks, ["listwise"], judge=spec(server))
        prefills = [
            b["messages"][-1]["content"]
            for b in server.bodies
            if b["messages"][-1]["role"] == "assistant" and "Ranking:" in b["messages"][-1]["content"]
        ]
    assert server.refused == []
    assert any(p.endswith(">") for p in prefills)  # later places prefilled with the ones before
    run = result.strategies[0]
    assert run.cost.parse_failures == 0
    for task, outcome in zip(tasks, run.tasks):
        points = [task.candidate(cid).human["points"] for cid in outcome.ranking]
        assert points == sorted(points, reverse=True), task.task_id  # the honest judge's full order
