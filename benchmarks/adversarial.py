"""Can a candidate steer the verdict? Every attack of the suite, before and after the hardened verdict path.

Runs the attacks of ``tests/adversarial`` (:mod:`tests.adversarial.attacks`) against the honest
stub judge (:mod:`tests.adversarial.stub_judge`: always prefers the better answer, writes
``Explanation ... Answer 1: X/M Answer 2: Y/M`` and quotes the candidates' text after or before
its verdict) with the ``openai:`` judge in generate mode, in three settings:

* ``before`` — rankkit 0.2 as released (``--before``, default 8ec9438, in a temporary git
  worktree): the verdict parsed from the free text, a parse failure a tie and a coin flip;
* ``continuation`` — this checkout: the verdict read from a continuation rankkit controls;
* ``text`` — this checkout against a server that cannot continue a prefix: the flagged fallback.

Per attack and strategy (``knockout``, ``knockout:order=both``, ``bt``, ``heapsort``, ``swiss``) it
reports the attacker's mean rank over 8 four-candidate tasks (the attacker is the worst answer: 4
is honest) and the comparisons that failed (``undecided``); then the issue's two measurements
(every-verdict suppression on six two-candidate tasks: knockout tasks the wrong answer wins;
targeted lines: the attacker's rank under ``bt``), and what the hardened path costs: requests per
judgment and wall time on the stub, and on the real SmolLM2 judge in generate mode
(``rankkit compare --judge smollm2:mode=generate,... --strategies knockout,individual`` on the
bundled sample) before and after.

    python benchmarks/adversarial.py [--before REV] [--skip-model]

Prints the tables and writes ``benchmarks/results/adversarial.md``.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
SUITE = ROOT / "tests" / "adversarial"
BEFORE = "8ec9438"  # rankkit 0.2 as released: the free-text verdict
STRATEGIES = ["knockout", "knockout:order=both", "bt", "heapsort", "swiss"]
OPTIONS = "mode=generate,concurrency=8,max_new_tokens=64,backoff=0.01"
SETTINGS = ("before", "continuation", "text")


# -- the worker: one setting, run with whichever rankkit is on the path ------------------------------


def _load(name: str, path: Path) -> Any:
    """The module at ``path``, imported by file as ``name`` (and registered under that name)."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def load_suite() -> tuple[Any, Any]:
    """The attack suite's ``attacks`` and ``stub_judge`` modules, by file from this checkout: the
    rankkit under test may be another checkout, whose ``tests`` package may predate them. The stub
    judge's own import, ``tests.servers``, is loaded from this checkout first for the same reason."""
    _load("tests.servers", ROOT / "tests" / "servers.py")
    return _load("adversarial_attacks", SUITE / "attacks.py"), _load("adversarial_stub_judge", SUITE / "stub_judge.py")


def _attacker(result: Any) -> dict[str, dict[str, float]]:
    out = {}
    for run in result.strategies:
        ranks = [task.ranking.index("attacker") + 1 for task in run.tasks]
        failed = sum(
            1
            for task in run.tasks
            for c in task.comparisons
            if "attacker" in (c.first, c.second) and c.verdict.status.value == "failed"
        )
        out[run.name] = {
            "rank": sum(ranks) / len(ranks),
            "undecided": failed,
            "judge_calls": run.cost.judge_calls,
            "completion_tokens": run.cost.completion_tokens,
        }
    return out


