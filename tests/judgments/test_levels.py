"""Verdict scales and the level a verdict keeps (rankkit.judgments.levels and Verdict.level)."""

import pytest

from rankkit.judgments.levels import check_scale, label_level, level_label, level_winner, scale_labels, scale_levels
from rankkit.judgments.values import Verdict, Winner


def test_scales_have_their_levels_strongest_first():
    assert scale_levels("binary") == (1, -1)
    assert scale_levels("tie") == (1, 0, -1)
    assert scale_labels("graded") == ("A>>B", "A>B", "A=B", "B>A", "B>>A")


def test_an_unknown_scale_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match="binary, tie, graded"):
        check_scale("five")


@pytest.mark.parametrize("level", [2, 1, 0, -1, -2])
def test_label_and_level_round_trip(level):
    assert label_level(level_label(level)) == level


def test_level_winner():
    assert [level_winner(lv) for lv in (2, 0, -1)] == [Winner.FIRST, Winner.TIE, Winner.SECOND]


@pytest.mark.parametrize("level", [2, 1, 0, -1, -2])
def test_swapping_mirrors_the_level(level):
    verdict = Verdict(first_grade=1.0, second_grade=0.0, winner=level_winner(level), level=level)
    assert verdict.swapped().level == -level
    assert verdict.swapped().swapped() == verdict


def test_the_level_survives_the_cache_json():
    verdict = Verdict(first_grade=1.0, second_grade=0.0, winner=Winner.FIRST, level=2)
    assert verdict.to_dict()["level"] == 2
    assert Verdict.from_dict(verdict.to_dict()) == verdict


def test_a_binary_verdict_keeps_its_json_form():
    verdict = Verdict(first_grade=1.0, second_grade=0.0, winner=Winner.FIRST)
    assert "level" not in verdict.to_dict()
    assert Verdict.from_dict(verdict.to_dict()).level is None


@pytest.mark.parametrize("stored", [3, -3, True, 1.5, "A>>B"])
def test_a_stored_level_of_the_wrong_shape_is_refused(stored):
    data = {**Verdict(first_grade=1.0, second_grade=0.0, winner=Winner.FIRST).to_dict(), "level": stored}
    with pytest.raises(ValueError, match="level"):
        Verdict.from_dict(data)
