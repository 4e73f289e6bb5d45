"""The Ray executor against the plain run: the same judge on the same tasks, in this process and in
Ray actors on a local cluster (``ray.init(num_cpus=ACTORS)``, one actor per CPU).

Both runs use the library (``rankkit.api.compare``) with no cache, so every judgment is asked. The
figures: whether the results JSON (timings left out) and the rankings are the same, the judgments
used and asked, the seconds spent loading (the model here; the cluster and the actors there) and
judging, and how many prompts each actor answered.

Usage: ``python benchmarks/ray_executor.py [--judge smollm2] [--tasks 3] [--actors 2]``.
Figures are printed and written to ``benchmarks/results/ray_executor.md``.
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT)]
os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # see rankkit.judges.local.hf_loading.import_torch

from rankkit.api import compare  # noqa: E402
from rankkit.data.tasks import SAMPLE_DATA, load_tasks  # noqa: E402
from rankkit.judges import make_judge  # noqa: E402
from rankkit.judges.local.ray_executor import RayExecutor  # noqa: E402

RESULTS = ROOT / "benchmarks" / "results" / "ray_executor.md"
STRATEGIES = ("knockout", "individual", "knockout:order=both")
TIMINGS = {"seconds", "wall_seconds", "warm_up_seconds"}


def without_timings(payload):
    """A results JSON without its timings."""
    if isinstance(payload, dict):
        return {k: without_timings(v) for k, v in payload.items() if k not in TIMINGS}
    if isinstance(payload, list):
        return [without_timings(v) for v in payload]
    return payload


def timed_run(spec: str, tasks, executor: RayExecutor | None) -> dict:
    """Build the judge (timed: loading), run the strategies (timed: judging), and close it."""
    start = time.perf_counter()
    judge = make_judge(spec, executor=executor)
    loaded = time.perf_counter()
    try:
        result = compare(tasks, STRATEGIES, judge=judge, seed=0)
        judged = time.perf_counter()
        answered = list(getattr(judge.runtime, "answered", []))
    finally:
        judge.close()
    return {
        "result": result,
        "load_s": loaded - start,
        "judge_s": judged - loaded,
        "used": sum(s.cost.comparisons + s.cost.grades for s in result.strategies),
        "asked": sum(s.cost.judge_calls for s in result.strategies),
        "answered": answered,
    }


def report(spec: str, tasks: int, actors: int, plain: dict, on_ray: dict) -> str:
    same_json = without_timings(plain["result"].to_dict()) == without_timings(on_ray["result"].to_dict())
    same_rankings = [[t.ranking for t in s.tasks] for s in plain["result"].strategies] == [
        [t.ranking for t in s.tasks] for s in on_ray["result"].strategies
    ]
    rows = [
        ("plain (this process)", plain),
        (f"ray ({actors} actors, one CPU each)", on_ray),
    ]
    lines = [
        "# Ray executor: plain run vs `--executor ray`",
        "",
        f"`python benchmarks/ray_executor.py --judge {spec} --tasks {tasks} --actors {actors}` on "
        f"{platform.machine()}, {os.cpu_count()} CPUs (shared with other work, so seconds are rough); "
        f"strategies {', '.join(STRATEGIES)}; bundled sample, no cache.",
        "",
        f"- same results JSON (timings left out): **{'yes' if same_json else 'no'}**",
        f"- same rankings: **{'yes' if same_rankings else 'no'}**",
        "",
        "| run | judgments used | asked of the model | load s | judging s | answered per actor |",
        "|---|---:|---:|---:|---:|---|",
    ]
    for name, run in rows:
        per_actor = " / ".join(map(str, run["answered"])) or "-"
        lines.append(
            f"| {name} | {run['used']} | {run['asked']} | {run['load_s']:.1f} | {run['judge_s']:.1f} | {per_actor} |"
        )
    lines += [
        "",
        "Load is the model's load here; for Ray, starting the local cluster and each actor's imports and "
        "model load. An hf judge in exact mode (the default on a CPU) answers one prompt at a time, so the "
        "plain run asks one at a time; the actors answer one each at once. Both share this machine's cores "
        "(and other work), so the seconds say little about a cluster, where each actor has a GPU or node of its own.",
    ]
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--judge", default="smollm2")
    parser.add_argument("--tasks", type=int, default=3)
    parser.add_argument("--actors", type=int, default=2)
    args = parser.parse_args()
    import ray

    tasks = load_tasks(SAMPLE_DATA, limit=args.tasks)
    plain = timed_run(args.judge, tasks, None)
    start = time.perf_counter()
    ray.init(num_cpus=args.actors, include_dashboard=False, log_to_driver=False, object_store_memory=100 * 1024**2)
    started = time.perf_counter() - start
    try:
        on_ray = timed_run(args.judge, tasks, RayExecutor(actors=args.actors))
    finally:
        ray.shutdown()
    on_ray["load_s"] += started
    text = report(args.judge, args.tasks, args.actors, plain, on_ray)
    print(text)
    RESULTS.write_text(text, encoding="utf-8")


if __name__ == "__main__":
    main()
