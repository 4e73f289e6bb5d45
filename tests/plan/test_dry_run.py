"""--dry-run figures: what a run will ask the judge, checked against real runs on the same cache."""

from __future__ import annotations

import pytest

from rankkit.cache import JudgmentCache
from rankkit.judges.sim import SimulatedJudge
from rankkit.plan import dry_run
from rankkit.runner import run
from rankkit.strategies import make_strategy
from rankkit.tasks import load_tasks
from tests.conftest import shared_dataset
from tests.plan.conftest import check_against_run


@pytest.mark.parametrize("specs", [
    ("knockout:debias=true", "bt", "individual"),
    ("knockout", "knockout:debias=true", "elo", "heapsort:debias=false"),
    ("swiss", "active", "sliding:passes=3", "pairwise", "panel_elo"),
    ("heapsort", "bt:debias=false", "knockout", "individual"),
    ("knockout", "bt", "elo", "knockout:debias=true"),
    ("knockout", "bt:debias=false", "elo", "swiss"),
])
def test_figures_are_exact_or_bounds_on_a_fresh_a_partial_and_a_full_cache(tmp_path, sample_tasks, specs):
    cache_path = tmp_path / "c.sqlite"
    fresh, _ = check_against_run(sample_tasks[:3], specs, cache_path)  # also fills half the cache
    partial, _ = check_against_run(sample_tasks, specs, cache_path)
    full, result = check_against_run(sample_tasks, specs, cache_path)
    assert full.exact and full.new == 0  # everything cached: every path is replayed exactly
    assert [r.comparisons for r in full.rows] == [s.cost.comparisons for s in result.strategies]


def test_knockout_bt_individual_fresh_are_exact(sample_tasks, tmp_path):
    report, result = check_against_run(sample_tasks, ("knockout:debias=true", "bt", "individual"),
                                       tmp_path / "c.sqlite")
    assert report.exact
    assert [(r.comparisons, r.grades, r.new) for r in report.rows] == \
        [(s.cost.comparisons, s.cost.grades, s.cost.judge_calls) for s in result.strategies]


def test_usr_topicalchat_counts_equal_the_run(tmp_path):
    tasks = load_tasks(shared_dataset("usr_topicalchat"))
    report, result = check_against_run(tasks, ("knockout", "bt", "individual"), tmp_path / "c.sqlite")
    assert [(r.comparisons, r.grades) for r in report.rows] == \
        [(s.cost.comparisons, s.cost.grades) for s in result.strategies]
    assert report.exact and report.new == sum(s.cost.judge_calls for s in result.strategies)


def test_random_strategy_line_ups_keep_their_bounds(tmp_path, sample_tasks):
    """Random orders of every strategy kind, on caches filled by other random line-ups."""
    pool = ["individual", "pairwise", "knockout", "knockout:debias=true", "elo:debias=false", "bt",
            "panel_elo", "heapsort", "heapsort:debias=false", "sliding:passes=2,debias=false", "swiss",
            "swiss:debias=true", "active:batch=2", "active:settle=false"]
    rng = __import__("random").Random(7)
    cache_path = tmp_path / "c.sqlite"
    for round_number in range(6):
        specs = rng.sample(pool, 4)
        tasks = rng.sample(sample_tasks, 3 + round_number % 4)
        check_against_run(tasks, specs, cache_path, seed=round_number % 2)


class ContentKeyedSim(SimulatedJudge):
    """A simulated judge keyed like an LLM judge: by the texts it is shown, not by ids."""

    def request_key(self, task, *candidates):
        from rankkit.judges.base import content_key

        return content_key(task, *candidates)


def test_candidates_with_the_same_text_are_counted_as_the_run_counts_them(tmp_path):
    from rankkit.tasks import Candidate, Task

    task = Task(task_id="dup", prompt="q", criterion="s", scale=(0.0, 4.0),
                candidates=tuple(Candidate(id=f"c{i}", text="same answer" if i < 2 else f"answer {i}",
                                           human={"s": float(i)}) for i in range(4)))
    judge = ContentKeyedSim()
    strategies = [make_strategy("individual"), make_strategy("bt:debias=false")]
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        report = dry_run([task], strategies, judge, cache)
        result = run([task], strategies, judge, cache, progress=False)
    assert [row.new for row in report.rows] == [s.cost.judge_calls for s in result.strategies] == [4, 6]
