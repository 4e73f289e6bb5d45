"""Regression pin: every strategy's brackets, matches (who was shown first) and scores, frozen.

The snapshot in ``tests/data/order_regression.json`` was written by this module (``python -m
tests.strategies.test_order_regression``) before presentation order moved into the match source
(``order=given|random|both``). Every registered strategy — default parameters, ``order=both`` and
its one-order setting — ranks a few planted tasks with the simulated ChatGPT judge and a fixed seed,
once on its own and once with all of them sharing one run (so one match graph per task, where
strategies reuse each other's judgments). Any change to an order, a coin flip or a score fails here.

One entry was re-pinned on purpose: ``heapsort:order=random`` and ``sliding:order=random`` ranking
alone. Their comparator used to flip its presentation coin the other way round from every other
strategy's (below ½ it showed the second candidate first); with ``order=random`` owned by the match
source there is one coin, so they draw the same coins but read them the other way — the same
distribution, other draws. Every other entry, and all of the shared run, is as written before,
except the 95% intervals (``ci_low``, ``ci_high``) of ``bt:bootstrap=5``: one bootstrap for all of
rankkit (:mod:`rankkit.stats`) now draws the resamples with NumPy from the seed; its scores,
rankings and matches are as written before (only those two extras were re-pinned). In 0.2 labels
stopped spelling ``order`` as ``debias=true|false``: the snapshot's keys were renamed to the new
labels (``knockout:order=both``), their contents left as they were.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any

import pytest

from rankkit.judges import make_judge
from rankkit.runner import run
from rankkit.strategies import make_strategy, strategy_classes
from rankkit.synthetic import planted_tasks

SNAPSHOT = Path(__file__).resolve().parents[1] / "data" / "order_regression.json"
JUDGE = "sim:preset=chatgpt"
SEED = 7
EXTRA_SPECS = ["active:batch=3", "swiss:aggregate=points", "heapsort:top_k=3", "double_elimination:aggregate=bt",
               "sliding:passes=3", "panel_elo:permutations=5", "bt:bootstrap=5"]


def specs() -> list[str]:
    """Each registered strategy with its defaults, then in both orders and in its one order."""
    out = []
    for name, cls in strategy_classes().items():
        out.append(name)
        if cls.kind == "pairwise":
            out += [f"{name}:order=both", f"{name}:order={cls.single_order or cls.default_order()}"]
    return out + EXTRA_SPECS


def tasks():
    strengths7 = {f"s{i}": 100.0 * i for i in range(7)}
    strengths10 = {f"s{i}": 60.0 * i for i in range(10)}
    return planted_tasks(strengths7, prompts=2, seed=1, prefix="a") + planted_tasks(strengths10, prompts=1, seed=2,
                                                                                     prefix="b")


def _plain(value: Any) -> Any:
    """JSON-comparable: NaN as a string (NaN != NaN), tuples as lists."""
    if isinstance(value, float) and math.isnan(value):
        return "nan"
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _summary(result) -> dict[str, Any]:
    out = {}
    for strategy_run in result.strategies:
        out[strategy_run.name] = [
            {"task": t.task_id, "scores": t.scores, "ranking": t.ranking, "champion": t.champion,
             "extras": {cid: e.to_dict() for cid, e in t.extras.items()}, "comparisons": t.cost.comparisons,
             "matches": [[m.first, m.second, m.round, m.verdict.first_grade, m.verdict.second_grade,
                          m.verdict.winner.value] for m in t.comparisons]}
            for t in strategy_run.tasks]
    return _plain(json.loads(json.dumps(_plain(out))))


def snapshot() -> dict[str, Any]:
    data = tasks()
    strategies = [make_strategy(spec) for spec in specs()]
    alone = {}
    for strategy in strategies:
        alone.update(_summary(run(data, [strategy], make_judge(JUDGE), seed=SEED, progress=False)))
    shared = _summary(run(data, strategies, make_judge(JUDGE), seed=SEED, progress=False))
    return {"specs": specs(), "alone": alone, "shared": shared}


@pytest.fixture(scope="module")
def now() -> dict[str, Any]:
    return snapshot()


@pytest.fixture(scope="module")
def before() -> dict[str, Any]:
    pinned = json.loads(SNAPSHOT.read_text())
    # The snapshot predates typed extras, which leave an unreported (None) field out: drop its nulls.
    for mode in ("alone", "shared"):
        for tasks in pinned[mode].values():
            for task in tasks:
                task["extras"] = {cid: {k: v for k, v in extras.items() if v is not None}
                                  for cid, extras in task["extras"].items()}
    return pinned


@pytest.mark.parametrize("mode", ["alone", "shared"])
def test_every_strategy_gives_the_same_matches_and_scores_as_before(now, before, mode):
    assert set(before[mode]) <= set(now[mode])
    for label, expected in before[mode].items():
        assert now[mode][label] == expected, label


if __name__ == "__main__":  # (re)write the snapshot — only when a change of outputs is intended
    SNAPSHOT.write_text(json.dumps(snapshot(), separators=(",", ":")) + "\n")
    print(f"wrote {SNAPSHOT} ({SNAPSHOT.stat().st_size} bytes)", file=sys.stderr)
