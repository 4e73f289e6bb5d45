"""What sharing judgments saves: strategies run together vs each on its own (issue 21, item 2).

Strategies of one ``rankkit.compare`` share the judge's answers: a request two of them make is
judged once. Sharing must save judge calls and change nothing else. For each dataset this script
runs ``knockout``, ``bt``, ``heapsort`` and ``elo`` (their default orders) with ``sim:preset=chatgpt``,
seed 0 and no cache

* together, in one ``rankkit.compare``, in that order and reversed, and
* separately, one ``rankkit.compare`` per strategy,

checks (``assert``) that every strategy's per-task scores, rankings and comparisons (who was
shown first, the round, the verdict's grades, winner and probability) are the same in all three
(floats within 1e-9), and reports the judge calls: the sum of the separate runs against the run
together. Datasets: the bundled sample (``rankkit/data/sample``), and ``../shared/data/usr_topicalchat``
and ``../shared/data/newsroom`` when present (skipped when absent).

    python benchmarks/sharing.py

Writes ``benchmarks/results/sharing.md``. A few seconds.
"""

from __future__ import annotations

import math
import shlex
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import rankkit

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "sharing.md"
DATASETS = {
    "sample (bundled)": ROOT / "rankkit" / "data" / "sample" / "tasks.jsonl",
    "usr_topicalchat": ROOT.parent / "shared" / "data" / "usr_topicalchat" / "tasks.jsonl",
    "newsroom": ROOT.parent / "shared" / "data" / "newsroom" / "tasks.jsonl",
}
STRATEGIES = ("knockout", "bt", "heapsort", "elo")
JUDGE = "sim:preset=chatgpt"
SEED = 0
TOLERANCE = 1e-9  # relative and absolute: the same computation on the same answers, so equal up to rounding


def decisions(strategy_run: Any) -> list[dict[str, Any]]:
    """What a strategy decided on each task: scores, ranking, and every comparison it used."""
    return [
        {
            "task_id": task.task_id,
            "scores": dict(task.scores),
            "ranking": list(task.ranking),
            "comparisons": [c.to_dict() for c in task.comparisons],
        }
        for task in strategy_run.tasks
    ]


def same(a: Any, b: Any, where: str = "") -> None:
    """Assert two decision records are equal, floats within :data:`TOLERANCE`."""
    if isinstance(a, float) or isinstance(b, float):
        assert (
            isinstance(a, (int, float))
            and isinstance(b, (int, float))
            and math.isclose(a, b, rel_tol=TOLERANCE, abs_tol=TOLERANCE)
        ), f"{where}: {a!r} != {b!r}"
    elif isinstance(a, dict) and isinstance(b, dict):
        assert a.keys() == b.keys(), f"{where}: keys {sorted(a)} != {sorted(b)}"
        for key in a:
            same(a[key], b[key], f"{where}.{key}")
    elif isinstance(a, list) and isinstance(b, list):
        assert len(a) == len(b), f"{where}: {len(a)} items != {len(b)}"
        for i, (x, y) in enumerate(zip(a, b)):
            same(x, y, f"{where}[{i}]")
    else:
        assert a == b, f"{where}: {a!r} != {b!r}"


def measure(path: Path) -> dict[str, Any]:
    """Run the strategies together (both orders) and separately on one dataset; check they agree."""
    tasks = rankkit.load_tasks(path)
    started = time.perf_counter()
    together = rankkit.compare(tasks, strategies=list(STRATEGIES), judge=JUDGE, cache=None, seed=SEED)
    reversed_ = rankkit.compare(tasks, strategies=list(reversed(STRATEGIES)), judge=JUDGE, cache=None, seed=SEED)
    alone = {
        s: rankkit.compare(tasks, strategies=[s], judge=JUDGE, cache=None, seed=SEED).strategies[0] for s in STRATEGIES
    }
    seconds = time.perf_counter() - started
    runs_together = {run.name: run for run in together.strategies}
    runs_reversed = {run.name: run for run in reversed_.strategies}
    for name in STRATEGIES:
        same(decisions(runs_together[name]), decisions(alone[name]), f"{path.parent.name} {name} together vs alone")
        same(decisions(runs_reversed[name]), decisions(alone[name]), f"{path.parent.name} {name} reversed vs alone")
    paid_together = sum(run.cost.judge_calls for run in together.strategies)
    paid_reversed = sum(run.cost.judge_calls for run in reversed_.strategies)
    assert paid_together == paid_reversed, "the judge calls of a run together depend on the strategies' order"
    return {
        "tasks": len(tasks),
        "candidates": sum(len(t.candidates) for t in tasks),
        "together": runs_together,
        "alone": alone,
        "paid_together": paid_together,
        "seconds": seconds,
    }


