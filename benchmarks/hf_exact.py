"""Exact vs batched smollm2 judging: judgments per second, and how many judgments two batchings change.

For each dataset (the bundled sample; the first 10 Topical-Chat tasks, long dialogue prompts) and
each engine mode (``exact=true``, the default; ``exact=false``, the batched path), ranks the tasks
with ``knockout:order=both`` twice, batched differently:

* run A: 4 tasks in progress at once through the dispatcher (batched mode: calls mixing tasks,
  batches of 8);
* run B: one task at a time, ``batch_size=4`` (batched mode: per-task calls, smaller batches).

Each run starts from a fresh engine (empty prefix/block cache) and no judgment cache. Reported:
judgments per second of each run (judge calls / wall time), and between A and B the matches both
played whose probability differs, whose winner differs, and whether the results JSON (without
timings) is identical. Exact mode must show 0 differences. Runs go back to back in the order
exact A, batched A, exact B, batched B per dataset, so background load hits both modes alike.

    python benchmarks/hf_exact.py [--data ../shared/data] [--topical 10]

Then the **block size** (:data:`rankkit.judges.local.hf_exact.DEFAULT_BLOCK`): a fixed set of requests
(each task's candidates paired off, in both orders) judged in one call by a fresh exact engine per
block size, on the sample and on the first 4 Topical-Chat tasks, against the batched path and
the batched path at ``batch_size=1``; with the forward passes and the tokens each computed.

Prints the figures and writes ``benchmarks/results/hf_exact.md`` (about 10 minutes on 2 cores).
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results" / "hf_exact.md"
DATA = ROOT.parent / "shared" / "data"
STRATEGY = "knockout:order=both"
BLOCKS = (64, 128, 256, 512, 1024)
RUNS = {"A": {"workers": 4, "options": ""}, "B": {"workers": 1, "options": ",batch_size=4"}}


def rank(tasks, exact: bool, run: str) -> tuple[dict, float, int, dict]:
    """One run: (results JSON, wall seconds, judge calls, engine stats)."""
    from rankkit.judges import make_judge
    from rankkit.judgments.cache import NullCache
    from rankkit.runs.runner import run as run_tasks
    from rankkit.strategies.base import make_strategy

    spec = f"smollm2:exact={str(exact).lower()}{RUNS[run]['options']}"
    judge = make_judge(spec)
    started = time.perf_counter()
    result = run_tasks(
        tasks,
        [make_strategy(STRATEGY)],
        judge,
        cache=NullCache(),
        seed=0,
        progress=False,
        judge_spec="smollm2",
        workers=RUNS[run]["workers"],
    )
    seconds = time.perf_counter() - started
    payload = result.to_dict()
    calls = sum(s["cost"]["judge_calls"] for s in payload["strategies"])
    return payload, seconds, calls, dict(judge.runtime.stats)


def matches(payload: dict) -> dict[tuple, tuple]:
    """(task, first, second) -> (probability, winner) of every match the run played."""
    out = {}
    for strategy in payload["strategies"]:
        for task in strategy["tasks"]:
            for m in task["matches"]:
                out[(task["task_id"], m["first"], m["second"])] = (m["probability"], m["winner"])
    return out


def without_timings(payload):
    if isinstance(payload, dict):
        return {k: without_timings(v) for k, v in payload.items() if k != "seconds"}
    if isinstance(payload, list):
        return [without_timings(v) for v in payload]
    return payload


def differences(a: dict, b: dict) -> dict:
    ma, mb = matches(a), matches(b)
    both = sorted(set(ma) & set(mb))
    return {
        "common": len(both),
        "only_one": len(set(ma) ^ set(mb)),
        "probability": sum(ma[k][0] != mb[k][0] for k in both),
        "winner": sum(ma[k][1] != mb[k][1] for k in both),
        "max_delta": max(
            (abs(ma[k][0] - mb[k][0]) for k in both if ma[k][0] is not None and mb[k][0] is not None), default=0.0
        ),
        "identical": without_timings(a) == without_timings(b),
    }


def block_sweep(tasks) -> list[str]:
    """Judgments/s, passes and tokens computed for each block size (and the batched path)."""
    from rankkit.judges import make_judge

    requests = [(t, a, b) for t in tasks for a, b in zip(t.candidates[::2], t.candidates[1::2])]
    requests += [(t, b, a) for t, a, b in requests]
    rows = []
    for options in [f"exact=true,block={b}" for b in BLOCKS] + ["exact=false", "exact=false,batch_size=1"]:
        judge = make_judge(f"smollm2:{options}")
        started = time.perf_counter()
        dict(judge.compare_many(requests))
        seconds = time.perf_counter() - started
        s, eng = judge.runtime.stats, judge.runtime
        if eng.exact:
            passes, tokens = s["exact_rows"] + s["blocks_computed"], s["real_tokens"] + s["blocks_computed"] * eng.block
        else:
            passes = s["forward_batches"] + s["prefix_passes"]
            tokens = s["real_tokens"] + s["padding_tokens"] + s["prefix_tokens_computed"]
        print(f"{options}: {len(requests) / seconds:.2f}/s, {passes} passes, {tokens} tokens", flush=True)
        rows.append(
            f"| `{options}` | {len(requests)} | {seconds:.1f} | {len(requests) / seconds:.2f} | {passes} | "
            f"{tokens} | {os.getloadavg()[0]:.1f} |"
        )
    return [
        "| engine | judgments | seconds | judgments/s | forward passes | tokens computed | load avg |",
        "|---|---|---|---|---|---|---|",
        *rows,
        "",
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--topical", type=int, default=10, help="Topical-Chat tasks (0: skip)")
    args = parser.parse_args()
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    from rankkit.data.tasks import SAMPLE_DATA, load_tasks
    from rankkit.judges.local import hf_loading
    from rankkit.judges.local.hf_exact import DEFAULT_BLOCK

    torch = hf_loading.import_torch()
    datasets = [("bundled sample (6 tasks)", load_tasks(SAMPLE_DATA))]
    topical = args.data / "usr_topicalchat" / "tasks.jsonl"
    if args.topical and topical.is_file():
        datasets.append((f"Topical-Chat, first {args.topical} tasks", load_tasks(topical, limit=args.topical)))
    hf_loading.load_smollm2()  # load once, outside the timings
    lines = [
        "# Exact vs batched smollm2 judging (CPU)",
        "",
        f"Machine: {platform.machine()}, {os.cpu_count()} CPUs, torch {torch.__version__} with "
        f"{torch.get_num_threads()} threads, bf16, block {DEFAULT_BLOCK} (the default). **Shared 2-core machine**: 1-min load "
        f"average {os.getloadavg()[0]:.1f} at start; runs are back to back (never in parallel), in "
        f"the order exact A, batched A, exact B, batched B per dataset.",
        "",
        f"Strategy `{STRATEGY}`, no judgment cache, a fresh engine per run. Run A: 4 tasks at once "
        f"through the dispatcher (batched mode: calls mixing tasks, batch_size 8); run B: one task at "
        f"a time, batch_size 4.",
        "",
    ]
    for name, tasks in datasets:
        print(f"== {name}", flush=True)
        runs = {}
        for run in ("A", "B"):
            for exact in (True, False):
                load = os.getloadavg()[0]
                runs[exact, run] = rank(tasks, exact, run) + (load,)
                _, seconds, calls, stats, _ = runs[exact, run]
                print(
                    f"exact={exact} run {run}: {calls} judgments in {seconds:.1f}s = {calls / seconds:.2f}/s "
                    f"(load {load:.1f})",
                    flush=True,
                )
        lines += [
            f"## {name}",
            "",
            "| mode | run | judgments | seconds | judgments/s | load avg | engine |",
            "|---|---|---|---|---|---|---|",
        ]
        for (exact, run), (_, seconds, calls, stats, load) in runs.items():
            engine = (
                f"{stats['exact_rows']} rows alone; blocks: {stats['blocks_computed']} computed, "
                f"{stats['blocks_reused']} reused"
                if exact
                else f"{stats['forward_batches']} batches, {stats['batch_rows']} rows, "
                f"{stats['prefix_tokens_saved']} prefix tokens reused"
            )
            lines.append(
                f"| {'exact' if exact else 'batched'} | {run} | {calls} | {seconds:.1f} | "
                f"{calls / seconds:.2f} | {load:.1f} | {engine} |"
            )
        speed = {
            exact: sum(runs[exact, r][2] for r in "AB") / sum(runs[exact, r][1] for r in "AB")
            for exact in (True, False)
        }
        lines += [
            "",
            f"Judgments/s over both runs: exact **{speed[True]:.2f}**, batched **{speed[False]:.2f}** "
            f"(exact/batched **{speed[True] / speed[False]:.2f}x**).",
            "",
            "| mode | matches in both runs | probability differs | winner differs | max abs diff "
            "| played by one run only | results JSON identical |",
            "|---|---|---|---|---|---|---|",
        ]
        for exact in (True, False):
            d = differences(runs[exact, "A"][0], runs[exact, "B"][0])
            print(f"exact={exact}: {d}", flush=True)
            lines.append(
                f"| {'exact' if exact else 'batched'} | {d['common']} | {d['probability']} | "
                f"{d['winner']} | {d['max_delta']:.3g} | {d['only_one']} | "
                f"{'yes' if d['identical'] else 'no'} |"
            )
        lines.append("")
    lines += [
        "## Block size",
        "",
        "Each task's candidates paired off, both orders, one call, a fresh engine per line, run in "
        "the order listed. Tokens computed: exact, the rows' final passes plus the blocks computed; "
        "batched, batch rows with their padding plus shared-prefix passes.",
        "",
    ]
    for name, tasks in datasets:
        print(f"== block sweep: {name}", flush=True)
        lines += [
            f"### {name if 'sample' in name else 'Topical-Chat, first 4 tasks'}",
            "",
            *block_sweep(tasks if "sample" in name else tasks[:4]),
        ]
    RESULTS.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print(f"wrote {RESULTS.relative_to(ROOT)}")


if __name__ == "__main__":
    main()
