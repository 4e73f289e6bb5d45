"""rankkit.runs.recorded_run: the judge and strategies a results file records keep their identity and refuse to judge."""

from __future__ import annotations

import pytest

from rankkit.errors import TaskFormatError
from rankkit.judges.base import JudgeError
from rankkit.runs.recorded_run import JudgeRecord, RecordedStrategy, judge_from_record, strategy_from_record
from rankkit.strategies import make_strategy
from tests.helpers import make_task

JUDGE = {"spec": "sim:preset=chatgpt", "description": "simulated", "fingerprint": "f00", "simulated": True}


def test_the_judge_record_keeps_its_identity_and_latent_values_and_refuses_to_judge():
    judge = judge_from_record({**JUDGE, "latent": {"t": {"c0": 1, "c1": 0.5}}}, "r.json")
    assert isinstance(judge, JudgeRecord)
    assert (judge.spec, judge.description, judge.fingerprint, judge.simulated) == (
        "sim:preset=chatgpt",
        "simulated",
        "f00",
        True,
    )
    task = make_task([1.0, 0.0])
    assert judge.latent(task) == pytest.approx({"c0": 1.0, "c1": 0.5}, abs=1e-12)
    with pytest.raises(JudgeError, match="record from a results file"):
        judge.grade(task, task.candidates[0])
    with pytest.raises(JudgeError, match="no latent values"):
        judge.latent(make_task([1.0], task_id="other"))


@pytest.mark.parametrize(
    ("record", "field"),
    [
        ({k: v for k, v in JUDGE.items() if k != "fingerprint"}, "judge.fingerprint"),
        ({**JUDGE, "latent": {"t": {"c0": "high"}}}, "judge.latent"),
        ({**JUDGE, "latent": ["t"]}, "judge.latent"),
    ],
)
def test_a_judge_record_missing_a_field_or_with_malformed_latent_values_names_the_field(record, field):
    with pytest.raises(TaskFormatError) as error:
        judge_from_record(record, "r.json")
    assert error.value.path == "r.json" and error.value.field == field


def test_an_installed_strategy_is_rebuilt_and_an_unknown_one_stays_a_record():
    knockout = make_strategy("knockout:order=both")
    record = {"name": knockout.label, "strategy": knockout.name, "params": knockout.params()}
    assert strategy_from_record(record) == knockout
    mystery = strategy_from_record({"name": "mystery:depth=3", "strategy": "mystery", "params": {"depth": 3}})
    assert isinstance(mystery, RecordedStrategy) and not mystery.installed
    assert (mystery.label, mystery.params()) == ("mystery:depth=3", {"depth": 3})
    with pytest.raises(NotImplementedError, match="record from a results file"):
        mystery.rank(make_task([1.0, 0.0]), None, None)


def test_a_strategy_record_without_its_parameters_names_the_field():
    with pytest.raises(TaskFormatError) as error:
        strategy_from_record({"name": "knockout", "strategy": "knockout"}, "r.json", "strategies[1]")
    assert error.value.field == "strategies[1].params"
