"""Stopping rules on misspecified judges (issue 42): are ``target`` stops right when the judge is not Bradley–Terry?

For each simulated judge of the misspecified family (``docs/judges-sim.md``: independent draws,
clipping at the scale's ends, persistent pair preferences, position bias, ties, near-duplicate
answers), each dataset (the first tasks of the shared N-way sets under ``shared/data``, skipped when
absent, and planted tasks with N = 16), each judge seed and each strategy with ``until=top1`` and
``until=top:3``, the pairwise strategies run under both stopping rules: ``stopping=bt`` (0.3's rule,
each distinct judgment an independent vote) and ``stopping=pair_effects`` (the default: a pair's
judgments share a persistent effect); ``setwise_groups`` likewise (``stopping=bt``, its default, and
``stopping=pair_effects``: a pair's first choices count less the more often it was shown together). Per
cell, pooled over tasks and seeds:

* **calibration**: among tasks stopped with ``target``, the share whose answer (the best, or the
  3 best as a set) is the judge's latent one, with its Wilson 95% interval; goal >= 0.95 pooled and
  no cell's interval wholly below 0.90;
* **settled**: the share of tasks stopped by ``target``;
* **judgments**, **answers shown** and **tokens** per task: tokens estimated from the texts
  shown the way the dry run does (:func:`rankkit.runs.plan.tokens.estimate_tokens`: the task's
  prompt and every answer shown, per judgment; no template).

Every budget is ``N − 1`` judgments per candidate: every distinct judgment for the pairwise strategies
(``swiss`` with ``order=both``), so the question is
how often the target is reached within it and whether those stops are right.

    nice python benchmarks/stopping_misspecified.py            # writes benchmarks/results/stopping_misspecified.md
    python benchmarks/stopping_misspecified.py --tasks 1 --planted 1 --seeds 1 --out /tmp/quick.md
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from rankkit.data.tasks import Task, load_tasks
from rankkit.judges import make_judge
from rankkit.runs.plan.tokens import estimate_tokens
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

sys.path.insert(0, str(Path(__file__).resolve().parent))
from stopping import RESULTS, SHARED, answer_is_latent, planted, wilson

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
DATASETS = ["newsroom", "usr_topicalchat", "wmt23_sxs_mqm_ende"]
#: Strategy templates: ``{until}``, ``{budget}`` and (pairwise only) ``{rule}`` are filled per cell.
STRATEGIES = {
    "active": "active:until={until},criterion=target,budget={budget},stopping={rule}",
    "swiss": "swiss:until={until},order=both,budget={budget},stopping={rule}",
    "setwise_groups": "setwise_groups:until={until},k=4,criterion=target,rounds=1000,budget={budget},stopping={rule}",
}
TARGETS = ["top1", "top:3"]
RULES = ["bt", "pair_effects"]


def spend(task: Task, task_result) -> tuple[int, int, int]:
    """(judgments, answers shown, estimated tokens shown) of one strategy's run on one task."""
    prompt = estimate_tokens(task.prompt)
    tokens = {c.id: estimate_tokens(c.text) for c in task.candidates}
    shown = [(c.first, c.second) for c in task_result.comparisons] + [
        tuple(g.shown) for g in task_result.group_comparisons
    ]
    answers = sum(len(group) for group in shown)
    return len(shown), answers, sum(prompt + sum(tokens[cid] for cid in group) for group in shown)


def measure(tasks: list[Task], judge_spec: str, spec: str, seeds: int) -> dict[str, float]:
    """Calibration, settled share and mean spend of ``spec`` on ``tasks`` over ``seeds`` judge seeds."""
    right = stops = total = judgments = answers = tokens = 0
    for seed in range(seeds):
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


def data_sets(tasks_each: int, planted16: int) -> list[tuple[str, list[Task]]]:
    """The first ``tasks_each`` tasks of each shared set present, and ``planted16`` planted N = 16 tasks."""
    sets = []
    for name in DATASETS:
        path = SHARED / name / "tasks.jsonl"
        if not path.exists():
            print(f"skipping {name}: {path} is absent", file=sys.stderr)
            continue
        sets.append((name, load_tasks(path, limit=tasks_each)))
    return sets + ([("planted", planted(16, planted16))] if planted16 else [])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=4, help="tasks per shared dataset")
    parser.add_argument("--planted", type=int, default=3, help="planted tasks with N = 16 (0: none)")
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--out", type=Path, default=RESULTS / "stopping_misspecified.md")
    args = parser.parse_args()

    pooled = {rule: [0, 0] for rule in RULES}
    worst = dict.fromkeys(RULES, (2.0, ""))
    lines = []
    started = time.perf_counter()
    for name, tasks in data_sets(args.tasks, args.planted):
        n = len(tasks[0].candidates)
        for judge_name, judge_spec in JUDGES.items():
            for strategy, template in STRATEGIES.items():
                for until in TARGETS:
                    rows = {}
                    for rule in RULES:
                        spec = template.format(until=until, budget=n - 1, rule=rule)
                        rows[rule] = measure(tasks, judge_spec, spec, args.seeds)
                        print(f"{name} {judge_name} {spec}: {rows[rule]}", file=sys.stderr)
                    for rule, row in rows.items():
                        pooled[rule][0] += row["right"]
                        pooled[rule][1] += row["stops"]
                        if row["stops"]:
                            high = wilson(row["right"], row["stops"])[1]
                            where = f"{name}, {judge_name}, {strategy} until={until}"
                            worst[rule] = min(worst[rule], (high, where))
                    lines.append(
                        f"| {name} ({n}, {len(tasks)}) | {judge_name} | {strategy} | {until} "
                        f"| {cell(rows['bt'])} | {cell(rows['pair_effects'])} |"
                    )
    seconds = time.perf_counter() - started
    header = [
        "# Stopping rules on misspecified judges (issue 42)",
        "",
        f"`python benchmarks/stopping_misspecified.py --tasks {args.tasks} --planted {args.planted} "
        f"--seeds {args.seeds}` ({seconds / 60:.0f} min on one core; judge seeds 0..{args.seeds - 1}). "
        "Each cell runs `stopping=bt` (0.3's rule: before) and `stopping=pair_effects` (after; the "
        "default of `active` and `swiss`, an option of `setwise_groups`). Per rule: "
        "calibration among `target` stops (right/stops; Wilson 95%), the share settled, and per task "
        "the judgments, the answers shown and the tokens shown (prompt + answers per judgment, 4 "
        "characters a token). Budget `N − 1` judgments per candidate. Judges (`sim:` options, "
        "`docs/judges-sim.md`): " + "; ".join(f"{k} `{v}`" for k, v in JUDGES.items()) + ".",
        "",
    ]
    for rule in RULES:
        right, stops = pooled[rule]
        low, high = wilson(right, stops)
        header.append(
            f"* `stopping={rule}`: pooled {right}/{stops} = {right / max(stops, 1):.3f} "
            f"(Wilson {low:.3f}–{high:.3f}); lowest cell upper bound {worst[rule][0]:.3f} ({worst[rule][1]})."
        )
    header += [
        "",
        "| data (N, tasks) | judge | strategy | until | before: calibration | settled | judgments | answers "
        "| tokens | after: calibration | settled | judgments | answers | tokens |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    args.out.write_text("\n".join(header + lines) + "\n", encoding="utf-8")
    print("\n".join(header + lines))


if __name__ == "__main__":
    main()
