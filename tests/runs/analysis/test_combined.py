"""rankkit.runs.analysis.combined: every analysis at once, and the `rankkit analyze` command."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.specs import SpecError
from rankkit.runs import analysis
from rankkit.runs.results import RunResult
from tests.runs.analysis.hand import hand_results


def test_analyze_command_writes_json(results, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hand_results()), encoding="utf-8")
    out = tmp_path / "a.json"
    outcome = CliRunner().invoke(
        main,
        ["analyze", str(path), "--by", "difficulty", "--baseline", "oracle", "--bootstrap", "30", "--out", str(out)],
    )
    assert outcome.exit_code == 0, outcome.output
    # ko - oracle on task_spearman: (1 - 1 + 0.8) / 3 - 1 = -0.733
    assert "ko - oracle" in outcome.output and "-0.733" in outcome.output
    saved = json.loads(out.read_text())
    ko = next(r for r in saved["correlations"] if r["strategy"] == "ko")
    assert ko["metrics"]["pearson"]["estimate"] == pytest.approx(4 / 15)
    assert set(saved["breakdowns"]["difficulty"]) == {"ko", "pw", "oracle"}


def test_analyze_command_reports_bad_input(results, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hand_results()), encoding="utf-8")
    runner = CliRunner()
    for args, message in (
        (["--baseline", "nope"], "no strategy 'nope'"),
        (["--by", "colour"], "cannot break down"),
        (["--metrics", "pearson,bogus"], "unknown metric"),
    ):
        outcome = runner.invoke(main, ["analyze", str(path), "--bootstrap", "0", *args])
        assert outcome.exit_code == 2 and message in outcome.output, (args, outcome.output)
    bad = tmp_path / "bad.json"
    bad.write_text('{"strategies": 3}', encoding="utf-8")
    outcome = runner.invoke(main, ["analyze", str(bad)])
    assert outcome.exit_code == 2 and "strategies" in outcome.output
    missing = runner.invoke(main, ["analyze", str(tmp_path / "missing.json")])
    assert missing.exit_code == 2 and "not found" in missing.output


def test_unlabelled_results_have_nothing_to_analyse():
    from tests.reports.test_report import unlabelled

    with pytest.raises(SpecError, match="no human scores"):
        analysis.analyze(RunResult.from_dict(unlabelled(hand_results())), resamples=0)
