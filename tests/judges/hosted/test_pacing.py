"""Rate-limit pacing (rankkit/judges/hosted/pacing.py) and the HTTP client's patience with 429s."""

from __future__ import annotations

from datetime import datetime, timedelta, timezone

import pytest

import rankkit
from rankkit.data.specs import SpecError
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.judges.hosted.pacing import MAX_PAUSE, Pacer, estimate_request_tokens, header_pauses, parse_reset
from tests.hosted_servers import OpenAILikeServer, human_quality
from tests.judges.hosted.test_openai_hosted import SAMPLE


class FakeClock:
    """A clock that only moves when the pacer sleeps."""

    def __init__(self):
        self.now = 1000.0
        self.slept: list[float] = []

    def __call__(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds


def test_rpm_lets_a_minutes_worth_through_then_spaces_requests():
    clock = FakeClock()
    pacer = Pacer(rpm=60, clock=clock, sleep=clock.sleep)
    assert [pacer.wait_turn() for _ in range(60)] == [0.0] * 60
    assert pacer.wait_turn() == pytest.approx(1.0, abs=1e-9)  # 60 per minute: one a second
    assert pacer.wait_turn() == pytest.approx(1.0, abs=1e-9)
    assert pacer.waited == pytest.approx(2.0, abs=1e-9)


def test_tpm_waits_until_the_bucket_holds_the_requests_tokens():
    clock = FakeClock()
    pacer = Pacer(tpm=1000, clock=clock, sleep=clock.sleep)
    assert pacer.wait_turn(600) == pytest.approx(0.0, abs=1e-9)
    assert pacer.wait_turn(600) == pytest.approx(200 / 1000 * 60, abs=1e-9)
    assert pacer.wait_turn(5000) == pytest.approx(60.0, abs=1e-9)  # more than a minute's worth: a full bucket


def test_exhausted_rate_limit_headers_hold_every_request_until_the_reset():
    clock = FakeClock()
    pacer = Pacer(clock=clock, sleep=clock.sleep)
    pacer.observe({"X-RateLimit-Remaining-Requests": "0", "X-RateLimit-Reset-Requests": "3s"})
    assert pacer.wait_turn() == pytest.approx(3.0, abs=1e-9)
    pacer.observe({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "1h"})
    assert pacer.wait_turn() == pytest.approx(MAX_PAUSE, abs=1e-9)  # capped


def test_anthropic_headers_reset_at_a_time():
    now = datetime(2026, 11, 27, 4, 0, 0, tzinfo=timezone.utc)
    reset = (now + timedelta(seconds=7)).isoformat().replace("+00:00", "Z")
    headers = {
        "anthropic-ratelimit-output-tokens-remaining": "0",
        "anthropic-ratelimit-output-tokens-reset": reset,
        "anthropic-ratelimit-requests-remaining": "12",
        "anthropic-ratelimit-requests-reset": reset,
    }
    assert header_pauses(headers, now=now.timestamp()) == pytest.approx(7.0, abs=1e-6)
    assert parse_reset("garbage") is None and parse_reset("1m30s") == pytest.approx(90.0)


def test_request_tokens_count_the_body_and_the_allowed_completion():
    body = {"model": "m", "messages": [{"role": "user", "content": "x" * 400}], "max_tokens": 50}
    assert estimate_request_tokens(body) > 150 and estimate_request_tokens(
        {**body, "max_tokens": 0}
    ) + 50 == estimate_request_tokens(body)


def test_bad_limits_are_refused():
    with pytest.raises(SpecError, match="rpm must be > 0"):
        make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,rpm=0")
    judge = make_judge("openai:gpt-4.1,base_url=http://127.0.0.1:9/v1,rpm=500,tpm=30000")
    assert (judge.runtime.client.pacer.rpm, judge.runtime.client.pacer.tpm) == (500, 30000)


def test_a_burst_of_429s_never_fails_the_run_whatever_max_attempts_says():
    tasks = load_tasks(SAMPLE)[:1]
    with OpenAILikeServer(human_quality(tasks)) as server:
        server.faults = [(429, {"retry-after": "0"})] * 12
        judge = make_judge(f"openai:gpt-4.1,base_url={server.base_url},max_attempts=2,backoff=0.01")
        try:
            result = rankkit.compare(tasks, ["knockout"], judge=judge)
            stats = judge.runtime.client.stats.to_dict()
        finally:
            judge.close()
    assert stats["retries"] == {"429": 12} and stats["failed"] == 0
    assert result.strategies[0].cost.parse_failures == 0


def test_max_attempts_still_bounds_other_failures():
    tasks = load_tasks(SAMPLE)[:1]
    with OpenAILikeServer(human_quality(tasks)) as server:
        server.faults = [(500, {})] * 3
        with pytest.raises(rankkit.judges.JudgeError, match="after 2 attempts"):
            rankkit.compare(
                tasks, ["knockout"], judge=f"openai:gpt-4.1,base_url={server.base_url},max_attempts=2,backoff=0.01"
            )
