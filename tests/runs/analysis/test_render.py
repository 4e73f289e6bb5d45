"""rankkit.runs.analysis.render: the analysis as text tables and strict JSON."""

from __future__ import annotations

import json

import pytest

from rankkit.runs import analysis
from rankkit.stats.intervals import Interval


def test_analyze_and_its_text(results):
    report = analysis.analyze(results, by=["difficulty", "system"], resamples=50)
    assert report["baseline"] == "ko"  # no `individual` here: the first strategy
    assert [d["a"] for d in report["differences"]] == ["pw", "oracle"]
    assert [e["strategy"] for e in report["elimination_rounds"]] == ["ko"]
    text = analysis.format_analysis(report)
    headings = [
        "(a) agreement",
        "(b) difference",
        "(c) elimination",
        "(d) aggregate",
        "(e) by difficulty",
        "(f) by system",
        "(g) judge bias",
    ]
    at = [text.index(heading) for heading in headings]
    assert at == sorted(at)  # lettered in the order printed
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
    signed = next(r for r in rows if r["section"].startswith("(b) difference"))
    float(signed["difference"]), float(signed["difference low"])  # differences are plain numbers too


def test_json_tables_give_intervals_as_numbers_and_the_table_keeps_the_short_form(results):
    report = analysis.analyze(results, resamples=50)
    sections = json.loads(analysis.format_analysis(report, "json"))
    first = sections[0]["rows"][0]
    assert isinstance(first["spearman"], float) and isinstance(first["spearman high"], float)
    text = analysis.format_analysis(report, "table")
    assert "spearman low" not in text
    assert report["correlations"][0]["metrics"]["spearman"].text() in text
    assert "+" in analysis.format_analysis(report, "markdown").split("(b) difference")[1]  # signed differences


def test_every_section_is_lettered_in_print_order_and_explained_in_one_line(results):
    text = analysis.format_analysis(analysis.analyze(results, by=["system"], resamples=50))
    blocks = text.split("\n\n")[1:]  # after the preamble
    letters = [block.split(")")[0].lstrip("(") for block in blocks]
    assert letters == list("abcdefghijklmnopqrstuvwxyz"[: len(blocks)])
    for block in blocks:
        title, explanation, *_ = block.splitlines()
        assert not explanation.startswith("---") and explanation.split()[0] not in ("strategy", "view", "term")


def test_no_negative_zero_anywhere(results):
    report = analysis.analyze(results, by=["system"], resamples=50)
    for fmt in ("table", "markdown"):
        assert "-0.000" not in analysis.format_analysis(report, fmt)
    assert analysis.render._signed(Interval(-1e-9, -0.2, 0.3)) == "+0.000 [-0.200, +0.300]"


def test_a_narrow_width_leaves_columns_out_and_says_so(results):
    report = analysis.analyze(results, resamples=50)
    fitted = analysis.format_analysis(report, "table", width=100)
    agreement = fitted.split("\n\n")[1]
    assert "not shown, to fit 100 columns: comparisons, grades" in agreement
    assert "comparisons" not in agreement.splitlines()[-3]  # the header row
    assert "comparisons  grades" in analysis.format_analysis(report, "table").split("\n\n")[1]


def test_usd_and_the_bill_are_shown_when_the_judgments_cost_money(results):
    results.strategies[0].cost.usd = 0.0125
    results.strategies[0].cost.judge_calls = max(results.strategies[0].cost.judge_calls, 1)
    report = analysis.analyze(results, resamples=50)
    text = analysis.format_analysis(report)
    agreement = text.split("\n\n")[1]
    assert " usd " in agreement and "0.013" in agreement
    assert "usd 0.0125" in text.split("\n\n")[0]  # the total in the preamble
    assert report["bill"]["usd"] == pytest.approx(0.0125 + sum(s.cost.usd for s in results.strategies[1:]), abs=1e-12)
