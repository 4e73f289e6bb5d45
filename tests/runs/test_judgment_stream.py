"""Streamed judgments (``rankkit compare --stream-judgments``): the sidecar, reading it back, its checks."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.errors import TaskFormatError
from rankkit.runs.judgment_stream import sidecar_name
from rankkit.runs.results import read_results

JUDGE = "sim:preset=gpt4"
#: Pairwise, k-way and pointwise strategies: comparisons, group comparisons and grades all streamed.
STRATEGIES = "bt,knockout:order=both,individual,setwise_groups"


def write_tasks(path: Path, tasks: int, candidates: int) -> Path:
    """Synthetic tasks with human scores (what the simulator reads)."""
    with path.open("w", encoding="utf-8") as handle:
        for t in range(tasks):
            answers = [
                {"id": f"c{i}", "system": f"s{i}", "text": f"answer {i} to {t}", "human": {"score": (i * 7 + t) % 10}}
                for i in range(candidates)
            ]
            handle.write(json.dumps({"task_id": f"t{t}", "prompt": f"question {t}", "candidates": answers}) + "\n")
    return path


def invoke(*args: str):
    return CliRunner().invoke(main, list(args), catch_exceptions=False)


def compare(data: Path, out: Path, *extra: str):
    done = invoke(
        "compare", "--data", str(data), "--judge", JUDGE, "--strategies", STRATEGIES, "--quiet", "--no-cache",
        "--out", str(out), "--format", "csv", *extra,
    )  # fmt: skip
    assert done.exit_code == 0, done.output
    return done


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[str, Path]:
    """The same run written inline, streamed, and the streamed file's inline twin (same seconds)."""
    folder = tmp_path_factory.mktemp("stream")
    data = write_tasks(folder / "tasks.jsonl", 5, 5)
    compare(data, folder / "inline.json")
    compare(data, folder / "streamed.json", "--stream-judgments")
    twin = folder / "twin.json"
    twin.write_text(json.dumps(read_results(folder / "streamed.json").to_dict()), encoding="utf-8")
    return {"inline": folder / "inline.json", "streamed": folder / "streamed.json", "twin": twin}


def without_seconds(payload: dict) -> dict:
    for key in ("wall_seconds", "warm_up_seconds", "config"):
        payload.pop(key, None)
    for strategy in payload["strategies"]:
        strategy.pop("seconds")
    return payload


def test_the_results_file_names_its_sidecar_and_holds_no_judgment(runs):
    payload = json.loads(runs["streamed"].read_text(encoding="utf-8"))
    assert payload["judgments_file"] == "streamed.judgments.jsonl" == sidecar_name(runs["streamed"])
    assert all("comparisons" not in task for s in payload["strategies"] for task in s["tasks"])
    lines = (runs["streamed"].parent / payload["judgments_file"]).read_text(encoding="utf-8").splitlines()
    assert len(lines) == 4 * 5  # one per strategy and task
    kinds = {key for line in lines for key, value in json.loads(line).items() if value}
    assert {"comparisons", "group_comparisons", "grades"} <= kinds


def test_a_streamed_file_reads_back_equal_to_the_inline_run(runs):
    inline = without_seconds(read_results(runs["inline"]).to_dict())
    streamed = without_seconds(read_results(runs["streamed"]).to_dict())
    assert streamed == inline
    assert "judgments_file" not in streamed  # read back, the judgments are inline again


@pytest.mark.parametrize(
    "command",
    [
        ("analyze", "{results}", "--bootstrap", "50"),
        ("rejudge", "{results}", "--judge", "sim:preset=chatgpt", "--no-cache", "--quiet", "--format", "json"),
        ("record", "--from-run", "{results}", "--out", "{out}"),
        ("report", "{results}", "--out", "{out}"),
    ],
    ids=lambda command: command[0],
)
def test_every_reader_gives_the_same_output_on_both_forms(runs, command, tmp_path):
    outputs = []
    for name in ("streamed", "twin"):
        out = tmp_path / name / "out"  # the same name: readers print it
        out.parent.mkdir()
        args = [part.format(results=runs[name], out=out) for part in command]
        done = invoke(*args)
        assert done.exit_code == 0, done.output
        text = done.output.replace(str(runs[name]), "RESULTS").replace(str(out), "OUT")
        outputs.append((text, out.read_bytes().replace(str(runs[name]).encode(), b"RESULTS") if out.exists() else None))
    assert outputs[0] == outputs[1]


def streamed_copy(runs, tmp_path: Path, name) -> Path:
    """The streamed results file copied into tmp_path, its sidecar named ``name``."""
    payload = json.loads(runs["streamed"].read_text(encoding="utf-8"))
    payload["judgments_file"] = name
    copy = tmp_path / "run" / "results.json"
    copy.parent.mkdir()
    copy.write_text(json.dumps(payload), encoding="utf-8")
    return copy


def outside_sidecar(runs, tmp_path: Path) -> Path:
    outside = tmp_path / "elsewhere.jsonl"
    outside.write_bytes((runs["streamed"].parent / "streamed.judgments.jsonl").read_bytes())
    return outside


