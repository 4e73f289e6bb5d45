"""``compare --shard I/N`` and ``rankkit merge`` as a user runs them: the parts merge into the single
run's results file, bad shards and bad parts exit 2 naming the file, and workers sharing one memo
(SQLite, or PostgreSQL where a server can start) pay each judgment once."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from tests.conftest import REPO_ROOT
from tests.runs.merge_checks import assert_same_results

STRATEGIES = "knockout,bt,individual,active:budget=4"
JUDGE = "sim:preset=gpt4"


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def compare_args(out: Path, *more: str, cache: str | None = None) -> list[str]:
    caching = ["--cache", cache] if cache else ["--no-cache"]
    return ["compare", "--judge", JUDGE, "--strategies", STRATEGIES, *caching, "--out", str(out), "--quiet", *more]


def run_parts(tmp_path: Path, count: int) -> list[Path]:
    parts = []
    for index in range(count):
        parts.append(tmp_path / f"part-{index}.json")
        result = invoke(*compare_args(parts[-1], "--shard", f"{index}/{count}"))
        assert result.exit_code == 0, result.output
    return parts


def paid(results_file: Path) -> int:
    """The judgments a run paid for: every strategy's judge calls."""
    return sum(s["judge_calls"] for s in json.loads(results_file.read_text(encoding="utf-8"))["strategies"])


@pytest.mark.parametrize("count", [2, 3])
def test_merged_parts_are_the_single_run_results_file(tmp_path, count):
    single = tmp_path / "single.json"
    assert invoke(*compare_args(single)).exit_code == 0
    parts = run_parts(tmp_path, count)
    merged = tmp_path / "merged.json"
    result = invoke("merge", *map(str, reversed(parts)), "-o", str(merged))
    assert result.exit_code == 0, result.output
    assert f"{count} parts, 6 tasks" in result.output
    assert_same_results(json.loads(merged.read_text()), json.loads(single.read_text()))


@pytest.mark.parametrize("shard", ["2/2", "-1/2", "0/0", "1", "x/y", "0/2/1"])
def test_a_bad_shard_exits_2_before_anything_is_judged(tmp_path, shard):
    result = invoke(*compare_args(tmp_path / "r.json", "--shard", shard))
    assert result.exit_code == 2 and "--shard" in result.output
    assert not (tmp_path / "r.json").exists()


def test_the_dry_run_plans_the_shard_only(tmp_path):
    whole = invoke("compare", "--judge", JUDGE, "--strategies", "bt", "--no-cache", "--dry-run", "--format", "json")
    half = invoke(
        "compare",
        "--judge",
        JUDGE,
        "--strategies",
        "bt",
        "--no-cache",
        "--dry-run",
        "--format",
        "json",
        "--shard",
        "1/2",
    )
    assert whole.exit_code == half.exit_code == 0
    assert whole.output != half.output


def test_merge_refusals_exit_2_naming_the_file(tmp_path):
    first, second, third = run_parts(tmp_path, 3)
    out = str(tmp_path / "merged.json")
    missing = invoke("merge", str(first), str(third), "-o", out)
    assert missing.exit_code == 2 and "1/3 missing" in missing.output and str(first) in missing.output
    twice = invoke("merge", str(first), str(second), str(second), str(third), "-o", out)
    assert twice.exit_code == 2 and f"{second}: field 'shard.index'" in twice.output
    other = tmp_path / "other.json"
    assert invoke(*compare_args(other, "--shard", "1/3", "--seed", "7")).exit_code == 0
    different = invoke("merge", str(first), str(other), str(third), "-o", out)
    assert different.exit_code == 2 and f"{other}: field" in different.output and "different run" in different.output
    broken = tmp_path / "broken.json"
    broken.write_text('{"judge": ', encoding="utf-8")
    malformed = invoke("merge", str(first), str(broken), "-o", out)
    assert malformed.exit_code == 2 and str(broken) in malformed.output
    whole = tmp_path / "whole.json"
    assert invoke(*compare_args(whole)).exit_code == 0
    not_a_part = invoke("merge", str(whole), "-o", out)
    assert not_a_part.exit_code == 2 and f"{whole}: field 'shard'" in not_a_part.output
    assert not Path(out).exists()


