"""How rankkit's own cost grows with the number of candidates N (issue 13), measured in one run.

With the simulated judge (``sim:preset=gpt4``, no cache) a judgment costs microseconds, so the time
per judgment is rankkit's own overhead: strategy, match source, judgment memo, metrics. Everything
goes through the public API (``rankkit.run``, ``make_strategy``, ``make_judge``,
``JudgmentCache``), so the figures follow any change to the engine. Each measurement runs in a
child process (its own memory peak, and a time limit, so that one runaway cell cannot stall the
sweep) and is reported as a ratio against a floor measured in the same run:

* every strategy: µs per judgment at N = 32 and at N = 2048 (all-pairs strategies at N = 512, i.e.
  261,632 debiased comparisons), and their ratio (goal <= 2: linear work per judgment);
* ``active``: ms per step at N = 128, and the total time at N = 2048 with its default budget;
* the warm-cache path (a second run whose every judgment is in the SQLite cache): µs per
  comparison against one SQLite lookup plus one networkx ``add_edge`` (goal <= 3);
* ``rankkit strategies``: wall time over ``python -c pass``, medians of several runs (goal <= 5);
* 10^5 tasks of N = 2 with ``knockout``: the peak memory of the run (and 10^4 tasks beside it);
* ``active`` above its exact size: the incremental posterior with pre-selected pairs against the
  exact refit scoring every pair, same tasks and judges (task Spearman), the evidence that the
  approximation costs no accuracy.

    python benchmarks/scaling.py            # the full sweep (several minutes)
    python benchmarks/scaling.py --quick    # smaller N and fewer tasks (about a minute)

Writes ``benchmarks/results/scaling.md``.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
JUDGE = "sim:preset=gpt4"
#: Strategies that judge every pair: their large N is capped (N = 512 is 261,632 judgments).
ALL_PAIRS = ("elo", "bt", "panel_elo")
GOAL_RATIO = 2.0


# -- the measurements (each runs in a child process: `--cell JSON`) ------------------------------


def synthetic_task(n: int, seed: int, task_id: str):
    """A task of n candidates with distinct random human scores on a 0-10 scale."""
    from rankkit.data.tasks import Candidate, Task

    rng = random.Random(seed)
    candidates = tuple(
        Candidate(id=f"c{i:05d}", text=f"answer {i} of {task_id}", human={"score": round(rng.uniform(0, 10), 3)})
        for i in range(n)
    )
    return Task(
        task_id=task_id, prompt=f"question {task_id}", candidates=candidates, criterion="score", scale=(0.0, 10.0)
    )


def peak_mb() -> float:
    import resource

    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # kB on Linux


def timed_run(spec: str, tasks: list, cache=None) -> tuple[float, object]:
    from rankkit import make_judge, make_strategy, run

    started = time.perf_counter()
    result = run(tasks, [make_strategy(spec)], make_judge(JUDGE), cache, progress=False)
    return time.perf_counter() - started, result.strategies[0]


def cell_strategy(spec: str, n: int, target: int, repeats: int) -> dict:
    """µs per judgment of ``spec`` on tasks of n candidates, about ``target`` judgments a run
    (more tasks for small N), the fastest of ``repeats`` runs."""
    timed_run(spec, [synthetic_task(4, 0, "warm-up")])  # lazy imports happen here, not in a measurement
    probe_seconds, probe = timed_run(spec, [synthetic_task(n, 0, "t0")])
    per_task = probe.cost.comparisons + probe.cost.grades
    count = max(1, min(2000, math.ceil(target / max(1, per_task))))
    if count == 1:  # the probe is a measurement already; repeat only short ones
        runs = [(probe_seconds, probe)] + [
            timed_run(spec, [synthetic_task(n, 0, "t0")]) for _ in range(repeats - 1 if probe_seconds < 2 else 0)
        ]
    else:
        tasks = [synthetic_task(n, k, f"t{k}") for k in range(count)]
        runs = [timed_run(spec, tasks) for _ in range(repeats)]
    best, strategy_run = min(runs, key=lambda pair: pair[0])
    judgments = strategy_run.cost.comparisons + strategy_run.cost.grades
    extras = next(iter(strategy_run.tasks[0].extras.values()), None)
    return {
        "us": best / judgments * 1e6,
        "judgments": judgments,
        "tasks": count,
        "seconds": best,
        "steps": extras.steps if extras else None,
        "peak_mb": peak_mb(),
    }


def cell_warm(n: int, count: int) -> dict:
    """Cold then warm runs of all-pairs ``bt`` on a fresh SQLite cache, and the floor: one cache
    lookup plus one add_edge per comparison, on the very keys the run used (the floor 0.1 was
    measured against, kept so that the ratio compares across versions)."""
    import networkx as nx

    from rankkit import JudgmentCache, make_judge
    from rankkit.judgments.values import VERDICT_KIND

    tasks = [synthetic_task(n, k, f"w{k}") for k in range(count)]
    with tempfile.TemporaryDirectory() as folder:
        cache = JudgmentCache(Path(folder) / "cache.sqlite")
        cold, _ = timed_run("bt", tasks, cache)
        warm, strategy_run = timed_run("bt", tasks, cache)
        assert strategy_run.cost.judge_calls == 0, "the warm run asked the judge"
        judge = make_judge(JUDGE)
        lookups = [
            (task.candidate(c.first), task.candidate(c.second), task)
            for task, result in zip(tasks, strategy_run.tasks)
            for c in result.comparisons
        ]
        keys = [judge.request_key(task, a, b) for a, b, task in lookups]
        graph = nx.MultiDiGraph()
        started = time.perf_counter()
        for (a, b, _), key in zip(lookups, keys):
            payload = cache.get(judge.fingerprint, VERDICT_KIND, key)
            graph.add_edge(a.id, b.id, key=judge.fingerprint, judgment=payload)
        floor = time.perf_counter() - started
        cache.close()
    comparisons = strategy_run.cost.comparisons
    return {
        "cold_us": cold / comparisons * 1e6,
        "warm_us": warm / comparisons * 1e6,
        "floor_us": floor / len(lookups) * 1e6,
        "comparisons": comparisons,
    }


def cell_memory(count: int) -> dict:
    """Peak memory of knockout on ``count`` tasks of two candidates, above the process's peak
    after a warm-up run (libraries loaded); the results per task are kept (they are the output)."""
    timed_run("knockout", [synthetic_task(2, k, f"warm-up{k}") for k in range(10)])
    before = peak_mb()
    tasks = [synthetic_task(2, k, f"m{k}") for k in range(count)]
    loaded = peak_mb()
    seconds, strategy_run = timed_run("knockout", tasks)
    return {
        "tasks": count,
        "start_mb": before,
        "tasks_mb": loaded,
        "peak_mb": peak_mb(),
        "seconds": seconds,
        "comparisons": strategy_run.cost.comparisons,
    }


def cell_active_exactness(n: int, seeds: int) -> dict:
    """Task Spearman of ``active`` refitting exactly and scoring every pair against its
    incremental, pre-selecting mode, on the same tasks and judges."""
    import rankkit.strategies.active as active
    from rankkit import make_judge, make_strategy, run

    out: dict[str, dict[str, list[float]]] = {}
    for preset in ("gpt4", "chatgpt", "falcon"):
        for mode, exact_up_to in (("exact", n), ("incremental", 0)):
            active.EXACT_UP_TO = exact_up_to
            values, seconds = [], []
            for seed in range(seeds):
                started = time.perf_counter()
                result = run(
                    [synthetic_task(n, 100 + seed, f"a{seed}")],
                    [make_strategy("active")],
                    make_judge(f"sim:preset={preset},seed={seed}"),
                    progress=False,
                    seed=seed,
                )
                seconds.append(time.perf_counter() - started)
                values.append(result.strategies[0].metrics["task_spearman"])
            out.setdefault(preset, {})[mode] = values
            out[preset][f"{mode}_seconds"] = seconds
    return out


CELLS = {"strategy": cell_strategy, "warm": cell_warm, "memory": cell_memory, "active_exactness": cell_active_exactness}


def run_cell(kind: str, timeout: float, **params) -> dict:
    """One measurement in a child process; ``{"error": ...}`` when it fails or times out."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    command = [sys.executable, str(Path(__file__).resolve()), "--cell", json.dumps({"kind": kind, **params})]
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": done.stderr.strip().splitlines()[-1] if done.stderr.strip() else f"exit {done.returncode}"}
    return json.loads(done.stdout.strip().splitlines()[-1])


