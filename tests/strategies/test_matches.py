"""MatchSource over the judgment memo: memory -> cache -> judge, counting, presentation order, and nothing lost on failure."""

from __future__ import annotations

import random
from dataclasses import replace

import pytest

from rankkit.judges.base import JudgeError
from rankkit.judgments.cache import JudgmentCache
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.values import ParseStatus, Verdict, Winner
from rankkit.runs.runner import with_undecided
from rankkit.strategies.base import CandidateExtras
from rankkit.strategies.matches import Comparison, MatchGraph, MatchSource, make_match
from tests.helpers import CountingJudge, make_task, perfect_judge


def source_for(task, judge, cache=None, memo=None, strategy="s"):
    source = MatchSource(task, memo if memo is not None else JudgmentMemo(judge, cache), strategy)
    return source, source.cost


def test_memory_then_cache_then_judge(cache_path):
    task = make_task([1, 2, 3])
    judge = CountingJudge(perfect_judge())
    with JudgmentCache(cache_path) as cache:
        memo = JudgmentMemo(judge, cache)
        src, cost = source_for(task, judge, memo=memo)
        first = src.compare("c0", "c1")
        assert judge.calls == 1 and cost.judge_calls == 1 and cost.comparisons == 1
        assert first.winner is Winner.SECOND
        again = src.compare("c0", "c1")  # same strategy: already used, no new cost, not counted twice
        assert again == first and judge.calls == 1 and cost.comparisons == 1 and cost.shared_hits == 0
        other, other_cost = source_for(task, judge, memo=memo, strategy="t")
        other.compare("c0", "c1")  # another strategy, same run: the memo's memory answers
        assert judge.calls == 1 and other_cost.shared_hits == 1 and other_cost.comparisons == 1
        assert other_cost.judge_calls == 0
        fresh, fresh_cost = source_for(task, judge, cache)  # another run: the cache answers
        assert fresh.compare("c0", "c1") == first
        assert judge.calls == 1 and fresh_cost.cache_hits == 1
        fresh.compare("c1", "c0")  # the other order is another request, never substituted
        assert judge.calls == 2 and fresh_cost.judge_calls == 1


def test_match_graph_records_who_used_each_comparison():
    task = make_task([1, 2, 3])
    judge = perfect_judge()
    memo = JudgmentMemo(judge)
    sources = {name: source_for(task, judge, memo=memo, strategy=name)[0] for name in ("s", "t")}
    sources["s"].compare("c0", "c1", round=1)
    sources["t"].compare_many([("c0", "c1"), ("c2", "c0")], round=2)
    graph = MatchGraph(task)
    for name, source in sources.items():
        for comparison in source.comparisons:
            graph.record(judge.fingerprint, comparison, name)
    edge = graph.graph.edges["c0", "c1", judge.fingerprint]
    assert edge["strategy"] == "s" and [u["strategy"] for u in edge["used_by"]] == ["s", "t"]
    assert sorted((a, b) for a, b, _ in graph.comparisons()) == [("c0", "c1"), ("c2", "c0")]


def test_points_are_cached_on_nodes(cache_path):
    task = make_task([1, 2, 3])
    judge = CountingJudge(perfect_judge())
    with JudgmentCache(cache_path) as cache:
        src, cost = source_for(task, judge, cache)
        scores = [j.value for j in src.grade_many(["c0", "c1", "c2", "c0"])]
        assert scores == [1.0, 2.0, 3.0, 1.0] and judge.calls == 3 and cost.grades == 3
        src2, cost2 = source_for(task, judge, cache)
        src2.grade_many(["c0", "c1", "c2"])
        assert judge.calls == 3 and cost2.cache_hits == 3


def test_failure_mid_batch_keeps_what_was_judged(cache_path):
    task = make_task([1, 2, 3, 4])
    pairs = [("c0", "c1"), ("c1", "c2"), ("c2", "c3"), ("c0", "c3")]
    with JudgmentCache(cache_path) as cache:
        failing = CountingJudge(perfect_judge(), fail_after=2)
        src, _ = source_for(task, failing, cache)
        with pytest.raises(JudgeError):
            src.compare_many(pairs)
        assert len(cache) == 2
        retry = CountingJudge(perfect_judge())
        src2, cost2 = source_for(task, retry, cache)
        src2.compare_many(pairs)
        assert retry.calls == 2 and cost2.cache_hits == 2


