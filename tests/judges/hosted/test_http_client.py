"""The openai judge's HTTP client (rankkit.judges.hosted.http_client): its pure pieces — backoff,
Retry-After, which statuses are retried, replica choice, key redaction and capped reads.

The client's behaviour against a live (stub or llama.cpp) server is tested through the runtime
that uses it, in test_openai_compat.py.
"""

from __future__ import annotations

import dataclasses
import itertools
import random

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.hosted.http_client import ClientConfig
from rankkit.judges.hosted.http_retry import (
    MAX_RETRY_AFTER,
    Replica,
    RetryPolicy,
    backoff_delay,
    parse_retry_after,
    pick_replica,
    read_capped,
    redact,
    retry_reason,
)

SECRET = "sk-test-0123456789-do-not-leak"


def test_backoff_grows_exponentially_with_bounded_jitter():
    rng = random.Random(0)
    for attempt in range(1, 8):
        nominal = min(8.0, 0.5 * 2 ** (attempt - 1))
        delays = [backoff_delay(attempt, 0.5, 8.0, rng) for _ in range(200)]
        assert all(nominal / 2 <= d <= nominal for d in delays)
        assert len(set(delays)) > 1  # jittered, not constant
    with pytest.raises(ValueError):
        backoff_delay(0, 0.5, 8.0, rng)


def test_retry_after_seconds_and_http_dates():
    assert parse_retry_after("3") == 3.0
    assert parse_retry_after(" 1.5 ") == 1.5
    assert parse_retry_after("-4") == 0.0
    assert parse_retry_after(None) is None
    assert parse_retry_after("soon") is None
    now = 1_445_412_470.0  # 2015-10-21 07:27:50 UTC
    assert parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT", now=now) == pytest.approx(10.0)
    assert parse_retry_after("Wed, 21 Oct 2015 07:27:00 GMT", now=now) == 0.0


def test_retry_policy_honours_retry_after_and_caps_it():
    policy = RetryPolicy(max_attempts=3, backoff=0.2, max_backoff=1.0)
    rng = random.Random(1)
    assert 7.0 <= policy.wait(1, 7.0, rng) <= 7.1
    assert MAX_RETRY_AFTER <= policy.wait(1, 10 * MAX_RETRY_AFTER, rng) <= MAX_RETRY_AFTER + 0.1
    assert 0.5 <= policy.wait(5, None, rng) <= 1.0  # backoff, capped at max_backoff
    with pytest.raises(SpecError):
        RetryPolicy(max_attempts=0)


def test_which_statuses_are_retried():
    assert retry_reason(429) == "429"
    assert retry_reason(500) == retry_reason(503) == "5xx"
    assert retry_reason(408) == "timeout"
    for final in (400, 401, 403, 404, 422):
        assert retry_reason(final) is None


def test_pick_replica_spreads_load_and_moves_retries_elsewhere():
    a, b = Replica("http://a/v1"), Replica("http://b/v1", in_flight=1, sent=1)
    assert pick_replica([a, b], 2, {}) == 0  # least loaded
    a.in_flight, a.sent = 1, 2
    assert pick_replica([a, b], 2, {}) == 1  # equal load: the less used one
    b.failures = 1
    assert pick_replica([a, b], 2, {}) == 0  # one failing lately is the last choice
    assert pick_replica([a, b], 2, {0: 1}) == 1  # a retry goes to the replica it has not failed on
    b.in_flight = 2
    assert pick_replica([a, b], 2, {0: 1}) is None  # ...waiting for a slot there if need be
    assert pick_replica([a, b], 2, {0: 1, 1: 1}) == 0  # failed everywhere: any free one
    a.in_flight = 2
    assert pick_replica([a, b], 2, {}) is None  # all full


def test_redact():
    assert redact(f"bad key {SECRET}!", SECRET) == "bad key ***!"
    assert redact("nothing", None) == "nothing"


def test_reading_a_body_stops_at_the_limit():
    endless = itertools.repeat(b"x" * 1000)  # would never end if read whole
    data, complete = read_capped(endless, 4096)
    assert len(data) == 4096 and not complete
    assert read_capped(iter([b"ab", b"cd"]), 4) == (b"abcd", True)


# == a refused key: one line naming the variable, exit 2 ===========================================


