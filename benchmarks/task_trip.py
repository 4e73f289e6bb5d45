"""Climbs back up on the trip of tasks: which rankkit modules reading a task file passes through, in what order.

Issue 41 asks that reading tasks enter each module once, in one direction. This script runs
``rankkit.compare(DATA, strategies=["knockout"], judge="sim", cache=None)`` on the bundled sample
(a JSONL file), and the same with a long-form CSV written from it, under :func:`sys.setprofile`,
and records every call of a function defined in ``rankkit/`` together with the module of the
nearest ``rankkit`` frame that called it (frames of the standard library in between are skipped, so
``json.loads`` calling back a hook of the same module is no move).

* **trip**: the modules in the order they are first entered;
* **a climb back up**: a call from one module into another that was entered earlier in the trip
  (counted once per pair of modules: a reader that parses every line with one helper is one
  climb, not one per line). A straight path has none: every call goes to a module entered later.
  The methods and properties of ``Task``, ``Candidate`` and ``StyleFeatures`` are not followed:
  every stage reads the tasks' fields, which is using the data, not going back to read it.

Two figures each: while ``load_tasks`` runs (reading and validating), and on the whole trip of
the tasks to the metrics, counting only the moves into or out of the task-reading modules
(``tasks``, ``task_files``, ``frames``, ``file_parsing``), since the judgment's own trip is a separate
figure.

    python benchmarks/task_trip.py [--label after]

Prints the figures and writes ``benchmarks/results/task_trip_<label>.md``.
"""

from __future__ import annotations

import argparse
import csv
import sys
import tempfile
from pathlib import Path

import rankkit
import rankkit.api
import rankkit.data.tasks
from rankkit.data.tasks import load_tasks, task_rows

PACKAGE = Path(rankkit.__file__).resolve().parent
RESULTS = Path(__file__).resolve().parent / "results"
SAMPLE = PACKAGE / "data" / "sample" / "tasks.jsonl"
READING = {"tasks", "task_files", "frames", "file_parsing"}
#: Reading a task's fields is using the data, not a move between stages: their methods are not followed.
MODEL_CLASSES = {"Task", "Candidate", "StyleFeatures"}


def module_of(filename: str) -> str | None:
    """``frames`` for ``.../rankkit/frames.py``; None outside the package."""
    path = Path(filename).resolve()
    if not path.is_relative_to(PACKAGE):
        return None
    parts = list(path.relative_to(PACKAGE).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts) or "rankkit"


class Trip:
    """The modules entered, in order, and the calls between them, while the profiler runs."""

    def __init__(self) -> None:
        self.order: list[str] = []
        self.calls: list[tuple[str, str]] = []
        self.loading = False
        self.loading_calls: list[tuple[str, str]] = []
        self.loading_order: list[str] = []

    def profile(self, frame, event, arg) -> None:
        if event != "call":
            return
        callee = module_of(frame.f_code.co_filename)
        if callee is None or frame.f_code.co_qualname.partition(".")[0] in MODEL_CLASSES:
            return
        caller, back = None, frame.f_back
        while back is not None and caller is None:
            caller = module_of(back.f_code.co_filename)
            back = back.f_back
        if callee not in self.order:
            self.order.append(callee)
        if self.loading and callee not in self.loading_order:
            self.loading_order.append(callee)
        if caller is not None and caller != callee:
            self.calls.append((caller, callee))
            if self.loading:
                self.loading_calls.append((caller, callee))


def climbs(order: list[str], calls: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The distinct calls into a module entered earlier than their caller, in the order they happen."""
    rank = {name: index for index, name in enumerate(order)}
    found: list[tuple[str, str]] = []
    for caller, callee in calls:
        if caller in rank and rank[callee] < rank[caller] and (caller, callee) not in found:
            found.append((caller, callee))
    return found


def measure(data: Path) -> dict[str, object]:
    trip = Trip()
    real_load = rankkit.data.tasks.load_tasks

    def traced_load(*args, **kwargs):
        trip.loading = True
        try:
            return real_load(*args, **kwargs)
        finally:
            trip.loading = False

    rankkit.api.load_tasks = traced_load
    sys.setprofile(trip.profile)
    try:
        rankkit.compare(str(data), strategies=["knockout"], judge="sim", cache=None)
    finally:
        sys.setprofile(None)
        rankkit.api.load_tasks = real_load
    loading = climbs(trip.loading_order, trip.loading_calls)
    whole = [pair for pair in climbs(trip.order, trip.calls) if READING & set(pair)]
    return {
        "loading_order": trip.loading_order,
        "loading_climbs": loading,
        "trip_order": [name for name in trip.order if name in READING or name == "api"],
        "trip_climbs": whole,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="now")
    args = parser.parse_args()
    lines = [f"# Trip of tasks from rankkit.compare ({args.label})", ""]
    with tempfile.TemporaryDirectory() as folder:
        csv_path = Path(folder) / "tasks.csv"
        # The plain CSV reader takes no metadata columns.
        rows = [{k: v for k, v in row.items() if not k.startswith("meta.")} for row in task_rows(load_tasks(SAMPLE))]
        with csv_path.open("w", newline="", encoding="utf-8") as handle:
            writer = csv.DictWriter(handle, fieldnames=list(rows[0]))
            writer.writeheader()
            writer.writerows(rows)
        for name, data in (("JSONL", SAMPLE), ("CSV", csv_path)):
            figures = measure(data)
            lines += [
                f"## {name}",
                "",
                f"* modules entered by load_tasks, in order: {' -> '.join(figures['loading_order'])}",
                f"* climbs back up while loading: {len(figures['loading_climbs'])} "
                f"({', '.join(f'{a} -> {b}' for a, b in figures['loading_climbs']) or 'none'})",
                f"* climbs back up into or out of the task-reading modules on the whole compare: "
                f"{len(figures['trip_climbs'])} ({', '.join(f'{a} -> {b}' for a, b in figures['trip_climbs']) or 'none'})",
                "",
            ]
    text = "\n".join(lines)
    print(text)
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / f"task_trip_{args.label}.md").write_text(text + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
