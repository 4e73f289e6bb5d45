"""Merging the parts of a sharded run: the single-process run's results, and every bad part refused."""

from __future__ import annotations

import json

import pytest

from rankkit import compare, merge
from rankkit.errors import RankkitError, TaskFormatError
from rankkit.runs.merge import MissingShardsError, merge_parts
from rankkit.runs.shards import Shard
from tests.runs.merge_checks import assert_same_results

#: Strategies that draw from their generator (order=random, pairings, budgets) and one that grades.
STRATEGIES = ["knockout", "bt", "individual", "swiss:budget=3", "active:budget=4", "setwise_groups:k=3"]
JUDGE = "sim:preset=gpt4"


def parts_of(tasks, count: int, strategies=STRATEGIES, judge=JUDGE, seed: int = 0):
    return [compare(tasks, strategies, judge=judge, seed=seed, shard=Shard(i, count)) for i in range(count)]


def test_run_with_a_shard_ranks_its_tasks_and_records_the_whole_runs_identity(sample_tasks):
    from rankkit import make_judge, make_strategy, run

    strategies = [make_strategy("knockout")]
    parts = [run(sample_tasks, strategies, make_judge(JUDGE), shard=Shard(i, 4)) for i in range(4)]
    assert [[t.task_id for t in part.tasks] for part in parts] == [
        [t.task_id for t in sample_tasks[i::4]] for i in range(4)
    ]
    assert len({part.shard.run_fingerprint for part in parts}) == 1
    assert {part.shard.total_tasks for part in parts} == {len(sample_tasks)}
    assert run(sample_tasks, strategies, make_judge(JUDGE)).shard is None


@pytest.mark.parametrize("count", [2, 3])
def test_the_merged_parts_are_the_single_run(sample_tasks, count):
    single = compare(sample_tasks, STRATEGIES, judge=JUDGE).to_dict()
    parts = parts_of(sample_tasks, count)
    assert all(len(part.tasks) < len(sample_tasks) for part in parts)
    merged = merge(parts[::-1]).to_dict()  # any order
    assert "shard" not in merged and all("shard" in part.to_dict() for part in parts)
    assert_same_results(merged, single)


def test_more_shards_than_tasks_leave_empty_parts_that_still_merge(sample_tasks):
    tasks = sample_tasks[:2]
    single = compare(tasks, ["knockout", "bt"], judge=JUDGE).to_dict()
    parts = parts_of(tasks, 4, ["knockout", "bt"])
    assert [len(part.tasks) for part in parts] == [1, 1, 0, 0]
    assert_same_results(merge(parts).to_dict(), single)


def test_merged_files_are_the_single_run_and_read_back(sample_tasks, tmp_path):
    files = []
    for index, part in enumerate(parts_of(sample_tasks, 2)):
        files.append(tmp_path / f"part{index}.json")
        files[-1].write_text(json.dumps(part.to_dict()), encoding="utf-8")
    single = compare(sample_tasks, STRATEGIES, judge=JUDGE).to_dict()
    assert_same_results(merge_parts(files).to_dict(), single)


def test_a_missing_shard_is_refused_naming_it(sample_tasks):
    parts = parts_of(sample_tasks, 3)
    with pytest.raises(MissingShardsError, match=r"shard\(s\) 1/3 missing") as error:
        merge([parts[0], parts[2]])
    assert error.value.exit_code == 2


def test_a_duplicated_shard_is_refused(sample_tasks):
    parts = parts_of(sample_tasks, 2)
    with pytest.raises(TaskFormatError, match="given twice") as error:
        merge([parts[0], parts[1], parts[0]])
    assert error.value.path == "part 2"


@pytest.mark.parametrize(
    "other",
    [
        {"seed": 1},
        {"judge": "sim:preset=chatgpt"},
        {"strategies": ["knockout"]},
        {"count": 3},
    ],
)
def test_a_part_of_another_run_is_refused(sample_tasks, other):
    mine = parts_of(sample_tasks, 2)
    settings = {"seed": 0, "judge": JUDGE, "strategies": STRATEGIES, "count": 2, **other}
    theirs = parts_of(sample_tasks, settings["count"], settings["strategies"], settings["judge"], settings["seed"])
    with pytest.raises(TaskFormatError, match="different run") as error:
        merge([mine[0], theirs[1]])
    assert error.value.path == "part 1"


def test_a_part_of_other_data_is_refused(sample_tasks):
    mine = parts_of(sample_tasks, 2)
    theirs = parts_of(sample_tasks[::-1], 2)
    with pytest.raises(TaskFormatError, match="different run"):
        merge([mine[0], theirs[1]])


def test_a_whole_run_is_not_a_part(sample_tasks):
    with pytest.raises(TaskFormatError, match="not a part of a sharded run"):
        merge([compare(sample_tasks, ["bt"], judge=JUDGE)])


def test_nothing_to_merge_is_refused():
    with pytest.raises(RankkitError, match="no parts"):
        merge([])


def edited(part, edit) -> dict:
    payload = json.loads(json.dumps(part.to_dict()))
    edit(payload)
    return payload


def _drop_task(payload):
    del payload["task_data"][0]
    for strategy in payload["strategies"]:
        del strategy["tasks"][0]


def _swap_strategy_tasks(payload):
    tasks = payload["strategies"][0]["tasks"]
    tasks[0], tasks[1] = tasks[1], tasks[0]


def _claim_more_tasks(payload):
    payload["shard"]["total_tasks"] += 2


