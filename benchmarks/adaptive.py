"""Adaptive match-making: Spearman against comparisons for ``swiss`` and ``active`` (issues 8, 16).

The questions: can a strategy that chooses its comparisons reach the accuracy of all-pairs
Bradley–Terry (``bt:order=both``, N(N−1) judgments per task) with a quarter of its comparisons?
And, at the cost of a debiased knockout (2(N − 1) comparisons), is it at least as good as
``knockout:order=both``? (Issue 16's goal P2, on tasks of N ≥ 16: the first for the gpt4 preset,
the second for the others.)

For each N-way dataset (a ``--limit`` subset of its tasks; tasks are independent, so a subset is
a fair sample), each simulated preset judge (gpt4, chatgpt, falcon) and each seed, every strategy
runs on the same tasks in one :func:`rankkit.run` (so one shared match graph per task, as in
``rankkit compare``). The judge's ``seed`` is the trial's seed too: a sim judgment is a
deterministic function of (judge seed, task, pair, order), so varying it draws fresh judge noise
for every trial — all-pairs BT's own result varies with it. The metric is ``task_spearman``
(Spearman within each task, averaged over tasks). Each trial is one seed; intervals are 95%
t-intervals over seeds, and the difference to all-pairs BT is *paired* by seed (same judge, same
tasks), which is what "within 0.01" is judged on.

The adaptive strategies run at budgets that are fractions of the all-pairs debiased cost
(``comparisons = f · N(N − 1)`` rounded), and at exactly a debiased knockout's cost 2(N − 1)
(the fraction 2/N); ``active`` uses ``batch = N // 4`` (duels chosen per posterior update, about
half a Swiss round), which keeps the benchmark fast. Without ``order=both`` a variant plays single
judgments in a seeded random order, so a budget buys as many pairs as it has judgments; with it
each duel is played in both orders and costs 2.

Rows marked † are not separate runs: the ``aggregate=grades`` variants' own judgments re-scored
with slot-corrected grade levels (:mod:`rankkit.strategies._graded`) — exactly what an
``aggregate=corrected`` option of ``swiss`` / ``active`` would give, since neither chooses its
pairs from its aggregate. ``double_elimination`` (2N − 2 single-order duels, a debiased
knockout's cost) is compared with ``knockout:order=both`` at that cost.

The judges are the latent-perception presets (``sim:preset=P``, calibrated on LLMBar in both
modes); ``--fixed-accuracy`` runs the fixed-accuracy simulator (``sim:model=fixed,preset=P``: the
same pairwise rates, whatever the gap) instead.

    python benchmarks/adaptive.py                   # the five datasets, 20 seeds (several minutes)
    python benchmarks/adaptive.py --seeds 5 --scale 0.5   # a quick look
    python benchmarks/adaptive.py --datasets realsumm,arena_hard_v01_arena_elo --seeds 10   # N >= 16 only

Writes ``benchmarks/results/adaptive.md`` and ``benchmarks/results/adaptive.png``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from scipy import stats

from rankkit.data.tasks import Task, load_tasks
from rankkit.judges import make_judge
from rankkit.runs.results import StrategyRun
from rankkit.runs.runner import run
from rankkit.stats.metrics import evaluate
from rankkit.strategies import make_strategy, strategy_classes
from rankkit.strategies._graded import corrected_grades

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
RESULTS = ROOT / "benchmarks" / "results"

#: (dataset, tasks used by default). Fewer tasks for larger N keep each dataset's share of the
#: run time comparable (all-pairs BT costs N(N − 1) judgments per task).
DATASETS = [
    ("usr_topicalchat", 8),
    ("wmt23_sxs_mqm_ende", 5),
    ("wmt21_mqm_ted_ende", 3),
    ("realsumm", 6),
    ("arena_hard_v01_arena_elo", 3),
]
PRESETS = ["gpt4", "chatgpt", "falcon"]
FRACTIONS = [0.1, 0.15, 0.25, 0.5]
REFERENCE = "bt:order=both"
BASELINES = ["knockout", "knockout:order=both", "heapsort"]
#: Fixed-cost strategies at about a debiased knockout's cost (2N − 2 single-order duels), compared
#: with it in the equal-cost headline.
FIXED = ["double_elimination", "double_elimination:aggregate=grades"]
#: The adaptive variants; each runs at every budget fraction (``comparisons=`` is appended, and
#: ``batch=`` for active: N // 4 pairs per posterior update, about half a Swiss round).
ADAPTIVE = [
    "swiss",
    "swiss:aggregate=grades",
    "swiss:aggregate=grades,order=both",
    "active",
    "active:aggregate=grades",
    "active:aggregate=grades,order=both",
]
#: The baseline every adaptive variant must match at its own cost (issue 16, P2).
EQUAL_COST = "knockout:order=both"
#: Variants re-scored *post hoc* from the very judgments they used, with the slot-corrected grade
#: levels of :mod:`rankkit.strategies._graded` (what an ``aggregate=corrected`` option of swiss and
#: active would give: neither chooses its pairs from its aggregate, so the pairs are the same).
POSTHOC = {
    "swiss:aggregate=grades": "swiss:aggregate=corrected†",
    "active:aggregate=grades": "active:aggregate=corrected†",
}
VARIANTS = ADAPTIVE + list(POSTHOC.values())
TARGET_GAP = 0.01
TARGET_FRACTION = 0.25
TARGET_MIN_N = 16


@dataclass
class Row:
    """One strategy on one dataset and judge: per-seed Spearman and comparisons per task."""

    label: str
    variant: str | None  # the ADAPTIVE entry, or None for the reference and baselines
    fraction: float | None
    spearman: list[float]
    comparisons: list[float]
    seconds: float = 0.0


def knockout_fraction(n: int) -> float:
    """A debiased knockout's cost, 2(N − 1) comparisons, as a share of all-pairs N(N − 1)."""
    return 2 / n


