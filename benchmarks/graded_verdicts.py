"""Graded verdicts and ties: does a tie-aware fit recover the truth better, and does arena-hard's weighting match?

Part 1. Eight systems with planted strengths (``planted_tasks``: Elo points, 50 apart) answer
``--prompts`` prompts; the simulated judge ``sim:verdicts=graded`` compares every pair of answers
once, in a seeded random order, and returns a level (A>>B ... B>>A; ties where the noisy difference
is small). Two fits of the same outcomes: Bradley–Terry counting a tie as half a win each way
(:func:`rankkit.stats.ratings.bradley_terry`) and Davidson's tie model
(:func:`rankkit.stats.graded.davidson`). Per seed: Spearman of the ratings with the planted
strengths, and the coverage of 95% percentile-bootstrap intervals of each system's *rank* (does the
interval hold its true rank?), ``--resamples`` resamples of the outcomes. Three seeds.

Part 2. A recorded example built from arena-hard-auto's documentation (``show_result.py``: each
question is judged twice, baseline first then model first; a label scores 1, 0.5 or 0, a strong
label ``weight`` times; the model's score is the mean): the published formula, written out here
from that description, against :func:`rankkit.stats.graded.arena_hard_score`.

    python benchmarks/graded_verdicts.py            # about a minute
    python benchmarks/graded_verdicts.py --prompts 10 --resamples 50

Writes ``benchmarks/results/graded_verdicts.md``.
"""

from __future__ import annotations

import argparse
import random
import statistics
from collections import Counter
from itertools import combinations
from pathlib import Path

from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.judgments.levels import label_level
from rankkit.stats.graded import arena_hard_score, davidson, level_outcome
from rankkit.stats.intervals import bootstrap
from rankkit.stats.metrics import correlation
from rankkit.stats.ratings import bradley_terry

STRENGTHS = {f"s{i}": 50.0 * i for i in range(8)}
FITS = {"BT, ties as half wins": bradley_terry, "Davidson (ties modelled)": davidson}
RESULT = Path(__file__).parent / "results" / "graded_verdicts.md"


#: The simulator's level margins per setting: its defaults, and one where ties are common.
SETTINGS = {"default margins": "", "tie-heavy (tie_margin=1, strong_margin=2)": ",tie_margin=1,strong_margin=2"}


def judged_matches(prompts: int, seed: int, margins: str = "") -> tuple[list[tuple[str, str, float]], Counter]:
    """Every pair of answers of every prompt judged once in a random order: outcomes and level counts."""
    judge = make_judge(f"sim:verdicts=graded,seed={seed}{margins}")
    rng = random.Random(seed)
    outcomes, levels = [], Counter()
    for task in planted_tasks(STRENGTHS, prompts, seed=seed):
        for first, second in combinations(task.candidates, 2):
            if rng.random() < 0.5:
                first, second = second, first
            verdict = judge.compare(task, first, second)
            levels[verdict.level] += 1
            outcomes.append((first.system, second.system, level_outcome(verdict.level)))
    return outcomes, levels


def ranks(ratings: dict[str, float]) -> dict[str, float]:
    """1 for the highest rating."""
    order = sorted(ratings, key=lambda name: -ratings[name])
    return {name: float(position) for position, name in enumerate(order, start=1)}


def evaluate(fit, outcomes: list, resamples: int, seed: int) -> tuple[float, float]:
    """Spearman with the planted strengths, and the share of systems whose rank interval holds the true rank."""
    names = list(STRENGTHS)
    estimate = fit(outcomes, names)
    rho = correlation("spearman", [estimate[n] for n in names], [STRENGTHS[n] for n in names])
    intervals = bootstrap(lambda sample: ranks(fit(sample, names)), outcomes, resamples=resamples, seed=seed)
    true_rank = ranks(STRENGTHS)
    covered = [intervals[n].low <= true_rank[n] <= intervals[n].high for n in names]
    return rho, sum(covered) / len(covered)


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
    parser.add_argument("--prompts", type=int, default=20)
    parser.add_argument("--resamples", type=int, default=100)
    parser.add_argument("--seeds", type=int, default=3)
    args = parser.parse_args()
    lines = [
        "# Graded verdicts and ties",
        "",
        f"`python benchmarks/graded_verdicts.py --prompts {args.prompts} --resamples {args.resamples} "
        f"--seeds {args.seeds}`: 8 systems 50 Elo apart, every pair judged once per prompt by "
        "`sim:verdicts=graded,seed=S`.",
        "",
        "| setting | seed | levels (A>>B / A>B / tie / B>A / B>>A) | fit | Spearman | rank-interval coverage (95%) |",
        "|---|---|---|---|---|---|",
    ]
    summary: dict[tuple[str, str], list[tuple[float, float]]] = {}
    for setting, margins in SETTINGS.items():
        for seed in range(args.seeds):
            outcomes, levels = judged_matches(args.prompts, seed, margins)
            shown = " / ".join(str(levels[level]) for level in (2, 1, 0, -1, -2))
            for name, fit in FITS.items():
                rho, coverage = evaluate(fit, outcomes, args.resamples, seed)
                summary.setdefault((setting, name), []).append((rho, coverage))
                lines.append(f"| {setting} | {seed} | {shown} | {name} | {rho:.3f} | {coverage:.3f} |")
    lines += ["", "| setting | fit | mean Spearman | mean coverage |", "|---|---|---|---|"]
    for (setting, name), rows in summary.items():
        rho = statistics.mean(r for r, _ in rows)
        coverage = statistics.mean(c for _, c in rows)
        lines.append(f"| {setting} | {name} | {rho:.3f} | {coverage:.3f} |")
    lines += ["", "## arena-hard-auto's weighting on a recorded example", "", "| model | published formula | rankkit |"]
    lines.append("|---|---|---|")
    for model, games in RECORDED.items():
        lines.append(f"| {model} | {published_score(games):.6f} | {rankkit_score(model, games):.6f} |")
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
