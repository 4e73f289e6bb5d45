"""Shards of a run: worker i of n takes every n-th task; the spec, its checks and the run's fingerprint."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.errors import TaskFormatError
from rankkit.runs.shards import Shard, ShardPart, parse_shard, run_fingerprint, shard_part_from_record
from rankkit.strategies import make_strategy


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7, 9])
def test_every_task_goes_to_exactly_one_shard_and_sizes_differ_by_at_most_one(count):
    tasks = [f"t{i}" for i in range(7)]
    parts = [Shard(i, count).select(tasks) for i in range(count)]
    assert sorted(t for part in parts for t in part) == sorted(tasks)
    assert max(map(len, parts)) - min(map(len, parts)) <= 1
    assert [Shard(i, count).size(len(tasks)) for i in range(count)] == list(map(len, parts))


def test_parse_shard_reads_index_over_count():
    assert parse_shard("0/1") == Shard(0, 1)
    assert parse_shard(" 3 / 4 ") == Shard(3, 4)
    assert str(Shard(3, 4)) == "3/4"


@pytest.mark.parametrize("text", ["4/4", "1/0", "0/0", "-1/2", "1", "a/b", "1/2/3", "", "1.5/2", "0/100001"])
def test_a_bad_shard_is_refused_with_the_expected_form(text):
    with pytest.raises(SpecError, match="shard"):
        parse_shard(text)


@pytest.mark.parametrize("index, count", [(True, 2), (0, 2.0), (2, 2), (-1, 3)])
def test_a_shard_checks_its_own_values(index, count):
    with pytest.raises(SpecError):
        Shard(index, count)


def test_the_fingerprint_changes_with_data_strategies_judge_and_seed(sample_tasks):
    strategies = [make_strategy("knockout"), make_strategy("bt")]
    base = run_fingerprint(sample_tasks, strategies, "judge-a", 0)
    assert base == run_fingerprint(list(sample_tasks), [make_strategy("knockout"), make_strategy("bt")], "judge-a", 0)
    assert base != run_fingerprint(sample_tasks[:-1], strategies, "judge-a", 0)
    assert base != run_fingerprint(sample_tasks[::-1], strategies, "judge-a", 0)
    assert base != run_fingerprint(sample_tasks, strategies[:1], "judge-a", 0)
    assert base != run_fingerprint(sample_tasks, [make_strategy("knockout:order=both"), strategies[1]], "judge-a", 0)
    assert base != run_fingerprint(sample_tasks, strategies, "judge-b", 0)
    assert base != run_fingerprint(sample_tasks, strategies, "judge-a", 1)


def test_a_part_record_reads_back_and_a_malformed_one_is_refused_naming_the_field():
    part = ShardPart(Shard(1, 3), 10, "ab" * 32)
    assert shard_part_from_record(part.to_dict(), "p.json") == part
    bad = [
        ("[]", "shard"),
        ({**part.to_dict(), "index": "1"}, "shard.index"),
        ({**part.to_dict(), "count": True}, "shard.count"),
        ({**part.to_dict(), "index": 3}, "shard"),
        ({**part.to_dict(), "total_tasks": -1}, "shard.total_tasks"),
        ({**part.to_dict(), "run_fingerprint": "../../etc"}, "shard.run_fingerprint"),
    ]
    for record, field in bad:
        with pytest.raises(TaskFormatError) as error:
            shard_part_from_record(record, "p.json")
        assert error.value.path == "p.json" and error.value.field == field
