"""The judgment cache on a PostgreSQL server, shared by workers on several machines.

:class:`PostgresJudgmentCache` keeps :class:`~rankkit.judgments.cache.JudgmentCache`'s buffering,
leases and guarantees and replaces only its statements. Every write transaction first takes one
advisory lock, so writers take turns as SQLite's ``BEGIN IMMEDIATE`` makes them; a lease is then
claimed, and a failed judgment replaced, by reading and writing inside that turn. The tables are
SQLite's (``payload`` stays JSON text, checked by :func:`~rankkit.judgments.cache_schema.parse_payload`
when read back), and a database whose tables carry anything rankkit never creates (a trigger, a
rule, a view, another column or constraint, row security) is refused before it is used.
psycopg 3 is imported only when such a cache is opened (``pip install "rankkit[postgres]"``).
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator, Sequence
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit, urlunsplit

from rankkit.judgments.cache import JudgmentCache, is_failed
from rankkit.judgments.cache_errors import ELSEWHERE, WITHOUT, CacheError
from rankkit.judgments.cache_leases import MAX_LEASE_SECONDS, dead_on_this_host
from rankkit.judgments.cache_schema import parse_payload

SCHEMES = ("postgresql", "postgres")

#: The advisory lock every write transaction takes first (any fixed number: "rankkit" in ASCII).
WRITE_LOCK = 0x72616E6B6B6974

_TABLES = {
    "judgments": "key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, kind TEXT NOT NULL, "
    "payload TEXT NOT NULL, created DOUBLE PRECISION NOT NULL",
    "leases": "key TEXT PRIMARY KEY, owner TEXT NOT NULL, expires DOUBLE PRECISION NOT NULL",
}

#: Each table's columns as ``information_schema.columns`` lists them: (name, type, nullable, default, generated).
_COLUMNS = {
    "judgments": [
        ("key", "text", "NO", None, "NEVER"),
        ("fingerprint", "text", "NO", None, "NEVER"),
        ("kind", "text", "NO", None, "NEVER"),
        ("payload", "text", "NO", None, "NEVER"),
        ("created", "double precision", "NO", None, "NEVER"),
    ],
    "leases": [
        ("key", "text", "NO", None, "NEVER"),
        ("owner", "text", "NO", None, "NEVER"),
        ("expires", "double precision", "NO", None, "NEVER"),
    ],
}


class CacheUnreachable(CacheError):
    """The PostgreSQL server of a cache cannot be reached or refuses the login (exit code 1: a rerun may succeed)."""

    exit_code = 1


def is_postgres_url(location: object) -> bool:
    """Whether a cache location (``--cache``, ``RANKKIT_CACHE``, ``cache=``) is a PostgreSQL URL."""
    return isinstance(location, str) and location.split("://", 1)[0].lower() in SCHEMES and "://" in location


def redacted(url: str) -> str:
    """``url`` with its password (in the address or as ``?password=``) shown as ``***``."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        user, _, host = netloc.rpartition("@")
        if ":" in user:
            user = user.split(":", 1)[0] + ":***"
        netloc = f"{user}@{host}"
    query = [(name, "***" if name == "password" else value) for name, value in parse_qsl(parts.query, True)]
    return urlunsplit((parts.scheme, netloc, parts.path, urlencode(query, safe="*/"), parts.fragment))


def check_url(url: str) -> None:
    """Raise a :class:`CacheError` (exit code 2) when ``url`` is not a usable PostgreSQL URL."""
    shown = redacted(url) if "://" in url else "(a PostgreSQL URL)"
    advice = "write it as postgresql://USER@HOST:PORT/DATABASE (the password in PGPASSWORD or ~/.pgpass)"
    try:
        parts = urlsplit(url)
        parts.port  # noqa: B018 - raises ValueError on a port that is not a number in range
    except ValueError as err:
        raise CacheError(shown, f"not a valid PostgreSQL URL ({err})", advice) from None
    if parts.scheme.lower() not in SCHEMES:
        raise CacheError(shown, "not a PostgreSQL URL", advice)
    if parts.fragment or any(char.isspace() for char in url):
        raise CacheError(shown, "not a valid PostgreSQL URL (a '#' or a space in it)", advice)


