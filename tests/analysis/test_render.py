"""rankkit.analysis.render: the analysis as text tables and strict JSON."""

from __future__ import annotations

import json

from rankkit import analysis


def test_analyze_and_its_text(results):
    report = analysis.analyze(results, by=["difficulty", "system"], resamples=50)
    assert report["baseline"] == "ko"  # no `individual` here: the first strategy
    assert [d["a"] for d in report["differences"]] == ["pw", "oracle"]
    assert [e["strategy"] for e in report["elimination_rounds"]] == ["ko"]
    text = analysis.format_analysis(report)
    for heading in ("(a) agreement", "(e) difference", "(b) elimination", "(d) aggregate", "(c) by difficulty",
                    "(c) by system", "judge bias"):
        assert heading in text
    json.dumps(analysis.to_jsonable(report), allow_nan=False)  # strict JSON
