"""The robustness report: exact against a brute-force oracle on small tasks, bounds, flags, brackets."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

import rankkit
from rankkit.data.tasks import task_rng
from rankkit.runs.analysis.robustness import (
    DEFAULT_TOP_K,
    Fewest,
    fewest_changes,
    ranking_robustness,
    robustness_report,
    robustness_tables,
    task_robustness,
)
from rankkit.runs.results import RunResult
from rankkit.stats.ratings import bradley_terry, elo_over_permutations
from rankkit.strategies.elo import comparison_outcomes
from tests.helpers import make_task


def random_tasks(count: int, sizes: tuple[int, ...], seed: int) -> list:
    """Small tasks with random human scores (ties included), for the simulated judge."""
    rng = random.Random(seed)
    return [
        make_task(
            [rng.choice([0, 1, 2, 3, 4, 5]) + rng.random() * rng.choice([0, 1]) for _ in range(rng.choice(sizes))],
            task_id=f"t{seed}_{i}",
            scale=(0.0, 6.0),
        )
        for i in range(count)
    ]


def oracle(outcomes: list, ids: list, fit, k: int) -> dict:
    """Brute force: every set of judgments, smallest first, flipped or removed, refitted by ``fit``;
    the fewest that changes the #1 and the top k (None when no set does)."""

    def order(sample: list) -> list:
        ratings = fit(sample)
        return sorted(ids, key=lambda cid: (-ratings[cid], ids.index(cid)))  # ties keep the data's order

    base = order(outcomes)
    figures = {}
    for change in ("flip", "remove"):
        pool = [i for i, (_, _, o) in enumerate(outcomes) if change == "remove" or o != 0.5]
        for target in ("top1", "top_k"):
            if target == "top_k" and len(ids) <= k:
                continue
            found = None
            for size in range(1, len(pool) + 1):
                for subset in combinations(pool, size):
                    if change == "flip":
                        sample = [(a, b, 1.0 - o) if i in subset else (a, b, o) for i, (a, b, o) in enumerate(outcomes)]
                    else:
                        sample = [item for i, item in enumerate(outcomes) if i not in subset]
                    got = order(sample)
                    if (got[0] != base[0]) if target == "top1" else (set(got[:k]) != set(base[:k])):
                        found = size
                        break
                if found is not None:
                    break
            figures[(target, change)] = found
    return figures


CASES = [  # strategy, task sizes, tasks, judge seed
    ("bt:order=given", (3, 4, 5), 14, 1),
    ("bt:order=given", (6,), 3, 2),
    ("bt", (3, 4), 8, 3),
    ("elo:order=given,permutations=8", (3, 4, 5), 8, 4),
]


@pytest.mark.parametrize("spec, sizes, count, judge_seed", CASES)
def test_the_figure_equals_brute_force_on_small_tasks(spec, sizes, count, judge_seed):
    tasks = random_tasks(count, sizes, judge_seed)
    result = rankkit.compare(tasks, [spec], judge=f"sim:preset=chatgpt,seed={judge_seed}", seed=judge_seed)
    run = result.strategies[0]
    strategy = run.strategy
    checked = 0
    for task, task_result in zip(tasks, run.tasks):
        ids = list(task.candidate_ids)
        if spec.startswith("bt"):

            def fit(sample, ids=ids):
                return bradley_terry(sample, ids, alpha=strategy.alpha)
        else:

            def fit(sample, ids=ids, task_id=task.task_id):
                return elo_over_permutations(
                    sample, ids, permutations=strategy.permutations, seed=task_rng(judge_seed, task_id), k=strategy.k
                )

        expected = oracle(comparison_outcomes(task_result.comparisons), ids, fit, DEFAULT_TOP_K)
        figures = task_robustness(run, task_result, task, result.seed, budget=10**6)
        assert figures["defined"], figures
        for (target, change), count_ in expected.items():
            found: Fewest = figures[target][change]
            assert found.exact, (task.task_id, target, change)
            assert found.count == count_, (task.task_id, target, change, found, count_)
            checked += 1
        if len(ids) <= DEFAULT_TOP_K:
            assert figures["top_k"] is None
    assert checked >= count * 2


