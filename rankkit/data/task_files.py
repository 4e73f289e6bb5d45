"""Task sources read into task objects, shaped like JSONL ones, for :func:`rankkit.data.tasks.load_tasks` (``docs/data.md``).

:func:`read_task_rows` is the one way in: JSONL, CSV and TSV task files are read here; tables
(Parquet, a JSON array, a DataFrame, a ``datasets.Dataset``, row dicts, any file with a column
mapping) by :mod:`rankkit.data.frames`.
"""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path
from typing import Any

from rankkit.data.conversations import decode_cell
from rankkit.data.file_parsing import check_header, json_object_line
from rankkit.data.frames import handles, read_source
from rankkit.errors import TaskFormatError

#: A reader turns a file into ``(line, task object)`` pairs shaped like JSONL objects; ``limit``
#: (when not None) lets it stop after that many tasks.
Reader = Callable[[Path, int | None], list[tuple[int, dict]]]

_UTF8_BOM = b"\xef\xbb\xbf"


def read_task_rows(
    source: str | Path | Any, columns: Mapping[str, str] | None, limit: int | None
) -> tuple[str | Path, list[tuple[int, dict]]]:
    """``(label, [(line, task object), ...])`` from any source :func:`rankkit.data.tasks.load_tasks` accepts.

    The label names ``source`` in errors (its path, or ``DataFrame``...). ``limit`` lets a JSONL
    reader stop after that many tasks; the caller still cuts the list, as other readers read all.
    A missing, unreadable or unknown file raises :class:`TaskFormatError`.
    """
    if handles(source, columns):
        return read_source(source, columns)
    path = Path(source)
    if not path.exists():
        raise TaskFormatError(path, None, None, "file not found")
    if path.is_dir():
        raise TaskFormatError(path, None, None, "is a directory, not a data file")
    reader = reader_for(path)
    try:
        return path, reader(path, limit)
    except OSError as err:
        raise TaskFormatError(path, None, None, f"cannot read the file: {err.strerror or err}") from None


def _decode(path: Path, data: bytes, first_line: int = 1) -> str:
    """``data`` as UTF-8 text (a leading byte-order mark dropped, as Excel's "CSV UTF-8" writes one);
    bad bytes raise :class:`TaskFormatError` naming the line and column they are on."""
    if first_line == 1 and data.startswith(_UTF8_BOM):
        data = data[len(_UTF8_BOM) :]
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as err:
        line_start = data.rfind(b"\n", 0, err.start) + 1
        line = first_line + data.count(b"\n", 0, err.start)
        column = len(data[line_start : err.start].decode("utf-8", errors="replace")) + 1
        raise TaskFormatError(
            path,
            line,
            None,
            f"not valid UTF-8 (byte 0x{data[err.start]:02x} at column {column}); save the file as UTF-8",
        ) from None


def _read_jsonl(path: Path, limit: int | None) -> list[tuple[int, dict]]:
    rows = []
    seen = 0
    with path.open("rb") as handle:  # bytes, so a bad byte is reported with its line
        for number, data in enumerate(handle, start=1):
            text = _decode(path, data, first_line=number)
            if not text.strip():
                continue
            rows.append((number, json_object_line(path, number, text)))
            seen += 1
            if limit is not None and seen >= limit:
                break
    return rows


_CSV_FIXED = {"task_id", "prompt", "candidate_id", "text", "system", "reference", "checklist"}
_CSV_TASK_FIELDS = ("prompt", "reference", "checklist")  # must agree on every row of one task


def _read_delimited(path: Path, limit: int | None, delimiter: str = ",") -> list[tuple[int, dict]]:
    """Group long-form rows (one per candidate) into task objects shaped like the JSONL ones.

    Rows of one task need not be contiguous, but they must agree on the prompt and reference.
    ``limit`` is applied by the caller: a task's rows may come anywhere in the file.
    """
    text = _decode(path, path.read_bytes())
    # The csv module refuses a field over 131,072 characters; rankkit's own limits
    # (max_candidate_chars, max_prompt_chars) decide, naming the field, once the row is read.
    csv.field_size_limit(max(csv.field_size_limit(), len(text) + 1))
    reader = csv.DictReader(io.StringIO(text, newline=""), delimiter=delimiter)
    try:
        return _delimited_tasks(path, reader)
    except csv.Error as err:  # an unclosed quote at the end of the file, a NUL byte...
        raise TaskFormatError(
            path, reader.line_num, None, f"malformed {'CSV' if delimiter == ',' else 'TSV'}: {err}"
        ) from None


