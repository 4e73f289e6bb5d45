"""rankkit.runs.analysis.labelled: reading a results file, finding strategies, and the tasks with human scores."""

from __future__ import annotations

import json

import pytest

from rankkit.data.specs import SpecError
from rankkit.errors import TaskFormatError
from rankkit.runs import analysis
from rankkit.runs.results import RunResult
from tests.runs.analysis.hand import HUMAN, hand_results


def test_load_results_reads_typed_results(tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hand_results()), encoding="utf-8")
    results = analysis.load_results(path)
    assert isinstance(results, RunResult)
    assert analysis.strategy_names(results) == ["ko", "pw", "oracle"]
    assert analysis.strategy_run(results, "ko").has_elimination_rounds
    assert not analysis.strategy_run(results, "pw").has_elimination_rounds


def test_load_results_names_the_file_and_the_field(tmp_path):
    judge = '{"spec": "sim", "description": "sim", "fingerprint": "f", "simulated": true}'
    for text, field in (
        ("[1, 2]", "JSON object"),
        ('{"strategies": [], "task_data": []}', "judge"),
        ('{"judge": {}, "strategies": [], "task_data": []}', "judge.spec"),
        (
            f'{{"judge": {judge}, "criterion": null, "strategies": [{{"name": "x"}}], "task_data": []}}',
            "strategies[0].",
        ),
    ):
        path = tmp_path / "bad.json"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(TaskFormatError, match=r"bad\.json.*" + field.replace("[", r"\[").replace("]", r"\]")):
            analysis.load_results(path)
    with pytest.raises(FileNotFoundError):
        analysis.load_results(tmp_path / "missing.json")


def test_labelled_tasks_pair_scores_with_human_scores(results):
    tasks = analysis.labelled_tasks(results, "ko")
    assert [t.task_id for t in tasks] == ["t1", "t2", "t3"]
    assert list(tasks[1].human.values()) == [float(h) for h in HUMAN["t2"]]
    assert tasks[0].extras["d"].eliminated_round is None
    assert analysis.human_scores(results)["t3"] == {"a": 1.0, "b": 2.0, "c": 3.0, "d": 4.0}
    with pytest.raises(SpecError, match="present: ko, pw, oracle"):
        analysis.strategy_run(results, "nope")


def test_check_metrics():
    assert analysis.check_metrics(["pearson", "top1_accuracy"]) == ["pearson", "top1_accuracy"]
    with pytest.raises(SpecError, match="unknown metric"):
        analysis.check_metrics(["bogus"])
    with pytest.raises(SpecError, match="no metrics"):
        analysis.check_metrics([])
