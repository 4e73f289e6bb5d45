"""The stopping rules' model (rankkit.strategies._stopping), its forecasts, and where they are shown."""

from __future__ import annotations

import numpy as np
import pytest

from rankkit.data.specs import SpecError
from rankkit.runs.plan.dry_run import target_forecast
from rankkit.runs.runner import RunProgress
from rankkit.strategies import make_strategy
from rankkit.strategies._bt_posterior import Evidence
from rankkit.strategies._stopping import (
    Forecast,
    StopTarget,
    bt_estimate,
    clears_confidence,
    forecast_more,
    gaussian_probability,
    importance_estimate,
    parse_until,
    prior_forecast,
    relevant_pairs,
)
from tests.helpers import make_task


def test_until_names_three_targets_and_refuses_others():
    assert parse_until("s", "top1") == StopTarget("top1")
    assert parse_until("s", "top:2") == StopTarget("top", 2)
    assert parse_until("s", None) is None
    for bad in ("top:0", "top:x", "all"):
        with pytest.raises(SpecError, match="until must be one of"):
            parse_until("s", bad)


def test_relevant_pairs_are_what_each_target_asserts():
    order = np.array([2, 0, 1, 3])
    assert relevant_pairs(order, StopTarget("top1")).tolist() == [[2, 0], [2, 1], [2, 3]]
    assert relevant_pairs(order, StopTarget("top", 2)).tolist() == [[2, 1], [2, 3], [0, 1], [0, 3]]
    assert relevant_pairs(order, StopTarget("order")).tolist() == [[2, 0], [0, 1], [1, 3]]


def test_the_gaussian_probability_matches_the_closed_form_for_two_candidates():
    from scipy.stats import norm

    mean, cov = np.array([1.0, 0.0]), np.diag([0.5, 0.5])
    assert gaussian_probability(mean, cov, StopTarget("top1"), seed=1) == pytest.approx(norm.cdf(1.0), abs=0.02)


def _exact_two_wins(scales):
    """P(θa > θb | a beat b twice) under the hyperprior: by quadrature over d = θa − θb ~ N(0, 2τ²)."""
    from scipy import integrate
    from scipy.stats import norm

    def sigma(d):
        return 1 / (1 + np.exp(-d))

    marginals, above = [], []
    for tau in scales:
        density = norm(0, np.sqrt(2) * tau).pdf

        def weight(d, density=density):
            return sigma(d) ** 2 * density(d)

        marginals.append(integrate.quad(weight, -60, 60, limit=200)[0])
        above.append(integrate.quad(weight, 0, 60, limit=200)[0])
    return sum(above) / sum(marginals)


@pytest.mark.parametrize("scales", [(1.0,), (0.5, 2.0, 8.0)])
def test_importance_weights_reach_the_exact_posterior_under_the_hyperprior(scales):
    evidence = Evidence(2)
    evidence.add(0, 1, 1.0)
    evidence.add(1, 0, 0.0)  # the other order, a again
    estimate, _ = bt_estimate(
        np.array([0, 1]), StopTarget("top1"), evidence, seed=3, start=np.zeros(2), scales=scales, draws=20000
    )
    assert estimate == pytest.approx(_exact_two_wins(scales), abs=0.01)


def test_a_close_estimate_gets_more_draws_and_must_clear_the_confidence_by_its_error():
    asked = []

    def estimate(draws):  # 0.955 with a binomial-like error: clear of 0.95 by 2 errors only at 32000 draws
        asked.append(draws)
        return 0.955, 0.3 / draws**0.5

    assert clears_confidence(estimate, 0.95) and asked == [2000, 8000, 32000]
    asked.clear()
    assert not clears_confidence(estimate, 0.96) and asked == [2000]  # below it: no more draws
    assert not clears_confidence(lambda draws: (0.97, 0.02), 0.95)  # never clear, whatever the draws


def test_the_importance_estimates_error_matches_its_spread_over_seeds():
    evidence = Evidence(3)
    for first, second, outcome in [(0, 1, 1.0), (1, 0, 0.0), (1, 2, 1.0), (0, 2, 1.0), (2, 1, 1.0)]:
        evidence.add(first, second, outcome)
    order = np.array([0, 1, 2])
    runs = [importance_estimate(order, StopTarget("top1"), evidence, 2.0, np.zeros(3), seed, 400) for seed in range(60)]
    spread = np.std([probability for probability, *_ in runs], ddof=1)
    stated = np.sqrt(np.mean([error**2 for *_, error in runs]))
    assert stated == pytest.approx(spread, rel=0.35)  # 60 seeds estimate an sd to about ±10%


def test_forecasts_are_capped_and_shrink_as_the_answer_clears():
    target = StopTarget("top1")
    unsure = forecast_more(np.array([0.1, 0.0, -0.1]), np.eye(3) * 0.5, target, 0.95, used=10, most=60, seed=0)
    sure = forecast_more(np.array([3.0, 0.0, -0.1]), np.eye(3) * 0.05, target, 0.95, used=10, most=60, seed=0)
    assert 0 <= unsure.low <= unsure.expected <= unsure.high <= 50
    assert sure.expected < unsure.expected
    prior = prior_forecast(8, target, 0.95, 2.0, most=56)
    assert prior.basis == "prior" and 0 < prior.expected <= 56


def test_the_dry_run_and_the_progress_bar_show_forecasts_with_dollars_when_priced():
    tasks = [make_task([1, 2, 3, 4], task_id=f"t{i}") for i in range(2)]
    assert target_forecast(make_strategy("active"), tasks) is None
    total = target_forecast(make_strategy("active:until=top1,budget=3"), tasks)
    assert total.basis == "prior" and total.high <= 2 * 12

    bar = RunProgress(2, disable=True)
    bar.forecast("t0", "active", Forecast(4, 2, 8, "posterior"))
    assert "to_target=~4 (2–8) judgments (" in bar._postfix()  # nothing priced yet: judgments only
    bar.judged(2, paid=2, cached=0, reused=0, usd=1.0)  # a priced judge's first two judgments: $0.50 each
    assert "to_target=~4 (2–8) judgments, ~$2.00 ($1.00–$4.00)" in bar._postfix()
    bar.task_done("t0")
    assert "to_target" not in bar._postfix()


def test_the_choice_posterior_is_the_mode_and_inverse_hessian_of_the_logit_posterior():
    import random

    import numpy as np

    from rankkit.strategies._bt_posterior import choice_posterior

    rng = random.Random(5)
    n, prior_sd = 12, 2.0
    choices = []
    for _ in range(150):  # mixed group sizes, as a first round and the contention rounds give
        members = rng.sample(range(n), rng.choice([2, 3, 8]))
        choices.append((tuple(members), rng.choice(members)))
    mean, cov = choice_posterior(choices, n, prior_sd)
    # The gradient and Hessian written out one choice at a time, as the docstring states them.
    gradient, hessian = mean / prior_sd**2, np.eye(n) / prior_sd**2
    for members, chosen in choices:
        rows = list(members)
        p = np.exp(mean[rows] - mean[rows].max())
        p /= p.sum()
        gradient[rows] += p
        gradient[chosen] -= 1.0
        hessian[np.ix_(rows, rows)] += np.diag(p) - np.outer(p, p)
    assert np.abs(gradient).max() < 1e-8
    assert np.allclose(cov, np.linalg.inv(hessian), rtol=1e-9, atol=1e-12)
