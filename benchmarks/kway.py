"""k-way strategies against the pairwise ones: accuracy, judge calls and prompt size (goal P8).

On every N-way dataset of ``../shared/data`` and every simulated judge preset, for each seed, all
strategies rank the same tasks in one run (sharing judgments changes no result, only who pays:
``tests/test_independence.py``); a sim judge gets the seed, so every seed re-draws the judge's
noise and the strategies' random choices::

    python benchmarks/kway.py                         # 5 datasets x gpt4|chatgpt|falcon x 3 seeds
    python benchmarks/kway.py --datasets newsroom --presets gpt4 --seeds 1

Per strategy: task Spearman and top-1 accuracy (means over seeds; rankkit.stats.metrics), judge calls per
task (``comparisons``: a pairwise verdict or one k-way judgment each), estimated prompt tokens per
task (each judgment's prompt rendered with its real template, 4 characters per token), and the
strategy's own wall time. **Goal P8**: a k-way strategy within 0.01 task Spearman and with equal or
better top-1 than ``knockout:order=both`` at no more than 50% of its judge calls (gpt4 preset).

Writes ``benchmarks/results/kway.md``.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

from rankkit.data.tasks import Candidate, Task, load_tasks
from rankkit.judges import make_judge
from rankkit.prompts import PAIRWISE, TemplateChoice, prompt_max_points, render_pairwise
from rankkit.prompts.kway import render_kway
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"
DATASETS = ("usr_topicalchat", "newsroom", "wmt23_sxs_mqm_ende", "wmt21_mqm_ted_ende", "realsumm")
PRESETS = ("gpt4", "chatgpt", "falcon")
BASELINE = "knockout:order=both"
PAIRWISE_SPECS = ("knockout", BASELINE, "bt", "swiss")
#: The k-way strategy P8 is judged on, named before the confirmation seeds were run (see the report).
P8_CANDIDATE = "setwise_knockout:k=4,order=both"
KWAY_SPECS = (
    "setwise_knockout:k=3",
    "setwise_knockout:k=4",
    "setwise_knockout:k=6",
    "setwise_knockout:k=3,order=both",
    P8_CANDIDATE,
    "setwise_knockout:k=6,order=both",
    "setwise_knockout:k=3,order=permute",
    "setwise_knockout:k=4,order=permute",
    "setwise_knockout:k=6,order=permute",
    "setwise_knockout:k=4,order=permute,shifts=2",
    "setwise_heapsort",
    "setwise_heapsort:order=both",
    "listwise",
    "listwise:passes=3",
)
CHARS_PER_TOKEN = 4
SECTIONS = ("main", "confirm", "choice")


class PromptSize:
    """Estimated prompt tokens of a task's judgments: the template rendered with empty answers,
    plus the answers' lengths (what rendering each prompt would give, without rendering each)."""

    def __init__(self, task: Task):
        empty = Candidate("", "")
        template = TemplateChoice("auto").template(task, PAIRWISE)
        self.pair_overhead = len(render_pairwise(template, task, empty, empty, prompt_max_points(task, template)))
        self.kway_overhead: dict[tuple[str, int], int] = {}
        self.task = task
        self.length = {c.id: len(c.text) for c in task.candidates}

    def pair(self, first: str, second: str) -> float:
        return (self.pair_overhead + self.length[first] + self.length[second]) / CHARS_PER_TOKEN

    def group(self, kind: str, shown: tuple[str, ...]) -> float:
        key = (kind, len(shown))
        if key not in self.kway_overhead:
            prompt = "setwise" if kind == "choice" else "listwise"
            self.kway_overhead[key] = len(render_kway(prompt, self.task, [Candidate("", "")] * len(shown)))
        return (self.kway_overhead[key] + sum(self.length[cid] for cid in shown)) / CHARS_PER_TOKEN


