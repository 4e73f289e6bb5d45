"""The replay judge: answers by presentation order, explicit misses, filters, fingerprint, recording."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.specs import SpecError
from rankkit.data.tasks import load_tasks
from rankkit.errors import TaskFormatError
from rankkit.judges import make_judge
from rankkit.judges.base import JudgeError
from rankkit.judges.simulated.replay import ReplayJudge, load_recorded
from rankkit.judgments.cache import NullCache
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import ParseStatus, Winner
from rankkit.reports.judge_report import judge_report
from rankkit.strategies.matches import Cost, MatchSource
from tests.conftest import SHARED_DATA, shared_dataset
from tests.helpers import make_task


def write_rows(path: Path, rows: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    return path


@pytest.fixture
def task():
    return make_task([1.0, 0.0], task_id="t1")  # c0 is the human-preferred answer


@pytest.fixture
def recording(tmp_path):
    return write_rows(
        tmp_path / "judgments.jsonl",
        [
            {"task_id": "t1", "judge": "J", "method": "M", "swap": False, "a": "c0", "b": "c1", "winner": "c0"},
            {"task_id": "t1", "judge": "J", "method": "M", "swap": True, "a": "c1", "b": "c0", "winner": "c1"},
            {"task_id": "t1", "judge": "K", "method": "M", "swap": False, "a": "c0", "b": "c1", "winner": "tie"},
            {"task_id": "t1", "judge": "K", "method": "M", "swap": True, "a": "c1", "b": "c0", "winner": None},
            {
                "task_id": "t1",
                "judge": "R",
                "method": "M",
                "swap": False,
                "a": "c0",
                "b": "c1",
                "winner": "c0",
                "score_a": 7.0,
                "score_b": 6.0,
            },
        ],
    )


def test_the_presentation_order_is_part_of_the_record(recording, task):
    judge = ReplayJudge(recording, judge="J")
    c0, c1 = task.candidates
    # J always picked the slot shown first: the two orders give opposite verdicts.
    assert judge.compare(task, c0, c1).winner is Winner.FIRST
    assert judge.compare(task, c1, c0).winner is Winner.FIRST
    judgment = judge.compare(task, c0, c1)
    assert (judgment.first_grade, judgment.second_grade) == task.scale[::-1]  # winner top, loser bottom
    assert judge.hits == 3 and not judge.misses


def test_recorded_scores_and_ties(recording, task):
    c0, c1 = task.candidates
    rated = ReplayJudge(recording, judge="R").compare(task, c0, c1)
    assert (rated.first_grade, rated.second_grade, rated.winner) == (7.0, 6.0, Winner.FIRST)
    verdict_only = ReplayJudge(recording, judge="R", scores="verdict").compare(task, c0, c1)
    assert (verdict_only.first_grade, verdict_only.second_grade) == (1.0, 0.0)
    tie = ReplayJudge(recording, judge="K", on_miss="tie").compare(task, c0, c1)
    assert tie.winner is Winner.TIE and tie.status is ParseStatus.OK
    assert tie.first_grade == tie.second_grade == 0.5


def test_a_miss_raises_by_default_and_names_the_comparison(recording):
    other = make_task([1.0, 0.0], task_id="unknown-task")
    judge = ReplayJudge(recording, judge="J")
    with pytest.raises(JudgeError, match="no recorded judgment for task 'unknown-task' with 'c0' shown first"):
        judge.compare(other, *other.candidates)
    assert judge.misses["unrecorded"] == 1


def test_a_null_winner_is_a_miss_too(recording, task):
    c0, c1 = task.candidates
    with pytest.raises(JudgeError, match="could not be parsed"):
        ReplayJudge(recording, judge="K").compare(task, c1, c0)
    judge = ReplayJudge(recording, judge="K", on_miss="tie")
    judgment = judge.compare(task, c1, c0)
    assert judgment.status is ParseStatus.FAILED and judgment.winner is Winner.TIE
    assert judgment.extras == {"replay_miss": "unparsed"}
    assert judge.misses == {"unparsed": 1}


def test_misses_are_counted_as_failures_in_the_run_cost(recording):
    three = make_task([2.0, 1.0, 0.0], task_id="t1")  # c2 never appears in the recording
    judge = ReplayJudge(recording, judge="J", on_miss="tie")
    cost = Cost()
    source = MatchSource(three, JudgmentMemo(judge, NullCache()))
    cost = source.cost
    source.compare_many([("c0", "c1"), ("c1", "c0"), ("c0", "c2"), ("c2", "c1")])
    assert cost.parse_failures == 2 and cost.judge_calls == 4
    assert judge.misses["unrecorded"] == 2 and judge.hits == 2


def test_filters_must_pick_one_judgment_per_comparison(recording):
    with pytest.raises(SpecError, match="more than once.*judges J, K, R.*judge=NAME"):
        make_judge(f"replay:{recording}")
    with pytest.raises(SpecError, match="no rows .* match judge=GPT-4; the file holds judges J, K, R"):
        make_judge(f"replay:{recording},judge=GPT-4")
    lazy = ReplayJudge(recording, judge="GPT-4")  # the constructor only stores its parameters
    with pytest.raises(SpecError, match="no rows"):
        lazy.table
    assert len(load_recorded(recording, judge="J", method="M")) == 2


@pytest.mark.parametrize(
    "row,needle",
    [
        ({"task_id": "t1", "a": "c0", "b": "c1", "winner": "c9"}, "field 'winner': 'c9' is neither"),
        ({"task_id": "t1", "a": "c0", "b": "c1"}, "field 'winner': missing field"),
        ({"task_id": "t1", "b": "c1", "winner": "c1"}, "field 'a': missing field"),
        (
            {"task_id": "t1", "a": "c0", "b": "c1", "winner": "c0", "score_a": "high"},
            "field 'score_a': expected a finite number",
        ),
    ],
)
def test_malformed_rows_name_the_line_and_field(tmp_path, row, needle):
    path = write_rows(tmp_path / "bad.jsonl", [{"task_id": "t0", "a": "c0", "b": "c1", "winner": "c0"}, row])
    with pytest.raises(TaskFormatError, match=":2:") as err:
        make_judge(f"replay:{path}")
    assert needle in str(err.value)


def test_fingerprint_follows_content_and_filter_not_path(recording, tmp_path):
    moved = tmp_path / "elsewhere" / "copy.jsonl"
    moved.parent.mkdir()
    shutil.copy(recording, moved)
    assert ReplayJudge(recording, judge="J").fingerprint == ReplayJudge(moved, judge="J").fingerprint
    assert ReplayJudge(recording, judge="J").fingerprint != ReplayJudge(recording, judge="K").fingerprint
    assert ReplayJudge(recording, judge="J").fingerprint != ReplayJudge(recording, judge="J", on_miss="tie").fingerprint
    with moved.open("a") as handle:
        handle.write(json.dumps({"task_id": "t2", "judge": "J", "a": "c0", "b": "c1", "winner": "c0"}) + "\n")
    assert ReplayJudge(recording, judge="J").fingerprint != ReplayJudge(moved, judge="J").fingerprint


def test_spec_parsing(recording):
    judge = make_judge(f"replay:{recording},judge=K,method=M,on_miss=tie,scores=verdict")
    assert (judge.judge_label, judge.method, judge.on_miss, judge.scores) == ("K", "M", "tie", "verdict")
    with pytest.raises(SpecError, match="exactly one recorded judgments file"):
        make_judge("replay:judge=K")
    with pytest.raises(SpecError, match="unknown option .typo. for replay; known: judge="):
        make_judge(f"replay:{recording},judge=K,typo=1")
    with pytest.raises(SpecError, match="on_miss must be one of"):
        make_judge(f"replay:{recording},judge=K,on_miss=guess")


def test_record_command_writes_a_replayable_grid(tmp_path):
    out = tmp_path / "grid.jsonl"
    runner = CliRunner()
    made = runner.invoke(
        main,
        ["record", "--judge", "sim:preset=gpt4", "--no-cache", "--out", str(out), "--label", "gpt4-sim", "--quiet"],
    )
    assert made.exit_code == 0, made.output
    first = json.loads(out.read_text().splitlines()[0])
    assert first["judge"] == "gpt4-sim" and first["method"] == "recorded"
    replayed = runner.invoke(
        main, ["compare", "--judge", f"replay:{out}", "--no-cache", "--quiet", "--strategies", "knockout:order=both"]
    )
    assert replayed.exit_code == 0, replayed.output
    missing = runner.invoke(
        main,
        [
            "compare",
            "--judge",
            f"replay:{out}",
            "--no-cache",
            "--quiet",
            "--strategies",
            "knockout",
            "--data",
            str(tasks_not_in_the_recording(tmp_path)),
        ],
    )
    assert missing.exit_code == 2 and "replay miss" in missing.output


def test_unparseable_recorded_rows_say_what_to_change_not_to_rerun(tmp_path):
    """A rerun of a replay that misses fails identically: the error names on_miss=tie and the file."""
    recording = write_rows(
        tmp_path / "nulls.jsonl",
        [{"task_id": "t1", "a": a, "b": b, "winner": None} for a, b in (("c0", "c1"), ("c1", "c0"))],
    )
    data = tmp_path / "t1.jsonl"
    data.write_text(
        json.dumps(
            {
                "task_id": "t1",
                "prompt": "p",
                "scale": [0, 10],
                "candidates": [
                    {"id": "c0", "text": "x", "human": {"points": 1.0}},
                    {"id": "c1", "text": "y", "human": {"points": 2.0}},
                ],
            }
        )
        + "\n"
    )
    for member in (f"replay:{recording}", f"panel:replay:{recording}+sim:preset=gpt4"):
        result = CliRunner().invoke(
            main,
            [
                "compare",
                "--judge",
                member,
                "--data",
                str(data),
                "--quiet",
                "--cache",
                str(tmp_path / "c.sqlite"),
                "--strategies",
                "knockout",
            ],
        )
        assert result.exit_code == 2, result.output
        assert "rerun the same command" not in result.output
        assert "on_miss=tie" in result.output and "fix the recorded file" in result.output


def tasks_not_in_the_recording(tmp_path: Path) -> Path:
    """A tasks file whose task ids are not in the sample's recording."""
    path = tmp_path / "other.jsonl"
    path.write_text(
        json.dumps(
            {
                "task_id": "zz",
                "prompt": "p",
                "candidates": [
                    {"id": "a", "text": "x", "human": {"s": 1}},
                    {"id": "b", "text": "y", "human": {"s": 0}},
                ],
            }
        )
        + "\n"
    )
    return path


