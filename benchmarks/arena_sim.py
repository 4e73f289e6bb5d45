"""Arena-lite, experiment 1 shape: tournament (arena) vs anchored system leaderboards.

Two parts, both through rankkit's own leaderboard code (match graph, MatchSource, simulated judge):

1. **Pure simulation** (seed 003 §4.2). Per trial, ``--systems`` systems are drawn from the 32
   Chatbot Arena Elo ratings of ``shared/data/arena_hard_v01_arena_elo/systems.jsonl`` (evenly
   spaced Elo ratings when that file is absent) and become planted strengths. Synthetic prompts
   are generated with :func:`rankkit.leaderboard.planted_tasks`: on every prompt the human-better
   answer follows the Bradley–Terry/Elo probability of the strengths. The simulated judge
   (``sim:accuracy=A,position_bias=0,noise=0``) then picks the human-better answer with probability
   A. So P(judge prefers i over j) = A·P_gt(i>j) + (1−A)·(1−P_gt(i>j)) — Arena-lite's Eq. 3 with
   the judge's remaining mass going to the other answer. Arena = a tournament per prompt + BT;
   anchored = win rate against the drawn system closest to Elo 1233 (the paper's reference,
   gpt-4-1106-preview). Score: Spearman between the leaderboard and the planted strengths, median
   (and 25th–75th percentiles) over the trials.
2. **Arena-Hard answers** (``shared/data/arena_hard_v01_arena_elo``, 32 systems × 100 prompts)
   with the sim presets. The sim judge reads the per-answer human label, which here is the
   system's Chatbot Arena Elo, so on every prompt the "better" answer is the higher-Elo system's
   and the judge picks it with the preset's accuracy (and slot bias); the answer texts play no
   role. Per trial: a random subset of prompts, a judge seed, a bracket seed. Score: Spearman (and
   Kendall) with the Chatbot Arena Elo, medians over the trials.

Usage: ``python benchmarks/arena_sim.py [--trials 20] [--quick]``. Figures are printed and written
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
from rankkit.leaderboard import anchored, arena, correlations, load_truth, planted_tasks  # noqa: E402
from rankkit.metrics import correlation  # noqa: E402

ARENA_HARD = ROOT.parent / "shared" / "data" / "arena_hard_v01_arena_elo"
RESULTS = ROOT / "benchmarks" / "results" / "arena_sim.md"
PAPER_REFERENCE_ELO = 1233.0  # gpt-4-1106-preview, the baseline of Arena-lite's experiment 1


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


def pure_simulation(trials: int, accuracies: list[float], prompt_counts: list[int], n_systems: int) -> list[dict]:
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
                tasks = planted_tasks(strengths, prompts, seed=rng.randrange(2**31), prefix=f"t{trial}-")
                judge = make_judge(f"sim:accuracy={accuracy},position_bias=0,noise=0,seed={trial}")
                tournament = arena(tasks, judge, seed=trial, bootstrap_rounds=0)
                baseline = anchored(tasks, judge, anchor, seed=trial, bootstrap_rounds=0)
                scores["arena"].append(spearman(tournament, strengths))
                scores["anchored"].append(spearman(baseline, strengths))
                calls["arena"] += tournament.cost.judge_calls
                calls["anchored"] += baseline.cost.judge_calls
            for method in ("arena", "anchored"):
                median, q25, q75 = summary(scores[method])
                rows.append({"accuracy": accuracy, "prompts": prompts, "method": method, "median": median,
                             "q25": q25, "q75": q75, "judge_calls": calls[method] / trials})
            print(f"  accuracy {accuracy:.1f}  prompts {prompts:4d}  arena {rows[-2]['median']:.3f}  "
                  f"anchored {rows[-1]['median']:.3f}", flush=True)
    return rows


def arena_hard(trials: int, presets: list[str], prompt_counts: list[int], anchors: list[str]) -> list[dict]:
    from rankkit.tasks import load_tasks

    tasks = load_tasks(ARENA_HARD / "tasks.jsonl")
    truth = load_truth(ARENA_HARD / "systems.jsonl")
    rows = []
    for preset in presets:
        for prompts in prompt_counts:
            results: dict[str, dict[str, list[float]]] = {}
            calls: dict[str, float] = {}
            for trial in range(trials):
                subset = random.Random(f"arena-hard|{prompts}|{trial}").sample(tasks, min(prompts, len(tasks)))
                judge = make_judge(f"sim:preset={preset},seed={trial}")
                boards = {"arena": arena(subset, judge, seed=trial, bootstrap_rounds=0)}
                for anchor in anchors:
                    boards[f"anchored ({anchor})"] = anchored(subset, judge, anchor, seed=trial, bootstrap_rounds=0)
                for method, board in boards.items():
                    corr = correlations(board, truth)
                    entry = results.setdefault(method, {"spearman": [], "kendall": []})
                    entry["spearman"].append(corr["spearman"])
                    entry["kendall"].append(corr["kendall"])
                    calls[method] = calls.get(method, 0) + board.cost.judge_calls / trials
            for method, entry in results.items():
                median, q25, q75 = summary(entry["spearman"])
                rows.append({"preset": preset, "prompts": prompts, "method": method, "median": median, "q25": q25,
                             "q75": q75, "kendall": statistics.median(entry["kendall"]), "judge_calls": calls[method]})
                print(f"  {preset:8s} prompts {prompts:3d}  {method:40s} spearman {median:.3f}  "
                      f"kendall {rows[-1]['kendall']:.3f}", flush=True)
    return rows


def markdown(sim_rows: list[dict], real_rows: list[dict], args: argparse.Namespace, seconds: float) -> str:
    lines = ["# Arena-lite experiment 1: tournament (arena) vs anchored leaderboards", "",
             f"`python benchmarks/arena_sim.py --trials {args.trials}{' --quick' if args.quick else ''}` "
             f"({seconds:.0f} s on a shared 2-core machine, other jobs running). Medians over "
             f"{args.trials} trials; [25th–75th percentile] in brackets.", "",
             "## 1. Pure simulation (planted strengths, seed 003 §4.2)", "",
             f"{args.systems} systems drawn per trial from the 32 Chatbot Arena Elo ratings of `systems.jsonl`; "
             "per prompt the human-better answer follows the BT/Elo probability of the strengths; the sim judge "
             "picks it with probability `accuracy` (no slot bias). Anchor: the drawn system closest to Elo 1233. "
             "Both methods cost (systems − 1) × prompts judge calls. Spearman with the planted order:", "",
             "| judge accuracy | prompts | arena (tournament + BT) | anchored (win rate) | judge calls each |",
             "|---|---|---|---|---|"]
    by_key = {(r["accuracy"], r["prompts"], r["method"]): r for r in sim_rows}
    for accuracy in sorted({r["accuracy"] for r in sim_rows}):
        for prompts in sorted({r["prompts"] for r in sim_rows}):
            a, b = by_key[(accuracy, prompts, "arena")], by_key[(accuracy, prompts, "anchored")]
            lines.append(f"| {accuracy:.1f} | {prompts} | **{a['median']:.3f}** [{a['q25']:.3f}–{a['q75']:.3f}] | "
                         f"{b['median']:.3f} [{b['q25']:.3f}–{b['q75']:.3f}] | {a['judge_calls']:.0f} |")
    if real_rows:
        lines += ["", "## 2. Arena-Hard v0.1 answers (32 systems) with simulated judges", "",
                  "Truth: Chatbot Arena Elo (hard prompts, English) from `systems.jsonl`. The sim judge's latent "
                  "truth is that same Elo (the data's per-answer label), so the texts play no role: this measures "
                  "how the two designs turn a judge of a given accuracy and slot bias into a ranking. Prompts are a "
                  "random subset per trial (all 100 at 100, so only judge and bracket seeds vary).", "",
                  "| judge | prompts | method | Spearman | Kendall | judge calls |", "|---|---|---|---|---|---|"]
        for r in real_rows:
            lines.append(f"| sim:preset={r['preset']} | {r['prompts']} | {r['method']} | {r['median']:.3f} "
                         f"[{r['q25']:.3f}–{r['q75']:.3f}] | {r['kendall']:.3f} | {r['judge_calls']:.0f} |")
    lines += ["", "Notes: the sim judge's verdicts are pure functions of (seed, task, pair, order), so every figure "
              "is reproducible with the same command. Ratings are fitted without bootstrap here "
              "(`bootstrap_rounds=0`); only point estimates enter the correlations.", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--trials", type=int, default=20)
    parser.add_argument("--systems", type=int, default=10, help="systems per pure-simulation trial")
    parser.add_argument("--quick", action="store_true", help="a smoke run: 3 trials, small grid")
    parser.add_argument("--skip-real", action="store_true", help="skip the Arena-Hard part")
    args = parser.parse_args()
    if args.quick:
        args.trials = min(args.trials, 3)
    accuracies = [0.6, 0.9] if args.quick else [0.6, 0.7, 0.8, 0.9]
    prompt_counts = [50, 100] if args.quick else [50, 100, 200, 500]
    started = time.perf_counter()
    print("pure simulation (Spearman with the planted order, medians)")
    sim_rows = pure_simulation(args.trials, accuracies, prompt_counts, args.systems)
    real_rows = []
    if not args.skip_real and (ARENA_HARD / "tasks.jsonl").exists():
        print("Arena-Hard answers (Spearman/Kendall with Chatbot Arena Elo, medians)")
        presets = ["gpt4", "falcon"] if args.quick else ["gpt4", "chatgpt", "falcon"]
        real_rows = arena_hard(args.trials, presets, [50, 100], ["gpt-4-0125-preview", "claude-3-haiku-20240307"])
    seconds = time.perf_counter() - started
    text = markdown(sim_rows, real_rows, args, seconds)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text(text, encoding="utf-8")
    (RESULTS.with_suffix(".json")).write_text(json.dumps({"pure_simulation": sim_rows, "arena_hard": real_rows},
                                                         indent=1), encoding="utf-8")
    print(f"written to {RESULTS} ({seconds:.0f} s)")


if __name__ == "__main__":
    main()
