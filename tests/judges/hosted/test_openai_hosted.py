"""The openai judge against a server that behaves like api.openai.com (tests/hosted_servers.py).

Such a server refuses undocumented fields, starts a fresh reply after a final assistant message,
and is judged honestly; rankkit must run every mode without a refused request, read verdicts by
follow-up turns (never free text), learn what the server does not take, and price the run.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

import rankkit
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.judges.hosted.http_client import ClientConfig
from rankkit.judges.hosted.openai_compat import OpenAIRuntime
from rankkit.judges.hosted.prices import Price, usd_nanos
from rankkit.judges.hosted.verdict import followup_question
from tests.hosted_servers import OpenAILikeServer, human_quality

SAMPLE = Path(__file__).resolve().parents[3] / "rankkit" / "data" / "sample" / "tasks.jsonl"
DONE_WHEN_STRATEGIES = "knockout,knockout:order=both,bt,individual"


@pytest.fixture(scope="module")
def tasks():
    return load_tasks(SAMPLE)


def top_answers(tasks) -> dict[str, set[str]]:
    """Per task, the answers with the best human score (a task may have two)."""
    best = {t.task_id: max(c.human["points"] for c in t.candidates) for t in tasks}
    return {t.task_id: {c.id for c in t.candidates if c.human["points"] >= best[t.task_id] - 1e-9} for t in tasks}


def champions_are_top(rankings: dict[str, str], tasks) -> bool:
    top = top_answers(tasks)
    return all(rankings[task_id] in top[task_id] for task_id in top)


def spec(server: OpenAILikeServer, extra: str = "") -> str:
    return f"openai:gpt-4.1,base_url={server.base_url},price_in=2,price_out=8,backoff=0.01" + (
        f",{extra}" if extra else ""
    )


def test_the_server_refuses_vllm_fields_and_does_not_continue(tasks):
    """The stand-in is as strict as the real API (else the tests below would prove nothing)."""
    with OpenAILikeServer(human_quality(tasks)) as server:
        url = f"{server.base_url}/chat/completions"
        messages = [{"role": "user", "content": "Count from 1 to 20."}, {"role": "assistant", "content": "1, 2,"}]
        refused = httpx.post(url, json={"model": "gpt-4.1", "messages": messages, "add_generation_prompt": False})
        fresh = httpx.post(url, json={"model": "gpt-4.1", "messages": messages, "max_tokens": 1}).json()
        too_many = httpx.post(
            url, json={"model": "gpt-4.1", "messages": messages, "logprobs": True, "top_logprobs": 21}
        )
    assert refused.status_code == 400
    assert "Unrecognized request argument supplied: add_generation_prompt" in refused.text
    assert fresh["choices"][0]["message"]["content"].startswith("1")  # a fresh count, not "3"
    assert too_many.status_code == 400


def test_the_probe_learns_the_followup_path_without_a_refused_request(tasks):
    with OpenAILikeServer(human_quality(tasks)) as server:
        runtime = OpenAIRuntime("gpt-4.1", ClientConfig("openai", server.base_url))
        try:
            assert runtime.verdict_path == "followup"
            assert runtime.verdict_path == "followup"  # remembered: no second probe
        finally:
            runtime.close()
    assert server.refused == []
    assert len(server.bodies) == 1  # one plain probe; /models said OpenAI, so vLLM's switches were never tried
    assert not any(
        field in body for body in server.bodies for field in ("continue_final_message", "add_generation_prompt")
    )


def run_cli(args: list[str], env: dict[str, str] | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "rankkit", *args],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[3]), **(env or {})},
    )


def test_done_when_compare_runs_on_followup_verdicts_with_a_dollar_cost(tasks, tmp_path):
    """The issue's done-when, as a user types it: exit 0, nothing refused, no text verdicts, USD > 0."""
    out = tmp_path / "r.json"
    with OpenAILikeServer(human_quality(tasks)) as server:
        result = run_cli(
            [
                "compare",
                "--strategies",
                DONE_WHEN_STRATEGIES,
                "--judge",
                f"openai:gpt-4.1,base_url={server.base_url},price_in=2,price_out=8",
                "--out",
                str(out),
                "--no-cache",
            ]
        )
        refused = list(server.refused)
    assert result.returncode == 0, result.stderr[-3000:]
    assert refused == []
    record = json.loads(out.read_text())
    assert set(record["judge"]["verdict_paths"]) == {"followup"}
    for strategy in record["strategies"]:
        assert strategy["cost"]["usd"] > 0, strategy["name"]
        assert strategy["cost"]["parse_failures"] == 0, strategy["name"]
    assert " usd " in result.stdout.splitlines()[1]  # the compare table's usd column
    # the honest judge's verdicts are read right: knockout's champion is the best answer of every task
    knockout = next(s for s in record["strategies"] if s["name"] == "knockout")
    assert champions_are_top({t["task_id"]: t["ranking"][0] for t in knockout["tasks"]}, tasks)


