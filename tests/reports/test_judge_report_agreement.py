"""judge-report's agreement figures on the hand-built fixture of test_judge_report: kappa, alpha, the
calibration errors and the length buckets (tolerance 1e-9)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.reports.judge_report import judge_report
from tests.reports import test_judge_report

TOLERANCE = 1e-9
FIXTURE_VERDICTS = test_judge_report.FIXTURE_VERDICTS
fixture_files = test_judge_report.fixture_files  # the four-task fixture: tasks.jsonl and its recording

# The judge's P(first shown wins) per (task, order), None where the row states none. As P(x wins):
# t1 0.9 / 0.4, t2 0.2 / 0.3, t3 0.45 / -, t4 (failed, ignored) / 0.9.
FIXTURE_PROBABILITIES = {"t1": (0.9, 0.6), "t2": (0.2, 0.7), "t3": (0.45, None), "t4": (0.8, 0.1)}


@pytest.fixture
def report(fixture_files: tuple[Path, Path]) -> dict:
    tasks_path, judgments_path = fixture_files
    with judgments_path.open("w") as handle:  # the same verdicts, now with probabilities
        for task_id, (x_first, y_first) in FIXTURE_VERDICTS.items():
            p_x_first, p_y_first = FIXTURE_PROBABILITIES[task_id]
            for a, b, winner, p in (("x", "y", x_first, p_x_first), ("y", "x", y_first, p_y_first)):
                handle.write(
                    json.dumps({"task_id": task_id, "a": a, "b": b, "winner": winner, "probability": p}) + "\n"
                )
    return judge_report(load_tasks(tasks_path), make_judge(f"replay:{judgments_path},on_miss=tie"), resamples=200)


def test_kappa_and_alpha_by_hand(report):
    # Units (judge category, human category), failed left out; 0 = x, 1 = y, 2 = tie; humans: x y x x.
    # t1 (0,0) (1,0); t2 (1,1) (1,1); t3 (1,0) (2,0); t4 (0,0): n = 7, p_o = 4/7,
    # judge totals (2, 4, 1), human totals (5, 2, 0): p_e = 18/49, kappa = (4/7 - 18/49) / (31/49) = 10/31.
    kappa = report["metrics"]["kappa"]
    assert kappa["value"] == pytest.approx(10 / 31, abs=TOLERANCE) and kappa["n"] == 7
    assert kappa["low"] <= kappa["value"] <= kappa["high"]
    # Coincidences o00 4, o01 2, o02 1, o11 4: n = 14, 6 disagreeing, n_c (7, 6, 1):
    # alpha = 1 - 13 * 6 / (196 - 86) = 16/55.
    assert report["metrics"]["alpha"]["value"] == pytest.approx(16 / 55, abs=TOLERANCE)


def test_the_calibration_errors_by_hand(report):
    # The judge's P(x wins) against human == x: see tests/stats/test_agreement.py::test_ece_by_hand.
    ece = report["metrics"]["ece"]
    assert ece["value"] == pytest.approx(1.85 / 6, abs=TOLERANCE) and ece["n"] == 6
    # Order votes on pairs decided in both orders: t1 (x, y) 0.5 vs 1, t2 (y, y) 0 vs 0, t3 (y, tie) 0.25 vs 1.
    orders = report["metrics"]["ece_orders"]
    assert orders["value"] == pytest.approx((0.5 + 0.75) / 3, abs=TOLERANCE) and orders["n"] == 3
    assert report["calibration_bins"] == 10


def test_a_judge_without_probabilities_has_no_ece(fixture_files):
    tasks_path, judgments_path = fixture_files  # the fixture's rows carry no probability
    plain = judge_report(load_tasks(tasks_path), make_judge(f"replay:{judgments_path},on_miss=tie"), resamples=0)
    assert plain["metrics"]["ece"] == {"value": None, "low": None, "high": None, "n": None}
    assert plain["metrics"]["ece_orders"]["value"] == pytest.approx(1.25 / 3, abs=TOLERANCE)


def test_the_length_buckets_by_hand(report):
    # Length differences t1 10, t2 11, t3 0, t4 20; tercile edges 10 and 11 (numpy's linear quantiles):
    # [0] t3 0.5/2, [10] t1 1/2, [11, 20] t2 + t4 (2 + 1.5)/4.
    buckets = report["length_buckets"]
    assert [(b["low"], b["high"], b["pairs"]) for b in buckets] == [(0, 0, 1), (10, 10, 1), (11, 20, 2)]
    values = [b["accuracy_single"]["value"] for b in buckets]
    assert values == pytest.approx([0.25, 0.5, 0.875], abs=TOLERANCE)
