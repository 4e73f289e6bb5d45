"""k-way judgments through the memo, the match source, the cache, the dry run, results files and the CLI."""

from __future__ import annotations

import json
import random

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.data.tasks import SAMPLE_DATA
from rankkit.judges import make_judge
from rankkit.judges.base import JudgeError
from rankkit.judges.simulated.sim import LatentJudge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.judgments.cache import JudgmentCache
from rankkit.judgments.memo import JudgmentMemo, Origin
from rankkit.judgments.values import GroupChoice, GroupRanking
from rankkit.runs.plan import dry_run
from rankkit.runs.results import RunResult
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy
from rankkit.strategies.choices import GroupComparison, make_group_match, presentations
from rankkit.strategies.matches import MatchSource
from tests.helpers import make_task

TOLERANCE = 1e-12


class CountingKway(LatentJudge):
    """The latent sim, counting its k-way judgments; fails once ``fail_after`` have been made."""

    def __init__(self, fail_after: int | None = None, **kwargs):
        super().__init__(**kwargs)
        object.__setattr__(self, "fail_after", fail_after)
        object.__setattr__(self, "calls", 0)

    def fingerprint_fields(self):
        return super().fingerprint_fields()  # the same identity as the plain sim: they share a cache

    def choose(self, task, candidates):
        if self.fail_after is not None and self.calls >= self.fail_after:
            raise JudgeError("planted failure")
        object.__setattr__(self, "calls", self.calls + 1)
        return super().choose(task, candidates)


def test_the_order_shown_is_part_of_a_k_way_request():
    task = make_task([1.0, 2.0, 3.0])
    memo = JudgmentMemo(LatentJudge())
    a, b, c = task.candidates
    answers = memo.choices([(task, (a, b, c)), (task, (a, b, c)), (task, (c, a, b))])
    assert [origin for _, origin in answers] == [Origin.JUDGE, Origin.MEMORY, Origin.JUDGE]
    # a k-way choice of two is not the pairwise verdict on them: another kind, another row
    assert memo.verdicts([(task, a, b)])[0][1] is Origin.JUDGE
    assert memo.choices([(task, (a, b))])[0][1] is Origin.JUDGE
    assert memo.rankings([(task, (a, b, c))])[0][1] is Origin.JUDGE


def test_the_match_source_counts_k_way_judgments_as_comparisons():
    task = make_task([float(i) for i in range(6)])
    source = MatchSource(task, JudgmentMemo(LatentJudge(perception=0.0, pair_noise=0.0, slot_bias=0.0)))
    groups = [["c0", "c1", "c2"], ["c3", "c4", "c5"]]
    first = source.choose_many(groups, round=1)
    again = source.choose_many(groups, round=2)  # the same groups in the same order: free
    assert [m.winner for m in first] == [m.winner for m in again] == ["c2", "c5"]
    assert (source.cost.comparisons, source.cost.judge_calls) == (2, 2)
    assert [g.round for g in source.group_comparisons] == [1, 1]
    source.choose_many(groups, order="permute")
    assert (source.cost.comparisons, source.cost.judge_calls) == (6, 6)  # two new shifts per group


def test_a_group_match_averages_slot_scores_over_the_orders_shown():
    shown = presentations(["a", "b", "c"], "permute", None)
    judgments = [
        GroupChoice(chosen=0, grades=(3.0, 1.0, 2.0)),
        GroupChoice(chosen=2, grades=(0.0, 1.0, 4.0)),
        GroupChoice(chosen=0, grades=(5.0, 0.0, 1.0)),
    ]
    match = make_group_match(["a", "b", "c"], [GroupComparison(s, j) for s, j in zip(shown, judgments)])
    # shown (a, b, c), (b, c, a), (c, a, b): a 3 + 4 + 0, b 1 + 0 + 1, c 2 + 1 + 5
    assert match.scores == pytest.approx({"a": 7 / 3, "b": 2 / 3, "c": 8 / 3}, abs=TOLERANCE)
    assert match.winner == "c"
    ranking = make_group_match(["a", "b"], [GroupComparison(("b", "a"), GroupRanking(permutation=(0, 1)))])
    assert ranking.ranking == ("b", "a") and ranking.winner == "b"