def prompt_tokens(task_result, size: PromptSize) -> float:
    """The estimated prompt tokens of every judgment one strategy used on one task."""
    return sum(size.pair(c.first, c.second) for c in task_result.comparisons) + sum(
        size.group(g.kind, g.shown) for g in task_result.group_comparisons
    )


def measure(
    dataset: str, preset: str, seeds: range, specs: list[str], sim_kway: str = "grades", data: Path = SHARED
) -> dict[str, dict[str, float]]:
    """Each strategy's means over seeds on one dataset (under ``data``) and preset (``sim_kway``: the sim's ``kway=``)."""
    tasks = load_tasks(data / dataset / "tasks.jsonl")
    sizes = {t.task_id: PromptSize(t) for t in tasks}
    strategies = [make_strategy(spec) for spec in specs]
    values: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for seed in seeds:
        result = run(
            tasks, strategies, make_judge(f"sim:preset={preset},seed={seed},kway={sim_kway}"), seed=seed, progress=False
        )
        for spec, strategy_run in zip(specs, result.strategies):
            row = values[spec]
            row["task_spearman"].append(strategy_run.metrics["task_spearman"])
            row["top1_accuracy"].append(strategy_run.metrics["top1_accuracy"])
            row["calls"].append(strategy_run.cost.comparisons / len(tasks))
            row["tokens"].append(statistics.fmean(prompt_tokens(r, sizes[r.task_id]) for r in strategy_run.tasks))
            row["seconds"].append(strategy_run.seconds)
    return {
        spec: {name: statistics.fmean(v) for name, v in row.items()}
        | {"n": statistics.fmean(len(t.candidates) for t in tasks)}
        for spec, row in values.items()
    }


def meets_p8(row: dict[str, float], base: dict[str, float]) -> bool:
    """Goal P8 for one strategy's figures against the baseline's: within 0.01 task Spearman, top-1
    at least the baseline's, at most 50% of its judge calls."""
    return (
        row["task_spearman"] >= base["task_spearman"] - 0.01
        and row["top1_accuracy"] >= base["top1_accuracy"] - 1e-9
        and row["calls"] / base["calls"] <= 0.5
    )


def p8_best(rows: dict[str, dict[str, float]]) -> str | None:
    """The k-way strategy with the best task Spearman among those at ≤ 50% of the baseline's calls."""
    base = rows[BASELINE]
    cheap = [spec for spec in KWAY_SPECS if spec in rows and rows[spec]["calls"] <= 0.5 * base["calls"] + 1e-9]
    return max(cheap, key=lambda spec: rows[spec]["task_spearman"]) if cheap else None


