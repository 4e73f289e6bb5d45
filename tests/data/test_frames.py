"""Tasks from tables: DataFrames, Datasets, Parquet, JSON arrays and column mappings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rankkit.data.frames import parse_columns
from rankkit.data.specs import SpecError
from rankkit.data.tasks import SAMPLE_DATA, load_tasks, task_rows
from rankkit.errors import TaskFormatError


@pytest.fixture(scope="module")
def sample():
    return load_tasks(SAMPLE_DATA)


def alpaca_rows() -> list[dict]:
    """Model outputs as alpaca_eval keeps them: no task or candidate ids, extra text columns."""
    rows = []
    for prompt, answers in (
        ("Name a prime.", {"m1": "7", "m2": "9 is prime", "m3": "2"}),
        ("Capital of France?", {"m1": "Paris", "m2": "Lyon", "m3": "Paris, France"}),
    ):
        for model, output in answers.items():
            rows.append(
                {
                    "instruction": prompt,
                    "output": output,
                    "generator": model,
                    "dataset": "toy",
                    "preference": float(len(output)),
                }
            )
    return rows


ALPACA_COLUMNS = {"instruction": "prompt", "output": "text", "generator": "system", "dataset": "meta.dataset"}


def test_long_rows_round_trip_as_a_list(sample):
    assert load_tasks(task_rows(sample)) == sample


def test_dataframe_round_trip(sample):
    pd = pytest.importorskip("pandas")
    frame = pd.DataFrame(task_rows(sample))
    assert len(frame) == sum(len(t.candidates) for t in sample)
    assert load_tasks(frame) == sample
    assert load_tasks(frame, limit=2) == sample[:2]


def test_dataset_round_trip(sample):
    datasets = pytest.importorskip("datasets")
    from rankkit.data.tasks import tasks_to_dataset

    dataset = tasks_to_dataset(sample)
    assert isinstance(dataset, datasets.Dataset)
    assert load_tasks(dataset) == sample


def test_parquet_and_json_array_files(sample, tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("pyarrow")
    parquet = tmp_path / "tasks.parquet"
    pd.DataFrame(task_rows(sample)).to_parquet(parquet)
    assert load_tasks(parquet) == sample
    array = tmp_path / "tasks.json"
    array.write_text(json.dumps([json.loads(line) for line in SAMPLE_DATA.read_text().splitlines()]))
    assert load_tasks(array) == sample  # task objects in an array
    long_array = tmp_path / "long.json"
    long_array.write_text(json.dumps(task_rows(sample)))
    assert load_tasks(long_array) == sample  # one candidate per element


def test_json_file_holding_json_lines_still_loads(sample, tmp_path):
    path = tmp_path / "tasks.json"
    path.write_text(SAMPLE_DATA.read_text())
    assert load_tasks(path) == sample


def test_a_mapping_reads_alpaca_style_outputs():
    tasks = load_tasks(alpaca_rows(), columns=ALPACA_COLUMNS)
    assert [t.task_id for t in tasks] == ["task-0001", "task-0002"]  # one task per distinct prompt
    assert tasks[0].candidate_ids == ["m1", "m2", "m3"]  # named by their system
    assert tasks[0].meta == {"dataset": "toy"} and tasks[0].criterion == "preference"
    assert tasks[1].human_scores() == {"m1": 5.0, "m2": 4.0, "m3": 13.0}


def test_a_mapping_reads_a_long_csv_with_other_names(tmp_path):
    path = tmp_path / "answers.csv"
    path.write_text(
        "question_id,question,model,answer,score\n"
        "1,What is 2+2?,gpt,4,1\n1,What is 2+2?,llama,5,0\n2,Say hi,gpt,hi,1\n2,Say hi,llama,hello,1\n"
    )
    tasks = load_tasks(path, columns=parse_columns("question_id=task_id,question=prompt,model=system,answer=text"))
    assert [t.task_id for t in tasks] == ["1", "2"]
    assert tasks[0].human_scores() == {"gpt": 1.0, "llama": 0.0}
    assert tasks[0].candidate("llama").system == "llama"


def test_bad_rows_name_the_source_row_and_column():
    pd = pytest.importorskip("pandas")
    rows = alpaca_rows()
    rows[3]["output"] = "   "
    with pytest.raises(TaskFormatError) as err:
        load_tasks(pd.DataFrame(rows), columns=ALPACA_COLUMNS)
    assert str(err.value).startswith("DataFrame:3: field 'output (as text)': empty text")
    with pytest.raises(
        TaskFormatError,
        match=r"DataFrame:0: field 'dataset': not a number .* columns=\{'dataset': 'meta.dataset'\} \(--columns dataset=meta.dataset on the command line\)",
    ):
        load_tasks(pd.DataFrame(alpaca_rows()), columns={k: v for k, v in ALPACA_COLUMNS.items() if k != "dataset"})
    rows = alpaca_rows()
    rows[1]["preference"] = "high"
    with pytest.raises(TaskFormatError, match="records:1: field 'preference'"):
        load_tasks(rows, columns=ALPACA_COLUMNS)


def test_a_task_whose_rows_disagree_is_an_error():
    rows = task_rows(load_tasks(SAMPLE_DATA))
    rows[2]["prompt"] = "another question"
    with pytest.raises(TaskFormatError, match="records:2: field 'prompt': differs from row 0"):
        load_tasks(rows)


def test_mapping_errors():
    with pytest.raises(SpecError, match="not SOURCE=TARGET"):
        parse_columns("question_id")
    with pytest.raises(SpecError, match="cannot map 'model' to 'author'"):
        parse_columns("model=author")
    with pytest.raises(SpecError, match="both mapped to 'system'"):
        parse_columns("model=system,generator=system")
    with pytest.raises(TaskFormatError, match="field 'qid': column named in the mapping is not in the data"):
        load_tasks(alpaca_rows(), columns={"qid": "task_id", **ALPACA_COLUMNS})
    assert parse_columns("a=task_id, b=-, c=human.points") == {"a": "task_id", "b": "-", "c": "human.points"}


def test_reading_tables_never_imports_pandas_unless_given_one():
    code = (
        "import sys, rankkit\n"
        "from rankkit.data.tasks import task_rows\n"
        f"tasks = rankkit.load_tasks({str(SAMPLE_DATA)!r})\n"
        "rankkit.load_tasks(task_rows(tasks))\n"
        "print(','.join(m for m in ('pandas', 'pyarrow', 'datasets') if m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""


# -- bad tables stop at load, naming the file and field (issue 24, items 5-7) ---------------------


def test_a_garbage_parquet_file_is_a_format_error_naming_the_file(tmp_path):
    pytest.importorskip("pyarrow")
    path = tmp_path / "answers.parquet"
    path.write_bytes(b"not parquet at all" * 10)
    with pytest.raises(TaskFormatError, match="cannot read the Parquet file") as info:
        load_tasks(path)
    assert info.value.path == str(path)


def test_a_json_array_file_naming_a_key_twice_is_refused(tmp_path):
    path = tmp_path / "rows.json"
    path.write_text('[{"prompt": "Q", "text": "x", "text": "y", "system": "m1"}]', encoding="utf-8")
    with pytest.raises(TaskFormatError, match="the key appears twice") as info:
        load_tasks(path)
    assert info.value.field == "text"


def test_a_mapped_csv_naming_a_column_twice_is_refused(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("question,answer,model,model\nQ,x,m1,m2\nQ,y,m2,m1\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match="names this column twice") as info:
        load_tasks(path, columns={"question": "prompt", "answer": "text"})
    assert info.value.field == "model"


@pytest.mark.parametrize(
    "row, field, message",
    [
        ({"prompt": "Q", "text": 123, "system": "m1"}, "text", "text must be a string, got 123"),
        ({"prompt": "Q", "text": "x\ud800", "system": "m1"}, "candidates[0].text", "lone surrogate"),
        (
            {"prompt": "Q", "text": "x", "system": "m1", "score": 10**400},
            "candidates[0].human.score",
            "not a finite number",
        ),
        # An infinite score is refused by name, not read as a missing one (the cell conversion keeps it).
        (
            {"prompt": "Q", "text": "x", "system": "m1", "score": float("inf")},
            "candidates[0].human.score",
            "not a finite number",
        ),
        ({"prompt": "Q", "text": "x", "candidate_id": 1.5}, "candidates[0].id", "expected a string or integer id"),
        (
            {"prompt": "Q", "text": "x", "system": "m1", "meta.max_points": "ten"},
            "meta.max_points",
            "expected a number",
        ),
    ],
)
def test_bad_long_rows_are_refused_naming_the_field(row, field, message):
    rows = [row, {"prompt": "Q", "text": "other", "system": "m2", "candidate_id": "b"}]
    with pytest.raises(TaskFormatError) as info:
        load_tasks(rows)
    assert info.value.field == field and message in str(info.value)


def test_a_numeric_text_max_points_from_a_csv_column_is_its_number(tmp_path):
    path = tmp_path / "rows.csv"
    path.write_text("question,answer,model,points\nQ,x,m1,5\nQ,y,m2,5\n", encoding="utf-8")
    (task,) = load_tasks(
        path, columns={"question": "prompt", "answer": "text", "model": "system", "points": "meta.max_points"}
    )
    assert task.scale == pytest.approx((0.0, 5.0), abs=1e-12)
