"""Untrusted text as a tokenizer reads it, and look-alike names (rankkit.prompts.normalize)."""

from __future__ import annotations

import pytest

from rankkit.errors import RankkitError
from rankkit.prompts.normalize import (
    LookAlikeNameError,
    name_key,
    reading,
    reading_with_origins,
    refuse_look_alikes,
)

#: Spelling -> what a tokenizer reads.
SPELLINGS = {
    "Final\u200b verdict": "Final verdict",  # zero-width space
    "Fi\u00adnal": "Final",  # soft hyphen
    "Fi\u200c\u200dnal\u2060": "Final",  # zero-width non-joiner, joiner, word joiner
    "\ufeffScore": "Score",  # byte-order mark
    "\u202eScore\u202c \u2066x\u2069": "Score x",  # bidirectional controls
    "S\ufe0fcore\U000e0100": "Score",  # variation selectors
    "\uff33\uff43\uff4f\uff52\uff45\uff1a \uff19/\uff19": "Score: 9/9",  # full-width (NFKC)
    "\U0001d412core": "Score",  # mathematical bold S (NFKC)
    "\u0405c\u043ere": "Score",  # Cyrillic S, o
    "\u0392\u0435st": "Best",  # Greek B, Cyrillic e
    "Final\u00a0verdict": "Final verdict",  # no-break space (NFKC)
    "S\u0336core": "Score",  # combining overlay left after NFKC
    "Endgu\u0308ltiges": "Endgültiges",  # u + combining diaeresis composes to one letter
    "delta\u2011small": "delta-small",  # non-breaking hyphen
    "verdict\u2236": "verdict:",  # ratio sign
}


@pytest.mark.parametrize("spelling", list(SPELLINGS))
def test_each_spelling_reads_as_the_plain_text(spelling):
    assert reading(spelling) == SPELLINGS[spelling]


def test_ascii_and_ordinary_text_in_other_scripts_is_kept():
    assert reading("Final verdict: Score: 9/9") == "Final verdict: Score: 9/9"
    assert reading("Größe, naïve, café") == "Größe, naïve, café"
    assert reading("数学は難しい") == "数学は難しい"


def test_origins_point_at_the_character_each_reading_character_came_from():
    text = "a\u200bb\uff43u\u0308"
    view, origins = reading_with_origins(text)
    assert view == "abcü"
    assert origins == [0, 2, 3, 4]
    assert len(origins) == len(view)


def test_look_alike_names_share_a_key_and_distinct_names_do_not():
    names = ["delta-small", "delta-small\u200b", "delta\u2011small", "delta\u2010small", "d\u0435lta-small"]
    assert {name_key(n) for n in names} == {"delta-small"}
    assert name_key("delta-small") != name_key("delta-large")
    assert name_key("Delta-small") != name_key("delta-small")  # case is visible


def test_look_alike_names_are_refused_naming_both():
    with pytest.raises(LookAlikeNameError) as caught:
        refuse_look_alikes(["alpha", "delta-small", "alpha", "delta-small\u200b"], "task 't1'")
    message = str(caught.value)
    assert "task 't1'" in message and "'delta-small'" in message and "'delta-small\\u200b'" in message
    assert isinstance(caught.value, RankkitError) and caught.value.exit_code == 2
    refuse_look_alikes(["alpha", "delta-small", "delta-large", "alpha"], "task 't1'")  # repeats are fine


def test_the_caller_chooses_the_error_raised():
    class BoardError(ValueError):
        pass

    with pytest.raises(BoardError, match="delta"):
        refuse_look_alikes(["delta-small", "delta\u2011small"], "board", BoardError)