def test_random_presentation_is_drawn_from_the_strategys_generator():
    assert presentations(list("abcd"), "random", random.Random(1)) == presentations(
        list("abcd"), "random", random.Random(1)
    )
    with pytest.raises(ValueError, match="rng"):
        presentations(list("abc"), "random", None)


def test_a_failed_run_resumes_from_the_cache_without_paying_twice(tmp_path):
    tasks = planted_tasks({f"s{i}": 50.0 * i for i in range(13)}, prompts=2, seed=1)
    strategy = make_strategy("setwise_knockout:k=3")
    path = tmp_path / "cache.sqlite"
    with JudgmentCache(path) as cache, pytest.raises(JudgeError):
        run(tasks, [strategy], CountingKway(fail_after=5), cache, seed=0)
    resumed = CountingKway()
    with JudgmentCache(path) as cache:
        result = run(tasks, [strategy], resumed, cache, seed=0)
    total = 2 * strategy.exact_judgments(13)
    cost = result.strategies[0].cost
    assert (cost.comparisons, cost.cache_hits, cost.judge_calls) == (total, 5, total - 5) and resumed.calls == total - 5
    alone = run(tasks, [strategy], LatentJudge(), seed=0).strategies[0]
    assert [t.ranking for t in result.strategies[0].tasks] == [t.ranking for t in alone.tasks]


def test_the_dry_run_counts_k_way_strategies_exactly_where_they_are_fixed():
    tasks = planted_tasks({f"s{i}": 50.0 * i for i in range(10)}, prompts=3, seed=2)
    strategies = [
        make_strategy(s)
        for s in ("setwise_knockout", "setwise_knockout:order=permute", "listwise", "setwise_heapsort:top_k=2")
    ]
    plan = dry_run(tasks, strategies, make_judge("sim"), None, seed=0)
    rows = {row.strategy: row for row in plan.rows}
    assert (rows["setwise_knockout"].comparisons, rows["setwise_knockout"].bounds) == (9, {})
    assert rows["setwise_knockout:order=permute"].comparisons == 3 * 12
    assert "comparisons" not in rows["setwise_knockout:order=permute"].bounds
    assert (rows["listwise"].comparisons, rows["listwise"].bounds.get("comparisons")) == (12, None)
    assert rows["setwise_heapsort:top_k=2"].bounds["comparisons"] == "≤"
    actual = run(tasks, strategies, make_judge("sim"), seed=0).strategies
    assert actual[3].cost.comparisons <= rows["setwise_heapsort:top_k=2"].comparisons


def test_k_way_judgments_are_written_to_and_read_from_results_files():
    tasks = planted_tasks({f"s{i}": 80.0 * i for i in range(7)}, prompts=2, seed=3)
    result = run(
        tasks,
        [make_strategy("listwise"), make_strategy("setwise_knockout"), make_strategy("knockout")],
        make_judge("sim"),
        seed=0,
    )
    data = json.loads(json.dumps(result.to_dict()))
    assert "group_comparisons" not in data["strategies"][2]["tasks"][0]  # pairwise results unchanged
    back = RunResult.from_dict(data)
    for before, after in zip(result.strategies, back.strategies):
        for task_before, task_after in zip(before.tasks, after.tasks):
            assert task_after.group_comparisons == task_before.group_comparisons


def invoke(*args: str):
    return CliRunner().invoke(main, list(args))


@pytest.mark.parametrize("judge", ["sim:model=fixed", "panel:sim+sim:preset=chatgpt+sim:preset=falcon"])
def test_a_judge_without_k_way_judgments_is_refused_up_front(judge):
    result = invoke("compare", "--strategies", "knockout,setwise_knockout", "--judge", judge, "--no-cache", "--quiet")
    assert result.exit_code == 2
    assert "strategy setwise_knockout needs k-way judgments" in result.output and "cannot give" in result.output


def test_bad_k_way_parameters_exit_2_naming_the_strategy():
    result = invoke("compare", "--strategies", "listwise:window=4,step=4", "--judge", "sim", "--no-cache")
    assert result.exit_code == 2 and "strategy listwise: step must be 1 to window - 1" in result.output


