"""Loading tasks from JSONL and CSV, choosing the criterion, and the errors bad input gets."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankkit.tasks import SAMPLE_DATA, TaskFormatError, load_tasks
from tests.conftest import shared_dataset


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def task(task_id="t1", n=3, **overrides):
    row = {"task_id": task_id, "prompt": "Q?", "reference": None,
           "candidates": [{"id": f"c{i}", "text": f"answer {i}", "system": f"s{i}", "human": {"score": float(i)}}
                          for i in range(n)],
           "meta": {}}
    row.update(overrides)
    return row


def test_sample_data_loads_with_main_score_and_scale():
    tasks = load_tasks(SAMPLE_DATA)
    assert len(tasks) == 6
    assert all(t.criterion == "points" for t in tasks)
    assert tasks[0].scale == (0.0, float(tasks[0].meta["max_points"]))
    assert all(len(t.candidates) >= 4 for t in tasks)


def test_limit_keeps_the_first_tasks():
    assert [t.task_id for t in load_tasks(SAMPLE_DATA, limit=2)] == ["q01", "q02"]


def test_human_scores_follow_the_criterion(tmp_path):
    row = task()
    for cand in row["candidates"]:
        cand["human"]["other"] = -cand["human"]["score"]
    path = write_jsonl(tmp_path / "t.jsonl", [row])
    assert load_tasks(path, criterion="other")[0].human_scores() == {"c0": -0.0, "c1": -1.0, "c2": -2.0}
    with pytest.raises(TaskFormatError, match=r"several human criteria .*--criterion \(other, score\)"):
        load_tasks(path)
    with pytest.raises(TaskFormatError, match="criterion 'nope' not in the data"):
        load_tasks(path, criterion="nope")


def test_main_score_picks_the_criterion(tmp_path):
    row = task(meta={"main_score": "score"})
    row["candidates"][0]["human"]["extra"] = 1.0
    assert load_tasks(write_jsonl(tmp_path / "t.jsonl", [row]))[0].criterion == "score"


def test_unlabelled_data_loads_without_criterion(tmp_path):
    row = task()
    for cand in row["candidates"]:
        del cand["human"]
    loaded = load_tasks(write_jsonl(tmp_path / "t.jsonl", [row]))[0]
    assert loaded.criterion is None and loaded.human_scores() == {}


BAD_INPUTS = [
    ("malformed JSON", ['{"task_id": "t1", "prompt": '], 1, None, "malformed JSON"),
    ("missing field", [task(), {k: v for k, v in task("t2").items() if k != "prompt"}], 2, "prompt", "missing field"),
    ("duplicate id", [task(candidates=[{"id": "a", "text": "x", "human": {"score": 1}},
                                      {"id": "a", "text": "y", "human": {"score": 2}}])], 1, "candidates[1].id", "duplicate candidate id"),
    ("empty text", [task(candidates=[{"id": "a", "text": "  ", "human": {"score": 1}},
                                    {"id": "b", "text": "y", "human": {"score": 2}}])], 1, "candidates[0].text", "empty text"),
    ("one candidate", [task(n=1)], 1, "candidates", "at least 2"),
    ("non-numeric score", [task(candidates=[{"id": "a", "text": "x", "human": {"score": "high"}},
                                           {"id": "b", "text": "y", "human": {"score": 2}}])], 1, "candidates[0].human.score", "not a finite number"),
]


@pytest.mark.parametrize("name,rows,line,field,message", BAD_INPUTS, ids=[b[0] for b in BAD_INPUTS])
def test_bad_jsonl_names_file_line_and_field(tmp_path, name, rows, line, field, message):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    err = info.value
    assert err.path == str(path) and err.line == line and err.field == field
    assert message in str(err) and f"{path}:{line}" in str(err)


def test_csv_long_form(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "task_id,prompt,candidate_id,text,system,grade\n"
        "q1,What is 2+2?,a,4,m1,2\n"
        "q1,What is 2+2?,b,5,m2,0\n"
        "q2,Capital of France?,a,Paris,m1,1\n"
        "q2,Capital of France?,b,Lyon,m2,0.5\n", encoding="utf-8")
    tasks = load_tasks(path)
    assert [t.task_id for t in tasks] == ["q1", "q2"]
    assert tasks[0].criterion == "grade"
    assert tasks[1].human_scores() == {"a": 1.0, "b": 0.5}
    assert tasks[0].candidate("b").system == "m2"


def test_csv_non_numeric_score_names_the_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq1,Q,b,y,lots\n", encoding="utf-8")
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    assert info.value.line == 3 and info.value.field == "grade"


def test_csv_missing_column(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,text\nq1,Q,x\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match="candidate_id"):
        load_tasks(path)


def test_shared_dataset_loads():
    tasks = load_tasks(shared_dataset("usr_topicalchat"), limit=3)
    assert tasks[0].criterion == "overall" and len(tasks[0].candidates) == 6
