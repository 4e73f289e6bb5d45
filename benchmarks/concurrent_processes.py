"""Requests per distinct judgment when 1, 2 and 4 processes share one cache file.

Every process runs the same command, started together against a fresh cache::

    rankkit compare --strategies knockout:order=both,bt --judge openai:stub,base_url=...,concurrency=C
                    --cache SHARED.sqlite --out ...

on the bundled sample, against **a slow stub server** on 127.0.0.1 (loopback only): an
OpenAI-compatible ``/v1/chat/completions`` endpoint that sleeps ``--latency`` seconds per request,
answers ``Answer 1: x/M ... Answer 2: y/M`` with scores drawn from a hash of the request (so equal
requests get equal answers and every run ranks alike), and counts the requests and the distinct
requests it receives. Distinct requests are distinct judgments, so

    requests per distinct judgment = requests received / distinct requests received

is 1.0 when nothing is paid twice. Without cross-process leases N processes pay about N times
(issue 24 reported 3.97× for 4 processes); the goal is ≤ 1.1×. The benchmark also checks that
every process wrote the same rankings and scores.

A second scenario makes a share of the stub's answers unparseable (``--unparseable``): a failed
judgment is used by every process that waited for it, as by its owner, so it is not paid again.

Usage: ``python benchmarks/concurrent_processes.py [--latency 0.3] [--concurrency 4] [--processes 1,2,4]
[--unparseable 0.25] [--kill-after 6]``.

A third scenario kills one of two processes (SIGKILL) while it asks: the survivor finishes, paying
again only for the requests the dead process had in flight.
Figures are printed and written to ``benchmarks/results/concurrent_processes.md``.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rankkit.judgments.cache import DEFAULT_LEASE_SECONDS, LEASED_COMMIT_SECONDS  # noqa: E402
from tests.servers import StubRequest, StubServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "concurrent_processes.md"
STRATEGIES = "knockout:order=both,bt"


class SlowStub(StubServer):
    """An OpenAI-compatible chat endpoint on 127.0.0.1 that sleeps ``latency`` seconds per request,
    answers a pairwise verdict derived from the request, and counts what it receives.

    requests: how many chat completions it received; answered: how many it finished answering;
    bodies: the distinct request bodies (their hashes).
    """

    def __init__(self, latency: float, unparseable: float = 0.0):
        super().__init__()
        self.latency = latency
        self.unparseable = unparseable
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        self.requests = 0
        self.answered = 0
        self.bodies: set[str] = set()

    def post(self, request: StubRequest, body: dict) -> None:
        digest = hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()
        with self._lock:
            self.requests += 1
            self.bodies.add(digest)
        time.sleep(self.latency)
        with self._lock:
            self.answered += 1
        first, second = int(digest[:2], 16) % 5, int(digest[2:4], 16) % 5  # 0..4: in every sample scale
        content = f"Explanation: stub.\nAnswer 1: {first}\nAnswer 2: {second}"
        if int(digest[4:8], 16) / 0x10000 < self.unparseable:
            content = "I cannot decide."  # no verdict: the judge records a parse failure
        try:
            request.send_json(
                200,
                {
                    "choices": [
                        {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": content}}
                    ],
                    "usage": {"prompt_tokens": 1, "completion_tokens": 1},
                },
            )
        except (BrokenPipeError, ConnectionResetError):  # the client was killed (crash scenario)
            pass


def rankings(path: Path) -> list:
    """What a results file says about the ranking (strategy, task, scores, ranking), without
    timings, costs or origins (those legitimately differ between processes)."""
    data = json.loads(path.read_text())
    return [(s["name"], [(t["task_id"], t["scores"], t["ranking"]) for t in s["tasks"]]) for s in data["strategies"]]


def start(stub: SlowStub, concurrency: int, cache: Path | str, out: Path) -> subprocess.Popen:
    """Start one ``rankkit compare`` on the shared ``cache`` against the stub, writing ``out``."""
    judge = f"openai:stub,base_url={stub.base_url},concurrency={concurrency}"
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "rankkit",
            "compare",
            "--strategies",
            STRATEGIES,
            "--judge",
            judge,
            "--cache",
            str(cache),
            "--quiet",
            "--format",
            "csv",
            "--out",
            str(out),
        ],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )


def run_together(stub: SlowStub, concurrency: int, cache: Path | str, outs: list[Path]) -> float:
    """Start one ``rankkit compare`` per output file on ``cache`` together; the wall seconds until all are done."""
    started = time.monotonic()
    commands = [start(stub, concurrency, cache, out) for out in outs]
    for command in commands:
        _, err = command.communicate(timeout=600)
        if command.returncode != 0:
            raise RuntimeError(f"rankkit compare exited with {command.returncode}:\n{err}")
    return time.monotonic() - started


def measure(stub: SlowStub, processes: int, concurrency: int, folder: Path) -> dict:
    """Start ``processes`` identical ``rankkit compare`` commands together on one fresh cache;
    return the stub's counts, the wall time and whether all outputs agree."""
    stub.reset()
    cache = folder / f"shared-{processes}.sqlite"
    outs = [folder / f"out-{processes}-{i}.json" for i in range(processes)]
    seconds = run_together(stub, concurrency, cache, outs)
    results = [rankings(out) for out in outs]
    return {
        "processes": processes,
        "requests": stub.requests,
        "distinct": len(stub.bodies),
        "ratio": stub.requests / len(stub.bodies),
        "seconds": seconds,
        "split": [judge_calls(out) for out in outs],
        "identical": all(r == results[0] for r in results),
    }


