"""The misspecified simulated judges: persistent pair effects, clipping, ties, near-duplicates."""

from __future__ import annotations

import random

import pytest

from rankkit.data.specs import SpecError
from rankkit.judges import make_judge
from rankkit.judges.simulated.sim import LatentJudge
from rankkit.judges.simulated.sim_model import DUPLICATE_GAP
from rankkit.judgments.values import Winner
from tests.helpers import make_task

#: A judge whose only noise is the misspecification under test.
QUIET = {"perception": 0.0, "pair_noise": 0.0, "slot_bias": 0.0, "grade_noise": 0.0}


def random_task(seed: int, n: int = 8):
    rng = random.Random(seed)
    return make_task([rng.gauss(0, 1) for _ in range(n)], task_id=f"t{seed}", scale=(-10, 10))


def ordered_pairs(task):
    return [(a, b) for a in task.candidates for b in task.candidates if a.id != b.id]


def test_a_pair_effect_is_the_same_in_both_orders_and_inverts_some_close_pairs():
    """Without other noise a pair's winner is the same in both orders (the effect persists);
    some pairs are won by the latent-worse answer, none by a coin per order."""
    judge = LatentJudge(**QUIET, pair_effect=1.0, seed=3)
    inverted = total = 0
    for seed in range(10):
        task = random_task(seed)
        latent = judge.latent(task)
        for a, b in ordered_pairs(task):
            forward, backward = judge.compare(task, a, b).winner, judge.compare(task, b, a).winner
            assert {forward, backward} == {Winner.FIRST, Winner.SECOND}  # the same answer wins both
            winner = a.id if forward is Winner.FIRST else b.id
            inverted += winner != max((a.id, b.id), key=latent.get)
            total += 1
    # E[share inverted] = P(N(0, 1) beats a gap of N(0, 2)) = 1/2 − atan(√2)/π ≈ 0.196; tolerance ±0.07.
    assert inverted / total == pytest.approx(0.196, abs=0.07)


def test_a_pair_effect_is_reproducible_from_the_seed_and_changes_with_it():
    task = random_task(1)
    verdicts = {
        seed: [
            LatentJudge(**QUIET, pair_effect=1.0, seed=seed).compare(task, a, b).winner for a, b in ordered_pairs(task)
        ]
        for seed in (0, 0, 1)
    }
    again = [LatentJudge(**QUIET, pair_effect=1.0, seed=0).compare(task, a, b).winner for a, b in ordered_pairs(task)]
    assert again == verdicts[0] and verdicts[1] != verdicts[0]


def test_clipping_makes_answers_past_the_top_tie_while_the_latent_order_stays():
    task = make_task([0.0, 6.0, 7.0], scale=(0, 5))
    clipped, plain = LatentJudge(**QUIET, clip=True), LatentJudge(**QUIET)
    _, six, seven = task.candidates
    assert clipped.compare(task, seven, six).winner is Winner.TIE
    assert clipped.compare(task, six, seven).winner is Winner.TIE
    assert plain.compare(task, seven, six).winner is Winner.FIRST
    assert clipped.latent(task)["c2"] > clipped.latent(task)["c1"]
    assert clipped.compare(task, seven, task.candidates[0]).winner is Winner.FIRST


def test_a_tie_margin_makes_close_answers_tie_and_far_ones_not():
    task = make_task([0.0, 0.1, 3.0], scale=(-10, 10))
    judge = LatentJudge(**QUIET, tie_margin=0.3)
    low, close, far = task.candidates
    assert judge.compare(task, low, close).winner is Winner.TIE
    assert judge.compare(task, far, low).winner is Winner.FIRST
    assert LatentJudge(**QUIET).compare(task, low, close).winner is Winner.SECOND


def test_the_share_of_ties_grows_with_the_margin():
    shares = []
    for margin in (0.0, 0.2, 0.6):
        judge = LatentJudge(tie_margin=margin, seed=2)
        verdicts = [
            judge.compare(task, a, b).winner
            for seed in range(5)
            for task in [random_task(seed)]
            for a, b in ordered_pairs(task)
        ]
        shares.append(sum(v is Winner.TIE for v in verdicts) / len(verdicts))
    assert shares[0] == pytest.approx(0.0, abs=1e-12)
    assert shares[0] < shares[1] < shares[2]


def test_near_duplicates_are_perceived_within_a_few_gaps_of_their_source():
    task = random_task(4, n=6)
    spread = task.human_spread
    everyone = LatentJudge(duplicates=1.0, seed=1).latent(task)  # every answer after the first copies one
    values = sorted(everyone.values())
    # Each copy is DUPLICATE_GAP·spread·z from its source, chains at most 5 deep: |z| < 4 each.
    assert values[-1] - values[0] < 5 * 4 * DUPLICATE_GAP * spread
    unduplicated = LatentJudge(seed=1).latent(task)
    assert max(unduplicated.values()) - min(unduplicated.values()) > 10 * DUPLICATE_GAP * spread
    assert LatentJudge(duplicates=1.0, seed=1).latent(task) == everyone


def test_the_defaults_plant_nothing_and_keep_the_fingerprint():
    judge = make_judge("sim:preset=gpt4")
    assert set(judge.fingerprint_fields()) == {"model", "perception", "pair_noise", "slot_bias", "grade_noise", "seed"}
    misspecified = make_judge("sim:preset=gpt4,pair_effect=0.5,clip=true,tie_margin=0.2,duplicates=0.3")
    assert misspecified.fingerprint_fields()["clip"] is True
    assert "pair_effect=0.5,clip=true,tie_margin=0.2,duplicates=0.3" in misspecified.description


@pytest.mark.parametrize(
    ("spec", "words"),
    [
        ("sim:pair_effect=-1", "pair_effect must be"),
        ("sim:tie_margin=-0.1", "tie_margin must be"),
        ("sim:duplicates=1.5", "duplicates must be in [0, 1]"),
        ("sim:model=fixed,clip=true", "belong(s) to model=latent"),
    ],
)
def test_bad_misspecification_options_are_refused(spec, words):
    with pytest.raises(SpecError) as error:
        make_judge(spec)
    assert words in str(error.value)