def mean_rows(tables: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    """Each strategy's figures averaged over datasets (each dataset weighs the same)."""
    return {
        spec: {name: statistics.fmean(t[spec][name] for t in tables) for name in tables[0][spec]} for spec in tables[0]
    }


def p8_line(preset: str, dataset: str, rows: dict[str, dict[str, float]]) -> str:
    """One row of the P8 table: the baseline, the declared candidate, and the best k-way strategy at ≤ 50%."""
    base, mine = rows[BASELINE], rows[P8_CANDIDATE]
    share = mine["calls"] / base["calls"]
    meets = meets_p8(mine, base)
    best = p8_best(rows)
    best_text = (
        " | | |"
        if best is None
        else (
            f" `{best}` | {rows[best]['task_spearman']:.3f} ({rows[best]['task_spearman'] - base['task_spearman']:+.3f}) | "
            f"{rows[best]['top1_accuracy']:.3f} ({rows[best]['top1_accuracy'] - base['top1_accuracy']:+.3f}) |"
        )
    )
    return (
        f"| {preset} | {dataset} | {base['n']:.0f} | {base['task_spearman']:.3f} | {base['top1_accuracy']:.3f} | "
        f"{base['calls']:.1f} | {mine['task_spearman']:.3f} ({mine['task_spearman'] - base['task_spearman']:+.3f}) | "
        f"{mine['top1_accuracy']:.3f} ({mine['top1_accuracy'] - base['top1_accuracy']:+.3f}) | "
        f"{mine['calls']:.1f} ({100 * share:.0f}%) | {'✓' if meets else '✗'} |{best_text}"
    )


SMOLLM2_SPECS = ("knockout:order=both", P8_CANDIDATE, "setwise_knockout:k=3", "setwise_heapsort", "listwise")


def smollm2_report(limit: int) -> str:
    """The plumbing run: the embedded SmolLM2-135M judge (logprob mode, then generate mode on the
    k-way strategies) ranks a few usr_topicalchat tasks; what it shows is that k-way judgments run
    end to end on a real model, with their real prompt sizes and wall time — not accuracy."""
    tasks = load_tasks(SHARED / "usr_topicalchat" / "tasks.jsonl", limit=limit)
    sizes = {t.task_id: PromptSize(t) for t in tasks}
    lines = [
        "# k-way strategies on SmolLM2-135M (plumbing)",
        "",
        f"Made by `python benchmarks/kway.py --sections smollm2 --smollm2-tasks {limit} --out "
        f"benchmarks/results/kway_smollm2.md` on CPU (a shared 2-core machine, other jobs running). "
        f"{len(tasks)} tasks of usr_topicalchat ({statistics.fmean(len(t.candidates) for t in tasks):.0f} "
        "answers each), no cache. SmolLM2-135M is a plumbing-grade judge (near chance, strong slot "
        "preference): these rows show that the k-way prompts, the label-token read-out and the strict "
        "parser work on a real model, and what they cost — not how good k-way judging is.",
        "",
        "| judge | strategy | calls / task | parse failures | est. prompt tokens / task | seconds | task spearman | top1 |",
        "|---|---|---:|---:|---:|---:|---:|---:|",
    ]
    for spec, strategies in (
        ("smollm2:mode=logprob", SMOLLM2_SPECS),
        ("smollm2:mode=generate,max_new_tokens=96", SMOLLM2_SPECS[1:3]),
    ):
        judge = make_judge(spec)
        try:
            result = run(tasks, [make_strategy(s) for s in strategies], judge, seed=0, progress=False)
        finally:
            judge.close()
        for strategy_run in result.strategies:
            cost = strategy_run.cost
            tokens = statistics.fmean(prompt_tokens(r, sizes[r.task_id]) for r in strategy_run.tasks)
            lines.append(
                f"| `{spec}` | `{strategy_run.name}` | {cost.comparisons / len(tasks):.1f} | "
                f"{cost.parse_failures} | {tokens:,.0f} | {strategy_run.seconds:.1f} | "
                f"{strategy_run.metrics['task_spearman']:.3f} | {strategy_run.metrics['top1_accuracy']:.3f} |"
            )
        print(f"{spec} done", file=sys.stderr)
    return "\n".join(lines + [""])


def run_table(
    datasets: list[str], presets: list[str], seeds: range, specs: list[str], sim_kway: str, started: float
) -> dict[tuple[str, str], dict[str, dict[str, float]]]:
    """Every (preset, dataset) measured over ``seeds``."""
    table = {}
    for preset in presets:
        for dataset in datasets:
            table[(preset, dataset)] = measure(dataset, preset, seeds, specs, sim_kway)
            print(
                f"{sim_kway} seeds {seeds.start}-{seeds.stop - 1} {preset} {dataset} done "
                f"({time.perf_counter() - started:.0f} s)",
                file=sys.stderr,
            )
    return table


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--datasets", default=",".join(DATASETS))
    parser.add_argument("--presets", default=",".join(PRESETS))
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument(
        "--sections",
        default=",".join(SECTIONS),
        help="main (every strategy), confirm (P8 on the next seeds), choice (the sim's bare choice)",
    )
    parser.add_argument("--out", default=str(RESULTS / "kway.md"))
    parser.add_argument(
        "--smollm2-tasks",
        type=int,
        default=6,
        help="with --sections smollm2: how many usr_topicalchat tasks the SmolLM2 plumbing run ranks",
    )
    args = parser.parse_args()
    datasets, presets, sections = args.datasets.split(","), args.presets.split(","), args.sections.split(",")
    missing = [d for d in datasets if not (SHARED / d / "tasks.jsonl").exists()]
    if missing:
        sys.exit(f"datasets not found under {SHARED}: {', '.join(missing)}")
    started = time.perf_counter()
    first, fresh = range(args.seeds), range(args.seeds, 2 * args.seeds)
    p8_specs = [BASELINE, *KWAY_SPECS]
    tables = {}
    if "main" in sections:
        tables["main"] = run_table(datasets, presets, first, [*PAIRWISE_SPECS, *KWAY_SPECS], "grades", started)
    if "confirm" in sections:
        tables["confirm"] = run_table(datasets, presets, fresh, p8_specs, "grades", started)
    if "choice" in sections:
        tables["choice"] = run_table(datasets, presets, first, p8_specs, "choice", started)
    if sections == ["smollm2"]:
        text = smollm2_report(args.smollm2_tasks)
        Path(args.out).write_text(text, encoding="utf-8")
        print(text)
        return
    text = report(tables, datasets, presets, args, time.perf_counter() - started)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


def report(tables, datasets: list[str], presets: list[str], args, elapsed: float) -> str:
    """The Markdown report of every section run."""
    defaults = {
        "datasets": ",".join(DATASETS),
        "presets": ",".join(PRESETS),
        "seeds": 3,
        "sections": ",".join(SECTIONS),
    }
    command = "python benchmarks/kway.py" + "".join(
        f" --{name} {getattr(args, name)}" for name, default in defaults.items() if getattr(args, name) != default
    )
    seeds, fresh = f"0–{args.seeds - 1}", f"{args.seeds}–{2 * args.seeds - 1}"
    lines = [
        "# k-way strategies against pairwise ones (goal P8)",
        "",
        f"Made by `{command}` ({elapsed:.0f} s on a shared 2-core machine). Judges: the latent-perception "
        f"simulator, presets {', '.join(presets)}; every seed re-draws the judge's noise and the strategies' random "
        "choices. Datasets: every N-way set of `../shared/data` but the system-level Arena-Hard one "
        f"({', '.join(datasets)}).",
        "",
        "**The k-way judgments are the simulator's extrapolation** (rankkit.judges.simulated.sim: the argmax of perceived "
        "quality plus a per-slot bias spread linearly from +slot_bias/2 to −slot_bias/2, exactly the pairwise "
        "model at k = 2). No recorded k-way judgments calibrate it, so these figures say what k-way aggregation "
        "gains *if* a judge's slot bias and noise carry over to k answers as modelled — not what a real LLM does "
        "with long k-answer prompts. Two readings of a k-way choice bracket the truth: by default it carries a "
        "**grade for every answer shown** (`kway=grades`, as the sim's pairwise verdict carries both grades: "
        "optimistic); the last section gives the judge's **bare choice** only (`kway=choice`, as a real judge's "
        "`Best: X`: pessimistic; a logprob judge's P(best) per slot lies between).",
        "",
        "Columns: `spearman` = task Spearman, `top1` = top-1 accuracy (means over seeds); `calls` = judge calls "
        "per task (a pairwise verdict or one k-way judgment each); `% base` = calls as a share of "
        f"`{BASELINE}`'s; `tokens` = estimated prompt tokens per task (every prompt rendered with its real "
        "template — paper/generic pairwise, setwise/listwise k-way — at 4 characters per token); `ms` = the "
        "strategy's own time per seed (sim judge: aggregation cost only).",
        "",
        f"P8 is judged on `{P8_CANDIDATE}`: it holds where that strategy is within 0.01 task Spearman of "
        f"`{BASELINE}`, has equal or better top-1 and uses ≤ 50% of its judge calls. The candidate was chosen "
        f"on seeds {seeds} (the first section), so the second section re-measures it on fresh seeds {fresh}. "
        "Each P8 table also names, for comparison, the k-way strategy with the best task Spearman among those at "
        "≤ 50% of the calls on that very data (chosen after seeing the figures, so optimistic). The last row per "
        "preset is the mean over datasets (each dataset weighs the same).",
        "",
    ]
    if "main" in tables:
        lines += p8_section(tables["main"], datasets, presets, f"## P8, seeds {seeds} (grades)")
    if "confirm" in tables:
        lines += p8_section(tables["confirm"], datasets, presets, f"## P8 confirmed on fresh seeds {fresh} (grades)")
    if "choice" in tables:
        lines += p8_section(
            tables["choice"], datasets, presets, f"## P8 with the bare choice (`kway=choice`), seeds {seeds}"
        )
        lines += means_section(
            tables["choice"], datasets, presets, [BASELINE, *KWAY_SPECS], "### Mean over datasets, bare choice"
        )
    if "main" in tables:
        lines += means_section(
            tables["main"],
            datasets,
            presets,
            [*PAIRWISE_SPECS, *KWAY_SPECS],
            f"## Every strategy, mean over datasets (seeds {seeds}, grades)",
        )
        lines += ["## Every dataset (seeds " + seeds + ", grades)", ""]
        for preset in presets:
            for dataset in datasets:
                rows = tables["main"][(preset, dataset)]
                lines += [
                    f"### {preset} · {dataset} (N = {rows[BASELINE]['n']:.0f})",
                    "",
                    "| strategy | spearman | top1 | calls | % base | tokens | ms |",
                    "|---|---:|---:|---:|---:|---:|---:|",
                ]
                for spec in [*PAIRWISE_SPECS, *KWAY_SPECS]:
                    row = rows[spec]
                    lines.append(
                        f"| `{spec}` | {row['task_spearman']:.3f} | {row['top1_accuracy']:.3f} | "
                        f"{row['calls']:.1f} | {100 * row['calls'] / rows[BASELINE]['calls']:.0f}% | "
                        f"{row['tokens']:,.0f} | {1000 * row['seconds']:.0f} |"
                    )
                lines.append("")
    return "\n".join(lines)


def p8_section(table, datasets: list[str], presets: list[str], title: str) -> list[str]:
    lines = [
        title,
        "",
        f"| preset | dataset | N | base spearman | base top1 | base calls | `{P8_CANDIDATE}` spearman (Δ) | top1 (Δ) | calls (%) | P8 | best ≤50% on this data | its spearman (Δ) | its top1 (Δ) |",
        "|---|---|---:|---:|---:|---:|---:|---:|---:|:---:|---|---:|---:|",
    ]
    for preset in presets:
        rows_of = [table[(preset, dataset)] for dataset in datasets]
        for dataset, rows in [*zip(datasets, rows_of), ("**mean**", mean_rows(rows_of))]:
            lines.append(p8_line(preset, dataset, rows))
    return lines + [""]


def means_section(table, datasets: list[str], presets: list[str], specs: list[str], title: str) -> list[str]:
    lines = [title, ""]
    for preset in presets:
        lines += [
            f"{'####' if title.startswith('###') else '###'} {preset}",
            "",
            "| strategy | spearman | top1 | calls | % base | tokens |",
            "|---|---:|---:|---:|---:|---:|",
        ]
        for spec in specs:
            per = [table[(preset, d)][spec] for d in datasets]
            share = statistics.fmean(r["calls"] / table[(preset, d)][BASELINE]["calls"] for r, d in zip(per, datasets))
            lines.append(
                f"| `{spec}` | {statistics.fmean(r['task_spearman'] for r in per):.3f} | "
                f"{statistics.fmean(r['top1_accuracy'] for r in per):.3f} | "
                f"{statistics.fmean(r['calls'] for r in per):.1f} | {100 * share:.0f}% | "
                f"{statistics.fmean(r['tokens'] for r in per):,.0f} |"
            )
        lines.append("")
    return lines


if __name__ == "__main__":
    main()