def test_logprob_mode_reads_a_fresh_one_token_reply_to_rankkits_question(tasks):
    with OpenAILikeServer(human_quality(tasks)) as server:
        result = rankkit.compare(tasks, ["knockout", "individual"], judge=spec(server, "mode=logprob"))
        reads = server.bodies[1:]  # after the probe: every request is a verdict read
    assert server.refused == []
    # every read asks rankkit's question last and takes one token with its alternatives
    assert reads and all(body["messages"][-1]["role"] == "user" and body["logprobs"] for body in reads)
    assert any(
        followup_question("The better answer is Answer", ["1", "2"]) == body["messages"][-1]["content"]
        for body in reads
    )
    assert all(body["max_tokens"] == 1 for body in reads)
    for run in result.strategies:
        assert champions_are_top({t.task_id: t.ranking[0] for t in run.tasks}, tasks), run.name
        assert run.cost.usd > 0 and run.cost.parse_failures == 0


def test_a_model_without_logprobs_is_read_by_a_constrained_reply(tasks):
    """A reasoning model refuses logprobs: learned from the probe, then every verdict is a reply
    constrained to the digits by structured outputs (verdict_path followup_enum)."""
    with OpenAILikeServer(human_quality(tasks), logprobs=False) as server:
        result = rankkit.compare(tasks[:3], ["knockout"], judge=spec(server))
        later = server.bodies[1:]
    assert len(server.refused) == 1 and "logprobs" in server.refused[0][1]  # the probe's, once
    assert not any("logprobs" in body for body in later)
    paths = {c.verdict.extras["verdict_path"] for t in result.strategies[0].tasks for c in t.comparisons}
    assert paths == {"followup_enum"}
    assert all(body["response_format"]["type"] == "json_schema" for body in later if "response_format" in body)
    assert champions_are_top({t.task_id: t.ranking[0] for t in result.strategies[0].tasks}, tasks[:3])


class ReasoningModelServer(OpenAILikeServer):
    """Refuses ``max_tokens`` and a ``temperature`` other than the default, as OpenAI's reasoning models do."""

    def post(self, request, body):
        if "max_tokens" in body:
            return self._refuse(
                request,
                400,
                self.error(
                    "Unsupported parameter: 'max_tokens' is not supported with this model. Use 'max_completion_tokens' "
                    "instead.",
                    "max_tokens",
                ),
            )
        if body.get("temperature", 1) != 1:
            return self._refuse(
                request,
                400,
                self.error("Unsupported value: 'temperature' does not support 0.1 with this model.", "temperature"),
            )
        return super().post(request, body)


def test_refused_fields_are_learned_once_and_never_sent_again(tasks):
    with ReasoningModelServer(human_quality(tasks)) as server:
        result = rankkit.compare(tasks[:2], ["knockout"], judge=spec(server))
        bodies = list(server.bodies)
    assert len(server.refused) == 2  # max_tokens, then temperature: each once for the whole run
    assert result.strategies[0].cost.parse_failures == 0
    answered = bodies[2:]
    assert answered and all(
        "max_tokens" not in b and "temperature" not in b and "max_completion_tokens" in b for b in answered
    )


