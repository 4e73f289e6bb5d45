"""Goals P8 and P2′ under the simulator's three readings of a k-way choice (``sim:kway=...``).

The simulator's k-way choice can carry every shown answer's grade (``grades``, the default),
the bare choice (``choice``) or P(best) per slot (``probabilities``, what a logprob judge gives;
the softmax temperature is calibrated at k = 2, ``docs/judges-sim.md``). Which one is realistic
decides whether k-way judging is worth it, so this re-measures both k-way goals under each::

    python benchmarks/kway_readings.py                       # P8 on 5 datasets, P2′ at N = 100, 3 seeds
    python benchmarks/kway_readings.py --parts p2 --frontier-seeds 1

* **P8** (``benchmarks/kway.py``): ``setwise_knockout:k=4,order=both`` within 0.01 task Spearman of
  ``knockout:order=both``, equal or better top-1, at ≤ 50% of its judge calls; on the N-way
  datasets of the shared data (skipped, with a message, where they are absent), seeds 0..S−1 and
  the fresh seeds S..2S−1.
* **P2′** (``benchmarks/frontier.py``): some family within 0.01 of all-pairs BT's task Spearman at
  ≤ 5% of its judgments, on planted-strength tasks of N = 100 (no data needed). Pairwise families
  do not read k-way judgments, so they (and BT) are measured once.

Pairwise judgments do not depend on the reading; the script checks that the baseline's figures
are identical under all three. Writes ``benchmarks/results/kway_readings.md``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import frontier  # the benchmarks are scripts, not a package: imported from their folder
import kway

from rankkit.judges import make_judge
from rankkit.judges.simulated.sim_model import KWAY_READINGS, LATENT_PRESETS, latent_pair_accuracy

RESULTS = kway.RESULTS
PARTS = ("p8", "p2")
#: The families of benchmarks/frontier.py that read k-way judgments; the others are pairwise.
PAIRWISE_FAMILIES = ("swiss", "swiss (grades)", "active")
#: Summarisation datasets among the P8 datasets (the issue's "held-back summarisation tasks").
SUMMARISATION = ("newsroom", "realsumm")


def p8_tables(args, datasets: list[str], presets: list[str], started: float) -> dict:
    """(reading, seeds label) -> {(preset, dataset): each P8 spec's figures}."""
    specs = [kway.BASELINE, *kway.KWAY_SPECS]
    seed_sets = seed_labels(args)
    tables: dict = {}
    for reading in args.readings:
        for label, seeds in seed_sets.items():
            table = tables[(reading, label)] = {}
            for preset in presets:
                for dataset in datasets:
                    table[(preset, dataset)] = kway.measure(dataset, preset, seeds, specs, reading, args.data)
            print(f"P8 {reading} seeds {label} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    for label in seed_sets:  # the pairwise baseline reads no k-way judgment: the same in every reading
        bases = {
            reading: {
                key: [rows[kway.BASELINE][name] for name in ("task_spearman", "top1_accuracy", "calls")]
                for key, rows in tables[(reading, label)].items()
            }
            for reading in args.readings
        }
        if any(b != bases[args.readings[0]] for b in bases.values()):
            raise AssertionError(
                "the pairwise baseline differs between readings: the sim's pairwise judgments must not depend on kway"
            )
    return tables


def seed_labels(args) -> dict[str, range]:
    """P8's seed sets by label: seeds 0..S−1, then (unless ``--no-fresh``) the fresh seeds S..2S−1."""
    sets = {f"0–{args.seeds - 1}": range(args.seeds)}
    if args.fresh:
        sets[f"{args.seeds}–{2 * args.seeds - 1}"] = range(args.seeds, 2 * args.seeds)
    return sets


def p2_tables(args, presets: list[str], started: float) -> dict:
    """(reading, preset) -> each frontier spec's figures at N = ``args.size``; pairwise specs once."""
    n = args.size
    fams = frontier.families(n)
    pairwise = [frontier.REFERENCE, *(s for name in PAIRWISE_FAMILIES for s in fams[name])]
    kway_specs = [s for name, family in fams.items() if name not in PAIRWISE_FAMILIES for s in family]
    tables: dict = {}
    for preset in presets:
        shared = frontier.measure(n, preset, args.frontier_seeds, "grades", pairwise)
        for reading in args.readings:
            tables[(reading, preset)] = {
                **shared,
                **frontier.measure(n, preset, args.frontier_seeds, reading, kway_specs),
            }
        print(f"P2′ {preset} done ({time.perf_counter() - started:.0f} s)", file=sys.stderr)
    return tables


def p8_summary(tables, datasets: list[str], presets: list[str], readings: list[str], labels: list[str]) -> list[str]:
    """One row per preset and seed set: the candidate against the baseline under each reading."""
    header = (
        "| preset | seeds | base spearman | "
        + " | ".join(f"`{r}`: Δ spearman | Δ top1 | P8 (datasets)" for r in readings)
        + " | summarisation Δ spearman ("
        + ", ".join(f"`{r}`" for r in readings)
        + ") |"
    )
    lines = [header, "|---|---|---:|" + "---:|---:|:---:|" * len(readings) + "---|"]
    for preset in presets:
        for label in labels:
            cells = []
            base_spearman = None
            summarisation = []
            for reading in readings:
                table = tables[(reading, label)]
                per = [table[(preset, d)] for d in datasets]
                mean = kway.mean_rows(per)
                base, mine = mean[kway.BASELINE], mean[kway.P8_CANDIDATE]
                base_spearman = base["task_spearman"]
                held = sum(kway.meets_p8(rows[kway.P8_CANDIDATE], rows[kway.BASELINE]) for rows in per)
                cells.append(
                    f"{mine['task_spearman'] - base['task_spearman']:+.3f} | "
                    f"{mine['top1_accuracy'] - base['top1_accuracy']:+.3f} | "
                    f"{'✓' if kway.meets_p8(mine, base) else '✗'} ({held}/{len(datasets)})"
                )
                summ = [table[(preset, d)] for d in datasets if d in SUMMARISATION]
                summarisation.append(
                    " / ".join(
                        f"{rows[kway.P8_CANDIDATE]['task_spearman'] - rows[kway.BASELINE]['task_spearman']:+.3f}"
                        for rows in summ
                    )
                    or "–"
                )
            lines.append(
                f"| {preset} | {label} | {base_spearman:.3f} | "
                + " | ".join(cells)
                + " | "
                + "; ".join(summarisation)
                + " |"
            )
    return lines + [""]


def p2_summary(tables, presets: list[str], readings: list[str], n: int) -> list[str]:
    """Per preset: the pairwise families' best (every reading) and each reading's best k-way family."""
    fams = frontier.families(n)
    lines = [
        "| preset | BT spearman | best pairwise family | "
        + " | ".join(f"`{r}`: best k-way family" for r in readings)
        + " | P2′ ("
        + ", ".join(readings)
        + ") |",
        "|---|---:|---|" + "---|" * len(readings) + "---|",
    ]
    for preset in presets:
        cells, verdicts = [], []
        pairwise_best = best_reached(tables[(readings[0], preset)], {k: fams[k] for k in PAIRWISE_FAMILIES}, n)
        for reading in readings:
            rows = tables[(reading, preset)]
            kbest = best_reached(rows, {k: f for k, f in fams.items() if k not in PAIRWISE_FAMILIES}, n)
            cells.append(describe(kbest))
            overall = min((x for x in (pairwise_best, kbest) if x[1] is not None), key=lambda x: x[1], default=None)
            verdicts.append("✓" if overall and overall[1] <= 0.05 else "✗")
        rows = tables[(readings[0], preset)]
        lines.append(
            f"| {preset} | {rows[frontier.REFERENCE]['spearman']:.3f} | {describe(pairwise_best)} | "
            + " | ".join(cells)
            + " | "
            + " ".join(verdicts)
            + " |"
        )
    return lines + [""]


def best_reached(rows, families: dict[str, list[str]], n: int) -> tuple[str | None, float | None, float]:
    """(family, fraction, token fraction) of the cheapest family reaching BT; (None, None, best gap) if none."""
    reached = []
    gaps = []
    for name, family in families.items():
        spec, fraction, other = frontier.reached(rows, family, n)
        if spec:
            reached.append((name, fraction, other))
        else:
            gaps.append(other)
    if reached:
        return min(reached, key=lambda x: x[1])
    return None, None, max(gaps)


def describe(best: tuple[str | None, float | None, float]) -> str:
    name, fraction, other = best
    if name is None:
        return f"none reaches BT (best gap {other:+.3f})"
    return f"{name}: {100 * fraction:.1f}% (tokens × {100 * other:.1f}%)"


def p2_detail(tables, presets: list[str], readings: list[str], n: int) -> list[str]:
    """Each k-way family under each reading: the fraction reaching BT, or its best gap."""
    fams = {k: f for k, f in frontier.families(n).items() if k not in PAIRWISE_FAMILIES}
    lines = ["| preset | reading | " + " | ".join(fams) + " |", "|---|---|" + "---|" * len(fams)]
    for preset in presets:
        for reading in readings:
            rows = tables[(reading, preset)]
            cells = []
            for family in fams.values():
                spec, fraction, other = frontier.reached(rows, family, n)
                cells.append(f"{100 * fraction:.1f}%" if spec else f"✗ ({other:+.3f} at {100 * fraction:.1f}%)")
            lines.append(f"| {preset} | `{reading}` | " + " | ".join(cells) + " |")
    return lines + [""]


def temperatures_table(presets: list[str]) -> list[str]:
    lines = ["| preset | pairwise accuracy (k = 2, LLMBar pairs) | τ (sd) |", "|---|---:|---:|"]
    for preset in presets:
        judge = make_judge(f"sim:preset={preset},kway=probabilities")
        params = LATENT_PRESETS[preset]
        accuracy = latent_pair_accuracy(params.perception, params.pair_noise, params.slot_bias)
        lines.append(f"| {preset} | {accuracy:.3f} | {judge.kway_temperature():.3f} |")
    return lines + [""]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--data", type=Path, default=kway.SHARED, help="the shared data folder (P8's datasets)")
    parser.add_argument("--datasets", default=",".join(kway.DATASETS))
    parser.add_argument("--presets", default=",".join(kway.PRESETS))
    parser.add_argument("--readings", default=",".join(KWAY_READINGS))
    parser.add_argument("--seeds", type=int, default=3, help="P8: seeds 0..S-1, then fresh seeds S..2S-1")
    parser.add_argument("--no-fresh", dest="fresh", action="store_false", help="P8: seeds 0..S-1 only")
    parser.add_argument("--size", type=int, default=100, help="P2′: the number of candidates per task")
    parser.add_argument("--frontier-seeds", type=int, default=3)
    parser.add_argument("--parts", default=",".join(PARTS))
    parser.add_argument("--out", default=str(RESULTS / "kway_readings.md"), help="the report (Markdown)")
    args = parser.parse_args()
    args.readings = args.readings.split(",")
    unknown = [r for r in args.readings if r not in KWAY_READINGS]
    if unknown:
        sys.exit(f"unknown reading(s) {', '.join(unknown)} (known: {', '.join(KWAY_READINGS)})")
    datasets, presets, parts = args.datasets.split(","), args.presets.split(","), args.parts.split(",")
    started = time.perf_counter()
    lines: list[str] = []
    p8 = p2 = None
    if "p8" in parts:
        missing = [d for d in datasets if not (args.data / d / "tasks.jsonl").exists()]
        if missing:
            print(f"P8 skipped: datasets not found under {args.data}: {', '.join(missing)}", file=sys.stderr)
        else:
            p8 = p8_tables(args, datasets, presets, started)
    if "p2" in parts:
        p2 = p2_tables(args, presets, started)
    elapsed = time.perf_counter() - started
    command = (
        "python benchmarks/kway_readings.py"
        + "".join(
            f" --{name.replace('_', '-')} {value}"
            for name, value, default in (
                ("datasets", args.datasets, ",".join(kway.DATASETS)),
                ("presets", args.presets, ",".join(kway.PRESETS)),
                ("readings", ",".join(args.readings), ",".join(KWAY_READINGS)),
                ("seeds", args.seeds, 3),
                ("size", args.size, 100),
                ("frontier_seeds", args.frontier_seeds, 3),
                ("parts", args.parts, ",".join(PARTS)),
                ("out", args.out, str(RESULTS / "kway_readings.md")),
            )
            if value != default
        )
        + ("" if args.fresh else " --no-fresh")
    )
    lines += [
        "# P8 and P2′ under the three k-way readings",
        "",
        f"Made by `{command}` ({elapsed:.0f} s on a shared 2-core machine). The simulator's k-way choice "
        "(latent model; k = 2 is its pairwise model) carries every shown answer's grade (`grades`), the bare "
        "choice (`choice`), or P(best) per slot (`probabilities`: the softmax of the same grades, in units of "
        "the task's human-score spread, at a temperature τ fitted per preset so that at k = 2 the judge's mean "
        "confidence in its own choice equals its pairwise accuracy — `docs/judges-sim.md`). Strategies score a "
        "slot by its grade, by k for the chosen slot and 0 for the others, or by k·P(best). The choice itself, "
        "and every ranking, is the same in all three readings; pairwise judgments do not depend on the reading "
        "(checked: the baselines' figures are identical).",
        "",
    ]
    lines += temperatures_table(presets)
    if p8 is not None:
        labels = list(seed_labels(args))
        lines += [
            "## P8: `setwise_knockout:k=4,order=both` against `knockout:order=both`",
            "",
            f"Datasets {', '.join(datasets)}; means over datasets (each weighs the same) of the means over "
            "seeds. P8 holds where the candidate is within 0.01 task Spearman, has equal or better top-1 and "
            f"uses ≤ 50% of the baseline's judge calls (the calls are the same in every reading); `(m/{len(datasets)})`: "
            "the datasets on which it holds. The last column gives the candidate's Spearman Δ on the "
            f"summarisation datasets ({' / '.join(d for d in datasets if d in SUMMARISATION)}), one group per "
            "reading, separated by `;`.",
            "",
        ]
        lines += p8_summary(p8, datasets, presets, args.readings, labels)
        for reading in args.readings:
            for label in labels:
                lines += kway.p8_section(
                    p8[(reading, label)], datasets, presets, f"### `kway={reading}`, seeds {label}"
                )
    elif "p8" in parts:
        lines += ["## P8", "", f"Skipped: the datasets were not found under `{args.data}`.", ""]
    if p2 is not None:
        n = args.size
        lines += [
            f"## P2′: within {frontier.WITHIN} of all-pairs BT at ≤ 5% of its judgments (N = {n})",
            "",
            f"Planted-strength tasks ({frontier.TASKS.get(n, '?')} of N = {n} per seed, fresh every seed), "
            f"{args.frontier_seeds} seeds. The pairwise families (swiss, swiss with grades, active) read no "
            "k-way judgment, so their column holds for every reading; `tokens ×` weighs each k-way judgment by "
            "k/2. P2′ ✓ where the cheapest family (pairwise or k-way) reaching BT needs ≤ 5%. `listwise` reads "
            "rankings, which are the same in every reading, so its figures are too.",
            "",
        ]
        lines += p2_summary(p2, presets, args.readings, n)
        lines += [
            "### Each k-way family: the smallest fraction of BT's judgments within 0.01 of it "
            "(✗: never, with its best gap)",
            "",
        ]
        lines += p2_detail(p2, presets, args.readings, n)
    text = "\n".join(lines)
    Path(args.out).write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