@pytest.mark.parametrize(
    "name, refused",
    [
        (lambda outside: str(outside), "not a path"),
        (lambda outside: "../elsewhere.jsonl", "not a path"),
        (lambda outside: "..", "not a file name"),
        (lambda outside: "", "not a file name"),
        (lambda outside: 3, "not a file name"),
        (lambda outside: "missing.jsonl", "no such file"),
    ],
    ids=["absolute", "dot-dot", "parent", "empty", "number", "missing"],
)
def test_a_sidecar_that_is_not_a_plain_file_beside_the_results_is_refused_with_exit_2(runs, tmp_path, name, refused):
    results = streamed_copy(runs, tmp_path, name(outside_sidecar(runs, tmp_path)))
    with pytest.raises(TaskFormatError, match=refused):
        read_results(results)
    done = invoke("analyze", str(results))
    assert done.exit_code == 2 and "judgments_file" in done.output and "Traceback" not in done.output


def test_a_sidecar_linked_out_of_the_folder_is_refused_with_exit_2(runs, tmp_path):
    results = streamed_copy(runs, tmp_path, "linked.jsonl")
    (results.parent / "linked.jsonl").symlink_to(outside_sidecar(runs, tmp_path))
    done = invoke("analyze", str(results))
    assert done.exit_code == 2 and "is a link" in done.output


def test_a_sidecar_missing_a_task_or_naming_another_is_refused_naming_its_line(runs, tmp_path):
    results = streamed_copy(runs, tmp_path, "part.jsonl")
    lines = (runs["streamed"].parent / "streamed.judgments.jsonl").read_text(encoding="utf-8").splitlines()
    (results.parent / "part.jsonl").write_text("\n".join(lines[:-1]) + "\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match="no judgments of strategy"):
        read_results(results)
    stranger = json.loads(lines[0]) | {"task_id": "t99"}
    (results.parent / "part.jsonl").write_text("\n".join([*lines, json.dumps(stranger)]) + "\n", encoding="utf-8")
    with pytest.raises(TaskFormatError, match=r"part\.jsonl:21: field 'task_id'"):
        read_results(results)


def test_streaming_needs_out(tmp_path):
    data = write_tasks(tmp_path / "tasks.jsonl", 1, 3)
    done = invoke("compare", "--data", str(data), "--judge", JUDGE, "--no-cache", "--quiet", "--stream-judgments")
    assert done.exit_code == 2 and "--out" in done.output


def run_compare(data: Path, out: Path, cache: Path) -> subprocess.Popen:
    command = [sys.executable, "-m", "rankkit", "compare", "--data", str(data), "--judge", JUDGE, "--strategies",
               "bt", "--cache", str(cache), "--quiet", "--yes", "--out", str(out), "--stream-judgments",
               "--format", "csv"]  # fmt: skip
    return subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)


def judge_calls(results: Path) -> int:
    return json.loads(results.read_text(encoding="utf-8"))["strategies"][0]["judge_calls"]


def test_a_killed_run_leaves_whole_lines_and_a_rerun_pays_only_what_is_missing(tmp_path):
    data, cache = write_tasks(tmp_path / "tasks.jsonl", 400, 10), tmp_path / "cache.sqlite"
    out = tmp_path / "run.json"
    sidecar = tmp_path / sidecar_name(out)
    killed = run_compare(data, out, cache)
    deadline = time.monotonic() + 120
    while not (sidecar.exists() and sidecar.read_bytes().count(b"\n") >= 3) and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(0.3)  # past the memo's commit interval: some judgments are in the cache
    os.kill(killed.pid, signal.SIGKILL)
    assert killed.wait() == -signal.SIGKILL and not out.exists()  # killed mid-run: no results file yet
    whole = sidecar.read_bytes().split(b"\n")[:-1]  # the text after the last newline may be cut
    assert 3 <= len(whole) < 400
    assert all(len(json.loads(line)["comparisons"]) == 90 for line in whole)
    with sqlite3.connect(cache) as db:
        paid = db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]
    assert paid > 0
    rerun = run_compare(data, out, cache)
    assert rerun.wait() == 0, rerun.stderr.read()
    assert judge_calls(out) == 400 * 90 - paid  # nothing paid before the kill is paid again
    assert len(read_results(out).strategies[0].tasks) == 400
    again = run_compare(data, out, cache)
    assert again.wait() == 0 and judge_calls(out) == 0


def test_a_streamed_runs_own_result_is_not_rejudged_without_its_file(tmp_path):
    from rankkit import api
    from rankkit.data.specs import SpecError

    data = write_tasks(tmp_path / "tasks.jsonl", 2, 4)
    result = api.compare(str(data), ["bt"], JUDGE, stream_judgments=tmp_path / "run.json")
    assert result.judgments_file == "run.judgments.jsonl"
    assert all(not task.comparisons for task in result.strategies[0].tasks)
    with pytest.raises(SpecError, match="pass its results file"):
        api.rejudge(result, "sim:preset=chatgpt")
    (tmp_path / "run.json").write_text(json.dumps(result.to_dict()), encoding="utf-8")
    assert len(read_results(tmp_path / "run.json").strategies[0].tasks[0].comparisons) == 12


def test_a_link_where_the_sidecar_goes_is_not_written_through(tmp_path):
    data, target = write_tasks(tmp_path / "tasks.jsonl", 1, 3), tmp_path / "target.txt"
    target.write_text("keep", encoding="utf-8")
    (tmp_path / "run.judgments.jsonl").symlink_to(target)
    done = invoke("compare", "--data", str(data), "--judge", JUDGE, "--no-cache", "--quiet", "--stream-judgments",
                  "--out", str(tmp_path / "run.json"))  # fmt: skip
    assert done.exit_code == 2 and "cannot write the judgments' sidecar" in done.output
    assert target.read_text(encoding="utf-8") == "keep"
