"""rankkit.runs.analysis.elimination: (b) first-round losers against the rest, on the hand-built bracket."""

from __future__ import annotations

from dataclasses import replace

import pytest
from scipy import stats

from rankkit.runs import analysis
from tests.runs.analysis.hand import HUMAN, IDS, KO


def test_elimination_split_on_constructed_bracket(results):
    item = analysis.elimination_rounds(results, "ko", resamples=0)
    first, later = item["groups"]["first round"], item["groups"]["later rounds"]
    # a and c lose in round 1 in every task; b (round 2) and d (champion) go further.
    assert first["candidates"] == 6 and later["candidates"] == 6
    assert (first["mean_played"], later["mean_played"]) == pytest.approx((1.0, 2.0), abs=1e-12)
    scores = {t: dict(zip(IDS, KO[t])) for t in KO}
    human = {t: dict(zip(IDS, HUMAN[t])) for t in HUMAN}
    expected_first = stats.pearsonr([scores[t][c] for t in KO for c in "ac"], [human[t][c] for t in KO for c in "ac"])[
        0
    ]
    expected_later = stats.pearsonr([scores[t][c] for t in KO for c in "bd"], [human[t][c] for t in KO for c in "bd"])[
        0
    ]
    assert first["correlation"].estimate == pytest.approx(expected_first)
    assert later["correlation"].estimate == pytest.approx(expected_later)
    assert item["difference"].estimate == pytest.approx(expected_later - expected_first)
    assert [r["eliminated"] for r in item["rounds"]] == ["round 1", "round 2", "champion"]
    assert [r["candidates"] for r in item["rounds"]] == [6, 3, 3]


def test_a_bye_then_a_loss_is_a_later_round_but_graded_once(results):
    # In t1, c gets a bye in round 1 and loses in round 2: eliminated later, yet graded once.
    extras = results.strategies[0].tasks[0].extras
    extras["c"] = replace(extras["c"], eliminated_round=2, played=1, byes=1)
    item = analysis.elimination_rounds(results, "ko", resamples=0)
    assert item["groups"]["first round"]["candidates"] == 5
    assert item["groups"]["later rounds"]["candidates"] == 7
    assert item["by_played"]["groups"]["graded once"]["candidates"] == 6
    assert item["by_played"]["groups"]["graded several times"]["candidates"] == 6


def test_strategies_without_rounds_have_no_elimination_analysis(results):
    assert analysis.elimination_rounds(results, "pw") is None
    assert analysis.elimination_rounds(results, "oracle") is None
    assert analysis.strategy_run(results, "ko").has_elimination_rounds