def _steal_task(other_part):
    def edit(payload):  # the other part's first task, under this part's name
        payload["task_data"][0] = other_part["task_data"][0]
        for strategy, theirs in zip(payload["strategies"], other_part["strategies"]):
            strategy["tasks"][0] = theirs["tasks"][0]

    return edit


@pytest.mark.parametrize(
    "edit, field",
    [
        (_drop_task, "task_data"),
        (_swap_strategy_tasks, "strategies[0].tasks"),
        (_claim_more_tasks, "shard.run_fingerprint"),  # checked first: it differs from the other part's claim
        (lambda p: p["shard"].update(index="0"), "shard.index"),
        (lambda p: p.pop("judge"), "judge"),
        (lambda p: p["strategies"][0]["tasks"][0].update(ranking=["nope"]), "strategies[0].tasks[0].ranking[0]"),
    ],
)
def test_a_malformed_part_file_is_refused_naming_the_file_and_field(sample_tasks, tmp_path, edit, field):
    first, second = parts_of(sample_tasks, 2, ["knockout", "bt"])
    (tmp_path / "p0.json").write_text(json.dumps(first.to_dict()), encoding="utf-8")
    if field == "shard.run_fingerprint":  # the same claim in both parts: the sizes no longer fit the claim
        payloads = [edited(first, edit), edited(second, edit)]
        field = "task_data"
    else:
        payloads = [first.to_dict(), edited(second, edit)]
    for index, payload in enumerate(payloads):
        (tmp_path / f"p{index}.json").write_text(json.dumps(payload), encoding="utf-8")
    with pytest.raises(TaskFormatError) as error:
        merge_parts([tmp_path / "p0.json", tmp_path / "p1.json"])
    assert error.value.path.endswith(".json") and error.value.field == field


def test_two_parts_claiming_one_task_are_refused(sample_tasks, tmp_path):
    first, second = parts_of(sample_tasks, 2, ["bt"])
    forged = edited(second, _steal_task(first.to_dict()))
    (tmp_path / "p0.json").write_text(json.dumps(first.to_dict()), encoding="utf-8")
    (tmp_path / "p1.json").write_text(json.dumps(forged), encoding="utf-8")
    with pytest.raises(TaskFormatError, match="also in another part") as error:
        merge_parts([tmp_path / "p0.json", tmp_path / "p1.json"])
    assert error.value.path == str(tmp_path / "p1.json")


# -- recordings (record --shard) ------------------------------------------------------------------


def record_parts(tasks, tmp_path, count: int, label: str = "sim") -> list:
    from rankkit.judges import make_judge
    from rankkit.runs.recording import record_grid, write_judgments

    files = []
    for index in range(count):
        rows, _ = record_grid(tasks, make_judge(JUDGE), None, label, "recorded", shard=Shard(index, count))
        files.append(tmp_path / f"{label}-{index}.jsonl")
        write_judgments(rows, files[-1])
    return files


@pytest.mark.parametrize("count", [2, 3])
def test_merged_recording_parts_are_the_whole_recording(sample_tasks, tmp_path, count):
    from rankkit.judges import make_judge
    from rankkit.runs.merge import merge_recordings
    from rankkit.runs.recording import record_grid

    whole, _ = record_grid(sample_tasks, make_judge(JUDGE), None, "sim", "recorded")
    files = record_parts(sample_tasks, tmp_path, count)
    assert json.dumps(merge_recordings(files[::-1])) == json.dumps(whole)


def rewrite(path, edit) -> None:
    rows = [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]
    path.write_text("".join(json.dumps(row) + "\n" for row in edit(rows)), encoding="utf-8")


def _first_row_unmarked(rows):
    rows[0].pop("shard")
    return rows


def _first_row_moved(rows):
    rows[0]["shard"]["position"] += 1  # a position of another shard
    return rows


def _first_task_dropped(rows):
    return [row for row in rows if row["task_id"] != rows[0]["task_id"]]


def _second_row_of_another_part(rows):
    rows[1]["shard"]["index"] = 0
    return rows


@pytest.mark.parametrize(
    "edit, line, field",
    [
        (_first_row_unmarked, 1, "shard"),
        (_first_row_moved, 1, "shard.position"),
        (_first_task_dropped, None, "shard.position"),
        (_second_row_of_another_part, 2, "shard"),
    ],
)
def test_a_malformed_recording_part_is_refused_naming_file_line_and_field(sample_tasks, tmp_path, edit, line, field):
    from rankkit.runs.merge import merge_recordings

    files = record_parts(sample_tasks, tmp_path, 2)
    rewrite(files[1], edit)
    with pytest.raises(TaskFormatError) as error:
        merge_recordings(files)
    assert error.value.path == str(files[1]) and error.value.line == line and error.value.field == field


def test_recording_parts_of_another_recording_missing_or_twice_are_refused(sample_tasks, tmp_path):
    from rankkit.runs.merge import merge_recordings

    mine = record_parts(sample_tasks, tmp_path, 3)
    theirs = record_parts(sample_tasks, tmp_path, 3, label="other")
    with pytest.raises(TaskFormatError, match="different run") as error:
        merge_recordings([mine[0], theirs[1], mine[2]])
    assert error.value.path == str(theirs[1])
    with pytest.raises(TaskFormatError, match="given twice"):
        merge_recordings([mine[0], mine[1], mine[1], mine[2]])
    with pytest.raises(MissingShardsError, match=r"2/3 missing"):
        merge_recordings(mine[:2])
