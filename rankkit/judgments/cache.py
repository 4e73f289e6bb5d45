"""A persistent judgment cache in SQLite, so no judgment is ever paid for twice.

More in ``docs/cache.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import secrets
import socket
import sqlite3
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import rankkit.judgments.cache_leases as leases
from rankkit.judgments.cache_errors import ELSEWHERE, WITHOUT, CacheError, bad_row, explain_sqlite_error
from rankkit.judgments.cache_schema import JUDGMENTS_TABLE, LEASES_TABLE, foreign_objects, in_chunks, parse_payload

DEFAULT_CACHE_PATH = Path(".rankkit") / "cache.sqlite"

#: How long a lease on a key lasts unless renewed: the longest another process waits on a
#: crashed owner. A live owner renews its leases every quarter of this while it asks.
DEFAULT_LEASE_SECONDS = 120.0

#: The longest a buffered answer to a leased key waits for its commit (and the lease's release).
LEASED_COMMIT_SECONDS = 0.1

# First writer wins: what is cached is what was used, even when two processes race for one key.
# The one exception is a failed judgment (a parse failure, an empty completion during a server
# fault), which a later successful answer to the same request replaces.
_PUT = """
INSERT INTO judgments (key, fingerprint, kind, payload, created) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET payload = excluded.payload, created = excluded.created
WHERE json_extract(judgments.payload, '$.status') = 'failed'
"""


def judgment_key(fingerprint: str, kind: str, parts: Sequence[Any]) -> str:
    """The row key of a judgment: the hex SHA-256 over the judge's fingerprint, the ``kind`` of
    judgment (``pair``, ``point``, ``choice``...) and the request key ``parts`` (the judge's ``request_key``)."""
    text = json.dumps([fingerprint, kind, list(parts)], ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def is_failed(payload: dict[str, Any] | None) -> bool:
    """Whether a stored payload (None: nothing stored) has the status ``failed``: a judgment the
    judge could not produce cleanly, kept but never served."""
    return payload is not None and payload.get("status") == "failed"


class JudgmentCache:
    """SQLite-backed store of judgments: ``get``/``put`` JSON payloads by (fingerprint, kind, texts).

    ``kind`` is free-form so judges can cache intermediate products too (e.g. PREPAIR analyses);
    the match layer uses ``"pair"`` and ``"point"``. The buffering, leases and their renewal live
    here; the statements on the database live in the ``_select`` ... ``_count`` methods, which
    :class:`rankkit.judgments.cache_postgres.PostgresJudgmentCache` implements for PostgreSQL.
    """

    #: The database driver's errors, reported as a :class:`CacheError` by :meth:`_explain`.
    store_errors: tuple[type[Exception], ...] = (sqlite3.Error,)

    def __init__(
        self,
        path: str | Path = DEFAULT_CACHE_PATH,
        flush_rows: int = 256,
        flush_seconds: float = 1.0,
        lease_seconds: float = DEFAULT_LEASE_SECONDS,
    ):
        """Open (or create) the SQLite file at ``path``; a :class:`CacheError` when it cannot be used.

        Parameters
        ----------
        flush_rows
            Commit buffered writes once this many are pending ...
        flush_seconds
            ... or this long (seconds) has passed since the last commit (the memo also commits
            after judge batches).
        lease_seconds
            How long a lease on a key lasts unless renewed (see "Leases" in ``docs/cache.md``):
            the longest another process waits on this one if it crashes.
        """
        self.path: Path | str = self._location(path)
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
        self._db: Any = None
        self._open()

    def _location(self, path: str | Path) -> Path | str:
        """What names the cache in messages: the file's path."""
        return Path(path)

    def _open(self) -> None:
        """Connect to the database and check it is a rankkit cache that takes writes."""
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
                self._db.execute(JUDGMENTS_TABLE)
                self._db.execute(LEASES_TABLE)
                self._probe_write()
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == attempts - 1:
                    raise
                time.sleep(0.05)

    def _check_schema(self) -> None:
        """Refuse a database that is not a rankkit cache, or that holds anything rankkit did not
        create (:func:`rankkit.judgments.cache_schema.foreign_objects`), before anything is read from or written to it."""
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
        problem = foreign_objects(self._db, objects)
        if problem is not None:
            raise CacheError(self.path, problem, f"use a cache you made yourself: {ELSEWHERE}, or {WITHOUT}")

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
        """The stored payload of one request (a failure too: :func:`is_failed`), None when nothing is
        stored; the arguments are :func:`judgment_key`'s."""
        return self.get_keys([judgment_key(fingerprint, kind, parts)])[0]

    @contextlib.contextmanager
    def _explained(self) -> Iterator[None]:
        """Report an SQLite failure during a run (disk full, file removed) as a :class:`CacheError`
        that names the cache."""
        try:
            yield
        except self.store_errors as err:
            raise self._explain(err) from err

    def _explain(self, err: Exception) -> CacheError:
        return explain_sqlite_error(self.path, err)

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """One stored payload per row key (see :func:`judgment_key`), buffered writes included (a failure
        too: :func:`is_failed`); None where nothing is stored."""
        found: dict[str, str] = {}
        with self._lock, self._explained():
            wanted = []
            for key in keys:
                if key in self._pending:
                    found[key] = self._pending[key][3]
                else:
                    wanted.append(key)
            found.update((key, payload) for key, (payload, _) in self._select(wanted).items())
        return [None if key not in found else self._payload(key, found[key]) for key in keys]

    def get_fresh(self, keys: Sequence[str], since: float) -> list[dict[str, Any] | None]:
        """Stored payloads by row key, like :meth:`get_keys`, except that a failed judgment is
        returned only when committed at or after ``since`` (a ``time.time()``).

        A process that waited on another's lease uses a failure that process has just committed,
        as that process does (one request per key in flight, across processes as within one),
        instead of paying for the same request again; an older failure is not returned, so it is
        asked again as on any rerun. None where nothing is stored or only a failure older than ``since``.
        """
        with self._lock, self._explained():
            found = self._select(keys)
        out: list[dict[str, Any] | None] = []
        for key in keys:
            payload = self._payload(key, found[key][0]) if key in found else None
            out.append(None if is_failed(payload) and found[key][1] < since else payload)
        return out

    def _payload(self, key: str, text: Any) -> dict[str, Any]:
        """The JSON object stored under ``key``; a :class:`CacheError` naming the row when rankkit
        cannot have written it (:func:`rankkit.judgments.cache_schema.parse_payload`)."""
        try:
            return parse_payload(text)
        except ValueError as err:
            raise bad_row(self.path, key, str(err)) from None

    def put(self, fingerprint: str, kind: str, parts: Sequence[Any], payload: dict[str, Any]) -> None:
        """Store one judgment, a JSON-serialisable ``payload`` (buffered; committed by the next
        :meth:`flush`); the other arguments are :func:`judgment_key`'s."""
        self.put_key(judgment_key(fingerprint, kind, parts), fingerprint, kind, payload)

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        """Store one judgment under its row key (:func:`judgment_key`); buffered, and a pending failure
        is replaced, an answer is not."""
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
                with self._transaction():
                    self._write(rows, answered)
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
            held = self._claim(keys, now, expires)
            self._held.update(held)
        self._start_renewing()
        return [key for key in keys if key in held]

    def release_leases(self, keys: Sequence[str]) -> None:
        """Give up this cache's leases on ``keys`` without an answer (the judge failed), so that
        another process may ask at once; answered keys are released by :meth:`flush`."""
        with self._lock, self._explained():
            mine = [key for key in keys if key in self._held and key not in self._pending]
            if mine and self._db is not None:
                with self._transaction():
                    self._delete_leases(mine)
            self._held.difference_update(mine)

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
            except (*self.store_errors, CacheError):
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
                self._renew_leases(expires)

    # -- the statements on the database (overridden for PostgreSQL) ------------------------------
    def _select(self, keys: Sequence[str]) -> dict[str, tuple[Any, Any]]:
        """The stored ``(payload, created)`` of each of ``keys`` that has a row (as read: unchecked)."""
        found: dict[str, tuple[Any, Any]] = {}
        for chunk, marks in in_chunks(keys):
            rows = self._db.execute(f"SELECT key, payload, created FROM judgments WHERE key IN ({marks})", chunk)
            found.update((key, (payload, created)) for key, payload, created in rows)
        return found

    def _write(self, rows: list[tuple[str, str, str, str, float]], answered: list[str]) -> None:
        """Store ``rows`` (first writer wins, a failure is replaced) and release the leases on ``answered``."""
        self._db.executemany(_PUT, rows)
        leases.delete(self._db, self.owner, answered)

    def _claim(self, keys: list[str], now: float, expires: float) -> set[str]:
        """Lease every key of ``keys`` that needs asking and no live process holds; the keys held now."""
        return leases.claim(self._db, self.path, self.owner, keys, now, expires)

    def _delete_leases(self, keys: list[str]) -> None:
        leases.delete(self._db, self.owner, keys)

    def _renew_leases(self, expires: float) -> None:
        leases.renew(self._db, self.owner, self._held, expires)

    def _count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]

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
        with self._lock, self._explained():
            return self._count()

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


class NullCache:
    """Remembers nothing (``--no-cache``); the run's memo still asks each request once. No other
    process can share it, so it takes no leases: every key is this process's to ask. Its methods
    are :class:`JudgmentCache`'s."""

    path = None

    def get(self, fingerprint: str, kind: str, parts: Sequence[Any]) -> dict[str, Any] | None:
        """Nothing is stored: always None."""
        return None

    def get_keys(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """Nothing is stored: None per key."""
        return [None] * len(keys)

    def get_fresh(self, keys: Sequence[str], since: float) -> list[dict[str, Any] | None]:
        """Nothing is stored: None per key."""
        return [None] * len(keys)

    def put(self, fingerprint: str, kind: str, parts: Sequence[Any], payload: dict[str, Any]) -> None:
        """Forget the judgment."""
        return None

    def put_key(self, key: str, fingerprint: str, kind: str, payload: dict[str, Any]) -> None:
        """Forget the judgment."""
        return None

    def flush(self) -> None:
        """Nothing to commit."""
        return None

    def claim_leases(self, keys: Sequence[str]) -> list[str]:
        """Every key is this process's to ask: the distinct keys, in order."""
        return list(dict.fromkeys(keys))

    def release_leases(self, keys: Sequence[str]) -> None:
        """No leases to release."""
        return None

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        """Nothing to close."""
        return None
