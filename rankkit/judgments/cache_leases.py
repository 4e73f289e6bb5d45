"""Leases in a judgment cache file: which process is asking the judge for which key now.

The statements :class:`rankkit.judgments.cache.JudgmentCache` runs on the ``leases`` table, each inside the
caller's transaction (see "Leases" in ``docs/cache.md``). An owner is ``host/pid/token``: unique per
open cache, and it says on which host and in which process the owner runs, so that a dead owner
on this host is recognised at once.
"""

from __future__ import annotations

import os
import sqlite3
import warnings
from pathlib import Path

from rankkit.judgments.cache_schema import in_chunks

#: The furthest in the future a lease can expire: its owner renews it to ``lease_seconds`` from
#: now, and no run uses leases of more than a day. A later expiry was not written by a rankkit run
#: (a crafted file, a clock far off), and waiting for it would never end: it is taken over.
MAX_LEASE_SECONDS = 86_400.0

# A lease is taken on a key that has no usable judgment yet (none, or a failed one) and whose
# lease, if any, has expired; one statement per key inside one transaction makes it atomic.
_CLAIM = """
INSERT INTO leases (key, owner, expires) SELECT ?1, ?2, ?3
WHERE NOT EXISTS (SELECT 1 FROM judgments
                  WHERE key = ?1 AND json_extract(payload, '$.status') IS NOT 'failed')
ON CONFLICT(key) DO UPDATE SET owner = excluded.owner, expires = excluded.expires
WHERE leases.expires < ?4
"""


def claim(db: sqlite3.Connection, path: Path, owner: str, keys: list[str], now: float, expires: float) -> set[str]:
    """Lease to ``owner`` (until ``expires``) every key of ``keys`` that needs asking and that no live
    process holds; returns the keys ``owner`` now holds. ``path`` names the file in warnings."""
    _drop_expired(db, path, owner, now)
    for key in keys:
        db.execute(_CLAIM, (key, owner, expires, now))
    _take_over_dead_owners(db, owner, keys, expires)
    _take_over_impossible(db, path, owner, keys, now, expires)
    return _owned(db, owner, keys)


def _drop_expired(db: sqlite3.Connection, path: Path, owner: str, now: float) -> None:
    """Delete expired leases: their keys are free, and dropping them keeps crashed runs from
    leaving rows behind. Another owner's, taken over so, is noted: its requests are asked here."""
    expired = db.execute(
        "SELECT owner, COUNT(*) FROM leases WHERE owner != ? AND expires < ? GROUP BY owner", (owner, now)
    ).fetchall()
    db.execute("DELETE FROM leases WHERE expires < ?", (now,))
    for other, count in expired:
        warnings.warn(
            f"judgment cache {path}: {count} lease(s) of {str(other)[:80]!r} held past their expiry "
            "(a crashed or stopped run); taken over",
            stacklevel=4,
        )


def _owned(db: sqlite3.Connection, owner: str, keys: list[str]) -> set[str]:
    """Which of ``keys`` ``owner`` holds a lease on."""
    owned: set[str] = set()
    for chunk, marks in in_chunks(keys):
        owned.update(
            key
            for (key,) in db.execute(f"SELECT key FROM leases WHERE owner = ? AND key IN ({marks})", [owner, *chunk])
        )
    return owned


def _take_over_dead_owners(db: sqlite3.Connection, owner: str, keys: list[str], expires: float) -> None:
    """Take over leases whose owner ran on this host in a process that no longer exists (a killed
    run): no need to wait for them to expire."""
    host = owner.rsplit("/", 2)[0]
    for chunk, marks in in_chunks(keys):
        rows = db.execute(
            f"SELECT key, owner FROM leases WHERE owner != ? AND key IN ({marks})", [owner, *chunk]
        ).fetchall()
        for key, other in rows:
            if dead_on_this_host(other, host):
                _take_over(db, owner, key, other, expires)


def _take_over_impossible(
    db: sqlite3.Connection, path: Path, owner: str, keys: list[str], now: float, expires: float
) -> None:
    """Take over leases whose expiry no rankkit run writes (more than :data:`MAX_LEASE_SECONDS`
    ahead, or not a number), with a warning: waiting for them would never end."""
    for chunk, marks in in_chunks(keys):
        rows = db.execute(
            f"SELECT key, owner FROM leases WHERE owner != ? AND key IN ({marks}) "
            "AND (typeof(expires) NOT IN ('real', 'integer') OR expires > ?)",
            [owner, *chunk, now + MAX_LEASE_SECONDS],
        ).fetchall()
        for key, other in rows:
            warnings.warn(
                f"judgment cache {path}: the lease on row {key} held by {str(other)[:80]!r} "
                f"expires beyond any run's lease ({MAX_LEASE_SECONDS:,.0f} s); taken over",
                stacklevel=3,
            )
            _take_over(db, owner, key, other, expires)


def _take_over(db: sqlite3.Connection, owner: str, key: str, other: str, expires: float) -> None:
    """Hand ``other``'s lease on ``key`` to ``owner``, until ``expires``."""
    db.execute("UPDATE leases SET owner = ?, expires = ? WHERE key = ? AND owner = ?", (owner, expires, key, other))


def delete(db: sqlite3.Connection, owner: str, keys: list[str]) -> None:
    """Delete ``owner``'s leases on ``keys``."""
    db.executemany("DELETE FROM leases WHERE key = ? AND owner = ?", [(key, owner) for key in keys])


def renew(db: sqlite3.Connection, owner: str, keys: set[str], expires: float) -> None:
    """Push the expiry of ``owner``'s leases on ``keys`` to ``expires``."""
    db.executemany("UPDATE leases SET expires = ? WHERE key = ? AND owner = ?", [(expires, key, owner) for key in keys])


def dead_on_this_host(owner: str, host: str) -> bool:
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
