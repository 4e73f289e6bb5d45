"""The simulated judges: the latent-perception model (default), its calibration, and the fixed-accuracy model."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from statistics import NormalDist

import numpy as np
import pytest
from scipy import stats

from rankkit.data.specs import SpecError
from rankkit.data.tasks import Candidate, Task, load_tasks
from rankkit.judges import make_judge
from rankkit.judges.simulated.sim import FixedAccuracyJudge, LatentJudge
from rankkit.judges.simulated.sim_model import (
    FIXED_PRESET_RATES,
    LATENT_PRESETS,
    fixed_parameters,
    kway_temperature,
    latent_pair_accuracy,
    softmax_probabilities,
)
from rankkit.judges.simulated.sim_targets import debiased_discriminability, llmbar_rates, preset_targets
from rankkit.judgments.values import Winner
from tests.conftest import SHARED_DATA, shared_dataset
from tests.helpers import make_task

WIDE = (-1000.0, 1000.0)  # a scale nothing is clipped to


def pairs_of(task):
    return [(a, b) for a in task.candidates for b in task.candidates if a.id != b.id]


# -- the latent-perception model ---------------------------------------------------------------


def test_a_noiseless_latent_judge_is_the_human_order_and_ties_equal_answers():
    task = make_task([1, 2, 2, 4], scale=(0, 5))
    judge = LatentJudge(perception=0.0, pair_noise=0.0, slot_bias=0.0, grade_noise=0.0)
    for a, b in pairs_of(task):
        verdict = judge.compare(task, a, b)
        ha, hb = a.human["score"], b.human["score"]
        expected = Winner.TIE if ha == hb else Winner.FIRST if ha > hb else Winner.SECOND
        assert verdict.winner is expected
        assert (verdict.first_grade, verdict.second_grade) == pytest.approx((ha, hb), abs=1e-12)
        assert judge.grade(task, a).value == pytest.approx(ha, abs=1e-12)


def test_a_perception_is_one_draw_per_answer_whichever_pair_or_mode_reads_it():
    task = make_task([0, 1, 2, 3, 4], scale=WIDE)
    # No pair or grade noise: every grade the judge gives an answer is its perception.
    judge = LatentJudge(perception=1.0, pair_noise=0.0, slot_bias=0.0, grade_noise=0.0, seed=7)
    for x in task.candidates:
        seen = {judge.grade(task, x).value, judge.perceived(task, x)}
        for y in task.candidates:
            if y.id != x.id:
                seen.add(judge.compare(task, x, y).first_grade)
                seen.add(judge.compare(task, y, x).second_grade)
        assert len(seen) == 1 and seen != {x.human["score"]}


def test_the_latent_values_are_the_perceptions_and_the_limit_of_both_orders():
    task = make_task([0, 1, 2, 3, 4, 5], scale=WIDE)
    judge = LatentJudge(perception=0.8, pair_noise=0.0, slot_bias=0.0, grade_noise=0.0, seed=3)
    latent = judge.latent(task)
    assert list(latent) == task.candidate_ids
    assert latent == {c.id: pytest.approx(judge.perceived(task, c), abs=1e-12) for c in task.candidates}
    assert latent != task.human_scores()  # perception moved them
    # Without per-judgment noise or slot bias every verdict follows the latent order.
    for a, b in pairs_of(task):
        assert (judge.compare(task, a, b).winner is Winner.FIRST) == (latent[a.id] > latent[b.id])


def test_the_latent_order_is_what_many_noisy_judgments_converge_to():
    # pair noise and slot bias are per judgment: over many seeds' worth of noise (the perception
    # fixed by perception=0 here) the majority of both orders follows the latent values.
    task = make_task([0, 0.5, 1.0], scale=WIDE)
    wins = 0
    trials = 400
    for seed in range(trials):
        judge = LatentJudge(perception=0.0, pair_noise=1.0, slot_bias=0.5, grade_noise=0.0, seed=seed)
        a, b = task.candidates[2], task.candidates[0]
        wins += (judge.compare(task, a, b).winner is Winner.FIRST) + (judge.compare(task, b, a).winner is Winner.SECOND)
    assert judge.latent(task) == task.human_scores()
    assert wins / (2 * trials) > 0.7  # Φ(1 / √2) ≈ 0.76 in expectation, well above one half


def test_the_fixed_accuracy_judge_is_right_about_the_human_scores():
    task = make_task([3, 1, 2], scale=(0, 5))
    assert FixedAccuracyJudge(accuracy=0.7, seed=4).latent(task) == task.human_scores()


def test_pair_noise_is_drawn_per_pair_and_order():
    task = make_task([0, 0, 0], scale=WIDE)
    judge = LatentJudge(perception=0.0, pair_noise=1.0, slot_bias=0.0, grade_noise=0.0, seed=1)
    a, b, c = task.candidates
    ab, ba, ac = judge.compare(task, a, b), judge.compare(task, b, a), judge.compare(task, a, c)
    assert ab.first_grade != ba.second_grade and ab.first_grade != ac.first_grade
    assert judge.compare(task, a, b) == ab  # and a pure function of them


def test_slot_bias_favours_the_first_slot_or_the_second():
    task = make_task([0, 1], scale=WIDE)  # 2 spreads apart (spread 0.5)
    worse, better = task.candidates
    strong = LatentJudge(perception=0.0, pair_noise=0.0, slot_bias=2.5, grade_noise=0.0)
    assert strong.compare(task, worse, better).winner is Winner.FIRST
    assert strong.compare(task, better, worse).winner is Winner.FIRST
    weak = dataclasses.replace(strong, slot_bias=1.5)
    assert weak.compare(task, worse, better).winner is Winner.SECOND
    second = dataclasses.replace(strong, slot_bias=-2.5)
    assert second.compare(task, better, worse).winner is Winner.SECOND
    # the bias is split between the two grades and leaves pointwise grades alone
    verdict = strong.compare(task, worse, better)
    spread = task.human_spread
    assert verdict.first_grade == pytest.approx(0 + 1.25 * spread)
    assert verdict.second_grade == pytest.approx(1 - 1.25 * spread)
    assert strong.grade(task, worse).value == pytest.approx(0.0, abs=1e-12)


def test_close_answers_are_confused_more_often_than_far_ones():
    """Thurstonian: the error rate falls with the gap (the fixed-accuracy model's does not)."""
    task = make_task([0.0] * 20 + [1.0] * 20 + [0.45, 0.55], scale=WIDE)  # spread ≈ 0.49
    judge = LatentJudge(perception=0.5, pair_noise=0.3, slot_bias=0.0, grade_noise=0.0)
    low, high = task.candidates[-2:]  # 0.2 spreads apart: right with probability ≈ 0.6
    close = (
        sum(dataclasses.replace(judge, seed=s).compare(task, high, low).winner is Winner.FIRST for s in range(200))
        / 200
    )
    far = [(a, b) for a, b in pairs_of(task) if abs(a.human["score"] - b.human["score"]) == 1.0]  # ≈ 0.99
    far_right = sum(
        (judge.compare(task, a, b).winner is Winner.FIRST) == (a.human["score"] > b.human["score"]) for a, b in far
    ) / len(far)
    assert 0.5 < close < 0.75 and far_right > 0.95


def test_verdict_and_grades_agree_and_stay_on_the_scale_even_when_clipped():
    task = make_task([0, 0.5, 1, 1, 0, 1], scale=(0, 1))
    judge = LatentJudge(perception=3.0, pair_noise=3.0, slot_bias=0.5, grade_noise=3.0)
    clipped = 0
    for seed in range(20):
        j = dataclasses.replace(judge, seed=seed)
        for a, b in pairs_of(task):
            verdict = j.compare(task, a, b)
            assert 0.0 <= verdict.second_grade <= 1.0 and 0.0 <= verdict.first_grade <= 1.0
            assert verdict.winner is (Winner.FIRST if verdict.first_grade > verdict.second_grade else Winner.SECOND)
            clipped += max(verdict.first_grade, verdict.second_grade) in (0.0, 1.0)
        assert all(0.0 <= j.grade(task, c).value <= 1.0 for c in task.candidates)
    assert clipped > 100  # the clipping paths were exercised


def test_latent_draws_are_pure_and_follow_the_seed():
    task = make_task(list(range(10)), scale=WIDE)
    a, b = task.candidates[2], task.candidates[7]
    judge = make_judge("sim:preset=chatgpt,seed=3")
    assert judge.compare(task, a, b) == make_judge("sim:preset=chatgpt,seed=3").compare(task, a, b)
    assert judge.grade(task, a) == make_judge("sim:preset=chatgpt,seed=3").grade(task, a)
    grades = {make_judge(f"sim:preset=chatgpt,seed={s}").grade(task, a).value for s in range(10)}
    assert len(grades) == 10


def test_pointwise_grades_differ_between_presets_and_follow_their_grading_accuracy():
    """The fixed-accuracy presets share one pointwise noise; the latent ones grade as their judges did."""
    task = make_task(list(range(30)), scale=WIDE)
    truth = [c.human["score"] for c in task.candidates]
    correlation = {}
    for preset in ("gpt4", "chatgpt"):
        rho = []
        for seed in range(10):
            judge = make_judge(f"sim:preset={preset},seed={seed}")
            rho.append(stats.spearmanr(truth, [judge.grade(task, c).value for c in task.candidates])[0])
        correlation[preset] = sum(rho) / len(rho)
    assert correlation["gpt4"] > correlation["chatgpt"] + 0.2
    fixed = [
        make_judge(f"sim:model=fixed,preset={p}").grade(task, task.candidates[0]).value for p in FIXED_PRESET_RATES
    ]
    assert len(set(fixed)) == 1
    latent = [make_judge(f"sim:preset={p}").grade(task, task.candidates[0]).value for p in LATENT_PRESETS]
    assert len(set(latent)) == len(LATENT_PRESETS)


def test_identical_texts_under_other_ids_or_scores_have_other_request_keys():
    task = make_task([1.0, 5.0, 0.0])
    same_text = tuple(dataclasses.replace(c, text="same") for c in task.candidates)
    task = dataclasses.replace(task, candidates=same_text)
    judge = make_judge("sim:preset=gpt4")
    a, b, c = task.candidates
    assert judge.request_key(task, a, c) != judge.request_key(task, b, c)
    assert judge.request_key(task, a) != judge.request_key(task, b)
    rescored = make_task([1.0, 5.0, 0.5])
    rescored = dataclasses.replace(
        rescored, candidates=tuple(dataclasses.replace(x, text="same") for x in rescored.candidates)
    )
    assert judge.request_key(task, a, b) != judge.request_key(rescored, *rescored.candidates[:2])


# -- specs and fingerprints --------------------------------------------------------------------


def test_presets_select_the_latent_model_unless_model_fixed_is_given():
    judge = make_judge("sim:preset=chatgpt")
    assert isinstance(judge, LatentJudge)
    assert dataclasses.astuple(LATENT_PRESETS["chatgpt"]) == pytest.approx(
        (judge.perception, judge.pair_noise, judge.slot_bias, judge.grade_noise), abs=1e-12
    )
    assert make_judge("sim:preset=chatgpt,slot_bias=0").slot_bias == pytest.approx(0.0, abs=1e-12)
    assert make_judge("sim:perception=0.3").perception == pytest.approx(0.3, abs=1e-12)
    assert make_judge("sim") == make_judge("sim:preset=gpt4") == make_judge("sim:model=latent")
    assert judge.description == "sim:preset=chatgpt (simulated)"


def test_model_fixed_takes_its_parameters_or_a_preset():
    assert make_judge("sim:model=fixed") == FixedAccuracyJudge()
    judge = make_judge("sim:model=fixed,accuracy=0.7,position_bias=0.1,noise=0,seed=2")
    assert judge == FixedAccuracyJudge(accuracy=0.7, position_bias=0.1, noise=0.0, seed=2)
    assert judge.description == "sim:model=fixed,accuracy=0.7,position_bias=0.1,noise=0 (simulated)"
    preset = make_judge("sim:model=fixed,preset=chatgpt")
    assert isinstance(preset, FixedAccuracyJudge) and preset.position_bias == pytest.approx(0.21, abs=1e-12)
    assert preset.description == "sim:model=fixed,preset=chatgpt (simulated)"
    # explicit parameters override the preset's
    assert make_judge("sim:model=fixed,preset=gpt4,accuracy=0.9") == FixedAccuracyJudge(
        accuracy=0.9, position_bias=0.01, preset="gpt4"
    )


@pytest.mark.parametrize(
    "spec, message",
    [
        ("sim:preset=gpt5", "unknown preset 'gpt5' for model=latent"),
        ("sim:model=fixed,preset=gpt5", "unknown preset 'gpt5' for model=fixed"),
        ("sim:acuracy=0.5", "unknown option 'acuracy' for sim; known: accuracy=0.8 (float)"),
        # the fixed model's parameters never switch models silently: the error names model=fixed
        ("sim:accuracy=0.9", "accuracy belong(s) to model=fixed, not model=latent; write sim:model=fixed,accuracy=0.9"),
        ("sim:noise=0.3", "noise belong(s) to model=fixed, not model=latent; write sim:model=fixed,noise=0.3"),
        ("sim:preset=gpt4,position_bias=0.2", "position_bias belong(s) to model=fixed"),
        ("sim:model=latent,accuracy=0.9", "accuracy belong(s) to model=fixed"),
        ("sim:perception=1,accuracy=0.9", "accuracy belong(s) to model=fixed"),
        ("sim:model=fixed,perception=1", "perception belong(s) to model=latent, not model=fixed"),
        ("sim:model=thurstone", "model must be one of latent, fixed"),
        ("sim:perception=-1", "perception must be"),
        ("sim:slot_bias=nan", "slot_bias: expected a finite number"),
        ("sim:model=fixed,accuracy=1.5", "accuracy must be in"),
        ("sim:model=fixed,position_bias=-0.1", "position_bias must be in"),
        ("sim:model=fixed,noise=-1", "noise must be a finite number"),
    ],
)
def test_bad_specs_are_refused(spec, message):
    with pytest.raises(SpecError, match=re.escape(message)):
        make_judge(spec)


def test_fingerprints_name_the_model_and_differ_between_models_and_presets():
    specs = [f"sim:{model}preset={p}" for p in LATENT_PRESETS for model in ("", "model=fixed,")]
    prints = {make_judge(spec).fingerprint for spec in specs}
    assert len(prints) == len(specs)
    assert '"model":"latent"' in make_judge("sim:preset=gpt4").fingerprint
    assert '"model":"fixed"' in make_judge("sim:model=fixed,preset=gpt4").fingerprint
    # every parameter that changes a judgment changes the fingerprint; the preset name does not
    base = FixedAccuracyJudge()
    changed = [
        dataclasses.replace(base, **{name: value})
        for name, value in (("accuracy", 0.9), ("position_bias", 0.1), ("noise", 0.2), ("seed", 1))
    ]
    assert len({judge.fingerprint for judge in [base, *changed]}) == 5
    assert dataclasses.replace(base, preset="gpt4").fingerprint == base.fingerprint


# -- the calibration ---------------------------------------------------------------------------


def write_jsonl(path, rows):
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_llmbar_rates_counts_ties_half_and_leaves_unparsed_rows_out(tmp_path):
    tasks = write_jsonl(
        tmp_path / "tasks.jsonl",
        [{"task_id": t, "meta": {"preferred": p}} for t, p in (("t1", "o1"), ("t2", "o2"), ("t3", "o1"))],
    )
    rows = []
    for task, swap_false, swap_true in (("t1", "o1", "o1"), ("t2", "o1", "o2"), ("t3", "o1", None)):
        rows.append(
            {
                "task_id": task,
                "judge": "J",
                "method": "Vanilla",
                "swap": False,
                "a": "o1",
                "b": "o2",
                "winner": swap_false,
            }
        )
        rows.append(
            {
                "task_id": task,
                "judge": "J",
                "method": "Vanilla",
                "swap": True,
                "a": "o2",
                "b": "o1",
                "winner": swap_true,
            }
        )
    for task, a, b in (("t1", 7, 3), ("t2", 5, 5), ("t3", 2, 9)):
        rows.append(
            {
                "task_id": task,
                "judge": "J",
                "method": "Rating",
                "swap": False,
                "a": "o1",
                "b": "o2",
                "winner": "o1",
                "score_a": a,
                "score_b": b,
            }
        )
    rows.append(
        {"task_id": "t1", "judge": "K", "method": "Vanilla", "swap": False, "a": "o1", "b": "o2", "winner": "o2"}
    )
    judgments = write_jsonl(tmp_path / "judgments.jsonl", rows)
    rates = llmbar_rates(judgments, tasks, "J")
    # 5 parsed Vanilla rows: winners (o1, o1), (o1, o2), (o1, -); preferred o1, o2, o1
    assert rates.pairwise_accuracy == pytest.approx(4 / 5)
    assert rates.first_slot == pytest.approx(4 / 5)  # all but t1's swapped row chose the first slot
    assert rates.order_consistency == pytest.approx(1 / 2)  # t3 lacks an order
    assert rates.pointwise_accuracy == pytest.approx((1 + 0.5 + 0) / 3)
    only_one_order = llmbar_rates(judgments, tasks, "K")
    assert only_one_order.pointwise_accuracy is None and math.isnan(only_one_order.order_consistency)


def test_recorded_targets_and_the_derived_falcon_pointwise_rate():
    path = SHARED_DATA / "llmbar_natural" / "judgments.jsonl"
    targets = preset_targets(path, shared_dataset("llmbar_natural"))
    assert targets["gpt4"].as_tuple() == pytest.approx((0.955, 0.505, 0.95, 0.92))
    assert targets["chatgpt"].as_tuple() == pytest.approx((0.815, 0.605, 0.71, 0.685))
    falcon, chatgpt = targets["falcon"], targets["chatgpt"]
    assert falcon.pointwise_derived and not chatgpt.pointwise_derived
    probit = NormalDist().inv_cdf
    assert probit(falcon.pointwise_accuracy) / debiased_discriminability(falcon) == pytest.approx(
        probit(chatgpt.pointwise_accuracy) / debiased_discriminability(chatgpt)
    )


def simulate_llmbar(preset: str, tasks: list[Task], seeds: int) -> tuple[float, float, float, float]:
    """Each LLMBar pair in both orders and graded alone, by ``sim:preset=P`` over ``seeds`` seeds."""
    right = first = consistent = judgments = pairs = 0
    pointwise = 0.0
    for seed in range(seeds):
        judge = make_judge(f"sim:preset={preset},seed={seed}")
        for task in tasks:
            good, bad = sorted(task.candidates, key=lambda c: -task.human_score(c.id))
            winners = []
            for x, y in ((good, bad), (bad, good)):
                verdict = judge.compare(task, x, y)
                winners.append(x if verdict.winner is Winner.FIRST else y)
                right += winners[-1] is good
                first += verdict.winner is Winner.FIRST
                judgments += 1
            consistent += winners[0] is winners[1]
            margin = judge.grade(task, good).value - judge.grade(task, bad).value
            pointwise += 1.0 if margin > 0 else 0.5 if margin == 0 else 0.0
            pairs += 1
    return right / judgments, first / judgments, consistent / pairs, pointwise / pairs


@pytest.mark.parametrize("preset", sorted(LATENT_PRESETS))
def test_latent_presets_reproduce_all_four_llmbar_rates(preset):
    """On LLMBar Natural (human preference as the latent truth), each preset's pairwise accuracy,
    first-slot share, order consistency and pointwise-pair accuracy are within 0.02 of the rates
    recomputed from the recorded judgments. Grades are read on a scale wide enough not to clip:
    LLMBar's human scale is the 0/1 preference itself, while its judges graded on 1–10."""
    tasks = load_tasks(shared_dataset("llmbar_natural"))
    tasks = [dataclasses.replace(t, scale=WIDE) for t in tasks]
    targets = preset_targets(SHARED_DATA / "llmbar_natural" / "judgments.jsonl", shared_dataset("llmbar_natural"))
    simulated = simulate_llmbar(preset, tasks, seeds=50)  # 5000 pairs: sd of a rate ≤ 0.007
    assert simulated == pytest.approx(targets[preset].as_tuple(), abs=0.02)


# -- the fixed-accuracy model ------------------------------------------------------------------


def test_a_perfect_fixed_judge_always_picks_the_better():
    task = make_task([1, 2, 3, 4])
    judge = FixedAccuracyJudge(accuracy=1.0, position_bias=0.0)
    for a, b in pairs_of(task):
        verdict = judge.compare(task, a, b)
        better_first = a.human["score"] > b.human["score"]
        assert verdict.winner is (Winner.FIRST if better_first else Winner.SECOND)
        assert (verdict.first_grade > verdict.second_grade) == better_first


def test_full_position_bias_always_picks_first():
    task = make_task([1, 2, 3])
    judge = FixedAccuracyJudge(accuracy=1.0, position_bias=1.0)
    assert all(judge.compare(task, a, b).winner is Winner.FIRST for a, b in pairs_of(task))


def test_deterministic_per_seed_task_pair_and_order():
    task = make_task(list(range(10)))
    a, b = task.candidates[2], task.candidates[7]
    judge = FixedAccuracyJudge(accuracy=0.6, seed=3)
    assert judge.compare(task, a, b) == FixedAccuracyJudge(accuracy=0.6, seed=3).compare(task, a, b)
    assert judge.grade(task, a) == FixedAccuracyJudge(accuracy=0.6, seed=3).grade(task, a)
    verdicts = {FixedAccuracyJudge(accuracy=0.6, seed=s).compare(task, a, b).winner for s in range(30)}
    assert verdicts == {Winner.FIRST, Winner.SECOND}


def binomial_tolerance(p: float, n: int) -> float:
    """Four standard deviations of a share of ``n`` draws that each succeed with probability ``p``."""
    return 4 * math.sqrt(p * (1 - p) / n)


@pytest.mark.parametrize("accuracy", [0.6, 0.75, 0.9])
def test_accuracy_is_what_it_says_whatever_the_gap(accuracy):
    """Right at rate ``accuracy`` on close pairs and far pairs alike (gap-blind, unlike the latent model)."""
    task = make_task(list(range(40)))
    by_gap = {"close": [0, 0], "far": [0, 0]}  # gap -> [right, total]
    for seed in range(3):
        judge = FixedAccuracyJudge(accuracy=accuracy, position_bias=0.0, seed=seed)
        for a, b in pairs_of(task):
            gap = abs(a.human["score"] - b.human["score"])
            counts = by_gap["close" if gap <= 5 else "far"]
            counts[0] += (judge.compare(task, a, b).winner is Winner.FIRST) == (a.human["score"] > b.human["score"])
            counts[1] += 1
    for right, total in by_gap.values():  # 1110 close and 3570 far draws
        assert right / total == pytest.approx(accuracy, abs=binomial_tolerance(accuracy, total))


def test_position_bias_adds_first_slot_wins_at_its_rate():
    """With bias b the first slot wins at b + (1 − b)/2 over both orders of every pair, and the
    judge is right at b/2 + (1 − b)·accuracy: the rates :func:`fixed_parameters` inverts."""
    task = make_task(list(range(30)))
    accuracy, bias = 0.9, 0.3
    first = right = total = 0
    for seed in range(3):
        judge = FixedAccuracyJudge(accuracy=accuracy, position_bias=bias, seed=seed)
        for a, b in pairs_of(task):
            first_won = judge.compare(task, a, b).winner is Winner.FIRST
            first += first_won
            right += first_won == (a.human["score"] > b.human["score"])
            total += 1
    expected_first, expected_right = bias + (1 - bias) / 2, bias / 2 + (1 - bias) * accuracy
    assert first / total == pytest.approx(expected_first, abs=binomial_tolerance(expected_first, total))
    assert right / total == pytest.approx(expected_right, abs=binomial_tolerance(expected_right, total))


def test_human_ties_are_a_fair_coin():
    task = make_task([1.0] * 30)
    judge = FixedAccuracyJudge(accuracy=1.0, position_bias=0.0)
    firsts = [judge.compare(task, a, b).winner is Winner.FIRST for a, b in pairs_of(task)]
    assert sum(firsts) / len(firsts) == pytest.approx(0.5, abs=binomial_tolerance(0.5, len(firsts)))


def test_pointwise_noise_scales_with_spread():
    task = make_task([0, 10], scale=(0, 10))
    exact = FixedAccuracyJudge(noise=0.0).grade(task, task.candidates[1])
    assert exact.value == pytest.approx(10.0, abs=1e-12)
    noisy = [FixedAccuracyJudge(noise=0.5, seed=s).grade(task, task.candidates[0]).value for s in range(200)]
    assert all(0.0 <= v <= 10.0 for v in noisy) and max(noisy) > 0.5


def test_fixed_presets_invert_the_vanilla_rates():
    accuracy, bias = fixed_parameters(0.815, 0.605)
    assert bias == pytest.approx(0.21, abs=1e-12)
    assert bias / 2 + (1 - bias) * accuracy == pytest.approx(0.815, abs=1e-12)
    judge = make_judge("sim:model=fixed,preset=chatgpt")
    assert judge.position_bias == pytest.approx(0.21, abs=1e-12)
    assert judge.accuracy == pytest.approx(0.8987, abs=1e-4)
    assert make_judge("sim:model=fixed,preset=gpt4,seed=4").seed == 4


@pytest.mark.parametrize("preset", sorted(FIXED_PRESET_RATES))
def test_fixed_presets_reproduce_llmbar_vanilla_rates(preset):
    """The fixed-accuracy presets match the recorded Vanilla accuracy and first-slot share (10 seeds)."""
    tasks = load_tasks(shared_dataset("llmbar_natural"))
    right = first = total = 0
    for seed in range(10):
        judge = make_judge(f"sim:model=fixed,preset={preset},seed={seed}")
        for task in tasks:
            truth = task.human_scores()
            a, b = task.candidates
            for x, y in ((a, b), (b, a)):
                verdict = judge.compare(task, x, y)
                chosen = x if verdict.winner is Winner.FIRST else y
                right += truth[chosen.id] > min(truth.values())
                first += verdict.winner is Winner.FIRST
                total += 1
    expected_right, expected_first = FIXED_PRESET_RATES[preset]
    assert right / total == pytest.approx(expected_right, abs=0.03)
    assert first / total == pytest.approx(expected_first, abs=0.03)


def test_fixed_preset_rates_are_the_recorded_vanilla_rates():
    path = SHARED_DATA / "llmbar_natural" / "judgments.jsonl"
    targets = preset_targets(path, shared_dataset("llmbar_natural"))
    for preset, rates in FIXED_PRESET_RATES.items():
        assert (targets[preset].pairwise_accuracy, targets[preset].first_slot) == pytest.approx(rates, abs=5e-4)


# -- data without human scores is refused before judging (issue 24, item 4) ----------------------


def _unlabelled_tasks():
    from rankkit.data.tasks import tasks_from_records

    return tasks_from_records(
        [{"task_id": "q1", "prompt": "p", "candidates": [{"id": f"c{i}", "text": f"answer {i}"} for i in range(15)]}]
    )


@pytest.mark.parametrize("spec", ["sim", "sim:model=fixed", "panel:sim:seed=1+sim:seed=2"])
def test_sim_refuses_data_without_human_scores_before_judging(spec, monkeypatch):
    from rankkit.runs.runner import run
    from rankkit.strategies import make_strategy

    judge = make_judge(spec)
    asked = []
    monkeypatch.setattr(type(judge), "compare_many", lambda self, requests: asked.append(requests) or iter(()))
    with pytest.raises(SpecError, match=r"sim needs human scores for every candidate \(task 'q1', candidate 'c0'"):
        run(_unlabelled_tasks(), [make_strategy("knockout")], judge, progress=False)
    assert asked == []  # refused before any judgment


# -- planted style biases (both models) ---------------------------------------------------------


def styled_task(texts, scores, scale=WIDE):
    from rankkit.data.tasks import Candidate

    candidates = tuple(
        Candidate(id=f"c{i}", text=text, system=f"s{i}", human={"score": float(score)})
        for i, (text, score) in enumerate(zip(texts, scores))
    )
    return Task(task_id="styled", prompt="q", candidates=candidates, criterion="score", scale=scale)


NOISELESS = {"perception": 0.0, "pair_noise": 0.0, "slot_bias": 0.0, "grade_noise": 0.0}


def test_length_bias_shifts_a_pair_by_its_value_per_doubling_of_the_length_ratio():
    task = styled_task(["x" * 400, "x" * 100, "x" * 100], [1.0, 1.0, 2.0])  # spread = 0.4714
    short, longer = task.candidates[1], task.candidates[0]
    judge = LatentJudge(length_bias=0.5, **NOISELESS)
    verdict = judge.compare(task, short, longer)
    assert verdict.winner is Winner.SECOND  # equal humans: the longer wins
    # four times as long = two doublings: 2 · 0.5 · sd between the two grades, half each way
    assert verdict.second_grade - verdict.first_grade == pytest.approx(2 * 0.5 * task.human_spread, abs=1e-9)
    assert verdict.second_grade - 1.0 == pytest.approx(0.5 * task.human_spread, abs=1e-9)
    # a shorter answer one spread... better still loses to a length gain of two spreads
    strong = LatentJudge(length_bias=1.5, **NOISELESS)
    assert strong.compare(task, task.candidates[2], longer).winner is Winner.SECOND
    assert LatentJudge(**NOISELESS).compare(task, task.candidates[2], longer).winner is Winner.FIRST


def test_k_way_style_shifts_are_against_the_groups_mean_log_length_and_match_the_pair_at_k2():
    task = styled_task(["x" * 100, "x" * 200, "x" * 400, "x" * 50], [1, 1, 1, 1])
    judge = LatentJudge(length_bias=1.0, seed=3)
    shifts = judge.group_style_shifts(task.candidates[:3])
    assert shifts == pytest.approx([-1.0, 0.0, 1.0], abs=1e-12)
    for a, b in pairs_of(task):
        pair = judge.compare(task, a, b)
        grades = judge.group_grades(task, [a, b])
        assert (pair.winner is Winner.FIRST) == (grades[0] > grades[1])
    noiseless = LatentJudge(length_bias=1.0, **NOISELESS)
    assert noiseless.choose(task, task.candidates).chosen == 2
    assert [task.candidates[i].id for i in noiseless.rank(task, task.candidates).permutation] == [
        "c2",
        "c1",
        "c0",
        "c3",
    ]


def test_pointwise_style_shift_is_against_the_tasks_median_answer():
    task = styled_task(["x" * 100, "x" * 200, "x" * 400], [1, 1, 1])  # median 200 chars
    judge = LatentJudge(length_bias=1.0, **NOISELESS)
    spread = task.human_spread
    values = [judge.grade(task, c).value for c in task.candidates]
    assert values == pytest.approx([1 - spread, 1.0, 1 + spread], abs=1e-9)


def test_format_bias_prefers_formatted_answers_per_doubling_of_one_plus_the_elements():
    plain, formatted = "word " * 40, "# Title\n- **one**\n- two\n"  # 1 header + 2 items + 1 bold = 4
    task = styled_task([plain, formatted], [1.0, 1.2])
    judge = LatentJudge(format_bias=1.0, **NOISELESS)
    shifts = judge.group_style_shifts(task.candidates)
    assert shifts[1] - shifts[0] == pytest.approx(math.log2(5), abs=1e-12)
    assert judge.compare(task, task.candidates[1], task.candidates[0]).winner is Winner.FIRST
    assert LatentJudge(**NOISELESS).compare(task, task.candidates[0], task.candidates[1]).winner is Winner.SECOND


def test_the_fixed_model_takes_the_shifted_answer_for_the_better_one():
    task = styled_task(["x" * 800, "x" * 100], [1.0, 1.5])  # spread 0.25: the longer is 2 spreads worse
    fixed = {"accuracy": 1.0, "position_bias": 0.0, "noise": 0.0}
    assert FixedAccuracyJudge(**fixed).compare(task, *task.candidates).winner is Winner.SECOND
    biased = FixedAccuracyJudge(length_bias=1.0, **fixed)  # 3 doublings: +3 spreads for the longer
    verdict = biased.compare(task, *task.candidates)
    assert verdict.winner is Winner.FIRST
    assert verdict.first_grade - verdict.second_grade == pytest.approx((3 - 2) * 0.25, abs=1e-9)
    mean = [biased.grade(task, c).value for c in task.candidates]  # median log-length: 4.5 doublings above 1 char
    assert mean[0] - mean[1] == pytest.approx(0.25 * 3 - 0.5, abs=1e-9)


def test_zero_style_biases_change_nothing_and_stay_out_of_fingerprints_and_descriptions():
    task = make_task([1, 2, 3, 5], scale=(0, 10))
    for plain, zero in [
        (LatentJudge(seed=4), LatentJudge(seed=4, length_bias=0.0, format_bias=0.0)),
        (FixedAccuracyJudge(seed=4), FixedAccuracyJudge(seed=4, length_bias=0.0)),
    ]:
        assert plain.fingerprint == zero.fingerprint and plain.description == zero.description
    biased = make_judge("sim:length_bias=0.5")
    assert biased.fingerprint != make_judge("sim").fingerprint
    assert biased.perception == LATENT_PRESETS["gpt4"].perception  # the default preset, plus the bias
    assert "length_bias=0.5" in biased.description
    fixed = make_judge("sim:model=fixed,format_bias=0.3")
    assert isinstance(fixed, FixedAccuracyJudge) and fixed.format_bias == pytest.approx(0.3)
    assert "format_bias=0.3" in fixed.description
    assert fixed.fingerprint != make_judge("sim:model=fixed").fingerprint
    for a, b in pairs_of(task):  # no formatting, equal lengths: a format bias moves nothing
        assert fixed.compare(task, a, b) == dataclasses.replace(fixed, format_bias=0.0).compare(task, a, b)


def test_non_finite_style_biases_are_refused():
    with pytest.raises(SpecError, match="length_bias must be finite"):
        LatentJudge(length_bias=math.inf)
    with pytest.raises(SpecError, match="format_bias must be finite"):
        FixedAccuracyJudge(format_bias=math.nan)
    with pytest.raises(SpecError, match="length_bias"):
        make_judge("sim:length_bias=inf")


# -- the k-way readings --------------------------------------------------------------------------


def calibration_pairs(count):
    """``count`` one-pair tasks whose answers are 2 spreads apart (human scores 0 and 1, as
    LLMBar's preferences), each in both orders: the pairs the presets were fitted on."""
    tasks = [make_task([0.0, 1.0], task_id=f"p{i}", scale=WIDE) for i in range(count)]
    return [(task, pair) for task in tasks for pair in (task.candidates, task.candidates[::-1])]


@pytest.mark.parametrize("preset", sorted(LATENT_PRESETS))
def test_the_probabilities_temperature_makes_mean_confidence_equal_the_pairwise_accuracy(preset):
    """At k = 2 on 6000 calibration judgments, the mean probability the judge gives its own
    choice is its pairwise accuracy (analytic, and the preset's LLMBar rate) within 0.01, and the
    choice is right at that rate within 0.015 (sd of a rate over 6000 judgments ≤ 0.006)."""
    judge = make_judge(f"sim:preset={preset},kway=probabilities")
    params = LATENT_PRESETS[preset]
    accuracy = latent_pair_accuracy(params.perception, params.pair_noise, params.slot_bias)
    assert accuracy == pytest.approx(FIXED_PRESET_RATES[preset][0], abs=1e-3)  # the fitted LLMBar accuracy
    confidence, right = [], 0
    for task, shown in calibration_pairs(3000):
        choice = judge.choose(task, shown)
        confidence.append(choice.probabilities[choice.chosen])
        right += task.human_score(shown[choice.chosen].id) == 1.0
    assert sum(confidence) / len(confidence) == pytest.approx(accuracy, abs=0.01)
    assert right / len(confidence) == pytest.approx(accuracy, abs=0.015)


@pytest.mark.parametrize("preset", sorted(LATENT_PRESETS))
def test_the_temperature_solves_its_calibration_equation_by_independent_quadrature(preset):
    """E[σ(|d|/τ)] for d ~ N(2 ± slot_bias, 2·perception² + 2·pair_noise²), integrated by scipy
    rather than the module's trapezoid rule, equals the analytic accuracy to 1e-5."""
    from scipy import integrate

    params = LATENT_PRESETS[preset]
    tau = kway_temperature(params.perception, params.pair_noise, params.slot_bias)
    spread = math.sqrt(2 * params.perception**2 + 2 * params.pair_noise**2)
    confidence = 0.0
    for mean in (2 + params.slot_bias, 2 - params.slot_bias):
        value, _ = integrate.quad(
            lambda d, mean=mean: stats.norm.pdf(d, mean, spread) / (1 + math.exp(-abs(d) / tau)), -np.inf, np.inf
        )
        confidence += value / 2
    assert confidence == pytest.approx(
        latent_pair_accuracy(params.perception, params.pair_noise, params.slot_bias), abs=1e-5
    )


def test_a_noisier_judge_gets_a_higher_temperature_and_the_extremes_are_certain_or_uniform():
    temperatures = [kway_temperature(0.5, noise, 0.0) for noise in (0.2, 0.5, 1.0, 2.0)]
    assert temperatures == sorted(temperatures) and temperatures[0] > 0
    assert kway_temperature(0.0, 0.0, 0.0) == 0.0  # always right: certain
    assert math.isinf(kway_temperature(0.0, 0.0, 10.0))  # the slot alone decides: chance, uniform
    assert softmax_probabilities([1.0, 3.0, 2.0], 0.0) == (0.0, 1.0, 0.0)
    assert softmax_probabilities([1.0, 3.0, 2.0], math.inf) == pytest.approx((1 / 3,) * 3, abs=1e-12)


def test_probabilities_sum_to_one_and_pick_the_same_choice_and_ranking_as_the_other_readings():
    task = make_task([3.0, 9.0, 1.0, 5.0, 7.0, 2.0], scale=(0.0, 10.0))
    readings = {kway: make_judge(f"sim:preset=chatgpt,kway={kway}") for kway in ("grades", "choice", "probabilities")}
    for start in range(6):
        shown = tuple(task.candidates[(start + i) % 6] for i in range(4))
        choices = {kway: judge.choose(task, shown) for kway, judge in readings.items()}
        probabilities = choices["probabilities"].probabilities
        assert len(probabilities) == 4 and sum(probabilities) == pytest.approx(1.0, abs=1e-12)
        assert all(0.0 <= p <= 1.0 for p in probabilities) and choices["probabilities"].grades is None
        assert {c.chosen for c in choices.values()} == {max(range(4), key=probabilities.__getitem__)}
        assert choices["probabilities"].slot_scores(4) == pytest.approx(tuple(4 * p for p in probabilities), abs=1e-12)
        assert len({judge.rank(task, shown).permutation for judge in readings.values()}) == 1


def test_the_probabilities_reading_is_a_softmax_of_the_grades_at_the_judges_temperature():
    judge = LatentJudge(perception=0.3, pair_noise=0.6, slot_bias=0.4, kway="probabilities")
    task = make_task([2.0, 4.0, 3.0], scale=WIDE)
    grades = judge.group_grades(task, task.candidates)
    tau, spread = judge.kway_temperature(), task.human_spread
    weights = [math.exp(g / (spread * tau)) for g in grades]
    expected = tuple(w / sum(weights) for w in weights)
    assert judge.choose(task, task.candidates).probabilities == pytest.approx(expected, abs=1e-12)


def test_the_slot_bias_shows_in_the_probabilities():
    """chatgpt's first-slot preference, shown 4 answers of equal quality from 800 tasks: the mean
    P(best) of the first slot is above 1/4 and the last slot's below; without slot bias, each slot's
    is 1/4 within 0.03 (sd of each mean ≤ 0.01)."""
    biased = make_judge("sim:preset=chatgpt,kway=probabilities")
    unbiased = make_judge("sim:preset=chatgpt,slot_bias=0,kway=probabilities")
    tasks = [make_task([5.0] * 4 + [0.0, 10.0], task_id=f"e{i}", scale=(0.0, 10.0)) for i in range(800)]

    def mean_per_slot(judge):
        rows = [judge.choose(task, task.candidates[:4]).probabilities for task in tasks]
        return [sum(row[slot] for row in rows) / len(rows) for slot in range(4)]

    first, *_, last = mean_per_slot(biased)
    assert first > 0.25 + 0.05 and last < 0.25 - 0.05
    assert mean_per_slot(unbiased) == pytest.approx([0.25] * 4, abs=0.03)


def test_the_probabilities_reading_is_seeded_and_named_in_the_fingerprint_only():
    task = make_task([3.0, 9.0, 1.0, 5.0], scale=(0.0, 10.0))
    judge = make_judge("sim:preset=gpt4,kway=probabilities")
    again = make_judge("sim:preset=gpt4,kway=probabilities")
    other_seed = make_judge("sim:preset=gpt4,kway=probabilities,seed=1")
    assert judge.choose(task, task.candidates) == again.choose(task, task.candidates)
    assert judge.choose(task, task.candidates).probabilities != other_seed.choose(task, task.candidates).probabilities
    default = make_judge("sim:preset=gpt4")
    assert "kway" not in default.fingerprint and '"probabilities"' in judge.fingerprint
    assert len({default.fingerprint, judge.fingerprint, make_judge("sim:preset=gpt4,kway=choice").fingerprint}) == 3
    assert judge.description == "sim:preset=gpt4,kway=probabilities (simulated)"
    with pytest.raises(SpecError, match="kway must be one of grades, choice, probabilities"):
        make_judge("sim:kway=logits")


# -- verdict scales (issue 39) -------------------------------------------------------------------


def _pair_task():
    return Task(
        task_id="t",
        prompt="q",
        criterion="h",
        candidates=tuple(Candidate(id=f"c{i}", text=f"answer {i}", human={"h": float(i)}) for i in range(6)),
    )


def test_sim_binary_default_gives_no_level():
    task = _pair_task()
    assert make_judge("sim:seed=1").compare(task, *task.candidates[:2]).level is None


def test_sim_graded_levels_are_swap_symmetric_and_on_the_scale():
    from itertools import permutations

    from rankkit.judgments.levels import level_winner

    task = _pair_task()
    graded = make_judge("sim:verdicts=graded,seed=1,pair_noise=0,slot_bias=0")
    tie = make_judge("sim:verdicts=tie,seed=1,pair_noise=0,slot_bias=0")
    seen = set()
    for first, second in permutations(task.candidates, 2):
        verdict = graded.compare(task, first, second)
        assert verdict.level == -graded.compare(task, second, first).level  # no slot bias, no pair noise
        assert verdict.winner == level_winner(verdict.level)
        assert tie.compare(task, first, second).level in (-1, 0, 1)
        seen.add(verdict.level)
    assert seen >= {2, -2}


def test_sim_graded_margins_plant_ties():
    task = _pair_task()
    judge = make_judge("sim:verdicts=graded,seed=1,tie_margin=100,strong_margin=100")
    assert {judge.compare(task, a, b).level for a in task.candidates for b in task.candidates if a != b} == {0}


@pytest.mark.parametrize(
    "spec", ["sim:verdicts=five", "sim:verdicts=graded,tie_margin=2,strong_margin=1", "sim:tie_margin=-1"]
)
def test_sim_verdict_options_are_validated(spec):
    with pytest.raises(SpecError):
        make_judge(spec)


def test_sim_verdict_scale_enters_the_fingerprint_only_when_not_binary():
    assert "verdicts" not in make_judge("sim:seed=1").fingerprint_fields()
    assert make_judge("sim:verdicts=tie,seed=1").fingerprint_fields()["verdicts"] == "tie"


#: Elo gaps over the baseline at which ``sim:verdicts=graded`` wins as often as each recorded model
#: (fitted by ``benchmarks/level_frequencies.py --prompts 400``).
ARENA_HARD_GAPS = {
    "claude-3-opus-20240229": 249.0,
    "gpt-4o-mini": 340.0,
    "gpt-4o": 437.0,
    "claude-3-5-sonnet-20240620": 419.0,
}


def test_sim_graded_defaults_reproduce_recorded_arena_hard_level_frequencies():
    """At its calibrated defaults the simulator's five level frequencies, pooled over the four recorded
    models, are within 0.04 of Arena-Hard's (about 2.5 sampling sds of the recorded 960 games) and each
    model's within 0.10 (two margins fit 20 frequencies; the recorded se per model is about 0.03)."""
    from rankkit.judges.simulated.sim_model import ARENA_HARD_LEVEL_COUNTS
    from rankkit.judges.simulated.synthetic import planted_tasks

    judge = make_judge("sim:verdicts=graded,seed=1")
    baseline = "claude-3-haiku-20240307"
    levels = (2, 1, 0, -1, -2)
    counts = {model: dict.fromkeys(levels, 0) for model in ARENA_HARD_GAPS}
    for task in planted_tasks({baseline: 0.0, **ARENA_HARD_GAPS}, 300, seed=1):
        by_system = {candidate.system: candidate for candidate in task.candidates}
        for model in ARENA_HARD_GAPS:
            counts[model][judge.compare(task, by_system[model], by_system[baseline]).level] += 1
            counts[model][-judge.compare(task, by_system[baseline], by_system[model]).level] += 1
    pooled_gap = [0.0] * 5
    for model, recorded in ARENA_HARD_LEVEL_COUNTS.items():
        simulated = [counts[model][level] / 600 for level in levels]
        wanted = [count / sum(recorded) for count in recorded]
        assert max(abs(s - w) for s, w in zip(simulated, wanted)) <= 0.10, (model, simulated, wanted)
        pooled_gap = [p + (s - w) / 4 for p, s, w in zip(pooled_gap, simulated, wanted)]
    assert max(abs(p) for p in pooled_gap) <= 0.04, pooled_gap


def test_sim_level_defaults_change_only_the_graded_fingerprint():
    fields = {scale: make_judge(f"sim:verdicts={scale},seed=1").fingerprint_fields() for scale in ("tie", "graded")}
    assert (fields["tie"]["tie_margin"], fields["tie"]["strong_margin"]) == pytest.approx((0.2, 1.0), abs=1e-12)
    assert (fields["graded"]["tie_margin"], fields["graded"]["strong_margin"]) == pytest.approx((0.12, 1.36), abs=1e-12)
    assert "strong_margin" not in make_judge("sim:seed=1").fingerprint_fields()
    given = make_judge("sim:verdicts=graded,seed=1,tie_margin=0.2,strong_margin=1").fingerprint_fields()
    assert (given["tie_margin"], given["strong_margin"]) == pytest.approx((0.2, 1.0), abs=1e-12)
