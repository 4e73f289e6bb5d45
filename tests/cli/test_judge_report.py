"""``rankkit judge-report`` with several judges: repeated --judge, --recorded-judges over a replay file
holding several judges and methods, the side-by-side table and JSON, and bad option values (exit 2)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from tests.conftest import shared_dataset

# Two tasks of two candidates: the humans prefer x in t1 and y in t2. Judge "good" is always right,
# judge "first" always picks the first slot, under methods "m1" and "m2".
TASKS = [("t1", "x text that is long", "y", "x"), ("t2", "x", "y text that is longer", "y")]


def run_cli(*args: object):
    return CliRunner().invoke(main, [str(a) for a in args])


@pytest.fixture
def files(tmp_path: Path) -> tuple[Path, Path]:
    tasks_path, judgments_path = tmp_path / "tasks.jsonl", tmp_path / "judgments.jsonl"
    rows, recorded = [], []
    for task_id, x_text, y_text, best in TASKS:
        candidates = [
            {"id": "x", "text": x_text, "human": {"pref": float(best == "x")}},
            {"id": "y", "text": y_text, "human": {"pref": float(best == "y")}},
        ]
        rows.append({"task_id": task_id, "prompt": "p", "candidates": candidates})
        for method in ("m1", "m2"):
            for a, b in (("x", "y"), ("y", "x")):
                recorded.append({"task_id": task_id, "judge": "good", "method": method, "a": a, "b": b, "winner": best})
                recorded.append({"task_id": task_id, "judge": "first", "method": method, "a": a, "b": b, "winner": a})
    tasks_path.write_text("".join(json.dumps(row) + "\n" for row in rows))
    judgments_path.write_text("".join(json.dumps(row) + "\n" for row in recorded))
    return tasks_path, judgments_path


def test_recorded_judges_all_reports_every_judge_and_method_side_by_side(files, tmp_path):
    tasks_path, judgments_path = files
    out = tmp_path / "report.json"
    result = run_cli(
        "judge-report", "--data", tasks_path, "--judge", f"replay:{judgments_path}", "--recorded-judges", "all",
        "--no-cache", "-q", "--resamples", "50", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "4 judges on the same 2 pairs of 2 tasks" in result.output
    for header in ("acc_1order", "kappa", "alpha", "ece", "ece_orders", "consistency", "first_slot"):
        assert header in result.output
    reports = json.loads(out.read_text())["reports"]
    labels = [report["judge"]["spec"].split(",", 1)[1] for report in reports]
    assert labels == ["judge=good,method=m1", "judge=first,method=m1", "judge=good,method=m2", "judge=first,method=m2"]
    good, first = reports[0]["metrics"], reports[1]["metrics"]
    assert good["kappa"]["value"] == pytest.approx(1.0, abs=1e-9)
    # Always the first slot: right in one order of each pair, so no better than chance.
    assert first["accuracy_single"]["value"] == pytest.approx(0.5, abs=1e-9)
    assert first["kappa"]["value"] == pytest.approx(0.0, abs=1e-9)
    # Its order votes say P(x) = 1/2 on both pairs, and x wins one of the two: calibrated.
    assert first["ece_orders"]["value"] == pytest.approx(0.0, abs=1e-9)
    assert good["ece_orders"]["value"] == pytest.approx(0.0, abs=1e-9)
    assert good["ece"]["value"] is None  # no probability recorded: n/a
    assert {report["pairs"] for report in reports} == {2}


def test_recorded_judges_by_name_and_by_judge_and_method(files, tmp_path):
    tasks_path, judgments_path = files
    out = tmp_path / "report.json"
    args = ["judge-report", "--data", tasks_path, "--judge", f"replay:{judgments_path}", "--no-cache", "-q"]
    result = run_cli(*args, "--recorded-judges", "good,first/m2", "--resamples", "0", "--out", out)
    assert result.exit_code == 0, result.output
    specs = [report["judge"]["spec"] for report in json.loads(out.read_text())["reports"]]
    assert [spec.split(",", 1)[1] for spec in specs] == [
        "judge=good,method=m1",
        "judge=good,method=m2",
        "judge=first,method=m2",
    ]
    # One selected judge prints the full single-judge report and writes it as itself.
    one = run_cli(*args, "--recorded-judges", "good/m1", "--resamples", "0", "--out", out)
    assert one.exit_code == 0 and "Cohen's kappa vs humans" in one.output and "by length difference" in one.output
    assert json.loads(out.read_text())["judge"]["spec"].endswith("judge=good,method=m1")


def test_repeated_judge_reports_each_on_the_same_pairs(sample_tasks, tmp_path):
    out = tmp_path / "report.json"
    result = run_cli(
        "judge-report", "--judge", "sim:preset=gpt4", "--judge", "sim:preset=chatgpt", "--cache", tmp_path / "c.sqlite",
        "-q", "--resamples", "20", "--pairs-per-task", "3", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    assert "2 judges on the same" in result.output
    assert "sim:preset=gpt4" in result.output and "sim:preset=chatgpt" in result.output
    reports = json.loads(out.read_text())["reports"]
    assert [r["judge"]["spec"] for r in reports] == ["sim:preset=gpt4", "sim:preset=chatgpt"]
    assert reports[0]["pairs"] == reports[1]["pairs"] == 3 * len(sample_tasks)
    assert reports[0]["length_buckets"] == [] or [b["pairs"] for b in reports[0]["length_buckets"]] == [
        b["pairs"] for b in reports[1]["length_buckets"]
    ]


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "expected 'all' or a comma-separated list"),
        ("good,,first", "expected 'all' or a comma-separated list"),
        ("good/", "expected 'all' or a comma-separated list"),
        ("nosuch", "records no nosuch"),
        ("good/m3", "records no good/m3"),
    ],
)
def test_bad_recorded_judges_exit_2(files, value, message):
    tasks_path, judgments_path = files
    result = run_cli(
        "judge-report", "--data", tasks_path, "--judge", f"replay:{judgments_path}", "--recorded-judges", value,
        "--no-cache", "-q",
    )  # fmt: skip
    assert result.exit_code == 2, result.output
    assert message in result.output


def test_recorded_judges_needs_a_replay_judge_and_safe_labels(files):
    tasks_path, judgments_path = files
    base = ["judge-report", "--data", tasks_path, "--no-cache", "-q", "--recorded-judges", "all"]
    assert run_cli(*base).exit_code == 2  # no --judge
    not_replay = run_cli(*base, "--judge", "sim")
    assert not_replay.exit_code == 2 and "needs replay:FILE" in not_replay.output
    row = {"task_id": "t1", "judge": "x,on_miss=tie", "method": "m", "a": "x", "b": "y", "winner": "x"}
    judgments_path.write_text(json.dumps(row) + "\n")
    unsafe = run_cli(*base, "--judge", f"replay:{judgments_path}")
    assert unsafe.exit_code == 2 and "cannot be selected" in unsafe.output


def test_a_bad_later_judge_stops_the_command_before_the_first_judges(tmp_path):
    cache = tmp_path / "cache.sqlite"
    result = run_cli("judge-report", "--judge", "sim", "--judge", "sim:nosuch=1", "--cache", cache, "-q")
    assert result.exit_code == 2 and "unknown option 'nosuch'" in result.output
    assert "judge calls" not in result.output  # nothing was judged


def test_bad_pairs_and_resamples_exit_2():
    for option in ("--pairs-per-task", "--resamples"):
        result = run_cli("judge-report", "--judge", "sim", "--no-cache", "-q", option, "-1")
        assert result.exit_code == 2, result.output


def test_every_judge_recorded_on_llmbar_natural_gets_kappa_and_calibration(tmp_path):
    tasks_path = shared_dataset("llmbar_natural")
    judgments = tasks_path.parent / "judgments.jsonl"
    out = tmp_path / "report.json"
    result = run_cli(
        "judge-report", "--data", tasks_path, "--judge", f"replay:{judgments},on_miss=tie",
        "--recorded-judges", "GPT-4/Vanilla,LLaMA2/Vanilla", "--no-cache", "-q", "--resamples", "50", "--out", out,
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    reports = json.loads(out.read_text())["reports"]
    assert len(reports) == 2 and reports[0]["pairs"] == reports[1]["pairs"] == 100
    for report in reports:
        assert -1.0 <= report["metrics"]["kappa"]["value"] <= 1.0
        assert 0.0 <= report["metrics"]["ece_orders"]["value"] <= 1.0
    # GPT-4 agrees with the LLMBar labels far better than LLaMA-2 (paper: 0.93 vs 0.70 average accuracy).
    assert reports[0]["metrics"]["kappa"]["value"] > reports[1]["metrics"]["kappa"]["value"]
