"""Budgets in each unit (issue 42, item 2): the budget given against what the stops spent, in all four units.

On the first ``--limit`` tasks of the shared newsroom and usr_topicalchat sets (skipped when absent;
the bundled sample otherwise), with ``sim:preset=gpt4`` (seeds 0 .. ``--seeds``−1), each stopping
strategy (``until=top1``) runs under a budget in judgments, answers shown, tokens and USD. The
simulated judge reports no usage, so a judgment's tokens are the estimate (the question and the
answers shown, 4 characters a token) and its USD those tokens at a stated price: **$2 per 1M prompt
tokens, $8 per 1M completion tokens** (gpt-4.1's list price). Per row, over tasks and seeds: the
budget given per task (mean), the mean spend per task in each unit, the largest spent/given ratio in
the budget's unit over all tasks (must be <= 1), and the shares of tasks stopped by the target, the
budget, or every distinct question asked (``exhausted``: swiss never replays a pair).

    python benchmarks/budget_units.py               # writes benchmarks/results/budget_units.md
    python benchmarks/budget_units.py --limit 3 --seeds 1 --out /tmp/budget_units.md
"""

from __future__ import annotations

import argparse
import random
import statistics
from pathlib import Path

from rankkit.data.samples import sample_path
from rankkit.data.tasks import Task, load_tasks, task_rng
from rankkit.judges import make_judge
from rankkit.judgments.memo import JudgmentMemo
from rankkit.judgments.spend import UNITS, Meter
from rankkit.strategies import make_strategy
from rankkit.strategies.matches import MatchSource

ROOT = Path(__file__).resolve().parents[1]
SHARED = next(
    (path for path in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if path.exists()),
    ROOT.parent / "shared" / "data",
)
SETS = ("newsroom", "usr_topicalchat")
PRICE_IN, PRICE_OUT = 2.0, 8.0  # USD per 1M tokens
STRATEGIES = ("active:until=top1,criterion=target", "swiss:until=top1", "setwise_groups:k=4,rounds=50,until=top1")
#: Per candidate, one budget per unit, chosen to bind about equally (a comparison of these tasks is
#: about 900 tokens): 4 judgments, 8 answers, 3,600 tokens, $0.0072.
BUDGETS = ("4", "8answers", "3600tokens", "0.0072usd")


def with_budget(spec: str, budget: str) -> str:
    return f"{spec},budget={budget}"


def run(spec: str, task: Task, seed: int) -> tuple[dict[str, float], str]:
    """One task's spends (unit -> amount) and why it stopped."""
    source = MatchSource(
        task, JudgmentMemo(make_judge(f"sim:preset=gpt4,seed={seed}")), meter=Meter(PRICE_IN, PRICE_OUT)
    )
    ranking = make_strategy(spec).rank(task, source, task_rng(seed, task.task_id))
    extras = ranking.extras[task.candidate_ids[0]]
    return {unit: float(getattr(extras, f"spent_{unit}")) for unit in UNITS}, str(extras.stopped)


def row(spec: str, budget: str, tasks: list[Task], seeds: int) -> dict[str, str]:
    strategy = make_strategy(with_budget(spec, budget))
    unit = strategy.budget_unit
    spends, given, ratios, stops = [], [], [], []
    for seed in range(seeds):
        for task in tasks:
            spent, stopped = run(with_budget(spec, budget), task, seed)
            limit = strategy.budget * len(task.candidates)
            spends.append(spent)
            given.append(limit)
            ratios.append(spent[unit] / limit)
            stops.append(stopped)
    mean = {u: statistics.fmean(s[u] for s in spends) for u in UNITS}
    return {
        "strategy": spec,
        "budget": f"budget={budget}",
        "given / task": f"{statistics.fmean(given):.4f} usd"
        if unit == "usd"
        else f"{statistics.fmean(given):,.0f} {unit}",
        "judgments": f"{mean['judgments']:.1f}",
        "answers": f"{mean['answers']:.1f}",
        "tokens": f"{mean['tokens']:,.0f}",
        "usd": f"{mean['usd']:.5f}",
        "max spent/given": f"{max(ratios):.3f}",
        "stopped: target / budget / exhausted": " / ".join(
            f"{stops.count(reason) / len(stops):.2f}" for reason in ("target", "budget", "exhausted")
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--limit", type=int, default=8, help="tasks per shared dataset")
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "budget_units.md")
    args = parser.parse_args()
    tasks = [
        t
        for name in SETS
        if (SHARED / name).exists()
        for t in load_tasks(SHARED / name / "tasks.jsonl", limit=args.limit)
    ]
    where = ", ".join(f"{name} (first {args.limit})" for name in SETS if (SHARED / name).exists()) or "the sample"
    tasks = tasks or load_tasks(sample_path("tasks"))
    rows = [row(spec, budget, tasks, args.seeds) for spec in STRATEGIES for budget in BUDGETS]
    columns = list(rows[0])
    lines = [
        f"# Budgets in each unit: given vs spent ({len(tasks)} tasks from {where}, sim:preset=gpt4, "
        f"seeds 0–{args.seeds - 1}, price ${PRICE_IN:g}/${PRICE_OUT:g} per 1M tokens in/out)",
        "",
        "| " + " | ".join(columns) + " |",
        "|" + "---|" * len(columns),
        *("| " + " | ".join(r[c] for c in columns) + " |" for r in rows),
        "",
        f"Command: python benchmarks/budget_units.py --limit {args.limit} --seeds {args.seeds}",
    ]
    text = "\n".join(lines)
    print(text)
    args.out.write_text(text + "\n")


if __name__ == "__main__":
    random.seed(0)
    main()
