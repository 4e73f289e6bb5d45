"""Calibrated stopping rules (issue 32): do tasks stopped on ``target`` give the judge's latent answer?

For each dataset (the shared N-way sets under ``shared/data``, skipped when absent, and planted
tasks with N = 16 and N = 100 from :func:`rankkit.judges.simulated.synthetic.planted_tasks`), each simulated preset
judge (``sim:preset=gpt4``, ``sim:preset=chatgpt``) and each seed (the judge's seed: fresh judge
noise per trial), every stopping strategy ranks the same tasks in its own run. Per strategy the
table gives, pooled over tasks and seeds:

* **calibration**: among tasks stopped with ``target``, the share whose answer (the best
  candidate, the set of the 3 best, by the strategy's scores) equals the judge's latent one
  (:meth:`rankkit.judges.simulated.sim.LatentJudge.latent`), with its Wilson 95% interval; goal >= the
  confidence, 0.95;
* **target**: the share of tasks stopped by ``target`` (the rest by ``budget`` or ``exhausted``);
* **judgments / bt**: the judgments used as a share of all-pairs ``bt``'s, mean over tasks. The
  default ``bt`` spec judges every pair in both orders (``order=both``): N(N − 1) judgments (a
  dry run of ``bt`` on newsroom's 7-answer tasks asks 42 per task). The column beside it divides by
  N(N − 1)/2 instead, each pair once (``bt:order=given``): twice the first figure. Goal (on the
  first): <= 30% on tasks of up to 24 answers, <= 10% at N = 100;
* **answers shown / bt**: the answers shown to the judge (a k-way judgment shows k, a pairwise
  one 2: the candidates' ``played`` summed) over bt's 2·N(N − 1), a proxy for the tokens read,
  since a k-way judgment counts as one judgment above.

Each strategy's budget (which always wins over the target) is set to the goal: ``budget`` =
goal share · (N − 1) judgments per candidate, so the question is how often the target is reached
within it and whether those stops are right. On the small shared sets (newsroom, usr_topicalchat)
the pairwise strategies also run with ``budget = 2(N − 1)``, every distinct judgment: the
calibration over more ``target`` stops, and the cost of the target when nothing cuts it short.
A second table (``--calibration-limit``, ``--calibration-seeds``) measures the calibration of
``active:until=top1`` with every judgment allowed on larger samples. To keep the run short on a
shared 2-core machine only the first ``--limit`` tasks of each small set are used, a third as many
of realsumm, ``--planted16`` planted tasks with N = 16 and ``--planted`` with N = 100.

    python benchmarks/stopping.py                  # writes benchmarks/results/stopping.md
    python benchmarks/stopping.py --limit 5 --planted 1 --planted16 4 --seeds 1 --calibration-limit 0
    python benchmarks/stopping.py --calibration-only --out /tmp/calibration.md   # only the second table
    python benchmarks/stopping.py --calibration-limit 0 --specs "setwise_groups:until=top1,k=8,budget={budget}"
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

from rankkit.data.tasks import Task, load_tasks
from rankkit.judges import make_judge
from rankkit.judges.simulated.synthetic import planted_tasks
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

ROOT = Path(__file__).resolve().parents[1]
#: The shared data: next to the checkout, or one level up (a worktree under wt/).
SHARED = next(
    (path for path in (ROOT.parent / "shared" / "data", ROOT.parents[1] / "shared" / "data") if path.exists()),
    ROOT.parent / "shared" / "data",
)
RESULTS = ROOT / "benchmarks" / "results"

DATASETS = ["newsroom", "usr_topicalchat", "realsumm"]
PRESETS = ["gpt4", "chatgpt"]
#: The strategies; ``{budget}`` is the judgments per candidate that reach the goal share of
#: all-pairs bt's judgments (:func:`budget_for`), so the budget (which always wins) caps the cost at the goal.
SPECS = [
    "active:until=top1,confidence=0.95,budget={budget}",
    "active:until=top1,confidence=0.95,criterion=target,budget={budget}",
    "active:until=top:3,confidence=0.95,budget={budget}",
    "active:until=top:3,confidence=0.95,criterion=target,budget={budget}",
    "swiss:until=top1,confidence=0.95,order=both,budget={budget}",
    "setwise_groups:until=top1,confidence=0.95,k=4,rounds=1000,budget={budget}",
]
#: On the small shared sets also without a binding budget (every distinct judgment may be asked):
#: the calibration with more ``target`` stops, and what the target costs when nothing cuts it short.
UNBOUNDED = [
    "active:until=top1,confidence=0.95,budget={every}",
    "active:until=top1,confidence=0.95,criterion=target,budget={every}",
    "active:until=top:3,confidence=0.95,budget={every}",
    "swiss:until=top1,confidence=0.95,order=both,budget={every}",
]
#: The larger calibration sample's strategies (every distinct judgment allowed).
CALIBRATION = [
    "active:until=top1,confidence=0.95,budget={every}",
    "active:until=top1,confidence=0.95,criterion=target,budget={every}",
]
#: Datasets small enough for :data:`UNBOUNDED`.
SMALL = ("newsroom", "usr_topicalchat")


def goal_share(n: int) -> float:
    """The goal for the judgments used, as a share of all-pairs bt's: 30% up to 24 answers, 10% above."""
    return 0.3 if n <= 24 else 0.1


