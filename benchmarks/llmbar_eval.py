"""LLMBar evaluation of judges: recorded judges replayed, and panels of them (issue 6, item 5).

    python benchmarks/llmbar_eval.py                 # every section, writes benchmarks/results/llmbar_eval.md
    python benchmarks/llmbar_eval.py --sections b    # re-run one section; the others stay as they are

Datasets: ``shared/data/llmbar_natural``, ``llmbar_faireval`` and ``llmbar_llmeval2`` (pairwise,
two candidates, a human-preferred one). Everything goes through rankkit as a user runs it:
``replay:`` and ``panel:`` judge specs and :func:`rankkit.reports.judge_report.judge_report`, which asks
every pair in both presentation orders.

Sections (each a function returning Markdown; ``SECTIONS`` maps a letter to it, so a later section
is one more function and one more entry):

* **a** — each recorded judge replayed (``on_miss=tie``: an unparsed recorded answer is a counted
  miss scored as a coin flip): accuracy in one order (LLMBar's average accuracy over the two
  orders) vs both orders (the two verdicts combined; draws when they disagree), first-slot share,
  order consistency.
* **b** — a panel of the recorded judges (every judge votes in both orders) at agreement thresholds
  1.0, 0.75 and 0.5, against the best single judge; also a panel without GPT-4.
* **c** — live SmolLM2-135M (``smollm2``, logprob mode) on the first ``--limit`` pairs of each set
  (default 12, so 36 pairs; PREPAIR generates text and is the slow part): pointwise, pairwise,
  pairwise with ``calibrate=true``, the prior-balancing threshold of Liusie et al. estimated on the
  task set, PREPAIR, PREPAIR calibrated. One temporary judgment cache is shared, so calibration and
  the prior threshold reuse the raw forward passes.

The results file keeps each section between ``<!-- section X -->`` markers; running a subset of
sections replaces only their blocks.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from rankkit.judgments.memo import JudgmentMemo

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results" / "llmbar_eval.md"
DATASETS = ("llmbar_natural", "llmbar_faireval", "llmbar_llmeval2")
#: Pairwise methods recorded for every judge: Vanilla only exists on Natural; the other two on all three.
METHODS = {
    "llmbar_natural": ("Vanilla", "Vanilla_NoRules", "Metrics_Reference"),
    "llmbar_faireval": ("Vanilla_NoRules", "Metrics_Reference"),
    "llmbar_llmeval2": ("Vanilla_NoRules", "Metrics_Reference"),
}


def fmt(value: float | None, digits: int = 3) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def fmt_ci(metric: dict[str, Any]) -> str:
    if metric["value"] is None:
        return "–"
    if metric["low"] is None:
        return fmt(metric["value"])
    return f"{metric['value']:.3f} [{metric['low']:.3f}, {metric['high']:.3f}]"


def judges_of(dataset: str, method: str) -> list[str]:
    from rankkit.judges.simulated.replay import recorded_labels

    labels = recorded_labels(DATA / dataset / "judgments.jsonl")
    return sorted(judge for judge, m in labels if m == method)


def replay_spec(dataset: str, judge: str, method: str, separator: str = ",") -> str:
    path = DATA / dataset / "judgments.jsonl"
    return separator.join([f"replay:{path}", f"judge={judge}", f"method={method}", "on_miss=tie"])


def report_for(spec: str, dataset: str, resamples: int, seed: int) -> dict[str, Any]:
    from rankkit.data.tasks import load_tasks
    from rankkit.judges import make_judge
    from rankkit.reports.judge_report import judge_report

    tasks = load_tasks(DATA / dataset / "tasks.jsonl")
    judge = make_judge(spec)
    try:
        return judge_report(
            tasks, judge, resamples=resamples, seed=seed, judge_spec=spec, data=str(DATA / dataset / "tasks.jsonl")
        )
    finally:
        judge.close()


# ---------------------------------------------------------------------------------------------
# Section (a): each recorded judge replayed


def section_a(resamples: int, seed: int, headline: dict[str, Any]) -> str:
    lines = [
        "## (a) Recorded judges replayed: one order vs both orders",
        "",
        "`--judge replay:judgments.jsonl,judge=J,method=M,on_miss=tie`, every pair asked in both orders. "
        "*one order*: LLMBar's average accuracy over the two orders (a miss or tie scores ½). "
        "*both orders, decided*: the two verdicts combined — kept when they agree (or only one is "
        "decisive), a draw when they disagree — accuracy over the decided pairs (n = how many). "
        "*both orders, strict*: the same over all pairs, a draw counting as wrong. 95% bootstrap "
        f"intervals over tasks ({resamples} resamples, seed {seed}).",
        "",
    ]
    for dataset in DATASETS:
        lines += [
            f"### {dataset}",
            "",
            "| judge | method | acc, one order [95% CI] | acc, both orders, decided (n) | acc, both orders, strict "
            "| first-slot share | order consistency | misses |",
            "|---|---|---|---|---|---|---|---|",
        ]
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
                    f"| {report['counts']['misses']} |"
                )
                print(
                    f"(a) {dataset} {method} {judge}: one order {fmt(m['accuracy_single']['value'])}, "
                    f"both decided {fmt(decided['value'])}, strict {fmt(m['accuracy_both_strict']['value'])}",
                    flush=True,
                )
        lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Section (b): panels of the recorded judges


def panel_spec(dataset: str, method: str, judges: list[str]) -> str:
    members = "+".join(replay_spec(dataset, judge, method, separator=";") for judge in judges)
    return f"panel:{members},threshold=0.5"


def section_b(resamples: int, seed: int, headline: dict[str, Any]) -> str:
    lines = [
        "## (b) Panels of the recorded judges at agreement thresholds",
        "",
        "`--judge panel:replay:...;judge=J1;method=M+replay:...;judge=J2;method=M+...,threshold=T`: every "
        "member votes on every pair in both orders; the majority wins when its share of the votes "
        "reaches T, else the decision is a draw. *acc (draw = ½)* is what a strategy gets in expectation "
        "when it breaks draws by a coin; *decided* is accuracy over the non-draws; *strict* counts a draw "
        "as wrong. *best single* is the member with the highest one-order accuracy (its strict both-order "
        "accuracy in brackets). α: Krippendorff's alpha (nominal) between the members' votes.",
        "",
        "| dataset | method | panel | α | threshold | draws | acc (draw = ½) | acc, decided | acc, strict "
        "| best single: one order (strict) |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for dataset in DATASETS:
        for method in METHODS[dataset]:
            everyone = judges_of(dataset, method)
            variants = [
                ("all " + str(len(everyone)), everyone),
                (f"all but GPT-4 ({len(everyone) - 1})", [j for j in everyone if j != "GPT-4"]),
            ]
            for name, judges in variants:
                report = report_for(panel_spec(dataset, method, judges), dataset, resamples, seed)
                section = report["panel"]
                members = {m["member"]: m["metrics"] for m in section["members"]}
                best_name, best = max(members.items(), key=lambda item: item[1]["accuracy_single"]["value"])
                best_label = re.search(r"judge=([^,)]+)", best_name).group(1)
                best_text = (
                    f"{best_label} {fmt(best['accuracy_single']['value'])} "
                    f"({fmt(best['accuracy_both_strict']['value'])})"
                )
                for row in section["thresholds"]:
                    lines.append(
                        f"| {dataset} | {method} | {name} | {fmt(section['krippendorff_alpha'], 2)} "
                        f"| {row['threshold']:g} | {row['draws']}/{row['decisions']} | {fmt(row['accuracy'])} "
                        f"| {fmt(row['accuracy_decided'])} | {fmt(row['accuracy_strict'])} | {best_text} |"
                    )
                    if row["threshold"] == 0.5:
                        variant = "without_gpt4" if "but" in name else "all"
                        headline.setdefault("panels", {}).setdefault((dataset, method), {})[variant] = (
                            row,
                            best_label,
                            best,
                        )
                at_half = next(r for r in section["thresholds"] if r["threshold"] == 0.5)
                print(
                    f"(b) {dataset} {method} panel {name}: at 0.5 acc {fmt(at_half['accuracy'])} "
                    f"(strict {fmt(at_half['accuracy_strict'])}, draws {at_half['draws']}) vs best single "
                    f"{best_text}",
                    flush=True,
                )
    lines.append("")
    return "\n".join(lines)


# ---------------------------------------------------------------------------------------------
# Section (c): SmolLM2 live — pointwise, pairwise, calibrated, PREPAIR

#: Pairs per dataset judged live in section (c) (``--limit``).
LIVE_LIMIT = 12
#: Length cap of a PREPAIR analysis in section (c): SmolLM2 writes ~20 tokens/s on 2 shared cores.
ANALYSIS_TOKENS = 48


def pointwise_accuracy(tasks: list[Any], judge: Any, cache: Any) -> tuple[float, int]:
    """Accuracy of deciding each pair by the two pointwise grades (equal grades score ½)."""
    from rankkit.reports.judge_report_pairs import human_preference
    from rankkit.strategies.matches import MatchSource

    credits, calls = [], 0
    for task in tasks:
        a, b = (c.id for c in task.candidates[:2])
        source = MatchSource(task, JudgmentMemo(judge, cache))
        grade_a, grade_b = (j.value for j in source.grade_many([a, b]))
        cost = source.cost
        calls += cost.judge_calls
        human = human_preference(task, a, b)
        if grade_a is None or grade_b is None or grade_a == grade_b:
            credits.append(0.5)
        else:
            credits.append(1.0 if (a if grade_a > grade_b else b) == human else 0.0)
    return sum(credits) / len(credits), calls


def prior_balanced(tasks: list[Any], judge: Any, cache: Any) -> dict[str, float]:
    """Liusie et al.'s prior matching on the task set: one threshold β = the median raw log-odds
    over every presented order of every pair; "first wins" when l > β. Returns accuracy over the
    presented orders, the first-slot share and β. Uses the raw judgments already in ``cache``."""
    from rankkit.judges.llm.calibration import choice_log_odds, prior_balancing_threshold
    from rankkit.reports.judge_report import collect
    from rankkit.reports.judge_report_pairs import human_preference

    _, raw, _ = collect(tasks, judge, cache)
    presented = []  # (log-odds, first id, second id, human-preferred id)
    for task, judgments in raw:
        a, b = (c.id for c in task.candidates[:2])
        human = human_preference(task, a, b)
        for (first, second), judgment in zip(((a, b), (b, a)), judgments):
            presented.append((choice_log_odds(judgment.extras["logprobs"]), first, second, human))
    threshold = prior_balancing_threshold([odds for odds, *_ in presented])
    firsts = [odds > threshold for odds, *_ in presented]
    correct = [(first if wins else second) == human for wins, (_, first, second, human) in zip(firsts, presented)]
    return {"accuracy": sum(correct) / len(correct), "first_slot": sum(firsts) / len(firsts), "threshold": threshold}


def section_c(resamples: int, seed: int, headline: dict[str, Any]) -> str:
    import tempfile

    from rankkit.data.tasks import load_tasks
    from rankkit.judges import make_judge
    from rankkit.judgments.cache import JudgmentCache
    from rankkit.reports.judge_report import judge_report

    subsets = {d: load_tasks(DATA / d / "tasks.jsonl")[:LIVE_LIMIT] for d in DATASETS}
    pooled = [task for tasks in subsets.values() for task in tasks]
    prepair = f"smollm2:prepair=true,analysis_max_new_tokens={ANALYSIS_TOKENS}"
    pairwise_specs = [
        ("pairwise", "smollm2"),
        ("pairwise, calibrated", "smollm2:calibrate=true"),
        ("PREPAIR", prepair),
        ("PREPAIR, calibrated", prepair + ",calibrate=true"),
    ]
    rows = []
    with tempfile.TemporaryDirectory() as scratch, JudgmentCache(Path(scratch) / "cache.sqlite") as cache:
        pointwise = make_judge("smollm2")
        started = time.perf_counter()
        per_set = {d: pointwise_accuracy(tasks, pointwise, cache) for d, tasks in subsets.items()}
        calls = sum(c for _, c in per_set.values())
        accuracy = sum(acc * len(subsets[d]) for d, (acc, _) in per_set.items()) / len(pooled)
        rows.append(
            {
                "method": "pointwise",
                "spec": "smollm2",
                "per_set": {d: a for d, (a, _) in per_set.items()},
                "accuracy": accuracy,
                "strict": None,
                "first_slot": None,
                "consistency": None,
                "calls": calls,
                "analyses": 0,
                "seconds": time.perf_counter() - started,
            }
        )
        print(f"(c) pointwise: {fmt(accuracy)}", flush=True)
        for method, spec in pairwise_specs:
            judge = make_judge(spec)
            started = time.perf_counter()
            per_set, calls, analyses = {}, 0, 0
            for dataset, tasks in subsets.items():
                report = judge_report(tasks, judge, cache, resamples=resamples, seed=seed, judge_spec=spec)
                per_set[dataset] = report["metrics"]["accuracy_single"]["value"]
                calls += report["counts"]["judge_calls"]
            seconds = time.perf_counter() - started
            if judge.analyses is not None:
                analyses = judge.analyses.stats["generated"]
            pooled_report = judge_report(pooled, judge, cache, resamples=resamples, seed=seed, judge_spec=spec)
            m = pooled_report["metrics"]
            rows.append(
                {
                    "method": method,
                    "spec": spec,
                    "per_set": per_set,
                    "accuracy_metric": m["accuracy_single"],
                    "accuracy": m["accuracy_single"]["value"],
                    "strict": m["accuracy_both_strict"]["value"],
                    "first_slot": m["first_slot"]["value"],
                    "consistency": m["order_consistency"]["value"],
                    "calls": calls,
                    "analyses": analyses,
                    "seconds": seconds,
                }
            )
            print(
                f"(c) {method}: acc {fmt(m['accuracy_single']['value'])}, first slot "
                f"{fmt(m['first_slot']['value'])}, consistency {fmt(m['order_consistency']['value'])}, "
                f"{calls} calls, {analyses} analyses, {seconds:.0f} s",
                flush=True,
            )
            if method in ("pairwise", "PREPAIR"):
                prior = prior_balanced(pooled, judge, cache)
                rows.append(
                    {
                        "method": f"{method}, prior-balanced threshold (β = {prior['threshold']:.2f})",
                        "spec": f"{spec} + task-set threshold",
                        "per_set": {},
                        "accuracy": prior["accuracy"],
                        "strict": None,
                        "first_slot": prior["first_slot"],
                        "consistency": None,
                        "calls": 0,
                        "analyses": 0,
                        "seconds": None,
                    }
                )
                print(
                    f"(c) {method} prior-balanced: acc {fmt(prior['accuracy'])}, β {prior['threshold']:.2f}", flush=True
                )
            judge.close()
        pointwise.close()
    headline["smollm2"] = rows
    n = len(pooled)
    lines = [
        "## (c) SmolLM2-135M live: pointwise, pairwise, calibrated, PREPAIR",
        "",
        f"The first {LIVE_LIMIT} pairs of each set ({n} pairs; bf16 on a shared 2-core CPU — other helpers' jobs "
        f"ran at the same time, so seconds are indicative). Every pairwise judge is asked both orders "
        "(`rankkit judge-report`). *acc* is one-order accuracy (LLMBar's average over the two orders, a "
        "tie ½) with a 95% bootstrap interval over tasks; *strict*: both orders combined, a disagreement "
        "counting as wrong. Pointwise: `Score:` expected digit per answer, the higher grade wins (equal ½). "
        "*calibrated*: `calibrate=true` (log-odds averaged over both orders: the slot bias of each pair is "
        "estimated from its two orders and removed). *prior-balanced*: one threshold β for the whole task "
        "set (Liusie et al.: the median raw log-odds over all presented orders; the first slot wins when "
        "its log-odds exceed β) — computed from the same raw judgments. PREPAIR: one analysis per answer "
        f"(greedy-ish decoding at the judge's temperature 0.1, at most {ANALYSIS_TOKENS} tokens), then a "
        "logprob decision that sees both analyses. *calls*: new judgments (decisions); a calibrated row's "
        "judgments are new under its own fingerprint but reuse the raw forward passes of the row above "
        "through the shared cache, so they cost (almost) no model time. *analyses*: PREPAIR analyses "
        "generated.",
        "",
        "| method | spec | " + " | ".join(DATASETS) + " | all: acc [95% CI] | strict | first-slot share "
        "| order consistency | calls | analyses | seconds |",
        "|---|---|" + "---|" * len(DATASETS) + "---|---|---|---|---|---|---|",
    ]
    for row in rows:
        acc = fmt_ci(row["accuracy_metric"]) if "accuracy_metric" in row else fmt(row["accuracy"])
        per_set = " | ".join(fmt(row["per_set"].get(d)) for d in DATASETS)
        seconds = "–" if row["seconds"] is None else f"{row['seconds']:.0f}"
        lines.append(
            f"| {row['method']} | `{row['spec']}` | {per_set} | {acc} | {fmt(row['strict'])} "
            f"| {fmt(row['first_slot'])} | {fmt(row['consistency'])} | {row['calls']} | {row['analyses']} "
            f"| {seconds} |"
        )
    lines.append("")
    return "\n".join(lines)


SECTIONS: dict[str, Callable[[int, int, dict[str, Any]], str]] = {"a": section_a, "b": section_b, "c": section_c}


def headline_text(headline: dict[str, Any]) -> str:
    """Panel at 0.5 vs its best single member, for the full panel and the panel without GPT-4."""
    panels = headline.get("panels")
    if not panels:
        return ""
    lines = [
        "## Headline: panel at threshold 0.5 vs the best single judge",
        "",
        "Accuracy with a draw counted ½ (what a coin tie-break gets) and, in brackets, strict (a draw or "
        "a disagreement between the two orders counts as wrong). The best single judge is the panel "
        "member with the highest one-order accuracy; its strict figure combines its own two orders.",
        "",
        "| dataset | method | panel of all | best single judge | panel without GPT-4 | its best member |",
        "|---|---|---|---|---|---|",
    ]

    def pair(row_or_metrics: dict[str, Any], is_row: bool) -> str:
        if is_row:
            return f"{fmt(row_or_metrics['accuracy'])} ({fmt(row_or_metrics['accuracy_strict'])})"
        return (
            f"{fmt(row_or_metrics['accuracy_single']['value'])} "
            f"({fmt(row_or_metrics['accuracy_both_strict']['value'])})"
        )

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
    header = (
        "# LLMBar evaluation of judges\n\n"
        "Generated by `python benchmarks/llmbar_eval.py` from `shared/data/llmbar_*` (LLMBar, "
        "princeton-nlp/LLMBar@900616b: 100 Natural, 66 FairEval, 199 LLMEval² pairs). Sections (a) and "
        "(b) replay the judgments recorded in the LLMBar repository — no model is run, so they take "
        "seconds; the figures do not depend on the machine.\n\n"
    )
    body = "".join(f"<!-- section {key} -->\n{found[key]}<!-- /section {key} -->\n" for key in sorted(found))
    return header + body


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sections", default=",".join(SECTIONS), help="comma-separated sections (default: all)")
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--limit", type=int, default=LIVE_LIMIT, help="section c: pairs per dataset judged live")
    args = parser.parse_args(argv)
    globals()["LIVE_LIMIT"] = args.limit
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
