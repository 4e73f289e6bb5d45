"""rankkit.analysis.judge_bias: position and length bias over the distinct comparisons, by hand."""

from __future__ import annotations

import pytest

from rankkit import analysis


def test_position_bias_by_hand(results):
    bias = analysis.position_bias(results)
    # Distinct judgments: ko's 9 (the first slot wins only t2's final) plus pw's reversed (b, a)
    # in each task (first wins in t1 and t2): 3 of 12.
    assert bias["matches"] == 12 and bias["ties"] == 0
    assert bias["first_slot_win_rate"].estimate == pytest.approx(3 / 12)
    # (a, b) and (b, a): b won both in t1 and t2, a and b split in t3.
    assert bias["order_consistency"].estimate == pytest.approx(2 / 3)
    # The first-shown one is human-better in (b, a) of t1 and t3, and in (a, b) and (c, d) of t2.
    assert bias["human_first_better"].estimate == pytest.approx(4 / 12)
    only_ko = analysis.position_bias(results, "ko")
    assert only_ko["first_slot_win_rate"].estimate == pytest.approx(1 / 9)


def test_length_bias_by_hand(results):
    bias = analysis.length_bias(results)
    # The later letter is always longer and wins every comparison except t3's (b, a).
    assert bias["matches"] == 12
    assert bias["longer_win_rate"].estimate == pytest.approx(11 / 12)
    # Humans prefer the longer answer in t1 and t3 (4 comparisons each), never in t2.
    assert bias["human_longer_better"].estimate == pytest.approx(8 / 12)
    interval = bias["longer_win_rate"]
    assert interval.low < 11 / 12 < interval.high