def run_workers_concurrently(tmp_path: Path, cache: str, count: int = 2) -> list[Path]:
    """``count`` shard workers started at once as separate processes on one memo; their parts."""
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    parts = [tmp_path / f"worker-{index}.json" for index in range(count)]
    workers = [
        subprocess.Popen(
            [sys.executable, "-m", "rankkit", *compare_args(part, "--shard", f"{i}/{count}", cache=cache)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i, part in enumerate(parts)
    ]
    for worker in workers:
        _, err = worker.communicate(timeout=300)
        assert worker.returncode == 0, err
    return parts


def check_memo_shared_by_workers(tmp_path: Path, cache: str) -> None:
    """Workers on one memo pay, together, what one process pays; the whole run afterwards pays nothing;
    and their merged parts are its results."""
    single_uncached = tmp_path / "single-uncached.json"
    assert invoke(*compare_args(single_uncached)).exit_code == 0
    parts = run_workers_concurrently(tmp_path, cache)
    assert sum(paid(part) for part in parts) == paid(single_uncached) > 0
    single = tmp_path / "single.json"
    assert invoke(*compare_args(single, cache=cache)).exit_code == 0
    assert paid(single) == 0  # every judgment the workers paid for is in the memo
    merged = tmp_path / "merged.json"
    assert invoke("merge", *map(str, parts), "-o", str(merged)).exit_code == 0
    merged_payload, single_payload = json.loads(merged.read_text()), json.loads(single.read_text())
    for payload in (merged_payload, single_payload):  # the costs say where judgments came from: not compared
        for strategy in payload["strategies"]:
            for key in ("judge_calls", "cache_hits", "cost"):
                strategy.pop(key)
            for task in strategy["tasks"]:
                task.pop("cost")
    assert_same_results(merged_payload, single_payload)


def test_shard_workers_sharing_one_sqlite_memo_pay_each_judgment_once(tmp_path):
    check_memo_shared_by_workers(tmp_path, str(tmp_path / "memo.sqlite"))


def test_shard_workers_sharing_one_postgres_memo_pay_each_judgment_once(tmp_path):
    from tests.postgres_server import fresh_database, throwaway_server, unavailable

    reason = unavailable()
    if reason:
        pytest.skip(reason)
    try:
        with throwaway_server() as url:
            check_memo_shared_by_workers(tmp_path, fresh_database(url, f"shards_{os.getpid()}"))
    except RuntimeError as err:  # the server could not start here
        pytest.skip(str(err))


def test_recording_parts_merge_into_the_whole_recording(tmp_path):
    record = ["record", "--judge", JUDGE, "--no-cache", "--quiet"]
    whole = tmp_path / "whole.jsonl"
    assert invoke(*record, "--out", str(whole)).exit_code == 0
    parts = [tmp_path / f"part-{i}.jsonl" for i in range(2)]
    for index, part in enumerate(parts):
        result = invoke(*record, "--out", str(part), "--shard", f"{index}/2")
        assert result.exit_code == 0, result.output
    merged = tmp_path / "merged.jsonl"
    result = invoke("merge", str(parts[1]), str(parts[0]), "-o", str(merged))
    assert result.exit_code == 0, result.output
    assert merged.read_bytes() == whole.read_bytes()
    mixed = invoke("merge", str(parts[0]), str(tmp_path / "x.json"), "-o", str(merged))
    assert mixed.exit_code == 2 and "either results parts" in mixed.output


def test_record_refuses_a_bad_shard_and_a_shard_of_an_export(tmp_path):
    record = ["record", "--judge", JUDGE, "--no-cache", "--quiet", "--out", str(tmp_path / "r.jsonl")]
    assert invoke(*record, "--shard", "3/3").exit_code == 2
    results = tmp_path / "results.json"
    assert invoke(*compare_args(results)).exit_code == 0
    export = invoke(*record, "--shard", "0/2", "--from-run", str(results))
    assert export.exit_code == 2 and "--from-run" in export.output
    assert not (tmp_path / "r.jsonl").exists()
