"""Crafted results, leaderboard and run files: each a valid file with one field made hostile.

Each case is ``(name, field named in the error, change)``; ``change(payload)`` edits the parsed
JSON in place, and may return raw JSON text instead (for what ``json.dumps`` cannot write: NaN
literals, a 5001-digit integer, 100,000 nested lists).
"""

from __future__ import annotations

import copy
import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

Change = Callable[[dict[str, Any]], str | None]


def _raw(payload: dict[str, Any], marker: str, text: str) -> str:
    """``payload`` as JSON with the string ``marker`` replaced by raw JSON ``text``."""
    return json.dumps(payload).replace(json.dumps(marker), text, 1)


def _set(path: list[Any], value: Any) -> Change:
    def change(payload: dict[str, Any]) -> None:
        target = payload
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = value

    return change


def _set_raw(path: list[Any], text: str) -> Change:
    def change(payload: dict[str, Any]) -> str:
        _set(path, "@@RAW@@")(payload)
        return _raw(payload, "@@RAW@@", text)

    return change


def _first_ranking(payload: dict[str, Any]) -> list[str]:
    return payload["strategies"][0]["tasks"][0]["ranking"]


def _ranking_repeats(payload: dict[str, Any]) -> None:
    ranking = _first_ranking(payload)
    ranking[:] = [ranking[0]] * 5


def _duplicate_candidate_id(payload: dict[str, Any]) -> None:
    candidates = payload["task_data"][0]["candidates"]
    candidates[1]["id"] = candidates[0]["id"]


def _nan_score(payload: dict[str, Any]) -> str:
    scores = payload["strategies"][0]["tasks"][0]["scores"]
    scores[next(iter(scores))] = "@@RAW@@"
    return _raw(payload, "@@RAW@@", "NaN")


DEEP = "[" * 100_000 + "]" * 100_000
HUGE_INT = "9" * 5001

#: Results files (``rankkit compare --out``).
RESULTS_CASES: list[tuple[str, str, Change]] = [
    ("5001-digit integer", "", _set_raw(["seed"], HUGE_INT)),
    ("100k nested lists", "", _set_raw(["task_data", 0, "meta"], DEEP)),
    ("nesting past the limit", "task_data[0].meta", _set_raw(["task_data", 0, "meta"], "[" * 200 + "]" * 200)),
    ("duplicate candidate id", "task_data[0].candidates[1]", _duplicate_candidate_id),
    ("integer candidate id", "task_data[0].candidates[0].id", _set(["task_data", 0, "candidates", 0, "id"], 5)),
    ("integer task id", "task_data[0].task_id", _set(["task_data", 0, "task_id"], 7)),
    ("integer text", "task_data[0].candidates[0].text", _set(["task_data", 0, "candidates", 0, "text"], 5)),
    ("ranking names one id five times", "strategies[0].tasks[0].ranking[1]", _ranking_repeats),
    (
        "dangling ranking id",
        "strategies[0].tasks[0].ranking[0]",
        _set(["strategies", 0, "tasks", 0, "ranking", 0], "zz"),
    ),
    ("NaN score", "strategies[0].tasks[0].scores", _nan_score),
    ("Infinity seed", "seed", _set_raw(["seed"], "Infinity")),
    (
        "1e999 human score",
        "task_data[0].candidates[0].human",
        _set_raw(["task_data", 0, "candidates", 0, "human"], "1e999"),
    ),
    (
        "path-like system",
        "task_data[0].candidates[0].system",
        _set(["task_data", 0, "candidates", 0, "system"], "../x"),
    ),
    (
        "text of 10 million characters",
        "task_data[0].candidates[0].text",
        _set(["task_data", 0, "candidates", 0, "text"], "x" * 10_000_001),
    ),
    ("dangling task id", "strategies[0].tasks[0].task_id", _set(["strategies", 0, "tasks", 0, "task_id"], "nope")),
    (
        "dangling comparison id",
        "strategies[0].tasks[0].comparisons[0].first",
        _set(["strategies", 0, "tasks", 0, "comparisons", 0, "first"], "zz"),
    ),
    ("champion a list", "strategies[0].tasks[0].champion", _set(["strategies", 0, "tasks", 0, "champion"], [])),
]


def _duplicate_system(payload: dict[str, Any]) -> None:
    payload["systems"].append(copy.deepcopy(payload["systems"][0]))


#: Leaderboards (``rankkit leaderboard --out``).
BOARD_CASES: list[tuple[str, str, Change]] = [
    ("missing anchor", "anchor", _set(["anchor"], "nobody")),
    ("judge not an object", "judge", _set(["judge"], "sim")),
    ("string outcome", "matches[0].outcome", _set(["matches", 0, "outcome"], "1")),
    ("string rating", "systems[0].rating", _set(["systems", 0, "rating"], "high")),
    ("string seed", "seed", _set(["seed"], "0")),
    ("system name with ../", "systems[0].name", _set(["systems", 0, "name"], "../evil")),
    ("NaN rating", "systems[0].rating", _set_raw(["systems", 0, "rating"], "NaN")),
    ("duplicate systems", "systems[", _duplicate_system),
    ("dangling match system", "matches[0].a", _set(["matches", 0, "a"], "ghost")),
    ("anchored board without its anchor", "anchor", _set(["method"], "anchored")),
    ("anchor check not an object", "anchor_ceiling", _set(["anchor_ceiling"], "x")),
    ("integer match task", "matches[0].task", _set(["matches", 0, "task"], 5)),
    ("string match level", "matches[0].level", _set(["matches", 0, "level"], "A>>B")),
    ("match level out of range", "matches[0].level", _set(["matches", 0, "level"], 3)),
    ("style not an object", "style", _set(["style"], "x")),
    ("5001-digit seed", "", _set_raw(["seed"], HUGE_INT)),
    ("100k nested lists", "", _set_raw(["style"], DEEP)),
]

#: Run files (``--config run.json``), not results files.
RUN_FILE_CASES: list[tuple[str, str, Change]] = [
    ("NaN seed", "seed", _set_raw(["seed"], "NaN")),
    ("1e999 seed", "seed", _set_raw(["seed"], "1e999")),
    ("5001-digit seed", "", _set_raw(["seed"], HUGE_INT)),
    ("100k nested lists", "", _set_raw(["strategies"], DEEP)),
]


def write_crafted(original: dict[str, Any], change: Change, path: Path) -> Path:
    """Write ``original`` changed by ``change`` to ``path``."""
    payload = copy.deepcopy(original)
    text = change(payload)
    path.write_text(text if text is not None else json.dumps(payload), encoding="utf-8")
    return path
