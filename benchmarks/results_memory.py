"""Peak memory and time per judgment of a large run, and the size of its results (issue 40, item 4).

``rankkit compare --strategies bt --judge sim:preset=gpt4 --no-cache --out RESULTS`` on synthetic
tasks of N candidates (every pair in both orders: N(N-1) judgments a task), each size in its own
child process so that each has its own peak. Reported per judgment:

* peak RSS above the start-up baseline: the child's ``ru_maxrss`` minus that of the same command on
  one task (imports, the judge, click: what any run costs before its first judgment);
* time: the child's wall and CPU time minus the baseline's, per judgment (CPU is the steadier on a
  shared machine);
* the results file's size, and the sidecar's (``RESULTS.judgments.jsonl``) when there is one.

No cache (``--no-cache``): the memo's SQLite writes would measure the cache, not the results.

    python benchmarks/results_memory.py                  # 100k and 1M judgments
    python benchmarks/results_memory.py --sizes 100k     # one size
    python benchmarks/results_memory.py --stream         # rankkit compare --stream-judgments
    python benchmarks/results_memory.py --label before   # the table's label (default: the git commit)

Appends its table to ``benchmarks/results/results_memory.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "results_memory.md"
JUDGE = "sim:preset=gpt4"
#: Each size's tasks: (tasks, candidates); bt with order=both asks N(N-1) judgments a task.
TITLE_NOTE = (
    "Peak RSS above the baseline (the same command on one task) and wall/CPU time above it, per judgment; "
    "each size in its own process."
)
SIZES = {"100k": (529, 15), "1M": (2381, 21), "tiny": (1, 15)}


def judgments(tasks: int, candidates: int) -> int:
    return tasks * candidates * (candidates - 1)


def write_tasks(path: Path, tasks: int, candidates: int) -> None:
    """Synthetic tasks: short answers with random human scores on 0-10 (the simulator reads them)."""
    rng = random.Random(0)
    with path.open("w", encoding="utf-8") as handle:
        for t in range(tasks):
            record = {
                "task_id": f"t{t:05d}",
                "prompt": f"Translate sentence {t}.",
                "candidates": [
                    {
                        "id": f"c{i:02d}",
                        "system": f"sys{i:02d}",
                        "text": f"translation {i} of sentence {t}",
                        "human": {"score": round(rng.uniform(0, 10), 3)},
                    }
                    for i in range(candidates)
                ],
                "meta": {"main_score": "score"},
            }
            handle.write(json.dumps(record) + "\n")


def measure(size: str, folder: Path, stream: bool) -> dict[str, float]:
    """One child process: its peak RSS (bytes), wall seconds and the sizes of what it wrote."""
    tasks, candidates = SIZES[size]
    data, out = folder / f"{size}.jsonl", folder / f"{size}.json"
    write_tasks(data, tasks, candidates)
    command = [sys.executable, "-m", "rankkit", "compare", "--data", str(data), "--judge", JUDGE]
    command += ["--strategies", "bt", "--no-cache", "--quiet", "--yes", "--out", str(out), "--format", "csv"]
    command += ["--stream-judgments"] if stream else []
    started = time.perf_counter()
    child = subprocess.Popen(command, stdout=subprocess.DEVNULL)
    _, status, usage = os.wait4(child.pid, 0)
    seconds = time.perf_counter() - started
    if status != 0:
        raise SystemExit(f"{' '.join(command)} failed: status {status}")
    sidecar = out.with_name(out.name.removesuffix(".json") + ".judgments.jsonl")
    return {
        "judgments": judgments(tasks, candidates),
        "peak_bytes": usage.ru_maxrss * 1024,  # Linux: kilobytes
        "seconds": seconds,
        "cpu_seconds": usage.ru_utime + usage.ru_stime,
        "results_bytes": out.stat().st_size,
        "sidecar_bytes": sidecar.stat().st_size if sidecar.exists() else 0,
    }


def row(size: str, cell: dict[str, float], base: dict[str, float]) -> str:
    n = cell["judgments"]
    above = (cell["peak_bytes"] - base["peak_bytes"]) / n
    per = (cell["seconds"] - base["seconds"]) / n * 1e6
    cpu = (cell["cpu_seconds"] - base["cpu_seconds"]) / n * 1e6
    sidecar = f"{cell['sidecar_bytes'] / 1e6:.1f} MB" if cell["sidecar_bytes"] else "-"
    return (
        f"| {size} | {n:,} | {cell['peak_bytes'] / 2**20:.0f} MiB | {above:,.0f} B | {per:.1f} µs "
        f"| {cpu:.1f} µs | {cell['results_bytes'] / 1e6:.1f} MB | {sidecar} |"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sizes", default="100k,1M", help="comma-separated: 100k, 1M")
    parser.add_argument("--label", default=None, help="the table's label (default: the git commit)")
    parser.add_argument("--stream", action="store_true", help="rankkit compare --stream-judgments (a sidecar)")
    args = parser.parse_args()
    label = (
        args.label
        or subprocess.run(
            ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
        ).stdout.strip()
    )
    header = (
        f"\n### {label}: `bt` (order=both), `{JUDGE}`, `--no-cache`{' --stream-judgments' if args.stream else ''}\n\n"
        "| size | judgments | peak RSS | RSS above baseline / judgment | wall / judgment | CPU / judgment | results file | sidecar |\n"
        "|---|---:|---:|---:|---:|---:|---:|---:|"
    )
    lines = [header]
    print(header, flush=True)
    with tempfile.TemporaryDirectory() as tmp:
        base = measure("tiny", Path(tmp), args.stream)
        baseline = f"| baseline (1 task) | {base['judgments']} | {base['peak_bytes'] / 2**20:.0f} MiB | | | | | |"
        lines.append(baseline)
        print(baseline, flush=True)
        for size in args.sizes.split(","):
            line = row(size, measure(size, Path(tmp), args.stream), base)
            lines.append(line)
            print(line, flush=True)
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    if not RESULTS.exists():
        RESULTS.write_text(
            f"# Results memory\n\nWritten by `benchmarks/results_memory.py`. {TITLE_NOTE}\n", encoding="utf-8"
        )
    with RESULTS.open("a", encoding="utf-8") as handle:
        handle.write("\n".join(lines) + "\n")
    print(f"appended to {RESULTS}")


if __name__ == "__main__":
    main()
