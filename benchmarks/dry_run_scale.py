"""How long ``rankkit compare --dry-run`` takes, and how much memory, as the candidates grow (issue 37).

Each cell is one ``rankkit compare --dry-run --no-cache --judge sim`` on one task of N candidates,
run in a child process (its own wall time and peak resident memory, read with ``os.wait4``):

* ``bt`` (and ``elo``): counted by arithmetic once the run plans more than the dry run simulates
  (``rankkit.runs.plan.dry_run.SIMULATION_LIMIT``); goal N = 500 in <= 5 s and <= 300 MB;
* ``knockout``: N - 1 judgments, simulated at every N;
* ``bt,elo``: too large to simulate and not countable, so refused at once naming its planned count
  (exit 2) once N² passes the limit (N >= 142).

    python benchmarks/dry_run_scale.py            # N = 100, 500, 1000, 5000
    python benchmarks/dry_run_scale.py --quick    # N = 100, 500

Writes ``benchmarks/results/dry_run_scale.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RESULTS = Path(__file__).parent / "results" / "dry_run_scale.md"
STRATEGIES = ("bt", "elo", "knockout", "bt,elo")
TIME_LIMIT_S = 300


def write_task(path: Path, n: int) -> None:
    """One task of ``n`` candidates with human scores, as a JSONL task file."""
    candidates = [{"id": f"c{i:05d}", "text": f"answer {i} " + "x" * 20, "human": {"score": i % 7}} for i in range(n)]
    path.write_text(json.dumps({"task_id": "q1", "prompt": "Which is best?", "candidates": candidates}) + "\n")


def measure(data: Path, strategies: str) -> dict[str, object]:
    """One dry run in a child process: wall seconds, peak RSS in MB, exit code and its last line."""
    command = [sys.executable, "-m", "rankkit", "compare", "--data", str(data), "--judge", "sim"]
    command += ["--strategies", strategies, "--dry-run", "--no-cache"]
    with tempfile.TemporaryFile("w+") as log:
        start = time.perf_counter()
        # `timeout` stops a runaway cell; wait4's usage covers the child and the dry run it waited for.
        child = subprocess.Popen(["timeout", str(TIME_LIMIT_S), *command], stdout=log, stderr=subprocess.STDOUT)
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
        log.seek(0)
        output = log.read()
    code = os.waitstatus_to_exitcode(status)
    lines = [line for line in output.splitlines() if line.strip()]
    return {
        "seconds": seconds,
        "rss_mb": usage.ru_maxrss / 1024,
        "exit": code,
        "last": lines[-1][:110] if lines else "",
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="N = 100 and 500 only")
    sizes = (100, 500) if parser.parse_args().quick else (100, 500, 1000, 5000)
    rows = []
    with tempfile.TemporaryDirectory() as folder:
        for n in sizes:
            data = Path(folder) / f"n{n}.jsonl"
            write_task(data, n)
            for strategies in STRATEGIES:
                cell = measure(data, strategies)
                rows.append({"n": n, "strategies": strategies, **cell})
                print(
                    f"N={n:>5} {strategies:<9} {cell['seconds']:6.2f} s {cell['rss_mb']:6.0f} MB "
                    f"exit {cell['exit']}  {cell['last']}"
                )
    lines = [
        "# Dry-run time and memory against N (`benchmarks/dry_run_scale.py`)",
        "",
        "One task of N candidates, `rankkit compare --dry-run --no-cache --judge sim`, each in a child process "
        "(wall time including Python start-up; peak RSS of the child).",
        "",
        "| N | strategies | seconds | peak RSS (MB) | exit | last line |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        last = str(row["last"]).replace("|", "\\|")
        lines.append(
            f"| {row['n']} | `{row['strategies']}` | {row['seconds']:.2f} | {row['rss_mb']:.0f} | {row['exit']} | {last} |"
        )
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
