"""Stopping rules on misspecified judges (issue 42): are ``target`` stops right when the judge is not Bradley–Terry?

For each simulated judge of the misspecified family (``docs/judges-sim.md``: independent draws,
clipping at the scale's ends, persistent pair preferences of two sizes, position bias, ties,
near-duplicate answers), each shared N-way dataset (its first ``--tasks`` tasks; skipped when
absent), each judge seed and each strategy with ``until=top1`` and ``until=top:3``, three rules:

* ``bt``: 0.3's rule, each distinct judgment an independent Bradley–Terry vote (before);
* ``pair_effects``: a pair's judgments share a persistent effect whose sd is averaged over 0, 1
  and 2 within the task (757ffa5's default of ``active`` and ``swiss``; ``bt`` is the default again);
* ``pilot``: ``pair_effects`` with the judge's own pair-effect sd, ``pair_sd=`` the 95% upper value of
  its posterior from a pilot run — all-pairs ``bt`` on the next ``--pilot`` tasks of the same
  dataset with the same judge model (``rankkit analyze --pair-effects``; other tasks than those
  scored, and judge seed :data:`PILOT_SEED`, so one pilot serves every scored seed as it would a user).

Per cell, pooled over tasks and seeds:

* **calibration**: among tasks stopped with ``target``, the share whose answer (the best, or the
  3 best as a set) is the judge's latent one, with its Wilson 95% interval; goal >= 0.95 pooled and
  no cell's interval wholly below 0.90;
* **settled**: the share of tasks stopped by ``target``;
* **judgments**, **answers shown** and **tokens** per task: tokens estimated from the texts
  shown the way the dry run does (:func:`rankkit.runs.plan.tokens.estimate_tokens`: the task's
  prompt and every answer shown, per judgment; no template).

Every budget is ``N − 1`` judgments per candidate: every distinct judgment for the pairwise strategies
(``swiss`` with ``order=both``), so the question is how often the target is reached within it and
whether those stops are right.

The cells are not independent samples: a judge seed fixes each answer's perception and the noise
of each shown pair for every judge of the family (the simulator keys its draws by seed, task and
answers), and ``active`` and ``swiss`` end up asking many of the same questions, so one unlucky
task configuration shows up in several cells. More tasks, not more judges, narrow the intervals.

    nice python benchmarks/stopping_misspecified.py            # writes benchmarks/results/stopping_misspecified.md
    python benchmarks/stopping_misspecified.py --tasks 1 --pilot 4 --seeds 1 --out /tmp/quick.md
"""

from __future__ import annotations

import argparse
import json
import multiprocessing
import os
import sys
import time
from pathlib import Path

from rankkit.data.tasks import Task, load_tasks
from rankkit.judges import make_judge
from rankkit.runs.analysis.pair_effects import pair_effect_record
from rankkit.runs.plan.tokens import estimate_tokens
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stopping import RESULTS, SHARED, answer_is_latent, wilson

#: The misspecified family: name -> judge spec (the seed is added per trial).
JUDGES = {
    "independent": "sim:preset=gpt4",
    "clipped": "sim:preset=gpt4,perception=2,clip=true",  # perceptions wide enough to pass the ends
    "pair effects": "sim:preset=gpt4,pair_effect=0.5",
    "strong pair effects": "sim:preset=gpt4,pair_effect=1",
    "position": "sim:preset=gpt4,slot_bias=1",
    "ties": "sim:preset=gpt4,tie_margin=0.3",
    "duplicates": "sim:preset=gpt4,duplicates=0.3",
}
DATASETS = ["newsroom", "usr_topicalchat", "wmt23_sxs_mqm_ende", "wmt21_mqm_ted_ende", "realsumm"]
#: Strategy templates: ``{until}``, ``{budget}`` and (pairwise only) ``{rule}`` are filled per cell.
STRATEGIES = {
    "active": "active:until={until},criterion=target,budget={budget},stopping={rule}",
    "swiss": "swiss:until={until},order=both,budget={budget},stopping={rule}",
    "setwise_groups": "setwise_groups:until={until},k=4,criterion=target,rounds=1000,budget={budget},stopping={rule}",
}
TARGETS = ["top1", "top:3"]
ALL_RULES = ["bt", "pair_effects", "pilot"]
#: The rules a run compares by default: before (0.3's) and after (with the pilot's pair_sd).
RULES = ["bt", "pilot"]


