"""Tasks from tables: DataFrames, Datasets, Parquet, JSON arrays and column mappings."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from rankkit.errors import TaskFormatError
from rankkit.frames import parse_columns
from rankkit.specs import SpecError
from rankkit.tasks import SAMPLE_DATA, load_tasks, task_rows


@pytest.fixture(scope="module")
def sample():
    return load_tasks(SAMPLE_DATA)


def alpaca_rows() -> list[dict]:
    """Model outputs as alpaca_eval keeps them: no task or candidate ids, extra text columns."""
    rows = []
    for prompt, answers in (("Name a prime.", {"m1": "7", "m2": "9 is prime", "m3": "2"}),
                            ("Capital of France?", {"m1": "Paris", "m2": "Lyon", "m3": "Paris, France"})):
        for model, output in answers.items():
            rows.append({"instruction": prompt, "output": output, "generator": model, "dataset": "toy",
                         "preference": float(len(output))})
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
    from rankkit.tasks import tasks_to_dataset

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
    path.write_text("question_id,question,model,answer,score\n"
                    "1,What is 2+2?,gpt,4,1\n1,What is 2+2?,llama,5,0\n2,Say hi,gpt,hi,1\n2,Say hi,llama,hello,1\n")
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
    with pytest.raises(TaskFormatError, match=r"DataFrame:0: field 'dataset': not a number .* --columns dataset=meta.dataset"):
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
    code = ("import sys, rankkit\n"
            "from rankkit.tasks import task_rows\n"
            f"tasks = rankkit.load_tasks({str(SAMPLE_DATA)!r})\n"
            "rankkit.load_tasks(task_rows(tasks))\n"
            "print(','.join(m for m in ('pandas', 'pyarrow', 'datasets') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == ""
