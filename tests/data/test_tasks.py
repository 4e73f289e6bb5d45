"""Loading tasks from JSONL and CSV, choosing the criterion, and the errors bad input gets."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from rankkit.data.tasks import SAMPLE_DATA, load_tasks, task_rng
from rankkit.errors import TaskFormatError
from tests.conftest import shared_dataset


def write_jsonl(path: Path, rows: list) -> Path:
    path.write_text("\n".join(r if isinstance(r, str) else json.dumps(r) for r in rows) + "\n", encoding="utf-8")
    return path


def task(task_id="t1", n=3, **overrides):
    row = {
        "task_id": task_id,
        "prompt": "Q?",
        "reference": None,
        "candidates": [
            {"id": f"c{i}", "text": f"answer {i}", "system": f"s{i}", "human": {"score": float(i)}} for i in range(n)
        ],
        "meta": {},
    }
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
    with pytest.raises(
        TaskFormatError,
        match=r"several human criteria .*choose one with criterion= \(--criterion on the command line\): other, score",
    ):
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
    (
        "duplicate id",
        [
            task(
                candidates=[
                    {"id": "a", "text": "x", "human": {"score": 1}},
                    {"id": "a", "text": "y", "human": {"score": 2}},
                ]
            )
        ],
        1,
        "candidates[1].id",
        "duplicate candidate id",
    ),
    (
        "empty text",
        [
            task(
                candidates=[
                    {"id": "a", "text": "  ", "human": {"score": 1}},
                    {"id": "b", "text": "y", "human": {"score": 2}},
                ]
            )
        ],
        1,
        "candidates[0].text",
        "empty text",
    ),
    ("one candidate", [task(n=1)], 1, "candidates", "at least 2"),
    (
        "non-numeric score",
        [
            task(
                candidates=[
                    {"id": "a", "text": "x", "human": {"score": "high"}},
                    {"id": "b", "text": "y", "human": {"score": 2}},
                ]
            )
        ],
        1,
        "candidates[0].human.score",
        "not a finite number",
    ),
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
        "q2,Capital of France?,b,Lyon,m2,0.5\n",
        encoding="utf-8",
    )
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


# -- duplicate task ids, bytes and formats (issue 11, items 4 and 5) ----------------------------


def load_error(path: Path) -> TaskFormatError:
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    return info.value


def test_duplicate_task_id_in_jsonl_names_both_lines(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [task("q1"), task("q2"), task("q1")])
    err = load_error(path)
    assert (err.line, err.field) == (3, "task_id")
    assert "duplicate task id 'q1' (first on line 1)" in str(err)


def test_task_ids_are_compared_as_text(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [task(7), task("7")])
    assert load_error(path).line == 2


def test_csv_rows_of_a_task_need_not_be_contiguous(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text(
        "task_id,prompt,candidate_id,text,grade\nq1,Q1,a,x,1\nq2,Q2,a,x,1\nq1,Q1,b,y,2\nq2,Q2,b,y,0\n", encoding="utf-8"
    )
    tasks = load_tasks(path)
    assert [(t.task_id, t.candidate_ids) for t in tasks] == [("q1", ["a", "b"]), ("q2", ["a", "b"])]


@pytest.mark.parametrize(
    "column,rows",
    [
        ("prompt", "q1,Q1,,a,x,1\nq2,Q2,,a,x,1\nq1,Another,,b,y,2\n"),
        ("reference", "q1,Q1,R,a,x,1\nq1,Q1,S,b,y,2\n"),
    ],
)
def test_csv_task_with_conflicting_prompt_or_reference_names_the_line(tmp_path, column, rows):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,reference,candidate_id,text,grade\n" + rows, encoding="utf-8")
    err = load_error(path)
    assert err.field == column and err.line == rows.count("\n") + 1
    assert f"task 'q1' has another {column} on line 2" in str(err)


def test_csv_repeated_candidate_of_a_task_names_its_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq2,Q,a,x,1\nq1,Q,a,y,2\n", encoding="utf-8")
    err = load_error(path)
    assert err.line == 4 and err.field == "candidates[1].id"


def test_non_utf8_jsonl_names_line_and_column(tmp_path):
    path = tmp_path / "t.jsonl"
    good = json.dumps(task("q1")).encode()
    bad = json.dumps(task("q2", prompt="caf_")).encode().replace(b"caf_", b"caf\xe9")
    path.write_bytes(good + b"\n" + bad + b"\n")
    err = load_error(path)
    assert err.line == 2 and "not valid UTF-8 (byte 0xe9 at column" in str(err)
    assert f"{path}:2:" in str(err)


def test_non_utf8_csv_names_the_line(tmp_path):
    path = tmp_path / "t.csv"
    path.write_bytes(b"task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq1,Q,b,r\xe9sum\xe9,2\n")
    err = load_error(path)
    assert err.line == 3 and "byte 0xe9 at column 9" in str(err)


def test_utf8_bom_is_accepted_in_csv_and_jsonl(tmp_path):
    csv_path = tmp_path / "excel.csv"
    csv_path.write_bytes(b"\xef\xbb\xbf" + b"task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq1,Q,b,y,2\n")
    assert load_tasks(csv_path)[0].task_id == "q1"
    jsonl_path = tmp_path / "bom.jsonl"
    jsonl_path.write_bytes(b"\xef\xbb\xbf" + json.dumps(task("q1")).encode() + b"\n")
    assert load_tasks(jsonl_path)[0].task_id == "q1"


def test_tsv_is_read_as_tab_separated_long_form(tmp_path):
    path = tmp_path / "t.tsv"
    path.write_text(
        "task_id\tprompt\tcandidate_id\ttext\tgrade\nq1\tA, B or C?\ta\tB, surely\t1\nq1\tA, B or C?\tb\tC\t0\n",
        encoding="utf-8",
    )
    loaded = load_tasks(path)[0]
    assert loaded.prompt == "A, B or C?" and loaded.candidate("a").text == "B, surely"
    assert loaded.human_scores() == {"a": 1.0, "b": 0.0}


def test_csv_row_with_more_or_fewer_fields_than_the_header(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq1,Q,b,one, two,2\n", encoding="utf-8")
    err = load_error(path)
    assert err.line == 3 and "row has 6 fields, the header has 5" in str(err)
    path.write_text("task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq1,Q,b\n", encoding="utf-8")
    err = load_error(path)
    assert err.line == 3 and err.field == "text"


@pytest.mark.parametrize("name", ["tasks.ndjson", "tasks"])
def test_other_extension_is_read_when_the_content_is_jsonl(tmp_path, name):
    path = write_jsonl(tmp_path / name, [task("q1"), task("q2")])
    assert [t.task_id for t in load_tasks(path)] == ["q1", "q2"]


def test_json_extension_reads_json_lines(tmp_path):
    path = write_jsonl(tmp_path / "tasks.json", [task("q1"), task("q2")])
    assert len(load_tasks(path)) == 2


def test_unknown_extension_without_jsonl_content_is_rejected(tmp_path):
    path = tmp_path / "tasks.xlsx"
    path.write_bytes(b"PK\x03\x04 binary spreadsheet")
    err = load_error(path)
    assert "unknown data format (extension '.xlsx'" in str(err) and ".jsonl, .json, .csv, .tsv" in str(err)


def test_empty_task_id_and_directory_are_rejected(tmp_path):
    assert load_error(write_jsonl(tmp_path / "t.jsonl", [task(" ")])).field == "task_id"
    assert "is a directory" in str(load_error(tmp_path))


def test_task_rng_is_seeded_by_seed_task_and_purpose_and_its_doctest_holds():
    import doctest

    import rankkit.data.tasks

    assert doctest.testmod(rankkit.data.tasks).failed == 0
    draws = [
        task_rng(seed, task_id, purpose).getrandbits(64)
        for seed, task_id, purpose in [
            (0, "q1", None),
            (0, "q1", None),
            (0, "q2", None),
            (1, "q1", None),
            (0, "q1", "arena"),
        ]
    ]
    assert draws[0] == draws[1]  # the same seed, task and purpose: the same draws
    assert len(set(draws[1:])) == 4  # any other seed, task or purpose: other draws


# -- input that crashed later, or was silently accepted (issue 24, items 5-7) --------------------


def two_candidates(**first_overrides):
    """A task whose first candidate takes ``first_overrides``."""
    return task(
        candidates=[
            {"id": "a", "text": "x", "human": {"score": 1}, **first_overrides},
            {"id": "b", "text": "y", "human": {"score": 2}},
        ]
    )


def deeply_nested(levels: int) -> str:
    """A task line whose ``meta`` nests ``levels`` objects deep (written by hand: json.dumps recurses)."""
    head = json.dumps(task())[:-1].replace('"meta": {}', '"meta": ' + '{"a": ' * levels + "1" + "}" * levels)
    return head + "}"


# (name, lines of the file, line, field, words of the message)
REFUSED_INPUTS = [
    # item 5: tracebacks before
    (
        "score 10**400",
        [
            '{"task_id": "t1", "prompt": "Q?", "candidates": [{"id": "a", "text": "x", "human": {"score": 1'
            + "0" * 400
            + '}}, {"id": "b", "text": "y", "human": {"score": 2}}]}'
        ],
        1,
        "candidates[0].human.score",
        "not a finite number",
    ),
    ("meta 100k levels deep", [deeply_nested(100_000)], 1, "meta", "nested too deeply"),
    ("meta 100 levels deep", [deeply_nested(100)], 1, "meta", "nested deeper than 64 levels"),
    (
        "lone surrogate in a text",
        [json.dumps(two_candidates(text="\ud800x"))],
        1,
        "candidates[0].text",
        "lone surrogate \\ud800 at character 1",
    ),
    ("lone surrogate in the prompt", [json.dumps(task(prompt="Q\udfff"))], 1, "prompt", "lone surrogate"),
    # item 6: silently accepted before
    ("max_points 'ten'", [task(meta={"max_points": "ten"})], 1, "meta.max_points", "expected a number above 0"),
    ("max_points -4", [task(meta={"max_points": -4})], 1, "meta.max_points", "got -4"),
    ("max_points 0", [task(meta={"max_points": 0})], 1, "meta.max_points", "got 0"),
    (
        "max_points NaN",
        [
            '{"task_id": "t1", "prompt": "Q?", "candidates": [{"id": "a", "text": "x"}, '
            '{"id": "b", "text": "y"}], "meta": {"max_points": NaN}}'
        ],
        1,
        "meta.max_points",
        "got nan",
    ),
    ("max_points 1e300", [task(meta={"max_points": 1e300})], 1, "meta.max_points", "at most 1,000,000"),
    (
        "main_score not a criterion",
        [task(meta={"main_score": "points"})],
        1,
        "meta.main_score",
        "names 'points', which no candidate has a score for (criteria in the data: score)",
    ),
    (
        "candidate id null",
        [two_candidates(id=None)],
        1,
        "candidates[0].id",
        "expected a string or integer id, got None",
    ),
    ("candidate id true", [two_candidates(id=True)], 1, "candidates[0].id", "expected a string or integer id"),
    (
        "duplicate JSON key",
        ['{"task_id": "t1", "prompt": "Q?", "prompt": "R?", "candidates": []}'],
        1,
        "prompt",
        "the key appears twice",
    ),
    ("NUL in a text", [two_candidates(text="x\u0000y")], 1, "candidates[0].text", "NUL character at character 2"),
    # item 7: misleading before
    (
        "text 123",
        [two_candidates(text=123)],
        1,
        "candidates[0].text",
        "text must be a string or a list of messages, got int",
    ),
]


@pytest.mark.parametrize("name,rows,line,field,message", REFUSED_INPUTS, ids=[r[0] for r in REFUSED_INPUTS])
def test_bad_values_are_refused_at_load_naming_line_and_field(tmp_path, name, rows, line, field, message):
    path = write_jsonl(tmp_path / "bad.jsonl", rows)
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    err = info.value
    assert (err.line, err.field) == (line, field), str(err)
    assert message in str(err)


def test_integer_candidate_ids_are_read_as_their_digits(tmp_path):
    path = write_jsonl(
        tmp_path / "t.jsonl",
        [
            task(
                candidates=[
                    {"id": 7, "text": "x", "human": {"score": 1}},
                    {"id": "8", "text": "y", "human": {"score": 2}},
                ]
            )
        ],
    )
    assert load_tasks(path)[0].candidate_ids == ["7", "8"]
    same = write_jsonl(
        tmp_path / "u.jsonl",
        [
            task(
                candidates=[
                    {"id": 7, "text": "x", "human": {"score": 1}},
                    {"id": "7", "text": "y", "human": {"score": 2}},
                ]
            )
        ],
    )
    with pytest.raises(TaskFormatError, match="duplicate candidate id '7'"):
        load_tasks(same)


def test_max_points_in_range_sets_the_scale(tmp_path):
    path = write_jsonl(tmp_path / "t.jsonl", [task(meta={"max_points": 5, "main_score": "score"})])
    assert load_tasks(path)[0].scale == pytest.approx((0.0, 5.0), abs=1e-12)


def test_csv_header_naming_a_column_twice_is_refused(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,candidate_id,text,grade,grade\nq1,Q,a,x,1,2\nq1,Q,b,y,0,1\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match="names this column twice") as info:
        load_tasks(path)
    assert (info.value.line, info.value.field) == (1, "grade")


def test_nul_in_a_csv_text_is_refused_on_its_row(tmp_path):
    path = tmp_path / "t.csv"
    path.write_text("task_id,prompt,candidate_id,text,grade\nq1,Q,a,x,1\nq1,Q,b,y\x00z,0\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match="NUL character") as info:
        load_tasks(path)
    assert (info.value.line, info.value.field) == (3, "candidates[1].text")


def test_records_built_in_python_are_checked_like_a_file():
    from rankkit.data.tasks import tasks_from_records

    nested: dict = {}
    for _ in range(5000):
        nested = {"a": nested}
    with pytest.raises(TaskFormatError, match="nested deeper than 64 levels"):
        tasks_from_records([task(meta=nested)])
    with pytest.raises(TaskFormatError, match="score is not a finite number: an integer too long to print"):
        tasks_from_records([two_candidates(human={"score": 10**5000})])


# -- size limits -------------------------------------------------------------------------------


def two_answers(first: str, prompt: str = "Q?", reference: str | None = None) -> dict:
    return task(
        prompt=prompt,
        reference=reference,
        candidates=[
            {"id": "big", "text": first, "human": {"score": 1}},
            {"id": "ok", "text": "fine", "human": {"score": 2}},
        ],
    )


@pytest.mark.parametrize(
    "name,row,field,length",
    [
        ("2 MB candidate", two_answers("A" * 2_000_000), "candidates[0].text", "2,000,000"),
        ("100k newlines", two_answers("The answer is A." + "\n" * 100_000), "candidates[0].text", "100,016"),
        ("long prompt", two_answers("A", prompt="Q" * 200_001), "prompt", "200,001"),
        ("long reference", two_answers("A", reference="R" * 300_000), "reference", "300,000"),
    ],
)
def test_oversized_texts_are_refused_at_loading_naming_file_line_and_field(tmp_path, name, row, field, length):
    path = write_jsonl(tmp_path / "big.jsonl", [task("small"), row])
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    err = info.value
    assert (err.path, err.line, err.field) == (str(path), 2, field)
    assert f"{length} characters long, over the limit of" in err.message and "--max-" in err.message


def test_size_limits_are_parameters_and_none_lifts_them(tmp_path):
    from rankkit.data.tasks import DEFAULT_MAX_CANDIDATE_CHARS, tasks_from_records

    row = two_answers("A" * (DEFAULT_MAX_CANDIDATE_CHARS + 1))
    path = write_jsonl(tmp_path / "t.jsonl", [row])
    assert len(load_tasks(path, max_candidate_chars=None)[0].candidates[0].text) == DEFAULT_MAX_CANDIDATE_CHARS + 1
    assert load_tasks(write_jsonl(tmp_path / "at.jsonl", [two_answers("A" * DEFAULT_MAX_CANDIDATE_CHARS)]))
    with pytest.raises(TaskFormatError, match="over the limit of 10"):
        tasks_from_records([two_answers("A" * 11)], max_candidate_chars=10)
    with pytest.raises(TaskFormatError, match="'prompt'.* over the limit of 5"):
        load_tasks(write_jsonl(tmp_path / "p.jsonl", [two_answers("A", prompt="Q" * 6)]), max_prompt_chars=5)


def test_a_csv_field_past_the_csv_modules_own_limit_meets_rankkits_limit(tmp_path):
    path = tmp_path / "big.csv"
    path.write_text(f"task_id,prompt,candidate_id,text,score\nq1,Q?,a,{'A' * 200_000},1\nq1,Q?,b,B,2\n")
    with pytest.raises(TaskFormatError) as info:
        load_tasks(path)
    assert (info.value.line, info.value.field) == (2, "candidates[0].text")
    assert len(load_tasks(path, max_candidate_chars=None)[0].candidates[0].text) == 200_000


def test_style_features_count_markdown_headers_list_items_and_bold_spans():
    from rankkit.data.tasks import Candidate, style_features

    text = "## Steps\n1. **First** do\n2) then\n   - nested __point__\nplain line with a # not a header\n* last"
    features = style_features(text)
    assert (features.headers, features.list_items, features.bold) == (1, 4, 2)
    assert features.chars == len(text) and features.tokens == -(-len(text) // 4)
    assert features.format_score == pytest.approx(math.log2(8), abs=1e-12)
    assert style_features("no formatting at all").formatting == 0
    assert Candidate("c", text).style == features
