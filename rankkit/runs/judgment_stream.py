"""A results file's judgments streamed to a JSONL sidecar as tasks finish (``--stream-judgments``).

A run that streams writes one line per strategy and task to ``RESULTS.judgments.jsonl`` beside the
results file, as soon as the task is ranked: ``{"strategy": label, "task_id": ..., "comparisons":
[...], "group_comparisons": [...], "grades": [...]}``, each list as the inline results file holds it
(:meth:`rankkit.runs.results.TaskResult.to_dict`). The results JSON then holds the summaries
(rankings, scores, costs) and ``"judgments_file": "RESULTS.judgments.jsonl"``, and the run keeps no
judgment in memory once written. Reading the file back puts every line into its task, so a streamed
file reads back equal to the inline form. The sidecar's name is read from a file others may have
written: it must be a plain file name in the results file's folder. See ``docs/cli.md``.
"""

from __future__ import annotations

import collections
import dataclasses
import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import IO, Any

from rankkit.data.file_checks import MAX_FILE_BYTES, check_tree
from rankkit.data.file_parsing import parse_json
from rankkit.errors import RankkitError, TaskFormatError

#: The keys of a task's result that go to the sidecar when judgments are streamed.
JUDGMENT_KEYS = ("comparisons", "group_comparisons", "grades")


def sidecar_name(results: str | Path) -> str:
    """The sidecar's file name for a results file: ``run.json`` -> ``run.judgments.jsonl``."""
    return Path(results).name.removesuffix(".json") + ".judgments.jsonl"


class JudgmentStream:
    """The sidecar being written: one line per strategy and task, flushed as each task finishes.

    Parameters
    ----------
    results
        The results file the sidecar goes beside (it is written when the run ends).
    """

    def __init__(self, results: str | Path):
        self.name = sidecar_name(results)
        self.path = Path(results).with_name(self.name)
        # Not through a link: a sidecar name must not write elsewhere.
        try:
            descriptor = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o644)
        except OSError as err:  # a link in the way, a folder, no permission: before any judgment is paid for
            raise RankkitError(f"{self.path}: cannot write the judgments' sidecar: {err.strerror}") from None
        self._handle: IO[str] = open(descriptor, "w", encoding="utf-8")
        #: How many comparisons had their verdict read each way (generate mode), as the judge record counts them.
        self.verdict_paths: collections.Counter[str] = collections.Counter()

    def write(self, strategy: str, task_result: Any) -> Any:
        """Write a task result's judgments as one line.

        Returns the task result without them (what the run keeps).

        Parameters
        ----------
        strategy
            The strategy's label.
        task_result
            Its :class:`~rankkit.runs.results.TaskResult` on one task.
        """
        record = task_result.to_dict()
        line = {"strategy": strategy, "task_id": task_result.task_id}
        line.update((key, record.get(key, [])) for key in JUDGMENT_KEYS)
        self._handle.write(json.dumps(line, ensure_ascii=False) + "\n")
        self._handle.flush()  # a killed run leaves every finished task's line whole
        self.verdict_paths.update(
            c.verdict.extras["verdict_path"] for c in task_result.comparisons if "verdict_path" in c.verdict.extras
        )
        return dataclasses.replace(task_result, comparisons=[], group_comparisons=[], grades=[])

    def close(self) -> None:
        self._handle.close()


def sidecar_path(results: Path, name: Any) -> Path:
    """Where a results file's ``judgments_file`` points, checked: a plain file name in the results
    file's folder (no folder part, no ``..``, not a link out of it).

    Returns the path; a :class:`TaskFormatError` (exit 2) naming the field otherwise.

    Parameters
    ----------
    results
        The results file.
    name
        Its ``judgments_file`` value (untrusted).
    """

    def refuse(why: str) -> TaskFormatError:
        return TaskFormatError(results, None, "judgments_file", f"{why}: {name!r}")

    if not isinstance(name, str) or not name or name in (".", ".."):
        raise refuse("not a file name")
    if "/" in name or "\\" in name or "\0" in name or Path(name).is_absolute():
        raise refuse("must be a plain file name beside the results file, not a path")
    folder = results.resolve().parent
    path = folder / name
    if path.is_symlink() or path.resolve().parent != folder:
        raise refuse("is a link; the judgments must be a plain file beside the results file")
    if not path.is_file():
        raise refuse("no such file beside the results file")
    return path


def inline_judgments(data: dict[str, Any], results: Path) -> None:
    """Put the sidecar's judgments back into the payload of a streamed results file, in place.

    Every task of every strategy must have exactly one line (a :class:`TaskFormatError` naming the
    sidecar, its line and field otherwise).

    Parameters
    ----------
    data
        The results file's payload (with ``judgments_file``).
    results
        The results file.
    """
    path = sidecar_path(results, data["judgments_file"])
    tasks = _tasks_by_key(data, results)
    found = set()
    size = path.stat().st_size
    if size > MAX_FILE_BYTES:
        raise TaskFormatError(path, None, None, f"{size} bytes, more than the {MAX_FILE_BYTES} a file may have")
    with path.open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            key, judgments = _read_line(path, number, text)
            if key not in tasks or key in found:
                why = "names no task of the results file" if key not in tasks else "repeats an earlier line's task"
                raise TaskFormatError(path, number, "task_id", f"strategy {key[0]!r}, task {key[1]!r} {why}")
            found.add(key)
            tasks[key].update(judgments)
    missing = [key for key in tasks if key not in found]
    if missing:
        strategy, task_id = missing[0]
        raise TaskFormatError(
            path, None, None, f"no judgments of strategy {strategy!r} on task {task_id!r} (was the run killed?)"
        )


def _tasks_by_key(data: Mapping[str, Any], results: Path) -> dict[tuple[str, str], dict[str, Any]]:
    """Each task record of a streamed results file by (strategy label, task id)."""
    tasks = {}
    for s_index, strategy in enumerate(data.get("strategies") or []):
        if not isinstance(strategy, dict) or not isinstance(strategy.get("tasks"), list):
            raise TaskFormatError(results, None, f"strategies[{s_index}]", "expected an object with a tasks list")
        for t_index, task in enumerate(strategy["tasks"]):
            if not isinstance(task, dict):
                raise TaskFormatError(results, None, f"strategies[{s_index}].tasks[{t_index}]", "expected an object")
            tasks[(str(strategy.get("name")), str(task.get("task_id")))] = task
    return tasks


def _read_line(path: Path, number: int, text: str) -> tuple[tuple[str, str], dict[str, list[Any]]]:
    """One sidecar line: its (strategy, task id) and its judgment lists."""
    line = parse_json(path, number, text)
    check_tree(line, path, number)
    if not isinstance(line, dict):
        raise TaskFormatError(path, number, None, "expected a JSON object")
    for name in ("strategy", "task_id"):
        if not isinstance(line.get(name), str):
            raise TaskFormatError(path, number, name, "missing or not a string")
    judgments = {}
    for name in JUDGMENT_KEYS:
        value = line.get(name, [])
        if not isinstance(value, list):
            raise TaskFormatError(path, number, name, "not a list")
        if value or name == "comparisons":  # written as the inline form writes them: empty lists left out
            judgments[name] = value
    return (line["strategy"], line["task_id"]), judgments