def startup_ratio(runs: int) -> dict:
    """Median wall time of ``rankkit strategies`` and of ``python -c pass``, interleaved."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    commands = {
        "bare": [sys.executable, "-c", "pass"],
        "strategies": [sys.executable, "-m", "rankkit.cli", "strategies"],
    }
    times: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, command in commands.items():
            started = time.perf_counter()
            subprocess.run(command, capture_output=True, check=True, env=env)
            times[name].append(time.perf_counter() - started)
    bare, listing = statistics.median(times["bare"]), statistics.median(times["strategies"])
    return {"bare_s": bare, "strategies_s": listing, "ratio": listing / bare}


# -- the sweep and the report ---------------------------------------------------------------------


def strategy_names() -> list[str]:
    from rankkit.strategies import strategy_classes

    return [name for name, cls in strategy_classes().items() if cls.__module__.startswith("rankkit.")]


def fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:,.{digits}f}"


def sweep(quick: bool, timeout: float) -> list[str]:
    small = 32
    large, large_all_pairs, active_large = (256, 128, 512) if quick else (2048, 512, 2048)
    target, repeats = (5_000, 2) if quick else (20_000, 3)
    lines = [
        "# Scaling: rankkit's own cost as N grows (issue 13)",
        "",
        f"Simulated judge `{JUDGE}`, no cache unless said: time per judgment is rankkit's own overhead. "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs (shared); "
        f"{'--quick' if quick else 'full'} sweep; each cell in its own process, limit {timeout:.0f} s.",
        "",
    ]

    def say(text: str = "") -> None:
        print(text, flush=True)
        lines.append(text)

    say("## Strategies: µs per judgment at small and large N")
    say()
    say(f"| strategy | N | µs/judgment | judgments | N | µs/judgment | judgments | ratio (goal ≤ {GOAL_RATIO:g}) |")
    say("|---|---:|---:|---:|---:|---:|---:|---:|")
    active_total = None
    timed_out: list[str] = []
    for name in strategy_names():
        big = large_all_pairs if name in ALL_PAIRS else (active_large if name == "active" else large)
        low = run_cell("strategy", timeout, spec=name, n=small, target=target, repeats=repeats)
        high = run_cell(
            "strategy", timeout * (5 if name == "active" else 1), spec=name, n=big, target=0, repeats=repeats
        )  # one task at large N
        if name == "active":
            active_total = high
        ratio = high["us"] / low["us"] if "us" in low and "us" in high else None
        mark = "" if ratio is None or name == "active" else (" ✓" if ratio <= GOAL_RATIO else " ✗")
        if "error" in high and name in ALL_PAIRS:
            timed_out.append(name)
        say(
            f"| {name} | {small} | {fmt(low.get('us'))} | {fmt(low.get('judgments'), 0)} | {big} | "
            f"{fmt(high.get('us')) if 'us' in high else high['error']} | {fmt(high.get('judgments'), 0)} | "
            f"{fmt(ratio, 2)}{mark} |"
        )
    say()
    say(
        "`active` does O(N²) work per step by design (a dense posterior covariance), so its cost per "
        "judgment grows with N; its goals are per step and in total, below."
    )
    if timed_out:
        say(
            f"{', '.join(timed_out)} at N = {large_all_pairs} ran out of time in the match source, whose "
            "de-duplication of a batch scans a list (quadratic in the batch, i.e. O(N⁴) for all pairs); "
            "those rows need the engine's set-based de-duplication."
        )
    say()

    say("## active")
    say()
    step = run_cell("strategy", timeout, spec="active", n=128, target=0, repeats=3)
    say("| measure | value |")
    say("|---|---:|")
    say(
        f"| ms per step at N = 128 (default budget, {fmt(step.get('steps'), 0)} steps; goal ≤ 5) | "
        f"{fmt(step['seconds'] / step['steps'] * 1e3, 2) if 'steps' in step else step['error']} |"
    )
    if active_total and "seconds" in active_total:
        say(
            f"| total at N = {active_large}, default budget ({active_total['judgments']:,} comparisons, "
            f"{active_total['steps']:,} steps) | {active_total['seconds']:.1f} s |"
        )
        say(f"| its peak memory | {active_total['peak_mb']:.0f} MB |")
    else:
        say(f"| total at N = {active_large} | {(active_total or {}).get('error')} |")
    say()

    say("## Warm cache: a second run whose every judgment is cached")
    say()
    warm = run_cell("warm", timeout, n=32, count=4 if quick else 16)
    if "warm_us" in warm:
        say(f"All-pairs `bt` on {warm['comparisons']:,} comparisons (N = 32), SQLite cache in a temporary folder.")
        say()
        say("| path | µs per comparison |")
        say("|---|---:|")
        say(f"| cold (sim judge, cache writes) | {warm['cold_us']:.1f} |")
        say(f"| warm (every judgment from the cache) | {warm['warm_us']:.1f} |")
        say(f"| floor: one SQLite lookup + one networkx add_edge | {warm['floor_us']:.1f} |")
        ratio = warm["warm_us"] / warm["floor_us"]
        say(f"| **warm ÷ floor** (goal ≤ 3) | **{ratio:.2f}**{' ✓' if ratio <= 3 else ' ✗'} |")
    else:
        say(f"warm-cache measurement failed: {warm['error']}")
    say()

    say("## Start-up: `rankkit strategies` against bare Python")
    say()
    start = startup_ratio(5 if quick else 9)
    say("| command | median wall time |")
    say("|---|---:|")
    say(f"| `python -c pass` | {start['bare_s'] * 1e3:.0f} ms |")
    say(f"| `python -m rankkit.cli strategies` | {start['strategies_s'] * 1e3:.0f} ms |")
    say(f"| **ratio** (goal ≤ 5) | **{start['ratio']:.1f}**{' ✓' if start['ratio'] <= 5 else ' ✗'} |")
    say()

    say("## Memory: many small tasks (knockout, N = 2)")
    say()
    say('Peak resident memory of the process; "per task" is the growth over the peak after a warm-up run.')
    say()
    say("| tasks | tasks built | peak after the run | per task | run time |")
    say("|---:|---:|---:|---:|---:|")
    for count in (2_000, 20_000) if quick else (10_000, 100_000):
        memory = run_cell("memory", timeout * 2, count=count)
        if "peak_mb" in memory:
            per_task = (memory["peak_mb"] - memory["start_mb"]) / count * 1024
            say(
                f"| {count:,} | {memory['tasks_mb']:.0f} MB | {memory['peak_mb']:.0f} MB | {per_task:.1f} kB | "
                f"{memory['seconds']:.1f} s |"
            )
        else:
            say(f"| {count:,} | {memory['error']} | | | |")
    say()

    n_check, seeds = (96, 3) if quick else (200, 8)
    say(
        f"## active above its exact size: incremental posterior and pre-selected pairs vs the exact refit (N = {n_check})"
    )
    say()
    check = run_cell("active_exactness", timeout * 4, n=n_check, seeds=seeds)
    if "error" in check:
        say(f"failed: {check['error']}")
    else:
        say(
            f"Task Spearman with the human scores, default budget, {seeds} tasks and judge seeds per preset "
            "(median seconds per task)."
        )
        say()
        say("| judge | exact: Spearman | s/task | incremental: Spearman | s/task | paired difference [95% CI] |")
        say("|---|---:|---:|---:|---:|---:|")
        from scipy.stats import t as student_t

        for preset, modes in check.items():
            exact, incremental = statistics.fmean(modes["exact"]), statistics.fmean(modes["incremental"])
            gaps = [b - a for a, b in zip(modes["exact"], modes["incremental"])]
            half = student_t.ppf(0.975, len(gaps) - 1) * statistics.stdev(gaps) / math.sqrt(len(gaps))
            say(
                f"| {preset} | {exact:.4f} | {statistics.median(modes['exact_seconds']):.1f} | {incremental:.4f} | "
                f"{statistics.median(modes['incremental_seconds']):.1f} | {statistics.fmean(gaps):+.4f} "
                f"[{statistics.fmean(gaps) - half:+.3f}, {statistics.fmean(gaps) + half:+.3f}] |"
            )
    say()
    return lines


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller N, fewer tasks and repeats")
    parser.add_argument("--timeout", type=float, default=120.0, help="seconds allowed per measurement cell")
    parser.add_argument("--cell", help=argparse.SUPPRESS)  # internal: run one measurement, print JSON
    args = parser.parse_args()
    if args.cell:
        params = json.loads(args.cell)
        print(json.dumps(CELLS[params.pop("kind")](**params)))
        return
    started = time.perf_counter()
    lines = sweep(args.quick, args.timeout)
    lines.append(
        f"Whole sweep: {time.perf_counter() - started:.0f} s (`python benchmarks/scaling.py"
        f"{' --quick' if args.quick else ''}`)."
    )
    print(lines[-1])
    if not args.quick:
        RESULTS.mkdir(parents=True, exist_ok=True)
        (RESULTS / "scaling.md").write_text("\n".join(lines) + "\n", encoding="utf-8")
        print(f"written to {RESULTS / 'scaling.md'}")


if __name__ == "__main__":
    main()
