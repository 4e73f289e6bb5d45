"""The path of one judgment, measured: how often it re-enters a module it already left (issue 41).

For each judge below, ``rankkit.runs.runner.run`` ranks one task with ``knockout`` on a scripted runtime
(no model, no network). At every call into the runtime the script reads the call stack from
``runner.run`` down to the runtime, keeps the ``rankkit`` modules in order (consecutive frames of
one module are one visit), and counts the **climbs back**: visits to a module the path had already
entered and left (``memo -> llm -> memo`` is one). The figure per judge is the most over its runtime
calls; the longest path is printed too.

    PYTHONPATH=CHECKOUT python benchmarks/judgment_path.py [--label NAME]

prints the table and writes ``benchmarks/results/judgment_path_<label>.json``. Run it with
``PYTHONPATH`` on another checkout (e.g. a worktree of the commit before) to measure that one.
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

from rankkit.data.tasks import Candidate, Task
from rankkit.judges.composite.panel import PanelJudge
from rankkit.judges.llm.judge import LLMJudge
from rankkit.judges.llm.runtime import LLMRuntime
from rankkit.runs.runner import run
from rankkit.strategies import make_strategy

RESULTS = Path(__file__).resolve().parent / "results"
ENTRY = ("rankkit.runs.runner", "run")


def rankkit_path() -> list[str]:
    """The ``rankkit`` modules on the stack from ``runner.run`` to here, outermost first, one per visit."""
    frame = sys._getframe(1)
    frames = []
    while frame is not None:
        frames.append(frame)
        frame = frame.f_back
    frames.reverse()
    start = next(i for i, f in enumerate(frames) if (f.f_globals.get("__name__"), f.f_code.co_name) == ENTRY)
    path: list[str] = []
    for f in frames[start:]:
        module = f.f_globals.get("__name__", "")
        if module.startswith("rankkit") and (not path or path[-1] != module):
            path.append(module)
    return path


def climbs_back(path: list[str]) -> int:
    """Visits to a module already entered and left earlier on ``path``."""
    return sum(module in path[:index] for index, module in enumerate(path))


class PathRuntime(LLMRuntime):
    """Answers every read with fixed numbers and records the module path of each call."""

    backend = "path"

    def __init__(self, name: str):
        self.name = name
        self.paths: list[list[str]] = []

    def identity(self):
        return {"name": self.name}

    def generate(self, conversations, *, max_new_tokens, temperature, seed):
        from rankkit.judges.llm.runtime import Generation

        self.paths.append(rankkit_path())
        for index in range(len(conversations)):
            yield index, Generation("Both answers were read.", {"prompt_tokens": 10, "completion_tokens": 5})

    def next_token_logprobs(self, conversations, *, prefixes, choices):
        self.paths.append(rankkit_path())
        for index, row in enumerate(choices):
            yield index, {c: (-0.5 if position == 1 else -1.5 - position) for position, c in enumerate(row)}

    def answer_logliks(self, conversations, answers):
        self.paths.append(rankkit_path())
        for index, answer in enumerate(answers):
            yield index, -math.log(2 + len(answer))


def judges() -> dict[str, tuple[object, list[PathRuntime]]]:
    """The judges measured, each with the runtimes whose calls are recorded."""
    out = {}
    runtime = PathRuntime("plain")
    out["logprob"] = (LLMJudge(runtime, mode="logprob"), [runtime])
    runtime = PathRuntime("calibrated")
    out["logprob, calibrate"] = (LLMJudge(runtime, mode="logprob", calibrate=True), [runtime])
    runtime = PathRuntime("prepair")
    out["generate, prepair"] = (LLMJudge(runtime, mode="generate", prepair=True), [runtime])
    runtime = PathRuntime("both")
    out["logprob, prepair, calibrate"] = (
        LLMJudge(runtime, mode="logprob", prepair=True, calibrate=True),
        [runtime],
    )
    first, second = PathRuntime("member-1"), PathRuntime("member-2")
    panel = PanelJudge([LLMJudge(first, mode="logprob", calibrate=True), LLMJudge(second, mode="loglik")])
    out["panel (calibrated + loglik)"] = (panel, [first, second])
    return out


def task() -> Task:
    texts = ("a short answer", "a somewhat longer answer", "the longest answer of the three")
    candidates = tuple(Candidate(f"c{i}", text) for i, text in enumerate(texts))
    return Task("t", "Which answer is best?", candidates)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--label", default="now")
    args = parser.parse_args()
    rows = {}
    for name, (judge, runtimes) in judges().items():
        run([task()], [make_strategy("knockout")], judge, progress=False)
        paths = [path for runtime in runtimes for path in runtime.paths]
        longest = max(paths, key=lambda p: (climbs_back(p), len(p)))
        rows[name] = {"climbs_back": climbs_back(longest), "runtime_calls": len(paths), "path": longest}
        print(f"{name:30} climbs back {climbs_back(longest)}  ({len(paths)} runtime calls)")
        print("    " + " -> ".join(m.removeprefix("rankkit.") for m in longest))
    RESULTS.mkdir(exist_ok=True)
    out = RESULTS / f"judgment_path_{args.label}.json"
    out.write_text(json.dumps(rows, indent=2) + "\n", encoding="utf-8")
    print(f"written: {out}")


if __name__ == "__main__":
    main()
