"""rankkit's own cost per judgment at two commits, side by side (issue 21: "no worse than today").

``benchmarks/scaling.py`` measures one checkout; on a shared machine two of its sweeps run minutes
apart see different loads, so comparing them says little about a change of a few percent. This
script runs the very same measurement cell of each checkout's own ``scaling.py`` (``--cell
strategy``: the simulated judge ``sim:preset=gpt4``, no cache, the fastest of ``--repeats`` runs in
a fresh process) for both commits in turn, ``--rounds`` times, interleaved, and keeps each
commit's fastest: both see the same machine. Per strategy it reports µs per judgment at large N
(``scaling.py --quick``'s sizes: N = 256, all-pairs strategies 128, ``active`` 512; with
``--small`` also N = 32) for ``--before`` and this checkout, and the change.

Large-N cells judge at least ``--judgments`` judgments (several tasks of N candidates when one
task has fewer), so that a cell is not a few milliseconds of timer noise.

It also times, at both commits, what keying one request costs — the judge's ``request_key`` plus
the row key (``rankkit.judgments.cache.judgment_key``: SHA-256 of the JSON of fingerprint, kind and request
key), which every judgment pays before any lookup — on a synthetic task (the cells' short texts)
and on the first task of ``../shared/data/newsroom`` and ``usr_topicalchat`` when present (real
prompt and answer lengths). With ``--sweeps`` it appends both commits' whole
``scaling.py --quick`` output, run one after the other.

    python benchmarks/scaling_versus.py [--before REV] [--before-dir DIR] [--rounds 3] [--small] [--sweeps]

Writes ``benchmarks/results/scaling_<label>.md`` (default label ``0.1_vs_0.2``).
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BEFORE = "fbcd9c3"  # rankkit 0.1
ALL_PAIRS = ("elo", "bt", "panel_elo")
SMALL, LARGE, LARGE_ALL_PAIRS, LARGE_ACTIVE = 32, 256, 128, 512
WORSE = 0.10  # a change past this is reported as worse (the "no worse than today", with timer noise)


def large_n(strategy: str) -> int:
    """``scaling.py --quick``'s large N for ``strategy``."""
    return LARGE_ALL_PAIRS if strategy in ALL_PAIRS else LARGE_ACTIVE if strategy == "active" else LARGE


