"""--dry-run figures: what a run will ask the judge, checked against real runs on the same cache."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from rankkit.data.tasks import load_tasks
from rankkit.judges.simulated.sim import FixedAccuracyJudge
from rankkit.judgments.cache import JudgmentCache
from rankkit.runs.plan import dry_run, expected_judgments
from rankkit.runs.runner import run
from rankkit.strategies import Ranking, Strategy, make_strategy
from tests.conftest import shared_dataset
from tests.helpers import make_task
from tests.runs.plan.conftest import check_against_run, check_figures


@pytest.mark.parametrize(
    "specs",
    [
        ("knockout:debias=true", "bt", "individual"),
        ("knockout", "knockout:debias=true", "elo", "heapsort:debias=false"),
        ("swiss", "active", "sliding:passes=3", "pairwise", "panel_elo"),
        ("heapsort", "bt:debias=false", "knockout", "individual"),
        ("knockout", "bt", "elo", "knockout:debias=true"),
        ("knockout", "bt:debias=false", "elo", "swiss"),
    ],
)
def test_figures_are_exact_or_bounds_on_a_fresh_a_partial_and_a_full_cache(tmp_path, sample_tasks, specs):
    cache_path = tmp_path / "c.sqlite"
    fresh, _ = check_against_run(sample_tasks[:3], specs, cache_path)  # also fills half the cache
    partial, _ = check_against_run(sample_tasks, specs, cache_path)
    full, result = check_against_run(sample_tasks, specs, cache_path)
    assert full.exact and full.new == 0  # everything cached: every strategy takes the run's path
    assert [r.comparisons for r in full.rows] == [s.cost.comparisons for s in result.strategies]


def test_knockout_bt_individual_fresh_are_exact(sample_tasks, tmp_path):
    report, result = check_against_run(
        sample_tasks, ("knockout:debias=true", "bt", "individual"), tmp_path / "c.sqlite"
    )
    assert report.exact
    assert [(r.comparisons, r.grades, r.new) for r in report.rows] == [
        (s.cost.comparisons, s.cost.grades, s.cost.judge_calls) for s in result.strategies
    ]


def test_usr_topicalchat_counts_equal_the_run(tmp_path):
    tasks = load_tasks(shared_dataset("usr_topicalchat"))
    report, result = check_against_run(tasks, ("knockout", "bt", "individual"), tmp_path / "c.sqlite")
    assert [(r.comparisons, r.grades) for r in report.rows] == [
        (s.cost.comparisons, s.cost.grades) for s in result.strategies
    ]
    assert report.exact and report.new == sum(s.cost.judge_calls for s in result.strategies)


def test_random_strategy_line_ups_keep_their_bounds(tmp_path, sample_tasks):
    """Random orders of every strategy kind, on caches filled by other random line-ups."""
    pool = [
        "individual",
        "pairwise",
        "knockout",
        "knockout:debias=true",
        "elo:debias=false",
        "bt",
        "panel_elo",
        "heapsort",
        "heapsort:debias=false",
        "sliding:passes=2,debias=false",
        "swiss",
        "swiss:debias=true",
        "active:batch=2",
        "active:settle=false",
        "double_elimination",
        "knockout:order=random",
    ]
    rng = __import__("random").Random(7)
    cache_path = tmp_path / "c.sqlite"
    for round_number in range(6):
        specs = rng.sample(pool, 4)
        tasks = rng.sample(sample_tasks, 3 + round_number % 4)
        check_against_run(tasks, specs, cache_path, seed=round_number % 2)


class ContentKeyedSim(FixedAccuracyJudge):
    """A simulated judge keyed like an LLM judge: by the texts it is shown, not by ids."""

    def request_key(self, task, *candidates):
        from rankkit.judges.base import content_key

        return content_key(task, *candidates)


def test_candidates_with_the_same_text_are_counted_as_the_run_counts_them(tmp_path):
    from rankkit.data.tasks import Candidate, Task

    task = Task(
        task_id="dup",
        prompt="q",
        criterion="s",
        scale=(0.0, 4.0),
        candidates=tuple(
            Candidate(id=f"c{i}", text="same answer" if i < 2 else f"answer {i}", human={"s": float(i)})
            for i in range(4)
        ),
    )
    judge = ContentKeyedSim()
    strategies = [make_strategy("individual"), make_strategy("bt:debias=false")]
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        report = dry_run([task], strategies, judge, cache)
        result = run([task], strategies, judge, cache, progress=False)
    # Two answers with the same text are one request to a judge that reads only text: paid once.
    assert [row.new for row in report.rows] == [s.cost.judge_calls for s in result.strategies] == [3, 4]
    assert [s.cost.shared_hits for s in result.strategies] == [1, 2]


@pytest.mark.parametrize(
    "spec, per_task",
    [
        ("knockout", lambda n: n - 1),
        ("knockout:debias=true", lambda n: 2 * (n - 1)),
        ("bt", lambda n: n * (n - 1)),
        ("elo:debias=false", lambda n: n * (n - 1) // 2),
        ("bt:order=random", lambda n: n * (n - 1) // 2),
        ("individual", lambda n: n),
    ],
)
def test_fixed_counts_are_exact_on_a_fresh_cache(sample_tasks, tmp_path, spec, per_task):
    report, result = check_against_run(sample_tasks, [spec], tmp_path / "c.sqlite")
    (row,) = report.rows
    expected = sum(per_task(len(task.candidates)) for task in sample_tasks)
    assert row.exact and row.comparisons + row.grades == row.new == expected
    assert row.new == result.strategies[0].cost.judge_calls


@pytest.mark.parametrize("spec", ["heapsort", "sliding", "double_elimination", "active"])
def test_strategies_whose_path_depends_on_verdicts_are_bounded(sample_tasks, spec):
    """They declare a worst case and no fixed count: on a fresh cache their figures are ``≤``."""
    report = dry_run(sample_tasks, [make_strategy(spec)], FixedAccuracyJudge())
    (row,) = report.rows
    assert row.bounds == {"comparisons": "≤", "new": "≤"}
    strategy = make_strategy(spec)
    assert row.new == sum(strategy.max_judgments(len(task.candidates)) for task in sample_tasks)


@dataclass(frozen=True)
class RoundRobin(Strategy):
    """A third-party strategy: every pair once in data order, the count of wins as score. It
    declares nothing for the dry run."""

    name = "round_robin"

    def rank(self, task, source, rng):
        ids = task.candidate_ids
        wins = dict.fromkeys(ids, 0.0)
        for match in source.play_many([(a, b) for i, a in enumerate(ids) for b in ids[i + 1 :]], order="given"):
            wins[match.a] += match.outcome
            wins[match.b] += 1 - match.outcome
        return Ranking(scores=wins)


@dataclass(frozen=True)
class Ladder(Strategy):
    """A third-party strategy whose path depends on verdicts: the best so far meets the next
    candidate, until the lead changes hands twice in a row. It declares nothing for the dry run."""

    name = "ladder"

    def rank(self, task, source, rng):
        ids = task.candidate_ids
        best, streak = ids[0], 0
        for challenger in ids[1:]:
            match = source.play(best, challenger, order="given")
            best, streak = (challenger, streak + 1) if match.outcome < 0.5 else (best, 0)
            if streak == 2:
                break
        return Ranking(scores={cid: float(cid == best) for cid in ids})


def test_a_new_strategy_gets_an_exact_dry_run_without_writing_anything_for_it(sample_tasks, tmp_path):
    judge = FixedAccuracyJudge(accuracy=0.8, position_bias=0.2)
    cache_path = tmp_path / "c.sqlite"
    for tasks in (sample_tasks[:2], sample_tasks):  # a fresh cache, then one that holds two tasks
        with JudgmentCache(cache_path) as cache:
            report = dry_run(tasks, [RoundRobin()], judge, cache)
            result = run(tasks, [RoundRobin()], judge, cache, progress=False)
        check_figures(report, result)
        (row,) = report.rows
        assert row.exact and row.new == result.strategies[0].cost.judge_calls
        assert row.comparisons == sum(len(t.candidates) * (len(t.candidates) - 1) // 2 for t in tasks)
    assert row.cached == sum(len(t.candidates) * (len(t.candidates) - 1) // 2 for t in sample_tasks[:2])


def test_a_new_strategy_whose_path_depends_on_verdicts_gets_estimates(sample_tasks):
    (row,) = dry_run(sample_tasks, [Ladder()], FixedAccuracyJudge()).rows
    assert not row.exact and row.bounds["new"] == "~" and "no max_judgments declared" in row.notes[0]


def test_expected_judgments_counts_what_the_run_uses(sample_tasks):
    strategies = [make_strategy(s) for s in ("knockout", "bt", "individual")]
    judge = FixedAccuracyJudge()
    result = run(sample_tasks, strategies, judge, None, progress=False)
    assert expected_judgments(sample_tasks, strategies, seed=0) == (
        sum(s.cost.comparisons + s.cost.grades for s in result.strategies),
        "",
    )  # all three fixed: exact
    assert expected_judgments(sample_tasks, strategies, seed=0, judge=judge) is None  # as fast as the run itself
    assert expected_judgments([make_task([0.0] * 5)], [make_strategy("bt")], seed=0, max_candidates=4) is None


def test_a_progress_total_that_is_a_bound_says_so(sample_tasks, capsys):
    # Issue 24, item 13: the bar's total started at an upper bound and shrank silently at the end,
    # so its ETA looked certain. A strategy whose path depends on the verdicts gives a bound, marked.
    from rankkit.runs.runner import PROGRESS_LABELS, RunProgress

    strategies = [make_strategy(s) for s in ("knockout", "heapsort")]
    result = run(sample_tasks, strategies, FixedAccuracyJudge(), None, progress=False)
    used = sum(s.cost.comparisons + s.cost.grades for s in result.strategies)
    total, mark = expected_judgments(sample_tasks, strategies, seed=0)
    assert mark == "≤" and total >= used
    worst = sum(
        strategies[1].max_judgments(len(t.candidates)) + strategies[0].exact_judgments(len(t.candidates))
        for t in sample_tasks
    )
    assert total == worst
    bar = RunProgress(len(sample_tasks), disable=False, expected=(total, mark))
    bar.judged(used, paid=used, cached=0, reused=0)
    bar.close()
    shown = capsys.readouterr().err
    assert "judging (total at most): " in shown and f"0/{total}" in shown  # the bar starts at the bound
    assert PROGRESS_LABELS[""] == "judging" and "estimated" in PROGRESS_LABELS["~"]


def test_tasks_whose_prompts_pass_the_judges_context_are_flagged(sample_tasks):
    from dataclasses import replace

    from rankkit.judges import make_judge

    judge = make_judge("vllm:smollm2,max_model_len=2048,mode=logprob", stand_in=True)  # nothing loaded
    assert judge.runtime.context == (2048, "max_model_len")
    long = replace(sample_tasks[1], prompt="Explain every step of your reasoning. " * 300)
    report = dry_run([sample_tasks[0], long], [make_strategy("knockout")], judge)
    (warning,) = report.warnings
    assert warning.startswith(f"task {long.task_id!r}: its largest prompt is about ")
    assert "past the judge's context of 2,048 tokens (max_model_len)" in warning
    assert dry_run([sample_tasks[0]], [make_strategy("knockout")], judge).warnings == []
    assert dry_run([long], [make_strategy("knockout")], FixedAccuracyJudge()).warnings == []  # reads no prompts


# -- runs too large to simulate ----------------------------------------------------------------

import importlib  # noqa: E402
import json  # noqa: E402

from click.testing import CliRunner  # noqa: E402

from rankkit.cli import main  # noqa: E402
from rankkit.judges import make_judge  # noqa: E402

dry_run_module = importlib.import_module("rankkit.runs.plan.dry_run")  # the package exports the function by that name


def many_candidates(n: int, tasks: int = 2) -> list:
    return [make_task([float(i % 5) for i in range(n)], task_id=f"n{n}t{t}", scale=(0.0, 5.0)) for t in range(tasks)]


@pytest.mark.parametrize("spec", ["bt", "bt:order=given", "bt:order=random", "elo", "elo:order=given"])
@pytest.mark.parametrize("judge_spec", ["sim:preset=gpt4", "vllm:smollm2,max_model_len=2048,mode=logprob"])
def test_the_counted_plan_equals_the_simulated_one(monkeypatch, spec, judge_spec):
    tasks = [*many_candidates(7), *many_candidates(12, tasks=1)]
    judge = make_judge(judge_spec, stand_in=True)
    simulated = dry_run(tasks, [make_strategy(spec)], judge, None, seed=3)
    monkeypatch.setattr(dry_run_module, "SIMULATION_LIMIT", 0)
    counted = dry_run(tasks, [make_strategy(spec)], make_judge(judge_spec, stand_in=True), None, seed=3)
    (before,), (after,) = simulated.rows, counted.rows
    for figure in ("comparisons", "grades", "cached", "shared", "new", "bounds", "strategy"):
        assert getattr(after, figure) == getattr(before, figure), figure
    if before.prompt_tokens is None:
        assert after.prompt_tokens is None
    else:  # the mean prompt per judgment against the sum of each: additive sizes, so close
        assert after.prompt_tokens == pytest.approx(before.prompt_tokens, rel=0.02)
    assert counted.warnings == simulated.warnings


@pytest.mark.parametrize("specs", [["knockout"], ["bt", "elo"], ["heapsort"]])
def test_a_run_too_large_to_simulate_that_cannot_be_counted_is_refused_naming_its_count(monkeypatch, specs):
    monkeypatch.setattr(dry_run_module, "SIMULATION_LIMIT", 10)
    tasks = many_candidates(8)
    strategies = [make_strategy(spec) for spec in specs]
    with pytest.raises(dry_run_module.DryRunTooLarge, match="this run plans up to [0-9,]+ judgments") as caught:
        dry_run(tasks, strategies, make_judge("sim", stand_in=True), None)
    assert f"{dry_run_module.planned_judgments(tasks, strategies):,}" in str(caught.value)
    assert caught.value.exit_code == 2


def test_a_counted_plan_needs_an_empty_cache(monkeypatch, tmp_path):
    tasks = many_candidates(6)
    cache = JudgmentCache(tmp_path / "c.sqlite")
    run(tasks, [make_strategy("bt")], FixedAccuracyJudge(accuracy=1.0, seed=0), cache, progress=False)
    monkeypatch.setattr(dry_run_module, "SIMULATION_LIMIT", 10)
    with pytest.raises(dry_run_module.DryRunTooLarge):
        dry_run(tasks, [make_strategy("bt")], make_judge("sim", stand_in=True), cache)
    cache.close()


def test_the_cli_dry_run_of_bt_on_500_candidates_is_counted(tmp_path):
    data = tmp_path / "big.jsonl"
    candidates = [{"id": f"c{i}", "text": f"answer {i}", "human": {"score": i % 7}} for i in range(500)]
    data.write_text(json.dumps({"task_id": "q", "prompt": "?", "candidates": candidates}) + "\n")
    shown = CliRunner().invoke(
        main, ["compare", "--data", str(data), "--judge", "sim", "--strategies", "bt", "--dry-run", "--no-cache"]
    )
    assert shown.exit_code == 0, shown.output
    assert "new judgments to pay for: 249500" in shown.output
    refused = CliRunner().invoke(
        main, ["compare", "--data", str(data), "--judge", "sim", "--strategies", "bt,elo", "--dry-run", "--no-cache"]
    )
    assert refused.exit_code == 2 and "this run plans up to" in refused.output and "Traceback" not in refused.output
