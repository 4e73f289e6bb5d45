"""Cold cache, warm cache and no cache give identical results (issue 11, item 1).

For every dataset in ``../shared/data`` (or the bundled sample when it is absent) this runs the same
command three times with a simulated judge — on an empty cache, again on the now-warm cache, and
with no cache — and checks that every strategy's scores, rankings, matches and metrics are the
same, that the warm rerun paid for nothing, and that the cold and no-cache runs paid the same.

    python benchmarks/cache_identity.py [--judge sim:preset=chatgpt] [--seed 3] [--limit N]

Writes ``benchmarks/results/cache_identity.md``.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

from rankkit import JudgmentCache, load_tasks, make_judge, make_strategy, run
from rankkit.data.tasks import SAMPLE_DATA

ROOT = Path(__file__).resolve().parents[1]
SHARED = ROOT.parent / "shared" / "data"
STRATEGIES = ["knockout:order=both", "bt", "individual", "heapsort", "swiss"]


def decisions(result) -> list:
    """What a run decided, strategy by strategy and task by task (costs and timings aside)."""
    return [
        (
            s.name,
            s.metrics,
            [(t.task_id, t.scores, t.ranking, t.champion, [c.to_dict() for c in t.comparisons]) for t in s.tasks],
        )
        for s in result.strategies
    ]


def check(path: Path, judge_spec: str, seed: int, limit: int | None) -> dict:
    tasks = load_tasks(path, limit=limit)
    strategies = [make_strategy(s) for s in STRATEGIES]
    with tempfile.TemporaryDirectory() as folder:
        with JudgmentCache(Path(folder) / "c.sqlite") as cache:
            cold = run(tasks, strategies, make_judge(judge_spec), cache, seed=seed, progress=False)
        with JudgmentCache(Path(folder) / "c.sqlite") as cache:
            warm = run(tasks, strategies, make_judge(judge_spec), cache, seed=seed, progress=False)
    none = run(tasks, strategies, make_judge(judge_spec), None, seed=seed, progress=False)
    paid = lambda result: sum(s.cost.judge_calls for s in result.strategies)  # noqa: E731
    duplicates = sum(len(t.candidates) - len({c.text for c in t.candidates}) for t in tasks)
    return {
        "tasks": len(tasks),
        "duplicate_texts": duplicates,
        "cold_paid": paid(cold),
        "warm_paid": paid(warm),
        "nocache_paid": paid(none),
        "identical": decisions(cold) == decisions(warm) == decisions(none),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--judge", default="sim:preset=chatgpt")
    parser.add_argument("--seed", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None)
    args = parser.parse_args()
    datasets = sorted(SHARED.glob("*/tasks.jsonl")) or [SAMPLE_DATA]
    rows, ok = [], True
    started = time.perf_counter()
    for path in datasets:
        row = check(path, args.judge, args.seed, args.limit)
        good = row["identical"] and row["warm_paid"] == 0 and row["cold_paid"] == row["nocache_paid"]
        ok &= good
        rows.append((path.parent.name, row, good))
        print(
            f"{path.parent.name:28s} tasks={row['tasks']:4d} duplicate texts={row['duplicate_texts']:4d} "
            f"paid cold/warm/no-cache={row['cold_paid']}/{row['warm_paid']}/{row['nocache_paid']} "
            f"identical={row['identical']}",
            flush=True,
        )
    lines = [
        "# Cold cache = warm cache = no cache",
        "",
        f"`python benchmarks/cache_identity.py --judge {args.judge} --seed {args.seed}`"
        f"{f' --limit {args.limit}' if args.limit else ''}; strategies {', '.join(STRATEGIES)}; "
        f"{time.perf_counter() - started:.0f} s.",
        "",
        "| dataset | tasks | candidates with a duplicate text | judge calls cold | warm | no cache | identical results |",
        "|---|---|---|---|---|---|---|",
    ]
    for name, row, _good in rows:
        lines.append(
            f"| {name} | {row['tasks']} | {row['duplicate_texts']} | {row['cold_paid']} | {row['warm_paid']} | "
            f"{row['nocache_paid']} | {'yes' if row['identical'] else 'NO'} |"
        )
    lines += ["", f"All datasets pass: {'yes' if ok else 'NO'}."]
    out = ROOT / "benchmarks" / "results" / "cache_identity.md"
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {out}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
