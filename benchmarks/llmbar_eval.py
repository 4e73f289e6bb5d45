"""LLMBar evaluation of judges: recorded judges replayed, and panels of them (issue 6, item 5).

    python benchmarks/llmbar_eval.py                 # every section, writes benchmarks/results/llmbar_eval.md
    python benchmarks/llmbar_eval.py --sections b    # re-run one section; the others stay as they are

Datasets: ``shared/data/llmbar_natural``, ``llmbar_faireval`` and ``llmbar_llmeval2`` (pairwise,
two candidates, a human-preferred one). Everything goes through rankkit as a user runs it:
``replay:`` and ``panel:`` judge specs and :func:`rankkit.judge_report.judge_report`, which asks
every pair in both presentation orders.

Sections (each a function returning Markdown; ``SECTIONS`` maps a letter to it, so a later section
is one more function and one more entry):

* **a** — each recorded judge replayed (``on_miss=tie``: an unparsed recorded answer is a counted
  miss scored as a coin flip): accuracy in one order (LLMBar's average accuracy over the two
  orders) vs both orders (the two verdicts combined; draws when they disagree), first-slot share,
  order consistency.
* **b** — a panel of the recorded judges (every judge votes in both orders) at agreement thresholds
  1.0, 0.75 and 0.5, against the best single judge; also a panel without GPT-4.
* **c** — reserved for live SmolLM2 pointwise / pairwise / PREPAIR / calibrated (another module).

The results file keeps each section between ``<!-- section X -->`` markers; running a subset of
sections replaces only their blocks.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results" / "llmbar_eval.md"
DATASETS = ("llmbar_natural", "llmbar_faireval", "llmbar_llmeval2")
#: Pairwise methods recorded for every judge: Vanilla only exists on Natural; the other two on all three.
METHODS = {"llmbar_natural": ("Vanilla", "Vanilla_NoRules", "Metrics_Reference"),
           "llmbar_faireval": ("Vanilla_NoRules", "Metrics_Reference"),
           "llmbar_llmeval2": ("Vanilla_NoRules", "Metrics_Reference")}


def fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_ci(metric: dict[str, Any]) -> str:
    if metric["value"] is None:
        return "–"
    if metric["low"] is None:
        return fmt(metric["value"])
    return f"{metric['value']:.3f} [{metric['low']:.3f}, {metric['high']:.3f}]"


def judges_of(dataset: str, method: str) -> list[str]:
    from rankkit.judges.replay import recorded_labels

    labels = recorded_labels(DATA / dataset / "judgments.jsonl")
    return sorted(judge for judge, m in labels if m == method)


def replay_spec(dataset: str, judge: str, method: str, separator: str = ",") -> str:
    path = DATA / dataset / "judgments.jsonl"
    return separator.join([f"replay:{path}", f"judge={judge}", f"method={method}", "on_miss=tie"])


def report_for(spec: str, dataset: str, resamples: int, seed: int) -> dict[str, Any]:
    from rankkit.judge_report import judge_report
    from rankkit.judges import make_judge
    from rankkit.tasks import load_tasks

    tasks = load_tasks(DATA / dataset / "tasks.jsonl")
    judge = make_judge(spec)
    try:
        return judge_report(tasks, judge, resamples=resamples, seed=seed, judge_spec=spec,
                            data=str(DATA / dataset / "tasks.jsonl"))
    finally:
        judge.close()


# ---------------------------------------------------------------------------------------------
# Section (a): each recorded judge replayed


def section_a(resamples: int, seed: int, headline: dict[str, Any]) -> str:
    lines = ["## (a) Recorded judges replayed: one order vs both orders", "",
             "`--judge replay:judgments.jsonl,judge=J,method=M,on_miss=tie`, every pair asked in both orders. "
             "*one order*: LLMBar's average accuracy over the two orders (a miss or tie scores ½). "
             "*both orders, decided*: the two verdicts combined — kept when they agree (or only one is "
             "decisive), a draw when they disagree — accuracy over the decided pairs (n = how many). "
             "*both orders, strict*: the same over all pairs, a draw counting as wrong. 95% bootstrap "
             f"intervals over tasks ({resamples} resamples, seed {seed}).", ""]
    for dataset in DATASETS:
        lines += [f"### {dataset}", "",
                  "| judge | method | acc, one order [95% CI] | acc, both orders, decided (n) | acc, both orders, strict "
                  "| first-slot share | order consistency | misses |",
                  "|---|---|---|---|---|---|---|---|"]
        for method in METHODS[dataset]:
            for judge in judges_of(dataset, method):
                report = report_for(replay_spec(dataset, judge, method), dataset, resamples, seed)
                m = report["metrics"]
                headline.setdefault((dataset, method), {})[judge] = m
                decided = m["accuracy_both"]
                lines.append(
                    f"| {judge} | {method} | {fmt_ci(m['accuracy_single'])} | {fmt(decided['value'])} "
                    f"({int(decided['n'] or 0)}) | {fmt(m['accuracy_both_strict']['value'])} "
                    f"| {fmt(m['first_slot']['value'])} | {fmt(m['order_consistency']['value'])} "
                    f"| {report['counts']['misses']} |")
                print(f"(a) {dataset} {method} {judge}: one order {fmt(m['accuracy_single']['value'])}, "
                      f"both decided {fmt(decided['value'])}, strict {fmt(m['accuracy_both_strict']['value'])}",
                      flush=True)
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Section (b): panels of the recorded judges


def panel_spec(dataset: str, method: str, judges: list[str]) -> str:
    members = "+".join(replay_spec(dataset, judge, method, separator=";") for judge in judges)
    return f"panel:{members},threshold=0.5"


def section_b(resamples: int, seed: int, headline: dict[str, Any]) -> str:
    lines = ["## (b) Panels of the recorded judges at agreement thresholds", "",
             "`--judge panel:replay:...;judge=J1;method=M+replay:...;judge=J2;method=M+...,threshold=T`: every "
             "member votes on every pair in both orders; the majority wins when its share of the votes "
             "reaches T, else the decision is a draw. *acc (draw = ½)* is what a strategy gets in expectation "
             "when it breaks draws by a coin; *decided* is accuracy over the non-draws; *strict* counts a draw "
             "as wrong. *best single* is the member with the highest one-order accuracy (its strict both-order "
             "accuracy in brackets). α: Krippendorff's alpha (nominal) between the members' votes.", "",
             "| dataset | method | panel | α | threshold | draws | acc (draw = ½) | acc, decided | acc, strict "
             "| best single: one order (strict) |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for dataset in DATASETS:
        for method in METHODS[dataset]:
            everyone = judges_of(dataset, method)
            variants = [("all " + str(len(everyone)), everyone),
                        (f"all but GPT-4 ({len(everyone) - 1})", [j for j in everyone if j != "GPT-4"])]
            for name, judges in variants:
                report = report_for(panel_spec(dataset, method, judges), dataset, resamples, seed)
                section = report["panel"]
                members = {m["member"]: m["metrics"] for m in section["members"]}
                best_name, best = max(members.items(), key=lambda item: item[1]["accuracy_single"]["value"])
                best_label = re.search(r"judge=([^,)]+)", best_name).group(1)
                best_text = (f"{best_label} {fmt(best['accuracy_single']['value'])} "
                             f"({fmt(best['accuracy_both_strict']['value'])})")
                for row in section["thresholds"]:
                    lines.append(
                        f"| {dataset} | {method} | {name} | {fmt(section['krippendorff_alpha'], 2)} "
                        f"| {row['threshold']:g} | {row['draws']}/{row['decisions']} | {fmt(row['accuracy'])} "
                        f"| {fmt(row['accuracy_decided'])} | {fmt(row['accuracy_strict'])} | {best_text} |")
                    if row["threshold"] == 0.5:
                        variant = "without_gpt4" if "but" in name else "all"
                        headline.setdefault("panels", {}).setdefault((dataset, method), {})[variant] = (
                            row, best_label, best)
                at_half = next(r for r in section["thresholds"] if r["threshold"] == 0.5)
                print(f"(b) {dataset} {method} panel {name}: at 0.5 acc {fmt(at_half['accuracy'])} "
                      f"(strict {fmt(at_half['accuracy_strict'])}, draws {at_half['draws']}) vs best single "
                      f"{best_text}", flush=True)
    lines.append("")
    return "\n".join(lines)


SECTIONS: dict[str, Callable[[int, int, dict[str, Any]], str]] = {"a": section_a, "b": section_b}


def headline_text(headline: dict[str, Any]) -> str:
    """Panel at 0.5 vs its best single member, for the full panel and the panel without GPT-4."""
    panels = headline.get("panels")
    if not panels:
        return ""
    lines = ["## Headline: panel at threshold 0.5 vs the best single judge", "",
             "Accuracy with a draw counted ½ (what a coin tie-break gets) and, in brackets, strict (a draw or "
             "a disagreement between the two orders counts as wrong). The best single judge is the panel "
             "member with the highest one-order accuracy; its strict figure combines its own two orders.", "",
             "| dataset | method | panel of all | best single judge | panel without GPT-4 | its best member |",
             "|---|---|---|---|---|---|"]

    def pair(row_or_metrics: dict[str, Any], is_row: bool) -> str:
        if is_row:
            return f"{fmt(row_or_metrics['accuracy'])} ({fmt(row_or_metrics['accuracy_strict'])})"
        return (f"{fmt(row_or_metrics['accuracy_single']['value'])} "
                f"({fmt(row_or_metrics['accuracy_both_strict']['value'])})")

    for (dataset, method), variants in panels.items():
        cells = []
        for variant in ("all", "without_gpt4"):
            row, label, best = variants[variant]
            cells += [pair(row, True), f"{label} {pair(best, False)}"]
        lines.append(f"| {dataset} | {method} | " + " | ".join(cells) + " |")
    return "\n".join(lines + [""])


def merge_blocks(existing: str, blocks: dict[str, str]) -> str:
    """Replace (or add) the ``<!-- section X -->`` blocks of the results file."""
    found = dict(re.findall(r"<!-- section (\w+) -->\n(.*?)<!-- /section \1 -->\n", existing, flags=re.S))
    found.update(blocks)
    header = ("# LLMBar evaluation of judges\n\n"
              "Generated by `python benchmarks/llmbar_eval.py` from `shared/data/llmbar_*` (LLMBar, "
              "princeton-nlp/LLMBar@900616b: 100 Natural, 66 FairEval, 199 LLMEval² pairs). Sections (a) and "
              "(b) replay the judgments recorded in the LLMBar repository — no model is run, so they take "
              "seconds; the figures do not depend on the machine.\n\n")
    body = "".join(f"<!-- section {key} -->\n{found[key]}<!-- /section {key} -->\n" for key in sorted(found))
    return header + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated sections (default: all)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    missing = [d for d in DATASETS if not (DATA / d / "judgments.jsonl").exists()]
    if missing:
        print(f"shared data not found under {DATA}: {', '.join(missing)}", file=sys.stderr)
        return 1
    wanted = [s.strip() for s in args.sections.split(",") if s.strip()]
    unknown = [s for s in wanted if s not in SECTIONS]
    if unknown:
        parser.error(f"unknown section(s) {', '.join(unknown)} (known: {', '.join(SECTIONS)})")
    headline: dict[str, Any] = {}
    blocks = {}
    for key in wanted:
        started = time.perf_counter()
        blocks[key] = SECTIONS[key](args.resamples, args.seed, headline)
        print(f"section {key}: {time.perf_counter() - started:.1f} s", file=sys.stderr)
    if "b" in blocks:
        blocks["b"] = headline_text(headline) + "\n" + blocks["b"]
    existing = args.out.read_text(encoding="utf-8") if args.out.exists() else ""
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(merge_blocks(existing, blocks), encoding="utf-8")
    print(headline_text(headline))
    print(f"written to {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