class PostgresJudgmentCache(JudgmentCache):
    """The judgment cache in a PostgreSQL database named by a ``postgresql://`` URL; its methods
    and parameters are :class:`~rankkit.judgments.cache.JudgmentCache`'s. ``path`` is the URL with
    its password shown as ``***``: what errors and records name."""

    def __init__(self, url: str, **options: Any):
        check_url(url)
        self._url = url
        super().__init__(url, **options)

    def _location(self, path: Any) -> str:
        return redacted(str(path))

    def _open(self) -> None:
        psycopg = self._driver = _import_psycopg(self.path)
        self.store_errors = (psycopg.Error,)
        try:
            self._db = psycopg.connect(self._url, autocommit=True, connect_timeout=10)
        except psycopg.ProgrammingError as err:  # libpq could not read the URL
            raise CacheError(self.path, f"not a valid PostgreSQL URL ({self._scrubbed(err)})", ELSEWHERE) from None
        except psycopg.Error as err:
            raise CacheUnreachable(
                self.path,
                f"cannot connect to the server ({self._scrubbed(err)})",
                f"check that it runs and accepts this user, then rerun; or {WITHOUT}",
            ) from None
        try:
            with self._explained(), self._transaction():
                self._check_schema()
                for table, columns in _TABLES.items():
                    self._db.execute(f"CREATE TABLE IF NOT EXISTS {table} ({columns})")
        except BaseException:
            self._db.close()
            raise

    def _scrubbed(self, err: Exception) -> str:
        """The driver's message, without the password should it quote the URL."""
        text = " ".join(str(err).split())
        parts = urlsplit(self._url)
        passwords = [parts.password] + [value for name, value in parse_qsl(parts.query) if name == "password"]
        for password in filter(None, passwords):
            text = text.replace(password, "***")
        return text

    def _explain(self, err: Exception) -> CacheError:
        if isinstance(err, (self._driver.OperationalError, self._driver.InterfaceError)):
            return CacheUnreachable(self.path, f"lost the server ({self._scrubbed(err)})", "rerun when it is back")
        return CacheError(self.path, f"{type(err).__name__}: {self._scrubbed(err)}", f"{ELSEWHERE}, or {WITHOUT}")

    def _check_schema(self) -> None:
        """Refuse tables that carry what rankkit never creates (see the module's docstring)."""
        for table, expected in _COLUMNS.items():
            problem = self._foreign(table, expected)
            if problem is not None:
                raise CacheError(
                    self.path,
                    f"its table {table!r} {problem}, which rankkit never creates; it can alter what a run reads and writes",
                    f"use a database you made yourself: {ELSEWHERE}, or {WITHOUT}",
                )

    def _foreign(self, table: str, expected: list[tuple]) -> str | None:
        """What ``table`` (in the connection's schema) carries besides rankkit's shape; None when nothing or absent."""
        row = self._db.execute(
            "SELECT c.oid, c.relkind, c.relrowsecurity FROM pg_class c "
            "WHERE c.relname = %s AND c.relnamespace = current_schema()::regnamespace",
            (table,),
        ).fetchone()
        if row is None:
            return None
        oid, relkind, row_security = row
        columns = self._db.execute(
            "SELECT column_name, data_type, is_nullable, column_default, is_generated FROM information_schema.columns "
            "WHERE table_schema = current_schema() AND table_name = %s ORDER BY ordinal_position",
            (table,),
        ).fetchall()
        checks = [
            ("is a view or another kind of relation", relkind not in ("r", b"r")),
            ("has row security", row_security),
            ("has other columns", [tuple(column) for column in columns] != expected),
            ("has a trigger", self._any("SELECT 1 FROM pg_trigger WHERE tgrelid = %s AND NOT tgisinternal", oid)),
            ("has a rule", self._any("SELECT 1 FROM pg_rewrite WHERE ev_class = %s", oid)),
            ("has a constraint", self._any("SELECT 1 FROM pg_constraint WHERE conrelid = %s AND contype <> 'p'", oid)),
            ("has a policy", self._any("SELECT 1 FROM pg_policy WHERE polrelid = %s", oid)),
        ]
        return next((problem for problem, found in checks if found), None)

    def _any(self, query: str, oid: int) -> bool:
        return self._db.execute(query, (oid,)).fetchone() is not None

    @contextlib.contextmanager
    def _transaction(self) -> Iterator[None]:
        """One write transaction, after every other writer's (the advisory lock is held to its end)."""
        with self._db.transaction():
            self._db.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
            yield

    # -- the statements ----------------------------------------------------------------------
    def _select(self, keys: Sequence[str]) -> dict[str, tuple[Any, Any]]:
        rows = self._db.execute("SELECT key, payload, created FROM judgments WHERE key = ANY(%s)", (list(keys),))
        return {key: (payload, created) for key, payload, created in rows}

    def _write(self, rows: list[tuple[str, str, str, str, float]], answered: list[str]) -> None:
        """First writer wins, a failure is replaced: decided here on the rows as read, since every
        writer waits for this transaction's lock."""
        stored = self._select([row[0] for row in rows])
        replaced = [row for row in rows if row[0] in stored and _is_failed_text(stored[row[0]][0])]
        with self._db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO judgments (key, fingerprint, kind, payload, created) VALUES (%s, %s, %s, %s, %s) "
                "ON CONFLICT (key) DO NOTHING",
                [row for row in rows if row[0] not in stored],
            )
            cursor.executemany(
                "UPDATE judgments SET payload = %s, created = %s WHERE key = %s",
                [(data, created, key) for key, _, _, data, created in replaced],
            )
        self._delete_leases(answered)

    def _claim(self, keys: list[str], now: float, expires: float) -> set[str]:
        self._drop_expired(now)
        stored = self._select(keys)
        wanted = [key for key in keys if key not in stored or _is_failed_text(stored[key][0])]
        with self._db.cursor() as cursor:
            cursor.executemany(
                "INSERT INTO leases (key, owner, expires) VALUES (%s, %s, %s) "
                "ON CONFLICT (key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires "
                "WHERE leases.expires < %s",
                [(key, self.owner, expires, now) for key in wanted],
            )
        self._take_over(wanted, now, expires)
        mine = self._db.execute("SELECT key FROM leases WHERE owner = %s AND key = ANY(%s)", (self.owner, wanted))
        return {key for (key,) in mine}

    def _drop_expired(self, now: float) -> None:
        """Delete expired leases, noting another owner's (its requests are asked here)."""
        expired = self._db.execute(
            "SELECT owner, COUNT(*) FROM leases WHERE owner <> %s AND expires < %s GROUP BY owner", (self.owner, now)
        ).fetchall()
        self._db.execute("DELETE FROM leases WHERE expires < %s", (now,))
        for other, count in expired:
            warnings.warn(
                f"judgment cache {self.path}: {count} lease(s) of {str(other)[:80]!r} held past their expiry "
                "(a crashed or stopped run); taken over",
                stacklevel=5,
            )

    def _take_over(self, keys: list[str], now: float, expires: float) -> None:
        """Take over the leases of a dead process on this host, and those expiring beyond any run's lease."""
        host = self.owner.rsplit("/", 2)[0]
        others = self._db.execute(
            "SELECT key, owner, expires FROM leases WHERE owner <> %s AND key = ANY(%s)", (self.owner, keys)
        ).fetchall()
        for key, other, until in others:
            impossible = until > now + MAX_LEASE_SECONDS
            if impossible:
                warnings.warn(
                    f"judgment cache {self.path}: the lease on row {key} held by {str(other)[:80]!r} "
                    f"expires beyond any run's lease ({MAX_LEASE_SECONDS:,.0f} s); taken over",
                    stacklevel=5,
                )
            if impossible or dead_on_this_host(other, host):
                self._db.execute(
                    "UPDATE leases SET owner = %s, expires = %s WHERE key = %s AND owner = %s",
                    (self.owner, expires, key, other),
                )

    def _delete_leases(self, keys: list[str]) -> None:
        self._db.execute("DELETE FROM leases WHERE owner = %s AND key = ANY(%s)", (self.owner, list(keys)))

    def _renew_leases(self, expires: float) -> None:
        self._db.execute(
            "UPDATE leases SET expires = %s WHERE owner = %s AND key = ANY(%s)", (expires, self.owner, list(self._held))
        )

    def _count(self) -> int:
        return self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]


def _is_failed_text(text: Any) -> bool:
    """Whether stored payload text is a failed judgment (text rankkit cannot have written is not:
    it is kept, and reported when read)."""
    try:
        return is_failed(parse_payload(text))
    except ValueError:
        return False


def _import_psycopg(shown: str) -> Any:
    try:
        import psycopg
    except ImportError:
        raise CacheError(
            shown, "needs the PostgreSQL driver psycopg 3", f'pip install "rankkit[postgres]", or {WITHOUT}'
        ) from None
    return psycopg


def open_judgment_cache(location: Any, **options: Any) -> JudgmentCache:
    """The cache ``location`` names: a :class:`PostgresJudgmentCache` for a ``postgresql://`` URL,
    else the SQLite :class:`~rankkit.judgments.cache.JudgmentCache` at that path."""
    if is_postgres_url(location):
        return PostgresJudgmentCache(location, **options)
    return JudgmentCache(location, **options)