@pytest.mark.parametrize(
    ("backend", "variable", "sent"),
    [
        ("openai", "OPENAI_API_KEY", "wrong-key"),
        ("openai", "OPENAI_API_KEY", None),
        ("anthropic", "ANTHROPIC_API_KEY", "wrong-key"),
        ("openai", "MY_KEY", "wrong-key"),
    ],
)
def test_a_refused_key_names_the_variable_that_holds_it(monkeypatch, backend, variable, sent):
    from pathlib import Path

    from click.testing import CliRunner

    from rankkit.cli import main
    from rankkit.data.tasks import load_tasks
    from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, human_quality

    tasks = load_tasks(Path(__file__).resolve().parents[3] / "rankkit" / "data" / "sample" / "tasks.jsonl")
    server_type = OpenAILikeServer if backend == "openai" else AnthropicLikeServer
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "MY_KEY"):
        monkeypatch.delenv(name, raising=False)
    if sent is not None:
        monkeypatch.setenv(variable, sent)
    chosen = f",api_key_env={variable}" if variable == "MY_KEY" else ""
    with server_type(human_quality(tasks), api_key="the-right-key") as server:
        spec = f"{backend}:some-model,base_url={server.base_url}{chosen}"
        result = CliRunner().invoke(main, ["compare", "--judge", spec, "--no-cache", "-q"])
    assert result.exit_code == 2, result.output
    (error,) = [line for line in result.output.splitlines() if line.startswith("error:")]
    assert "HTTP 401" in error and f"export {variable}" in error and "Traceback" not in result.output
    assert ("refused the API key" if sent else "none was sent") in error and "the-right-key" not in result.output


def test_a_forbidden_key_is_refused_at_once_not_retried(monkeypatch):
    from pathlib import Path

    from rankkit.data.tasks import load_tasks
    from rankkit.judges import make_judge
    from rankkit.judges.hosted.http_retry import KeyRefused
    from tests.hosted_servers import OpenAILikeServer, human_quality

    tasks = load_tasks(Path(__file__).resolve().parents[3] / "rankkit" / "data" / "sample" / "tasks.jsonl")
    monkeypatch.setenv("OPENAI_API_KEY", "a-key")
    with OpenAILikeServer(human_quality(tasks)) as server:
        server.faults = [(403, {})]
        judge = make_judge(f"openai:gpt-4.1,base_url={server.base_url},max_attempts=5,backoff=0.01")
        task = tasks[0]
        with pytest.raises(KeyRefused, match="HTTP 403 .* refused the API key; export OPENAI_API_KEY") as caught:
            judge.compare(task, task.candidates[0], task.candidates[1])
        assert (
            caught.value.exit_code == 2
            and judge.runtime.client.stats.attempts == 1
            and not judge.runtime.client.stats.retries
        )


# -- the client configuration the hosted runtimes share -----------------------------------------------


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("concurrency", 0, "anthropic: concurrency must be >= 1, got 0"),
        ("timeout", 0.0, "anthropic: timeout must be > 0 seconds, got 0.0"),
        ("max_response_bytes", 100, "anthropic: max_response_bytes must be >= 1024, got 100"),
    ],
)
def test_a_client_config_refuses_a_bad_setting_naming_its_backend(field, value, message):
    with pytest.raises(SpecError, match=message):
        ClientConfig("anthropic", "http://127.0.0.1:9/v1", **{field: value})
    with pytest.raises(SpecError, match="is not an http:// or https:// address"):
        ClientConfig("openai", "ftp://127.0.0.1/v1")


def test_both_hosted_runtimes_hold_a_client_on_one_config_built_from_the_spec(monkeypatch):
    from rankkit.judges import make_judge
    from rankkit.judges.hosted.http_client import RetryingClient
    from rankkit.judges.hosted.runtime import HostedRuntime

    monkeypatch.setenv("RANKKIT_TEST_KEY", "sk-secret-value")
    options = (
        "base_url=http://127.0.0.1:9/v1,concurrency=3,timeout=7,max_attempts=2,rpm=60,api_key_env=RANKKIT_TEST_KEY"
    )
    configs = {}
    for backend in ("openai", "anthropic"):
        runtime = make_judge(f"{backend}:some-model,{options}").runtime
        assert isinstance(runtime, HostedRuntime) and not isinstance(runtime, RetryingClient)  # held, not inherited
        assert runtime.client.pacer.rpm == 60 and runtime.client.subject == "model 'some-model'"
        assert "sk-secret-value" not in repr(runtime) + repr(runtime.client.config)
        configs[backend] = runtime.client.config
    assert configs["openai"] == dataclasses.replace(configs["anthropic"], backend="openai")
    assert (configs["openai"].concurrency, configs["openai"].timeout, configs["openai"].retry.max_attempts) == (
        3,
        7.0,
        2,
    )
    assert configs["openai"].api_key == "sk-secret-value" and configs["openai"].api_key_env == "RANKKIT_TEST_KEY"


def test_a_key_variable_that_is_not_set_is_refused_before_anything_is_sent(monkeypatch):
    from rankkit.judges import make_judge

    monkeypatch.delenv("RANKKIT_UNSET_KEY", raising=False)
    for backend in ("openai", "anthropic"):
        with pytest.raises(SpecError, match=f"{backend}: api_key_env=RANKKIT_UNSET_KEY names an environment variable"):
            make_judge(f"{backend}:m,base_url=http://127.0.0.1:9/v1,api_key_env=RANKKIT_UNSET_KEY")
