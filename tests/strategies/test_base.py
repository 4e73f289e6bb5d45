"""rankkit.strategies.base: a strategy and a judge that cannot work together are refused up front."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rankkit.judges import make_judge
from rankkit.judges.sim import FixedAccuracyJudge
from rankkit.runner import run
from rankkit.specs import SpecError
from rankkit.strategies import CandidateExtras, Ranking, Strategy, make_strategy
from rankkit.strategies.base import check_compatible
from tests.helpers import CountingJudge


class ComparesOnly(CountingJudge):
    """A counting simulated judge that, like replay and panel judges, cannot grade single answers."""

    supports_pointwise = False


class GradesOnly(CountingJudge):
    """A counting simulated judge that cannot compare pairs."""

    supports_pairwise = False


@dataclass(frozen=True)
class OddKind(Strategy):
    kind = "listwise"

    def rank(self, task, source, rng):  # pragma: no cover - never reached
        return Ranking(scores={})


def test_pointwise_strategy_with_a_judge_that_only_compares_names_both():
    with pytest.raises(SpecError) as info:
        check_compatible([make_strategy("knockout"), make_strategy("individual")], ComparesOnly(FixedAccuracyJudge()))
    message = str(info.value)
    assert message.startswith("strategy individual needs pointwise grades, which judge counting cannot give")
    assert "choose pairwise strategies or another judge" in message


def test_pairwise_strategy_with_a_judge_that_only_grades():
    with pytest.raises(SpecError, match="strategy knockout:order=both needs pairwise comparisons"):
        check_compatible([make_strategy("knockout:order=both")], GradesOnly(FixedAccuracyJudge()))


def test_compatible_pairings_pass():
    check_compatible([make_strategy("knockout"), make_strategy("individual")], FixedAccuracyJudge())
    check_compatible([make_strategy("bt"), make_strategy("panel_elo")],
                     make_judge("panel:sim:preset=gpt4+sim:preset=chatgpt"))


def test_unknown_kind_is_refused():
    with pytest.raises(SpecError, match="kind must be one of pairwise, pointwise, kway, got 'listwise'"):
        check_compatible([OddKind()], FixedAccuracyJudge())


def test_run_refuses_before_any_judgment(sample_tasks):
    judge = ComparesOnly(FixedAccuracyJudge())
    with pytest.raises(SpecError, match="strategy individual"):
        run(sample_tasks, [make_strategy("knockout"), make_strategy("individual")], judge, progress=False)
    assert judge.calls == 0


def test_candidate_extras_json_leaves_unreported_fields_out_and_reads_back():
    extras = CandidateExtras(played=2, eliminated_round=None, grades=(3.0, 4.5), rounds=2)
    assert extras.to_dict() == {"played": 2, "rounds": 2, "grades": [3.0, 4.5]}
    assert CandidateExtras.from_dict(extras.to_dict()) == extras
    assert CandidateExtras().to_dict() == {}


def test_candidate_extras_refuse_an_unknown_key_by_name():
    with pytest.raises(ValueError, match="unknown candidate extra 'elimination_round'"):
        CandidateExtras.from_dict({"played": 1, "elimination_round": 1})


def test_a_ranking_refuses_untyped_extras():
    assert Ranking(scores={"a": 1.0}).extras == {}
    with pytest.raises(TypeError, match=r"Ranking.extras\['a'\] must be a CandidateExtras, got dict"):
        Ranking(scores={"a": 1.0}, extras={"a": {"played": 1}})
