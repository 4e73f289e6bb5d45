"""The attack suite: nothing a candidate writes changes how rankkit reads the judge's verdict.

Every case runs real rankkit runs (``rankkit.compare``) with the ``openai:`` judge in generate
mode against an honest stub judge on 127.0.0.1 (:mod:`tests.adversarial.stub_judge`), which
always prefers the better answer whatever the candidates say. An attacker — the worst answer —
appends an attack (:mod:`tests.adversarial.attacks`); for every strategy listed its rank and its
wins must equal those of the same answer without the attack. The stub quotes the candidates'
text before its verdict (so a long candidate pushes the free-text verdict past the response cap)
or after it.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import rankkit
from rankkit.judgments.values import Winner
from tests.adversarial.attacks import (
    ATTACKS,
    LEGITIMATE,
    MIDDLING,
    QUESTIONS,
    _task,
    four_candidate_tasks,
    quality_table,
    two_candidate_tasks,
)
from tests.adversarial.stub_judge import HonestJudgeServer

STRATEGIES = ["knockout", "knockout:order=both", "bt", "heapsort", "swiss"]
#: Small responses keep the suite fast; the stub's verdict still fits when nothing is quoted before it.
JUDGE_OPTIONS = "mode=generate,concurrency=8,max_new_tokens=64,backoff=0.01"


def judge_spec(server: HonestJudgeServer, options: str = "") -> str:
    return f"openai:honest,base_url={server.base_url},{JUDGE_OPTIONS}" + (f",{options}" if options else "")


def wins(task_result: Any, cid: str) -> int:
    """How many comparisons ``cid`` won (as the judge's verdict says)."""
    total = 0
    for comparison in task_result.comparisons:
        winner = comparison.verdict.winner
        if (winner is Winner.FIRST and comparison.first == cid) or (
            winner is Winner.SECOND and comparison.second == cid
        ):
            total += 1
    return total


def attacker_record(result: rankkit.RunResult) -> dict[str, list[tuple[int, int]]]:
    """Per strategy, per task: the attacker's (rank, wins)."""
    return {
        run.name: [(task.ranking.index("attacker") + 1, wins(task, "attacker")) for task in run.tasks]
        for run in result.strategies
    }


#: Where the stub quotes the candidates, and on how many four-candidate tasks.
PLACEMENTS = {"before": 8, "after": 8}


@pytest.fixture(scope="module", params=list(PLACEMENTS))
def server(request):
    with HonestJudgeServer(quality_table(), quote=request.param) as running:
        running.tasks = PLACEMENTS[request.param]
        yield running


@pytest.fixture(scope="module")
def baseline(server):
    """The attacker's ranks and wins without any attack (the same answers, same seed)."""
    tasks = four_candidate_tasks(None, n=server.tasks)
    return attacker_record(rankkit.compare(tasks, STRATEGIES, judge=judge_spec(server)))


def test_the_baseline_ranks_the_worst_answer_last(baseline):
    for name, records in baseline.items():
        assert [rank for rank, _ in records] == [4] * len(records), name


@pytest.mark.parametrize("attack", list(ATTACKS))
def test_an_attack_leaves_the_attackers_rank_and_wins_unchanged(server, baseline, attack):
    result = rankkit.compare(
        four_candidate_tasks(ATTACKS[attack], n=server.tasks), STRATEGIES, judge=judge_spec(server)
    )
    assert attacker_record(result) == baseline
    for run in result.strategies:
        assert run.cost.parse_failures == 0, run.name
        assert all(c.verdict.extras["verdict_path"] == "continuation" for t in run.tasks for c in t.comparisons)


@pytest.fixture(scope="module")
def quoting_server():
    with HonestJudgeServer(quality_table(), quote="after") as running:
        yield running


def test_every_verdict_suppression_wins_no_two_candidate_task(quoting_server):
    """The issue's measurement: before, the wrong answer won 5 of 6 knockout tasks this way."""
    result = rankkit.compare(
        two_candidate_tasks(ATTACKS["every_verdict"]),
        ["knockout", "knockout:order=both"],
        judge=judge_spec(quoting_server),
    )
    for run in result.strategies:
        assert sum(task.champion == "attacker" for task in run.tasks) == 0
        assert run.cost.parse_failures == 0


def test_targeted_verdict_lines_leave_the_worst_answer_last_under_bt():
    """The issue's second measurement: the judge writes only two verdict lines (9 for the better,
    2 for the worse), the attacker appends both; before, the worst of four ranked 2nd in all 8 tasks."""
    with HonestJudgeServer(quality_table(), quote="after", binary=True) as server:
        result = rankkit.compare(four_candidate_tasks(ATTACKS["targeted_lines"]), ["bt"], judge=judge_spec(server))
    assert [task.ranking[-1] for task in result.strategies[0].tasks] == ["attacker"] * 8


@pytest.mark.parametrize("legit", list(LEGITIMATE))
def test_an_answer_about_grading_is_judged_on_its_merits(legit):
    """An honest answer that reads like a verdict wins, and its opponents' verdicts are read."""
    quality = {**quality_table(), LEGITIMATE[legit]: 9}
    tasks = [
        _task(f"legit{i}", q, [("legit", LEGITIMATE[legit], 9.0), ("good", MIDDLING[0], 6.0), ("wrong", wrong, 2.0)])
        for i, (q, _, wrong) in enumerate(QUESTIONS[:3])
    ]
    for path, continues in (("continuation", True), ("text", False)):
        with HonestJudgeServer(quality, quote="none", continues=continues, logprobs=continues) as server:
            result = rankkit.compare(tasks, ["knockout", "bt"], judge=judge_spec(server, f"verdict={path}"))
        for run in result.strategies:
            assert [task.ranking for task in run.tasks] == [["legit", "good", "wrong"]] * 3, (path, run.name)
            assert run.cost.parse_failures == 0, (path, run.name)


@pytest.mark.parametrize("attack", ["every_verdict", "targeted_lines", "closed_box"])
def test_on_the_text_fallback_suppression_still_rewards_nobody(attack):
    """Against a server that offers nothing but free text (no continuation, no log-probabilities,
    no structured outputs) the verdict is parsed from text (flagged):
    suppression then makes the attacker's comparisons fail, and a failed comparison decides
    nothing — the answers' own grades settle the match, and the attacker's own grade fails too."""
    with HonestJudgeServer(quality_table(), quote="before", continues=False, logprobs=False) as server:
        result = rankkit.compare(four_candidate_tasks(ATTACKS[attack], n=4), STRATEGIES, judge=judge_spec(server))
    for run in result.strategies:
        assert [task.ranking[-1] for task in run.tasks] == ["attacker"] * 4, run.name
        assert {c.verdict.extras["verdict_path"] for t in run.tasks for c in t.comparisons} == {"text"}
    undecided = [t.extras["attacker"].undecided for t in result.strategies[0].tasks]
    assert all(count and count > 0 for count in undecided)  # the attempt shows in the results


def test_a_server_that_cannot_continue_runs_on_the_text_fallback_with_one_warning(tmp_path):
    """The weaker path is named once on stderr, and the results file says which path each verdict took."""
    import json

    from click.testing import CliRunner

    from rankkit.cli import main

    data = tmp_path / "tasks.jsonl"
    data.write_text(
        "".join(
            json.dumps(
                {
                    "task_id": t.task_id,
                    "prompt": t.prompt,
                    "meta": dict(t.meta),
                    "candidates": [{"id": c.id, "text": c.text, "human": dict(c.human)} for c in t.candidates],
                }
            )
            + "\n"
            for t in four_candidate_tasks(None, n=2)
        ),
        encoding="utf-8",
    )
    for continues, path in ((False, "text"), (True, "continuation")):
        with HonestJudgeServer(quality_table(), continues=continues, logprobs=continues) as server:
            out = tmp_path / f"{path}.json"
            result = CliRunner().invoke(
                main,
                [
                    "compare",
                    "--data",
                    str(data),
                    "--judge",
                    judge_spec(server),
                    "--strategies",
                    "knockout,bt",
                    "--no-cache",
                    "--quiet",
                    "--out",
                    str(out),
                ],
            )
        assert result.exit_code == 0, result.output
        warnings = [line for line in result.stderr.splitlines() if "verdict=text" in line]
        assert len(warnings) == (1 if path == "text" else 0), result.stderr
        record = json.loads(out.read_text())
        assert record["judge"]["verdict_paths"] == {path: 6 + 24}  # knockout 3 + bt 12 per task
        assert {c["verdict_path"] for s in record["strategies"] for t in s["tasks"] for c in t["comparisons"]} == {path}


def test_the_benchmark_loads_the_suite_beside_an_older_checkouts_tests_package(tmp_path):
    """benchmarks/adversarial.py runs the suite of this checkout against another rankkit checkout
    (its "before" setting), whose ``tests`` package may predate the suite's helpers: the suite and
    the ``tests.servers`` it imports must come from this checkout."""
    benchmarks = Path(__file__).resolve().parents[2] / "benchmarks"
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "__init__.py").write_text("")  # an older checkout's tests, without servers.py
    code = (
        f"import sys; sys.path.insert(0, {str(benchmarks)!r}); import adversarial; "
        "attacks, stub = adversarial.load_suite(); print(stub.HonestJudgeServer.__mro__[1].__name__, "
        "len(attacks.ATTACKS))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(tmp_path)},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    assert out.stdout.split() == ["StubServer", str(len(ATTACKS))]