def spend(task: Task, task_result) -> tuple[int, int, int]:
    """(judgments, answers shown, estimated tokens shown) of one strategy's run on one task."""
    prompt = estimate_tokens(task.prompt)
    tokens = {c.id: estimate_tokens(c.text) for c in task.candidates}
    shown = [(c.first, c.second) for c in task_result.comparisons] + [
        tuple(g.shown) for g in task_result.group_comparisons
    ]
    answers = sum(len(group) for group in shown)
    return len(shown), answers, sum(prompt + sum(tokens[cid] for cid in group) for group in shown)


def pilot_pair_sd(tasks: list[Task], judge_spec: str, seed: int) -> float:
    """The 95% upper value of the judge's pair-effect sd from all-pairs ``bt`` on ``tasks`` (a pilot run)."""
    result = run(tasks, [make_strategy("bt")], make_judge(f"{judge_spec},seed={seed}"), seed=seed)
    return pair_effect_record(result)["upper"]


def measure(tasks: list[Task], judge_spec: str, specs: list[str]) -> dict[str, float]:
    """Calibration, settled share and mean spend on ``tasks``: ``specs[seed]`` with judge seed ``seed``."""
    right = stops = total = judgments = answers = tokens = 0
    for seed, spec in enumerate(specs):
        judge = make_judge(f"{judge_spec},seed={seed}")
        result = run(tasks, [make_strategy(spec)], judge, seed=seed)
        for task, task_result in zip(tasks, result.strategies[0].tasks):
            total += 1
            used = spend(task, task_result)
            judgments, answers, tokens = judgments + used[0], answers + used[1], tokens + used[2]
            if next(iter(task_result.extras.values())).stopped == "target":
                stops += 1
                right += answer_is_latent(task_result.ranking, judge.latent(task), spec)
    return {
        "right": right,
        "stops": stops,
        "settled": stops / total,
        "judgments": judgments / total,
        "answers": answers / total,
        "tokens": tokens / total,
    }


def cell(row: dict[str, float]) -> str:
    """``0.968 (30/31; 0.83–0.99) · 0.52 · 21 · 42 · 3.1k``: calibration, settled, spend."""
    if row["stops"]:
        low, high = wilson(int(row["right"]), int(row["stops"]))
        calibration = f"{row['right'] / row['stops']:.3f} ({row['right']}/{row['stops']}; {low:.2f}–{high:.2f})"
    else:
        calibration = "– (0)"
    return (
        f"{calibration} | {row['settled']:.2f} | {row['judgments']:.1f} | {row['answers']:.1f} "
        f"| {row['tokens'] / 1000:.1f}k"
    )


def load(name: str, tasks: int, skip: int = 0) -> list[Task]:
    """Tasks ``skip`` to ``skip + tasks`` of a shared dataset."""
    return load_tasks(SHARED / name / "tasks.jsonl", limit=skip + tasks)[skip:]


#: The judge seed of the pilot runs (the scored runs use 0, 1, 2, …).
PILOT_SEED = 100


def one_pilot(job: tuple[str, str, int, int]) -> tuple[tuple[str, str], float]:
    """One (data, judge) pilot's ``pair_sd`` (a worker's job)."""
    name, judge_name, scored, pilot = job
    pair_sd = pilot_pair_sd(load(name, pilot, skip=scored), JUDGES[judge_name], PILOT_SEED)
    print(f"pilot {name} {judge_name}: pair_sd={pair_sd:g}", file=sys.stderr, flush=True)
    return (name, judge_name), pair_sd


