"""How busy the dispatcher keeps a judge server: utilisation across many tasks (issue 12).

A stub OpenAI-compatible server on 127.0.0.1 answers every chat completion after a fixed
``--latency`` with a verdict derived from a hash of the request (so strategies get varied,
deterministic answers) and counts the requests it served and the most it had in flight. rankkit's
``openai:`` judge with ``concurrency=C`` then ranks ``--tasks`` synthetic tasks of ``--size``
candidates with each strategy in turn (no cache, so every judgment is a request).

    utilisation = achieved requests/s ÷ (C / latency)

is the share of the judge's capacity the dispatcher used (1.0 = every slot busy all the time).

With ``--hf`` it also runs the embedded SmolLM2 judge (``smollm2``, logprob mode) on a multi-task
knockout and reports batch fill = mean judge-call size ÷ ``batch_size``.

    python benchmarks/dispatch.py [--tasks 64] [--size 8] [--latency 0.2] [--concurrency 32] [--hf]

Figures are printed and written to ``benchmarks/results/dispatch.md`` (``--label`` names the row
set, e.g. ``before`` when run against an older checkout with ``PYTHONPATH``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import threading
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import multiprocessing.connection

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import StubRequest, StubServer  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "dispatch.md"
STRATEGIES = ["knockout", "knockout:order=both", "heapsort", "swiss", "active", "bt"]


class StatsStub(StubServer):
    """A chat-completions stub that answers after ``latency`` seconds with a verdict drawn from the
    request's hash; ``GET /stats`` returns how many requests it served and the most held at once."""

    def __init__(self, latency: float):
        super().__init__()
        self.latency = latency
        self.served = self.in_flight = self.max_in_flight = 0
        self._lock = threading.Lock()

    def get(self, request: StubRequest) -> None:
        with self._lock:
            request.send_json(200, {"served": self.served, "max_in_flight": self.max_in_flight})

    def post(self, request: StubRequest, body: dict) -> None:
        with self._lock:
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
        time.sleep(self.latency)
        text = json.dumps(body)
        digest = hashlib.sha256(text.encode()).digest()
        first, second = digest[0] % 11, digest[1] % 11
        verdict = f"Answer 1: {first}/10 Answer 2: {second}/10" if "Answer 2" in text else f"Score: {first}/10"
        request.send_json(
            200,
            {
                "choices": [
                    {
                        "index": 0,
                        "finish_reason": "stop",
                        "message": {"role": "assistant", "content": f"Explanation: stub. {verdict}"},
                    }
                ],
                "usage": {"prompt_tokens": 1, "completion_tokens": 1},
            },
        )
        with self._lock:
            self.in_flight -= 1
            self.served += 1


def serve_stub(latency: float, port_out: multiprocessing.connection.Connection) -> None:
    """The stub server's process: :class:`StatsStub` on a free loopback port, sent through ``port_out``."""
    stub = StatsStub(latency)
    port_out.send(stub.port)
    stub.server.serve_forever(poll_interval=0.05)


class VerdictStub:
    """The stub server in a process of its own (so its threads do not compete with the client for
    the interpreter lock), for a ``with`` block; ``served`` and ``max_in_flight`` are read from
    it at the end."""

    def __init__(self, latency: float):
        self.latency = latency
        self.served = self.max_in_flight = 0

    def __enter__(self) -> VerdictStub:
        import multiprocessing

        receiver, sender = multiprocessing.Pipe(duplex=False)
        self.process = multiprocessing.Process(target=serve_stub, args=(self.latency, sender), daemon=True)
        self.process.start()
        self.base_url = f"http://127.0.0.1:{receiver.recv()}/v1"
        return self

    def stats(self) -> dict:
        import httpx

        return httpx.get(self.base_url.removesuffix("/v1") + "/stats", timeout=10).json()

    def __exit__(self, *exc: object) -> None:
        stats = self.stats()
        self.served, self.max_in_flight = stats["served"], stats["max_in_flight"]
        self.process.terminate()
        self.process.join(5)


def synthetic_tasks(count: int, size: int):
    from rankkit.data.tasks import Candidate, Task

    tasks = []
    for k in range(count):
        candidates = tuple(
            Candidate(
                id=f"c{i}",
                text=f"answer {i} to question {k}: " + "word " * (5 + (i * 7 + k) % 40),
                human={"score": float((i * 5 + k * 3) % 10)},
            )
            for i in range(size)
        )
        tasks.append(
            Task(
                task_id=f"q{k:03d}",
                prompt=f"Question {k}: explain topic {k}.",
                candidates=candidates,
                criterion="score",
                scale=(0.0, 10.0),
            )
        )
    return tasks


