"""Checks for the files a user is handed: results, leaderboards and run files are untrusted input.

A results file or a leaderboard may come from someone else, so it is read the way a task file is
(:mod:`rankkit.data.tasks`): a problem is a :class:`~rankkit.errors.TaskFormatError` (exit 2) naming the
file and the field as a JSON path (``strategies[0].tasks[3].ranking[2]``), never a traceback and
never a silently odd value. Each function here checks one thing and raises on the first problem.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from os import PathLike
from pathlib import Path
from typing import Any

from rankkit.data.conversations import plain_text, read_answer, read_prompt
from rankkit.data.file_parsing import parse_json
from rankkit.data.tasks import DEFAULT_MAX_CANDIDATE_CHARS, DEFAULT_MAX_PROMPT_CHARS, MAX_DEPTH
from rankkit.errors import TaskFormatError

#: The largest file read (results of a large run are tens of MB; a bigger file is not one).
MAX_FILE_BYTES = 512 * 1024 * 1024
#: How deeply a file's values may nest: a task's own limit plus the few levels the file wraps it in.
MAX_FILE_DEPTH = MAX_DEPTH + 8
#: The most tasks, and candidates per task, a file may hold.
MAX_TASKS = 1_000_000
MAX_CANDIDATES = 100_000
#: The longest candidate text and prompt a file may hold: 100 times the task-file defaults, since a run
#: may raise those (``--max-candidate-chars``) and its results must read back; the commands that
#: judge texts again apply their own limits.
MAX_TEXT_CHARS = 100 * DEFAULT_MAX_CANDIDATE_CHARS
MAX_PROMPT_CHARS = 100 * DEFAULT_MAX_PROMPT_CHARS
#: The longest system name (a name is a label and part of file names in reports).
MAX_SYSTEM_NAME_CHARS = 200


def read_json_file(path: str | PathLike[str]) -> Any:
    """The JSON value of file ``path``, refused (exit 2, naming the file and field) when it is too
    large, not UTF-8, malformed, names a key twice, holds an integer too long to read, nests deeper
    than :data:`MAX_FILE_DEPTH` or holds a non-finite number (``NaN``, ``Infinity``, ``1e999``)."""
    path = Path(path)
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise TaskFormatError(path, None, None, f"{size} bytes, more than the {MAX_FILE_BYTES} a file may have")
    data = path.read_bytes()
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError as err:
        raise TaskFormatError(path, None, None, f"not valid UTF-8 (byte {err.start + 1}); save it as UTF-8") from None
    value = parse_json(path, None, text)
    check_tree(value, str(path))
    return value


def check_tree(value: Any, where: str | PathLike[str], line: int | None = None) -> None:
    """Refuse nesting deeper than :data:`MAX_FILE_DEPTH` and non-finite numbers anywhere in ``value``
    (line ``line`` of file ``where``; None: the whole file).

    Breadth first and without recursion, so the first problem named is the shallowest and no depth
    overflows the stack.
    """
    pending = deque([("", value, 0)])
    while pending:
        path, item, depth = pending.popleft()
        if depth > MAX_FILE_DEPTH:
            raise TaskFormatError(where, line, _shown_path(path), f"nested deeper than {MAX_FILE_DEPTH} levels")
        if isinstance(item, float) and not math.isfinite(item):
            raise TaskFormatError(where, line, path or None, f"expected a finite number, got {item}")
        if isinstance(item, Mapping):
            pending.extend((f"{path}.{key}" if path else str(key), v, depth + 1) for key, v in item.items())
        elif isinstance(item, list):
            pending.extend((f"{path}[{index}]", v, depth + 1) for index, v in enumerate(item))


def expect(value: Any, kind: type | tuple[type, ...], where: str, path: str, what: str) -> Any:
    """``value`` when it is an instance of ``kind`` (a bool is no number), else a :class:`TaskFormatError`
    saying it should be ``what``."""
    is_number_kind = kind in (int, float) or (isinstance(kind, tuple) and (int in kind or float in kind))
    if not isinstance(value, kind) or (is_number_kind and isinstance(value, bool)):
        raise TaskFormatError(where, None, path, f"expected {what}, got {type(value).__name__} {_shown(value)}")
    return value


def expect_list(value: Any, where: str, path: str, limit: int) -> list[Any]:
    """``value`` when it is a list of at most ``limit`` items."""
    expect(value, list, where, path, "a list")
    if len(value) > limit:
        raise TaskFormatError(where, None, path, f"{len(value)} items, more than the {limit} a file may have")
    return value


def expect_text(value: Any, where: str, path: str, limit: int) -> str:
    """``value`` when it is a string of at most ``limit`` characters."""
    expect(value, str, where, path, "a string")
    if len(value) > limit:
        raise TaskFormatError(where, None, path, f"{len(value)} characters, more than the {limit} allowed")
    return value


def _expect_text_or_messages(value: Any, read: Callable[..., Any], where: str, path: str, limit: int) -> None:
    """A prompt or answer of a results file: a string, or a conversation ``read`` accepts, of at most ``limit`` characters."""
    if not isinstance(value, list):
        expect_text(value, where, path, limit)
        return
    expect_text(plain_text(read(where, None, path, value)), where, path, limit)


def check_unique(values: Iterable[Any], where: str, path: str) -> None:
    """Refuse a value that appears twice in ``values``, naming its second place ``path[i]``."""
    seen = set()
    for index, value in enumerate(values):
        if value in seen:
            raise TaskFormatError(where, None, f"{path}[{index}]", f"{_shown(value)} appears twice")
        seen.add(value)


def check_known(value: Any, known: Mapping[str, Any] | set[str], where: str, path: str, what: str) -> None:
    """Refuse ``value`` when it is not one of ``known`` (a dangling reference to ``what``; every id is a string)."""
    if not isinstance(value, str) or value not in known:
        raise TaskFormatError(where, None, path, f"{_shown(value)} is not a {what} of this file")


def check_system_name(name: Any, where: str, path: str) -> str:
    """``name`` when it can be a system's name: a non-empty string of at most
    :data:`MAX_SYSTEM_NAME_CHARS` characters that does not read as a file path and holds no control
    character (names are shown in terminals and may become part of file names).

    ``org/model`` is a name (hub model ids are common system names); an absolute path, a backslash,
    or a ``.`` or ``..`` part is not.
    """
    expect_text(name, where, path, MAX_SYSTEM_NAME_CHARS)
    if not name.strip():
        raise TaskFormatError(where, None, path, "a system name may not be empty")
    if name.startswith("/") or "\\" in name or {".", ".."} & set(name.split("/")):
        raise TaskFormatError(where, None, path, f"{_shown(name)} looks like a file path, not a system name")
    if any(ord(char) < 32 or 127 <= ord(char) < 160 for char in name):
        raise TaskFormatError(where, None, path, f"{_shown(name)} holds a control character")
    return name


def check_number(value: Any, where: str, path: str, low: float = -math.inf, high: float = math.inf) -> float:
    """``value`` when it is a finite number in ``[low, high]``."""
    expect(value, (int, float), where, path, "a number")
    if not math.isfinite(value) or not low <= value <= high:
        raise TaskFormatError(where, None, path, f"{_shown(value)} is not a finite number in [{low}, {high}]")
    return float(value)


def check_optional_number(value: Any, where: str, path: str) -> float | None:
    """``value`` when it is None or a finite number."""
    return None if value is None else check_number(value, where, path)


def _shown_path(path: str) -> str | None:
    """A JSON path short enough to read (a deep one repeats ``[0]`` dozens of times)."""
    return None if not path else path if len(path) <= 80 else path[:77] + "..."


def _shown(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


# --- results files (rankkit compare --out) ---------------------------------------------------------


def check_results_payload(data: Mapping[str, Any], where: str) -> None:
    """Refuse a results payload whose tasks, candidates, rankings or scores are of the wrong type,
    duplicated, dangling (a ranking naming a candidate the task lacks) or too large."""
    records = expect_list(data.get("task_data"), where, "task_data", MAX_TASKS)
    candidates_of: dict[str, set[str]] = {}
    for index, record in enumerate(records):
        candidates_of.update(_check_task_record(record, where, f"task_data[{index}]"))
    check_unique((expect(r, Mapping, where, "task_data", "objects")["task_id"] for r in records), where, "task_data")
    for s_index, strategy in enumerate(expect_list(data.get("strategies"), where, "strategies", 1000)):
        path = f"strategies[{s_index}]"
        expect(strategy, Mapping, where, path, "an object")
        tasks = expect_list(strategy.get("tasks"), where, f"{path}.tasks", MAX_TASKS)
        for t_index, task in enumerate(tasks):
            _check_task_result(task, candidates_of, where, f"{path}.tasks[{t_index}]")
        check_unique((task["task_id"] for task in tasks), where, f"{path}.tasks")


def _check_task_record(record: Any, where: str, path: str) -> dict[str, set[str]]:
    """One ``task_data`` record's ids, texts and system names; ``{task id: its candidate ids}``."""
    expect(record, Mapping, where, path, "an object")
    task_id = expect_text(record.get("task_id"), where, f"{path}.task_id", 1000)
    prompt = record.get("prompt")
    if prompt is not None:
        _expect_text_or_messages(prompt, read_prompt, where, f"{path}.prompt", MAX_PROMPT_CHARS)
    candidates = expect_list(record.get("candidates"), where, f"{path}.candidates", MAX_CANDIDATES)
    ids = []
    for index, candidate in enumerate(candidates):
        at = f"{path}.candidates[{index}]"
        expect(candidate, Mapping, where, at, "an object")
        ids.append(expect_text(candidate.get("id"), where, f"{at}.id", 1000))
        _expect_text_or_messages(candidate.get("text"), read_answer, where, f"{at}.text", MAX_TEXT_CHARS)
        if candidate.get("system") is not None:
            check_system_name(candidate["system"], where, f"{at}.system")
        check_optional_number(candidate.get("human"), where, f"{at}.human")
    check_unique(ids, where, f"{path}.candidates")
    return {task_id: set(ids)}