def cell(checkout: Path, strategy: str, n: int, judgments: int, repeats: int, timeout: float) -> dict:
    """``checkout``'s own ``scaling.py --cell strategy`` in a fresh process, that checkout first on
    the path: ``{"us": µs per judgment, "judgments": ..., "tasks": ...}`` or ``{"error": ...}``."""
    params = {"kind": "strategy", "spec": strategy, "n": n, "target": judgments, "repeats": repeats}
    command = [sys.executable, str(checkout / "benchmarks" / "scaling.py"), "--cell", json.dumps(params)]
    env = {**os.environ, "PYTHONPATH": str(checkout)}
    try:
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, env=env, cwd=checkout)
    except subprocess.TimeoutExpired:
        return {"error": f"over {timeout:.0f} s"}
    if done.returncode != 0:
        return {"error": (done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def strategy_names(checkout: Path) -> list[str]:
    """The built-in strategies of ``checkout``."""
    code = "from rankkit.strategies import strategy_classes; print(' '.join(strategy_classes()))"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        cwd=checkout,
    )
    return done.stdout.split()


def measure(
    checkouts: dict[str, Path], sizes: list[tuple[str, int]], rounds: int, repeats: int, judgments: int, timeout: float
) -> dict[tuple[str, int, str], dict]:
    """The fastest cell per (strategy, N, version) over ``rounds`` interleaved rounds."""
    best: dict[tuple[str, int, str], dict] = {}
    for round_number in range(1, rounds + 1):
        for strategy, n in sizes:
            for version, checkout in checkouts.items():  # the versions in turn, for every cell
                found = cell(checkout, strategy, n, judgments if n > SMALL else 5_000, repeats, timeout)
                key = (strategy, n, version)
                if "us" in found and ("us" not in best.get(key, {}) or found["us"] < best[key]["us"]):
                    best[key] = found
                elif key not in best:
                    best[key] = found
                figure = f"{found['us']:.1f} µs/judgment" if "us" in found else found["error"]
                print(f"round {round_number}: {strategy} N={n} {version}: {figure}", flush=True)
    return best


#: Runs in a subprocess with a checkout first on the path: argv = its benchmarks folder, then data
#: files. Prints JSON: per task, its characters (prompt + two answers), the µs of request_key and of
#: judgment_key for one comparison request.
KEY_COST = r"""
import json, sys, timeit
sys.path.insert(0, sys.argv[1])
import scaling
from rankkit.judgments.cache import judgment_key
from rankkit.judges import make_judge
from rankkit.data.tasks import load_tasks

judge = make_judge("sim:preset=gpt4")
tasks = [("synthetic, N = 256", scaling.synthetic_task(256, 0, "t0"))]
tasks += [(path.split("/")[-2], load_tasks(path)[0]) for path in sys.argv[2:]]
out = []
for name, task in tasks:
    first, second = task.candidates[0], task.candidates[1]
    key = judge.request_key(task, first, second)
    runs = 2000
    request = min(timeit.repeat(lambda: judge.request_key(task, first, second), number=runs, repeat=3)) / runs
    row = min(timeit.repeat(lambda: judgment_key(judge.fingerprint, "verdict", key), number=runs, repeat=3)) / runs
    out.append({"task": name, "chars": len(task.prompt) + len(first.text) + len(second.text),
                "key_chars": len(json.dumps(list(key), ensure_ascii=False)),
                "request_us": request * 1e6, "row_us": row * 1e6})
print(json.dumps(out))
"""
DATASETS = ("newsroom", "usr_topicalchat")


def key_cost(checkout: Path) -> list[dict]:
    """What keying one comparison request costs with ``checkout`` (see :data:`KEY_COST`)."""
    shared = ROOT.parent / "shared" / "data"
    data = [str(shared / name / "tasks.jsonl") for name in DATASETS if (shared / name / "tasks.jsonl").is_file()]
    done = subprocess.run(
        [sys.executable, "-c", KEY_COST, str(checkout / "benchmarks"), *data],
        capture_output=True,
        text=True,
        check=True,
        env={**os.environ, "PYTHONPATH": str(checkout)},
        cwd=checkout,
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def key_cost_lines(costs: dict[str, list[dict]]) -> list[str]:
    """A table of :func:`key_cost` at each commit."""
    versions = list(costs)
    lines = [
        "## Keying a request: the price of the content-keyed judgment lookup",
        "",
        "Every judgment is looked up under a key of its content: the judge's `request_key` (prompt, "
        "reference, scale, metadata, the candidates' texts in the order shown; the simulator adds ids "
        "and human scores), then the row key, SHA-256 of the JSON of fingerprint, kind and request key "
        "(`rankkit.judgments.cache.judgment_key`). µs per comparison request, fastest of 3 × 2,000:",
        "",
        "| task | prompt + 2 answers (chars) | request key (JSON chars) | "
        + " | ".join(f"{v}: request_key + row key" for v in versions)
        + " |",
        "|---|---:|---:|" + "---:|" * len(versions),
    ]
    for i, row in enumerate(costs[versions[0]]):
        cells = [
            f"{c[i]['request_us']:.1f} + {c[i]['row_us']:.1f} = **{c[i]['request_us'] + c[i]['row_us']:.1f}**"
            for c in costs.values()
        ]
        lines.append(f"| {row['task']} | {row['chars']:,} | {row['key_chars']:,} | " + " | ".join(cells) + " |")
    return lines


def sweep_lines(checkouts: dict[str, Path]) -> list[str]:
    """Each checkout's whole ``scaling.py --quick`` output, run one after the other."""
    lines = [
        "## The two `scaling.py --quick` sweeps",
        "",
        "Each commit's own sweep, run one after the other (minutes apart on a shared machine, so "
        "single cells compare less reliably than the interleaved table above).",
        "",
    ]
    for version, checkout in checkouts.items():
        done = subprocess.run(
            [sys.executable, str(checkout / "benchmarks" / "scaling.py"), "--quick"],
            capture_output=True,
            text=True,
            env={**os.environ, "PYTHONPATH": str(checkout)},
            cwd=checkout,
        )
        body = done.stdout if done.returncode == 0 else f"failed: {done.stderr[-2000:]}"
        lines += [
            f"### {version}",
            "",
            body.replace("\n## ", "\n#### ").replace("## Strategies", "#### Strategies"),
            "",
        ]
    return lines


def report(
    best: dict,
    sizes: list[tuple[str, int]],
    before: str,
    after: str,
    command: str,
    rounds: int,
    repeats: int,
    judgments: int,
) -> str:
    lines = [
        f"# Overhead per judgment: rankkit {before} vs {after}",
        "",
        f"Written by `{command}`. Simulated judge `sim:preset=gpt4`, no cache, so a judgment costs "
        "microseconds and the time per judgment is rankkit's own overhead (strategy, match source, judgment "
        f"lookup, metrics). Each figure: the fastest of {rounds} rounds × {repeats} runs, the two commits "
        f"measured in turn within each round (each commit's own `benchmarks/scaling.py --cell strategy`); "
        f"large-N cells judge at least {judgments:,} judgments (several tasks where one has fewer). "
        f"Python {sys.version.split()[0]}, {os.cpu_count()} CPUs shared with other work.",
        "",
        f"| strategy | N | judgments | {before} µs/judgment | {after} µs/judgment | change |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    worse = []
    for strategy, n in sizes:
        old, new = best[(strategy, n, before)], best[(strategy, n, after)]
        if "us" in old and "us" in new:
            change = new["us"] / old["us"] - 1
            if change > WORSE:
                worse.append(f"{strategy} (N = {n})")
            lines.append(
                f"| {strategy} | {n} | {new['judgments']:,} | {old['us']:.1f} | {new['us']:.1f} | "
                f"{change:+.0%}{' ✗' if change > WORSE else ''} |"
            )
        else:
            lines.append(
                f"| {strategy} | {n} | | {old.get('us', old.get('error'))} | {new.get('us', new.get('error'))} | |"
            )
    lines += ["", f"Worse by more than {WORSE:.0%}: {', '.join(worse) if worse else 'none'}."]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--before", default=BEFORE, help="the commit to compare this checkout with (default: 0.1)")
    parser.add_argument(
        "--before-dir",
        type=Path,
        default=None,
        help="an existing checkout of --before, used as it is (read only) instead of a worktree",
    )
    parser.add_argument("--rounds", type=int, default=3, help="interleaved rounds; each figure is the fastest")
    parser.add_argument("--repeats", type=int, default=3, help="runs per cell (its fastest is the cell's figure)")
    parser.add_argument("--judgments", type=int, default=2_000, help="the least judgments of a large-N cell")
    parser.add_argument("--small", action="store_true", help="also N = 32")
    parser.add_argument("--sweeps", action="store_true", help="append both commits' scaling.py --quick output")
    parser.add_argument("--strategies", default=None, help="comma-separated (default: every built-in strategy)")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds allowed per cell")
    parser.add_argument("--label", default="0.1_vs_0.2", help="names the results file: scaling_<label>.md")
    args = parser.parse_args()
    head = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    ).stdout.strip()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        before_dir = args.before_dir.resolve() if args.before_dir else Path(tmp) / "before"
        if args.before_dir is None:
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "add", "-q", "--detach", str(before_dir), args.before], check=True
            )
        try:
            strategies = args.strategies.split(",") if args.strategies else strategy_names(ROOT)
            sizes = [(s, n) for s in strategies for n in ([SMALL] if args.small else []) + [large_n(s)]]
            checkouts = {args.before: before_dir, head: ROOT}
            best = measure(checkouts, sizes, args.rounds, args.repeats, args.judgments, args.timeout)
            extra = ["", *key_cost_lines({version: key_cost(checkout) for version, checkout in checkouts.items()})]
            if args.sweeps:
                extra += ["", *sweep_lines(checkouts)]
        finally:
            if args.before_dir is None:
                subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(before_dir)], check=False)
    command = shlex.join(["python", "benchmarks/scaling_versus.py", *sys.argv[1:]])
    text = report(best, sizes, args.before, head, command, args.rounds, args.repeats, args.judgments)
    text += "\n".join(extra) + f"\n\nWhole comparison: {time.perf_counter() - started:.0f} s.\n"
    print(text)
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / f"scaling_{args.label}.md").write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
