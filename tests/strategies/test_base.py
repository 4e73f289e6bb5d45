"""rankkit.strategies.base: a strategy and a judge that cannot work together are refused up front."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.judge_protocol import Capabilities
from rankkit.runs.runner import run
from rankkit.strategies import CandidateExtras, Ranking, Strategy, describe_parameters, make_strategy, strategy_classes
from rankkit.strategies.base import check_compatible
from tests.helpers import CountingJudge


class ComparesOnly(CountingJudge):
    """A counting simulated judge that, like replay and panel judges, cannot grade single answers."""

    capabilities = Capabilities(pointwise=False)


class GradesOnly(CountingJudge):
    """A counting simulated judge that cannot compare pairs."""

    capabilities = Capabilities(pairwise=False)


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
    check_compatible(
        [make_strategy("bt"), make_strategy("panel_elo")], make_judge("panel:sim:preset=gpt4+sim:preset=chatgpt")
    )


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


# == a third-party strategy's own extras ========================================================


@dataclass(frozen=True)
class MarginExtras(CandidateExtras):
    """Extras of the test's strategy: its own fields besides the common ones."""

    margin: float | None = None
    beaten: tuple[str, ...] | None = None


@dataclass(frozen=True)
class MarginWins(Strategy):
    """A third-party strategy (defined here, registered per test): wins over every pair, reporting
    each candidate's total margin and whom it beat as extras of its own."""

    description = "wins over every pair, with margins"
    extras_type = MarginExtras

    def rank(self, task, source, rng):
        from itertools import combinations

        wins = dict.fromkeys(task.candidate_ids, 0.0)
        margin = dict.fromkeys(task.candidate_ids, 0.0)
        beaten = {cid: [] for cid in task.candidate_ids}
        for match in source.play_many(list(combinations(task.candidate_ids, 2))):
            wins[match.a] += match.outcome
            wins[match.b] += 1.0 - match.outcome
            margin[match.a] += match.grade_a - match.grade_b
            margin[match.b] += match.grade_b - match.grade_a
            (beaten[match.a] if match.outcome > 0.5 else beaten[match.b]).append(
                match.b if match.outcome > 0.5 else match.a
            )
        return Ranking(
            scores=wins,
            extras={
                cid: MarginExtras(played=len(task.candidates) - 1, margin=margin[cid], beaten=tuple(beaten[cid]))
                for cid in wins
            },
        )


@pytest.fixture
def margin_wins(monkeypatch):
    from rankkit.strategies import base

    monkeypatch.setitem(base._REGISTRY, "margin_wins", MarginWins)
    monkeypatch.setattr(MarginWins, "name", "margin_wins")
    return MarginWins


def test_a_strategys_own_extras_round_trip_through_the_results_json(margin_wins, sample_tasks):
    import json

    import rankkit
    from rankkit.runs.results import RunResult

    result = rankkit.compare(sample_tasks[:2], strategies=["margin_wins"], judge="sim:preset=gpt4")
    extras = result.strategies[0].tasks[0].extras
    assert all(isinstance(e, MarginExtras) and e.played == len(sample_tasks[0].candidates) - 1 for e in extras.values())
    payload = json.loads(json.dumps(result.to_dict()))
    first = payload["strategies"][0]["tasks"][0]["extras"]
    some = next(iter(first.values()))
    assert set(some) >= {"played", "margin", "beaten"} and isinstance(some["beaten"], list)
    read = RunResult.from_dict(payload)
    assert read.strategies[0].tasks[0].extras == extras  # the subclass, every field, tuples as tuples
    assert read.to_dict() == payload
    rows = read.rows()
    assert "extra_margin" in rows[0] and "extra_beaten" not in rows[0]  # scalars only, as for built-in fields
    margins = sorted(e.margin for t in result.strategies[0].tasks for e in t.extras.values())
    assert sorted(row["extra_margin"] for row in rows) == pytest.approx(margins, abs=1e-12)


def test_extras_of_a_strategy_not_installed_here_are_kept(margin_wins, sample_tasks, monkeypatch):
    import json

    import rankkit
    from rankkit.runs.recorded_run import RecordedStrategy
    from rankkit.runs.results import RunResult
    from rankkit.strategies import base

    result = rankkit.compare(sample_tasks[:1], strategies=["margin_wins"], judge="sim:preset=gpt4")
    payload = json.loads(json.dumps(result.to_dict()))
    monkeypatch.delitem(base._REGISTRY, "margin_wins")  # the package is gone
    read = RunResult.from_dict(payload)
    assert isinstance(read.strategies[0].strategy, RecordedStrategy)
    extras = next(iter(read.strategies[0].tasks[0].extras.values()))
    assert isinstance(extras, CandidateExtras) and extras.played == len(sample_tasks[0].candidates) - 1
    assert extras.margin is not None and isinstance(extras.beaten, tuple)
    assert read.to_dict() == payload


