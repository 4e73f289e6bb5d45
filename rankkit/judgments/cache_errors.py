"""The errors of a judgment cache that cannot be used, with what to do about each.

Shared by :class:`rankkit.judgments.cache.JudgmentCache` (SQLite) and
:class:`rankkit.judgments.cache_postgres.PostgresJudgmentCache`.
"""

from __future__ import annotations

import sqlite3
from pathlib import Path

from rankkit.errors import RankkitError


class CacheError(RankkitError, RuntimeError):
    """The judgment cache file ``path`` cannot be used: the ``problem``, and the ``advice`` of what to do.

    ``str(error)`` reads ``judgment cache PATH: problem; advice``.
    """

    def __init__(self, path: str | Path, problem: str, advice: str):
        self.path = str(path)
        self.problem = problem
        self.advice = advice
        super().__init__(f"judgment cache {self.path}: {problem}; {advice}")


#: Advice shared by the cache's errors, phrased for library calls and the command line alike,
#: since the same error reaches both.
ELSEWHERE = "give another path (cache= in a library call, --cache on the command line)"
WITHOUT = "run without a cache (cache=None, or --no-cache)"


def explain_sqlite_error(path: str | Path, err: sqlite3.Error) -> CacheError:
    """Turn an SQLite error met while opening the cache at ``path`` into a :class:`CacheError`
    that says what is wrong and what to do (SQLite's messages are stable, its codes need 3.11),
    to raise instead (``from err``)."""
    text = str(err).lower()
    if "not a database" in text or "malformed" in text:
        return CacheError(path, f"damaged, or not a rankkit cache ({err})", f"delete it or {ELSEWHERE}")
    if "readonly" in text or "read-only" in text:
        return CacheError(path, "read-only (the file or its folder)", f"make them writable, {ELSEWHERE}, or {WITHOUT}")
    if "unable to open" in text:
        return CacheError(
            path,
            f"cannot open or create the file ({err})",
            f"check that its folder is writable, {ELSEWHERE}, or {WITHOUT}",
        )
    if "disk i/o error" in text:
        return CacheError(
            path,
            f"{err}",
            "if its -wal or -shm file was deleted while another process had the cache "
            "open, stop that process and rerun; otherwise check the disk",
        )
    return CacheError(path, f"{type(err).__name__}: {err}", f"{ELSEWHERE}, or {WITHOUT}")


def bad_row(path: str | Path | None, key: str, problem: str) -> CacheError:
    """The error for a row of the cache that rankkit cannot have written (exit code 2)."""
    return CacheError(
        path or "(memory)",
        f"row {key} cannot be read: {problem}",
        "the file was changed outside rankkit; use a cache you made yourself, or delete that row "
        f"(DELETE FROM judgments WHERE key = '{key}')",
    )