def fractions_for(fractions: list[float], n: int) -> list[float]:
    """The tested budget fractions plus the debiased knockout's own cost."""
    return sorted(set(fractions) | {knockout_fraction(n)})


def with_budget(variant: str, comparisons: int, n: int) -> str:
    """The variant's spec with its per-task budget (and, for active, its batch size)."""
    options = [f"comparisons={comparisons}"]
    if variant.split(":")[0] == "active":
        options.insert(0, f"batch={max(1, n // 4)}")
    return f"{variant}{',' if ':' in variant else ':'}{','.join(options)}"


def interval(values: list[float]) -> tuple[float, float, float]:
    """Mean and 95% t-interval."""
    mean = statistics.fmean(values)
    if len(values) < 2:
        return mean, math.nan, math.nan
    half = stats.t.ppf(0.975, len(values) - 1) * statistics.stdev(values) / math.sqrt(len(values))
    return mean, mean - half, mean + half


def fmt_interval(values: list[float]) -> str:
    mean, low, high = interval(values)
    return f"{mean:.3f} [{low:.3f}, {high:.3f}]"


def paired_gap(row: Row, reference: Row) -> list[float]:
    return [a - b for a, b in zip(row.spearman, reference.spearman)]


def run_dataset(
    name: str, limit: int, seeds: int, fractions: list[float], fixed_accuracy: bool = False
) -> tuple[int, dict[str, list[Row]]]:
    """All strategies on one dataset under every preset (of the latent model, or of the
    fixed-accuracy model with ``fixed_accuracy``); returns N and {preset: rows}."""
    tasks = load_tasks(SHARED / name / "tasks.jsonl", limit=limit)
    sizes = {len(t.candidates) for t in tasks}
    if len(sizes) != 1:
        sys.exit(f"{name}: tasks have different numbers of candidates {sorted(sizes)}; budgets need one N")
    n = sizes.pop()
    all_pairs = n * (n - 1)
    specs: list[tuple[str, str | None, float | None]] = [(REFERENCE, None, None)]
    specs += [(spec, None, None) for spec in BASELINES + FIXED if spec.split(":")[0] in strategy_classes()]
    for variant in ADAPTIVE:
        for fraction in fractions_for(fractions, n):
            budget = max(1, math.floor(fraction * all_pairs + 0.5))  # round half up (round() would go to even)
            specs.append((with_budget(variant, budget, n), variant, fraction))
    by_preset: dict[str, list[Row]] = {}
    derived = [(i, POSTHOC[variant]) for i, (_, variant, _) in enumerate(specs) if variant in POSTHOC]
    for preset in PRESETS:
        rows = [
            Row(label=spec, variant=variant, fraction=fraction, spearman=[], comparisons=[])
            for spec, variant, fraction in specs
        ]
        rows += [
            Row(
                label=f"{specs[i][0].replace('aggregate=grades', 'aggregate=corrected')}†",
                variant=variant,
                fraction=specs[i][2],
                spearman=[],
                comparisons=[],
            )
            for i, variant in derived
        ]
        for seed in range(seeds):
            # The reference runs first: it judges every ordered pair, so the others reuse its
            # judgments from the shared graph (same judge, same seed) instead of recomputing them.
            result = run(
                tasks,
                [make_strategy(spec) for spec, _, _ in specs],
                make_judge(f"sim:{'model=fixed,' if fixed_accuracy else ''}preset={preset},seed={seed}"),
                seed=seed,
                progress=False,
            )
            for row, strategy_run in zip(rows, result.strategies):
                row.spearman.append(strategy_run.metrics["task_spearman"])
                row.comparisons.append(strategy_run.cost.comparisons / len(tasks))
                row.seconds += strategy_run.seconds
            for row, (i, _) in zip(rows[len(specs) :], derived):
                row.spearman.append(corrected_spearman(result.strategies[i], tasks))
                row.comparisons.append(result.strategies[i].cost.comparisons / len(tasks))
        by_preset[preset] = rows
    return n, by_preset


