"""The large-N frontier (goal P2′): how small a fraction of all-pairs BT's judgments reaches its accuracy.

Planted-strength tasks (``rankkit.judges.simulated.synthetic.planted_tasks``: each system's answer scores its
strength plus Gumbel noise, strengths evenly spread over 1000 Elo) with N = 50, 100 and 200
candidates, judged by the simulator's presets over several seeds. The reference is all-pairs
Bradley–Terry (``bt``: every pair in both orders, N(N−1) judgments per task). For each strategy
family and budget we record the judgments used as a fraction of that and the task Spearman; a
family *reaches* BT at the smallest fraction whose mean task Spearman (over seeds) is within 0.01
of BT's. **Goal P2′**: some family reaches it at ≤ 5% at N = 100::

    python benchmarks/frontier.py                        # N = 50, 100, 200; gpt4|chatgpt|falcon; 3 seeds
    python benchmarks/frontier.py --sizes 50 --presets gpt4 --seeds 1

A k-way judgment counts as one judgment here (its prompt holds k answers: the ``tokens ×`` column
gives the fraction weighted by answers shown, k/2 per k-way judgment, as a token-fair cost).
Writes ``benchmarks/results/frontier.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from rankkit.judges import make_judge
from rankkit.judges.simulated.sim_model import KWAY_READINGS
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

RESULTS = Path(__file__).resolve().parents[1] / "benchmarks" / "results"
SIZES = (50, 100, 200)
PRESETS = ("gpt4", "chatgpt", "falcon")
#: Tasks per size: about the same number of judgments for the all-pairs reference at every N.
TASKS = {50: 16, 100: 6, 200: 3}
REFERENCE = "bt"
WITHIN = 0.01


def families(n: int) -> dict[str, list[str]]:
    """Each family's specs, cheapest first (budgets in judgments per candidate for swiss and active)."""
    batch = max(1, n // 10)
    return {
        "swiss": [f"swiss:budget={b}" for b in (1, 2, 3, 5, 8)],
        "swiss (grades)": [f"swiss:budget={b},aggregate=grades" for b in (1, 2, 3, 5, 8)],
        "active": [f"active:budget={b},batch={batch}" for b in (1, 2, 3, 5)],
        "setwise_knockout k=8": [
            "setwise_knockout:k=8",
            "setwise_knockout:k=8,order=both",
            "setwise_knockout:k=8,order=permute",
        ],
        "setwise_heapsort k=8": ["setwise_heapsort:k=8", "setwise_heapsort:k=8,order=both"],
        "listwise 8/4": [f"listwise:window=8,step=4,passes={p}" for p in (1, 3, 10)],
        "setwise_groups k=8": [f"setwise_groups:k=8,rounds={r},order=permute" for r in (1, 2, 3, 4, 6)],
    }


def answers_per_judgment(spec: str) -> float:
    """How many answers one judgment of ``spec`` shows, over two (a pair): its token weight."""
    for key in ("k=", "window="):
        if key in spec:
            return int(spec.split(key)[1].split(",")[0]) / 2
    return 1.0


def measure(
    n: int, preset: str, seeds: int, sim_kway: str, specs: list[str] | None = None
) -> dict[str, dict[str, float]]:
    """Each spec's mean task Spearman and judgments per task over the seeds (fresh tasks per seed);
    ``specs``: the reference and every family's unless given."""
    specs = specs or [REFERENCE, *(spec for family in families(n).values() for spec in family)]
    strategies = [make_strategy(spec) for spec in specs]
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for seed in range(seeds):
        strengths = {f"s{i:03d}": 1000.0 * i / (n - 1) for i in range(n)}
        tasks = planted_tasks(strengths, prompts=TASKS[n], seed=100 * n + seed, prefix=f"n{n}s{seed}-")
        judge = make_judge(f"sim:preset={preset},seed={seed},kway={sim_kway}")
        for spec, strategy_run in zip(specs, run(tasks, strategies, judge, seed=seed, progress=False).strategies):
            values[spec]["spearman"].append(strategy_run.metrics["task_spearman"])
            values[spec]["judgments"].append(strategy_run.cost.comparisons / len(tasks))
    return {spec: {name: statistics.fmean(v) for name, v in row.items()} for spec, row in values.items()}


def reached(rows: dict[str, dict[str, float]], family: list[str], n: int) -> tuple[str | None, float, float]:
    """The cheapest spec of ``family`` within WITHIN of the reference: (spec, fraction, token fraction);
    (None, best fraction tried, its spearman gap) when none is."""
    target = rows[REFERENCE]["spearman"] - WITHIN
    all_pairs = n * (n - 1)
    for spec in sorted(family, key=lambda s: rows[s]["judgments"]):
        if rows[spec]["spearman"] >= target:
            fraction = rows[spec]["judgments"] / all_pairs
            return spec, fraction, fraction * answers_per_judgment(spec)
    best = max(family, key=lambda s: rows[s]["spearman"])
    return None, rows[best]["judgments"] / all_pairs, rows[best]["spearman"] - rows[REFERENCE]["spearman"]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--sizes", default=",".join(map(str, SIZES)))
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--sim-kway", default="grades", choices=KWAY_READINGS)
    parser.add_argument("--out", default=str(RESULTS / "frontier.md"))
    args = parser.parse_args()
    sizes, presets = [int(s) for s in args.sizes.split(",")], args.presets.split(",")
    started = time.perf_counter()
    table = {}
    for n in sizes:
        for preset in presets:
            table[(n, preset)] = measure(n, preset, args.seeds, args.sim_kway)
            print(f"N={n} {preset} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    text = report(table, sizes, presets, args, time.perf_counter() - started)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


def report(table, sizes: list[int], presets: list[str], args, elapsed: float) -> str:
    command = "python benchmarks/frontier.py" + "".join(
        f" --{name.replace('_', '-')} {getattr(args, name)}"
        for name, default in (
            ("sizes", ",".join(map(str, SIZES))),
            ("presets", ",".join(PRESETS)),
            ("seeds", 3),
            ("sim_kway", "grades"),
        )
        if getattr(args, name) != default
    )
    lines = [
        "# The large-N frontier (goal P2′)",
        "",
        f"Made by `{command}` ({elapsed:.0f} s on a shared 2-core machine). Planted-strength tasks "
        f"({', '.join(f'{TASKS[n]} tasks of N = {n}' for n in sizes)} per seed, fresh tasks every seed), "
        f"simulated judges {', '.join(presets)} (k-way choices carry `kway={args.sim_kway}`), {args.seeds} seeds. "
        f"A family *reaches* all-pairs BT at the smallest fraction of BT's N(N−1) judgments whose mean task "
        f"Spearman is within {WITHIN} of BT's; `tokens ×` weights each k-way judgment by k/2 (the answers it "
        "shows, over a pair's two). Goal P2′: ≤ 5% at N = 100.",
        "",
        "In the simulator every judgment of an answer shares that answer's *perception* draw (its fixed "
        "misreading by the judge), so all-pairs BT does not converge to the human order but to the judge's "
        "perceived order: its Spearman is a ceiling that any strategy averaging out the per-judgment noise reaches.",
        "",
        "## Smallest fraction of all-pairs BT that comes within 0.01 of it",
        "",
        "| N | preset | BT spearman | " + " | ".join(families(sizes[0])) + " |",
        "|---:|---|---:|" + "---|" * len(families(sizes[0])),
    ]
    for n in sizes:
        for preset in presets:
            rows = table[(n, preset)]
            cells = []
            for family in families(n).values():
                spec, fraction, other = reached(rows, family, n)
                cells.append(
                    f"{100 * fraction:.1f}% (tokens × {100 * other:.1f}%)"
                    if spec
                    else f"not reached (best {100 * fraction:.1f}%: {other:+.3f})"
                )
            lines.append(f"| {n} | {preset} | {rows[REFERENCE]['spearman']:.3f} | " + " | ".join(cells) + " |")
    lines += ["", "## Every setting", ""]
    for n in sizes:
        for preset in presets:
            rows = table[(n, preset)]
            lines += [
                f"### N = {n}, {preset}",
                "",
                "| strategy | judgments / task | % of all pairs | spearman | Δ vs BT |",
                "|---|---:|---:|---:|---:|",
            ]
            for spec in [REFERENCE, *(s for family in families(n).values() for s in family)]:
                row = rows[spec]
                lines.append(
                    f"| `{spec}` | {row['judgments']:.0f} | {100 * row['judgments'] / (n * (n - 1)):.2f}% | "
                    f"{row['spearman']:.3f} | {row['spearman'] - rows[REFERENCE]['spearman']:+.3f} |"
                )
            lines.append("")
    return "\n".join(lines)


if __name__ == "__main__":
    main()
