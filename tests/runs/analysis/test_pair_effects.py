"""rankkit.runs.analysis.pair_effects: the judge's pair-effect sd from a run (``rankkit analyze --pair-effects``)."""

from __future__ import annotations

import json

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.runs.analysis.pair_effects import pair_effect_record, task_outcomes


def test_each_distinct_judgment_is_one_outcome_for_the_first_shown(results):
    """The hand results: ko's 9 judgments plus pw's reversed (b, a) in each task, 12 distinct in all."""
    outcomes = task_outcomes(results)
    assert sum(len(found) for found in outcomes.values()) == 12
    assert all(outcome in (0.0, 0.5, 1.0) for found in outcomes.values() for _, _, outcome in found)


def test_the_record_sums_to_one_and_names_the_spec_to_pass_on(results):
    record = pair_effect_record(results)
    assert sum(record["posterior"]) == pytest.approx(1.0, abs=1e-9)
    assert record["upper"] in record["grid"] and record["best"] <= max(record["grid"])
    assert record["spec"] == f"stopping=pair_effects,pair_sd={record['upper']:g}"
    assert record["judgments"] <= 12


def test_analyze_prints_the_posterior_only_when_asked(tmp_path, results):
    results_path = tmp_path / "results.json"
    results_path.write_text(json.dumps(results.to_dict()), encoding="utf-8")
    plain = CliRunner().invoke(main, ["analyze", str(results_path), "--robustness-budget", "0"])
    assert plain.exit_code == 0 and "pair-effect sd" not in plain.output
    asked = CliRunner().invoke(
        main, ["analyze", str(results_path), "--robustness-budget", "0", "--pair-effects", "--format", "json"]
    )
    assert asked.exit_code == 0, asked.output
    record = json.loads(asked.output)["pair_effects"]
    assert record["spec"].startswith("stopping=pair_effects,pair_sd=")