def test_the_smallest_set_found_does_change_the_ranking():
    """The reported judgments, flipped, really move the #1 (recomputed outside the search)."""
    tasks = random_tasks(5, (5,), 7)
    result = rankkit.compare(tasks, ["bt:order=given"], judge="sim:preset=chatgpt,seed=7", seed=7)
    run = result.strategies[0]
    for task, task_result in zip(tasks, run.tasks):
        figures = task_robustness(run, task_result, task, result.seed)
        chosen = set(figures["top1"]["flip"].judgments)
        outcomes = comparison_outcomes(task_result.comparisons)
        flipped = [(a, b, 1.0 - o) if i in chosen else (a, b, o) for i, (a, b, o) in enumerate(outcomes)]
        ratings = bradley_terry(flipped, task.candidate_ids)
        assert max(task.candidate_ids, key=lambda c: ratings[c]) != task_result.ranking[0]


def test_past_the_budget_the_figure_is_a_greedy_upper_bound():
    truth = {3, 11, 17}
    found = fewest_changes(range(40), lambda s: truth <= s, greedy_order=[17, 0, 11, 5, 3, 9], budget=100)
    assert (found.count, found.exact, found.at_least) == (3, False, 2)  # 40 singles tried, pairs would overrun
    assert set(found.judgments) == truth  # 0 and 5 dropped again: not needed
    assert found.text() == "≤ 3"
    exact = fewest_changes(range(8), lambda s: truth & set(range(8)) <= s, greedy_order=[], budget=10**6)
    assert (exact.count, exact.exact, exact.text()) == (1, True, "1")


def test_a_greedy_figure_is_proven_exact_by_trying_every_smaller_set():
    one = fewest_changes(range(500), lambda s: 7 in s, greedy_order=[7], budget=0)
    assert (one.text(), one.replays) == ("1", 1)  # nothing is smaller than one judgment
    two = fewest_changes(range(50), lambda s: {3, 9} <= s, greedy_order=[3, 9], budget=50)
    assert (two.text(), two.at_least, two.replays) == ("2", 2, 2 + 1 + 50)  # greedy, pruning, every single
    short = fewest_changes(range(50), lambda s: {3, 9} <= s, greedy_order=[3, 9], budget=49)
    assert short.text() == "≤ 2"
    smaller = fewest_changes(range(10), lambda s: 4 in s or {1, 2, 3} <= s, greedy_order=[1, 2, 3], budget=10)
    assert (smaller.text(), smaller.judgments) == ("1", (4,))  # the exhaustive search beats the greedy set


def test_an_undefined_recomputation_is_left_out_of_the_greedy_set():
    def changes(subset):
        if 0 in subset:
            return None  # this one leaves the record
        return {1, 2} <= subset

    found = fewest_changes(range(50), changes, greedy_order=[0, 1, 2], budget=10)
    assert (found.count, set(found.judgments)) == (2, {1, 2})


def test_nothing_changes_it_is_none_and_exact():
    found = fewest_changes(range(4), lambda s: False, greedy_order=[], budget=100)
    assert (found.count, found.exact, found.text()) == (None, True, "none")
    bound = fewest_changes(range(30), lambda s: False, greedy_order=range(30), budget=100)
    assert (bound.count, bound.exact, bound.text()) == (None, False, "> 1")


def test_a_figure_at_most_one_percent_of_the_judgments_is_flagged():
    pairs = [("a", "b", 1.0)] + [("c", "d", 1.0)] * 199

    def recompute(flips, removals):
        moved = 0 in flips or 0 in removals
        return ("b", ("b", "a", "c", "d")) if moved else ("a", ("a", "b", "c", "d"))

    figures = ranking_robustness(pairs, recompute, ("a", ("a", "b", "c", "d")), used=200, budget=500)
    assert figures["top1"]["flip"].count == 1 and figures["top1"]["remove"].count == 1
    assert "top1 flip" in figures["fragile"] and "top1 remove" in figures["fragile"]
    figures = ranking_robustness(pairs[:50], recompute, ("a", ("a", "b", "c", "d")), used=50, budget=500)
    assert figures["fragile"] == []  # 1 of 50 is 2%