def http_rows(args) -> list[dict]:
    from rankkit import make_judge, make_strategy, run

    tasks = synthetic_tasks(args.tasks, args.size)
    rows = []
    for spec in args.strategies.split(","):
        with VerdictStub(args.latency) as stub:
            judge = make_judge(
                f"openai:stub,base_url={stub.base_url},concurrency={args.concurrency},retries=0,max_new_tokens=32"
            )
            # One warm-up request outside the timing: importing httpx and opening the client
            # (~0.5 s here) is start-up, not what the dispatcher does with the judge's slots; so is
            # importing scipy.stats for the metrics at the end of the run (~1 s).
            import scipy.stats  # noqa: F401

            warm_task = synthetic_tasks(1, 2)[0]
            judge.grade(warm_task, warm_task.candidates[0])
            warm = stub.stats()["served"]
            started = time.perf_counter()
            run(tasks, [make_strategy(spec)], judge, None, seed=0, progress=False)
            wall = time.perf_counter() - started
            judge.close()
        stub.served -= warm
        rate = stub.served / wall
        ideal = args.concurrency / args.latency
        rows.append(
            {
                "strategy": spec,
                "requests": stub.served,
                "seconds": wall,
                "rate": rate,
                "utilisation": rate / ideal,
                "max_in_flight": stub.max_in_flight,
            }
        )
        print(
            f"{spec:22s} requests={stub.served:5d} {wall:6.1f} s {rate:7.1f} req/s "
            f"utilisation={rate / ideal:.2f} max in flight={stub.max_in_flight}",
            flush=True,
        )
    return rows


def hf_row(args) -> dict:
    from rankkit import make_judge, make_strategy, run

    tasks = synthetic_tasks(args.hf_tasks, 8)
    # exact=false: this row measures how the dispatcher fills batches (exact mode runs rows alone).
    judge = make_judge(f"smollm2:mode=logprob,batch_size={args.batch_size},exact=false")
    started = time.perf_counter()
    result = run(tasks, [make_strategy("knockout")], judge, None, seed=0, progress=False)
    wall = time.perf_counter() - started
    dispatch = getattr(result, "dispatch", None) or getattr(result, "engine", {})  # 0.2 called it engine
    batches = dispatch.get("batches") or []
    judge.close()
    fill = (sum(batches) / len(batches) / args.batch_size) if batches else float("nan")
    print(
        f"hf knockout: {len(tasks)} tasks, batch_size={args.batch_size}, judge calls={len(batches)}, "
        f"mean batch={sum(batches) / max(len(batches), 1):.1f}, fill={fill:.2f}, {wall:.1f} s",
        flush=True,
    )
    return {
        "tasks": len(tasks),
        "batch_size": args.batch_size,
        "calls": len(batches),
        "fill": fill,
        "seconds": wall,
        "batches": batches,
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=64)
    parser.add_argument("--size", type=int, default=8)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    parser.add_argument("--hf", action="store_true", help="also measure HF batch fill with SmolLM2")
    parser.add_argument("--hf-tasks", type=int, default=16)
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--label", default="after")
    parser.add_argument("--strategies", default=",".join(STRATEGIES), help="comma-separated strategy specs")
    args = parser.parse_args()
    rows = http_rows(args)
    lines = [
        f"## {args.label}: {args.tasks} tasks × {args.size} candidates, stub latency {args.latency:g} s, "
        f"concurrency {args.concurrency} (ideal {args.concurrency / args.latency:.0f} requests/s)",
        "",
        f"`python benchmarks/dispatch.py --tasks {args.tasks} --size {args.size} --latency {args.latency:g} "
        f"--concurrency {args.concurrency}{' --hf' if args.hf else ''}`",
        "",
        "| strategy | requests | seconds | requests/s | utilisation | max in flight |",
        "|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['strategy']} | {row['requests']} | {row['seconds']:.1f} | {row['rate']:.1f} | "
            f"{row['utilisation']:.2f} | {row['max_in_flight']} |"
        )
    if args.hf:
        hf = hf_row(args)
        lines += [
            "",
            f"HF (SmolLM2, logprob mode) knockout on {hf['tasks']} tasks × 8 candidates, batch_size "
            f"{hf['batch_size']}: {hf['calls']} judge calls, batch fill **{hf['fill']:.2f}** "
            f"(call sizes {hf['batches']}), {hf['seconds']:.1f} s.",
        ]
    section = "\n".join(lines) + "\n"
    previous = RESULTS.read_text(encoding="utf-8") if RESULTS.exists() else "# Engine utilisation\n"
    marker = f"## {args.label}:"
    if marker in previous:  # replace this label's section, keep the others
        head, _, tail = previous.partition(marker)
        rest = tail.split("\n## ", 1)
        previous = head + ("## " + rest[1] if len(rest) > 1 else "")
    RESULTS.write_text(previous.rstrip("\n") + "\n\n" + section, encoding="utf-8")
    print(f"wrote {RESULTS}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
