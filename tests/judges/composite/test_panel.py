"""The panel judge: threshold semantics, both orders, per-member caching, spec syntax, agreement."""

from __future__ import annotations

import math

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.base import Judge
from rankkit.judges.composite.panel import (
    PanelJudge,
    VoteCount,
    decide,
    draws_by_threshold,
    krippendorff_alpha,
    read_spec,
)
from rankkit.judgments.cache import JudgmentCache
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import ParseStatus, Verdict, Winner
from rankkit.strategies.matches import Cost, MatchSource
from tests.helpers import CountingJudge, make_task


class FixedJudge(Judge):
    """Prefers the candidate ranked higher in ``order``, whatever slot it is shown in.

    ``slot`` instead always picks the first (or second) slot; ``failed`` answers unparsed ties.
    """

    backend = "fixed"

    def __init__(self, name: str, order: str = "", slot: str | None = None, failed: bool = False):
        self.name, self.order, self.slot, self.failed = name, order, slot, failed
        self.calls: list[tuple[str, str]] = []

    def fingerprint_fields(self):
        return {"name": self.name}

    def compare(self, task, first, second):
        self.calls.append((first.id, second.id))
        if self.failed:
            return Verdict(0.5, 0.5, Winner.TIE, status=ParseStatus.FAILED)
        if self.slot is not None:
            winner = Winner.FIRST if self.slot == "first" else Winner.SECOND
        else:
            winner = Winner.FIRST if self.order.index(first.id[-1]) < self.order.index(second.id[-1]) else Winner.SECOND
        return Verdict(1.0, 0.0, winner) if winner is Winner.FIRST else Verdict(0.0, 1.0, winner)


@pytest.fixture
def task():
    return make_task([1.0, 0.0, 0.5], task_id="t")


def two_to_one(threshold: float) -> tuple[PanelJudge, list[FixedJudge]]:
    members = [FixedJudge("x", order="01"), FixedJudge("y", order="01"), FixedJudge("z", order="10")]
    return PanelJudge(members, threshold=threshold), members


# -- threshold semantics ----------------------------------------------------------------------


def test_three_judges_voting_two_to_one_win_at_half_and_draw_at_unanimity(task):
    c0, c1 = task.candidates[:2]
    majority, _ = two_to_one(0.5)
    judgment = majority.compare(task, c0, c1)
    assert judgment.winner is Winner.FIRST
    assert judgment.extras["votes"] == {"first": 4, "second": 2, "tie": 0, "abstained": 0}
    assert judgment.extras["share"] == pytest.approx(4 / 6)
    assert (judgment.first_grade, judgment.second_grade) == task.scale[::-1]
    unanimous, _ = two_to_one(1.0)
    draw = unanimous.compare(task, c0, c1)
    assert draw.winner is Winner.TIE and draw.first_grade == draw.second_grade
    assert two_to_one(0.75)[0].compare(task, c0, c1).winner is Winner.TIE  # 4/6 < 0.75
    assert two_to_one(0.6)[0].compare(task, c0, c1).winner is Winner.FIRST


@pytest.mark.parametrize(
    "count,threshold,expected",
    [
        (VoteCount(first=4, second=2), 0.5, Winner.FIRST),
        (VoteCount(first=4, second=2), 1.0, Winner.TIE),
        (VoteCount(first=2, second=4), 2 / 3, Winner.SECOND),  # exactly reaching the threshold wins
        (VoteCount(first=3, second=1), 0.75, Winner.FIRST),
        (VoteCount(first=3, second=3), 0.5, Winner.TIE),  # an even split is always a draw
        (VoteCount(first=2, second=1, tie=3), 0.5, Winner.TIE),  # tie votes count in the share's denominator
        (VoteCount(first=6, abstained=6), 1.0, Winner.FIRST),  # abstentions do not
        (VoteCount(abstained=6), 0.5, Winner.TIE),
    ],
)
def test_decide(count, threshold, expected):
    assert decide(count, threshold) is expected


def test_the_decision_is_the_same_whichever_order_the_strategy_asks(task):
    panel = PanelJudge(
        [make_judge("sim:preset=gpt4"), make_judge("sim:preset=chatgpt"), make_judge("sim:preset=falcon")]
    )
    for first, second in [(0, 1), (0, 2), (1, 2)]:
        a, b = task.candidates[first], task.candidates[second]
        assert panel.compare(task, a, b).winner == panel.compare(task, b, a).swapped().winner


def test_a_failed_member_vote_abstains(task):
    c0, c1 = task.candidates[:2]
    panel = PanelJudge([FixedJudge("x", order="01"), FixedJudge("broken", failed=True)], threshold=1.0)
    judgment = panel.compare(task, c0, c1)
    assert judgment.winner is Winner.FIRST and judgment.status is ParseStatus.OK
    assert judgment.extras["votes"]["abstained"] == 2
    all_failed = PanelJudge([FixedJudge("a", failed=True), FixedJudge("b", failed=True)]).compare(task, c0, c1)
    assert all_failed.winner is Winner.TIE and all_failed.status is ParseStatus.FAILED


def test_slot_biased_members_cancel_out(task):
    c0, c1 = task.candidates[:2]
    panel = PanelJudge([FixedJudge("first", slot="first"), FixedJudge("second", slot="second")])
    assert panel.compare(task, c0, c1).extras["votes"] == {"first": 2, "second": 2, "tie": 0, "abstained": 0}
    assert panel.compare(task, c0, c1).winner is Winner.TIE


# -- both orders and caching ------------------------------------------------------------------


