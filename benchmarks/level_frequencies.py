"""Graded-level frequencies of recorded Arena-Hard judgments, and the simulator's level margins fitted to them.

The recorded judgments: lmarena/arena-hard-auto, commit 74e8b6f0ae60529b62c4c2feb71a479ae1311e2d
(2024-09-07), file ``data/arena_hard_battles.jsonl``, written by that commit's ``show_result.py``
from judgments of the judge its ``config/judge_config.yaml`` names (gpt-4-1106-preview, GPT-4 Turbo;
the file itself does not record it), 120 questions × 2 games (both orders) for each of four models
against the baseline claude-3-haiku-20240307. ``show_result.py`` writes a strong verdict (A>>B) as 3
identical rows and any other verdict as 1, so each question's 2, 4 or 6 rows decode into the two
games' levels (:func:`decoded_levels`). The counts are kept in
:data:`rankkit.judges.simulated.sim_model.ARENA_HARD_LEVEL_COUNTS`; the file is not in this repository
(``git -C <arena-hard-auto clone> show 74e8b6f:data/arena_hard_battles.jsonl > battles.jsonl`` and
``--battles battles.jsonl`` recounts it).

The simulator's side: one planted task set (:func:`~rankkit.judges.simulated.synthetic.planted_tasks`)
with the baseline at 0 Elo and the four models at gaps fitted so that ``sim:verdicts=graded``'s win
share (a tie half) against the baseline equals the recorded one; every (model, baseline) answer pair is
judged in both orders, like arena-hard's two games. A level is the noisy grade difference ``d`` (in
human-score sds) cut at ``±tie_margin`` and ``±strong_margin``
(:func:`~rankkit.judges.simulated.sim_model.planted_level`), so the frequencies for any margins come
from one set of ``d``; the margins minimise the squared difference of the 5 level frequencies over the 4
models (a grid, 0.01 sd steps).

    python benchmarks/level_frequencies.py [--battles battles.jsonl] [--prompts 400]

Writes ``benchmarks/results/level_frequencies.md``.
"""

from __future__ import annotations

import argparse
import json
import math
from collections import Counter
from pathlib import Path

import numpy as np

from rankkit.judges import make_judge
from rankkit.judges.simulated.sim_model import ARENA_HARD_LEVEL_COUNTS, GRADED_STRONG_MARGIN, GRADED_TIE_MARGIN
from rankkit.judges.simulated.synthetic import planted_tasks

RESULT = Path(__file__).parent / "results" / "level_frequencies.md"
LEVELS = (2, 1, 0, -1, -2)
BASELINE = "claude-3-haiku-20240307"
ELO_PER_LOGIT = 400 / math.log(10)


def decoded_levels(winners: list[str]) -> list[int]:
    """The two games' levels (from the model's side, model_b) of one question's rows (3 rows: a strong verdict)."""
    side = {"model_b": 1, "model_a": -1, "tie": 0}
    if len(winners) == 2:
        return [side[w] for w in winners]
    if len(winners) == 6:
        return [2 * side[winners[0]], 2 * side[winners[3]]]
    if len(winners) == 4 and len(set(winners[:3])) == 1 and winners[0] != "tie":
        return [2 * side[winners[0]], side[winners[3]]]
    if len(winners) == 4 and len(set(winners[1:])) == 1 and winners[1] != "tie":
        return [side[winners[0]], 2 * side[winners[1]]]
    raise ValueError(f"rows of one question do not decode into two games: {winners}")


def recorded_counts(path: Path) -> dict[str, tuple[int, ...]]:
    """Per model, the counts of levels 2 … -2 (model's side) in an ``arena_hard_battles.jsonl``."""
    questions: dict[tuple[str, object], list[str]] = {}
    for line in path.read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["model_a"] != BASELINE:
            raise ValueError(f"expected the baseline {BASELINE} as model_a, got {row['model_a']}")
        questions.setdefault((row["model_b"], row["question_id"]), []).append(row["winner"])
    counts: dict[str, Counter] = {}
    for (model, _), winners in questions.items():
        counts.setdefault(model, Counter()).update(decoded_levels(winners))
    return {model: tuple(c[level] for level in LEVELS) for model, c in counts.items()}


def frequencies(counts: tuple[int, ...]) -> np.ndarray:
    return np.asarray(counts, dtype=float) / sum(counts)


def win_share(freq: np.ndarray) -> float:
    """The model's win share with a tie counted half."""
    return float(freq[0] + freq[1] + freq[2] / 2)


def sim_differences(gaps: dict[str, float], prompts: int, seed: int) -> dict[str, np.ndarray]:
    """Per model, ``d`` (first minus second, sds) of every (model, baseline) pair in both orders, model first."""
    judge = make_judge(f"sim:verdicts=graded,seed={seed}")
    tasks = planted_tasks({BASELINE: 0.0, **gaps}, prompts, seed=seed)
    out: dict[str, list[float]] = {model: [] for model in gaps}
    for task in tasks:
        by_system = {c.system: c for c in task.candidates}
        for model in gaps:
            pair = (by_system[model], by_system[BASELINE])
            first = judge.group_grades(task, pair)
            second = judge.group_grades(task, pair[::-1])
            out[model] += [(first[0] - first[1]) / task.human_spread, (second[1] - second[0]) / task.human_spread]
    return {model: np.asarray(values) for model, values in out.items()}