# -- LLMBar: replay reproduces the recorded judges exactly ------------------------------------


def recorded_accuracy(path: Path, tasks, judge: str, method: str) -> tuple[float, int]:
    """LLMBar average accuracy straight from the file (a null winner scores 1/2), and the nulls."""
    preferred = {t.task_id: t.meta["preferred"] for t in tasks}
    rows = [json.loads(line) for line in path.read_text().splitlines()]
    rows = [r for r in rows if r["judge"] == judge and r["method"] == method]
    credits = [0.5 if r["winner"] is None else float(r["winner"] == preferred[r["task_id"]]) for r in rows]
    return sum(credits) / len(credits), sum(r["winner"] is None for r in rows)


@pytest.mark.parametrize("judge_name", ["GPT-4", "PaLM2", "LLaMA2"])
def test_replay_reproduces_recorded_accuracy_on_llmbar_natural(judge_name):
    tasks_path = shared_dataset("llmbar_natural")
    tasks = load_tasks(tasks_path)
    recording = SHARED_DATA / "llmbar_natural" / "judgments.jsonl"
    expected, nulls = recorded_accuracy(recording, tasks, judge_name, "Vanilla")
    judge = make_judge(f"replay:{recording},judge={judge_name},method=Vanilla,on_miss=tie")
    report = judge_report(tasks, judge, resamples=0)
    assert report["metrics"]["accuracy_single"]["value"] == pytest.approx(expected, abs=1e-12)
    assert report["counts"]["misses"] == report["counts"]["failed"] == nulls
    assert judge.misses["unparsed"] == nulls and judge.hits == 200 - nulls
    if judge_name == "GPT-4":
        assert expected == pytest.approx(0.955)  # the figure the sim preset was calibrated on
    if judge_name == "PaLM2":
        assert nulls == 4  # PaLM2/Vanilla has 4 unparsed answers on Natural


