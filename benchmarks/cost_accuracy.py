"""Cost against accuracy: every registered strategy (and a few parameter settings) on one dataset and judge.

For each seed, all strategies rank the same tasks together on one shared match graph (as in
``rankkit compare``); a sim judge gets the seed too, so every seed is a fresh draw of judge noise
and of the strategies' own random choices. Per strategy we record the judgments it used per task
(comparisons + grades) and ``task_spearman`` (Spearman within each task, averaged), then report the
mean over seeds with a 95% t-interval of that mean — the project's headline plot::

    python benchmarks/cost_accuracy.py                                   # usr_topicalchat, sim gpt4, 10 seeds
    python benchmarks/cost_accuracy.py --data wmt23_sxs_mqm_ende --judge sim:preset=chatgpt --seeds 5

Writes ``benchmarks/results/cost_accuracy.md`` and ``cost_accuracy.png`` (needs matplotlib).
"""

from __future__ import annotations

import argparse
import dataclasses
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from scipy import stats

from rankkit.data.specs import parse_spec, split_list
from rankkit.data.tasks import SAMPLE_DATA, load_tasks
from rankkit.judges import make_judge
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy, strategy_classes

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
METRICS = ("task_spearman", "pearson", "pairwise_accuracy", "top1_accuracy")


def default_specs() -> list[str]:
    """Every registered strategy with its defaults, plus its other order setting (both orders, or
    its one order when it defaults to both) and, for budgeted strategies, a smaller and a larger
    budget (the points that make the cost axis a curve)."""
    specs = []
    for name, cls in strategy_classes().items():
        specs.append(name)
        fields = {f.name: f.default for f in dataclasses.fields(cls)} if dataclasses.is_dataclass(cls) else {}
        if cls.default_order() is not None:
            other = (cls.single_order or "given") if cls.default_order() == "both" else "both"
            specs.append(f"{name}:order={other}")
        if isinstance(fields.get("budget"), float):
            specs += [f"{name}:budget=1.5", f"{name}:budget=6"]
        if isinstance(fields.get("passes"), int):
            specs.append(f"{name}:passes=3")
    return specs


def resolve_data(name: str) -> Path:
    """A dataset name under ../shared/data, a path, or ``sample`` (the bundled synthetic sample)."""
    if name == "sample":
        return SAMPLE_DATA
    path = Path(name)
    if path.exists():
        return path
    shared = SHARED / name / "tasks.jsonl"
    if shared.exists():
        return shared
    sys.exit(f"no dataset {name!r} (not a file, and not in {SHARED})")


def judge_for_seed(spec: str, seed: int) -> str:
    """The judge spec of one seed: a sim judge without an explicit seed gets this one."""
    parsed = parse_spec(spec)
    if parsed.name == "sim" and "seed" not in parsed.options:
        return f"{spec},seed={seed}" if ":" in spec else f"{spec}:seed={seed}"
    return spec


def mean_interval(values: list[float], level: float = 0.95) -> tuple[float, float, float]:
    """Mean with the t-interval of the mean over seeds (NaN-free values; no interval for one value)."""
    values = [v for v in values if v == v]
    if not values:
        return float("nan"), float("nan"), float("nan")
    mean = statistics.fmean(values)
    if len(values) < 2 or statistics.stdev(values) == 0:
        return mean, (mean if len(values) > 1 else float("nan")), (mean if len(values) > 1 else float("nan"))
    low, high = stats.t.interval(level, len(values) - 1, loc=mean, scale=stats.sem(values))
    return mean, float(low), float(high)


