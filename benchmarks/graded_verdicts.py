"""Graded verdicts and ties: does a tie-aware fit recover the truth better, and does arena-hard's weighting match?

Part 1: ties as half wins against Davidson's tie model and the ordinal model, on levels planted by a stated model.

Why the two fits can hardly differ in a point ranking: in Davidson's model the log-likelihood is
linear in θ_i through ``wins_i + ties_i / 2``, the very score that Bradley–Terry with half wins
fits. On a balanced design (every pair met equally often) both maximum-likelihood rankings are the
order of that score, so they are identical; they can differ only on an unbalanced design (the shape
of the expected score in the strength gap differs) and in their intervals (half wins treats a tie
as a game with the variance ``p(1 - p)``; under Davidson a tie lowers the variance of a game's score).

The generative models (``n`` systems, log-strengths θ evenly ``--step`` apart; each match between
systems i and j draws one outcome):

* ``davidson``: Davidson (1970), ``P(i beats j) = π_i / D``, ``P(tie) = ν·sqrt(π_i π_j) / D``,
  ``D = π_i + π_j + ν·sqrt(π_i π_j)``, ``π = exp(θ)``; ν set for the tie share between equals.
* ``threshold``: the simulator's mechanism (``sim:verdicts=graded``), i.e. Rao–Kupper: the judge sees
  ``d = θ_i − θ_j + ε``, ε standard logistic; a tie when ``|d| < η``, a strong verdict (A>>B) when
  ``|d| > η + 1``, else A>B. η set for the tie share between equals.

Designs: ``balanced`` (each pair ``--per-pair`` times) and ``neighbour`` (the same number of matches,
pair (i, j) drawn with weight 2^-|i-j|, as an adaptive schedule concentrates on close pairs).

Fits (all maximum a posteriori with the same Gaussian prior ``alpha/2·Σθ²``, alpha = 0.01, on the
count matrices, so that bootstraps are fast; rankkit's :func:`~rankkit.stats.ratings.bradley_terry`
and :func:`~rankkit.stats.graded.davidson` are fitted on each planted data set too and must give the
same order, ``agree`` in the table): ``half`` (BT, a tie half a win each way), ``davidson``,
``half+strong3`` (BT on arena-hard's weighting: a strong verdict three wins; threshold model only) and
``ordinal`` (:func:`~rankkit.stats.graded.ordinal_log_likelihood`: the threshold model itself, η and
γ fitted with θ; on Davidson data, three levels, Rao–Kupper). A paired table gives ordinal − half on
the same data sets, the fair comparison of two fits.

The estimand is the true ranking (rank 1 = largest θ). Per data set: Spearman and Kendall τ of
the fitted strengths with θ; for each system a 95% rank interval, by the bootstrap over matches
that the leaderboard uses (``--resamples``) and from the fit's Fisher information (θ drawn from
the Laplace approximation ``N(θ̂, H⁻¹)``); coverage = share of systems whose true rank is inside,
and the mean interval width in ranks. Each cell pools 3 seeds × ``--datasets`` data sets; ± is the
Monte-Carlo standard error over the data sets.
Part 2. A recorded example built from arena-hard-auto's documentation (``show_result.py``: each
question is judged twice, baseline first then model first; a label scores 1, 0.5 or 0, a strong
label ``weight`` times; the model's score is the mean): the published formula, written out here
from that description, against :func:`rankkit.stats.graded.arena_hard_score`.

    python benchmarks/graded_verdicts.py                   # a few minutes
    python benchmarks/graded_verdicts.py --datasets 2 --resamples 20

Writes ``benchmarks/results/graded_verdicts.md``.
"""

from __future__ import annotations

import argparse
import math
import statistics
from pathlib import Path

import numpy as np
from scipy.optimize import minimize
from scipy.stats import kendalltau, spearmanr

from rankkit.judgments.levels import label_level
from rankkit.stats.graded import arena_hard_score, davidson, ordinal, ordinal_log_likelihood
from rankkit.stats.ratings import bradley_terry