def measure_crash(stub: SlowStub, concurrency: int, folder: Path, kill_after: float) -> dict:
    """Start two ``rankkit compare`` commands on one fresh cache, the second ``kill_after`` / 2 s
    after the first, and kill the first (SIGKILL) ``kill_after`` s after it started: the survivor
    must take over the dead process's leases without waiting for them to expire."""
    stub.reset()
    cache, outs = folder / "crash.sqlite", [folder / "crash-0.json", folder / "crash-1.json"]
    victim = start(stub, concurrency, cache, outs[0])
    time.sleep(kill_after / 2)
    survivor = start(stub, concurrency, cache, outs[1])
    time.sleep(kill_after / 2)
    in_flight_at_kill = stub.requests - stub.answered
    victim.kill()
    victim.wait()
    killed = time.monotonic()
    _, err = survivor.communicate(timeout=600)
    if survivor.returncode != 0:
        raise RuntimeError(f"rankkit compare exited with {survivor.returncode}:\n{err}")
    return {
        "requests": stub.requests,
        "distinct": len(stub.bodies),
        "in_flight": in_flight_at_kill,
        "seconds_after_kill": time.monotonic() - killed,
        "rankings": rankings(outs[1]),
    }


def judge_calls(path: Path) -> int:
    """The judgments a process paid for, by its own results file."""
    return sum(s["cost"]["judge_calls"] for s in json.loads(path.read_text())["strategies"])


