"""Do a few human votes correct a length-biased judge's leaderboard with valid intervals? (issue 42, item 3)

The simulation (numpy; one comparison = one prompt, so the units are independent as PPI assumes):

* ``--systems`` systems with planted qualities evenly spaced in [-1, 1] and mean answer lengths
  (log2 characters) drawn once, independent of quality;
* each comparison draws a prompt: each answer's *truth* is its system's quality plus N(0, 1) and its
  log2 length its system's mean plus N(0, 0.3);
* the **judge** perceives the truth plus ``--length-bias`` (1.5) logits per doubling of length:
  ``P(a wins) = σ(s·(truth_a − truth_b) + bias·(len_a − len_b))`` with ``--sharpness`` s (3); by
  default it reports that probability (a logprob judge), with ``--judge-labels verdicts`` a
  verdict drawn from it, ties 5% of the time;
* a **human** perceives the same per-answer truth without the bias: ``σ(s·(truth_a − truth_b))``,
  ties 10% of the time (half a point each).

The judge judges ``--judged`` (30,000) comparisons; humans vote on 100, 300 and 1,000 of them drawn at
random. Why 30,000: PPI++'s gain depends on how many judge-only labels stand behind each vote. For
one coordinate the tuned λ is ``cov(h, f) / ((1 + n/N)·var(f))`` and the width over the human-only
width ``sqrt(1 − ρ²/(1 + n/N))`` (ρ: the judge label's correlation with a human vote, n votes, N
judge-only labels). With 10,000 judged and 1,000 votes N/n is only 9: λ shrinks by 1/(1 + 1/9) and
the ratio reaches 0.805 (ρ² ≈ 0.41 here). The use case is a judge labelling everything and humans
a few hundred pairs, so the judge labels 30 comparisons per vote at the most votes, 300 at the fewest. For each seed, :func:`rankkit.stats.ppi.ppi_bradley_terry` gives the PPI++ ratings, the
human-only and the judge-only ones. The estimand is the human Bradley–Terry rating: the fit of
the expected human outcomes over 400,000 comparisons. Figures: the share of 95% intervals that
cover it (PPI and human-only), the PPI interval's mean width over the human-only one, λ, the
effective number of human votes, and Kendall's τ and Spearman's ρ of each estimate with the
planted qualities. Targets: coverage >= 0.93, width ratio <= 0.8, PPI's rank correlation above
both the judge-only and the human-only.

Writes ``benchmarks/results/ppi.md`` (``--out``). Runtime: about 4 minutes with ``--seeds 100`` on one core.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats

from rankkit.stats.ppi import PPIResult, pair_labels, ppi_bradley_terry

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
VOTES = (100, 300, 1000)
HUMAN_TIES, JUDGE_TIES = 0.10, 0.05


def systems(count: int) -> tuple[np.ndarray, np.ndarray]:
    """Planted qualities and mean log2 lengths (fixed across seeds: the systems are the population)."""
    quality = np.linspace(-1, 1, count)
    lengths = np.random.default_rng(12345).normal(9.0, 1.0, count)
    return quality, lengths


def comparisons(
    rng: np.random.Generator,
    quality: np.ndarray,
    lengths: np.ndarray,
    count: int,
    bias: float,
    judge_probabilities: bool = False,
    sharpness: float = 3.0,
):
    """``count`` comparisons: (first, second, human points, judge points, expected human points)."""
    first = rng.integers(0, len(quality), count)
    second = (first + rng.integers(1, len(quality), count)) % len(quality)
    truth = quality[first] - quality[second] + rng.normal(0, 1, count) - rng.normal(0, 1, count)
    length = lengths[first] - lengths[second] + rng.normal(0, 0.3, count) - rng.normal(0, 0.3, count)
    human_p = 1 / (1 + np.exp(-sharpness * truth))
    judge_p = 1 / (1 + np.exp(-(sharpness * truth + bias * length)))

    def verdicts(p: np.ndarray, ties: float) -> np.ndarray:
        points = (rng.random(count) < p).astype(float)
        return np.where(rng.random(count) < ties, 0.5, points)

    expected_human = (1 - HUMAN_TIES) * human_p + HUMAN_TIES / 2
    judge = judge_p if judge_probabilities else verdicts(judge_p, JUDGE_TIES)
    return first, second, verdicts(human_p, HUMAN_TIES), judge, expected_human


def human_estimand(quality: np.ndarray, lengths: np.ndarray, names: list[str], sharpness: float) -> np.ndarray:
    """The human Bradley–Terry ratings: the fit of the expected human points over 400,000 comparisons."""
    first, second, _, _, expected = comparisons(
        np.random.default_rng(999), quality, lengths, 400_000, 0.0, sharpness=sharpness
    )
    fit = ppi_bradley_terry(
        names, pair_labels(first, second, expected), expected, pair_labels([0], [1], [0.5]), lam=0.0, ridge=0.0
    )
    return np.array([fit[name].ppi.estimate for name in names])


def one_seed(seed: int, quality, lengths, names, args: argparse.Namespace, truth) -> dict[int, dict[str, float]]:
    """Every figure of one seed at each number of votes."""
    rng = np.random.default_rng(seed)
    judged = args.judged
    first, second, human, judge, _ = comparisons(
        rng, quality, lengths, judged, args.length_bias, args.judge_labels == "probabilities", args.sharpness
    )
    order = rng.permutation(judged)
    out = {}
    for votes in VOTES:
        voted, rest = order[:votes], order[votes:]
        fit = ppi_bradley_terry(
            names,
            pair_labels(first[voted], second[voted], human[voted]),
            judge[voted],
            pair_labels(first[rest], second[rest], judge[rest]),
        )
        out[votes] = figures([fit[name] for name in names], truth, quality)
    return out


def figures(rows: list[PPIResult], truth: np.ndarray, quality: np.ndarray) -> dict[str, float]:
    ppi = np.array([r.ppi.estimate for r in rows])
    human = np.array([r.human_only.estimate for r in rows])
    judge = np.array([r.judge_only for r in rows])
    out = {
        "coverage_ppi": np.mean([r.ppi.low <= t <= r.ppi.high for r, t in zip(rows, truth)]),
        "coverage_human": np.mean([r.human_only.low <= t <= r.human_only.high for r, t in zip(rows, truth)]),
        "width_ratio": np.mean([r.ppi.high - r.ppi.low for r in rows])
        / np.mean([r.human_only.high - r.human_only.low for r in rows]),
        "lam": rows[0].lam,
        "effective_n": float(np.median([r.effective_n for r in rows])),
    }
    for label, estimate in (("ppi", ppi), ("judge", judge), ("human", human)):
        out[f"kendall_{label}"] = stats.kendalltau(estimate, quality).statistic
        out[f"spearman_{label}"] = stats.spearmanr(estimate, quality).statistic
    return {key: float(value) for key, value in out.items()}


COLUMNS = (
    ("votes", "votes"),
    ("coverage_ppi", "coverage PPI"),
    ("coverage_human", "coverage human"),
    ("width_ratio", "width PPI/human"),
    ("lam", "λ"),
    ("effective_n", "effective votes"),
    ("kendall_ppi", "τ PPI"),
    ("kendall_judge", "τ judge"),
    ("kendall_human", "τ human"),
    ("spearman_ppi", "ρ PPI"),
    ("spearman_judge", "ρ judge"),
    ("spearman_human", "ρ human"),
)


def table(rows: dict[int, dict[str, float]]) -> str:
    lines = ["| " + " | ".join(title for _, title in COLUMNS) + " |", "|" + "---:|" * len(COLUMNS)]
    for votes, means in rows.items():
        cells = [str(votes)] + [
            f"{means[key]:.0f}" if key == "effective_n" else f"{means[key]:.3f}" for key, _ in COLUMNS[1:]
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=100, help="replications")
    parser.add_argument("--systems", type=int, default=8)
    parser.add_argument("--judged", type=int, default=30_000, help="comparisons the judge judges")
    parser.add_argument("--length-bias", type=float, default=1.5, help="judge logit per doubling of length")
    parser.add_argument(
        "--judge-labels",
        choices=("verdicts", "probabilities"),
        default="probabilities",
        help="the judge's verdicts (ties 5%%) or its verdict probabilities (a logprob judge)",
    )
    parser.add_argument("--sharpness", type=float, default=3.0, help="logit per unit of truth, judge and human alike")
    parser.add_argument("--out", type=Path, default=RESULTS / "ppi.md")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    quality, lengths = systems(args.systems)
    names = [f"s{i}" for i in range(args.systems)]
    truth = human_estimand(quality, lengths, names, args.sharpness)
    per_seed = [one_seed(seed, quality, lengths, names, args, truth) for seed in range(args.seeds)]
    means = {
        votes: {key: statistics.fmean(seed[votes][key] for seed in per_seed) for key in per_seed[0][votes]}
        for votes in VOTES
    }
    seconds = time.perf_counter() - started
    text = "\n".join(
        [
            "# PPI++ leaderboards: a length-biased judge corrected by human votes",
            "",
            f"`python benchmarks/ppi.py --seeds {args.seeds} --systems {args.systems} --judged {args.judged} "
            f"--length-bias {args.length_bias:g} --sharpness {args.sharpness:g} --judge-labels {args.judge_labels}` "
            f"({seconds:.0f} s). Means over {args.seeds} seeds; coverage of "
            "the 95% intervals of all systems' ratings against the human Bradley–Terry ratings; τ, ρ against the "
            "planted qualities; effective votes: the median over systems of n·var(human-only)/var(PPI). "
            "Simulation in the script's docstring.",
            "",
            table(means),
            "",
        ]
    )
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
