"""Strict parsing of the text files rankkit is handed (task files, tables, results, recordings).

Python's readers accept what would silently lose data: a JSON object naming a key twice keeps the
last value, a CSV header naming a column twice keeps one. Here each is a
:class:`~rankkit.errors.TaskFormatError` naming the file, the line and the field.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from os import PathLike
from typing import Any

from rankkit.errors import TaskFormatError


class _DuplicateKey(ValueError):
    """A JSON object that names one key twice (raised while parsing, caught by the readers)."""

    def __init__(self, key: str):
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``object_pairs_hook`` for :func:`json.loads`: Python keeps the last of two equal keys
    silently, which would drop a score or a text without a word; refuse instead."""
    obj: dict[str, Any] = {}
    for key, value in pairs:
        if key in obj:
            raise _DuplicateKey(key)
        obj[key] = value
    return obj


def parse_json(path: str | PathLike[str], number: int | None, text: str) -> Any:
    """``text`` parsed as JSON, or a :class:`TaskFormatError` naming ``path`` and line ``number``.

    ``number`` None: ``text`` is a whole file, whose own line numbers are used. Refused too: a key
    named twice in one object, an integer over 4300 digits, nesting too deep to read.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys)
    except json.JSONDecodeError as err:
        line = number if number is not None else err.lineno
        raise TaskFormatError(path, line, None, f"malformed JSON: {err.msg} (column {err.colno})") from None
    except _DuplicateKey as err:
        raise TaskFormatError(path, number, err.key, "the key appears twice in one JSON object; keep one") from None
    except RecursionError:
        raise TaskFormatError(
            path, number, _deep_field(text), "nested too deeply to read (task data nests a few levels, not hundreds)"
        ) from None
    except ValueError as err:  # e.g. an integer of more than 4300 digits
        raise TaskFormatError(path, number, None, f"malformed JSON: {err}") from None


def _deep_field(text: str) -> str | None:
    """The top-level key whose value nests deepest in JSON ``text`` (for the message of a line
    too deep to parse): the last string at depth 1 before the depth passes 100."""
    depth, in_string, escaped, start, last_key = 0, False, False, 0, None
    for index, char in enumerate(text):
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
                if depth == 1:
                    last_key = text[start:index]
        elif char == '"':
            in_string, start = True, index + 1
        elif char in "{[":
            depth += 1
            if depth > 100:
                return last_key
        elif char in "}]":
            depth -= 1
    return last_key


def check_header(path: str | PathLike[str], header: Sequence[str]) -> None:
    """Refuse a CSV header that names a column twice (a row read by name would silently keep one value)."""
    seen: set[str] = set()
    for name in header:
        if name in seen:
            raise TaskFormatError(path, 1, name, "the header names this column twice; rename or drop one")
        seen.add(name)


def json_object_line(path: str | PathLike[str], number: int, text: str) -> dict[str, Any]:
    """Line ``number`` of a JSONL file as the JSON object it must hold; a :class:`TaskFormatError` naming the line otherwise."""
    obj = parse_json(path, number, text)
    if not isinstance(obj, dict):
        raise TaskFormatError(path, number, None, "expected a JSON object per line")
    return obj
