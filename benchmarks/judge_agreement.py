"""Every judge recorded in the shared LLMBar sets, side by side: kappa, alpha and calibration (issue 42, item 4).

    python benchmarks/judge_agreement.py                  # writes benchmarks/results/judge_agreement.md
    python benchmarks/judge_agreement.py --resamples 200  # quicker intervals

Runs ``rankkit judge-report --judge replay:judgments.jsonl,on_miss=tie --recorded-judges all
--pairs-per-task 0`` on ``shared/data/llmbar_natural``, ``llmbar_llmeval2`` and ``llmbar_faireval``
(every recorded judge and method, every pair in both orders, no cache), prints each table as the
command prints it, and writes one Markdown table per set from the command's ``--out`` JSON. A set
that is not there is skipped with a note; with none there the script exits 0 having written nothing.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
DATA = REPO.parent / "shared" / "data"
RESULTS = REPO / "benchmarks" / "results" / "judge_agreement.md"
DATASETS = ("llmbar_natural", "llmbar_llmeval2", "llmbar_faireval")
#: The Markdown table's columns: (metric, header).
COLUMNS = (
    ("accuracy_single", "accuracy (1 order)"),
    ("kappa", "Cohen's κ"),
    ("alpha", "Krippendorff's α"),
    ("ece", "ECE (judge's P)"),
    ("ece_orders", "ECE (order votes)"),
    ("order_consistency", "order consistency"),
    ("first_slot", "first slot"),
    ("length_judge", "picks longer"),
)


def command(dataset: str, out: Path, resamples: int) -> list[str]:
    """The judge-report command line for one shared set."""
    folder = DATA / dataset
    return [
        sys.executable, "-m", "rankkit", "judge-report",
        "--data", str(folder / "tasks.jsonl"),
        "--judge", f"replay:{folder / 'judgments.jsonl'},on_miss=tie",
        "--recorded-judges", "all", "--pairs-per-task", "0", "--resamples", str(resamples),
        "--no-cache", "--quiet", "--out", str(out),
    ]  # fmt: skip


def cell(metric: dict[str, Any]) -> str:
    """``value [low, high]``, or n/a."""
    if metric["value"] is None:
        return "n/a"
    if metric["low"] is None:
        return f"{metric['value']:.3f}"
    return f"{metric['value']:.3f} [{metric['low']:.2f}, {metric['high']:.2f}]"


def markdown_table(reports: list[dict[str, Any]]) -> str:
    """One row per recorded judge/method."""
    lines = [
        "| judge / method | " + " | ".join(header for _, header in COLUMNS) + " | failed |",
        "|---|" + "---|" * (len(COLUMNS) + 1),
    ]
    for report in reports:
        label = (
            report["judge"]["description"]
            .split("(", 1)[-1]
            .rstrip(")")
            .replace("judge=", "")
            .replace(",method=", " / ")
        )
        cells = " | ".join(cell(report["metrics"][name]) for name, _ in COLUMNS)
        lines.append(f"| {label} | {cells} | {report['counts']['failed']} |")
    return "\n".join(lines)


def run_set(dataset: str, resamples: int) -> str:
    """Run the command on one set; print its output; return its Markdown section."""
    with tempfile.TemporaryDirectory() as folder:
        out = Path(folder) / "report.json"
        line = command(dataset, out, resamples)
        env = {**os.environ, "PYTHONPATH": str(REPO)}
        done = subprocess.run(line, capture_output=True, text=True, env=env, cwd=REPO, check=False)
        if done.returncode != 0:
            raise SystemExit(f"{dataset}: judge-report exited {done.returncode}:\n{done.stderr[-2000:]}")
        print(done.stdout)
        reports = json.loads(out.read_text())["reports"]
    first = reports[0]
    shown = " ".join(["rankkit", *line[3:-2]]).replace(str(DATA), "shared/data")  # without --out's temporary path
    return "\n".join(
        [
            f"## {dataset}",
            "",
            f"`{shown}`",
            "",
            f"{len(reports)} recorded judge/method pairs on the same {first['pairs']} pairs of {first['tasks']} tasks, "
            f"each pair in both orders; {first['bootstrap']['confidence']:.0%} percentile bootstrap intervals over "
            f"tasks ({first['bootstrap']['resamples']} resamples); ECE over {first['calibration_bins']} equal-width "
            "bins; *failed*: unparsed recorded answers (left out of κ and α).",
            "",
            markdown_table(reports),
            "",
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--resamples", type=int, default=1000, help="bootstrap resamples over tasks")
    args = parser.parse_args(argv)
    present = [d for d in DATASETS if (DATA / d / "judgments.jsonl").exists()]
    for missing in sorted(set(DATASETS) - set(present)):
        print(f"skipped {missing}: not found under {DATA}", file=sys.stderr)
    if not present:
        return 0
    sections = [run_set(dataset, args.resamples) for dataset in present]
    header = (
        "# Judge agreement and calibration: every recorded LLMBar judge\n\n"
        "Generated by `python benchmarks/judge_agreement.py`. κ and α: the judge's verdict in each order against "
        "the LLMBar label (categories: the first listed answer, the second, a tie). ECE (judge's P): n/a — LLMBar "
        "records verdicts, not probabilities. ECE (order votes): P(answer 1 wins) = the share of the judge's two "
        "verdicts (both orders) naming it.\n"
    )
    RESULTS.write_text(header + "\n" + "\n".join(sections))
    print(f"written to {RESULTS.relative_to(REPO)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