def test_compare_and_its_dry_run_agree_on_the_k_way_counts():
    plan = invoke(
        "compare",
        "--strategies",
        "setwise_knockout:k=3,listwise",
        "--judge",
        "sim",
        "--no-cache",
        "--dry-run",
        "--format",
        "json",
    )
    ran = invoke(
        "compare",
        "--strategies",
        "setwise_knockout:k=3,listwise",
        "--judge",
        "sim",
        "--no-cache",
        "--quiet",
        "--format",
        "json",
    )
    assert plan.exit_code == ran.exit_code == 0
    planned = {row["strategy"]: row["comparisons"] for row in json.loads(plan.stdout)}
    done = {run["name"]: run["comparisons"] for run in json.loads(ran.stdout)["strategies"]}
    assert planned == done


# -- replay -----------------------------------------------------------------------------------


def test_a_run_exported_and_replayed_gives_the_same_k_way_results(tmp_path):
    from rankkit.judges.simulated.replay import ReplayJudge
    from rankkit.runs.recording import rows_from_results, write_judgments

    tasks = planted_tasks({f"s{i}": 80.0 * i for i in range(9)}, prompts=2, seed=4)
    strategies = [make_strategy(s) for s in ("setwise_knockout:k=3", "listwise", "knockout")]
    recorded = run(tasks, strategies, make_judge("sim:preset=chatgpt"), seed=1)
    path = tmp_path / "judgments.jsonl"
    write_judgments(rows_from_results(RunResult.from_dict(json.loads(json.dumps(recorded.to_dict())))), path)
    replayed = run(tasks, strategies, ReplayJudge(path), seed=1)
    for before, after in zip(recorded.strategies, replayed.strategies):
        assert [t.ranking for t in after.tasks] == [t.ranking for t in before.tasks], before.name
        for task_before, task_after in zip(before.tasks, after.tasks):
            assert task_after.scores == pytest.approx(task_before.scores, abs=TOLERANCE)
    # another seed shows other groups: misses, refused loudly by default, counted with on_miss=tie
    with pytest.raises(JudgeError, match="no recorded choice"):
        run(tasks, strategies[:1], ReplayJudge(path), seed=2)
    missed = run(tasks, strategies[:1], ReplayJudge(path, on_miss="tie"), seed=2).strategies[0]
    assert missed.cost.parse_failures > 0


def test_a_recording_of_pairs_cannot_serve_a_k_way_strategy(tmp_path):
    path = tmp_path / "pairs.jsonl"
    path.write_text(json.dumps({"task_id": "t", "a": "c0", "b": "c1", "winner": "c0"}) + "\n")
    result = invoke(
        "compare",
        "--data",
        str(SAMPLE_DATA),
        "--strategies",
        "listwise",
        "--judge",
        f"replay:{path}",
        "--no-cache",
        "--quiet",
    )
    assert result.exit_code == 2 and "strategy listwise needs k-way judgments" in result.output


@pytest.mark.parametrize(
    "row, field",
    [
        ({"task_id": "t", "shown": ["a"], "chosen": "a"}, "shown"),
        ({"task_id": "t", "shown": ["a", "b"], "chosen": "c"}, "chosen"),
        ({"task_id": "t", "kind": "ranking", "shown": ["a", "b", "c"], "ranking": ["a", "a", "b"]}, "ranking"),
        ({"task_id": "t", "kind": "pick", "shown": ["a", "b"], "chosen": "a"}, "kind"),
    ],
)
def test_malformed_k_way_rows_are_refused_naming_the_field(tmp_path, row, field):
    from rankkit.errors import TaskFormatError
    from rankkit.judges.simulated.replay import load_recorded_kway

    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(row) + "\n")
    with pytest.raises(TaskFormatError, match=f"field '{field}'"):
        load_recorded_kway(path)


def test_the_dry_run_renders_k_way_prompts_to_estimate_their_tokens():
    from rankkit.judges.llm.judge import LLMJudge
    from rankkit.prompts.kway import render_kway
    from rankkit.runs.plan.tokens import estimate_tokens
    from tests.judges.llm.test_judge import ScriptedRuntime

    task = make_task([1.0, 2.0, 3.0])
    plan = dry_run([task], [make_strategy("setwise_knockout:k=3")], LLMJudge(ScriptedRuntime(), mode="logprob"))
    (row,) = plan.rows
    assert row.comparisons == 1 and row.prompt_tokens > 0
    # every order of the same answers renders to the same length: the group's prompt, once
    assert row.prompt_tokens == pytest.approx(estimate_tokens(render_kway("setwise", task, task.candidates)), abs=0.5)