def one_cell(job: tuple[str, str, str, str, str, int, list[float | None]]) -> dict:
    """One (data, judge, strategy, until, rule) cell's figures (a worker's job); ``pair_sds`` per seed."""
    name, judge_name, strategy, until, rule, tasks_each, pair_sds = job
    tasks = load(name, tasks_each)
    template = STRATEGIES[strategy].format(
        until=until, budget=len(tasks[0].candidates) - 1, rule="pair_effects" if rule == "pilot" else rule
    )
    specs = [template + (f",pair_sd={sd:g}" if sd is not None else "") for sd in pair_sds]
    row = measure(tasks, JUDGES[judge_name], specs)
    print(f"{name} {judge_name} {specs[0]}: {row}", file=sys.stderr, flush=True)
    return {
        "data": name,
        "n": len(tasks[0].candidates),
        "tasks": len(tasks),
        "judge": judge_name,
        "strategy": strategy,
        "until": until,
        "rule": rule,
        "pair_sds": pair_sds,
        **row,
    }


def pooled_line(label: str, rows: list[dict]) -> str:
    """``label: right/stops = share (Wilson …); cells below 0.90 …`` over ``rows``; a cell is a
    (judge, strategy, until) pooled over datasets, and the dataset rows are counted too."""
    right, stops = sum(r["right"] for r in rows), sum(r["stops"] for r in rows)
    low, high = wilson(right, stops)
    cells: dict[tuple[str, str, str], list[int]] = {}
    for r in rows:
        cell_total = cells.setdefault((r["judge"], r["strategy"], r["until"]), [0, 0])
        cell_total[0] += r["right"]
        cell_total[1] += r["stops"]
    uppers = [(wilson(k, n)[1], ", ".join(key)) for key, (k, n) in cells.items() if n]
    row_uppers = [wilson(r["right"], r["stops"])[1] for r in rows if r["stops"]]
    worst = min(uppers, default=(float("nan"), "no stops"))
    settled = sum(r["settled"] for r in rows) / max(len(rows), 1)
    return (
        f"* {label}: pooled {right}/{stops} = {right / max(stops, 1):.3f} (Wilson {low:.3f}–{high:.3f}); "
        f"settled {settled:.3f}; cells (judge × strategy × until) wholly below 0.90: "
        f"{sum(u < 0.90 for u, _ in uppers)} of {len(uppers)} with stops (lowest upper bound {worst[0]:.3f}: "
        f"{worst[1]}); dataset rows wholly below 0.90: {sum(u < 0.90 for u in row_uppers)} of {len(row_uppers)}."
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=10, help="tasks scored per shared dataset")
    parser.add_argument("--pilot", type=int, default=30, help="pilot tasks per dataset (after the scored ones)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--data", default=",".join(DATASETS), help="comma-separated shared datasets")
    parser.add_argument("--rules", default=",".join(RULES), help=f"comma-separated, of {', '.join(ALL_RULES)}")
    parser.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    parser.add_argument("--out", type=Path, default=RESULTS / "stopping_misspecified.md")
    parser.add_argument(
        "--rows", type=Path, nargs="*", help="only re-render the rows of earlier runs' .json files (e.g. one per rule)"
    )
    args = parser.parse_args()
    if args.rows:
        rows = [row for path in args.rows for row in json.loads(path.read_text(encoding="utf-8"))]
        args.rules = ",".join(rule for rule in ALL_RULES if any(row["rule"] == rule for row in rows))
        args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
        write_table(args, rows, float("nan"))
        return

    rules = args.rules.split(",")
    names = [name for name in args.data.split(",") if (SHARED / name / "tasks.jsonl").exists()]
    started = time.perf_counter()
    with multiprocessing.Pool(args.workers) as pool:
        pilots = dict(
            pool.map(
                one_pilot,
                [(n, j, args.tasks, args.pilot) for n in names for j in JUDGES if "pilot" in rules],
                chunksize=1,
            )
        )
        jobs = [
            (
                name,
                judge,
                strategy,
                until,
                rule,
                args.tasks,
                [pilots[(name, judge)] if rule == "pilot" else None] * args.seeds,
            )
            for name in names
            for judge in JUDGES
            for strategy in STRATEGIES
            for until in TARGETS
            for rule in rules
        ]
        rows = pool.map(one_cell, jobs, chunksize=1)
    seconds = time.perf_counter() - started
    args.out.with_suffix(".json").write_text(json.dumps(rows, indent=1) + "\n", encoding="utf-8")
    write_table(args, rows, seconds)