def test_match_in_both_orders_averages_them():
    task = make_task([1, 5])
    src, cost = source_for(task, perfect_judge())
    match = src.play("c0", "c1", order="both")
    assert match.outcome == 0.0 and match.grade_a == pytest.approx(1.0) and match.grade_b == pytest.approx(5.0)
    assert cost.comparisons == 2 and len(match.comparisons) == 2


def test_equal_scores_fall_back_to_verdicts_then_tie():
    win_first = Verdict(first_grade=2, second_grade=2, winner=Winner.FIRST)
    assert make_match("a", "b", [Comparison("a", "b", win_first)]).outcome == 1.0
    # a shown first wins, then b shown first wins: the verdicts balance, a tie
    assert make_match("a", "b", [Comparison("a", "b", win_first), Comparison("b", "a", win_first)]).outcome == 0.5


def test_self_comparison_is_refused():
    task = make_task([1, 2])
    src, _ = source_for(task, perfect_judge())
    with pytest.raises(ValueError):
        src.compare("c0", "c0")


# -- presentation order ------------------------------------------------------------------------


def shown(matches):
    return [(c.first, c.second) for match in matches for c in match.comparisons]


def test_order_given_shows_the_pair_as_passed_and_both_adds_the_reverse():
    task = make_task([1, 2, 3])
    src, cost = source_for(task, perfect_judge())
    assert shown(src.play_many([("c1", "c0")], order="given")) == [("c1", "c0")]
    both = src.play_many([("c0", "c2"), ("c2", "c1")], order="both")
    assert shown(both) == [("c0", "c2"), ("c2", "c0"), ("c2", "c1"), ("c1", "c2")]
    assert [(d.a, d.b) for d in both] == [("c0", "c2"), ("c2", "c1")] and cost.comparisons == 5


def test_order_random_flips_one_seeded_coin_per_pair():
    import random

    from rankkit.strategies.order import coin_order

    task = make_task(list(range(8)))
    pairs = [(f"c{i}", f"c{j}") for i in range(8) for j in range(i + 1, 8)]
    src, _ = source_for(task, perfect_judge())
    matches = src.play_many(pairs, order="random", rng=random.Random(3))
    rng = random.Random(3)
    assert [(match.a, match.b) for match in matches] == [coin_order(a, b, rng) for a, b in pairs]
    assert len({(match.a, match.b) != pair for match, pair in zip(matches, pairs)}) == 2  # some kept, some flipped


def test_order_random_shows_a_rematch_in_the_order_not_shown_last():
    import random

    task = make_task([1, 2])
    src, cost = source_for(task, perfect_judge())
    rng = random.Random(0)
    first = src.play("c0", "c1", order="random", rng=rng)
    draws = rng.getstate()
    second = src.play("c0", "c1", order="random", rng=rng)
    third = src.play("c1", "c0", order="random", rng=rng)
    assert (second.a, second.b) == (first.b, first.a) and (third.a, third.b) == (first.a, first.b)
    assert rng.getstate() == draws  # a rematch flips no coin
    assert cost.comparisons == 2  # the third match repeats the first judgment


def test_order_random_ignores_what_other_strategies_asked():
    import random

    task = make_task([1, 2, 3])
    judge = perfect_judge()
    memo = JudgmentMemo(judge)
    alone, _ = source_for(task, judge)
    expected = alone.play("c0", "c1", order="random", rng=random.Random(0))
    other, _ = source_for(task, judge, memo=memo, strategy="other")
    other.compare_many([("c1", "c0"), ("c0", "c1")])  # both orders already in the memo
    src, cost = source_for(task, judge, memo=memo)
    match = src.play("c0", "c1", order="random", rng=random.Random(0))
    assert (match.a, match.b) == (expected.a, expected.b)  # the coin decides, not the memo
    assert cost.shared_hits == 1 and cost.judge_calls == 0  # only where the answer came from differs


def test_order_is_checked_and_random_needs_a_generator():
    from rankkit.data.specs import SpecError

    task = make_task([1, 2])
    src, _ = source_for(task, perfect_judge())
    with pytest.raises(SpecError, match="order must be one of given, random, both"):
        src.play("c0", "c1", order="shuffled")
    with pytest.raises(ValueError, match="needs the strategy's generator"):
        src.play("c0", "c1", order="random")


