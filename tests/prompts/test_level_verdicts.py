"""Reading a verdict level from a judge's text or label probabilities (rankkit.prompts.level_verdicts)."""

import math

import pytest

from rankkit.prompts.level_verdicts import level_instruction, level_probabilities, level_reading, parse_level


def test_the_instruction_lists_the_scale_labels():
    text = level_instruction("graded")
    for label in ("[[A>>B]]", "[[A>B]]", "[[A=B]]", "[[B>A]]", "[[B>>A]]"):
        assert label in text


@pytest.mark.parametrize(
    ("text", "level"),
    [
        ("Both fine. [[A=B]]", 0),
        ("B is far better.\nFinal verdict: [[ B >> A ]]", -2),
        ("[[A>B]] ... again [[A>B]]", 1),
    ],
)
def test_parse_level_reads_the_judges_label(text, level):
    assert parse_level(text, "graded").level == level


@pytest.mark.parametrize(
    ("text", "scale", "error"),
    [
        ("no verdict here", "graded", "no \\[\\[A>B\\]\\]"),
        ("[[A>>B]]", "tie", "not on the tie scale"),
        ("[[A=B]]", "binary", "not on the binary scale"),
        ("[[A>B]] then [[B>A]]", "graded", "ambiguous"),
        ("[[B=A]]", "graded", "not on the graded scale"),
    ],
)
def test_parse_level_fails_clearly(text, scale, error):
    parsed = parse_level(text, scale)
    assert parsed.level is None and parsed.error is not None
    assert __import__("re").search(error, parsed.error)


def test_label_probabilities_are_renormalised_over_the_scale():
    probabilities = level_probabilities(
        {"A>B": math.log(0.3), "A=B": math.log(0.1), "B>A": math.log(0.1), "x": 0.0}, "tie"
    )
    assert probabilities == pytest.approx({1: 0.6, 0: 0.2, -1: 0.2}, abs=1e-12)
    assert level_reading(probabilities) == (1, pytest.approx(0.7, abs=1e-12))
    assert level_probabilities({}, "graded") is None