def budget_for(n: int) -> float:
    """Judgments per candidate that buy the goal share of N(N − 1) judgments."""
    return math.floor(goal_share(n) * (n - 1) * 100) / 100


def planted(n: int, prompts: int) -> list[Task]:
    """Tasks of ``n`` answers from systems 25 Elo apart (answer noise as Bradley–Terry's)."""
    return planted_tasks({f"s{i:03d}": 25.0 * i for i in range(n)}, prompts=prompts, seed=7, prefix=f"n{n}-")


def wilson(right: int, total: int, z: float = 1.959964) -> tuple[float, float]:
    """The Wilson score interval of a share ``right / total`` (95% by default)."""
    if not total:
        return math.nan, math.nan
    share = right / total
    scale = 1 + z * z / total
    centre = (share + z * z / (2 * total)) / scale
    half = z * math.sqrt(share * (1 - share) / total + z * z / (4 * total * total)) / scale
    return centre - half, centre + half


def answer_is_latent(ranking: list[str], latent: dict[str, float], spec: str) -> bool:
    """Whether the strategy's answer (its best, or its 3 best as a set) is the latent one."""
    size = 3 if "top:3" in spec else 1
    truth = sorted(latent, key=lambda cid: -latent[cid])[:size]
    return set(ranking[:size]) == set(truth)


def measure(tasks: list[Task], preset: str, seeds: int, templates: list[str]) -> dict[str, dict[str, float]]:
    """Per strategy spec (templates filled for the tasks' N), the figures over ``seeds`` judge seeds."""
    rows: dict[str, dict[str, float]] = {}
    n = len(tasks[0].candidates)
    for template in templates:
        spec = template.format(budget=budget_for(n), every=2 * (n - 1))
        target = right = total = 0
        share = shown = 0.0
        started = time.perf_counter()
        for seed in range(seeds):
            judge = make_judge(f"sim:preset={preset},seed={seed}")
            result = run(tasks, [make_strategy(spec)], judge, seed=seed)
            for task, task_result in zip(tasks, result.strategies[0].tasks):
                n = len(task.candidates)
                reason = next(iter(task_result.extras.values())).stopped
                total += 1
                share += task_result.cost.comparisons / (n * (n - 1))
                # Answers shown to the judge (a k-way judgment shows k), over bt's 2·N(N − 1).
                shown += sum(extra.played or 0 for extra in task_result.extras.values()) / (2 * n * (n - 1))
                if reason == "target":
                    target += 1
                    right += answer_is_latent(task_result.ranking, judge.latent(task), spec)
        rows[spec] = {
            "calibration": right / target if target else math.nan,
            "right": right,
            "stops": target,
            "target": target / total,
            "share": share / total,
            "shown": shown / total,
            "seconds": time.perf_counter() - started,
        }
        print(f"  {preset} {spec}: {rows[spec]}", file=sys.stderr)
    return rows


