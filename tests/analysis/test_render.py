"""rankkit.analysis.render: the analysis as text tables and strict JSON."""

from __future__ import annotations

import json

import pytest

from rankkit import analysis


def test_analyze_and_its_text(results):
    report = analysis.analyze(results, by=["difficulty", "system"], resamples=50)
    assert report["baseline"] == "ko"  # no `individual` here: the first strategy
    assert [d["a"] for d in report["differences"]] == ["pw", "oracle"]
    assert [e["strategy"] for e in report["elimination_rounds"]] == ["ko"]
    text = analysis.format_analysis(report)
    for heading in (
        "(a) agreement",
        "(e) difference",
        "(b) elimination",
        "(d) aggregate",
        "(c) by difficulty",
        "(c) by system",
        "judge bias",
    ):
        assert heading in text
    json.dumps(analysis.to_jsonable(report), allow_nan=False)  # strict JSON


def test_csv_gives_each_interval_as_estimate_low_and_high_at_full_precision(results):
    # Issue 24, item 12: the CSV promised full precision but held cells like "0.680 [0.631, 0.722]".
    import csv
    import io

    report = analysis.analyze(results, by=["system"], resamples=50)
    rows = list(csv.DictReader(io.StringIO(analysis.format_analysis(report, "csv"))))
    agreement = [r for r in rows if r["section"].startswith("(a) agreement")]
    for row, computed in zip(agreement, report["correlations"]):
        interval = computed["metrics"]["spearman"]
        assert float(row["spearman"]) == pytest.approx(interval.estimate, abs=1e-12)
        assert float(row["spearman low"]) == pytest.approx(interval.low, abs=1e-12)
        assert float(row["spearman high"]) == pytest.approx(interval.high, abs=1e-12)
    for row in rows:  # no cell anywhere is an interval's text
        assert not any("[" in (value or "") for value in row.values())
    signed = next(r for r in rows if r["section"].startswith("(e) difference"))
    float(signed["difference"]), float(signed["difference low"])  # differences are plain numbers too


def test_json_tables_give_intervals_as_numbers_and_the_table_keeps_the_short_form(results):
    report = analysis.analyze(results, resamples=50)
    sections = json.loads(analysis.format_analysis(report, "json"))
    first = sections[0]["rows"][0]
    assert isinstance(first["spearman"], float) and isinstance(first["spearman high"], float)
    text = analysis.format_analysis(report, "table")
    assert "spearman low" not in text
    assert report["correlations"][0]["metrics"]["spearman"].text() in text
    assert "+" in analysis.format_analysis(report, "markdown").split("(e) difference")[1]  # signed differences