def level_frequencies(d: np.ndarray, tie_margin: float, strong_margin: float) -> np.ndarray:
    """Frequencies of levels 2 … -2 when ``d`` is cut at the margins (as ``planted_level``)."""
    tie = np.abs(d) < tie_margin
    strong = (np.abs(d) > strong_margin) & ~tie
    return np.array(
        [np.mean(strong & (d > 0)), np.mean(~strong & ~tie & (d > 0)), np.mean(tie)]
        + [np.mean(~strong & ~tie & (d < 0)), np.mean(strong & (d < 0))]
    )


def fitted_gaps(targets: dict[str, float], prompts: int, seed: int, rounds: int = 6) -> dict[str, float]:
    """Elo gaps over the baseline at which the simulated win share (d > 0) meets each target."""
    gaps = {model: ELO_PER_LOGIT * math.log(share / (1 - share)) for model, share in targets.items()}
    for _ in range(rounds):
        d = sim_differences(gaps, prompts, seed)
        for model, share in targets.items():
            now = min(max(float(np.mean(d[model] > 0)), 0.01), 0.99)
            gaps[model] += ELO_PER_LOGIT * (math.log(share / (1 - share)) - math.log(now / (1 - now)))
    return gaps


def fitted_margins(d: dict[str, np.ndarray], recorded: dict[str, np.ndarray]) -> tuple[float, float, float]:
    """The (tie_margin, strong_margin) on a 0.01 grid minimising the squared frequency error, and that error."""
    best = (math.inf, 0.0, 0.0)
    for tie in np.arange(0.0, 0.5, 0.01):
        for strong in np.arange(max(tie, 0.1), 3.0, 0.01):
            error = sum(float(np.sum((level_frequencies(d[m], tie, strong) - recorded[m]) ** 2)) for m in recorded)
            best = min(best, (error, round(float(tie), 2), round(float(strong), 2)))
    return best[1], best[2], best[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--battles", type=Path, help="a copy of arena_hard_battles.jsonl at commit 74e8b6f")
    parser.add_argument("--prompts", type=int, default=400)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    counts = recorded_counts(args.battles) if args.battles else dict(ARENA_HARD_LEVEL_COUNTS)
    if args.battles and counts != dict(ARENA_HARD_LEVEL_COUNTS):
        print(f"note: {args.battles} counts differ from ARENA_HARD_LEVEL_COUNTS: {counts}")
    recorded = {model: frequencies(c) for model, c in counts.items()}
    gaps = fitted_gaps({model: win_share(f) for model, f in recorded.items()}, args.prompts, args.seed)
    d = sim_differences(gaps, args.prompts, args.seed + 1)  # fresh draws for the margins and the table
    tie, strong, error = fitted_margins(d, recorded)
    lines = [
        "# Graded-level frequencies: recorded Arena-Hard judgments and the simulator",
        "",
        f"`python benchmarks/level_frequencies.py --prompts {args.prompts} --seed {args.seed}`"
        + (f" --battles {args.battles.name}" if args.battles else "")
        + ". Recorded: lmarena/arena-hard-auto@74e8b6f `data/arena_hard_battles.jsonl` (judge gpt-4-1106-preview, "
        "baseline claude-3-haiku-20240307, 120 questions × 2 games per model). Levels from the model's side.",
        "",
        f"Fitted margins: tie_margin = {tie:.2f}, strong_margin = {strong:.2f} (sum of squared errors {error:.4f}); "
        f"the defaults of `sim:verdicts=graded` are {GRADED_TIE_MARGIN:g} and {GRADED_STRONG_MARGIN:g}.",
        "",
        "| model | win share | games | source | A>>B | A>B | A=B | B>A | B>>A |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    pooled_recorded, pooled_sim = np.zeros(5), np.zeros(5)
    for model in sorted(recorded, key=lambda m: win_share(recorded[m])):
        sim = level_frequencies(d[model], GRADED_TIE_MARGIN, GRADED_STRONG_MARGIN)
        pooled_recorded += recorded[model] / len(recorded)
        pooled_sim += sim / len(recorded)
        share = f"{win_share(recorded[model]):.3f}"
        lines.append(f"| {model} | {share} | {sum(counts[model])} | recorded | " + _cells(recorded[model]))
        lines.append(f"| (gap {gaps[model]:.0f} Elo) | {win_share(sim):.3f} | {d[model].size} | sim | " + _cells(sim))
    lines.append("| all four | | | recorded | " + _cells(pooled_recorded))
    lines.append("| | | | sim | " + _cells(pooled_sim))
    text = "\n".join(lines) + "\n"
    print(text)
    RESULT.write_text(text, encoding="utf-8")


def _cells(freq: np.ndarray) -> str:
    return " | ".join(f"{value:.3f}" for value in freq) + " |"


if __name__ == "__main__":
    main()
