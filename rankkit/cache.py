"""A persistent judgment cache in SQLite, so no judgment is ever paid for twice.

A judgment is stored under a key made of the judge's fingerprint, the kind of judgment and a
SHA-256 of the texts the judge saw: (prompt, reference, first text, second text) for a comparison,
(prompt, reference, text) for a grade. Candidate ids are deliberately not part of the key: the same
texts under other ids are the same question to the judge.

Each judgment is committed the moment it arrives, and the database runs in WAL mode with a busy
timeout, so a run killed half-way keeps everything it was told and two processes may share one
file. ``NullCache`` is the ``--no-cache`` stand-in with the same interface.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any, Sequence

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
_PUT = """
INSERT INTO judgments (key, fingerprint, kind, payload, created) VALUES (?, ?, ?, ?, ?)
ON CONFLICT(key) DO UPDATE SET payload = excluded.payload, created = excluded.created
WHERE json_extract(judgments.payload, '$.status') = 'failed'
"""


def content_hash(parts: Sequence[Any]) -> str:
    """SHA-256 of a sequence of JSON values (None kept distinct from the empty string)."""
    return hashlib.sha256(json.dumps(list(parts), ensure_ascii=False).encode("utf-8")).hexdigest()


def judgment_key(fingerprint: str, kind: str, parts: Sequence[str | None]) -> str:
    return hashlib.sha256(f"{fingerprint}\x00{kind}\x00{content_hash(parts)}".encode("utf-8")).hexdigest()


class JudgmentCache:
    """SQLite-backed store of judgments: ``get``/``put`` JSON payloads by (fingerprint, kind, texts).

    ``kind`` is free-form so judges can cache intermediate products too (e.g. PREPAIR analyses);
    the match layer uses ``"pair"`` and ``"point"``.
    """

    def __init__(self, path: str | Path = DEFAULT_CACHE_PATH):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.Lock()
        self._db = sqlite3.connect(str(self.path), timeout=60.0, check_same_thread=False, isolation_level=None)
        self._setup()

    def _setup(self, attempts: int = 200) -> None:
        """Switch to WAL and create the table. Switching the journal mode needs a moment of
        exclusive access and SQLite's busy timeout does not cover it, so when another process is
        opening the same file at the same instant we wait briefly and try again."""
        for attempt in range(attempts):
            try:
                self._db.execute("PRAGMA journal_mode=WAL")
                self._db.execute("PRAGMA synchronous=NORMAL")
                self._db.execute(_SCHEMA)
                return
            except sqlite3.OperationalError as err:
                if "locked" not in str(err) or attempt == attempts - 1:
                    raise
                time.sleep(0.05)

    def get(self, fingerprint: str, kind: str, parts: Sequence[str | None]) -> dict[str, Any] | None:
        key = judgment_key(fingerprint, kind, parts)
        with self._lock:
            row = self._db.execute("SELECT payload FROM judgments WHERE key = ?", (key,)).fetchone()
        return None if row is None else json.loads(row[0])

    def put(self, fingerprint: str, kind: str, parts: Sequence[str | None], payload: dict[str, Any]) -> None:
        """Store and commit at once (autocommit mode): a crash right after loses nothing."""
        key = judgment_key(fingerprint, kind, parts)
        data = json.dumps(payload, ensure_ascii=False)
        with self._lock:
            self._db.execute(_PUT, (key, fingerprint, kind, data, time.time()))

    def __bool__(self) -> bool:  # an empty cache is still a cache (`cache or default` must keep it)
        return True

    def __len__(self) -> int:
        with self._lock:
            return self._db.execute("SELECT COUNT(*) FROM judgments").fetchone()[0]

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> "JudgmentCache":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


class NullCache:
    """Remembers nothing (``--no-cache``); the in-run match graph still avoids repeated calls."""

    path = None

    def get(self, fingerprint: str, kind: str, parts: Sequence[str | None]) -> dict[str, Any] | None:
        return None

    def put(self, fingerprint: str, kind: str, parts: Sequence[str | None], payload: dict[str, Any]) -> None:
        return None

    def __len__(self) -> int:
        return 0

    def close(self) -> None:
        return None
