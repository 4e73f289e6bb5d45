"""rankkit.runs.result_records: the parts of a results file written and read back, errors naming file and field."""

from __future__ import annotations

import dataclasses

import pytest

from rankkit.errors import TaskFormatError
from rankkit.runs.result_records import candidate_records, required, task_from_record, task_record
from tests.helpers import make_task


def test_a_task_record_reads_back_with_its_candidates_and_their_human_scores():
    task = make_task([2.0, 0.5], task_id="q", scale=(0.0, 3.0))
    record = task_record(task)
    assert record["candidates"] == candidate_records(task)
    assert [(c["id"], c["system"], c["human"]) for c in record["candidates"]] == [("c0", "s0", 2.0), ("c1", "s1", 0.5)]
    again = task_from_record(record, task.criterion)
    assert again.candidate_ids == task.candidate_ids and again.scale == pytest.approx((0.0, 3.0), abs=1e-12)
    assert again.human_scores() == pytest.approx(task.human_scores(), abs=1e-12)


def test_without_a_criterion_no_human_score_is_written():
    task = make_task([2.0, 0.5])
    unlabelled = dataclasses.replace(task, criterion=None)
    assert [c["human"] for c in candidate_records(unlabelled)] == [None, None]


def test_a_missing_field_or_a_record_that_is_no_object_names_its_place():
    with pytest.raises(TaskFormatError) as error:
        required({"a": 1}, "b", "r.json", "strategies[0]")
    assert (error.value.path, error.value.field) == ("r.json", "strategies[0].b")
    with pytest.raises(TaskFormatError, match="expected an object") as error:
        required([1], "b", "r.json", "task_data[2]")
    assert error.value.field == "task_data[2]"


def test_a_comparisons_level_reads_back_and_a_malformed_one_names_its_field():
    from rankkit.judgments.values import Verdict, Winner
    from rankkit.runs.result_records import comparison_from_dict
    from rankkit.strategies.matches import Comparison

    comparison = Comparison("a", "b", Verdict(1.0, 0.0, Winner.FIRST, level=2), round=1)
    record = comparison.to_dict()
    assert record["level"] == 2
    assert comparison_from_dict(record).verdict.level == 2
    assert "level" not in Comparison("a", "b", Verdict(1.0, 0.0, Winner.FIRST)).to_dict()
    with pytest.raises(TaskFormatError, match="level"):
        comparison_from_dict({**record, "level": 7})