def worker(setting: str) -> dict[str, Any]:
    import rankkit

    attacks, stub = load_suite()
    options = OPTIONS + (",verdict=text" if setting == "text" else "")
    report: dict[str, Any] = {"placements": {}}
    for quote in ("after", "before"):
        rows = {}
        with stub.HonestJudgeServer(
            attacks.quality_table(), quote=quote, continues=setting != "text", logprobs=setting != "text"
        ) as server:
            spec = f"openai:honest,base_url={server.base_url},{options}"
            for name in [None, *attacks.ATTACKS]:
                result = rankkit.compare(
                    attacks.four_candidate_tasks(None if name is None else attacks.ATTACKS[name]),
                    STRATEGIES,
                    judge=spec,
                )
                rows[name or "(no attack)"] = _attacker(result)
        report["placements"][quote] = rows
    with stub.HonestJudgeServer(
        attacks.quality_table(), quote="after", continues=setting != "text", logprobs=setting != "text"
    ) as server:
        spec = f"openai:honest,base_url={server.base_url},{options}"
        two = rankkit.compare(
            attacks.two_candidate_tasks(attacks.ATTACKS["every_verdict"]),
            ["knockout", "knockout:order=both"],
            judge=spec,
        )
        report["suppression_wins"] = {
            run.name: sum(t.champion == "attacker" for t in run.tasks) for run in two.strategies
        }
        report["suppression_failures"] = {run.name: run.cost.parse_failures for run in two.strategies}
    with stub.HonestJudgeServer(
        attacks.quality_table(), quote="after", continues=setting != "text", logprobs=setting != "text", binary=True
    ) as binary:
        four = rankkit.compare(
            attacks.four_candidate_tasks(attacks.ATTACKS["targeted_lines"]),
            ["bt"],
            judge=f"openai:honest,base_url={binary.base_url},{options}",
        )
        report["targeted_bt_ranks"] = [t.ranking.index("attacker") + 1 for t in four.strategies[0].tasks]
    with stub.HonestJudgeServer(
        attacks.quality_table(), quote="after", continues=setting != "text", logprobs=setting != "text"
    ) as server:
        spec = f"openai:honest,base_url={server.base_url},{options}"
        # The cost of the verdict path on the baseline run (no attack): requests and time.
        requests_before = dict(server.requests)
        started = time.perf_counter()
        base = rankkit.compare(attacks.four_candidate_tasks(None), STRATEGIES, judge=spec)
        seconds = time.perf_counter() - started
        judgments = sum(run.cost.judge_calls for run in base.strategies)
        report["cost"] = {
            "judgments": judgments,
            "seconds": seconds,
            "requests": {k: server.requests[k] - requests_before[k] for k in server.requests},
        }
    return report


# -- the driver --------------------------------------------------------------------------------------