def write_table(args: argparse.Namespace, rows: list[dict], seconds: float) -> None:
    """The markdown summary and per-cell table, printed and written to ``args.out``."""
    rules = args.rules.split(",")
    how = f"{seconds / 60:.0f} min on {args.workers} worker(s)" if seconds == seconds else "rows of several runs"
    shapes = {r["data"]: (r["n"], r["tasks"]) for r in rows}
    data = ", ".join(f"{name} (N = {n}, {tasks} tasks)" for name, (n, tasks) in shapes.items())
    # Rows merged from several runs may differ in --tasks; then the data list above says each one.
    task_counts = {tasks for _, tasks in shapes.values()}
    tasks_option = f"--tasks {task_counts.pop()} " if len(task_counts) == 1 else ""
    header = [
        "# Stopping rules on misspecified judges (issue 42)",
        "",
        f"`python benchmarks/stopping_misspecified.py {tasks_option}--pilot {args.pilot} --seeds {args.seeds} "
        f"--rules {args.rules}` ({how}; judge seeds 0..{args.seeds - 1}; data {data}). "
        "Rules: `bt` (0.3's rule and the default), `pair_effects` (the pair-effect sd averaged over 0, 1, 2 "
        "within a task: 757ffa5's default) and `pilot` (`pair_effects` with `pair_sd=` the 95% upper "
        "value estimated from a pilot run of the same judge on other tasks of the dataset). Per rule: "
        "calibration among `target` stops (right/stops; Wilson 95%), the share settled, and per task "
        "the judgments, the answers shown and the tokens shown (prompt + answers per judgment, 4 "
        "characters a token). Budget `N − 1` judgments per candidate. Judges (`sim:` options, "
        "`docs/judges-sim.md`): " + "; ".join(f"{k} `{v}`" for k, v in JUDGES.items()) + ".",
        "",
    ]
    for rule in rules:
        header.append(pooled_line(f"`{rule}`, all strategies", [r for r in rows if r["rule"] == rule]))
        for field, values in (("strategy", STRATEGIES), ("data", shapes)):
            for value in values:
                chosen = [r for r in rows if r["rule"] == rule and r[field] == value]
                header.append("  " + pooled_line(value, chosen))
    pilots = sorted({(r["data"], r["judge"], tuple(r["pair_sds"])) for r in rows if r["rule"] == "pilot"})
    header += [
        "",
        "Pilot estimates (`pair_sd` per seed): "
        + "; ".join(f"{name} {judge} {'/'.join(f'{sd:g}' for sd in sds)}" for name, judge, sds in pilots)
        + ".",
        "",
    ]
    header += [
        "| data (N, tasks) | judge | strategy | until | "
        + " | ".join(f"{rule}: calibration | settled | judgments | answers | tokens" for rule in rules)
        + " |",
        "|---|---|---|---|" + "---|" * (5 * len(rules)),
    ]
    by_cell = {(r["data"], r["judge"], r["strategy"], r["until"], r["rule"]): r for r in rows}
    lines = []
    for (name, judge, strategy, until, rule), row in by_cell.items():
        if rule != rules[0]:
            continue
        cells = " | ".join(cell(by_cell[(name, judge, strategy, until, other)]) for other in rules)
        lines.append(f"| {name} ({row['n']}, {row['tasks']}) | {judge} | {strategy} | {until} | {cells} |")
    args.out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print("\n".join(header + lines))


if __name__ == "__main__":
    main()
