"""What a judgment cache file holds, and the checks that one from elsewhere holds nothing more.

A cache is often someone else's file (a repository, a benchmark bundle): before
:class:`rankkit.judgments.cache.JudgmentCache` reads or writes it, :func:`foreign_objects` refuses anything
rankkit does not create, and every row read goes through :func:`parse_payload`. The functions
here name the problem; the cache turns it into a :class:`~rankkit.judgments.cache.CacheError` with advice.
"""

from __future__ import annotations

import json
import math
import sqlite3
from collections.abc import Iterator, Sequence
from typing import Any

JUDGMENTS_TABLE = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
)
"""

# Who is asking the judge for which key now (see "Leases" in ``docs/cache.md``).
LEASES_TABLE = """
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
)
"""

SQL_CHUNK = 500  # keys per SELECT ... IN (...): well under SQLite's variable limit


def in_chunks(keys: Sequence[str]) -> Iterator[tuple[list[str], str]]:
    """``keys`` in chunks of :data:`SQL_CHUNK`, each with its ``?,?,...`` placeholders for ``IN (...)``."""
    for start in range(0, len(keys), SQL_CHUNK):
        chunk = list(keys[start : start + SQL_CHUNK])
        yield chunk, ",".join("?" * len(chunk))


def _table_shape(db: sqlite3.Connection, table: str) -> tuple[list[tuple], str]:
    """A table's columns as ``PRAGMA table_xinfo`` gives them (generated columns included) and its
    ``CREATE`` statement with whitespace collapsed: constraints (``CHECK``, ``ON CONFLICT``,
    ``COLLATE``) show only there, and a ``CHECK`` can make every write of a paid answer fail. Spacing
    and case are normalised, so a cache whose table was created from other SQL text of the same
    schema (an older rankkit's) still matches."""
    (sql,) = db.execute("SELECT sql FROM sqlite_master WHERE type = 'table' AND name = ?", (table,)).fetchone()
    spaced = str(sql).replace("(", " ( ").replace(")", " ) ").replace(",", " , ")
    return db.execute(f"PRAGMA table_xinfo({table})").fetchall(), " ".join(spaced.split()).lower()


def _rankkit_schema() -> tuple[frozenset[tuple[str, str, str]], dict[str, tuple[list[tuple], str]]]:
    """What a rankkit cache holds: its ``sqlite_master`` objects ``(type, name, table)`` and each
    table's shape (:func:`_table_shape`), read off an empty database made here."""
    db = sqlite3.connect(":memory:")
    try:
        db.execute(JUDGMENTS_TABLE)
        db.execute(LEASES_TABLE)
        objects = frozenset(db.execute("SELECT type, name, tbl_name FROM sqlite_master"))
        columns = {table: _table_shape(db, table) for table in ("judgments", "leases")}
    finally:
        db.close()
    return objects, columns


#: Everything a rankkit cache holds. A trigger or view in someone else's file would run inside
#: this process's reads and writes (swap winners, drop answers, hand leases away), so anything
#: else in the file is refused.
_OBJECTS, _COLUMNS = _rankkit_schema()


def foreign_objects(db: sqlite3.Connection, objects: set[tuple[str, str, str]]) -> str | None:
    """What the database holds besides rankkit's tables (``objects``: its ``sqlite_master`` rows,
    the judgments table among them), as the problem to report; None when nothing."""
    foreign = sorted(objects - _OBJECTS, key=lambda row: (row[0] != "trigger", row))
    changed = [
        ("table", table, table)
        for table, columns in _COLUMNS.items()
        if ("table", table, table) in objects and _table_shape(db, table) != columns
    ]
    if not foreign and not changed:
        return None
    kind, name, table = (foreign + changed)[0]
    what = f"a {kind} {name!r} on {table!r}" if foreign else f"the table {name!r} with other columns or constraints"
    more = len(foreign) + len(changed) - 1
    return (
        f"holds {what}, which rankkit never creates"
        + (f" (and {more} more such object(s))" if more else "")
        + "; a trigger, view or changed table can alter what a run reads and writes"
    )


def parse_payload(text: Any) -> dict[str, Any]:
    """A stored payload as the JSON object rankkit wrote; a ValueError saying what is wrong when it is
    not JSON text, not an object, or holds a number that is not finite (``NaN``, ``1e999``)."""
    if not isinstance(text, str):
        raise ValueError(f"its payload is a {type(text).__name__}, not JSON text")
    try:
        payload = json.loads(text, parse_constant=_refuse_constant)
    except json.JSONDecodeError as err:
        raise ValueError(f"its payload is not JSON ({err})") from None
    except RecursionError:
        raise ValueError("its payload is nested too deeply") from None
    except ValueError as err:
        raise ValueError(f"its payload holds {err}") from None
    if not isinstance(payload, dict):
        raise ValueError(f"its payload is a JSON {type(payload).__name__}, not an object")
    try:
        _check_finite(payload)
    except ValueError as err:
        raise ValueError(f"its payload holds {err}") from None
    return payload


def _refuse_constant(name: str) -> float:
    raise ValueError(f"a number that is not finite ({name})")


def _check_finite(value: Any) -> None:
    """Raise ValueError when a number in ``value`` (nested lists and objects) is not finite."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, float) and not math.isfinite(item):
            raise ValueError(f"a number that is not finite ({item})")
        if isinstance(item, dict):
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