# -- recordings are validated like task files (issue 30) ------------------------------------------

PAIR = {"task_id": "t1", "judge": "J", "method": "M", "a": "c0", "b": "c1", "winner": "c0"}
CHOICE = {"task_id": "t1", "judge": "J", "method": "M", "kind": "choice", "shown": ["c0", "c1", "c2"], "chosen": "c1"}
ORDERING = {
    "task_id": "t1",
    "judge": "J",
    "method": "M",
    "kind": "ranking",
    "shown": ["c0", "c1", "c2"],
    "ranking": ["c1", "c0", "c2"],
}
BAD_RECORDINGS = [
    ("NaN score", {**PAIR, "score_a": float("nan"), "score_b": 6.0}, "score_a", "expected a finite number, got nan"),
    ("+1e308 score", {**PAIR, "score_a": 1e308, "score_b": 6.0}, "score_a", "outside [-1e+06, 1e+06]"),
    ("-1e308 score", {**PAIR, "score_a": 1.0, "score_b": -1e308}, "score_b", "outside [-1e+06, 1e+06]"),
    ("infinite score", {**PAIR, "score_a": float("inf")}, "score_a", "expected a finite number"),
    ("text score", {**PAIR, "score_a": "7"}, "score_a", "expected a finite number, got '7'"),
    ("same candidate twice", {**PAIR, "b": "c0"}, "b", "the same candidate as a"),
    ("list label", {**PAIR, "judge": ["J"]}, "judge", "expected a string or null"),
    ("text probabilities", {**CHOICE, "probabilities": "abcd"}, "probabilities", "expected a list of 3 numbers"),
    ("short probabilities", {**CHOICE, "probabilities": [0.5, 0.5]}, "probabilities", "expected a list of 3 numbers"),
    ("probability above 1", {**CHOICE, "probabilities": [0.2, 1.5, 0.0]}, "probabilities[1]", "outside [0, 1]"),
    ("NaN probability", {**CHOICE, "probabilities": [0.2, float("nan"), 0.0]}, "probabilities[1]", "finite"),
    ("probabilities over 1", {**CHOICE, "probabilities": [0.6, 0.6, 0.0]}, "probabilities", "more than 1"),
    ("grades too long", {**CHOICE, "grades": [1, 2, 3, 4]}, "grades", "expected a list of 3 numbers"),
    ("grades too short", {**CHOICE, "grades": [1, 2]}, "grades", "expected a list of 3 numbers"),
    ("1e308 grade", {**CHOICE, "grades": [1, 1e308, 2]}, "grades[1]", "outside"),
    ("text ranking", {**ORDERING, "ranking": "c1c0c2"}, "ranking", "not a list of every shown id"),
    ("ranking with a repeat", {**ORDERING, "ranking": ["c1", "c1", "c2"]}, "ranking", "exactly once"),
    ("chosen as a list", {**CHOICE, "chosen": ["c1"]}, "chosen", "not one of the shown ids"),
    ("shown holds null", {**CHOICE, "shown": ["c0", None]}, "shown", "distinct candidate ids"),
]


