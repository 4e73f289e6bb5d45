"""One simulated run done by one process, and by 2 and 4 shard workers (``--shard I/N``) merged
with ``rankkit merge``: whether the merged results are the single run's, the judgments paid in all,
and the wall time.

Every configuration is the same command on a fresh SQLite memo::

    rankkit compare --data DATA --judge sim:preset=gpt4 --strategies knockout:order=both,bt,active
                    --cache MEMO --out OUT [--shard I/N]

The shard workers of a configuration start together, as separate processes sharing the memo (as a
SLURM array on one node would); the wall time runs from their start to the end of ``rankkit merge``.
Results are compared as JSON with the timing keys left out (``wall_seconds``, ``warm_up_seconds``,
each strategy's ``seconds``) and floats within 1e-9.

Usage: ``python benchmarks/shard_merge.py [--data PATH] [--limit 60]``; figures are printed and
written to ``benchmarks/results/shard_merge.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]

from tests.runs.merge_checks import assert_same_results  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "shard_merge.md"
DEFAULT_DATA = ROOT.parent / "shared" / "data" / "newsroom" / "tasks.jsonl"
STRATEGIES = "knockout:order=both,bt,active"
JUDGE = "sim:preset=gpt4"


def rankkit(*args: str) -> subprocess.Popen:
    """Start ``rankkit ARGS`` with this checkout's code."""
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.Popen(
        [sys.executable, "-m", "rankkit", *args], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True
    )


def wait_all(processes: list[subprocess.Popen]) -> None:
    for process in processes:
        _, err = process.communicate()
        if process.returncode != 0:
            raise SystemExit(f"a worker failed (exit {process.returncode}): {err}")


def configuration(data: Path, limit: int, shards: int, folder: Path) -> tuple[Path, int, float]:
    """Run with ``shards`` workers (1: no --shard) on a fresh memo; the results file, the judgments
    paid and the wall seconds (workers and merge)."""
    memo, out = folder / "memo.sqlite", folder / f"results-{shards}.json"
    for stale in folder.glob("memo.sqlite*"):  # a fresh memo, at the same path (the results record it)
        stale.unlink()
    common = ["compare", "--data", str(data), "--limit", str(limit), "--judge", JUDGE, "--strategies", STRATEGIES]
    common += ["--cache", str(memo), "--quiet"]
    started = time.perf_counter()
    if shards == 1:
        parts = [out]
        wait_all([rankkit(*common, "--out", str(out))])
    else:
        parts = [folder / f"part-{i}-of-{shards}.json" for i in range(shards)]
        wait_all([rankkit(*common, "--out", str(part), "--shard", f"{i}/{shards}") for i, part in enumerate(parts)])
        wait_all([rankkit("merge", *map(str, parts), "-o", str(out))])
    seconds = time.perf_counter() - started
    paid = sum(s["judge_calls"] for part in parts for s in json.loads(part.read_text())["strategies"])
    return out, paid, seconds


def same_results(merged: Path, single: Path) -> bool:
    try:
        assert_same_results(json.loads(merged.read_text()), json.loads(single.read_text()))
    except AssertionError:
        return False
    return True


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data", type=Path, default=DEFAULT_DATA)
    parser.add_argument("--limit", type=int, default=60)
    args = parser.parse_args()
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        single, paid, seconds = configuration(args.data, args.limit, 1, folder)
        rows.append(("1 (no --shard)", "yes (the reference)", paid, seconds))
        for shards in (2, 4):
            merged, paid, seconds = configuration(args.data, args.limit, shards, folder)
            rows.append((f"{shards} + merge", "yes" if same_results(merged, single) else "NO", paid, seconds))
        tasks = len(json.loads(single.read_text())["task_data"])
    lines = [
        "# One run, one process or sharded and merged",
        "",
        f"Produced by `python benchmarks/shard_merge.py --data {args.data.relative_to(ROOT.parent) if args.data.is_relative_to(ROOT.parent) else args.data} --limit {args.limit}`.",
        "",
        f"`rankkit compare --judge {JUDGE} --strategies {STRATEGIES}` on {tasks} tasks, each configuration on a "
        "fresh SQLite memo (at the same path, which the results record) shared by its workers; the shard workers start together as separate processes, "
        "and their wall time includes `rankkit merge`. Identical: the merged results JSON equals the single "
        "run's, timing keys (`wall_seconds`, `warm_up_seconds`, strategies' `seconds`) aside, floats within 1e-9.",
        "",
        "| workers | identical results | judgments paid (all workers) | wall s |",
        "|:---|:---|---:|---:|",
        *(f"| {name} | {same} | {paid} | {seconds:.1f} |" for name, same, paid, seconds in rows),
        "",
        f"Wall time includes starting Python and rankkit in every worker, on a shared {os.cpu_count()}-core "
        f"machine ({platform.machine()}, Python {platform.python_version()}); the simulated judge costs "
        "nothing, so this measures the overhead of sharding, not its speed-up on a real judge.",
    ]
    text = "\n".join(lines) + "\n"
    print(text)
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
