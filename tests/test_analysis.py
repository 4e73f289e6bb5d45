"""rankkit.analysis on a small hand-built results file whose numbers are worked out by hand below.

The fixture (``hand_results``): three tasks with candidates a, b, c, d written by systems sa..sd,
answers of 1..4 characters (so the later letter is always the longer answer).

=====  ==========  ================  ==================  =========
task   human       ko scores         pw scores           meta
=====  ==========  ================  ==================  =========
t1     1 2 3 4     1 2 3 4           1 2 3 4             easy, E1
t2     4 3 2 1     1 2 3 4           1 2 3 4             hard, E1
t3     1 2 3 4     2 1 3 4           1 2 3 4             easy, E2
=====  ==========  ================  ==================  =========

``ko`` is a knockout: round 1 a–b and c–d, b and d advance, d beats b in round 2 (so a and c are
eliminated in round 1, b in round 2, d is champion). ``pw`` is a pairwise-like strategy that also
played (b, a); ``oracle`` scores each candidate by its human score.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from click.testing import CliRunner
from scipy import stats

from rankkit import analysis
from rankkit.cli import main
from rankkit.metrics import correlation, evaluate
from rankkit.results import RunResult

HUMAN = {"t1": [1, 2, 3, 4], "t2": [4, 3, 2, 1], "t3": [1, 2, 3, 4]}
KO = {"t1": [1, 2, 3, 4], "t2": [1, 2, 3, 4], "t3": [2, 1, 3, 4]}
IDS = ["a", "b", "c", "d"]
META = {"t1": {"difficulty": "easy", "exam": "E1"}, "t2": {"difficulty": "hard", "exam": "E1"},
        "t3": {"difficulty": "easy", "exam": "E2"}}


def match(first, second, winner, round=None, first_score=1.0, second_score=2.0, raw="Answer 1: 1 Answer 2: 2"):
    return {"first": first, "second": second, "round": round, "first_score": first_score, "second_score": second_score,
            "winner": winner, "probability": None, "status": "ok", "raw": raw}


def ranking_of(scores: dict) -> list:
    return sorted(scores, key=lambda c: -scores[c])


def hand_results() -> dict:
    """The fixture described in the module docstring, shaped like `rankkit compare --out`."""
    ko_tasks, pw_tasks, oracle_tasks = [], [], []
    for task_id in ("t1", "t2", "t3"):
        ko_scores = dict(zip(IDS, map(float, KO[task_id])))
        final = match("d", "b", "first", 2) if task_id == "t2" else match("b", "d", "second", 2)
        ko_matches = [match("a", "b", "second", 1), match("c", "d", "second", 1), final]
        extras = {"a": {"eliminated_round": 1, "played": 1, "grades": [1.0], "byes": 0, "rounds": 2},
                  "b": {"eliminated_round": 2, "played": 2, "grades": [2.0, 1.0], "byes": 0, "rounds": 2},
                  "c": {"eliminated_round": 1, "played": 1, "grades": [1.0], "byes": 0, "rounds": 2},
                  "d": {"eliminated_round": None, "played": 2, "grades": [2.0, 2.0], "byes": 0, "rounds": 2}}
        ko_tasks.append({"task_id": task_id, "scores": ko_scores, "ranking": ranking_of(ko_scores), "champion": "d",
                         "extras": extras, "comparisons": 3, "judge_calls": 3, "matches": ko_matches})
        pw_scores = {c: float(i + 1) for i, c in enumerate(IDS)}
        reverse = match("b", "a", "second" if task_id == "t3" else "first", 1)
        pw_tasks.append({"task_id": task_id, "scores": pw_scores, "ranking": ranking_of(pw_scores), "champion": None,
                         "extras": {c: {"played": 1} for c in IDS}, "comparisons": 3, "judge_calls": 1,
                         "matches": [match("a", "b", "second", 1), match("c", "d", "second", 1), reverse]})
        oracle_scores = dict(zip(IDS, map(float, HUMAN[task_id])))
        oracle_tasks.append({"task_id": task_id, "scores": oracle_scores, "ranking": ranking_of(oracle_scores),
                             "champion": None, "extras": {}, "comparisons": 0, "judge_calls": 4, "matches": []})
    strategies = [
        {"name": "ko", "strategy": "knockout", "params": {}, "comparisons": 9, "scores": 0, "judge_calls": 9, "tasks": ko_tasks},
        {"name": "pw", "strategy": "pairwise", "params": {}, "comparisons": 9, "scores": 0, "judge_calls": 3, "tasks": pw_tasks},
        {"name": "oracle", "strategy": "individual", "params": {}, "comparisons": 0, "scores": 12, "judge_calls": 12,
         "tasks": oracle_tasks},
    ]
    task_data = [{"task_id": t, "prompt": f"question {t}", "reference": None, "meta": META[t], "scale": [0.0, 4.0],
                  "candidates": [{"id": c, "system": f"s{c}", "text": "x" * (i + 1), "human": float(HUMAN[t][i])}
                                 for i, c in enumerate(IDS)]} for t in ("t1", "t2", "t3")]
    return {"judge": {"spec": "hand", "description": "hand-made", "fingerprint": "hand", "simulated": True},
            "data": "hand", "seed": 0, "criterion": "score", "strategies": strategies, "task_data": task_data}


@pytest.fixture
def results() -> RunResult:
    return RunResult.from_dict(hand_results())


# -- (a) correlations ----------------------------------------------------------------------------


def test_point_estimates_match_hand_computation(results):
    row = {r["strategy"]: r for r in analysis.correlation_table(results, analysis.METRIC_NAMES, n_boot=0)}["ko"]
    m = {name: interval.estimate for name, interval in row["metrics"].items()}
    # Pooled: x = 1234 1234 2134, y = 1234 4321 1234; deviations from 2.5 give
    # sum dx*dy = 5 - 5 + 4 = 4 and sum dx^2 = sum dy^2 = 15, so r = 4/15.
    assert m["pearson"] == pytest.approx(4 / 15)
    # Per task Spearman: 1, -1 and 1 - 6*2/(4*15) = 0.8 (a and b swapped).
    assert m["task_spearman"] == pytest.approx((1 - 1 + 0.8) / 3)
    # Pairs with the human order: 6 of 6, 0 of 6, 5 of 6.
    assert m["pairwise_accuracy"] == pytest.approx(11 / 18)
    # Top candidate d is human-best in t1 and t3, human-worst in t2.
    assert m["top1_accuracy"] == pytest.approx(2 / 3)
    assert row["tasks"] == 3 and row["comparisons"] == 9


def test_task_metrics_agree_with_rankkit_metrics_evaluate(results):
    for name in analysis.strategy_names(results):
        tasks = analysis.labelled_tasks(results, name)
        pieces = analysis.TaskMetrics(tasks)
        expected = evaluate([(t.scores, t.ranking, t.human) for t in tasks])
        for metric in analysis.METRIC_NAMES:
            got = pieces.value(metric, np.arange(len(tasks)))
            assert (math.isnan(got) and math.isnan(expected[metric])) or got == pytest.approx(expected[metric]), (name, metric)


def test_resampled_task_metrics_equal_evaluate_on_the_repeated_tasks(results):
    tasks = analysis.labelled_tasks(results, "ko")
    pieces = analysis.TaskMetrics(tasks)
    idx = np.array([2, 2, 0])  # a bootstrap resample: t3 twice and t1
    expected = evaluate([(tasks[i].scores, tasks[i].ranking, tasks[i].human) for i in idx])
    for metric in ("pearson", "spearman", "kendall", "task_spearman", "pairwise_accuracy", "top1_accuracy"):
        assert pieces.value(metric, idx) == pytest.approx(expected[metric])


def test_bootstrap_over_two_tasks_spans_the_two_task_values(results):
    # Keep t1 (Spearman 1) and t2 (Spearman -1): a resample is {t1,t1}, {t1,t2} or {t2,t2}, each
    # extreme with probability 1/4 > 2.5%, so the 95% interval is exactly [-1, 1] around 0.
    results.tasks = results.tasks[:2]
    (row,) = analysis.correlation_table(results, ["task_spearman"], n_boot=500, seed=1, strategies=["ko"])
    interval = row["metrics"]["task_spearman"]
    assert (interval.estimate, interval.low, interval.high) == (0.0, -1.0, 1.0)


def test_bootstrap_is_seeded(results):
    first = analysis.MetricDraws(results, ["pearson"], n_boot=200, seed=3).get("ko")[1]
    again = analysis.MetricDraws(results, ["pearson"], n_boot=200, seed=3).get("ko")[1]
    other = analysis.MetricDraws(results, ["pearson"], n_boot=200, seed=4).get("ko")[1]
    assert first.shape == (200, 1)
    assert np.array_equal(first, again, equal_nan=True)
    assert not np.array_equal(first, other, equal_nan=True)


def test_unknown_metric_is_rejected(results):
    with pytest.raises(analysis.SpecError, match="unknown metric"):
        analysis.correlation_table(results, ["nonsense"], n_boot=0)


# -- (b) elimination rounds ---------------------------------------------------------------------


def test_elimination_split_on_constructed_bracket(results):
    item = analysis.elimination_rounds(results, "ko", n_boot=0)
    first, later = item["groups"]["first round"], item["groups"]["later rounds"]
    # a and c lose in round 1 in every task; b (round 2) and d (champion) go further.
    assert first["candidates"] == 6 and later["candidates"] == 6
    assert first["mean_played"] == 1 and later["mean_played"] == 2
    scores = {t: dict(zip(IDS, KO[t])) for t in KO}
    human = {t: dict(zip(IDS, HUMAN[t])) for t in HUMAN}
    expected_first = stats.pearsonr([scores[t][c] for t in KO for c in "ac"], [human[t][c] for t in KO for c in "ac"])[0]
    expected_later = stats.pearsonr([scores[t][c] for t in KO for c in "bd"], [human[t][c] for t in KO for c in "bd"])[0]
    assert first["correlation"].estimate == pytest.approx(expected_first)
    assert later["correlation"].estimate == pytest.approx(expected_later)
    assert item["difference"].estimate == pytest.approx(expected_later - expected_first)
    assert [r["eliminated"] for r in item["rounds"]] == ["round 1", "round 2", "champion"]
    assert [r["candidates"] for r in item["rounds"]] == [6, 3, 3]


def test_a_bye_then_a_loss_is_a_later_round_but_graded_once(results):
    # In t1, c gets a bye in round 1 and loses in round 2: eliminated later, yet graded once.
    results.strategies[0].tasks[0].extras["c"].update(eliminated_round=2, played=1, byes=1)
    item = analysis.elimination_rounds(results, "ko", n_boot=0)
    assert item["groups"]["first round"]["candidates"] == 5
    assert item["groups"]["later rounds"]["candidates"] == 7
    assert item["by_played"]["groups"]["graded once"]["candidates"] == 6
    assert item["by_played"]["groups"]["graded several times"]["candidates"] == 6


def test_strategies_without_rounds_have_no_elimination_analysis(results):
    assert analysis.elimination_rounds(results, "pw") is None
    assert analysis.elimination_rounds(results, "oracle") is None
    assert analysis.strategy_run(results, "ko").has_elimination_rounds


# -- (c) breakdowns -----------------------------------------------------------------------------


def test_breakdown_by_meta_field(results):
    rows = {r["group"]: r for r in analysis.breakdown(results, "ko", "difficulty", ["task_spearman", "pairwise_accuracy"], n_boot=0)}
    assert set(rows) == {"easy", "hard"}
    assert rows["easy"]["tasks"] == 2 and rows["hard"]["tasks"] == 1
    assert rows["easy"]["metrics"]["task_spearman"].estimate == pytest.approx((1 + 0.8) / 2)
    assert rows["hard"]["metrics"]["task_spearman"].estimate == pytest.approx(-1)
    assert rows["easy"]["metrics"]["pairwise_accuracy"].estimate == pytest.approx(11 / 12)
    # meta.NAME is accepted too
    assert analysis.breakdown(results, "ko", "meta.difficulty", ["pearson"], n_boot=0)[0]["group"] == "easy"


def test_breakdown_by_system(results):
    rows = {r["group"]: r for r in analysis.breakdown(results, "ko", "system", ["pearson", "task_spearman"], n_boot=0)}
    assert set(rows) == {"sa", "sb", "sc", "sd"}
    sa = rows["sa"]
    # System sa wrote candidate a: scores 1, 1, 2 against human 1, 4, 1. Deviations from the
    # means (4/3 and 2): dx = -1/3, -1/3, 2/3 and dy = -1, 2, -1, so r = -1 / sqrt(2/3 * 6) = -0.5.
    assert sa["metrics"]["pearson"].estimate == pytest.approx(-0.5)
    assert list(sa["metrics"]) == ["pearson"]  # per-task metrics are undefined with one candidate per task
    assert sa["mean_score"] == pytest.approx(4 / 3) and sa["mean_human"] == pytest.approx(2)


def test_breakdown_field_must_exist(results):
    with pytest.raises(analysis.SpecError, match="cannot break down"):
        analysis.breakdown(results, "ko", "colour")


# -- (d) aggregate level ------------------------------------------------------------------------


def test_aggregate_level_per_system(results):
    item = analysis.aggregate_level(results, "ko", how="mean", n_boot=0)
    m = {k: v.estimate for k, v in item["metrics"].items()}
    # Means over tasks, times 3: ko 4 5 9 12, human 6 7 8 9; deviations -3.5 -2.5 1.5 4.5 and
    # -1.5 -.5 .5 1.5 give r = 14 / sqrt(41 * 5).
    assert m["pearson"] == pytest.approx(14 / math.sqrt(205))
    assert m["spearman"] == pytest.approx(1.0)
    assert m["pairwise_accuracy"] == pytest.approx(1.0)
    assert item["units"] == 4 and item["systems"] == 4
    assert [r["system"] for r in item["leaderboard"]] == ["sd", "sc", "sb", "sa"]
    assert item["leaderboard"][0]["score"] == pytest.approx(4.0) and item["leaderboard"][0]["human"] == pytest.approx(3.0)
    summed = analysis.aggregate_level(results, "ko", how="sum", n_boot=0)
    assert summed["metrics"]["pearson"].estimate == pytest.approx(m["pearson"])  # every system answers every task
    assert summed["leaderboard"][0]["score"] == pytest.approx(12.0)


def test_aggregate_level_per_exam_compares_systems_within_an_exam(results):
    item = analysis.aggregate_level(results, "ko", how="sum", unit_field="exam", n_boot=0)
    assert item["units"] == 8
    # Exam E1 (t1 + t2): every system's human total is 5, so no pair counts; exam E2 (t3 alone):
    # ko has a and b the wrong way round, 5 of 6 pairs right.
    assert item["metrics"]["pairwise_accuracy"].estimate == pytest.approx(5 / 6)


def test_aggregate_level_needs_systems():
    raw = hand_results()
    for task in raw["task_data"]:
        for cand in task["candidates"]:
            cand["system"] = None
    results = RunResult.from_dict(raw)
    assert analysis.aggregate_level(results, "ko", n_boot=0) is None


# -- (e) paired differences ---------------------------------------------------------------------


def test_paired_difference_with_itself_is_exactly_zero(results):
    diff = analysis.paired_difference(results, "ko", "ko", ["pearson", "task_spearman"], n_boot=200)
    for item in diff["metrics"].values():
        assert (item["difference"].estimate, item["difference"].low, item["difference"].high) == (0.0, 0.0, 0.0)
        assert item["verdict"] == "within noise"


def test_paired_difference_against_the_oracle(results):
    diff = analysis.paired_difference(results, "ko", "oracle", ["task_spearman"], n_boot=300, seed=2)
    item = diff["metrics"]["task_spearman"]
    assert item["difference"].estimate == pytest.approx((1 - 1 + 0.8) / 3 - 1)
    # Every resample holds only tasks where ko is at most as good as the oracle (differences 0, -2, -0.2).
    assert item["difference"].high <= 0
    assert diff["tasks"] == 3


def test_paired_interval_is_the_difference_of_shared_resamples(results):
    draws = analysis.MetricDraws(results, ["pearson"], n_boot=100, seed=5)
    ko_est, ko_draws = draws.get("ko")
    pw_est, pw_draws = draws.get("pw")
    diff = analysis.paired_difference(results, "ko", "pw", draws=draws)["metrics"]["pearson"]["difference"]
    low, high = np.percentile((ko_draws - pw_draws)[:, 0], [2.5, 97.5])
    assert (diff.low, diff.high) == (pytest.approx(low), pytest.approx(high))
    assert diff.estimate == pytest.approx(ko_est[0] - pw_est[0])


# -- judge bias ---------------------------------------------------------------------------------


def test_position_bias_by_hand(results):
    bias = analysis.position_bias(results)
    # Distinct judgments: ko's 9 (the first slot wins only t2's final) plus pw's reversed (b, a)
    # in each task (first wins in t1 and t2): 3 of 12.
    assert bias["matches"] == 12 and bias["ties"] == 0
    assert bias["first_slot_win_rate"].estimate == pytest.approx(3 / 12)
    # (a, b) and (b, a): b won both in t1 and t2, a and b split in t3.
    assert bias["order_consistency"].estimate == pytest.approx(2 / 3)
    # The first-shown one is human-better in (b, a) of t1 and t3, and in (a, b) and (c, d) of t2.
    assert bias["human_first_better"].estimate == pytest.approx(4 / 12)
    only_ko = analysis.position_bias(results, "ko")
    assert only_ko["first_slot_win_rate"].estimate == pytest.approx(1 / 9)


def test_length_bias_by_hand(results):
    bias = analysis.length_bias(results)
    # The later letter is always longer and wins every match except t3's (b, a).
    assert bias["matches"] == 12
    assert bias["longer_win_rate"].estimate == pytest.approx(11 / 12)
    # Humans prefer the longer answer in t1 and t3 (4 matches each), never in t2.
    assert bias["human_longer_better"].estimate == pytest.approx(8 / 12)
    interval = bias["longer_win_rate"]
    assert interval.low < 11 / 12 < interval.high


# -- everything at once, and the command ---------------------------------------------------------


def test_analyze_and_its_text(results):
    report = analysis.analyze(results, by=["difficulty", "system"], n_boot=50)
    assert report["baseline"] == "ko"  # no `individual` here: the first strategy
    assert [d["a"] for d in report["differences"]] == ["pw", "oracle"]
    assert [e["strategy"] for e in report["elimination_rounds"]] == ["ko"]
    text = analysis.format_analysis(report)
    for heading in ("(a) agreement", "(e) difference", "(b) elimination", "(d) aggregate", "(c) by difficulty",
                    "(c) by system", "judge bias"):
        assert heading in text
    json.dumps(analysis.to_jsonable(report), allow_nan=False)  # strict JSON


def test_analyze_command_writes_json(results, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hand_results()), encoding="utf-8")
    out = tmp_path / "a.json"
    outcome = CliRunner().invoke(main, ["analyze", str(path), "--by", "difficulty", "--baseline", "oracle",
                                        "--bootstrap", "30", "--out", str(out)])
    assert outcome.exit_code == 0, outcome.output
    # ko - oracle on task_spearman: (1 - 1 + 0.8) / 3 - 1 = -0.733
    assert "ko - oracle" in outcome.output and "-0.733" in outcome.output
    saved = json.loads(out.read_text())
    ko = next(r for r in saved["correlations"] if r["strategy"] == "ko")
    assert ko["metrics"]["pearson"]["estimate"] == pytest.approx(4 / 15)
    assert set(saved["breakdowns"]["difficulty"]) == {"ko", "pw", "oracle"}


def test_analyze_command_reports_bad_input(results, tmp_path):
    path = tmp_path / "r.json"
    path.write_text(json.dumps(hand_results()), encoding="utf-8")
    runner = CliRunner()
    for args, message in ((["--baseline", "nope"], "no strategy 'nope'"), (["--by", "colour"], "cannot break down"),
                          (["--metrics", "pearson,bogus"], "unknown metric")):
        outcome = runner.invoke(main, ["analyze", str(path), "--bootstrap", "0", *args])
        assert outcome.exit_code == 2 and message in outcome.output, (args, outcome.output)
    bad = tmp_path / "bad.json"
    bad.write_text('{"strategies": 3}', encoding="utf-8")
    outcome = runner.invoke(main, ["analyze", str(bad)])
    assert outcome.exit_code == 2 and "strategies" in outcome.output
    missing = runner.invoke(main, ["analyze", str(tmp_path / "missing.json")])
    assert missing.exit_code == 2 and "not found" in missing.output


def test_batched_row_correlations_equal_rankkit_metrics_correlation():
    rng = np.random.default_rng(0)
    xs = [rng.normal(size=n) for n in (2, 5, 5, 5, 9, 1)] + [np.ones(5), np.array([1.0, 2.0, 2.0, 3.0, 3.0])]
    ys = [rng.normal(size=len(x)) for x in xs]
    ys[-1] = np.array([3.0, 1.0, 1.0, 2.0, 5.0])  # ties on both sides
    for method in ("pearson", "spearman", "kendall"):
        got = analysis.row_correlations(method, xs, ys)
        want = [correlation(method, x, y) for x, y in zip(xs, ys)]
        np.testing.assert_allclose(got, want, rtol=1e-12, atol=1e-12, equal_nan=True, err_msg=method)
    assert math.isnan(analysis.row_correlations("pearson", xs, ys)[5])  # one point
    assert math.isnan(analysis.row_correlations("spearman", xs, ys)[6])  # constant side


def test_unlabelled_results_have_nothing_to_analyse():
    from tests.test_report import unlabelled

    with pytest.raises(analysis.SpecError, match="no human scores"):
        analysis.analyze(RunResult.from_dict(unlabelled(hand_results())), n_boot=0)
