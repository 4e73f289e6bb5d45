"""The judge protocol: a user-written judge's identity, and what a shared cache serves it."""

from __future__ import annotations

import json

import pytest

import rankkit
from rankkit.data.tasks import Candidate, Task
from rankkit.judges.base import Judge
from rankkit.judgments.cache import JudgmentCache
from rankkit.judgments.values import Verdict, Winner


class PrefersLonger(Judge):
    """A user's judge: the longer answer wins by ``margin`` points."""

    def __init__(self, margin: float = 1.0):
        self.margin = margin

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        first_wins = len(first.text) >= len(second.text)
        grades = (5.0, 5.0 - self.margin) if first_wins else (5.0 - self.margin, 5.0)
        return Verdict(
            first_grade=grades[0], second_grade=grades[1], winner=Winner.FIRST if first_wins else Winner.SECOND
        )


class PrefersShorter(Judge):
    """Another user's judge, with the same (absent) backend name: the shorter answer wins."""

    def compare(self, task: Task, first: Candidate, second: Candidate) -> Verdict:
        first_wins = len(first.text) <= len(second.text)
        return Verdict(
            first_grade=5.0 if first_wins else 1.0,
            second_grade=1.0 if first_wins else 5.0,
            winner=Winner.FIRST if first_wins else Winner.SECOND,
        )


TASK = {
    "task_id": "t",
    "prompt": "Describe Paris.",
    "candidates": [
        {"id": "short", "text": "A city.", "human": {"q": 1}},
        {"id": "long", "text": "The capital of France, on the Seine.", "human": {"q": 2}},
        {"id": "mid", "text": "France's capital.", "human": {"q": 3}},
    ],
}


def test_two_user_judges_sharing_one_cache_file_each_get_their_own_verdicts(tmp_path):
    path = tmp_path / "shared.sqlite"
    longer = rankkit.compare([TASK], ["bt"], judge=PrefersLonger(), cache=path)
    shorter = rankkit.compare([TASK], ["bt"], judge=PrefersShorter(), cache=path)
    assert longer.strategies[0].tasks[0].ranking == ["long", "mid", "short"]
    assert shorter.strategies[0].tasks[0].ranking == ["short", "mid", "long"]
    assert shorter.strategies[0].cost.cache_hits == 0  # nothing of the other judge was served
    with JudgmentCache(path) as cache:
        assert len(cache) == 2 * 6  # both judges' verdicts, each under its own fingerprint
    again = rankkit.compare([TASK], ["bt"], judge=PrefersShorter(), cache=path)
    assert again.strategies[0].cost.cache_hits == 6 and again.strategies[0].cost.judge_calls == 0


def test_the_default_identity_is_the_class_and_its_constructor_parameters():
    identity = json.loads(PrefersLonger(2.0).fingerprint)
    assert identity["judge"].endswith("test_base.PrefersLonger") and identity["margin"] == pytest.approx(2.0)
    assert PrefersLonger(2.0).fingerprint == PrefersLonger(2.0).fingerprint
    assert PrefersLonger(2.0).fingerprint != PrefersLonger(3.0).fingerprint
    assert PrefersLonger().fingerprint != PrefersShorter().fingerprint


def test_a_declared_identity_is_shared_on_purpose(tmp_path):
    class Renamed(PrefersLonger):
        backend = "longer-judge"  # declared: the same judge as any other "longer-judge", version 1

        def fingerprint_fields(self):
            return {"margin": self.margin}

    class AlsoRenamed(Renamed):
        pass

    assert Renamed().fingerprint == AlsoRenamed().fingerprint == '{"backend":"longer-judge","margin":1.0,"version":"1"}'


def test_a_parameter_without_a_stable_identity_asks_for_fingerprint_fields():
    class Wrapping(Judge):
        def __init__(self, client: object):
            self.client = client

    with pytest.raises(TypeError, match="override fingerprint_fields"):
        Wrapping(object()).fingerprint


def test_library_calls_refuse_what_is_not_a_judge_or_a_strategy():
    with pytest.raises(rankkit.RankkitError, match="judge must be a spec string or a rankkit Judge, got int"):
        rankkit.rank(TASK, judge=42)
    with pytest.raises(rankkit.RankkitError, match="strategy must be a spec string or a rankkit Strategy"):
        rankkit.rank(TASK, strategy=3.5, judge="sim")
    with pytest.raises(rankkit.TaskFormatError, match=r"tasks:1: field 'candidates\[1\].text'"):
        rankkit.rank({**TASK, "candidates": [TASK["candidates"][0], {"id": "x"}]}, judge="sim")