RESULT = Path(__file__).parent / "results" / "graded_verdicts.md"
ALPHA = 0.01
#: What the table can and cannot show, written above it.
WHY = """What separates the fits: Davidson's log-likelihood depends on θ_i only through
`wins_i + ties_i / 2`, the score Bradley–Terry with half wins fits, so on a balanced design both
rankings are the order of that score; they can differ only where the schedule is unbalanced
(`neighbour`) or in their intervals. The ordinal model (`ordinal`: Rao–Kupper on three levels, its
cumulative-logit extension on five) is not of that form, and on five levels it reads what half wins
and Davidson throw away: how strongly the judge preferred. On threshold data it is the model that
planted the levels; on Davidson data (three levels) it is misspecified. `half` intervals from the
Fisher information treat a tie as a game of variance p(1 − p); a tie model lowers a tie's variance,
so they come out wider. The leaderboard's intervals are the bootstrap over matches (every fit).
`half+strong3` counts a strong verdict as three wins (arena-hard-auto); its Fisher intervals count
the copies as independent games, so they are too narrow. Coverage of 95% rank intervals is coarse
(ranks are integers; the percentile interval of a rank is conservative), so widths at nominal
coverage say more than coverage alone."""

#: Tie share between two equal systems, per setting.
TIE_SHARES = (0.1, 0.3, 0.5)
MODELS = ("davidson", "threshold")
DESIGNS = ("balanced", "neighbour")
STRONG_GAP = 1.0
LAPLACE_DRAWS = 400


def davidson_nu(tie_share: float) -> float:
    """ν with P(tie) = ``tie_share`` between equals: ν / (2 + ν)."""
    return 2 * tie_share / (1 - tie_share)


def threshold_eta(tie_share: float) -> float:
    """η with P(|ε| < η) = ``tie_share``, ε standard logistic: tanh(η/2)."""
    return 2 * math.atanh(tie_share)


def schedule(n: int, design: str, per_pair: int, rng: np.random.Generator) -> np.ndarray:
    """The (i, j) of every match: each pair ``per_pair`` times, or as many drawn with weight 2^-|i-j|."""
    pairs = np.array([(i, j) for i in range(n) for j in range(i + 1, n)])
    if design == "balanced":
        chosen = np.repeat(np.arange(len(pairs)), per_pair)
    else:
        weights = 2.0 ** -np.abs(pairs[:, 0] - pairs[:, 1])
        chosen = rng.choice(len(pairs), size=len(pairs) * per_pair, p=weights / weights.sum())
    return pairs[chosen]


def planted_levels(theta: np.ndarray, matches: np.ndarray, model: str, tie_share: float, rng) -> np.ndarray:
    """A level (2 … -2, from the match's first system) per match under ``model``."""
    gap = theta[matches[:, 0]] - theta[matches[:, 1]]
    if model == "davidson":
        nu = davidson_nu(tie_share)
        win, loss, tie = np.exp(gap / 2), np.exp(-gap / 2), np.full_like(gap, nu)
        u = rng.random(len(gap)) * (win + loss + tie)
        return np.where(u < win, 1, np.where(u < win + tie, 0, -1))
    u = rng.random(len(gap)).clip(1e-12, 1 - 1e-12)
    seen = gap + np.log(u / (1 - u))
    eta = threshold_eta(tie_share)
    return np.where(np.abs(seen) < eta, 0, np.sign(seen) * np.where(np.abs(seen) > eta + STRONG_GAP, 2, 1))


def counts(n: int, matches: np.ndarray, levels: np.ndarray, weights: np.ndarray | None = None):
    """Win matrix (i beat j, a strong win counting ``weights``) and symmetric tie matrix."""
    w = np.ones(len(levels)) if weights is None else weights
    winner = np.where(levels > 0, matches[:, 0], matches[:, 1])
    loser = np.where(levels > 0, matches[:, 1], matches[:, 0])
    decided = levels != 0
    wins = np.zeros((n, n))
    np.add.at(wins, (winner[decided], loser[decided]), w[decided])
    ties = np.zeros((n, n))
    np.add.at(ties, (matches[~decided, 0], matches[~decided, 1]), 1.0)
    return wins, ties + ties.T