# -- undecided comparisons ------------------------------------------------------------------------


class BreakableJudge(perfect_judge().__class__):
    """A perfect judge whose judgments fail whenever a text in ``breakers`` is shown (as a verdict
    suppression attack makes a free-text parser fail); ``grades_fail`` also fails their grades."""

    def __init__(self, breakers, grades_fail=True, first_fails=False):
        super().__init__(accuracy=1.0, position_bias=0.0, noise=0.0)
        self.breakers, self.grades_fail, self.first_fails = set(breakers), grades_fail, first_fails
        self.asked: list[tuple[str, str]] = []

    def compare(self, task, first, second):
        self.asked.append((first.id, second.id))
        verdict = super().compare(task, first, second)
        broken = {first.id, second.id} & self.breakers or (self.first_fails and len(self.asked) == 1)
        if broken:
            return replace(verdict, status=ParseStatus.FAILED, winner=Winner.TIE, first_grade=5.0, second_grade=5.0)
        return verdict

    def grade(self, task, candidate):
        grade = super().grade(task, candidate)
        if self.grades_fail and candidate.id in self.breakers:
            return replace(grade, value=None, status=ParseStatus.FAILED)
        return grade


def _source(judge, scores=(9.0, 6.0, 2.0)):
    task = make_task(scores)
    return task, MatchSource(task, JudgmentMemo(judge))


def test_a_failed_match_is_asked_again_in_the_other_order_before_anything_else():
    judge = BreakableJudge(breakers=(), first_fails=True)
    task, source = _source(judge)
    a, b = task.candidate_ids[:2]
    match = source.play(a, b)
    assert judge.asked == [(a, b), (b, a)]
    assert match.decided and match.settled_by == "verdicts" and match.outcome == pytest.approx(1.0, abs=0)
    assert source.cost.parse_failures == 1
    assert with_undecided({}, source.comparisons) == {a: CandidateExtras(undecided=1), b: CandidateExtras(undecided=1)}


def test_an_undecided_match_is_settled_by_the_answers_own_grades_never_a_coin():
    judge = BreakableJudge(breakers={"c2"})
    task, source = _source(judge)
    rng = random.Random(0)
    state = rng.getstate()
    for strong in ("c0", "c1"):
        match = source.play("c2", strong, order="random", rng=rng)
        assert match.settled_by == "grades" and match.outcome == pytest.approx(0.0 if match.a == "c2" else 1.0, abs=0)
    # the breaker lost both, each asked in both orders (4 failed comparisons), and only the order
    # coins were drawn
    counts = {cid: extras.undecided for cid, extras in with_undecided({}, source.comparisons).items()}
    assert counts == {"c2": 4, "c0": 2, "c1": 2}
    assert source.cost.grades == 3
    after = rng.getstate()
    rng.setstate(state)
    rng.random(), rng.random()
    assert rng.getstate() == after  # two presentation coins were drawn, no coin for an outcome


def test_a_match_nothing_decides_stays_undecided_and_gives_no_rating_outcome():
    from rankkit.strategies.elo import comparison_outcome, play_all_pairs

    judge = BreakableJudge(breakers={"c0", "c1"})
    task, source = _source(judge)
    match = source.play("c0", "c1")
    assert not match.decided and match.outcome is None and match.settled_by == "undecided"
    assert all(comparison_outcome(c, match) is None for c in match.comparisons)
    # All pairs in both orders: c0-c1 gives nothing; c2 beats both breakers on the grades.
    outcomes = play_all_pairs(task, MatchSource(task, JudgmentMemo(judge)), "both", random.Random(0))
    assert len(outcomes) == 4
    assert all((a == "c2") == (outcome == 1.0) for a, b, outcome in outcomes)


def test_a_bracket_lets_the_answer_shown_first_go_on_from_an_undecided_match():
    from rankkit.strategies.brackets import play_bracket

    judge = BreakableJudge(breakers={"c0", "c1"})
    task, source = _source(judge, scores=(9.0, 6.0))
    rng = random.Random(3)
    bracket = play_bracket(["c0", "c1"], rng, lambda pairs, round: source.play_many(pairs, round=round))
    ((match,),) = bracket.rounds
    assert match.outcome is None and bracket.champion == match.a
