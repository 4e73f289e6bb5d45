"""A persistent judgment cache in SQLite, so no judgment is ever paid for twice.

A judgment is stored under a key made of the judge's fingerprint, the kind of judgment and the
judge's :meth:`~rankkit.judges.base.Judge.request_key` of the request: everything the answer
depends on (for a prompt-reading judge the task's prompt, reference, scale, metadata and the texts
shown; the simulator adds ids and human scores). Equal keys must mean interchangeable answers,
otherwise the cache would change results.

**First writer wins.** A key is written once: what is cached is what was used, even when two
processes race. The exception is a failed judgment (a parse failure, an empty completion during a
server fault): it is kept for the record, never served from the cache (the match layer asks
again), and a later successful answer replaces it.

**Writes are buffered** and committed in one transaction per :meth:`JudgmentCache.flush`, which
the engine calls after every judge batch and at least every ``flush_seconds``; reads see buffered
writes. So a run killed half-way keeps everything up to its last batch, and committing costs one
transaction per batch rather than one per row. The database runs in WAL mode with a busy timeout,
so two processes may share one file. ``NullCache`` is the ``--no-cache`` stand-in with the same
interface.

Opening a cache checks everything a run will need from it, so a cache that cannot store
judgments fails at once, before any judgment is paid for: the file must be a rankkit cache (or
new), and must take a write. Every such problem raises :class:`CacheError`, which names the path
and what to do.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Iterator, Sequence

from rankkit.errors import RankkitError

DEFAULT_CACHE_PATH = Path(".rankkit") / "cache.sqlite"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
)
"""


# First writer wins: what is cached is what was used, even when two processes race for one key.
# The one exception is a failed judgment (a parse failure, an empty completion during a server
# fault), which a later successful answer to the same request replaces.
_SQL_CHUNK = 500  # keys per SELECT ... IN (...): well under SQLite's variable limit

_PUT = """
INSERT INTO judgments (key, fingerprint, kind, payload, created) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET payload = excluded.payload, created = excluded.created
WHERE json_extract(judgments.payload, '$.status') = 'failed'
"""


#: The columns of the judgments table; a database without them is not a rankkit cache.
_COLUMNS = frozenset({"key", "fingerprint", "kind", "payload", "created"})


class CacheError(RankkitError, RuntimeError):
    """The judgment cache cannot be used. ``str(error)`` reads ``judgment cache PATH: problem; advice``.

    path: the cache file.
    problem: what is wrong with it.
    advice: what the user can do about it.
    """

    def __init__(self, path: str | Path, problem: str, advice: str):
        self.path = str(path)
        self.problem = problem
        self.advice = advice
        super().__init__(f"judgment cache {self.path}: {problem}; {advice}")


def explain_sqlite_error(path: str | Path, err: sqlite3.Error) -> CacheError:
    """Turn an SQLite error met while opening the cache at ``path`` into a :class:`CacheError`
    that says what is wrong and what to do (SQLite's messages are stable, its codes need 3.11)."""
    text = str(err).lower()
    if "not a database" in text or "malformed" in text:
        return CacheError(path, f"damaged, or not a rankkit cache ({err})", "delete it or pass --cache elsewhere")
    if "readonly" in text or "read-only" in text:
        return CacheError(path, "read-only (the file or its folder)",
                          "make them writable, pass --cache elsewhere, or use --no-cache")
    if "unable to open" in text:
        return CacheError(path, f"cannot open or create the file ({err})",
                          "check that its folder is writable, or pass --cache elsewhere, or use --no-cache")
    if "disk i/o error" in text:
        return CacheError(path, f"{err}", "if its -wal or -shm file was deleted while another process had the cache "
                                          "open, stop that process and rerun; otherwise check the disk")
    return CacheError(path, f"{type(err).__name__}: {err}", "pass --cache elsewhere or use --no-cache")


def content_hash(parts: Sequence[Any]) -> str:
    """SHA-256 of a sequence of JSON values (None kept distinct from the empty string)."""
    return hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()