def corrected_spearman(strategy_run: StrategyRun, tasks: list[Task]) -> float:
    """Per-task Spearman of the slot-corrected grade levels of the judgments a run used."""
    by_id = {task.task_id: task for task in tasks}
    per_task = []
    for result in strategy_run.tasks:
        task = by_id[result.task_id]
        scores = corrected_grades(result.comparisons, task.candidate_ids, unplayed=sum(task.scale) / 2)
        per_task.append((scores, sorted(scores, key=lambda cid: -scores[cid]), task.human_scores()))
    return evaluate(per_task)["task_spearman"]


def smallest_budget(rows: list[Row], reference: Row, variant: str, gap: float) -> Row | None:
    """The smallest tested budget of ``variant`` whose mean paired gap to the reference is >= -gap."""
    for row in sorted((r for r in rows if r.variant == variant), key=lambda r: r.fraction):
        if statistics.fmean(paired_gap(row, reference)) >= -gap:
            return row
    return None


def fmt_share(row: Row | None, reference: Row, fractions: list[float]) -> str:
    """The comparisons ``row`` actually used, as a share of the reference's (``active`` may settle
    before spending its budget); ``> f`` when no tested budget got there."""
    if row is None:
        return f"> {max(fractions):g}"
    share = statistics.fmean(row.comparisons) / statistics.fmean(reference.comparisons)
    return ("≤ " if row.fraction == min(fractions) else "") + f"{share:.2f}"


