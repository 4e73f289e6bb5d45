"""Arena-lite, experiment 1 shape: tournament (arena) vs anchored system leaderboards.

Two parts, both through rankkit's own leaderboard code (match graph, MatchSource, simulated judge):

1. **Pure simulation** (seed 003 §4.2). Per trial, ``--systems`` systems are drawn from the 32
   Chatbot Arena Elo ratings of ``shared/data/arena_hard_v01_arena_elo/systems.jsonl`` (evenly
   spaced Elo ratings when that file is absent) and become planted strengths; synthetic tasks are
   generated with :func:`rankkit.judges.simulated.synthetic.planted_tasks`. Two judge models:

   * **Eq. 3 (the paper's model)**: every answer's human score is its system's Elo, and the
     :class:`StochasticEloJudge` below decides each match independently:
     ``P(i preferred over j) = A · P_gt(i > j) + (1 − A) / 2`` with
     ``P_gt(i > j) = 1 / (1 + 10^((R_j − R_i)/400))`` — Eq. 3's ``A · P_gt``, with the judge
     guessing at random the rest of the time (Eq. 3 leaves that remainder unspecified).
   * **per-prompt quality**: every answer gets its own quality, its system's Elo plus Gumbel noise
     (so the better answer of a pair follows the same Elo odds), and rankkit's fixed-accuracy
     ``sim:model=fixed`` judge picks the better *answer* with probability A. Unlike Eq. 3,
     outcomes on one prompt are now correlated: an answer that is good on a prompt is good in
     every match it plays there.

   Arena = a tournament per prompt + BT; anchored = win rate against the drawn system closest to
   Elo 1233 (the paper's reference, gpt-4-1106-preview). Score: Spearman between the leaderboard
   and the planted strengths, median (and 25th–75th percentiles) over the trials.
2. **Arena-Hard answers** (``shared/data/arena_hard_v01_arena_elo``, 32 systems × 100 prompts)
   with the fixed-accuracy sim presets (``sim:model=fixed,preset=P``). The sim judge reads the
   per-answer human label, which here is the system's Chatbot Arena Elo, so on every prompt the
   "better" answer is the higher-Elo system's and the judge picks it with the preset's accuracy
   (and slot bias), whatever the gap; the answer texts play no role. Per trial: a random subset
   of prompts, a judge seed, a bracket seed. Score: Spearman (and Kendall) with the Chatbot Arena
   Elo, medians over the trials.

Usage: ``python benchmarks/arena_sim.py [--trials 20] [--quick]`` (``--quick``: a smoke run that writes nothing). Figures are printed and written
to ``benchmarks/results/arena_sim.md``.
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rankkit.judges import make_judge  # noqa: E402
from rankkit.judges.base import Judge  # noqa: E402
from rankkit.judges.simulated.synthetic import planted_tasks  # noqa: E402
from rankkit.judgments.values import Verdict, Winner  # noqa: E402
from rankkit.leaderboard import anchored, arena, correlations, load_truth  # noqa: E402
from rankkit.stats.metrics import correlation  # noqa: E402

ARENA_HARD = ROOT.parent / "shared" / "data" / "arena_hard_v01_arena_elo"
RESULTS = ROOT / "benchmarks" / "results" / "arena_sim.md"
PAPER_REFERENCE_ELO = 1233.0  # gpt-4-1106-preview, the baseline of Arena-lite's experiment 1


class StochasticEloJudge(Judge):
    """Arena-lite's stochastic judge (seed 003, Eq. 3): the human scores are Elo ratings and each
    match is decided independently, P(first preferred) = A · P_gt(first > second) + (1 − A) / 2.

    Every draw is seeded by (seed, task, pair, order), so a judgment is a pure function of its inputs
    like rankkit's ``sim`` judge.
    """

    backend = "eq3-sim"
    simulated = True

    def __init__(self, accuracy: float, seed: int = 0):
        self.accuracy = accuracy
        self.seed = seed

    def fingerprint_fields(self) -> dict:
        return {"accuracy": self.accuracy, "seed": self.seed}

    @property
    def description(self) -> str:
        return f"eq3-sim:accuracy={self.accuracy:g} (simulated)"

    def compare(self, task, first, second) -> Verdict:
        elo = task.human_scores()
        p_truth = 1.0 / (1.0 + 10.0 ** ((elo[second.id] - elo[first.id]) / 400.0))
        p_first = self.accuracy * p_truth + (1.0 - self.accuracy) / 2.0
        first_wins = random.Random(f"{self.seed}|{task.task_id}|{first.id}|{second.id}").random() < p_first
        return Verdict(
            first_grade=float(first_wins),
            second_grade=float(not first_wins),
            winner=Winner.FIRST if first_wins else Winner.SECOND,
        )


def elo_pool() -> dict[str, float]:
    """The strengths systems are drawn from: Chatbot Arena Elo of the 32 Arena-Hard systems."""
    path = ARENA_HARD / "systems.jsonl"
    if path.exists():
        return load_truth(path)
    return {f"sys{i:02d}": 1000.0 + 9.0 * i for i in range(32)}


def spearman(board, strengths) -> float:
    names = [row.name for row in board.systems]
    return correlation("spearman", [board.system(n).rating for n in names], [strengths[n] for n in names])


def summary(values: list[float]) -> tuple[float, float, float]:
    q25, q50, q75 = np.percentile(values, [25, 50, 75])
    return float(q50), float(q25), float(q75)


def pure_simulation(
    trials: int, accuracies: list[float], prompt_counts: list[int], n_systems: int, model: str
) -> list[dict]:
    """model: ``eq3`` (independent matches, :class:`StochasticEloJudge`) or ``prompt`` (per-answer
    quality with Gumbel noise, rankkit's ``sim:model=fixed`` judge)."""
    pool = elo_pool()
    rows = []
    for accuracy in accuracies:
        for prompts in prompt_counts:
            scores = {"arena": [], "anchored": []}
            calls = {"arena": 0, "anchored": 0}
            for trial in range(trials):
                rng = random.Random(f"arena-sim|{accuracy}|{prompts}|{trial}")
                names = rng.sample(sorted(pool), n_systems)
                strengths = {name: pool[name] for name in names}
                anchor = min(names, key=lambda n: (abs(strengths[n] - PAPER_REFERENCE_ELO), n))
                task_seed = rng.randrange(2**31)
                if model == "eq3":
                    tasks = planted_tasks(strengths, prompts, noise=0.0, seed=task_seed, prefix=f"t{trial}-")
                    judge = StochasticEloJudge(accuracy, seed=trial)
                else:
                    tasks = planted_tasks(strengths, prompts, seed=task_seed, prefix=f"t{trial}-")
                    judge = make_judge(f"sim:model=fixed,accuracy={accuracy},position_bias=0,noise=0,seed={trial}")
                tournament = arena(tasks, judge, seed=trial, resamples=0)
                baseline = anchored(tasks, judge, anchor, seed=trial, resamples=0)
                scores["arena"].append(spearman(tournament, strengths))
                scores["anchored"].append(spearman(baseline, strengths))
                calls["arena"] += tournament.cost.judge_calls
                calls["anchored"] += baseline.cost.judge_calls
            for method in ("arena", "anchored"):
                median, q25, q75 = summary(scores[method])
                rows.append(
                    {
                        "model": model,
                        "accuracy": accuracy,
                        "prompts": prompts,
                        "method": method,
                        "median": median,
                        "q25": q25,
                        "q75": q75,
                        "judge_calls": calls[method] / trials,
                    }
                )
            print(
                f"  {model:6s} accuracy {accuracy:.1f}  prompts {prompts:4d}  arena {rows[-2]['median']:.3f}  "
                f"anchored {rows[-1]['median']:.3f}",
                flush=True,
            )
    return rows


def judge_factory(label: str):
    """``eq3:A`` -> the Eq. 3 judge with accuracy A; anything else is a rankkit judge spec."""
    if label.startswith("eq3:"):
        accuracy = float(label.split(":", 1)[1])
        return lambda trial: StochasticEloJudge(accuracy, seed=trial)
    return lambda trial: make_judge(f"{label},seed={trial}")


def arena_hard(trials: int, judges: list[str], prompt_counts: list[int], anchors: list[str]) -> list[dict]:
    from rankkit.data.tasks import load_tasks

    tasks = load_tasks(ARENA_HARD / "tasks.jsonl")
    truth = load_truth(ARENA_HARD / "systems.jsonl")
    rows = []
    for label in judges:
        make = judge_factory(label)
        for prompts in prompt_counts:
            results: dict[str, dict[str, list[float]]] = {}
            calls: dict[str, float] = {}
            for trial in range(trials):
                subset = random.Random(f"arena-hard|{prompts}|{trial}").sample(tasks, min(prompts, len(tasks)))
                judge = make(trial)
                boards = {"arena": arena(subset, judge, seed=trial, resamples=0)}
                for anchor in anchors:
                    boards[f"anchored ({anchor})"] = anchored(subset, judge, anchor, seed=trial, resamples=0)
                for method, board in boards.items():
                    corr = correlations(board, truth)
                    entry = results.setdefault(method, {"spearman": [], "kendall": []})
                    entry["spearman"].append(corr["spearman"])
                    entry["kendall"].append(corr["kendall"])
                    calls[method] = calls.get(method, 0) + board.cost.judge_calls / trials
            for method, entry in results.items():
                median, q25, q75 = summary(entry["spearman"])
                rows.append(
                    {
                        "judge": label,
                        "prompts": prompts,
                        "method": method,
                        "median": median,
                        "q25": q25,
                        "q75": q75,
                        "kendall": statistics.median(entry["kendall"]),
                        "judge_calls": calls[method],
                    }
                )
                print(
                    f"  {label:18s} prompts {prompts:3d}  {method:40s} spearman {median:.3f}  "
                    f"kendall {rows[-1]['kendall']:.3f}",
                    flush=True,
                )
    return rows


MODEL_TITLES = {
    "eq3": (
        "1a. Eq. 3 judge: independent matches (the paper's model)",
        "Every answer's human score is its system's Elo; each match is decided independently with "
        "P(i preferred) = A·P_gt(i>j) + (1−A)/2.",
    ),
    "prompt": (
        "1b. Per-prompt answer quality: correlated matches within a prompt",
        "Every answer's quality is its system's Elo + Gumbel noise (scale 400/ln 10, so the better answer "
        "of a pair follows the Elo odds); rankkit's `sim:model=fixed` judge picks the better answer with "
        "probability A. An answer that is good on a prompt is good in every match it plays on that prompt.",
    ),
}


def markdown(sim_rows: list[dict], real_rows: list[dict], args: argparse.Namespace, seconds: float) -> str:
    lines = [
        "# Arena-lite experiment 1: tournament (arena) vs anchored leaderboards",
        "",
        f"`python benchmarks/arena_sim.py --trials {args.trials}{' --quick' if args.quick else ''}` "
        f"({seconds:.0f} s on a shared 2-core machine, other jobs running). Medians over "
        f"{args.trials} trials; [25th–75th percentile] in brackets.",
        "",
        "## 1. Pure simulation (planted strengths, seed 003 §4.2)",
        "",
        f"{args.systems} systems drawn per trial from the 32 Chatbot Arena Elo ratings of `systems.jsonl`. "
        "Anchor: the drawn system closest to Elo 1233 (the paper's gpt-4-1106-preview). Both methods cost "
        "(systems − 1) × prompts judge calls. Spearman with the planted order; bold = the better method.",
    ]
    for model in ("eq3", "prompt"):
        rows = [r for r in sim_rows if r["model"] == model]
        if not rows:
            continue
        title, text = MODEL_TITLES[model]
        lines += [
            "",
            f"### {title}",
            "",
            text,
            "",
            "| judge accuracy A | prompts | arena (tournament + BT) | anchored (win rate) | judge calls each |",
            "|---|---|---|---|---|",
        ]
        by_key = {(r["accuracy"], r["prompts"], r["method"]): r for r in rows}
        differences = []
        for accuracy in sorted({r["accuracy"] for r in rows}):
            for prompts in sorted({r["prompts"] for r in rows}):
                a, b = by_key[(accuracy, prompts, "arena")], by_key[(accuracy, prompts, "anchored")]
                cells = [f"{r['median']:.3f} [{r['q25']:.3f}–{r['q75']:.3f}]" for r in (a, b)]
                best = 0 if a["median"] >= b["median"] else 1
                cells[best] = f"**{cells[best]}**"
                differences.append(a["median"] - b["median"])
                lines.append(f"| {accuracy:.1f} | {prompts} | {cells[0]} | {cells[1]} | {a['judge_calls']:.0f} |")
        ahead = sum(d > 0 for d in differences)
        lines += [
            "",
            f"Arena ahead in {ahead} of {len(differences)} settings; median difference "
            f"(arena − anchored) {statistics.median(differences):+.3f}.",
        ]
    if real_rows:
        lines += [
            "",
            "## 2. Arena-Hard v0.1 answers (32 systems × 100 prompts) with simulated judges",
            "",
            "Truth: Chatbot Arena Elo (hard prompts, English) from `systems.jsonl`. Every answer's human label "
            "is that same Elo, so the texts play no role: `sim:model=fixed,preset=…` picks the higher-Elo "
            "system's answer with the preset's accuracy (and slot bias) whatever the gap; `eq3:A` is the Eq. 3 judge above. "
            "Prompts are a random subset per trial (all 100 at 100, where only judge and bracket seeds vary). "
            "Anchors: gpt-4-0125-preview (Elo 1237, near Arena-Hard's GPT-4 baseline) and "
            "claude-3-haiku-20240307 (Elo 1170, mid-table).",
            "",
            "| judge | prompts | method | Spearman | Kendall | judge calls |",
            "|---|---|---|---|---|---|",
        ]
        for r in real_rows:
            lines.append(
                f"| {r['judge']} | {r['prompts']} | {r['method']} | {r['median']:.3f} "
                f"[{r['q25']:.3f}–{r['q75']:.3f}] | {r['kendall']:.3f} | {r['judge_calls']:.0f} |"
            )
    if real_rows:
        lines += ["", "Median Spearman ranges over the prompt counts above:", ""]
        for family, prefix in (("sim presets (gap-blind accuracy)", "sim:"), ("Eq. 3 judges (gap-aware)", "eq3:")):
            by_method: dict[str, list[float]] = {}
            for r in real_rows:
                if r["judge"].startswith(prefix):
                    by_method.setdefault(r["method"], []).append(r["median"])
            parts = [f"{m} {min(v):.3f}–{max(v):.3f}" for m, v in by_method.items()]
            if parts:
                lines.append(f"* {family}: " + "; ".join(parts) + ".")
        lines += [
            "",
            "A judge whose accuracy does not depend on the gap between two systems, compared against one "
            "anchor, can only tell the systems above the anchor from those below it (seed 003, Eq. 2), "
            "which caps the anchored Spearman however many prompts are judged; the tournament compares "
            "neighbours directly.",
        ]
    lines += [
        "",
        "Notes: every simulated verdict is a pure function of (seed, task, pair, order), so the figures "
        "are reproducible with the same command. Ratings are fitted without bootstrap here "
        "(`resamples=0`); only point estimates enter the correlations.",
        "",
    ]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--systems", type=int, default=10, help="systems per pure-simulation trial")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 trials, small grid, nothing written")
    parser.add_argument("--skip-real", action="store_true", help="skip the Arena-Hard part")
    args = parser.parse_args()
    if args.quick:
        args.trials = min(args.trials, 3)
    accuracies = [0.6, 0.9] if args.quick else [0.6, 0.7, 0.8, 0.9]
    prompt_counts = [50, 100] if args.quick else [50, 100, 200, 500]
    started = time.perf_counter()
    print("pure simulation (Spearman with the planted order, medians)")
    sim_rows = []
    for model in ("eq3", "prompt"):
        sim_rows += pure_simulation(args.trials, accuracies, prompt_counts, args.systems, model)
    real_rows = []
    if not args.skip_real and (ARENA_HARD / "tasks.jsonl").exists():
        print("Arena-Hard answers (Spearman/Kendall with Chatbot Arena Elo, medians)")
        fixed = [f"sim:model=fixed,preset={preset}" for preset in ("gpt4", "chatgpt", "falcon")]
        judges = [fixed[0], fixed[2]] if args.quick else [*fixed, "eq3:0.9", "eq3:0.6"]
        real_rows = arena_hard(args.trials, judges, [50, 100], ["gpt-4-0125-preview", "claude-3-haiku-20240307"])
    seconds = time.perf_counter() - started
    if args.quick:  # a smoke run never overwrites the recorded figures
        print(f"quick run done ({seconds:.0f} s); results not written")
        return
    text = markdown(sim_rows, real_rows, args, seconds)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    (RESULTS.with_suffix(".json")).write_text(
        json.dumps({"pure_simulation": sim_rows, "arena_hard": real_rows}, indent=1), encoding="utf-8"
    )
    print(f"written to {RESULTS} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