def judgment_key(fingerprint: str, kind: str, parts: Sequence[Any]) -> str:
    """The row key of a judgment: one SHA-256 over fingerprint, kind and request key."""
    text = json.dumps([fingerprint, kind, list(parts)], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_failed(payload: dict[str, Any] | None) -> bool:
    """A stored judgment the judge could not produce cleanly: kept, but never served."""
    return payload is not None and payload.get("status") == "failed"


class JudgmentCache:
    """SQLite-backed store of judgments: ``get``/``put`` JSON payloads by (fingerprint, kind, texts).

    ``kind`` is free-form so judges can cache intermediate products too (e.g. PREPAIR analyses);
    the match layer uses ``"pair"`` and ``"point"``.
    """

    def __init__(self, path: str | Path = DEFAULT_CACHE_PATH, flush_rows: int = 256, flush_seconds: float = 1.0):
        """Open (or create) the cache at ``path``; raises :class:`CacheError` when it cannot be used.

        flush_rows / flush_seconds: commit buffered writes once this many are pending or this
            long has passed since the last commit (the engine also commits after judge batches).
        """
        self.path = Path(path)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self._pending: dict[str, tuple[str, str, str, str, float]] = {}
        self._flushed = time.monotonic()
        self._lock = threading.Lock()
        self._db: sqlite3.Connection | None = None
        try:
            self._prepare_folder()
            self._db = self._connect()
            self._setup()
        except (sqlite3.Error, CacheError) as err:
            if self._db is not None:
                self._db.close()
            if isinstance(err, CacheError):
                raise
            raise explain_sqlite_error(self.path, err) from None

    def _prepare_folder(self) -> None:
        if self.path.is_dir():
            raise CacheError(self.path, "is a directory", "give --cache a file path")
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CacheError(self.path, f"cannot create its folder {self.path.parent} ({err.strerror or err})",
                             "pass --cache elsewhere or use --no-cache") from None

    def _connect(self) -> sqlite3.Connection:
        """The connection to the file (its own method so tests can open the file read-only)."""
        return sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)

    def _setup(self, attempts: int = 200) -> None:
        """Check the file is a rankkit cache, switch to WAL, create the table and probe a write.
        Switching the journal mode needs a moment of exclusive access and SQLite's busy timeout
        does not cover it, so when another process is opening the same file at the same instant
        we wait briefly and try again."""
        for attempt in range(attempts):
            try:
                self._check_schema()
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(_SCHEMA)
                self._probe_write()
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == attempts - 1:
                    raise
                time.sleep(0.05)

    def _check_schema(self) -> None:
        """Refuse an SQLite database that is not a rankkit cache (before creating our table in it)."""
        tables = {name for (name,) in self._db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        if not tables:  # a new or empty file: the table is created next
            return
        columns = {row[1] for row in self._db.execute("PRAGMA table_info(judgments)")}
        if not _COLUMNS <= columns:
            # Someone else's database: never suggest deleting it.
            raise CacheError(self.path, "not a rankkit cache (an SQLite database without rankkit's judgments table)",
                             "pass --cache a path of its own")

    def _probe_write(self) -> None:
        """Fail now if the cache cannot take writes (a read-only file or folder), rather than after
        the first judgment has been paid for. BEGIN IMMEDIATE alone succeeds on a read-only file,
        so the probe also runs a write that changes nothing, and rolls it back."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            self._db.execute("DELETE FROM judgments WHERE 0")
        finally:
            self._db.execute("ROLLBACK")

    def get(self, fingerprint: str, kind: str, parts: Sequence[Any]) -> dict[str, Any] | None:
        """The stored payload of one request, or None."""
        return self.get_keys([judgment_key(fingerprint, kind, parts)])[0]

    @contextlib.contextmanager
    def _explained(self) -> Iterator[None]:
        """Report an SQLite failure during a run (disk full, file removed) as a :class:`CacheError`
        that names the cache."""
        try:
            yield
        except sqlite3.Error as err:
            raise explain_sqlite_error(self.path, err) from err

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Stored payloads by row key (see :func:`judgment_key`), buffered writes included."""
        found: dict[str, str] = {}
        with self._lock, self._explained():
            wanted = []
            for key in keys:
                if key in self._pending:
                    found[key] = self._pending[key][3]
                else:
                    wanted.append(key)
            for start in range(0, len(wanted), _SQL_CHUNK):
                chunk = wanted[start:start + _SQL_CHUNK]
                marks = ",".join("?" * len(chunk))
                found.update(self._db.execute(
                    f"SELECT key, payload FROM judgments WHERE key IN ({marks})", chunk).fetchall())
        return [None if key not in found else json.loads(found[key]) for key in keys]

    def put(self, fingerprint: str, kind: str, parts: Sequence[Any], payload: dict[str, Any]) -> None:
        """Store one judgment (buffered; committed by the next :meth:`flush`)."""
        self.put_key(judgment_key(fingerprint, kind, parts), fingerprint, kind, payload)

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        data = json.dumps(payload, ensure_ascii=False)
        with self._lock:
            earlier = self._pending.get(key)
            if earlier is None or '"status": "failed"' in earlier[3] and is_failed(json.loads(earlier[3])):
                # first writer wins here too, but a failure is replaced
                self._pending[key] = (key, fingerprint, kind, data, time.time())
            due = len(self._pending) >= self.flush_rows or time.monotonic() - self._flushed >= self.flush_seconds
        if due:
            self.flush()

    def flush(self) -> None:
        """Commit every buffered judgment in one transaction."""
        with self._lock, self._explained():
            if self._pending:
                rows = list(self._pending.values())
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(_PUT, rows)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._pending.clear()
            self._flushed = time.monotonic()

    def __bool__(self) -> bool:  # an empty cache is still a cache (`cache or default` must keep it)
        return True

    def __len__(self) -> int:
        self.flush()
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]

    def close(self) -> None:
        """Commit what is buffered and close the file (idempotent)."""
        if self._db is None:
            return
        try:
            self.flush()
        finally:
            with self._lock:
                self._db.close()
                self._db = None

    def __enter__(self) -> "JudgmentCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NullCache:
    """Remembers nothing (``--no-cache``); the run's memo still asks each request once."""

    path = None

    def get(self, fingerprint: str, kind: str, parts: Sequence[Any]) -> dict[str, Any] | None:
        return None

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        return [None] * len(keys)

    def put(self, fingerprint: str, kind: str, parts: Sequence[Any], payload: dict[str, Any]) -> None:
        return None

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        return None

    def flush(self) -> None:
        return None

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        return None
