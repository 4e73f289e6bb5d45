"""The simulated answer writer of ``rankkit generate`` (sim:NAME): deterministic, with a planted quality."""

from __future__ import annotations

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges.simulated.writer import SimulatedWriter

CONVERSATIONS = [[{"role": "user", "content": f"question {i}"}] for i in range(40)]


def replies(writer: SimulatedWriter) -> list[str]:
    answers = dict(writer.generate(CONVERSATIONS, max_new_tokens=64, temperature=0.0, seed=0))
    return [answers[i].text for i in range(len(CONVERSATIONS))]


def test_answers_are_deterministic_from_name_seed_and_conversation():
    assert replies(SimulatedWriter("a")) == replies(SimulatedWriter("a"))
    assert replies(SimulatedWriter("a")) != replies(SimulatedWriter("a", seed=1))
    assert replies(SimulatedWriter("a")) != replies(SimulatedWriter("b"))


def test_planted_quality_centres_on_the_given_quality_within_bounds():
    writer = SimulatedWriter("a", quality=0.7, spread=0.1)
    planted = [writer.planted_quality(c) for c in CONVERSATIONS]
    assert all(0.0 <= q <= 1.0 for q in planted)
    assert sum(planted) / len(planted) == pytest.approx(0.7, abs=0.05)


def test_the_spec_is_checked():
    assert SimulatedWriter.from_spec("sim:a,quality=0.2,seed=3", "a").identity()["seed"] == 3
    with pytest.raises(SpecError, match="unknown option"):
        SimulatedWriter.from_spec("sim:a,temperature=1", "a")
    with pytest.raises(SpecError, match="numbers"):
        SimulatedWriter.from_spec("sim:a,quality=high", "a")