@pytest.mark.parametrize("name,row,field,message", BAD_RECORDINGS, ids=[b[0] for b in BAD_RECORDINGS])
def test_a_bad_recorded_value_names_file_line_and_field(tmp_path, name, row, field, message):
    path = write_rows(tmp_path / "judgments.jsonl", [PAIR, row])  # json.dumps writes NaN and Infinity as JSON does not
    with pytest.raises(TaskFormatError) as err:
        make_judge(f"replay:{path}")  # the recording is read when the judge is built, before anything runs
    assert (err.value.path, err.value.line, err.value.field) == (str(path), 2, field)
    assert message in err.value.message


@pytest.mark.parametrize(
    "row",
    [
        PAIR,
        CHOICE,
        ORDERING,
        {**PAIR, "score_a": -3, "score_b": 1e6},
        {**CHOICE, "probabilities": [0.2, 0.7, 0.1], "grades": [1, 9, 0]},
    ],
)
def test_well_formed_recordings_still_load(tmp_path, row):
    path = write_rows(tmp_path / "judgments.jsonl", [row])
    make_judge(f"replay:{path}")


@pytest.mark.parametrize("value,shown", [("NaN", "nan"), ("1e308", "1e+308"), ("-1e308", "-1e+308")])
def test_the_issues_recordings_exit_2_naming_the_line(tmp_path, value, shown):
    # Issue 30: NaN moved a candidate from 3rd to 1st with score null (exit 0); ±1e308 was a traceback.
    path = tmp_path / "judgments.jsonl"
    rows = [
        json.dumps({**PAIR, "a": a, "b": b, "winner": a, "score_a": 5, "score_b": 1})
        for a, b in (("a1", "a2"), ("a2", "a1"))
    ]
    rows.insert(
        1,
        json.dumps({**PAIR, "a": "a1", "b": "a3", "winner": "a1", "score_b": 1}).replace(
            '"score_b": 1', f'"score_a": {value}, "score_b": 1'
        ),
    )
    path.write_text("\n".join(rows) + "\n")
    result = CliRunner().invoke(main, ["rank", "--judge", f"replay:{path}", "--no-cache", "--quiet"])
    assert result.exit_code == 2, result.output
    assert f"{path}:2: field 'score_a':" in result.output and "Traceback" not in result.output


def test_a_recording_that_is_not_utf8_names_the_line(tmp_path):
    path = tmp_path / "judgments.jsonl"
    path.write_bytes((json.dumps(PAIR) + "\n").encode() + b'{"task_id": "t\xff"}\n')
    with pytest.raises(TaskFormatError, match=r":2: not valid UTF-8"):
        make_judge(f"replay:{path}")


def test_a_recorded_probability_is_the_verdicts_and_a_bad_one_names_its_line(tmp_path):
    path = tmp_path / "judgments.jsonl"
    rows = [
        {"task_id": "t", "a": "c0", "b": "c1", "winner": "c0", "probability": 0.8},
        {"task_id": "t", "a": "c1", "b": "c0", "winner": "c0"},
    ]
    path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    task = make_task([1.0, 0.0])
    judge = ReplayJudge(path)
    assert judge.compare(task, task.candidate("c0"), task.candidate("c1")).probability == pytest.approx(0.8, abs=1e-12)
    assert judge.compare(task, task.candidate("c1"), task.candidate("c0")).probability is None
    path.write_text(json.dumps({**rows[0], "probability": 1.5}) + "\n")
    with pytest.raises(TaskFormatError, match="probability") as raised:
        load_recorded(path)
    assert ":1" in str(raised.value) or "line 1" in str(raised.value)