def test_429_with_retry_after_and_500_are_retried(tasks):
    with OpenAILikeServer(human_quality(tasks)) as server:
        server.faults = [(429, {"retry-after": "0", "x-ratelimit-remaining-requests": "0"}), (500, {}), (500, {})]
        judge = make_judge(spec(server))
        try:
            result = rankkit.compare(tasks[:2], ["knockout"], judge=judge)
            stats = judge.runtime.client.stats.to_dict()
        finally:
            judge.close()
    assert stats["retries"] == {"429": 1, "5xx": 2}
    assert result.strategies[0].cost.parse_failures == 0


def test_cached_input_tokens_are_counted_and_priced_at_the_cached_rate(tasks):
    """With caching from the first token, the follow-up reads (which resend the prompt) hit the cache."""
    costs = {}
    for minimum in (10**9, 1):
        with OpenAILikeServer(human_quality(tasks), cache_min_tokens=minimum) as server:
            costs[minimum] = rankkit.compare(tasks[:2], ["knockout"], judge=spec(server)).strategies[0].cost
    uncached, cached = costs[10**9], costs[1]
    assert uncached.cached_tokens == 0 and cached.cached_tokens > 0
    assert cached.prompt_tokens == uncached.prompt_tokens
    price = Price(2.0, 8.0, cached_input=0.5)  # gpt-4.1 with price_in=2 keeps its cached ratio
    saving = usd_nanos({"prompt_tokens": cached.cached_tokens}, price) - usd_nanos(
        {"prompt_tokens": cached.cached_tokens, "cached_tokens": cached.cached_tokens}, price
    )
    # each response is priced to the nano-dollar, so the totals may differ by rounding: 1e-6 USD is ample
    assert uncached.usd - cached.usd == pytest.approx(saving / 1e9, abs=1e-6)


@pytest.mark.parametrize("mode", ["generate", "logprob"])
def test_kway_strategies_read_the_best_label_by_a_followup(tasks, mode):
    with OpenAILikeServer(human_quality(tasks)) as server:
        result = rankkit.compare(tasks, ["setwise_knockout"], judge=spec(server, f"mode={mode}"))
    assert server.refused == []
    run = result.strategies[0]
    assert champions_are_top({t.task_id: t.ranking[0] for t in run.tasks}, tasks)
    judgments = [g.judgment for t in run.tasks for g in t.group_comparisons]
    assert judgments and all(j.status.value == "ok" and j.usage.get("usd_nano", 0) > 0 for j in judgments)
    if mode == "generate":
        assert {j.extras["verdict_path"] for j in judgments} == {"followup"}


class NoAssistantLastServer(OpenAILikeServer):
    """Refuses a conversation that ends with an assistant message (some providers do)."""

    def post(self, request, body):
        messages = body.get("messages") or []
        if messages and messages[-1].get("role") == "assistant":
            return self._refuse(request, 400, self.error("the last message must be from the user"))
        return super().post(request, body)


def test_a_server_that_refuses_a_final_assistant_message_is_read_by_followups(tasks):
    with NoAssistantLastServer(human_quality(tasks)) as server:
        result = rankkit.compare(tasks[:2], ["knockout"], judge=spec(server))
    assert len(server.refused) == 1  # the probe's prefix, once
    run = result.strategies[0]
    assert {c.verdict.extras["verdict_path"] for t in run.tasks for c in t.comparisons} == {"followup"}
    assert run.cost.parse_failures == 0


def test_a_listwise_ranking_without_logprobs_is_read_place_by_place(tasks):
    with OpenAILikeServer(human_quality(tasks), logprobs=False) as server:
        result = rankkit.compare(tasks, ["listwise"], judge=spec(server))
    run = result.strategies[0]
    assert run.cost.parse_failures == 0
    for task, outcome in zip(tasks, run.tasks):
        points = [task.candidate(cid).human["points"] for cid in outcome.ranking]
        assert points == sorted(points, reverse=True), task.task_id