def plot(results: dict[str, tuple[int, dict[str, list[Row]]]], path: Path) -> None:
    import matplotlib  # heavy; only the benchmark needs it

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    names = list(results)
    fig, axes = plt.subplots(len(names), len(PRESETS), figsize=(4.2 * len(PRESETS), 3.2 * len(names)), squeeze=False)
    colours = dict(
        zip(
            VARIANTS,
            [
                "tab:blue",
                "tab:cyan",
                "tab:purple",
                "tab:red",
                "tab:orange",
                "tab:brown",
                "tab:green",
                "tab:olive",
                "tab:pink",
            ],
        )
    )
    markers = dict(zip(BASELINES + FIXED, ["s", "D", "^", "v", "<"]))
    for i, name in enumerate(names):
        n, by_preset = results[name]
        for j, preset in enumerate(PRESETS):
            ax = axes[i][j]
            rows = by_preset[preset]
            reference = rows[0]
            ref_mean, ref_low, ref_high = interval(reference.spearman)
            ref_cost = statistics.fmean(reference.comparisons)
            ax.axhspan(ref_low, ref_high, color="grey", alpha=0.15)
            ax.axhline(ref_mean, color="black", lw=1, label="all-pairs bt:order=both (N(N−1) comparisons)")
            ax.axhline(ref_mean - TARGET_GAP, color="black", lw=0.8, ls=":", label="all-pairs − 0.01")
            ax.axvline(TARGET_FRACTION * ref_cost, color="grey", lw=0.8, ls="--", label="25% of all-pairs comparisons")
            for variant in VARIANTS:
                series = sorted((r for r in rows if r.variant == variant), key=lambda r: r.fraction)
                xs = [statistics.fmean(r.comparisons) for r in series]
                ci = [interval(r.spearman) for r in series]
                ax.plot(xs, [c[0] for c in ci], "-o", ms=3, color=colours[variant], label=variant)
                ax.fill_between(xs, [c[1] for c in ci], [c[2] for c in ci], color=colours[variant], alpha=0.15)
            for row in rows:
                if row.label in markers:
                    mean, low, high = interval(row.spearman)
                    ax.errorbar(
                        [statistics.fmean(row.comparisons)],
                        [mean],
                        yerr=[[mean - low], [high - mean]],
                        fmt=markers[row.label],
                        color="dimgrey",
                        ms=4,
                        label=row.label,
                    )
            ax.set_title(f"{name} (N={n}) · {preset}", fontsize=9)
            ax.set_xlabel("comparisons per task", fontsize=8)
            ax.set_ylabel("task Spearman", fontsize=8)
            ax.tick_params(labelsize=7)
    handles, labels = axes[0][0].get_legend_handles_labels()
    fig.legend(handles, labels, loc="lower center", ncol=4, fontsize=8)
    fig.tight_layout(rect=(0, 0.06, 1, 1))
    fig.savefig(path, dpi=110)
    plt.close(fig)


