"""Choosing a template per task: the rule, families, user template files, and the template's identity."""

from __future__ import annotations

import pytest

from rankkit.prompts import (
    PAIRWISE,
    POINTWISE,
    TemplateChoice,
    auto_template_name,
    render_pairwise,
)
from tests.prompts.conftest import make_task


@pytest.mark.parametrize(
    "meta, reference, kind, expected",
    [
        ({}, None, POINTWISE, "paper-pointwise-en"),
        ({"language": "en"}, "4", PAIRWISE, "paper-pairwise-en-ref"),
        ({"language": "de"}, None, PAIRWISE, "paper-pairwise-de"),
        ({"language": "de"}, "4", POINTWISE, "paper-pointwise-de-ref"),
        ({"domain": "machine translation (WMT23)", "language": "en-de"}, None, PAIRWISE, "mt-pairwise"),
        ({"domain": "knowledge-grounded dialogue", "language": "en"}, None, PAIRWISE, "generic-pairwise"),
        ({"domain": "news summarization"}, "a summary", POINTWISE, "generic-pointwise-ref"),
        ({"domain": "university exam questions"}, None, POINTWISE, "paper-pointwise-en"),
    ],
)
def test_auto_choice(meta, reference, kind, expected):
    task = make_task(meta, reference)
    assert auto_template_name(task, kind) == expected
    assert TemplateChoice("auto").template(task, kind).name == expected


def test_family_override_keeps_language_and_reference_variants():
    dialogue = make_task({"domain": "dialogue", "language": "de"}, reference="ref")
    assert TemplateChoice("paper").template(dialogue, PAIRWISE).name == "paper-pairwise-de-ref"
    assert TemplateChoice("generic").template(make_task({}), POINTWISE).name == "generic-pointwise"


def test_user_template_file_overrides_its_kind_only(tmp_path):
    path = tmp_path / "mine.txt"
    path.write_text(
        'Q: {question}\nA1: {answer_1}\nA2: {answer_2}\nJSON like {"x": 1} stays.\n'
        "Reply Answer 1: X/{max_points} Answer 2: Y/{max_points}",
        encoding="utf-8",
    )
    choice = TemplateChoice(str(path))
    task = make_task({"language": "de"})
    mine = choice.template(task, PAIRWISE)
    assert mine.kind == PAIRWISE and mine.name == "mine"
    assert choice.template(task, POINTWISE).name == "paper-pointwise-de"
    text = render_pairwise(mine, task, task.candidates[0], task.candidates[1], 4.0)
    assert text.startswith('Q: What is 2+2?\nA1: It is 4.\nA2: It is 5.\nJSON like {"x": 1} stays.')
    assert choice.fingerprint()[PAIRWISE] == {"mine": mine.sha}


def test_two_user_templates_joined_with_plus(tmp_path):
    pair, point = tmp_path / "p.txt", tmp_path / "s.txt"
    pair.write_text("{question} {answer_1} {answer_2}", encoding="utf-8")
    point.write_text(
        "---\nname: my-grader\nkind: pointwise\nscore_prefix: Grade:\n---\n{question} {answer}", encoding="utf-8"
    )
    choice = TemplateChoice(f"{pair}+{point}")
    task = make_task()
    assert choice.template(task, PAIRWISE).path == str(pair)
    grader = choice.template(task, POINTWISE)
    assert grader.name == "my-grader" and grader.score_prefix == "Grade:"


def test_template_text_is_part_of_the_identity(tmp_path):
    path = tmp_path / "t.txt"
    path.write_text("Grade {answer} for {question}", encoding="utf-8")
    before = TemplateChoice(str(path)).fingerprint()
    path.write_text("Grade {answer} for {question}!", encoding="utf-8")
    assert TemplateChoice(str(path)).fingerprint() != before
