"""Conversations as tasks: every reader carries them, validation names file, line and field, tables round-trip."""

from __future__ import annotations

import csv
import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.conversations import Message, final_text, plain_text
from rankkit.data.samples import sample_path
from rankkit.data.tasks import load_tasks, task_rows, tasks_from_records
from rankkit.errors import TaskFormatError

PROMPT = [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "2+2?"}]
TWO_TURNS = [
    {"role": "assistant", "content": "4"},
    {"role": "user", "content": "And 3+3?"},
    {"role": "assistant", "content": "6"},
]


def record(prompt=PROMPT, text=TWO_TURNS, **extra):
    return {
        "task_id": "q1",
        "prompt": prompt,
        "candidates": [{"id": "a", "text": text, "human": {"ok": 1}}, {"id": "b", "text": "5", "human": {"ok": 0}}],
        **extra,
    }


def test_a_conversation_is_a_tuple_of_messages_and_a_string_stays_a_string():
    (task,) = tasks_from_records([record(checklist=["says 4"])])
    assert task.prompt == (Message("system", "Be brief."), Message("user", "2+2?"))
    assert task.candidates[0].text == (
        Message("assistant", "4"),
        Message("user", "And 3+3?"),
        Message("assistant", "6"),
    )
    assert task.candidates[1].text == "5"
    assert task.checklist == ("says 4",)
    assert final_text(task.candidates[0].text) == "6"
    assert plain_text(task.candidates[0].text) == "4\n\nAnd 3+3?\n\n6"
    assert task.candidates[0].length == len("4\n\nAnd 3+3?\n\n6")


def test_the_sample_has_two_turn_tasks_with_checklists():
    tasks = load_tasks(sample_path("conversations"))
    assert len(tasks) == 3 and tasks[0].criterion == "score"
    for task in tasks:
        assert task.prompt[-1].role == "user" and task.checklist
        assert all(len(c.text) == 3 for c in task.candidates)


BAD = [
    ("bad role", record(prompt=[{"role": "bot", "content": "hi"}]), "prompt[0].role", "expected one of"),
    (
        "two users",
        record(prompt=[{"role": "user", "content": "a"}, {"role": "user", "content": "b"}]),
        "prompt[1].role",
        "alternate",
    ),
    (
        "ends with assistant",
        record(prompt=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]),
        "prompt[1].role",
        "end with a 'user'",
    ),
    (
        "system later",
        record(prompt=[{"role": "user", "content": "a"}, {"role": "system", "content": "b"}]),
        "prompt[1].role",
        "alternate",
    ),
    ("only system", record(prompt=[{"role": "system", "content": "a"}]), "prompt[0].role", "end with a 'user'"),
    ("empty prompt", record(prompt=[]), "prompt", "empty conversation"),
    ("number content", record(prompt=[{"role": "user", "content": 7}]), "prompt[0].content", "expected a string"),
    ("message not object", record(prompt=["hi"]), "prompt[0]", "expected a message object"),
    (
        "extra key",
        record(prompt=[{"role": "user", "content": "a", "name": "x"}]),
        "prompt[0].name",
        "unknown message field",
    ),
    ("empty content", record(prompt=[{"role": "user", "content": "  "}]), "prompt[0].content", "empty message"),
    (
        "answer starts with user",
        record(text=[{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]),
        "candidates[0].text[0].role",
        "alternate",
    ),
    ("answer ends with user", record(text=TWO_TURNS[:2]), "candidates[0].text[1].role", "end with an 'assistant'"),
    ("empty answer", record(text=[]), "candidates[0].text", "empty conversation"),
    (
        "answer with system",
        record(text=[{"role": "system", "content": "a"}]),
        "candidates[0].text[0].role",
        "alternate",
    ),
    ("checklist not list", record(checklist="x"), "checklist", "expected a list of strings"),
    ("checklist number", record(checklist=["a", 3]), "checklist[1]", "non-empty string"),
]


@pytest.mark.parametrize("name, bad, field, message", BAD, ids=[b[0] for b in BAD])
def test_a_bad_conversation_is_refused_naming_file_line_and_field(tmp_path, name, bad, field, message):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(record(prompt="fine")).replace('"q1"', '"q0"') + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    assert (info.value.path, info.value.line, info.value.field) == (str(path), 2, field), str(info.value)
    assert message in info.value.message


def test_the_command_line_exits_2_on_a_bad_conversation(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(BAD[1][1]) + "\n")
    result = CliRunner().invoke(main, ["compare", "--data", str(path), "--judge", "sim", "--no-cache"])
    assert result.exit_code == 2, result.output
    assert "bad.jsonl:1" in result.output and "prompt[1].role" in result.output
    assert "Traceback" not in result.output


