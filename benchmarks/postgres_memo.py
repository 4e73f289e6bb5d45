"""Two workers sharing one PostgreSQL memo, beside two sharing one SQLite file: judgments paid per
distinct judgment, time, and what a worker killed with SIGKILL costs.

Each worker is a separate command, started together on a fresh cache::

    rankkit compare --strategies knockout:order=both,bt --judge openai:stub,base_url=...,concurrency=C
                    --cache postgresql://rankkit@127.0.0.1:PORT/DB   (or SHARED.sqlite)

on the bundled sample, against the slow loopback stub of ``concurrent_processes.py`` (it counts the
requests and the distinct requests it receives: a distinct request is a distinct judgment). The
PostgreSQL server is a throwaway one (``tests/postgres_server.py``: initdb into a temporary folder,
a free loopback port). The stub's counts leave out the server probes each worker sends once (they are
not judgments). The kill scenario kills the first of two workers (SIGKILL) while it asks;
the survivor finishes, then a third run on the same cache must pay nothing (everything paid is in
the memo).

Usage: ``python benchmarks/postgres_memo.py [--latency 0.1] [--concurrency 4] [--kill-at 40]``.
Figures are printed and written to ``benchmarks/results/postgres_memo.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "benchmarks")]

from concurrent_processes import STRATEGIES, SlowStub, judge_calls, rankings, run_together, start  # noqa: E402

from rankkit.judges.hosted.openai_compat import ENUM_PROBE_QUESTION, PROBE_QUESTION  # noqa: E402
from tests.postgres_server import fresh_database, throwaway_server, unavailable  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "postgres_memo.md"


class JudgmentStub(SlowStub):
    """The slow stub, telling apart the server probes each worker sends once before its first
    judgment: they are not judgments, and no memo holds them."""

    def reset(self) -> None:
        super().reset()
        self.probes = 0
        self.probe_bodies: set[str] = set()

    def post(self, request, body: dict) -> None:
        if {str(message.get("content")) for message in body.get("messages", [])} & {
            PROBE_QUESTION,
            ENUM_PROBE_QUESTION,
        }:
            with self._lock:
                self.probes += 1
                self.probe_bodies.add(hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest())
        super().post(request, body)

    def judgments(self) -> tuple[int, int]:
        """The judgment requests received, and the distinct ones."""
        return self.requests - self.probes, len(self.bodies - self.probe_bodies)


def two_workers(stub: SlowStub, concurrency: int, cache: str, folder: Path) -> dict:
    """Two workers on one fresh cache: requests per distinct request, the split and whether they agree."""
    stub.reset()
    outs = [folder / "a.json", folder / "b.json"]
    seconds = run_together(stub, concurrency, cache, outs)
    requests, distinct = stub.judgments()
    return {
        "requests": requests,
        "distinct": distinct,
        "ratio": requests / distinct,
        "probes": stub.probes,
        "split": [judge_calls(out) for out in outs],
        "seconds": seconds,
        "identical": rankings(outs[0]) == rankings(outs[1]),
    }


def killed_worker(stub: JudgmentStub, concurrency: int, cache: str, folder: Path, kill_at: int) -> dict:
    """Two workers on one fresh cache, the first killed once the stub has received ``kill_at``
    judgment requests; then a rerun on the same cache."""
    stub.reset()
    victim = start(stub, concurrency, cache, folder / "victim.json")
    survivor = start(stub, concurrency, cache, folder / "survivor.json")
    deadline = time.monotonic() + 300
    while stub.judgments()[0] < kill_at and victim.poll() is None and time.monotonic() < deadline:
        time.sleep(0.01)
    in_flight = stub.requests - stub.answered
    victim.kill()
    victim.wait()
    _, err = survivor.communicate(timeout=600)
    if survivor.returncode != 0:
        raise RuntimeError(f"rankkit compare exited with {survivor.returncode}:\n{err}")
    requests, distinct = stub.judgments()
    stub.reset()
    run_together(stub, concurrency, cache, [folder / "rerun.json"])
    return {
        "requests": requests,
        "distinct": distinct,
        "in_flight": in_flight,
        "rerun_requests": stub.judgments()[0],
        "identical": rankings(folder / "rerun.json") == rankings(folder / "survivor.json"),
    }


def measure(backend: str, cache: str, args: argparse.Namespace, folder: Path, kill_cache: str) -> dict:
    with JudgmentStub(args.latency) as stub:
        row = two_workers(stub, args.concurrency, cache, folder)
        row["kill"] = killed_worker(stub, args.concurrency, kill_cache, folder, args.kill_at)
    row["backend"] = backend
    kill = row["kill"]
    print(
        f"{backend}: {row['requests']} requests for {row['distinct']} distinct = {row['ratio']:.3f}x, split "
        f"{row['split']}, {row['seconds']:.1f} s, same rankings: {row['identical']}; kill: {kill['requests']} "
        f"for {kill['distinct']} distinct ({kill['in_flight']} in flight at the kill), rerun paid "
        f"{kill['rerun_requests']}, same rankings: {kill['identical']}"
    )
    return row


def report(rows: list[dict], args: argparse.Namespace) -> list[str]:
    lines = [
        "# Two workers sharing one memo: PostgreSQL beside SQLite",
        "",
        f"Produced by `python benchmarks/postgres_memo.py --latency {args.latency:g} --concurrency "
        f"{args.concurrency} --kill-at {args.kill_at}`.",
        "",
        f"Two `rankkit compare --strategies {STRATEGIES} --cache CACHE` workers started together on a fresh "
        "cache (bundled sample, 6 tasks), against a loopback OpenAI-compatible stub taking "
        f"{args.latency:g} s per request (concurrency={args.concurrency} per worker). A distinct request is a "
        "distinct judgment; 1.000 means nothing was paid twice. PostgreSQL: a throwaway local server "
        "(`tests/postgres_server.py`).",
        "",
        "| backend | judgment requests | distinct judgments | requests per distinct judgment | judgments paid, "
        "per worker | server probes (not judgments) | wall s | same rankings |",
        "|:---|---:|---:|---:|:---|---:|---:|:---|",
    ]
    lines += [
        f"| {r['backend']} | {r['requests']} | {r['distinct']} | {r['ratio']:.3f} | "
        f"{' + '.join(map(str, r['split']))} | {r['probes']} | {r['seconds']:.1f} | {'yes' if r['identical'] else 'NO'} |"
        for r in rows
    ]
    lines += [
        "",
        f"## One worker killed (SIGKILL) once the stub has received {args.kill_at} judgment requests",
        "",
        "The survivor takes over the dead worker's leases at once (same host, process gone) and finishes; "
        "then a third run on the same cache shows what the memo kept: it pays nothing when nothing paid was lost.",
        "",
        "| backend | requests | distinct | in flight at the kill (both workers) | paid twice | rerun's requests | rerun = survivor |",
        "|:---|---:|---:|---:|---:|---:|:---|",
    ]
    lines += [
        f"| {r['backend']} | {k['requests']} | {k['distinct']} | {k['in_flight']} | {k['requests'] - k['distinct']} | "
        f"{k['rerun_requests']} | {'yes' if k['identical'] else 'NO'} |"
        for r in rows
        for k in [r["kill"]]
    ]
    lines += [
        "",
        "Paid twice: the requests the killed worker had in flight (or had received but not yet committed: "
        "answers to leased keys are committed within 0.1 s). Wall time includes starting Python and rankkit "
        f"in every worker, on a shared {os.cpu_count()}-core machine ({platform.machine()}, Python "
        f"{platform.python_version()}).",
        "",
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.1, help="seconds the stub takes per request")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight per worker")
    parser.add_argument(
        "--kill-at", type=int, default=40, help="judgment requests received before the first worker is killed"
    )
    args = parser.parse_args()
    reason = unavailable()
    if reason:
        sys.exit(f"postgres_memo: {reason}")
    rows = []
    with tempfile.TemporaryDirectory() as tmp, throwaway_server() as server:
        folder = Path(tmp)
        rows.append(measure("SQLite", str(folder / "shared.sqlite"), args, folder, str(folder / "kill.sqlite")))
        rows.append(
            measure("PostgreSQL", fresh_database(server, "shared"), args, folder, fresh_database(server, "kill"))
        )
    RESULTS.write_text("\n".join(report(rows, args)))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