def test_a_knockout_changes_champion_when_its_final_is_flipped():
    tasks = random_tasks(6, (4, 5, 6), 11)
    result = rankkit.compare(tasks, ["knockout"], judge="sim:preset=gpt4,seed=11", seed=11)
    run = result.strategies[0]
    for task, task_result in zip(tasks, run.tasks):
        figures = task_robustness(run, task_result, task, result.seed)
        assert figures["defined"]
        found = figures["top1"]["flip"]
        assert (found.count, found.exact) == (1, True)
        (index,) = found.judgments
        final = task_result.comparisons[index]
        assert final.round == max(c.round for c in task_result.comparisons)  # an earlier flip leaves the record
        assert task_result.champion in (final.first, final.second)


def test_grades_alone_are_reported_as_not_defined():
    tasks = random_tasks(2, (4,), 5)
    result = rankkit.compare(tasks, ["individual", "bt:order=given"], judge="sim:preset=gpt4", seed=0)
    report = robustness_report(result, k=2)
    by_name = {item["strategy"]: item for item in report}
    assert all(not t["defined"] and "grades" in t["reason"] for t in by_name["individual"]["tasks"])
    assert all(t["judgments"] == 4 for t in by_name["individual"]["tasks"])  # the grades it used
    assert all(t["defined"] for t in by_name["bt:order=given"]["tasks"])
    summary, per_task = robustness_tables(report)
    assert "top 2" in summary.note
    # a strategy defined on no task is left out with its reason, not shown as "individual  tasks 0  -  -"
    assert [row["strategy"] for row in summary.rows] == ["bt:order=given"]
    assert "not defined, so left out: individual (grades judge one answer alone" in summary.note
    assert all(row["tasks"] for row in summary.rows)
    assert "individual" not in {row["strategy"] for row in per_task.rows}
    assert "'> n' = no set of up to n judgments changes it" in per_task.note  # the notation is explained


def test_a_results_file_read_back_gives_the_same_report(tmp_path):
    tasks = random_tasks(3, (4, 5), 9)
    result = rankkit.compare(
        tasks, ["knockout:order=both", "elo:permutations=5", "individual"], judge="sim:preset=gpt4", seed=3
    )
    again = RunResult.from_dict(result.to_dict())
    assert again.strategies[2].tasks[0].grades == result.strategies[2].tasks[0].grades  # grades are recorded
    assert [item["tasks"] for item in robustness_report(again)] == [item["tasks"] for item in robustness_report(result)]


def test_rankkit_analyze_prints_and_writes_the_robustness_report(tmp_path):
    from click.testing import CliRunner

    from rankkit.cli import main
    from rankkit.data.samples import sample_path

    results = tmp_path / "r.json"
    ran = CliRunner().invoke(
        main,
        [
            "compare",
            "--data",
            str(sample_path("tasks")),
            "--judge",
            "sim:preset=gpt4",
            "--strategies",
            "knockout,bt:order=given",
            "--no-cache",
            "--quiet",
            "--out",
            str(results),
        ],
    )
    assert ran.exit_code == 0, ran.output
    table = CliRunner().invoke(
        main, ["analyze", str(results), "--bootstrap", "0", "--top-k", "2", "--out", str(tmp_path / "a.json")]
    )
    assert table.exit_code == 0, table.output
    assert "robustness per task" in table.output and "top-2 flip" in table.output
    import json

    written = json.loads((tmp_path / "a.json").read_text())
    (knockout, bt) = written["robustness"]
    assert knockout["strategy"] == "knockout" and len(bt["tasks"]) == 6
    assert all(t["top1"]["flip"]["count"] == 1 for t in knockout["tasks"])  # its final, flipped
    csv = CliRunner().invoke(main, ["analyze", str(results), "--bootstrap", "0", "--format", "csv"])
    assert "#1 remove" in csv.output
    off = CliRunner().invoke(main, ["analyze", str(results), "--bootstrap", "0", "--robustness-budget", "0"])
    assert "robustness" not in off.output