def _check_task_result(task: Any, candidates_of: Mapping[str, set[str]], where: str, path: str) -> None:
    """One strategy's result on one task: a known task, a ranking of its candidates each named once,
    and scores that are numbers (or null, how NaN is written) of its candidates."""
    expect(task, Mapping, where, path, "an object")
    task_id = expect(task.get("task_id"), str, where, f"{path}.task_id", "a string")
    check_known(task_id, candidates_of, where, f"{path}.task_id", "task")
    known = candidates_of[task_id]
    ranking = expect_list(task.get("ranking"), where, f"{path}.ranking", MAX_CANDIDATES)
    for index, cid in enumerate(ranking):
        check_known(
            expect(cid, str, where, f"{path}.ranking[{index}]", "a string"),
            known,
            where,
            f"{path}.ranking[{index}]",
            "candidate",
        )
    check_unique(ranking, where, f"{path}.ranking")
    scores = expect(task.get("scores"), Mapping, where, f"{path}.scores", "an object")
    for cid, score in scores.items():
        check_known(cid, known, where, f"{path}.scores.{cid}", "candidate")
        check_optional_number(score, where, f"{path}.scores.{cid}")
    champion = task.get("champion")
    if champion is not None:
        check_known(champion, known, where, f"{path}.champion", "candidate")
    for cid in expect(task.get("extras", {}), Mapping, where, f"{path}.extras", "an object"):
        check_known(cid, known, where, f"{path}.extras.{cid}", "candidate")
    for index, comparison in enumerate(expect_list(task.get("comparisons", []), where, f"{path}.comparisons", 10**8)):
        at = f"{path}.comparisons[{index}]"
        expect(comparison, Mapping, where, at, "an object")
        for side in ("first", "second"):
            check_known(comparison.get(side), known, where, f"{at}.{side}", "candidate")
    for index, grade in enumerate(expect_list(task.get("grades") or [], where, f"{path}.grades", 10**8)):
        at = f"{path}.grades[{index}]"
        check_known(
            expect(grade, Mapping, where, at, "an object").get("candidate"),
            known,
            where,
            f"{at}.candidate",
            "candidate",
        )