def _delimited_tasks(path: Path, reader: csv.DictReader) -> list[tuple[int, dict]]:
    """The task objects of a long-form table (see :func:`_read_delimited`)."""
    tasks: dict[str, tuple[int, dict]] = {}
    delimiter = reader.reader.dialect.delimiter
    header = reader.fieldnames or []
    check_header(path, header)
    for required in ("task_id", "prompt", "candidate_id", "text"):
        if required not in header:
            found = ", ".join(repr(name) for name in header[:6]) or "nothing"
            raise TaskFormatError(
                path,
                1,
                required,
                f"missing column in the header (found {found}; "
                f"is the file {'comma' if delimiter == ',' else 'tab'}-separated?)",
            )
    criteria = [name for name in header if name not in _CSV_FIXED]
    for row in reader:
        number = reader.line_num
        _check_row_width(path, number, row, len(header))
        human = _row_scores(path, number, row, criteria)
        task_id = row["task_id"]
        # A conversation or checklist is a JSON array in its cell (docs/conversations.md).
        fields = {
            "prompt": decode_cell(row["prompt"]),
            "reference": row.get("reference") or None,
            "checklist": decode_cell(row.get("checklist") or None),
        }
        if task_id not in tasks:
            tasks[task_id] = (number, {"task_id": task_id, **fields, "candidates": [], "meta": {}})
        else:
            first_line, first = tasks[task_id]
            for name in _CSV_TASK_FIELDS:
                if first[name] != fields[name]:
                    raise TaskFormatError(
                        path,
                        number,
                        name,
                        f"task {task_id!r} has another {name} on line "
                        f"{first_line}; every row of a task must repeat the same {name}",
                    )
        tasks[task_id][1]["candidates"].append(
            {
                "id": row["candidate_id"],
                "text": decode_cell(row["text"]),
                "system": row.get("system") or None,
                "human": human,
                "_line": number,
            }
        )
    return list(tasks.values())


def _row_scores(path: Path, line: int, row: dict, criteria: list[str]) -> dict[str, float]:
    """A row's human scores, one per criterion column (an empty cell: no score)."""
    human = {}
    for name in criteria:
        value = (row.get(name) or "").strip()
        if value == "":
            continue
        try:
            human[name] = float(value)
        except ValueError:
            raise TaskFormatError(path, line, name, f"score is not a number: {value!r}") from None
    return human


def _check_row_width(path: Path, line: int, row: dict, width: int) -> None:
    """csv.DictReader files surplus values under the key None and fills missing ones with None;
    either means the row does not match the header (often an unquoted delimiter in a text)."""
    if None in row:
        raise TaskFormatError(
            path,
            line,
            None,
            f"row has {width + len(row[None])} fields, the header has {width} (quote texts that contain the delimiter)",
        )
    missing = [name for name, value in row.items() if value is None]
    if missing:
        raise TaskFormatError(path, line, missing[0], f"row has {width - len(missing)} fields, the header has {width}")


#: The reader of each file extension (lower case). Add a format by adding an entry here.
READERS: dict[str, Reader] = {
    ".jsonl": _read_jsonl,
    ".json": _read_jsonl,  # JSON lines under a .json name
    ".csv": _read_delimited,
    ".tsv": partial(_read_delimited, delimiter="\t"),
}


def reader_for(path: Path) -> Reader:
    """The reader of ``path``, reading ``(path, limit)`` into ``(line, object)`` pairs, chosen by extension (:data:`READERS`).

    Another extension is read as JSONL when its first non-blank line is a JSON object; otherwise a
    :class:`TaskFormatError`.
    """
    reader = READERS.get(path.suffix.lower())
    if reader is not None:
        return reader
    if _starts_like_jsonl(path):
        return _read_jsonl
    known = ", ".join(READERS)
    kind = f"extension {path.suffix!r}" if path.suffix else "no extension"
    raise TaskFormatError(
        path,
        None,
        None,
        f"unknown data format ({kind}, and the content is not JSON lines); use one of {known} (long-form CSV/TSV)",
    )


def _starts_like_jsonl(path: Path) -> bool:
    """Whether the first non-blank line of ``path`` is a JSON object."""
    try:
        with path.open("rb") as handle:
            for number, data in enumerate(handle, start=1):
                if number == 1 and data.startswith(_UTF8_BOM):
                    data = data[len(_UTF8_BOM) :]
                if data.strip():
                    return isinstance(json.loads(data.decode("utf-8")), dict)
    except RecursionError:
        return True  # JSON nested too deeply to parse: the JSONL reader reports it with its line
    except (OSError, ValueError):  # includes UnicodeDecodeError and json.JSONDecodeError
        return False
    return False
