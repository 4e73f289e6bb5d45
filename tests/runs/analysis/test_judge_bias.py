"""rankkit.runs.analysis.judge_bias: position and length bias over the distinct comparisons, and the slot bias
of k-way judgments, by hand."""

from __future__ import annotations

import json
import math

import pytest
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.runs import analysis
from rankkit.runs.analysis import judge_bias
from rankkit.runs.results import RunResult
from tests.runs.analysis.hand import kway_hand_results


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
    # The later letter is always longer and wins every comparison except t3's (b, a).
    assert bias["matches"] == 12
    assert bias["longer_win_rate"].estimate == pytest.approx(11 / 12)
    # Humans prefer the longer answer in t1 and t3 (4 comparisons each), never in t2.
    assert bias["human_longer_better"].estimate == pytest.approx(8 / 12)
    interval = bias["longer_win_rate"]
    assert interval.low < 11 / 12 < interval.high


# ---------------------------------------------------------------------------------------------
# Slot bias of k-way judgments (tests/runs/analysis/hand.py: KWAY, worked out there slot by slot)


@pytest.fixture
def kway_results():
    return RunResult.from_dict(kway_hand_results())


def rates(size):
    return [row["rate"].estimate for row in size["slots"]]


def test_slot_bias_by_hand(kway_results):
    three, four = analysis.slot_bias(kway_results)
    # k = 3, distinct and parsed: sw's three choices (A, A, C) and lw's ranking of t1 (B first);
    # lw's repeat of sw's t1 choice is the same judgment, and sw's failed choice is left out.
    assert (three["k"], three["judgments"], three["failed"], three["labelled"]) == (3, 4, 1, 4)
    assert [row["slot"] for row in three["slots"]] == [0, 1, 2]
    assert [row["chosen"] for row in three["slots"]] == [2, 1, 1]
    assert rates(three) == pytest.approx([2 / 4, 1 / 4, 1 / 4], abs=1e-12)
    assert [row["uniform"] for row in three["slots"]] == pytest.approx([1 / 3] * 3, abs=1e-12)
    # Human-best answer in slot C (t1, twice: the choice and the ranking), A (t2), A (t3).
    assert [row["human"] for row in three["slots"]] == pytest.approx([2 / 4, 0.0, 2 / 4], abs=1e-12)
    # k = 4: lw's one ranking of t2, which ranked slot D first, where the human-best answer sits.
    assert (four["k"], four["judgments"], four["failed"]) == (4, 1, 0)
    assert rates(four) == pytest.approx([0.0, 0.0, 0.0, 1.0], abs=1e-12)
    assert [row["human"] for row in four["slots"]] == pytest.approx([0.0, 0.0, 0.0, 1.0], abs=1e-12)


def test_slot_rates_carry_exact_binomial_intervals(kway_results):
    three = analysis.slot_bias(kway_results, level=0.95)[0]
    first = three["slots"][0]["rate"]
    # Clopper-Pearson for 2 of 4 at 95%: [0.0676, 0.9324].
    assert (first.low, first.high) == pytest.approx((0.0676, 0.9324), abs=1e-4)
    assert first.n == 4
    for row in three["slots"]:
        assert row["rate"].low <= row["rate"].estimate <= row["rate"].high
    narrower = analysis.slot_bias(kway_results, level=0.5)[0]["slots"][0]["rate"]
    assert first.low < narrower.low < narrower.high < first.high


def test_slot_bias_of_one_strategy_and_of_none(kway_results, results):
    (three,) = analysis.slot_bias(kway_results, "sw")
    assert (three["judgments"], three["failed"]) == (3, 1)
    assert [row["chosen"] for row in three["slots"]] == [2, 0, 1]
    assert [row["human"] for row in three["slots"]] == pytest.approx([2 / 3, 0.0, 1 / 3], abs=1e-12)
    # lw alone: its copy of the t1 choice counts once more here, as its own judgment.
    lw_three = analysis.slot_bias(kway_results, "lw")[0]
    assert [row["chosen"] for row in lw_three["slots"]] == [1, 1, 0]
    assert analysis.slot_bias(kway_results, "ko") == []  # pairwise strategies have no k-way judgments
    assert analysis.slot_bias(results) == []


def test_distinct_group_comparisons_count_each_judgment_once(kway_results):
    judgments = analysis.distinct_group_comparisons(kway_results)
    keys = [(task_id, group.kind, group.shown) for task_id, group in judgments]
    assert len(keys) == len(set(keys)) == 6
    # The same group in the same order, asked for a ranking rather than a choice, is another judgment.
    assert ("t1", "choice", ("a", "b", "c")) in keys and ("t1", "ranking", ("a", "b", "c")) in keys


def test_human_best_shares_split_ties_evenly():
    human = {"a": 2.0, "b": 2.0, "c": 1.0}
    assert judge_bias.human_best_shares(["c", "a", "b"], human) == pytest.approx((0.0, 0.5, 0.5), abs=1e-12)
    assert judge_bias.human_best_shares(["a", "b"], {"a": 1.0, "b": 1.0}) == pytest.approx((0.5, 0.5), abs=1e-12)