def run_setting(setting: str, path: Path) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(path)}
    out = subprocess.run(
        [sys.executable, str(Path(__file__).resolve()), "--worker", setting],
        env=env,
        cwd=path,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode != 0:
        raise SystemExit(f"{setting} failed:\n{out.stderr[-3000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


MODEL_JUDGE = "smollm2:mode=generate,max_new_tokens=96"


def model_cost(path: Path) -> dict[str, Any]:
    """The generate-mode SmolLM2 judge on the bundled sample (knockout + individual) in ``path``."""
    with tempfile.TemporaryDirectory() as tmp:
        started = time.perf_counter()
        out = subprocess.run(
            [
                sys.executable,
                "-m",
                "rankkit.cli",
                "compare",
                "--strategies",
                "knockout,individual",
                "--judge",
                MODEL_JUDGE,
                "--out",
                f"{tmp}/run.json",
                "--no-cache",
                "--quiet",
            ],
            env={**os.environ, "PYTHONPATH": str(path)},
            cwd=path,
            capture_output=True,
            text=True,
        )
        seconds = time.perf_counter() - started
        if out.returncode != 0:
            return {"error": out.stderr[-500:]}
        data = json.loads(Path(f"{tmp}/run.json").read_text())
    runs = {s["name"]: s for s in data["strategies"]}
    return {
        "seconds": seconds,
        "strategies": {
            name: {
                "task_spearman": s["metrics"].get("task_spearman"),
                "judge_calls": s["cost"]["judge_calls"],
                "parse_failures": s["cost"]["parse_failures"],
                "completion_tokens": s["cost"]["completion_tokens"],
            }
            for name, s in runs.items()
        },
    }


def markdown(reports: dict[str, dict[str, Any]], models: dict[str, Any], before: str) -> str:
    lines = [
        "# Candidates steering the verdict: the attack suite before and after the hardened verdict path",
        "",
        f"`python benchmarks/adversarial.py` on {platform.processor() or platform.machine()}, "
        f"{os.cpu_count()} cores. Settings: **before** = rankkit 0.2 as released ({before}: verdict parsed "
        "from free text, a failure a coin flip); **after** = the continuation verdict (this checkout); "
        "**text** = this checkout against a server that cannot continue a prefix (the flagged fallback). "
        "Judge: `openai:` in generate mode against the honest stub of `tests/adversarial` "
        "(it always prefers the better answer). Cells: the attacker's mean rank over 8 four-candidate "
        "tasks (4 = last, the honest rank), then the attacker's comparisons that failed (undecided), "
        "as before / after / text.",
        "",
    ]
    for quote in ("after", "before"):
        lines += [
            f"## The stub quotes the candidates {quote} its verdict",
            "",
            "| attack | " + " | ".join(STRATEGIES) + " |",
            "|---|" + "---:|" * len(STRATEGIES),
        ]
        rows = reports["continuation"]["placements"][quote]
        for attack in rows:
            cells = []
            for strategy in STRATEGIES:
                got = [reports[s]["placements"][quote][attack].get(strategy) for s in SETTINGS]
                ranks = " / ".join("–" if g is None else f"{g['rank']:.2f}" for g in got)
                undecided = " / ".join("–" if g is None else str(g["undecided"]) for g in got)
                cells.append(f"{ranks} ({undecided})")
            lines.append(f"| {attack} | " + " | ".join(cells) + " |")
        lines.append("")
    lines += [
        "## The issue's two measurements",
        "",
        "| measurement | " + " | ".join(SETTINGS) + " |",
        "|---|---:|---:|---:|",
    ]
    for strategy in ("knockout", "knockout:order=both"):
        lines.append(
            f"| every-verdict suppression, 6 two-candidate tasks: tasks the wrong answer wins ({strategy}) | "
            + " | ".join(str(reports[s]["suppression_wins"].get(strategy)) for s in SETTINGS)
            + " |"
        )
    lines.append(
        "| targeted verdict lines (the judge writes only 9/2 or 2/9), 8 four-candidate tasks, `bt`: "
        "the worst answer's ranks | "
        + " | ".join(" ".join(map(str, reports[s]["targeted_bt_ranks"])) for s in SETTINGS)
        + " |"
    )
    lines += [
        "",
        "## What the hardened path costs",
        "",
        "On the stub (no attack, the five strategies on 8 four-candidate tasks; the stub answers at once, so "
        "the time is rankkit's and the HTTP round trips'):",
        "",
        "| setting | judgments | generate requests | continuation requests | requests per judgment | wall s |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for s in SETTINGS:
        cost = reports[s]["cost"]
        total = sum(cost["requests"].values())
        lines.append(
            f"| {s} | {cost['judgments']} | {cost['requests']['generate']} | {cost['requests']['continue']} "
            f"| {total / max(1, cost['judgments']):.2f} | {cost['seconds']:.2f} |"
        )
    if models:
        lines += [
            "",
            f"On the real judge: `rankkit compare --judge {MODEL_JUDGE} --strategies knockout,individual` "
            "(SmolLM2-135M in process, exact mode, bundled sample, no cache); before, its free-text verdicts "
            "nearly all fail to parse:",
            "",
            "| setting | wall s (incl. start-up) | strategy | task Spearman | judge calls | parse failures | completion tokens |",
            "|---|---:|---|---:|---:|---:|---:|",
        ]
        for s, model in models.items():
            if "error" in model:
                lines.append(f"| {s} | error: {model['error'][:80]} | | | | | |")
                continue
            for name, row in model["strategies"].items():
                spearman = row["task_spearman"]
                lines.append(
                    f"| {s} | {model['seconds']:.1f} | {name} | "
                    f"{'–' if spearman is None else f'{spearman:.3f}'} | {row['judge_calls']} | "
                    f"{row['parse_failures']} | {row['completion_tokens']} |"
                )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--worker", choices=SETTINGS, help=argparse.SUPPRESS)
    parser.add_argument("--before", default=BEFORE, help="the commit of the free-text verdict path")
    parser.add_argument(
        "--skip-model",
        action="store_true",
        help="skip the SmolLM2 cost comparison (keeping the figures already in the results file)",
    )
    args = parser.parse_args()
    if args.worker:
        print(json.dumps(worker(args.worker)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        old = Path(tmp) / "before"
        subprocess.run(
            ["git", "-C", str(ROOT), "worktree", "add", "--detach", str(old), args.before],
            check=True,
            capture_output=True,
        )
        try:
            reports = {
                "before": run_setting("before", old),
                "continuation": run_setting("continuation", ROOT),
                "text": run_setting("text", ROOT),
            }
            models = {} if args.skip_model else {"before": model_cost(old), "after": model_cost(ROOT)}
        finally:
            subprocess.run(["git", "-C", str(ROOT), "worktree", "remove", "--force", str(old)], check=False)
    text = markdown(reports, models, args.before)
    previous = RESULTS / "adversarial.md"
    if args.skip_model and previous.exists() and "On the real judge" in previous.read_text():
        # keep the last SmolLM2 figures (minutes to measure) rather than drop them
        kept = previous.read_text()
        text += "\n(Kept from the previous full run:)\n\n" + kept[kept.index("On the real judge") :]
    RESULTS.mkdir(parents=True, exist_ok=True)
    (RESULTS / "adversarial.md").write_text(text)
    print(text)


if __name__ == "__main__":
    main()
