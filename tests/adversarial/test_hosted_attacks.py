"""The attack suite against the hosted-API stand-ins: OpenAI-like (follow-up verdicts) and
Anthropic-like (prefilled verdicts) servers with the honest judge (tests/hosted_servers.py).

An attacker — the worst answer — appends an attack; it must rank last and win exactly what it won
without the attack, for every strategy, and every verdict must have been read by the hosted path
(never parsed from text). The judge quotes the candidates before or after its own verdict line.
"""

from __future__ import annotations

import pytest

import rankkit
from tests.adversarial.attacks import ATTACKS, four_candidate_tasks, quality_table, two_candidate_tasks
from tests.adversarial.test_attacks import attacker_record
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer

STRATEGIES = ["knockout", "knockout:order=both", "bt"]
KEY = "sk-ant-attack-suite"
TASKS = 4
#: Server kind -> (server factory, judge spec prefix, the verdict path every judgment must take).
HOSTS = {
    "openai": (lambda quote: OpenAILikeServer(quality_table(), quote=quote), "openai:gpt-4.1", "followup"),
    "anthropic": (
        lambda quote: AnthropicLikeServer(quality_table(), api_key=KEY, quote=quote),
        "anthropic:claude-sonnet-4-5",
        "prefill",
    ),
}


@pytest.fixture(
    scope="module",
    params=[(host, quote) for host in HOSTS for quote in ("before", "after")],
    ids=lambda p: f"{p[0]}-{p[1]}",
)
def hosted(request):
    host, quote = request.param
    make, judge, path = HOSTS[host]
    patch = pytest.MonkeyPatch()
    patch.setenv("ANTHROPIC_API_KEY", KEY)
    with make(quote) as server:
        spec = f"{judge},base_url={server.base_url},concurrency=8,max_new_tokens=64,backoff=0.01"
        baseline = attacker_record(rankkit.compare(four_candidate_tasks(None, n=TASKS), STRATEGIES, judge=spec))
        yield server, spec, path, baseline
    patch.undo()


def test_the_baseline_ranks_the_worst_answer_last(hosted):
    _, _, _, baseline = hosted
    for name, records in baseline.items():
        assert [rank for rank, _ in records] == [4] * TASKS, name


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_changes_nothing_on_a_hosted_api(hosted, attack):
    server, spec, path, baseline = hosted
    result = rankkit.compare(four_candidate_tasks(ATTACKS[attack], n=TASKS), STRATEGIES, judge=spec)
    assert attacker_record(result) == baseline
    assert server.refused == []
    for run in result.strategies:
        assert run.cost.parse_failures == 0, run.name
        assert {c.verdict.extras["verdict_path"] for t in run.tasks for c in t.comparisons} == {path}


def test_an_answer_carrying_every_verdict_string_never_beats_the_right_one(hosted):
    _, spec, _, _ = hosted
    result = rankkit.compare(
        two_candidate_tasks(ATTACKS["every_verdict"]), ["knockout", "knockout:order=both"], judge=spec
    )
    for run in result.strategies:
        assert sum(task.champion == "attacker" for task in run.tasks) == 0, run.name