def test_analyze_adds_slots_only_for_k_way_judgments(kway_results, results):
    pairwise_only = analysis.analyze(results, resamples=0)
    assert set(pairwise_only["judge_bias"]) == {"position", "length", "style"}
    assert "slot bias" not in analysis.format_analysis(pairwise_only)
    report = analysis.analyze(kway_results, resamples=0)
    assert [size["judgments"] for size in report["judge_bias"]["slots"]] == [4, 1]
    assert report["judge_bias"]["slots"] == analysis.slot_bias(kway_results)
    # Pairwise views are those of the pairwise judgments alone, as before.
    assert report["judge_bias"]["position"]["matches"] == pairwise_only["judge_bias"]["position"]["matches"]
    text = analysis.format_analysis(report)
    slot_section = text.split("k-way slot bias")[1]
    # 3 + 4 rows (k, slot); slot A of k = 3 with its interval.
    assert len([line for line in slot_section.splitlines() if line[:1] in ("3", "4")]) == 7
    assert "3  A     " + report["judge_bias"]["slots"][0]["slots"][0]["rate"].text() in slot_section
    sections = json.loads(analysis.format_analysis(report, "json"))
    rows = next(section for section in sections if "k-way slot bias" in section["section"])["rows"]
    assert [(row["k"], row["slot"]) for row in rows] == [
        (3, "A"),
        (3, "B"),
        (3, "C"),
        (4, "A"),
        (4, "B"),
        (4, "C"),
        (4, "D"),
    ]
    assert rows[0]["judge"] == pytest.approx(0.5, abs=1e-12) and rows[0]["judge low"] == pytest.approx(0.0676, abs=1e-4)
    json.dumps(analysis.to_jsonable(report), allow_nan=False)  # strict JSON


def test_compare_analyze_and_report_show_the_slot_bias_of_a_k_way_run(tmp_path, monkeypatch):
    """`rankkit compare --strategies setwise_knockout:k=4 --out r.json`, then `rankkit analyze` and
    `rankkit report` on it, on the bundled sample."""
    monkeypatch.chdir(tmp_path)
    runner = CliRunner()
    for args in (
        [
            "compare",
            "--judge",
            "sim:preset=chatgpt",
            "--strategies",
            "setwise_knockout:k=4",
            "--no-cache",
            "--quiet",
            "--out",
            "r.json",
        ],
        ["analyze", "r.json", "--bootstrap", "20", "--out", "a.json"],
        ["report", "r.json", "-o", "report.html", "--bootstrap", "20"],
    ):
        outcome = runner.invoke(main, args)
        assert outcome.exit_code == 0, (args, outcome.output)
    results = analysis.load_results("r.json")
    expected = analysis.slot_bias(results)
    assert 4 in [size["k"] for size in expected]
    four = next(size for size in expected if size["k"] == 4)
    assert four["judgments"] + four["failed"] > 0
    saved = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))["judge_bias"]["slots"]
    saved_four = next(size for size in saved if size["k"] == 4)
    assert saved_four["slots"][0]["rate"]["estimate"] == pytest.approx(four["slots"][0]["rate"].estimate, abs=1e-12)
    assert sum(row["chosen"] for row in saved_four["slots"]) == saved_four["judgments"]
    page = (tmp_path / "report.html").read_text(encoding="utf-8")
    assert "Slots: is the answer shown first chosen in a k-way judgment?" in page
    assert four["slots"][0]["rate"].text() in page


def _sim_results(spec: str, n_tasks: int = 40):
    """A round robin in both orders on generated tasks (7 answers of varied length and quality)."""
    import random

    from rankkit.data.tasks import Candidate, Task
    from rankkit.judges import make_judge
    from rankkit.runs.runner import run
    from rankkit.strategies import make_strategy

    rng = random.Random(2)
    tasks = [
        Task(
            task_id=f"t{t}",
            prompt="q",
            criterion="score",
            scale=(0.0, 10.0),
            candidates=tuple(
                Candidate(id=f"c{i}", text="word " * rng.randint(10, 400), human={"score": rng.uniform(0, 10)})
                for i in range(7)
            ),
        )
        for t in range(n_tasks)
    ]
    return run(tasks, [make_strategy("bt:order=both")], make_judge(spec), None, seed=0)


@pytest.mark.parametrize("planted", [0.0, 0.6])
def test_style_preference_recovers_a_planted_length_bias_in_human_score_spreads(planted):
    style = judge_bias.style_preference(_sim_results(f"sim:preset=gpt4,length_bias={planted}"), resamples=200)
    assert style["matches"] == 40 * 42 and style["tasks"] == 40
    assert style["length"].low <= planted <= style["length"].high
    assert style["length"].high - style["length"].low < 0.5
    assert math.isnan(style["format"].estimate)  # plain-text answers: nothing to estimate
    assert style["human"].low > 0


def test_style_preference_needs_labelled_pairwise_matches(results):
    import dataclasses

    style = judge_bias.style_preference(dataclasses.replace(results, strategies=[]), resamples=0)
    assert style["matches"] == 0 and math.isnan(style["length"].estimate)
