"""rankkit.reports.judge_report_pairs: both orders combined, and ratio intervals that resample tasks."""

from __future__ import annotations

import pytest

from rankkit.reports.judge_report_pairs import PairRecord, combine_orders, measure, ratio_estimate


def test_combine_orders():
    assert combine_orders("x", "x") == "x"
    assert combine_orders("x", "y") == "tie"
    assert combine_orders("x", "tie") == combine_orders(None, "x") == "x"
    assert combine_orders("tie", None) == "tie"
    assert combine_orders(None, None) is None


# -- intervals ---------------------------------------------------------------------------------


def test_bootstrap_is_seeded_and_collapses_on_identical_tasks():
    num, den = [1, 0, 2, 1, 0, 1], [2, 1, 2, 2, 1, 1]
    first, again = ratio_estimate(num, den, seed=3), ratio_estimate(num, den, seed=3)
    assert first == again and first.estimate == pytest.approx(5 / 9)
    assert first.low < first.estimate < first.high
    same = ratio_estimate([1, 1, 1, 1], [2, 2, 2, 2], seed=0)
    assert (same.estimate, same.low, same.high) == pytest.approx((0.5, 0.5, 0.5), abs=1e-12)
    lone = ratio_estimate([1, 0], [2, 0])  # a task with no denominator takes no part
    assert lone.estimate == pytest.approx(0.5, abs=1e-12) and lone.n == 2
    assert lone.low != lone.low  # one task: no interval (NaN)
    empty = ratio_estimate([0, 0], [0, 0])
    assert empty.n == 0 and empty.estimate != empty.estimate


def test_intervals_resample_tasks_not_judgments():
    """Many pairs in one task move the interval less than the same pairs spread over many tasks."""

    def records(tasks: int, pairs_per_task: int) -> list[PairRecord]:
        out = []
        for t in range(tasks):
            for p in range(pairs_per_task):
                right = t % 2 == 0  # whole tasks right or wrong
                out.append(
                    PairRecord(f"t{t}", f"a{p}", f"b{p}", "a0" if right else "b0", "a0" if right else "b0", "a0", None)
                )
        return out

    clustered = measure(records(4, 10), resamples=500)["accuracy_single"]
    spread = measure(records(40, 1), resamples=500)["accuracy_single"]
    assert (clustered.estimate, spread.estimate) == pytest.approx((0.5, 0.5), abs=1e-12)
    assert (clustered.high - clustered.low) > (spread.high - spread.low)