def test_an_unknown_extra_of_an_installed_strategy_names_where_it_is(margin_wins, sample_tasks):
    import json

    import rankkit
    from rankkit.errors import TaskFormatError
    from rankkit.runs.results import RunResult

    payload = json.loads(
        json.dumps(rankkit.compare(sample_tasks[:1], strategies=["margin_wins"], judge="sim:preset=gpt4").to_dict())
    )
    extras = payload["strategies"][0]["tasks"][0]["extras"]
    cid = next(iter(extras))
    extras[cid]["margn"] = 1.0
    with pytest.raises(
        TaskFormatError, match=rf"strategies\[0\]\.tasks\[0\]\.extras\.{cid}.*unknown candidate extra 'margn'"
    ):
        RunResult.from_dict(payload, where="r.json")


def test_extras_the_strategy_does_not_declare_are_refused_when_it_runs(sample_tasks, monkeypatch):
    import rankkit
    from rankkit.strategies import base

    class Undeclared(MarginWins):
        extras_type = CandidateExtras

    monkeypatch.setitem(base._REGISTRY, "undeclared", dataclass(frozen=True)(Undeclared))
    monkeypatch.setattr(Undeclared, "name", "undeclared")
    with pytest.raises(TypeError, match="reports MarginExtras extras .* declare extras_type = MarginExtras"):
        rankkit.compare(sample_tasks[:1], strategies=["undeclared"], judge="sim:preset=gpt4")


# -- declared parameter ranges -----------------------------------------------------------------

EXTREME_SPECS = [
    ("elo:permutations=1000000000", "strategy elo: permutations must be 1 to 10,000, got 1000000000"),
    ("bt:bootstrap=1000000000", "strategy bt: bootstrap must be 0 to 10,000, got 1000000000"),
    ("panel_elo:k=1e300", "strategy panel_elo: k must be 0 to 1,000, got 1e+300"),
    ("bt:alpha=1e308", "strategy bt: alpha must be 0 to 100, got 1e+308"),
    ("elo:initial=1e308", "strategy elo: initial must be -1,000,000 to 1,000,000, got 1e+308"),
]


@pytest.mark.parametrize(("spec", "message"), EXTREME_SPECS)
def test_a_parameter_outside_its_declared_range_is_refused_naming_strategy_parameter_value_and_range(spec, message):
    with pytest.raises(SpecError) as caught:
        make_strategy(spec)
    assert str(caught.value) == message


@pytest.mark.parametrize(("spec", "message"), EXTREME_SPECS)
def test_the_cli_exits_2_on_an_extreme_parameter_before_judging(spec, message):
    outcome = CliRunner().invoke(main, ["compare", "--judge", "sim", "--strategies", spec, "--no-cache", "--quiet"])
    assert outcome.exit_code == 2
    assert message in outcome.output
    assert "Traceback" not in outcome.output and "judging" not in outcome.output


def test_every_declared_range_names_a_number_parameter_and_is_listed():
    for name, cls in strategy_classes().items():
        listed = {param: type_name for param, type_name, _ in describe_parameters(cls)}
        for param, (lowest, highest) in cls.ranges.items():
            assert param in listed, (name, param)
            assert lowest <= highest
            assert listed[param].split(",")[0].strip() in ("int", "float", "int | None", "float | None"), (name, param)
            assert f"{highest:,.0f}" in listed[param] or f"{highest:g}" in listed[param], (name, param)


def test_rankkit_strategies_shows_the_ranges():
    listing = CliRunner().invoke(main, ["strategies"]).output
    assert "permutations=100  (int, 1 to 10,000)" in listing
    assert "bootstrap=0  (int, 0 to 10,000)" in listing


def test_the_ends_of_a_range_are_accepted():
    assert make_strategy("elo:permutations=10000").permutations == 10_000
    assert make_strategy("bt:bootstrap=10000").bootstrap == 10_000
    assert make_strategy("elo:initial=-1000000").initial == pytest.approx(-1e6, abs=1e-9)
