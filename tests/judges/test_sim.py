"""The simulated judge: its model, determinism and presets."""

from __future__ import annotations

import json

import pytest

from rankkit.judges import make_judge
from rankkit.judges.base import Winner
from rankkit.judges.sim import PRESET_RATES, SimulatedJudge, parameters_from_rates
from rankkit.specs import SpecError
from rankkit.tasks import load_tasks
from tests.conftest import SHARED_DATA, shared_dataset
from tests.helpers import make_task


def test_perfect_judge_always_picks_the_better():
    task = make_task([1, 2, 3, 4])
    judge = SimulatedJudge(accuracy=1.0, position_bias=0.0)
    for a in task.candidates:
        for b in task.candidates:
            if a.id != b.id:
                verdict = judge.compare(task, a, b)
                better_first = a.human["score"] > b.human["score"]
                assert verdict.winner is (Winner.FIRST if better_first else Winner.SECOND)
                assert (verdict.first_score > verdict.second_score) == better_first


def test_full_position_bias_always_picks_first():
    task = make_task([1, 2, 3])
    judge = SimulatedJudge(accuracy=1.0, position_bias=1.0)
    assert all(judge.compare(task, a, b).winner is Winner.FIRST
               for a in task.candidates for b in task.candidates if a.id != b.id)


def test_deterministic_per_seed_task_pair_and_order():
    task = make_task(list(range(10)))
    a, b = task.candidates[2], task.candidates[7]
    judge = SimulatedJudge(accuracy=0.6, seed=3)
    assert judge.compare(task, a, b) == SimulatedJudge(accuracy=0.6, seed=3).compare(task, a, b)
    verdicts = {SimulatedJudge(accuracy=0.6, seed=s).compare(task, a, b).winner for s in range(30)}
    assert verdicts == {Winner.FIRST, Winner.SECOND}


def test_accuracy_is_what_it_says():
    task = make_task(list(range(40)))
    judge = SimulatedJudge(accuracy=0.7, position_bias=0.0, seed=1)
    right = total = 0
    for a in task.candidates:
        for b in task.candidates:
            if a.id != b.id:
                total += 1
                right += (judge.compare(task, a, b).winner is Winner.FIRST) == (a.human["score"] > b.human["score"])
    assert right / total == pytest.approx(0.7, abs=0.02)  # 1560 draws: sd about 0.012


def test_pointwise_noise_scales_with_spread():
    task = make_task([0, 10], scale=(0, 10))
    exact = SimulatedJudge(noise=0.0).score(task, task.candidates[1])
    assert exact.score == 10.0
    noisy = [SimulatedJudge(noise=0.5, seed=s).score(task, task.candidates[0]).score for s in range(200)]
    assert all(0.0 <= v <= 10.0 for v in noisy) and max(noisy) > 0.5


def test_presets_invert_the_model():
    accuracy, bias = parameters_from_rates(0.815, 0.605)
    assert bias == pytest.approx(0.21)
    assert bias / 2 + (1 - bias) * accuracy == pytest.approx(0.815)
    judge = make_judge("sim:preset=chatgpt")
    assert judge.position_bias == pytest.approx(0.21) and judge.accuracy == pytest.approx(0.8987, abs=1e-4)
    assert make_judge("sim:preset=gpt4,seed=4").seed == 4
    with pytest.raises(SpecError, match="unknown preset"):
        make_judge("sim:preset=gpt5")
    with pytest.raises(SpecError, match="unknown parameter 'acuracy'"):
        make_judge("sim:acuracy=0.5")


@pytest.mark.parametrize("preset", sorted(PRESET_RATES))
def test_presets_reproduce_llmbar_rates(preset):
    """On LLMBar Natural, each pair in both orders, the preset is right and picks the first slot
    at the rates measured from the recorded judge (averaged over 10 judge seeds)."""
    tasks = load_tasks(shared_dataset("llmbar_natural"))
    right = first = total = 0
    for seed in range(10):
        judge = make_judge(f"sim:preset={preset},seed={seed}")
        for task in tasks:
            truth = task.human_scores()
            a, b = task.candidates
            for x, y in ((a, b), (b, a)):
                verdict = judge.compare(task, x, y)
                chosen = x if verdict.winner is Winner.FIRST else y
                right += truth[chosen.id] > min(truth.values())
                first += verdict.winner is Winner.FIRST
                total += 1
    expected_right, expected_first = PRESET_RATES[preset]
    assert right / total == pytest.approx(expected_right, abs=0.03)
    assert first / total == pytest.approx(expected_first, abs=0.03)


def test_preset_rates_match_the_recorded_judgments():
    """The preset figures are the recorded Vanilla judges' own rates on LLMBar Natural."""
    path = SHARED_DATA / "llmbar_natural" / "judgments.jsonl"
    if not path.exists():
        pytest.skip("shared LLMBar judgments not available")
    preferred = {t.task_id: t.meta["preferred"] for t in load_tasks(shared_dataset("llmbar_natural"))}
    names = {"gpt4": "GPT-4", "chatgpt": "ChatGPT", "falcon": "Falcon"}
    for preset, judge_name in names.items():
        rows = [json.loads(line) for line in path.open()]
        rows = [r for r in rows if r["judge"] == judge_name and r["method"] == "Vanilla"]
        right = sum(r["winner"] == preferred[r["task_id"]] for r in rows) / len(rows)
        first = sum(r["winner"] == r["a"] for r in rows) / len(rows)
        assert (round(right, 3), round(first, 3)) == PRESET_RATES[preset]