def pareto(points: list[dict]) -> set[str]:
    """Labels of the points no other point beats on both cost (lower) and accuracy (higher)."""
    front = set()
    for p in points:
        if not any(
            q["cost"] <= p["cost"]
            and q["estimate"] >= p["estimate"]
            and (q["cost"] < p["cost"] or q["estimate"] > p["estimate"])
            for q in points
        ):
            front.add(p["label"])
    return front


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", default="usr_topicalchat", help="dataset name in ../shared/data, a path, or 'sample'")
    parser.add_argument("--judge", default="sim:preset=gpt4", help="judge spec (a sim judge gets each seed)")
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--limit", type=int, default=None, help="use only the first N tasks")
    parser.add_argument("--strategies", default=None, help="comma-separated specs (default: see default_specs)")
    parser.add_argument("--metric", default="task_spearman", choices=METRICS)
    parser.add_argument("--out", default=str(RESULTS / "cost_accuracy.md"))
    args = parser.parse_args()

    path = resolve_data(args.data)
    tasks = load_tasks(path, limit=args.limit)
    specs = split_list(args.strategies) if args.strategies else default_specs()
    strategies = [make_strategy(s) for s in specs]
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    seconds: dict[str, float] = defaultdict(float)
    started = time.perf_counter()
    for seed in range(args.seeds):
        judge = make_judge(judge_for_seed(args.judge, seed))
        result = run(tasks, strategies, judge, seed=seed, progress=False)
        for strategy_run in result.strategies:
            row = values[strategy_run.name]
            row["cost"].append((strategy_run.cost.comparisons + strategy_run.cost.grades) / len(tasks))
            for metric in METRICS:
                row[metric].append(strategy_run.metrics[metric])
            seconds[strategy_run.name] += strategy_run.seconds
        judge.close()
        print(f"seed {seed} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    elapsed = time.perf_counter() - started

    points = []
    for label, row in values.items():
        estimate, low, high = mean_interval(row[args.metric])
        points.append(
            {"label": label, "cost": statistics.fmean(row["cost"]), "estimate": estimate, "low": low, "high": high}
        )
    front = pareto(points)
    points.sort(key=lambda p: (p["cost"], -p["estimate"]))

    dataset = path.parent.name if path.name == "tasks.jsonl" else path.stem
    n_candidates = statistics.fmean(len(t.candidates) for t in tasks)
    lines = [
        f"# Cost vs accuracy: {dataset}, judge {args.judge}",
        "",
        f"Made by `python benchmarks/cost_accuracy.py --data {args.data} --judge {args.judge} --seeds {args.seeds}"
        + (f" --limit {args.limit}" if args.limit else "")
        + "`.",
        "",
        f"{len(tasks)} tasks, {n_candidates:.1f} candidates per task, {args.seeds} seeds; every seed re-draws the "
        "judge's noise (sim judge) and the strategies' random choices. Cost is the judgments a strategy used per task "
        "(comparisons + grades; a duel in both orders counts both). "
        f"Accuracy is `{args.metric}` (rankkit.stats.metrics), mean over seeds with a 95% t-interval of the mean; "
        "the other metrics are means over seeds. `front` marks the cost-accuracy Pareto front "
        "(no other setting is both cheaper and better).",
        "",
        "The judge is **simulated** (rankkit.judges.simulated.sim: verdicts derive from the human labels with the preset's "
        "accuracy and position bias), so this ranks the strategies' *aggregation* under a known judge model, "
        "not a real LLM's behaviour.",
        "",
        f"| strategy | judgments / task | {args.metric} [95% CI over seeds] | sd | "
        + " | ".join(m for m in METRICS if m != args.metric)
        + " | seconds | front |",
        "|---|---:|---|---:|" + "---:|" * (len(METRICS) - 1) + "---:|:---:|",
    ]
    for p in points:
        row = values[p["label"]]
        spread = statistics.stdev(row[args.metric]) if len(row[args.metric]) > 1 else float("nan")
        others = " | ".join(f"{statistics.fmean(row[m]):.3f}" for m in METRICS if m != args.metric)
        interval = (
            f"{p['estimate']:.3f} [{p['low']:.3f}, {p['high']:.3f}]" if p["low"] == p["low"] else f"{p['estimate']:.3f}"
        )
        lines.append(
            f"| {p['label']} | {p['cost']:.1f} | {interval} | {spread:.3f} | {others} | "
            f"{seconds[p['label']]:.1f} | {'✓' if p['label'] in front else ''} |"
        )
    lines += [
        "",
        f"Total wall time {elapsed:.0f} s on a shared 2-core machine (other jobs were running); "
        "`seconds` is each strategy's ranking time summed over seeds, including the judge calls it was "
        "first to make (a judgment shared through the match graph is paid for by whichever strategy asked "
        "first; the sim judge is cheap).",
        "",
    ]

    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    try:
        from rankkit.reports.plots import plot_cost_accuracy

        png = plot_cost_accuracy(
            points,
            out.with_suffix(".png"),
            args.metric,
            title=f"{dataset}, {args.judge}: {args.metric} vs cost ({args.seeds} seeds, 95% CI)",
        )
        lines.insert(2, f"![cost vs accuracy]({png.name})\n")
    except ImportError:  # pragma: no cover - matplotlib missing
        print("matplotlib not installed: no PNG", file=sys.stderr)
    text = "\n".join(lines)
    out.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
