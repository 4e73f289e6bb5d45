"""Prompt templates: the built-in files, their header and fields, and bad templates rejected with a reason."""

from __future__ import annotations

import pytest

from rankkit.prompts import (
    PAIRWISE,
    TemplateError,
    builtin_templates,
    load_template,
    parse_template,
)


def test_every_builtin_template_parses_with_the_fields_of_its_kind():
    templates = builtin_templates()
    expected = {
        f"paper-{kind}-{lang}{ref}"
        for kind in ("pointwise", "pairwise")
        for lang in ("en", "de")
        for ref in ("", "-ref")
    }
    expected |= {
        "mt-pointwise",
        "mt-pairwise",
        "generic-pointwise",
        "generic-pairwise",
        "generic-pointwise-ref",
        "generic-pairwise-ref",
        "checklist-pointwise",
        "checklist-pairwise",
    }
    assert set(templates) == expected
    for name, template in templates.items():
        assert template.version == "1" and template.source, name
        if template.kind == PAIRWISE:
            assert {"answer_1", "answer_2"} <= template.fields, name
        else:
            assert "answer" in template.fields and "answer_1" not in template.fields, name
        assert ("reference" in template.fields) == name.endswith("-ref") or name.startswith("checklist-"), name
        assert ("checklist" in template.fields) == name.startswith("checklist-"), name
        assert len(template.sha) == 16


def test_paper_wording_is_kept():
    english = builtin_templates()["paper-pairwise-en"].text
    assert english.startswith("You are a university professor exam grader. Grade the following answers on a scale")
    assert "Explanation: [explanation] Answer 1: X/{max_points} Answer 2: Y/{max_points}" in english
    german = builtin_templates()["paper-pointwise-de"].text
    assert german.startswith("Sie sind ein Universitätsprofessor.")
    assert "Begründung: [begründung] Punktzahl: X/{max_points}" in german
    assert builtin_templates()["mt-pairwise"].max_points == 100
    assert builtin_templates()["paper-pairwise-de"].choice_prefix == "Die bessere Antwort ist Antwort"


@pytest.mark.parametrize(
    "text, message",
    [
        ("Grade {answer} and {colour}", "unknown field"),
        ("Grade {question}", "needs {answer}"),
        ("---\nkind: pairwise\n---\nGrade {answer}", "needs {answer_1}"),
        ("---\nkind: sideways\n---\n{answer}", "kind must be"),
        ("---\nflavour: x\n---\n{answer}", "unknown header line"),
        ("---\nname: x\n{answer}", "never closed"),
    ],
)
def test_bad_templates_are_rejected_with_a_reason(text, message):
    with pytest.raises(TemplateError, match=message):
        parse_template(text, where="t.txt")


def test_unknown_template_name_lists_the_builtins():
    with pytest.raises(TemplateError, match="paper-pairwise-en"):
        load_template("no-such-template")