def fit_half(wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """BT with a tie half a win each way: θ (mean zero) and the Hessian of the negative log-posterior."""
    n = len(wins)
    score = wins + ties / 2
    games = score + score.T

    def objective(theta):
        p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
        value = -np.sum(score * np.log(p)) + ALPHA / 2 * theta @ theta
        return value, -(score.sum(1) - (games * p).sum(1)) + ALPHA * theta

    theta = minimize(objective, np.zeros(n), jac=True, method="L-BFGS-B").x
    p = 1 / (1 + np.exp(theta[None, :] - theta[:, None]))
    info = games * p * (1 - p)
    hessian = np.diag(info.sum(1)) - info + ALPHA * np.eye(n)
    return theta - theta.mean(), hessian


def davidson_objective(params: np.ndarray, wins: np.ndarray, ties: np.ndarray):
    """Davidson's negative log-posterior and its gradient in (θ, log ν); ``ties`` symmetric."""
    n = len(wins)
    theta, log_nu = params[:n], params[n]
    half = (theta[:, None] + theta[None, :]) / 2
    log_d = np.logaddexp(np.logaddexp(theta[:, None], theta[None, :]), log_nu + half)
    value = -(np.sum(wins * (theta[:, None] - log_d)) + np.sum(ties * (log_nu + half - log_d)) / 2)
    p_win, p_tie = np.exp(theta[:, None] - log_d), np.exp(log_nu + half - log_d)
    games = wins + wins.T + ties
    observed = wins.sum(1) + ties.sum(1) / 2
    expected = (games * (p_win + p_tie / 2)).sum(1)
    d_nu = ties.sum() / 2 - np.sum(games * p_tie) / 2
    return value + ALPHA / 2 * theta @ theta, np.append(-(observed - expected) + ALPHA * theta, -d_nu)


def fit_davidson(wins: np.ndarray, ties: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Davidson θ (mean zero) and the Hessian of the negative log-posterior in θ (ν profiled at its fit)."""
    n = len(wins)
    start = np.append(np.zeros(n), math.log(0.5))
    params = minimize(davidson_objective, start, args=(wins, ties), jac=True, method="L-BFGS-B").x
    step = 1e-5
    columns = []
    for k in range(n + 1):
        shift = np.zeros(n + 1)
        shift[k] = step
        plus, minus = (davidson_objective(params + s, wins, ties)[1] for s in (shift, -shift))
        columns.append((plus - minus) / (2 * step))
    full = np.array(columns)
    full = (full + full.T) / 2
    # θ's block of the inverse of the full Hessian, given back as a precision so both fits read alike.
    covariance = np.linalg.inv(full)[:n, :n]
    return params[:n] - params[:n].mean(), np.linalg.inv(covariance)


def ranks_of(theta: np.ndarray) -> np.ndarray:
    """Rank 1 for the largest θ, along the last axis."""
    return np.argsort(np.argsort(-theta, axis=-1), axis=-1) + 1


def rank_intervals(samples: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """2.5% and 97.5% percentiles of each system's rank over sampled θ (rows)."""
    r = ranks_of(samples)
    return np.percentile(r, 2.5, axis=0, method="lower"), np.percentile(r, 97.5, axis=0, method="higher")


def fit_ordinal(n: int, matches: np.ndarray, levels: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The ordinal model (rankkit's :func:`~rankkit.stats.graded.ordinal_log_likelihood`): θ (mean zero) and
    the precision of θ (η, γ profiled at their fit, as for Davidson)."""
    keys, level_counts = np.unique(np.column_stack([matches, levels]).astype(np.intp), axis=0, return_counts=True)
    first, second, kinds = keys[:, 0], keys[:, 1], keys[:, 2]
    five = bool(np.any(np.abs(kinds) == 2))

    def objective(params):
        theta = params[:n]
        value, gradient, d_eta, d_gamma = ordinal_log_likelihood(
            theta, params[n], params[n + 1] if five else None, first, second, kinds, level_counts.astype(float)
        )
        full = np.append(-gradient + ALPHA * theta, [-d_eta] + ([-d_gamma] if five else []))
        return -value + ALPHA / 2 * theta @ theta, full

    size = n + (2 if five else 1)
    start = np.append(np.zeros(n), [math.log(0.5)] + ([0.0] if five else []))
    params = minimize(objective, start, jac=True, method="L-BFGS-B").x
    step = 1e-5
    columns = [
        (objective(params + shift)[1] - objective(params - shift)[1]) / (2 * step) for shift in np.eye(size) * step
    ]
    full = np.array(columns)
    covariance = np.linalg.inv((full + full.T) / 2)[:n, :n]
    return params[:n] - params[:n].mean(), np.linalg.inv(covariance)


def bootstrap_samples(fit, matches, levels, resamples, rng) -> np.ndarray:
    """θ refitted by ``fit(matches, levels)`` on ``resamples`` resamples of the matches (with replacement)."""
    thetas = []
    for _ in range(resamples):
        pick = rng.integers(0, len(levels), len(levels))
        thetas.append(fit(matches[pick], levels[pick])[0])
    return np.array(thetas)


def rankkit_agreement(n: int, matches: np.ndarray, levels: np.ndarray, estimates: dict) -> float:
    """The lowest Spearman of rankkit's own fits with this benchmark's (ties as half, Davidson, ordinal)."""
    names = [f"s{i}" for i in range(n)]
    outcomes = [(names[i], names[j], 1.0 if lv > 0 else 0.0 if lv < 0 else 0.5) for (i, j), lv in zip(matches, levels)]
    graded = [(names[i], names[j], int(lv)) for (i, j), lv in zip(matches, levels)]
    rhos = []
    for fit, data, ours in (
        (bradley_terry, outcomes, estimates["half"]),
        (davidson, outcomes, estimates["davidson"]),
        (ordinal, graded, estimates["ordinal"]),
    ):
        theirs = fit(data, names)
        rhos.append(spearmanr([theirs[s] for s in names], ours)[0])
    return min(rhos)


def evaluate_dataset(model, design, tie_share, args, rng) -> tuple[dict, float, float]:
    """One planted data set: per fit (Spearman, Kendall, boot coverage, boot width, Fisher coverage, width)."""
    theta = args.step * np.arange(args.systems)[::-1]
    matches = schedule(args.systems, design, args.per_pair, rng)
    levels = planted_levels(theta, matches, model, tie_share, rng)
    n = args.systems
    fits = {
        "half": lambda m, lv: fit_half(*counts(n, m, lv)),
        "davidson": lambda m, lv: fit_davidson(*counts(n, m, lv)),
        "half+strong3": lambda m, lv: fit_half(*counts(n, m, lv, np.where(np.abs(lv) == 2, 3.0, 1.0))),
        "ordinal": lambda m, lv: fit_ordinal(n, m, lv),
    }
    if model != "threshold":  # no strong verdicts: half+strong3 is half
        del fits["half+strong3"]
    truth = ranks_of(theta)
    rows, estimates = {}, {}
    for name, fit in fits.items():
        estimate, hessian = fit(matches, levels)
        estimates[name] = estimate
        boot = rank_intervals(bootstrap_samples(fit, matches, levels, args.resamples, rng))
        laplace = rng.multivariate_normal(estimate, np.linalg.inv(hessian), LAPLACE_DRAWS)
        fisher = rank_intervals(laplace)
        rows[name] = (
            spearmanr(estimate, theta)[0],
            kendalltau(estimate, theta)[0],
            *[f(interval) for interval in (boot, fisher) for f in (covered_share(truth), width)],
        )
    agree = rankkit_agreement(args.systems, matches, levels, estimates)
    return rows, float(np.mean(levels == 0)), agree


def covered_share(truth: np.ndarray):
    return lambda interval: float(np.mean((interval[0] <= truth) & (truth <= interval[1])))


def width(interval) -> float:
    return float(np.mean(interval[1] - interval[0]))


def mean_se(values: list[float]) -> str:
    se = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else math.nan
    return f"{statistics.mean(values):.3f} ± {se:.3f}"


def planted_table(args) -> list[str]:
    """Part 1's markdown table, one row per (model, design, tie share, fit)."""
    lines = [
        "| model | design | tie share (equals / observed) | fit | Spearman | Kendall τ "
        "| boot coverage | boot width | Fisher coverage | Fisher width |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    agreement, paired = [], []
    for model in MODELS:
        for design in DESIGNS:
            for tie_share in TIE_SHARES:
                per_fit: dict[str, list[tuple]] = {}
                observed = []
                for seed in range(args.seeds):
                    rng = np.random.default_rng(
                        [seed, MODELS.index(model), DESIGNS.index(design), int(100 * tie_share)]
                    )
                    for _ in range(args.datasets):
                        rows, tie_rate, agree = evaluate_dataset(model, design, tie_share, args, rng)
                        observed.append(tie_rate)
                        agreement.append(agree)
                        for name, row in rows.items():
                            per_fit.setdefault(name, []).append(row)
                paired.append(paired_line(model, design, tie_share, per_fit))
                for name, rows in per_fit.items():
                    cells = [mean_se([row[k] for row in rows]) for k in range(6)]
                    lines.append(
                        f"| {model} | {design} | {tie_share:.1f} / {statistics.mean(observed):.2f} | {name} | "
                        + " | ".join(cells)
                        + " |"
                    )
                print(lines[-1], flush=True)
    lines += [
        "",
        "Spearman of rankkit's `bradley_terry`, `davidson` and `ordinal` with these fits (their priors differ "
        f"slightly): at least {min(agreement):.3f} over all data sets.",
        "",
        "### Paired: ordinal minus half wins on the same planted data",
        "",
        "Mean over the data sets of a cell of (ordinal − half) per data set, ± its standard error; the fair test,",
        "since both fits see the same matches (the unpaired ± above includes the data sets' own spread).",
        "",
        "| model | design | tie share | Δ Spearman | Δ Kendall τ | Δ boot coverage | Δ boot width |",
        "|---|---|---|---|---|---|---|",
        *paired,
    ]
    return lines


def paired_line(model: str, design: str, tie_share: float, per_fit: dict[str, list[tuple]]) -> str:
    """One row of the paired table: ordinal − half per data set, mean ± standard error, for four measures."""
    cells = [
        mean_se([ours[k] - theirs[k] for ours, theirs in zip(per_fit["ordinal"], per_fit["half"])])
        for k in (0, 1, 2, 3)
    ]
    return f"| {model} | {design} | {tie_share:.1f} | " + " | ".join(cells) + " |"


#: A recorded example in arena-hard-auto's judgment layout: per question, game 1 (baseline as A, model
#: as B) and game 2 (model as A, baseline as B), each a label.
RECORDED = {
    "model-x": [("B>>A", "A>B"), ("A=B", "A=B"), ("A>B", "B>A"), ("B>A", "A>>B"), ("B>>A", "A>>B")],
    "model-y": [("A>>B", "B>>A"), ("A>B", "A=B"), ("A=B", "B>A"), ("B>A", "A>B"), ("A>B", "B>A")],
}


def published_score(games: list[tuple[str, str]], weight: int = 3) -> float:
    """arena-hard-auto's score as its documentation describes it: per label a list of 1 / 0.5 / 0
    (strong labels repeated ``weight`` times), game 2's as is and game 1's as one minus; the mean."""
    as_a = {"A>>B": [1] * weight, "A>B": [1], "A=B": [0.5], "B>A": [0], "B>>A": [0] * weight}
    scores = []
    for game_one, game_two in games:
        scores += as_a[game_two] + [1 - s for s in as_a[game_one]]
    return sum(scores) / len(scores)


def rankkit_score(model: str, games: list[tuple[str, str]]) -> float:
    matches = []
    for game_one, game_two in games:
        matches.append(("baseline", model, label_level(game_one)))
        matches.append((model, "baseline", label_level(game_two)))
    return arena_hard_score(matches, model)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=10)
    parser.add_argument("--step", type=float, default=0.2, help="log-strength gap between neighbours")
    parser.add_argument("--per-pair", type=int, default=8, help="matches per pair (balanced); the same total otherwise")
    parser.add_argument("--datasets", type=int, default=20, help="data sets per seed and cell")
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    lines = [
        "# Graded verdicts and ties",
        "",
        f"`python benchmarks/graded_verdicts.py --systems {args.systems} --step {args.step} --per-pair {args.per_pair} "
        f"--datasets {args.datasets} --resamples {args.resamples} --seeds {args.seeds}`; the models, fits and "
        "estimand are in the script's docstring. 95% rank intervals; coverage is the share of systems whose "
        f"true rank lies in its interval, ± the Monte-Carlo standard error over the {args.seeds * args.datasets} "
        "data sets of a cell.",
        "",
        WHY,
        "",
        *planted_table(args),
        "",
        "## arena-hard-auto's weighting on a recorded example",
        "",
        "| model | published formula | rankkit |",
        "|---|---|---|",
    ]
    for model, games in RECORDED.items():
        lines.append(f"| {model} | {published_score(games):.6f} | {rankkit_score(model, games):.6f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