def report(
    results: dict[str, tuple[int, dict[str, list[Row]]]],
    args: argparse.Namespace,
    limits: dict[str, int],
    seconds: float,
    plot_name: str | None,
) -> tuple[str, list[tuple]]:
    """The Markdown report, and the (dataset, judge, variant, within-mean, within-CI, Δ) verdicts
    at the target budget."""
    fractions = args.fractions
    out = ["# Adaptive match-making: Spearman against comparisons (issue 8)", ""]
    out.append(
        f"Generated by `python benchmarks/adaptive.py --seeds {args.seeds} --scale {args.scale:g}"
        + (f" --datasets {args.datasets}" if args.datasets != ",".join(n for n, _ in DATASETS) else "")
        + (" --fixed-accuracy" if args.fixed_accuracy else "")
        + "` "
        f"in {seconds / 60:.1f} min wall, {args.cpu_minutes:.1f} min CPU (a shared 2-core machine; timings "
        "are indicative only)."
    )
    out.append("")
    out.append(
        "* Data: " + ", ".join(f"`{name}` (N={results[name][0]}, first {limits[name]} tasks)" for name in results) + "."
    )
    model = "model=fixed," if args.fixed_accuracy else ""
    out.append(
        f"* Judges: `sim:{model}preset=P,seed=S` for P in {', '.join(PRESETS)}; S = 0…{args.seeds - 1} is both the "
        "judge's and the strategies' seed, so every trial draws fresh judge noise."
    )
    out.append(
        "* Metric: `task_spearman` (per task, averaged). Intervals: 95% t-intervals over the seeds. "
        "Δ = strategy − all-pairs BT, paired by seed, with its 95% interval."
    )
    out.append(
        f"* Reference: `{REFERENCE}` — all N(N−1) ordered pairs. Adaptive budgets: "
        f"{', '.join(f'{f:g}' for f in fractions)} × N(N−1) comparisons (`comparisons=` per task), and 2/N "
        "(a debiased knockout's 2(N − 1)). Without `order=both` a pair is judged once, in a seeded random order; "
        "`active` picks N // 4 pairs per posterior update (`batch=`)."
    )
    out.append("")
    if args.fixed_accuracy:
        model_text = (
            "The fixed-accuracy sim judge's grades are the human scores plus noise (0.5 × the task's score "
            "spread) ordered to agree with its verdict, whatever the preset, so they stay informative even "
            "when the verdict is a first-slot coin flip; its error rate does not depend on how far apart two "
            "answers are."
        )
    else:
        model_text = (
            "The latent-perception sim judge perceives each answer once with noise (the same perception in "
            "every pair), and its grades inside a pair are that perception plus pair noise and ± half its "
            "first-slot bias; the verdict goes to the higher grade. So every strategy is capped by the "
            "perception noise (gpt4's is 0.73 spreads: all-pairs BT gets a per-task Spearman near 0.78 on "
            "realsumm, not 0.96 as with the fixed-accuracy model), a mean of pairwise grades converges on "
            "the perception whoever the opponents are, and a single-order grade carries the slot bias (falcon's "
            "is 2 spreads) unless both orders are played or it is corrected for."
        )
    out.append(
        "**Reading these results.** `bt`-aggregated variants use only the verdicts, as all-pairs BT does. "
        "The `aggregate=grades` variants average the grades the judge gives each answer inside its pairwise "
        f"judgments (seed 000's score averaging). {model_text} How much a real LLM judge's pairwise grades "
        "carry is an empirical question this benchmark cannot answer. `active` stops early once the results "
        "admit exactly one order (`settle=true`), so at small N it can use fewer comparisons than its budget: "
        "the comparisons column is what was used. Rows marked † re-score the `aggregate=grades` variant's own "
        "judgments with grade levels corrected for the judge's first-slot effect by least squares "
        "(`rankkit.strategies._graded`): what `aggregate=corrected` in `swiss`/`active` would give (neither picks "
        "its pairs from its aggregate). `double_elimination` (new) plays 2N − 2 single-order duels, a debiased "
        "knockout's cost, and scores slot-corrected grades."
    )
    out.append("")

    # Headline: the target (N >= 16) at the target fraction.
    out.append(f"## Headline: the target at {TARGET_FRACTION:.0%} of all-pairs comparisons, N ≥ {TARGET_MIN_N}")
    out.append("")
    out.append(
        "| dataset | judge | all-pairs BT (comparisons) | strategy at 25% (comparisons) | Spearman | Δ vs all-pairs [95% CI] | within 0.01? |"
    )
    out.append("|---|---|---|---|---|---|---|")
    verdicts = []
    for name, (n, by_preset) in results.items():
        if n < TARGET_MIN_N:
            continue
        for preset in PRESETS:
            rows = by_preset[preset]
            reference = rows[0]
            for row in rows:
                if row.fraction != TARGET_FRACTION:
                    continue
                gap_mean, gap_low, gap_high = interval(paired_gap(row, reference))
                met = gap_mean >= -TARGET_GAP
                sure = gap_low >= -TARGET_GAP
                verdict = "**yes** (CI too)" if sure else ("yes (mean; CI reaches below)" if met else "no")
                verdicts.append((name, preset, row.variant, met, sure, gap_mean))
                out.append(
                    f"| {name} | {preset} | {fmt_interval(reference.spearman)} ({statistics.fmean(reference.comparisons):.0f}) "
                    f"| `{row.variant}` ({statistics.fmean(row.comparisons):.0f}) | {fmt_interval(row.spearman)} "
                    f"| {gap_mean:+.3f} [{gap_low:+.3f}, {gap_high:+.3f}] | {verdict} |"
                )
    out.append("")
    out.append("**Verdict** (target: mean within 0.01 of all-pairs BT with ≤ 25% of its comparisons, N ≥ 16):")
    out.append("")
    if not verdicts:
        out.append(f"* No dataset in this run has N ≥ {TARGET_MIN_N}.")
    for variant in VARIANTS if verdicts else ():
        mine = [v for v in verdicts if v[2] == variant]
        met = [f"{v[0]}/{v[1]}" for v in mine if v[3]]
        missed = [f"{v[0]}/{v[1]} (Δ {v[5]:+.3f})" for v in mine if not v[3]]
        sure = [f"{v[0]}/{v[1]}" for v in mine if v[4]]
        line = f"* `{variant}`: met in {len(met)} of {len(mine)}"
        line += (": " + ", ".join(met)) if met else ""
        line += f"; not met in {', '.join(missed)}" if missed else ""
        line += (
            f"; with the whole 95% interval of Δ above −0.01 in {', '.join(sure)}"
            if sure
            else "; in no case is the whole 95% interval of Δ above −0.01"
        )
        out.append(line + ".")
    out.append("")

    # Headline 2: at a debiased knockout's own cost, against it.
    out.append(f"## Headline: at `{EQUAL_COST}`'s cost (2(N − 1) comparisons), against it, N ≥ {TARGET_MIN_N}")
    out.append("")
    out.append(
        f"| dataset | judge | `{EQUAL_COST}` (comparisons) | strategy (comparisons) | Spearman | Δ vs `{EQUAL_COST}` [95% CI] | no worse? |"
    )
    out.append("|---|---|---|---|---|---|---|")
    equal_verdicts = []
    for name, (n, by_preset) in results.items():
        if n < TARGET_MIN_N:
            continue
        for preset in PRESETS:
            rows = by_preset[preset]
            baseline = next((r for r in rows if r.label == EQUAL_COST), None)
            if baseline is None:
                continue
            for row in rows:
                at_cost = row.fraction is not None and math.isclose(row.fraction, knockout_fraction(n))
                if not (at_cost or row.label in FIXED):
                    continue
                gap_mean, gap_low, gap_high = interval(paired_gap(row, baseline))
                verdict = (
                    "**yes** (CI too)"
                    if gap_low >= 0
                    else ("yes (mean)" if gap_mean >= 0 else ("within noise" if gap_high >= 0 else "no"))
                )
                variant = row.variant or row.label
                equal_verdicts.append((name, preset, variant, gap_mean >= 0, gap_high >= 0, gap_mean))
                out.append(
                    f"| {name} | {preset} | {fmt_interval(baseline.spearman)} ({statistics.fmean(baseline.comparisons):.0f}) "
                    f"| `{variant}` ({statistics.fmean(row.comparisons):.0f}) | {fmt_interval(row.spearman)} "
                    f"| {gap_mean:+.3f} [{gap_low:+.3f}, {gap_high:+.3f}] | {verdict} |"
                )
    out.append("")
    out.append(
        f'**Verdict** (no worse than `{EQUAL_COST}` at its cost: mean Δ ≥ 0; "within noise" = mean below 0 '
        "but the 95% interval reaches 0):"
    )
    out.append("")
    for variant in VARIANTS + FIXED if equal_verdicts else ():
        mine = [v for v in equal_verdicts if v[2] == variant]
        met = [f"{v[0]}/{v[1]}" for v in mine if v[3]]
        noise = [f"{v[0]}/{v[1]} (Δ {v[5]:+.3f})" for v in mine if not v[3] and v[4]]
        missed = [f"{v[0]}/{v[1]} (Δ {v[5]:+.3f})" for v in mine if not v[4]]
        line = f"* `{variant}`: no worse in {len(met)} of {len(mine)}" + ((": " + ", ".join(met)) if met else "")
        line += f"; within noise in {', '.join(noise)}" if noise else ""
        line += f"; worse in {', '.join(missed)}" if missed else ""
        out.append(line + ".")
    out.append("")

    # The ratio at which all-pairs accuracy is matched.
    out.append("## Budget at which all-pairs accuracy is reached")
    out.append("")
    out.append(
        'For the smallest tested budget at which the mean paired Δ is ≥ −0.01 ("within") and ≥ 0 '
        '("matched"): the comparisons used there as a share of all-pairs BT\'s N(N−1). '
        f"`> {max(fractions):g}` = not reached at any tested budget; `≤` = reached already at the smallest."
    )
    out.append("")
    out.append("| dataset | judge | " + " | ".join(f"`{v}` within / matched" for v in VARIANTS) + " |")
    out.append("|---|---|" + "---|" * len(VARIANTS))
    for name, (n, by_preset) in results.items():
        for preset in PRESETS:
            rows = by_preset[preset]
            cells = []
            for variant in VARIANTS:
                within = smallest_budget(rows, rows[0], variant, TARGET_GAP)
                matched = smallest_budget(rows, rows[0], variant, 0.0)
                tested = fractions_for(fractions, n)
                cells.append(f"{fmt_share(within, rows[0], tested)} / {fmt_share(matched, rows[0], tested)}")
            out.append(f"| {name} (N={n}) | {preset} | " + " | ".join(cells) + " |")
    out.append("")

    if plot_name:
        out.append(f"![Spearman against comparisons]({plot_name})")
        out.append("")

    # Full tables.
    out.append("## All results")
    for name, (n, by_preset) in results.items():
        for preset in PRESETS:
            rows = by_preset[preset]
            reference = rows[0]
            out.append("")
            out.append(f"### {name} (N={n}) · {preset}")
            out.append("")
            out.append(
                "| strategy | comparisons/task | share of all-pairs | task Spearman [95% CI] | Δ vs all-pairs [95% CI] | s/task |"
            )
            out.append("|---|---|---|---|---|---|")
            ref_cost = statistics.fmean(reference.comparisons)
            for row in rows:
                cost = statistics.fmean(row.comparisons)
                gap = (
                    "—"
                    if row is reference
                    else "{:+.3f} [{:+.3f}, {:+.3f}]".format(*interval(paired_gap(row, reference)))
                )
                per_task = row.seconds / (len(row.spearman) * limits[name])
                out.append(
                    f"| `{row.label}` | {cost:.1f} | {cost / ref_cost:.2f} | {fmt_interval(row.spearman)} | {gap} | {per_task:.3f} |"
                )
    out.append("")
    return "\n".join(out), verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=20)
    parser.add_argument("--scale", type=float, default=1.0, help="multiply every dataset's task limit")
    parser.add_argument("--datasets", default=",".join(name for name, _ in DATASETS))
    parser.add_argument("--fractions", type=lambda s: [float(x) for x in s.split(",")], default=FRACTIONS)
    parser.add_argument("--out", default=str(RESULTS / "adaptive.md"))
    parser.add_argument("--no-plot", action="store_true")
    parser.add_argument(
        "--fixed-accuracy", action="store_true", help="use the fixed-accuracy simulator (sim:model=fixed,preset=P)"
    )
    args = parser.parse_args()
    if TARGET_FRACTION not in args.fractions:
        args.fractions = sorted(args.fractions + [TARGET_FRACTION])

    wanted = args.datasets.split(",")
    limits = {name: max(1, round(limit * args.scale)) for name, limit in DATASETS if name in wanted}
    missing = [name for name in limits if not (SHARED / name / "tasks.jsonl").exists()]
    if missing:
        sys.exit(f"datasets not found under {SHARED}: {', '.join(missing)}")
    started, cpu_started = time.perf_counter(), time.process_time()
    results = {}
    for name, limit in limits.items():
        t0 = time.perf_counter()
        results[name] = run_dataset(name, limit, args.seeds, args.fractions, args.fixed_accuracy)
        print(
            f"{name}: N={results[name][0]}, {limit} tasks x {args.seeds} seeds x {len(PRESETS)} judges "
            f"in {time.perf_counter() - t0:.0f} s",
            file=sys.stderr,
        )
    seconds = time.perf_counter() - started
    args.cpu_minutes = (time.process_time() - cpu_started) / 60

    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)
    plot_name = None
    if not args.no_plot:
        plot_path = out_path.with_suffix(".png")
        plot(results, plot_path)
        plot_name = plot_path.name
    text, verdicts = report(results, args, limits, seconds, plot_name)
    out_path.write_text(text, encoding="utf-8")
    print(text)
    print(f"\nwrote {out_path}" + (f" and {out_path.with_suffix('.png')}" if plot_name else ""), file=sys.stderr)


if __name__ == "__main__":
    main()