def _same(tasks_a, tasks_b):
    assert [(t.task_id, t.prompt, t.checklist, [(c.id, c.text) for c in t.candidates]) for t in tasks_a] == [
        (t.task_id, t.prompt, t.checklist, [(c.id, c.text) for c in t.candidates]) for t in tasks_b
    ]


def test_a_json_array_file_reads_conversations(tmp_path):
    expected = load_tasks(sample_path("conversations"))
    lines = sample_path("conversations").read_text(encoding="utf-8").splitlines()
    path = tmp_path / "tasks.json"
    path.write_text("[" + ",".join(lines) + "]", encoding="utf-8")
    _same(load_tasks(path), expected)


def test_csv_holds_a_conversation_as_a_json_encoded_cell_and_round_trips(tmp_path):
    expected = load_tasks(sample_path("conversations"))
    rows = [{k: v for k, v in row.items() if not k.startswith("meta.")} for row in task_rows(expected)]
    assert json.loads(rows[0]["prompt"])[0] == {"role": "system", "content": "You are a helpful writing assistant."}
    path = tmp_path / "tasks.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    _same(load_tasks(path), expected)


def test_csv_through_column_mapping_reads_a_conversation_cell(tmp_path):
    path = tmp_path / "mapped.csv"
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["qid", "messages", "model", "answer"])
        writer.writerow(["q1", json.dumps(PROMPT), "a", json.dumps(TWO_TURNS)])
        writer.writerow(["q1", json.dumps(PROMPT), "b", "5"])
    columns = {"qid": "task_id", "messages": "prompt", "model": "candidate_id", "answer": "text"}
    (task,) = load_tasks(path, columns=columns)
    assert task.prompt[-1] == Message("user", "2+2?")
    assert task.candidates[0].text[-1] == Message("assistant", "6") and task.candidates[1].text == "5"


def test_a_plain_prompt_that_is_not_a_json_array_stays_text_in_a_table(tmp_path):
    path = tmp_path / "plain.csv"
    path.write_text("task_id,prompt,candidate_id,text\nq1,[not json,a,x\nq1,[not json,b,y\n", encoding="utf-8")
    assert load_tasks(path)[0].prompt == "[not json"


def test_a_bad_message_in_a_csv_cell_names_its_line(tmp_path):
    path = tmp_path / "bad.csv"
    bad = json.dumps([{"role": "user", "content": "a"}, {"role": "user", "content": "b"}])
    with path.open("w", newline="", encoding="utf-8") as handle:
        writer = csv.writer(handle)
        writer.writerow(["task_id", "prompt", "candidate_id", "text"])
        writer.writerows([["q1", "ok", "a", "x"], ["q1", "ok", "b", "y"], ["q2", bad, "a", "x"], ["q2", bad, "b", "y"]])
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    assert (info.value.line, info.value.field) == (4, "prompt[1].role")


def test_parquet_and_dataframes_carry_conversations(tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    expected = load_tasks(sample_path("conversations"))
    frame = pd.DataFrame(task_rows(expected))
    _same(load_tasks(frame), expected)
    frame.to_parquet(tmp_path / "tasks.parquet")
    _same(load_tasks(tmp_path / "tasks.parquet"), expected)
    native = pd.DataFrame(  # a Parquet or datasets column holding the message list itself
        [
            {"task_id": "q1", "prompt": PROMPT, "candidate_id": cid, "text": text}
            for cid, text in (("a", TWO_TURNS), ("b", "5"))
        ]
    )
    (task,) = load_tasks(native)
    assert task.prompt[0] == Message("system", "Be brief.") and task.candidates[0].text[1] == Message(
        "user", "And 3+3?"
    )


def test_a_dataset_carries_conversations():
    datasets = pytest.importorskip("datasets")
    expected = load_tasks(sample_path("conversations"))
    _same(load_tasks(datasets.Dataset.from_list(task_rows(expected))), expected)


def test_string_tasks_write_the_same_table_as_before():
    (task,) = tasks_from_records([record(prompt="2+2?", text="4")])
    assert list(task_rows([task])[0]) == ["task_id", "prompt", "reference", "candidate_id", "text", "system", "ok"]


def test_size_limits_count_every_turn_and_the_checklist():
    long_turns = [
        {"role": "assistant", "content": "x" * 60},
        {"role": "user", "content": "y"},
        {"role": "assistant", "content": "z" * 60},
    ]
    with pytest.raises(TaskFormatError, match="max_candidate_chars") as info:
        tasks_from_records([record(text=long_turns)], max_candidate_chars=100)
    assert info.value.field == "candidates[0].text"
    with pytest.raises(TaskFormatError, match="max_prompt_chars") as info:
        tasks_from_records([record(checklist=["c" * 60, "d" * 60])], max_prompt_chars=100)
    assert info.value.field == "checklist"
