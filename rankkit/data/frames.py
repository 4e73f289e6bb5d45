"""Task objects from long tables (one row per candidate answer) through a column mapping (``docs/data.md``)."""

from __future__ import annotations

import csv
from collections.abc import Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from rankkit.data.conversations import decode_cell
from rankkit.data.file_parsing import check_header, json_object_line, parse_json
from rankkit.data.formatting import plain
from rankkit.data.specs import SpecError
from rankkit.errors import TaskFormatError

#: rankkit's names for the columns of a long table (besides ``human.NAME`` and ``meta.NAME``).
CANONICAL = ("task_id", "prompt", "candidate_id", "text", "system", "reference", "checklist")
DROP = "-"
#: Task-level columns: every row of a task must agree on them.
_TASK_FIELDS = ("prompt", "reference", "checklist")

Row = tuple[int, dict[str, Any]]


# -------------------------------------------------------------------------------------------
# Column mappings


def parse_columns(text: str) -> dict[str, str]:
    """``"question_id=task_id,model=system"`` -> ``{"question_id": "task_id", "model": "system"}``."""
    mapping: dict[str, str] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        source, eq, target = (s.strip() for s in item.partition("="))
        if not eq or not source or not target:
            raise SpecError(f"--columns: {item!r} is not SOURCE=TARGET (e.g. question_id=task_id)")
        if source in mapping:
            raise SpecError(f"--columns: column {source!r} is mapped twice")
        mapping[source] = target
    return check_columns(mapping)


def check_columns(mapping: Mapping[str, str]) -> dict[str, str]:
    """The column mapping as a plain dict, its targets validated.

    A :class:`SpecError` starting ``columns:`` (its option's name) when a name is empty, a target
    unknown, or two sources share a target.
    """
    targets: dict[str, str] = {}
    for source, target in mapping.items():
        if not isinstance(source, str) or not isinstance(target, str):
            raise SpecError(f"columns: expected column names, got {source!r}={target!r}")
        prefix, dot, name = target.partition(".")
        if target != DROP and target not in CANONICAL and not (dot and name and prefix in ("human", "meta")):
            raise SpecError(
                f"columns: cannot map {source!r} to {target!r}: the targets are "
                f"{', '.join(CANONICAL)}, human.NAME, meta.NAME or - (drop)"
            )
        if target != DROP and target in targets:
            raise SpecError(f"columns: {targets[target]!r} and {source!r} are both mapped to {target!r}")
        targets[target] = source
    return dict(mapping)


def format_columns(mapping: Mapping[str, str]) -> str:
    """The inverse of :func:`parse_columns`."""
    return ",".join(f"{source}={target}" for source, target in mapping.items())


# -------------------------------------------------------------------------------------------
# Reading


def handles(source: Any, columns: Mapping[str, str] | None = None) -> bool:
    """Whether this module reads ``source``: an in-memory table, a Parquet or JSON-array file, or any file read with a column mapping."""
    if not isinstance(source, (str, PathLike)):
        return True
    path = Path(source)
    if columns or path.suffix.lower() in (".parquet", ".pq"):
        return True
    return path.suffix.lower() == ".json" and _first_char(path) == "["


def _first_char(path: Path) -> str:
    try:
        with path.open(encoding="utf-8-sig") as handle:
            for line in handle:
                if line.strip():
                    return line.strip()[0]
    except (OSError, UnicodeDecodeError):
        pass  # load_tasks reports a missing or unreadable file itself
    return ""


def read_source(source: Any, columns: Mapping[str, str] | None = None) -> tuple[str, list[Row]]:
    """``(label, [(row number, task object), ...])`` for :func:`rankkit.data.tasks.load_tasks`; the label names ``source`` in errors.

    ``source``: a pandas DataFrame, a ``datasets.Dataset``, a list of row dicts, or the path of a
    ``.parquet``, ``.json`` (an array), ``.jsonl`` or ``.csv`` file.
    """
    mapping = check_columns(columns or {})
    label, rows = _rows(source)
    return label, group_rows(label, rows, mapping)


def _rows(source: Any) -> tuple[str, list[Row]]:
    """The source's rows as (row number, plain dict)."""
    if isinstance(source, (str, PathLike)):
        return str(source), _file_rows(Path(source))
    if hasattr(source, "keys") and hasattr(source, "column_names") and not hasattr(source, "to_list"):
        raise TaskFormatError(
            "DatasetDict",
            None,
            None,
            f"a dataset with several splits ({', '.join(source.keys())}); pass one split, e.g. dataset['test']",
        )
    if hasattr(source, "to_dict") and hasattr(source, "columns"):
        return "DataFrame", list(enumerate(source.to_dict("records")))
    if hasattr(source, "column_names") and hasattr(source, "to_list"):
        return "Dataset", list(enumerate(source.to_list()))
    if isinstance(source, (list, tuple)):
        for index, row in enumerate(source):
            if not isinstance(row, Mapping):
                raise TaskFormatError("records", index, None, f"expected a mapping per row, got {type(row).__name__}")
        return "records", [(index, dict(row)) for index, row in enumerate(source)]
    raise TaskFormatError(
        type(source).__name__,
        None,
        None,
        "cannot read tasks from this object: pass a path, a pandas DataFrame, a datasets.Dataset "
        "or a list of row dicts",
    )