def calibration_cell(row: dict[str, float]) -> str:
    """``0.968 (92/95; 0.911–0.989)``: the calibration, right of stops, its Wilson interval."""
    if not row["stops"]:
        return "– (0)"
    low, high = wilson(int(row["right"]), int(row["stops"]))
    return f"{row['calibration']:.3f} ({int(row['right'])}/{int(row['stops'])}; {low:.3f}–{high:.3f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=15, help="tasks per shared dataset (0: none)")
    parser.add_argument("--planted16", type=int, default=16, help="planted tasks with N = 16 (0: none)")
    parser.add_argument("--planted", type=int, default=2, help="planted tasks with N = 100 (0: none)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--calibration-limit", type=int, default=60, help="tasks per small set (0: no such table)")
    parser.add_argument("--calibration-seeds", type=int, default=6)
    parser.add_argument("--calibration-planted", type=int, default=30, help="planted N = 16 tasks in that table")
    parser.add_argument("--calibration-only", action="store_true", help="only the larger calibration table")
    parser.add_argument(
        "--specs", nargs="+", help="strategy templates instead of SPECS (then no UNBOUNDED rows), e.g. another k"
    )
    parser.add_argument("--out", type=Path, default=RESULTS / "stopping.md")
    args = parser.parse_args()

    sets: list[tuple[str, list[Task]]] = []
    for name in DATASETS if args.limit else []:
        path = SHARED / name / "tasks.jsonl"
        if not path.exists():
            print(f"skipping {name}: {path} is absent", file=sys.stderr)
            continue
        # realsumm's 24 answers cost 12 times newsroom's per task: a third of the tasks.
        sets.append((name, load_tasks(path, limit=args.limit if name in SMALL else max(1, args.limit // 3))))
    sets += [(f"planted N={n}", planted(n, count)) for n, count in ((16, args.planted16), (100, args.planted)) if count]

    rights = stops = 0
    lines = [
        "# Calibrated stopping rules (issue 32)",
        "",
        f"`python benchmarks/stopping.py --limit {args.limit} --planted16 {args.planted16} --planted {args.planted} "
        f"--seeds {args.seeds} --calibration-limit {args.calibration_limit} --calibration-seeds {args.calibration_seeds} "
        f"--calibration-planted {args.calibration_planted}"
        + "".join(f' --specs "{spec}"' if i == 0 else f' "{spec}"' for i, spec in enumerate(args.specs or []))
        + "` "
        f"(seeds 0..{args.seeds - 1}; the judge's seed varies). Calibration: among tasks stopped with "
        "`target`, the share whose answer equals the judge's latent one (right/stops; Wilson 95% interval; "
        "goal >= 0.95). Target: share of tasks stopped by `target`. Judgments / bt: judgments used over "
        "all-pairs `bt`'s, the default spec, which asks every pair in both orders: N(N − 1) judgments (goal "
        "<= 30% at N <= 24, <= 10% at N = 100); each budget is set to that goal (it always wins). "
        "/ pairs: over N(N − 1)/2, each pair once (`bt:order=given`), twice the first. Answers shown / bt: "
        "the answers shown to the judge (a k-way judgment shows k, a pairwise one 2) over bt's 2·N(N − 1), "
        "a proxy for the tokens read.",
        "",
        "| data (N, tasks) | judge | strategy | calibration (right/stops; 95%) | target | judgments / bt "
        "| / pairs | answers shown / bt | seconds |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, tasks in [] if args.calibration_only else sets:
        n = len(tasks[0].candidates)
        for preset in PRESETS:
            print(f"{name} {preset}", file=sys.stderr)
            templates = args.specs or SPECS + (UNBOUNDED if name in SMALL else [])
            for spec, row in measure(tasks, preset, args.seeds, templates).items():
                rights, stops = rights + int(row["right"]), stops + int(row["stops"])
                lines.append(
                    f"| {name} ({n}, {len(tasks)}) | {preset} | `{spec}` | {calibration_cell(row)} "
                    f"| {row['target']:.2f} | {row['share']:.1%} | {2 * row['share']:.1%} | {row['shown']:.1%} "
                    f"| {row['seconds']:.0f} |"
                )
    low, high = wilson(rights, stops)
    if args.calibration_only:
        lines = ["# Calibrated stopping rules (issue 32): a larger calibration sample"]
    else:
        lines += ["", f"Pooled over the table: {rights}/{stops} = {rights / max(stops, 1):.3f} ({low:.3f}–{high:.3f})."]

    if args.calibration_limit > 0:
        lines += [
            "",
            "## A larger calibration sample",
            "",
            f"Every distinct judgment allowed (`budget = 2(N − 1)`), the first {args.calibration_limit} tasks "
            f"of the small sets and {args.calibration_planted} planted tasks with N = 16, seeds "
            f"0..{args.calibration_seeds - 1}.",
            "",
            "| data (N, tasks) | judge | strategy | calibration (right/stops; 95%) | target | judgments / bt |",
            "|---|---|---|---|---|---|",
        ]
        calibration_sets = [
            (name, load_tasks(SHARED / name / "tasks.jsonl", limit=args.calibration_limit))
            for name in SMALL
            if (SHARED / name / "tasks.jsonl").exists()
        ] + [("planted N=16", planted(16, args.calibration_planted))]
        rights = stops = 0
        for name, tasks in calibration_sets:
            n = len(tasks[0].candidates)
            for preset in PRESETS:
                print(f"calibration: {name} {preset}", file=sys.stderr)
                for spec, row in measure(tasks, preset, args.calibration_seeds, CALIBRATION).items():
                    rights, stops = rights + int(row["right"]), stops + int(row["stops"])
                    lines.append(
                        f"| {name} ({n}, {len(tasks)}) | {preset} | `{spec}` | {calibration_cell(row)} "
                        f"| {row['target']:.2f} | {row['share']:.1%} |"
                    )
        low, high = wilson(rights, stops)
        lines += [
            "",
            f"Pooled over this table: {rights}/{stops} = {rights / max(stops, 1):.3f} ({low:.3f}–{high:.3f}).",
        ]

    args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")
    print("\n".join(lines))


if __name__ == "__main__":
    main()