def table(rows: list[dict]) -> list[str]:
    """The markdown table of one scenario's measurements."""
    lines = [
        "| processes | requests | distinct requests | requests per distinct request | judgments paid, "
        "per process | wall s | same rankings in every process |",
        "|---:|---:|---:|---:|:---|---:|:---|",
    ]
    lines += [
        f"| {r['processes']} | {r['requests']} | {r['distinct']} | {r['ratio']:.3f} | "
        f"{' + '.join(map(str, r['split']))} | {r['seconds']:.1f} | {'yes' if r['identical'] else 'NO'} |"
        for r in rows
    ]
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--latency", type=float, default=0.3, help="seconds the stub takes per request")
    parser.add_argument("--concurrency", type=int, default=4, help="requests in flight per process")
    parser.add_argument("--processes", default="1,2,4", help="comma-separated process counts")
    parser.add_argument(
        "--kill-after",
        type=float,
        default=6.0,
        help="crash scenario: seconds after its start the first process is killed",
    )
    parser.add_argument(
        "--unparseable", type=float, default=0.25, help="share of answers without a verdict in the second scenario"
    )
    args = parser.parse_args()
    counts = [int(n) for n in args.processes.split(",")]
    failing = f"{args.unparseable:.0%} of answers have no verdict (parse failures, each retried once)"
    scenarios = {"every answer parses": 0.0, failing: args.unparseable}
    measured: dict[str, list[dict]] = {}
    reference = None  # the rankings of one process alone, every answer parsing
    for title, unparseable in scenarios.items():
        rows = measured[title] = []
        with SlowStub(args.latency, unparseable) as stub, tempfile.TemporaryDirectory() as tmp:
            for count in counts:
                row = measure(stub, count, args.concurrency, Path(tmp))
                rows.append(row)
                print(
                    f"{title}: {count} process(es): {row['requests']} requests for {row['distinct']} distinct "
                    f"= {row['ratio']:.3f}x, paid per process {row['split']}, {row['seconds']:.1f} s, "
                    f"identical results: {row['identical']}"
                )
                if count == 1 and unparseable == 0:
                    reference = rankings(Path(tmp) / "out-1-0.json")
    with SlowStub(args.latency) as stub, tempfile.TemporaryDirectory() as tmp:
        crash = measure_crash(stub, args.concurrency, Path(tmp), args.kill_after)
    crash["identical"] = crash["rankings"] == reference
    print(
        f"crash: {crash['requests']} requests for {crash['distinct']} distinct, "
        f"{crash['in_flight']} in flight at the kill, "
        f"survivor done {crash['seconds_after_kill']:.1f} s after the kill, same rankings: {crash['identical']}"
    )
    lines = [
        "# Processes sharing one cache file: requests per distinct judgment",
        "",
        "Produced by `python benchmarks/concurrent_processes.py "
        f"--latency {args.latency:g} --concurrency {args.concurrency} --processes {args.processes} "
        f"--unparseable {args.unparseable:g} --kill-after {args.kill_after:g}`.",
        "",
        f"N identical `rankkit compare --strategies {STRATEGIES} --cache SHARED.sqlite` processes, started "
        "together on a fresh cache, on the bundled sample (6 tasks), with an OpenAI-compatible stub "
        f"server on 127.0.0.1 that takes {args.latency:g} s per request (concurrency={args.concurrency} per "
        "process). The stub counts the requests it receives and the distinct ones: a distinct request is "
        "a distinct judgment (or, with parse failures, a judgment's retry). 1.000 means nothing was paid twice; "
        "`judgments paid, per process` (each process's `judge_calls`) shows that the processes shared the work.",
        "",
    ]
    for title, rows in measured.items():
        lines += [f"## {title[0].upper() + title[1:]}", ""] + table(rows) + [""]
    lines += [
        "## A process killed while asking",
        "",
        f"Two processes, the second started {args.kill_after / 2:g} s after the first; the first is killed "
        f"(SIGKILL) {args.kill_after:g} s after its start, holding leases on the requests it had in flight. "
        "The survivor takes those over at once (the dead owner ran on this host and its process is gone; "
        f"from another host it would wait for the lease to expire, at most {DEFAULT_LEASE_SECONDS:g} s).",
        "",
        "| requests | distinct requests | in flight at the kill | survivor done after the kill, s "
        "| survivor's rankings = one process alone |",
        "|---:|---:|---:|---:|:---|",
        f"| {crash['requests']} | {crash['distinct']} | {crash['in_flight']} | {crash['seconds_after_kill']:.1f} | "
        f"{'yes' if crash['identical'] else 'NO'} |",
        "",
        f"Paid twice: {crash['requests'] - crash['distinct']} requests, those the killed process had in flight "
        "(as the stub counted them just before the kill) plus any it had sent or received but not yet "
        "committed at the instant it died (answers to leased keys are committed within "
        f"{LEASED_COMMIT_SECONDS:g} s). The survivor asked these again, as intended.",
        "",
    ]
    lines += [
        "Before leases, 4 processes paid 3.97 requests per distinct judgment (issue 24); the goal is ≤ 1.1.",
        "",
        "How: before asking the judge, a process takes a lease (a row of the cache's `leases` table) on "
        "each key it is missing; keys leased by another process are read from the cache once that "
        "process commits them, a failed judgment included when it was committed while waiting (see "
        "`rankkit/judgments/cache.py`, Leases). Wall time includes starting Python and loading rankkit in every "
        f"process, on a shared {os.cpu_count()}-core machine ({platform.machine()}, Python "
        f"{platform.python_version()}); the processes run concurrently, so it stays near one run's time.",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