def _file_rows(path: Path) -> list[Row]:
    if not path.exists():
        raise TaskFormatError(path, None, None, "file not found")
    suffix = path.suffix.lower()
    if suffix in (".parquet", ".pq"):
        try:
            import pyarrow.parquet as pq
        except ImportError:
            raise TaskFormatError(
                path, None, None, "reading Parquet needs pyarrow: pip install 'rankkit-llm[parquet]'"
            ) from None
        import pyarrow

        try:
            return list(enumerate(pq.read_table(path).to_pylist()))
        except (pyarrow.ArrowException, OSError) as err:  # not Parquet, or a damaged file
            raise TaskFormatError(path, None, None, f"cannot read the Parquet file: {err}") from None
    if suffix == ".csv":
        with path.open(encoding="utf-8-sig", newline="") as handle:
            reader = csv.DictReader(handle)
            check_header(path, reader.fieldnames or [])
            return [(reader.line_num, dict(row)) for row in reader]
    if suffix == ".json" and _first_char(path) == "[":
        items = parse_json(path, None, path.read_text(encoding="utf-8-sig"))
        rows = []
        for index, item in enumerate(items):
            if not isinstance(item, dict):
                raise TaskFormatError(path, index, None, "expected a JSON object per array element")
            rows.append((index, item))
        return rows
    rows = []
    with path.open(encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if not line.strip():
                continue
            rows.append((number, json_object_line(path, number, line)))
    return rows


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def group_rows(label: str, rows: Sequence[Row], mapping: Mapping[str, str]) -> list[Row]:
    """Apply the column mapping and group long-form rows into ``(first row number, task object)`` pairs.

    Tasks come in order of first appearance; rows that are already task objects (with ``candidates``)
    pass through; ``label`` names the source in errors.
    """
    present = {name for _, row in rows for name in row}
    for source, target in mapping.items():
        if source not in present:
            raise TaskFormatError(
                label,
                None,
                source,
                f"column named in the mapping is not in the data (columns: {', '.join(sorted(map(str, present)))})",
            )
        if target in present and target not in mapping:
            raise TaskFormatError(
                label,
                None,
                target,
                f"the data has this column and {source!r} is mapped to it "
                f"too; drop one: map it to '-' (columns={{{target!r}: '-'}}; "
                f"--columns {target}=- on the command line)",
            )
    # A cell as plain data (NaN, pandas NA and NaT: a missing value); an infinite score stays, to be refused by name.
    renamed = [
        (line, {mapping.get(k, k): plain(v, infinities=True) for k, v in row.items() if mapping.get(k, k) != DROP})
        for line, row in rows
    ]
    shaped = {"candidates" in row for _, row in renamed}
    if shaped == {True}:
        return renamed
    if shaped == {True, False}:
        line = next(line for line, row in renamed if "candidates" not in row)
        raise TaskFormatError(
            label, line, "candidates", "mixes task objects (with a candidates list) and one-answer rows; use one shape"
        )
    for field in ("prompt", "text"):
        line = next((line for line, row in renamed if field not in row), None)
        if line is not None:
            raise TaskFormatError(
                label,
                line,
                field,
                f"missing column (columns: {', '.join(map(str, renamed[0][1]))}); "
                f"map yours with columns={{'NAME': {field!r}}} (--columns NAME={field} on the command line)",
            )
    criteria = _criteria_columns(label, renamed, mapping)
    return _group_long(label, renamed, criteria, {v: k for k, v in mapping.items()})


def _criteria_columns(label: str, rows: Sequence[Row], mapping: Mapping[str, str]) -> list[str]:
    """The bare extra columns: each must hold numbers only (a human score criterion)."""
    fixed = set(CANONICAL) | {"human", "meta"}
    extra = list(
        dict.fromkeys(k for _, row in rows for k in row if k not in fixed and not k.startswith(("human.", "meta.")))
    )
    for name in extra:
        for line, row in rows:
            value = row.get(name)
            if value is not None and not _is_number(value) and not (isinstance(value, str) and _numeric_text(value)):
                raise TaskFormatError(
                    label,
                    line,
                    name,
                    f"not a number ({_short(value)}), so not a human score; map it to "
                    f"meta.{name} (task metadata) or - (ignore it): columns={{{name!r}: "
                    f"'meta.{name}'}} (--columns {name}=meta.{name} on the command line)",
                )
    return extra


def _numeric_text(text: str) -> bool:
    # CSV cells are text; an empty cell is a missing score and a number is a score.
    if not text.strip():
        return True
    try:
        float(text)
    except ValueError:
        return False
    return True


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


def _group_long(label: str, rows: Sequence[Row], criteria: Sequence[str], source_of: Mapping[str, str]) -> list[Row]:
    """One-answer rows grouped into task objects, in order of first appearance (``source_of``: the
    user's column of each mapped field, for messages)."""

    def name(field: str) -> str:
        # Errors name the user's own column, with rankkit's name when it was mapped.
        return f"{source_of[field]} (as {field})" if field in source_of else field

    tasks: dict[str, Row] = {}
    prompt_ids: dict[str, str] = {}  # no task ids at all (alpaca_eval's outputs): one task per distinct prompt
    for line, row in rows:
        task, candidate = _long_row(label, line, row, criteria, name, prompt_ids)
        task_id = task["task_id"]
        if task_id not in tasks:
            tasks[task_id] = (line, task)
        else:
            _check_same_task(label, line, tasks[task_id], task, name)
        # The id as read: rankkit.data.tasks turns an integer into its digits and refuses other kinds.
        tasks[task_id][1]["candidates"].append(candidate)
    return list(tasks.values())


def _long_row(
    label: str, line: int, row: dict[str, Any], criteria: Sequence[str], name: Any, prompt_ids: dict[str, str]
) -> tuple[dict[str, Any], dict[str, Any]]:
    """One answer's row as its task's fields (no candidates yet) and its candidate."""
    for field in ("reference", "system", "checklist"):  # an empty cell is no value (as in the long CSV)
        if row.get(field) == "":
            row[field] = None
    for field in ("prompt", "text", "checklist"):  # a conversation or checklist: a JSON array in its cell
        if field in row:
            row[field] = decode_cell(row[field])
    if isinstance(row["prompt"], list) and row["prompt"]:
        pass  # a conversation, validated with the task
    elif not isinstance(row["prompt"], str) or not row["prompt"].strip():
        raise TaskFormatError(label, line, name("prompt"), f"expected a non-empty string, got {_short(row['prompt'])}")
    task_id = row.get("task_id")
    if task_id is None:
        if "task_id" in row:
            raise TaskFormatError(label, line, name("task_id"), "missing value")
        prompt_key = row["prompt"] if isinstance(row["prompt"], str) else repr(row["prompt"])  # a list is unhashable
        task_id = prompt_ids.setdefault(prompt_key, f"task-{len(prompt_ids) + 1:04d}")
    elif not isinstance(task_id, (str, int)):
        raise TaskFormatError(label, line, name("task_id"), f"expected a string or integer, got {_short(task_id)}")
    cand_id = row.get("candidate_id", row.get("system"))
    if cand_id is None or cand_id == "":
        raise TaskFormatError(
            label,
            line,
            name("candidate_id"),
            "missing: give a candidate_id column, or a system column to name the answers by",
        )
    if isinstance(row["text"], list):
        pass  # a multi-turn answer, validated with the task
    elif not isinstance(row["text"], str):
        raise TaskFormatError(label, line, name("text"), f"text must be a string, got {_short(row['text'])}")
    elif not row["text"].strip():
        raise TaskFormatError(label, line, name("text"), f"empty text for candidate {str(cand_id)!r}")
    meta = {
        **(row.get("meta") or {}),
        **{k[5:]: v for k, v in row.items() if k.startswith("meta.") and v is not None},
    }
    human = _human(label, line, row, criteria, name)
    task = {"task_id": str(task_id), "prompt": row["prompt"], "reference": row.get("reference"), "meta": meta}
    if row.get("checklist") is not None:
        task["checklist"] = row["checklist"]
    candidate = {"id": cand_id, "text": row["text"], "system": row.get("system"), "human": human, "_line": line}
    return {**task, "candidates": []}, candidate


def _check_same_task(label: str, line: int, first: Row, task: dict[str, Any], name: Any) -> None:
    """A later row of a task agrees with its first (``first``: its line and task object) on the
    prompt, the reference and the metadata both give; metadata only this row gives is added."""
    first_line, first_task = first
    for field in _TASK_FIELDS:
        if task.get(field) != first_task.get(field):
            raise TaskFormatError(
                label,
                line,
                name(field),
                f"differs from row {first_line} of the same task {task['task_id']!r}; a task's rows must agree on it",
            )
    for key, value in task["meta"].items():
        if first_task["meta"].setdefault(key, value) != value:
            raise TaskFormatError(
                label, line, f"meta.{key}", f"differs from an earlier row of task {task['task_id']!r}"
            )


def _human(label: str, line: int, row: Mapping[str, Any], criteria: Sequence[str], name: Any) -> dict[str, float]:
    human: dict[str, Any] = dict(row.get("human") or {})
    human.update({k[6:]: v for k, v in row.items() if k.startswith("human.")})
    human.update({k: row.get(k) for k in criteria})
    scores = {}
    for key, value in human.items():
        if isinstance(value, str):
            value = float(value) if value.strip() else None
        if value is None:
            continue
        if not _is_number(value):
            field = key if key in criteria else f"human.{key}"
            raise TaskFormatError(label, line, name(field), f"score is not a number: {_short(value)}")
        scores[key] = value  # rankkit.data.tasks converts it, refusing one too large for a float (10**400)
    return scores