def test_every_member_sees_both_orders_once(task):
    panel, members = two_to_one(0.5)
    c0, c1 = task.candidates[:2]
    memo = JudgmentMemo(panel)
    memo.verdicts([(task, c0, c1)])
    memo.verdicts([(task, c1, c0)])  # answered from the run's memory: no member is asked again
    for member in members:
        assert sorted(member.calls) == [("c0", "c1"), ("c1", "c0")]


def test_member_votes_are_cached_under_the_members_fingerprints(task, cache_path):
    members = [CountingJudge(make_judge(f"sim:preset={p}")) for p in ("gpt4", "chatgpt", "falcon")]
    cache = JudgmentCache(cache_path)
    panel = PanelJudge(members, threshold=0.5)
    cost = Cost()
    source = MatchSource(task, JudgmentMemo(panel, cache))
    cost = source.cost
    pairs = [("c0", "c1"), ("c0", "c2"), ("c1", "c2")]
    source.compare_many(pairs)
    assert [m.calls for m in members] == [6, 6, 6] and cost.judge_calls == 3
    # Another threshold is another panel fingerprint, but re-aggregates the cached votes for free.
    stricter = PanelJudge(members, threshold=1.0)
    assert stricter.fingerprint != panel.fingerprint
    MatchSource(task, JudgmentMemo(stricter, cache)).compare_many(pairs)
    assert [m.calls for m in members] == [6, 6, 6]
    # A single-judge run of a member reuses the panel's votes (same key as the match layer's).
    alone_source = MatchSource(task, JudgmentMemo(members[0], cache))
    alone_source.compare_many(pairs + [(b, a) for a, b in pairs])
    alone = alone_source.cost
    assert alone.judge_calls == 0 and alone.cache_hits == 6
    cache.close()


def test_fresh_member_calls_are_reported_once(task):
    panel, _ = two_to_one(0.5)
    c0, c1 = task.candidates[:2]
    results = dict(panel.compare_many([(task, c0, c1), (task, c1, c0)]))
    assert results[0].extras["member_calls"] == 6 and results[1].extras["member_calls"] == 0


# -- spec syntax ------------------------------------------------------------------------------


def test_the_documented_spec_builds_three_sim_members():
    panel = make_judge("panel:sim:preset=gpt4+sim:preset=chatgpt+sim:preset=falcon,threshold=0.75")
    assert isinstance(panel, PanelJudge) and panel.threshold == 0.75 and panel.simulated
    assert [m.preset for m in panel.members] == ["gpt4", "chatgpt", "falcon"]
    assert make_judge("panel:sim:preset=gpt4+sim:preset=falcon").threshold == 0.5


def test_member_options_use_semicolons():
    spec = "panel:sim:model=fixed;accuracy=0.9;seed=3+sim:preset=falcon;seed=4,threshold=1"
    read = read_spec(spec)
    assert read.positional == ("sim:model=fixed;accuracy=0.9;seed=3+sim:preset=falcon;seed=4",)
    assert read.options == {"threshold": "1"}
    panel = make_judge(spec)
    assert [m.seed for m in panel.members] == [3, 4] and panel.members[0].accuracy == 0.9


@pytest.mark.parametrize(
    "spec,needle",
    [
        ("panel:sim:preset=gpt4", "at least two member judges"),
        ("panel:sim:preset=gpt4,noise=0.1+sim:preset=falcon", "separate a member's own options with ';'"),
        ("panel:sim:preset=gpt4+sim:preset=gpt4", "listed twice"),
        ("panel:sim+panel:sim;sim", "cannot be a member of a panel"),
        ("panel:sim:preset=gpt4+sim:preset=falcon,threshold=0", "threshold must be in"),
        ("panel:sim:preset=gpt4+sim:preset=falcon,threshold=high", "expected a number"),
    ],
)
def test_bad_panel_specs_say_what_is_wrong(spec, needle):
    with pytest.raises(SpecError, match=needle):
        make_judge(spec)


# -- reporting helpers ------------------------------------------------------------------------


def test_draws_by_threshold_counts_without_new_judgments():
    counts = [
        VoteCount(first=6),
        VoteCount(first=4, second=2),
        VoteCount(first=3, second=3),
        VoteCount(second=5, first=1),
    ]
    assert draws_by_threshold(counts, [1.0, 0.75, 0.5]) == {1.0: 3, 0.75: 2, 0.5: 1}


def test_krippendorff_alpha_matches_a_hand_computation():
    # Two raters, four units; one disagreement. Coincidences: o11=4, o00=2, o01=o10=1, n=8:
    # D_o = 2/8, D_e = 2·5·3/(8·7), alpha = 1 - D_o/D_e = 8/15.
    assert krippendorff_alpha([[1.0, 1.0, 0.0, 0.0], [1.0, 1.0, 0.0, 1.0]]) == pytest.approx(8 / 15)
    # A missing vote (None) drops out of its unit: only the first three units are pairable.
    assert krippendorff_alpha([[1.0, 1.0, 0.0, None], [1.0, 1.0, 0.0, 1.0]]) == pytest.approx(1.0)
    assert math.isnan(krippendorff_alpha([[1.0, 1.0], [1.0, 1.0]]))  # one category only: undefined


def test_a_panel_passes_the_progress_note_to_every_member():
    from rankkit.judges.composite.panel import PanelJudge
    from rankkit.judges.simulated.sim import FixedAccuracyJudge

    shown: list[str] = []

    class Noting(FixedAccuracyJudge):
        def show_progress(self, note):
            note(f"batch of seed {self.seed}")

    panel = PanelJudge([Noting(seed=1), Noting(seed=2)])
    panel.show_progress(shown.append)
    assert len(shown) == 2 and shown[0].endswith(": batch of seed 1") and shown[1].endswith(": batch of seed 2")
    assert shown[0].startswith(panel.members[0].description)