def table(name: str, found: dict[str, Any]) -> list[str]:
    """One dataset's rows: per strategy, its judgments, what it paid alone and together."""
    lines = [
        f"### {name}: {found['tasks']} tasks, {found['candidates']} candidates",
        "",
        "| strategy | judgments used | judge calls alone | judge calls together | shared hits together |",
        "|---|---:|---:|---:|---:|",
    ]
    for strategy in STRATEGIES:
        alone, together = found["alone"][strategy].cost, found["together"][strategy].cost
        lines.append(
            f"| {strategy} | {together.comparisons + together.grades:,} | {alone.judge_calls:,} | "
            f"{together.judge_calls:,} | {together.shared_hits:,} |"
        )
    separately = sum(run.cost.judge_calls for run in found["alone"].values())
    saved = 1 - found["paid_together"] / separately
    lines.append(f"| **all four** | | **{separately:,}** | **{found['paid_together']:,}** | |")
    lines += [
        "",
        f"Together the judge is called {found['paid_together']:,} times instead of {separately:,} "
        f"(**{saved:.0%} fewer**); every strategy's scores, rankings and comparisons are the same as alone "
        "(checked, in both strategy orders).",
    ]
    most = max(found["alone"].values(), key=lambda run: run.cost.judge_calls)
    if found["paid_together"] == most.cost.judge_calls:
        lines[-1] += (
            f" The run together pays exactly what `{most.name}` pays alone: every request of the others "
            "is one it makes too."
        )
    return lines


def main() -> None:
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    command = shlex.join(["python", "benchmarks/sharing.py", *sys.argv[1:]])
    lines = [
        "# What sharing judgments saves",
        "",
        f"Written by `{command}` at {head}: `{', '.join(STRATEGIES)}` (default orders: knockout `given`, "
        f"the others `both`) with judge `{JUDGE}`, seed {SEED}, no cache — run together in one "
        '`rankkit.compare`, and each in its own. "Judge calls together" is what each strategy paid in the '
        "run together, in the order listed: a request an earlier strategy already made is a shared hit "
        "instead (the total does not depend on the order: checked against the reversed order). Every "
        f"strategy's per-task scores, rankings and comparisons are asserted equal (within {TOLERANCE:g}) "
        "together, reversed and alone.",
        "",
    ]
    summary = ["| dataset | judge calls, each strategy alone (sum) | together | saved |", "|---|---:|---:|---:|"]
    sections: list[str] = []
    for name, path in DATASETS.items():
        if not path.is_file():
            print(f"{name}: {path} not found, skipped")
            sections += [f"### {name}", "", f"Skipped: `{path}` is not present.", ""]
            continue
        found = measure(path)
        separately = sum(run.cost.judge_calls for run in found["alone"].values())
        summary.append(
            f"| {name} | {separately:,} | {found['paid_together']:,} | {1 - found['paid_together'] / separately:.0%} |"
        )
        sections += [*table(name, found), ""]
        print(
            f"{name}: {separately} judge calls separately, {found['paid_together']} together "
            f"({found['seconds']:.1f} s); decisions identical"
        )
    text = "\n".join([*lines, *summary, "", *sections])
    RESULTS.write_text(text.rstrip("\n") + "\n", encoding="utf-8")
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
