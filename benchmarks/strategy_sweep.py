"""Strategy sweep: every strategy on every N-way dataset under many simulated judges.

For each dataset, simulated judge and seed, all strategies run together on one shared match graph
(as in ``rankkit compare``), and we record Spearman (pooled and per task), Pearson, pairwise
accuracy and comparisons per task. The judges: the three presets of the latent-perception model
(calibrated on LLMBar in both modes), the same presets under the fixed-accuracy model
(``sim:model=fixed,preset=P``: the same Vanilla rates, whatever the gap) for comparison, and
(``--judges all``) fixed-accuracy judges of accuracy 0.6-0.9 with and without a 0.2 first-slot
bias. The judge's seed varies with the strategy seed, so each trial is a fresh draw of judge
noise. Figures only, no assertions.

    python benchmarks/strategy_sweep.py                      # all N-way sets in ../shared/data
    python benchmarks/strategy_sweep.py --judges presets --seeds 3 --limit 20
    python benchmarks/strategy_sweep.py --data my.jsonl --seeds 5 --limit 20

Writes ``benchmarks/results/strategy_sweep.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from rankkit.data.specs import split_list
from rankkit.data.tasks import load_tasks
from rankkit.judges import make_judge
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy, strategy_classes

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
NWAY = ["usr_topicalchat", "newsroom", "wmt23_sxs_mqm_ende", "wmt21_mqm_ted_ende", "realsumm"]
PRESETS = ["preset=gpt4", "preset=chatgpt", "preset=falcon"]
FIXED_PRESETS = [f"model=fixed,{preset}" for preset in PRESETS]
GRID = [f"model=fixed,accuracy={a},position_bias={b}" for b in (0.0, 0.2) for a in (0.6, 0.7, 0.8, 0.9)]
BASE_STRATEGIES = ["individual", "pairwise", "knockout", "knockout:order=both"]
EXTRA_STRATEGIES = ["elo", "bt", "heapsort", "sliding", "swiss", "active", "double_elimination"]  # when registered
METRICS = ["task_spearman", "spearman", "pearson", "pairwise_accuracy"]


def default_strategies() -> list[str]:
    known = strategy_classes()
    return BASE_STRATEGIES + [name for name in EXTRA_STRATEGIES if name in known]


def preset_label(judge_options: str) -> str:
    """``preset=gpt4`` -> ``gpt4``; ``model=fixed,preset=gpt4`` -> ``fixed gpt4``."""
    preset = judge_options.rsplit("preset=", 1)[1]
    return f"fixed {preset}" if "model=fixed" in judge_options else preset


def mean_sd(values: list[float]) -> str:
    values = [v for v in values if v == v]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    return f"{statistics.fmean(values):.3f}±{statistics.stdev(values):.3f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", action="append", help="tasks file(s); default: the N-way sets of ../shared/data")
    parser.add_argument("--strategies", default=None, help="comma-separated specs (default: all registered)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--limit", type=int, default=30, help="tasks per dataset (the first N)")
    parser.add_argument("--judges", default="all", choices=["all", "presets"])
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "strategy_sweep.md"))
    args = parser.parse_args()

    paths = [Path(p) for p in args.data] if args.data else [SHARED / n / "tasks.jsonl" for n in NWAY]
    paths = [p for p in paths if p.exists()]
    if not paths:
        sys.exit("no datasets found (../shared/data absent and no --data given)")
    specs = split_list(args.strategies) if args.strategies else default_strategies()
    judges = PRESETS + FIXED_PRESETS + (GRID if args.judges == "all" else [])

    # rows[(dataset, judge, strategy)][metric] -> list over seeds
    rows: dict[tuple[str, str, str], dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    started = time.perf_counter()
    for path in paths:
        name = path.parent.name if path.name == "tasks.jsonl" else path.stem
        tasks = load_tasks(path, limit=args.limit)
        n = statistics.fmean(len(t.candidates) for t in tasks)
        for judge_options in judges:
            for seed in range(args.seeds):
                judge = make_judge(f"sim:{judge_options},seed={seed}")
                result = run(tasks, [make_strategy(s) for s in specs], judge, seed=seed, progress=False)
                for strat in result.strategies:
                    cell = rows[(f"{name} (N={n:.0f})", judge_options, strat.name)]
                    for metric in METRICS:
                        cell[metric].append(strat.metrics[metric])
                    cell["comparisons"].append(strat.cost.comparisons / len(tasks))
                    cell["judgments"].append((strat.cost.comparisons + strat.cost.grades) / len(tasks))
            print(f"{name}: {judge_options} done ({time.perf_counter() - started:.0f}s)", file=sys.stderr)

    lines = [
        "# Strategy sweep (simulated judges)",
        "",
        f"Command: `python benchmarks/strategy_sweep.py --seeds {args.seeds} --limit {args.limit} --judges {args.judges}`"
        f" · first {args.limit} tasks of each dataset · {args.seeds} seeds (judge seed = strategy seed) · "
        f"mean±sd over seeds · {time.perf_counter() - started:.0f}s in all.",
        "",
        "`task_spearman` is Spearman within each task, averaged over tasks — the fair comparison "
        "across strategies whose scores live on per-task scales (Elo, ranks). `spearman`/`pearson` "
        "are pooled over all candidates (the paper's question-level correlation). `judgments/task` "
        "counts comparisons plus pointwise grades used per task.",
        "",
        "Judges: `sim:preset=P` is the latent-perception model calibrated on LLMBar Natural in both modes "
        "(`sim_calibration.md`): its pointwise grades are as good as the recorded judge's Rating grades (gpt4 "
        "pointwise-pair accuracy 0.92, chatgpt 0.685, falcon 0.69 derived), and its errors grow as two answers get "
        "closer. `sim:model=fixed,preset=P` is the fixed-accuracy model (same pairwise accuracy and slot share, but "
        "accuracy independent of the gap, and pointwise grades = human score + 0.5 spread of noise for every "
        "preset); `sim:model=fixed,accuracy=…` judges are fixed-accuracy too.",
        "",
        "## Averaged over datasets",
        "",
    ]
    datasets = sorted({d for d, _, _ in rows})
    for judge_options in judges:
        lines += [
            f"### judge `sim:{judge_options}`",
            "",
            "| strategy | judgments/task | task_spearman | spearman | pearson | pairwise_acc |",
            "|---|---|---|---|---|---|",
        ]
        for spec in list(dict.fromkeys(st for _, _, st in rows)):
            cells = [rows[(d, judge_options, spec)] for d in datasets if (d, judge_options, spec) in rows]
            per_dataset = {
                m: [statistics.fmean([v for v in c[m] if v == v] or [float("nan")]) for c in cells]
                for m in METRICS + ["judgments"]
            }
            lines.append(
                f"| {spec} | {statistics.fmean(per_dataset['judgments']):.1f} | "
                + " | ".join(f"{statistics.fmean(per_dataset[m]):.3f}" for m in METRICS)
                + " |"
            )
        lines.append("")
    lines += ["## Per dataset (presets)", ""]
    for dataset in datasets:
        lines += [
            f"### {dataset}",
            "",
            "| judge | strategy | comparisons/task | judgments/task | task_spearman | spearman | pearson | pairwise_acc |",
            "|---|---|---|---|---|---|---|---|",
        ]
        for (d, judge_options, spec), cell in rows.items():
            if d != dataset or judge_options not in PRESETS + FIXED_PRESETS:
                continue
            lines.append(
                f"| {preset_label(judge_options)} | {spec} | {statistics.fmean(cell['comparisons']):.1f} | "
                f"{statistics.fmean(cell['judgments']):.1f} | " + " | ".join(mean_sd(cell[m]) for m in METRICS) + " |"
            )
        lines.append("")
    text = "\n".join(lines)
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(text + "\n", encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