# --- leaderboards (rankkit leaderboard --out) -----------------------------------------------------


def check_board_payload(data: Any, where: str) -> None:
    """Refuse a leaderboard whose systems, ratings, matches, anchor, seed or judge are of the wrong
    type, non-finite, duplicated, dangling or path-like."""
    expect(data, Mapping, where, None, "a JSON object (a rankkit leaderboard --out file)")
    expect(data.get("method"), str, where, "method", "a string")
    rows = expect_list(data.get("systems"), where, "systems", MAX_CANDIDATES)
    names = []
    for index, row in enumerate(rows):
        at = f"systems[{index}]"
        expect(row, Mapping, where, at, "an object")
        names.append(check_system_name(row.get("name"), where, f"{at}.name"))
        for key in ("rating", "ci_low", "ci_high", "unadjusted"):
            check_optional_number(row.get(key), where, f"{at}.{key}")
        expect(row.get("rank", 0), int, where, f"{at}.rank", "an integer")
        expect(row.get("matches", 0), int, where, f"{at}.matches", "an integer")
    check_unique(names, where, "systems")
    known = set(names)
    for index, match in enumerate(expect_list(data.get("matches") or [], where, "matches", 100_000_000)):
        at = f"matches[{index}]"
        expect(match, Mapping, where, at, "an object")
        for side in ("a", "b"):
            check_known(
                check_system_name(match.get(side), where, f"{at}.{side}"), known, where, f"{at}.{side}", "system"
            )
        check_number(match.get("outcome"), where, f"{at}.outcome", 0.0, 1.0)
        if match.get("task") is not None:
            expect_text(match["task"], where, f"{at}.task", 1000)
        if match.get("level") is not None and expect(match["level"], int, where, f"{at}.level", "a level") not in range(
            -2, 3
        ):
            raise TaskFormatError(where, None, f"{at}.level", f"expected a level from -2 to 2, got {match['level']}")
    if data.get("anchor") is not None:
        check_known(check_system_name(data["anchor"], where, "anchor"), known, where, "anchor", "system")
    elif data["method"] == "anchored":
        raise TaskFormatError(where, None, "anchor", "an anchored leaderboard names its anchor system")
    _check_board_parts(data, known, where)
    expect(data.get("seed", 0), int, where, "seed", "an integer")
    judge = data.get("judge")
    if judge is not None:
        expect(judge, Mapping, where, "judge", "an object")
        if judge.get("spec") is not None:
            expect_text(judge["spec"], where, "judge.spec", 10_000)
    cost = data.get("cost")
    if cost is not None:
        for key, value in expect(cost, Mapping, where, "cost", "an object").items():
            expect(value, (int, float), where, f"cost.{key}", "a number")


def _check_board_parts(data: Mapping[str, Any], known: set[str], where: str) -> None:
    """A leaderboard's optional parts: the style control, its model, the placement record and the
    anchor-ceiling check."""
    for index, name in enumerate(expect_list(data.get("control") or [], where, "control", 10)):
        expect(name, str, where, f"control[{index}]", "a string")
    for key in ("style", "placement"):
        if data.get(key) is not None:
            expect(data[key], Mapping, where, key, "an object")
    ceiling = data.get("anchor_ceiling")
    if ceiling:
        expect(ceiling, Mapping, where, "anchor_ceiling", "an object")
        check_known(
            check_system_name(ceiling.get("anchor"), where, "anchor_ceiling.anchor"),
            known,
            where,
            "anchor_ceiling.anchor",
            "system",
        )
        for index, name in enumerate(
            expect_list(ceiling.get("at_ceiling") or [], where, "anchor_ceiling.at_ceiling", MAX_CANDIDATES)
        ):
            check_system_name(name, where, f"anchor_ceiling.at_ceiling[{index}]")
        check_number(ceiling.get("share", 0.0), where, "anchor_ceiling.share", 0.0, 1.0)
