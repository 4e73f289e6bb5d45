"""A persistent judgment cache in SQLite, so no judgment is ever paid for twice.

More in ``docs/cache.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import secrets
import socket
import sqlite3
import threading
import time
import warnings
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rankkit.errors import RankkitError

DEFAULT_CACHE_PATH = Path(".rankkit") / "cache.sqlite"

#: How long a lease on a key lasts unless renewed: the longest another process waits on a
#: crashed owner. A live owner renews its leases every quarter of this while it asks.
DEFAULT_LEASE_SECONDS = 120.0

#: The longest a buffered answer to a leased key waits for its commit (and the lease's release).
LEASED_COMMIT_SECONDS = 0.1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS judgments (
    key TEXT PRIMARY KEY,
    fingerprint TEXT NOT NULL,
    kind TEXT NOT NULL,
    payload TEXT NOT NULL,
    created REAL NOT NULL
)
"""

# Who is asking the judge for which key now (see "Leases" in ``docs/cache.md``).
_LEASES_SCHEMA = """
CREATE TABLE IF NOT EXISTS leases (
    key TEXT PRIMARY KEY,
    owner TEXT NOT NULL,
    expires REAL NOT NULL
)
"""

# A lease is taken on a key that has no usable judgment yet (none, or a failed one) and whose
# lease, if any, has expired; one statement per key inside one transaction makes it atomic.
_CLAIM = """
INSERT INTO leases (key, owner, expires) SELECT ?1, ?2, ?3
WHERE NOT EXISTS (SELECT 1 FROM judgments
                  WHERE key = ?1 AND json_extract(payload, '$.status') IS NOT 'failed')
ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
WHERE leases.expires < ?4
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
        db.execute(_SCHEMA)
        db.execute(_LEASES_SCHEMA)
        objects = frozenset(db.execute("SELECT type, name, tbl_name FROM sqlite_master"))
        columns = {table: _table_shape(db, table) for table in ("judgments", "leases")}
    finally:
        db.close()
    return objects, columns


#: Everything a rankkit cache holds. A cache is often someone else's file (a repository, a
#: benchmark bundle), and a trigger or view in it would run inside this process's reads and writes
#: (swap winners, drop answers, hand leases away), so anything else in the file is refused.
_OBJECTS, _COLUMNS = _rankkit_schema()

#: The furthest in the future a lease can expire: its owner renews it to ``lease_seconds`` from
#: now, and no run uses leases of more than a day. A later expiry was not written by a rankkit run
#: (a crafted file, a clock far off), and waiting for it would never end: it is taken over.
MAX_LEASE_SECONDS = 86_400.0


class CacheError(RankkitError, RuntimeError):
    """The judgment cache cannot be used. ``str(error)`` reads ``judgment cache PATH: problem; advice``.

    Parameters
    ----------
    path : str | Path
        The cache file.
    problem : str
        What is wrong with it.
    advice : str
        What the user can do about it.
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
    that says what is wrong and what to do (SQLite's messages are stable, its codes need 3.11).

    Parameters
    ----------
    path : str or Path
        The cache file.
    err : sqlite3.Error
        The error SQLite raised.

    Returns
    -------
    CacheError
        The error to raise instead (``from err``).
    """
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


def judgment_key(fingerprint: str, kind: str, parts: Sequence[Any]) -> str:
    """The row key of a judgment: one SHA-256 over fingerprint, kind and request key.

    Parameters
    ----------
    fingerprint : str
        The judge's fingerprint.
    kind : str
        The kind of judgment (``pair``, ``point``, ``choice``, ...).
    parts : Sequence[Any]
        The request key (the judge's ``request_key``).

    Returns
    -------
    str
        The hex digest.
    """
    text = json.dumps([fingerprint, kind, list(parts)], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_failed(payload: dict[str, Any] | None) -> bool:
    """A stored judgment the judge could not produce cleanly: kept, but never served.

    Parameters
    ----------
    payload : dict[str, Any] or None
        A stored payload (None: nothing stored).

    Returns
    -------
    bool
        True when its status is ``failed``.
    """
    return payload is not None and payload.get("status") == "failed"


class JudgmentCache:
    """SQLite-backed store of judgments: ``get``/``put`` JSON payloads by (fingerprint, kind, texts).

    ``kind`` is free-form so judges can cache intermediate products too (e.g. PREPAIR analyses);
    the match layer uses ``"pair"`` and ``"point"``.
    """

    def __init__(
        self,
        path: str | Path = DEFAULT_CACHE_PATH,
        flush_rows: int = 256,
        flush_seconds: float = 1.0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ):
        """Open (or create) the cache at ``path``.

        Parameters
        ----------
        path : str | Path
            The SQLite file.
        flush_rows : int
            Commit buffered writes once this many are pending ...
        flush_seconds : float
            ... or this long (seconds) has passed since the last commit (the memo also commits
            after judge batches).
        lease_seconds : float
            How long a lease on a key lasts unless renewed (see "Leases" in the module
            docstring): the longest another process waits on this one if it crashes.

        Raises
        ------
        CacheError
            When the cache cannot be used.
        """
        self.path = Path(path)
        self.flush_rows = flush_rows
        self.flush_seconds = flush_seconds
        self.lease_seconds = float(lease_seconds)
        # host/pid/random token: unique per open cache, and says on which host and in which
        # process the owner runs (so a dead owner on this host is recognised at once).
        self.owner = f"{socket.gethostname()}/{os.getpid()}/{secrets.token_hex(8)}"
        self._held: set[str] = set()  # keys this cache holds a lease on
        self._renewer: threading.Thread | None = None
        self._closing = threading.Event()
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
            raise CacheError(
                self.path, "is a directory", "give a file path (cache= in a library call, --cache on the command line)"
            )
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        except OSError as err:
            raise CacheError(
                self.path,
                f"cannot create its folder {self.path.parent} ({err.strerror or err})",
                f"{ELSEWHERE}, or {WITHOUT}",
            ) from None

    def _connect(self) -> sqlite3.Connection:
        """The connection to the file (its own method so tests can open the file read-only)."""
        db = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        # No SQL function of the schema may run with side effects (SQLite's defence for files
        # from others); :meth:`_check_schema` refuses triggers and views outright.
        db.execute("PRAGMA trusted_schema=OFF")
        return db

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
                self._db.execute(_LEASES_SCHEMA)
                self._probe_write()
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == attempts - 1:
                    raise
                time.sleep(0.05)

    def _check_schema(self) -> None:
        """Refuse a database that is not a rankkit cache, or that holds anything rankkit did not
        create (:data:`_OBJECTS`, :data:`_COLUMNS`), before anything is read from or written to it."""
        objects = set(self._db.execute("SELECT type, name, tbl_name FROM sqlite_master"))
        if not objects:  # a new or empty file: the tables are created next
            return
        if ("table", "judgments", "judgments") not in objects:
            # Someone else's database: never suggest deleting it.
            raise CacheError(
                self.path,
                "not a rankkit cache (an SQLite database without rankkit's judgments table)",
                "give the cache a path of its own (cache= in a library call, --cache on the command line)",
            )
        foreign = sorted(objects - _OBJECTS, key=lambda row: (row[0] != "trigger", row))
        changed = [
            ("table", table, table)
            for table, columns in _COLUMNS.items()
            if ("table", table, table) in objects and _table_shape(self._db, table) != columns
        ]
        if foreign or changed:
            kind, name, table = (foreign + changed)[0]
            what = (
                f"a {kind} {name!r} on {table!r}"
                if foreign
                else f"the table {name!r} with other columns or constraints"
            )
            more = len(foreign) + len(changed) - 1
            raise CacheError(
                self.path,
                f"holds {what}, which rankkit never creates"
                + (f" (and {more} more such object(s))" if more else "")
                + "; a trigger, view or changed table can alter what a run reads and writes",
                f"use a cache you made yourself: {ELSEWHERE}, or {WITHOUT}",
            )

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
        """The stored payload of one request, or None.

        Parameters
        ----------
        fingerprint : str
            The judge's fingerprint.
        kind : str
            The kind of judgment.
        parts : Sequence[Any]
            The request key.

        Returns
        -------
        dict[str, Any] or None
            The payload (a failure too: :func:`is_failed`), None when nothing is stored.
        """
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
        """Stored payloads by row key (see :func:`judgment_key`), buffered writes included.

        Parameters
        ----------
        keys : Sequence[str]
            Row keys.

        Returns
        -------
        list[dict[str, Any] or None]
            One payload per key (a failure too: :func:`is_failed`), None where nothing is stored.
        """
        found: dict[str, str] = {}
        with self._lock, self._explained():
            wanted = []
            for key in keys:
                if key in self._pending:
                    found[key] = self._pending[key][3]
                else:
                    wanted.append(key)
            for start in range(0, len(wanted), _SQL_CHUNK):
                chunk = wanted[start : start + _SQL_CHUNK]
                marks = ",".join("?" * len(chunk))
                found.update(
                    self._db.execute(f"SELECT key, payload FROM judgments WHERE key IN ({marks})", chunk).fetchall()
                )
        return [None if key not in found else self._payload(key, found[key]) for key in keys]

    def get_fresh(self, keys: Sequence[str], since: float) -> list[dict[str, Any] | None]:
        """Stored payloads by row key, like :meth:`get_keys`, except that a failed judgment is
        returned only when committed at or after ``since`` (a ``time.time()``).

        A process that waited on another's lease uses a failure that process has just committed,
        as that process does (one request per key in flight, across processes as within one),
        instead of paying for the same request again; an older failure is not returned, so it is
        asked again as on any rerun.

        Parameters
        ----------
        keys : Sequence[str]
            Row keys.
        since : float
            A ``time.time()``: failures committed before it are not returned.

        Returns
        -------
        list[dict[str, Any] or None]
            One payload per key, None where nothing is stored or only a failure older than ``since``.
        """
        found: dict[str, tuple[str, float]] = {}
        with self._lock, self._explained():
            for start in range(0, len(keys), _SQL_CHUNK):
                chunk = list(keys[start : start + _SQL_CHUNK])
                marks = ",".join("?" * len(chunk))
                found.update(
                    (key, (payload, created))
                    for key, payload, created in self._db.execute(
                        f"SELECT key, payload, created FROM judgments WHERE key IN ({marks})", chunk
                    )
                )
        out: list[dict[str, Any] | None] = []
        for key in keys:
            payload = self._payload(key, found[key][0]) if key in found else None
            out.append(None if is_failed(payload) and found[key][1] < since else payload)
        return out

    def _payload(self, key: str, text: Any) -> dict[str, Any]:
        """The JSON object stored under ``key``; a :class:`CacheError` naming the row when it is not
        JSON, not an object, or holds a number that is not finite (``NaN``, ``1e999``)."""
        if not isinstance(text, str):
            raise bad_row(self.path, key, f"its payload is a {type(text).__name__}, not JSON text")
        try:
            payload = json.loads(text, parse_constant=_refuse_constant)
        except json.JSONDecodeError as err:
            raise bad_row(self.path, key, f"its payload is not JSON ({err})") from None
        except RecursionError:
            raise bad_row(self.path, key, "its payload is nested too deeply") from None
        except ValueError as err:
            raise bad_row(self.path, key, f"its payload holds {err}") from None
        if not isinstance(payload, dict):
            raise bad_row(self.path, key, f"its payload is a JSON {type(payload).__name__}, not an object")
        try:
            _check_finite(payload)
        except ValueError as err:
            raise bad_row(self.path, key, f"its payload holds {err}") from None
        return payload

    def put(self, fingerprint: str, kind: str, parts: Sequence[Any], payload: dict[str, Any]) -> None:
        """Store one judgment (buffered; committed by the next :meth:`flush`).

        Parameters
        ----------
        fingerprint : str
            The judge's fingerprint.
        kind : str
            The kind of judgment.
        parts : Sequence[Any]
            The request key.
        payload : dict[str, Any]
            The judgment, JSON-serialisable.
        """
        self.put_key(judgment_key(fingerprint, kind, parts), fingerprint, kind, payload)

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        """Store one judgment under its row key (buffered; a pending failure is replaced, an answer is not).

        Parameters
        ----------
        key : str
            The row key (:func:`judgment_key`).
        fingerprint : str
            The judge's fingerprint.
        kind : str
            The kind of judgment.
        payload : dict[str, Any]
            The judgment, JSON-serialisable.
        """
        data = json.dumps(payload, ensure_ascii=False)
        with self._lock:
            earlier = self._pending.get(key)
            if earlier is None or ('"status": "failed"' in earlier[3] and is_failed(json.loads(earlier[3]))):
                # first writer wins here too, but a failure is replaced
                self._pending[key] = (key, fingerprint, kind, data, time.time())
            due = len(self._pending) >= self.flush_rows or time.monotonic() - self._flushed >= self.flush_seconds
        if due:
            self.flush()

    def flush(self) -> None:
        """Commit every buffered judgment in one transaction, releasing this cache's leases on
        them in the same transaction (so no other process sees a key with neither)."""
        with self._lock, self._explained():
            if self._pending:
                now = time.time()  # stamped at commit: when other processes can first read them
                rows = [
                    (key, fingerprint, kind, data, now) for key, fingerprint, kind, data, _ in self._pending.values()
                ]
                answered = [key for key in self._pending if key in self._held]
                self._db.execute("BEGIN IMMEDIATE")
                try:
                    self._db.executemany(_PUT, rows)
                    self._delete_leases(answered)
                    self._db.execute("COMMIT")
                except BaseException:
                    self._db.execute("ROLLBACK")
                    raise
                self._pending.clear()
                self._held.difference_update(answered)
            self._flushed = time.monotonic()

    # -- leases (see "Leases" in ``docs/cache.md``) ----------------------------------------
    def claim_leases(self, keys: Sequence[str]) -> list[str]:
        """Take a lease on every key of ``keys`` that needs asking and that no live process holds.

        Parameters
        ----------
        keys:
            Row keys (see :func:`judgment_key`) this process is about to ask the judge for.

        Returns
        -------
        list[str]
            The keys this cache now holds a lease on, in the order given: ask the judge for these.
            The others either have a usable judgment in the file by now, or another process is
            asking for them: read them with :meth:`get_keys` until the answer is there, claiming
            again meanwhile (a lease that expires, or is released without an answer, is taken over).
        """
        keys = list(dict.fromkeys(keys))
        if not keys:
            return []
        now = time.time()
        expires = now + self.lease_seconds
        with self._lock, self._explained(), self._transaction():
            self._drop_expired_leases(now)
            for key in keys:
                self._db.execute(_CLAIM, (key, self.owner, expires, now))
            self._take_over_dead_owners(keys, expires)
            self._take_over_impossible_leases(keys, now, expires)
            held = self._owned(keys)
            self._held.update(held)
        self._start_renewing()
        return [key for key in keys if key in held]

    def _drop_expired_leases(self, now: float) -> None:
        """Delete expired leases (inside the caller's transaction): their keys are free, and dropping
        them keeps crashed runs from leaving rows behind. Another owner's, taken over so, is noted:
        its requests are asked here."""
        expired = self._db.execute(
            "SELECT owner, COUNT(*) FROM leases WHERE owner != ? AND expires < ? GROUP BY owner", (self.owner, now)
        ).fetchall()
        self._db.execute("DELETE FROM leases WHERE expires < ?", (now,))
        for owner, count in expired:
            warnings.warn(
                f"judgment cache {self.path}: {count} lease(s) of {str(owner)[:80]!r} held past their expiry "
                "(a crashed or stopped run); taken over",
                stacklevel=3,
            )

    def release_leases(self, keys: Sequence[str]) -> None:
        """Give up this cache's leases on ``keys`` without an answer (the judge failed), so that
        another process may ask at once; answered keys are released by :meth:`flush`.

        Parameters
        ----------
        keys : Sequence[str]
            Row keys this cache leased.
        """
        with self._lock, self._explained():
            mine = [key for key in keys if key in self._held and key not in self._pending]
            if mine and self._db is not None:
                with self._transaction():
                    self._delete_leases(mine)
            self._held.difference_update(mine)

    def _owned(self, keys: list[str]) -> set[str]:
        """Which of ``keys`` this cache holds a lease on (inside the caller's transaction)."""
        owned: set[str] = set()
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            owned.update(
                key
                for (key,) in self._db.execute(
                    f"SELECT key FROM leases WHERE owner = ? AND key IN ({marks})", [self.owner, *chunk]
                )
            )
        return owned

    def _take_over_dead_owners(self, keys: list[str], expires: float) -> None:
        """Take over leases whose owner ran on this host in a process that no longer exists (a
        killed run): no need to wait for them to expire (inside the caller's transaction)."""
        host = self.owner.rsplit("/", 2)[0]
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, owner FROM leases WHERE owner != ? AND key IN ({marks})", [self.owner, *chunk]
            ).fetchall()
            for key, owner in rows:
                if _dead_on_this_host(owner, host):
                    self._db.execute(
                        "UPDATE leases SET owner = ?, expires = ? WHERE key = ? AND owner = ?",
                        (self.owner, expires, key, owner),
                    )

    def _take_over_impossible_leases(self, keys: list[str], now: float, expires: float) -> None:
        """Take over leases whose expiry no rankkit run writes (more than :data:`MAX_LEASE_SECONDS`
        ahead, or not a number), with a warning: waiting for them would never end."""
        for start in range(0, len(keys), _SQL_CHUNK):
            chunk = keys[start : start + _SQL_CHUNK]
            marks = ",".join("?" * len(chunk))
            rows = self._db.execute(
                f"SELECT key, owner FROM leases WHERE owner != ? AND key IN ({marks}) "
                "AND (typeof(expires) NOT IN ('real', 'integer') OR expires > ?)",
                [self.owner, *chunk, now + MAX_LEASE_SECONDS],
            ).fetchall()
            for key, owner in rows:
                warnings.warn(
                    f"judgment cache {self.path}: the lease on row {key} held by {str(owner)[:80]!r} "
                    f"expires beyond any run's lease ({MAX_LEASE_SECONDS:,.0f} s); taken over",
                    stacklevel=2,
                )
                self._db.execute(
                    "UPDATE leases SET owner = ?, expires = ? WHERE key = ? AND owner = ?",
                    (self.owner, expires, key, owner),
                )

    def _delete_leases(self, keys: list[str]) -> None:
        """Delete this cache's leases on ``keys`` (inside the caller's transaction, if any)."""
        self._db.executemany("DELETE FROM leases WHERE key = ? AND owner = ?", [(key, self.owner) for key in keys])

    def _start_renewing(self) -> None:
        """Start, once, the thread that renews this cache's leases while it holds any."""
        with self._lock:
            if self._renewer is not None or self._closing.is_set():
                return
            self._renewer = threading.Thread(target=self._renew_loop, name="rankkit-lease-renewer", daemon=True)
            self._renewer.start()

    def _renew_loop(self) -> None:
        """While the cache is open: every quarter of ``lease_seconds``, push the expiry of every
        lease held to a full ``lease_seconds`` from now; and within :data:`LEASED_COMMIT_SECONDS`,
        commit buffered answers to leased keys (other processes may be waiting for exactly these,
        and a crash would lose them). A killed process renews nothing, so its leases expire."""
        renewed = time.monotonic()
        while not self._closing.wait(min(LEASED_COMMIT_SECONDS, self.flush_seconds, self.lease_seconds / 4)):
            try:
                with self._lock:
                    if self._db is None:
                        return
                    awaited = any(key in self._held for key in self._pending)
                if awaited:
                    self.flush()
                if time.monotonic() - renewed >= self.lease_seconds / 4:
                    renewed = time.monotonic()
                    self._renew()
            except (sqlite3.Error, CacheError):
                # A busy or vanished file: the run's own writes will report it; a lease that lapses
                # costs at most a duplicate request, never a wrong result.
                continue

    def _renew(self) -> None:
        """Push the expiry of every lease this cache holds to ``lease_seconds`` from now."""
        with self._lock:
            if self._db is None or not self._held:
                return
            expires = time.time() + self.lease_seconds
            with self._transaction():
                self._db.executemany(
                    "UPDATE leases SET expires = ? WHERE key = ? AND owner = ?",
                    [(expires, key, self.owner) for key in self._held],
                )

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction (the caller holds ``_lock``): committed, or rolled back on error."""
        self._db.execute("BEGIN IMMEDIATE")
        try:
            yield
        except BaseException:
            self._db.execute("ROLLBACK")
            raise
        self._db.execute("COMMIT")

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
        self._closing.set()
        try:
            self.flush()
            self.release_leases(list(self._held))  # keys asked but never answered
        finally:
            with self._lock:
                self._db.close()
                self._db = None
            if self._renewer is not None and self._renewer is not threading.current_thread():
                self._renewer.join()

    def __enter__(self) -> JudgmentCache:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def bad_row(path: str | Path | None, key: str, problem: str) -> CacheError:
    """The error for a row of the cache that rankkit cannot have written (exit code 2)."""
    return CacheError(
        path or "(memory)",
        f"row {key} cannot be read: {problem}",
        "the file was changed outside rankkit; use a cache you made yourself, or delete that row "
        f"(DELETE FROM judgments WHERE key = '{key}')",
    )


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


def _dead_on_this_host(owner: str, host: str) -> bool:
    """Whether a lease ``owner`` (``host/pid/token``) ran on ``host`` in a process that is gone."""
    owner_host, _, pid = owner.rpartition("/")[0].rpartition("/")
    if owner_host != host or not pid.isdigit():
        return False
    try:
        os.kill(int(pid), 0)  # signal 0: only checks that the process exists
    except ProcessLookupError:
        return True
    except OSError:  # exists, but belongs to another user
        return False
    return False


class NullCache:
    """Remembers nothing (``--no-cache``); the run's memo still asks each request once. No other
    process can share it, so it takes no leases: every key is this process's to ask."""

    path = None

    def get(self, fingerprint: str, kind: str, parts: Sequence[Any]) -> dict[str, Any] | None:
        """Nothing is stored: always None.

        Parameters
        ----------
        fingerprint : str
            The judge's fingerprint.
        kind : str
            The kind of judgment.
        parts : Sequence[Any]
            The request key.

        Returns
        -------
        None
            Always.
        """
        return None

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Nothing is stored: None per key.

        Parameters
        ----------
        keys : Sequence[str]
            Row keys.

        Returns
        -------
        list[None]
            One None per key.
        """
        return [None] * len(keys)

    def put(self, fingerprint: str, kind: str, parts: Sequence[Any], payload: dict[str, Any]) -> None:
        """Forget the judgment.

        Parameters
        ----------
        fingerprint : str
            The judge's fingerprint.
        kind : str
            The kind of judgment.
        parts : Sequence[Any]
            The request key.
        payload : dict[str, Any]
            The judgment.
        """
        return None

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        """Forget the judgment.

        Parameters
        ----------
        key : str
            The row key.
        fingerprint : str
            The judge's fingerprint.
        kind : str
            The kind of judgment.
        payload : dict[str, Any]
            The judgment.
        """
        return None

    def flush(self) -> None:
        """Nothing to commit."""
        return None

    def get_fresh(self, keys: Sequence[str], since: float) -> list[dict[str, Any] | None]:
        """Nothing is stored: None per key.

        Parameters
        ----------
        keys : Sequence[str]
            Row keys.
        since : float
            Ignored.

        Returns
        -------
        list[None]
            One None per key.
        """
        return [None] * len(keys)

    def claim_leases(self, keys: Sequence[str]) -> list[str]:
        """Every key is this process's to ask (no other process shares the cache).

        Parameters
        ----------
        keys : Sequence[str]
            Row keys.

        Returns
        -------
        list[str]
            The distinct keys, in order.
        """
        return list(dict.fromkeys(keys))

    def release_leases(self, keys: Sequence[str]) -> None:
        """No leases to release.

        Parameters
        ----------
        keys : Sequence[str]
            Row keys (ignored).
        """
        return None

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        """Nothing to close."""
        return None
