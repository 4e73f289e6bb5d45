"""The batch journal: each batch request kept, with its answer once read, until the run that sent it ends.

Requests are journaled before their batch is created and answers as soon as read, so a killed run
resumes without paying twice (:class:`~rankkit.judges.hosted.batches.BatchRunner`). More in ``docs/hosted-judges.md``.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import math
import os
import re
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

from rankkit.errors import RankkitError
from rankkit.judges.hosted.http_retry import BadResponse, excerpt

try:  # POSIX: the journal is locked across processes; elsewhere across the threads of one
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]

#: The journal's default place: beside the default judgment cache (rankkit.judgments.cache.DEFAULT_CACHE_PATH).
DEFAULT_JOURNAL = Path(".rankkit") / "batches.json"
#: What a batch or file id from a journal or a server must look like before it goes into a URL.
SERVER_ID = re.compile(r"[A-Za-z0-9_-]{1,128}")
#: A batch's tag: its requests' custom ids are ``rk-TAG-N`` (on OpenAI it is also the batch's metadata).
TAG = re.compile(r"[0-9a-f]{16}")
#: A request's custom id in its batch (``rankkit-N``: journals of rankkit 0.3).
CUSTOM_ID = re.compile(r"(rk-[0-9a-f]{16}|rankkit)-[0-9]{1,7}")
#: Seconds an answered journal entry is kept when no run claims it (a week): the answers of a
#: killed run whose judgments its resume found in the cache.
ANSWER_RETENTION = 7 * 24 * 3600


class BatchJournalError(RankkitError):
    """A batch journal rankkit cannot read (not JSON, or an entry it did not write): exit 2."""


def checked_id(value: Any, what: str) -> str:
    """``value`` as a batch or file id fit for a URL path, else :class:`BadResponse`."""
    if not isinstance(value, str) or not SERVER_ID.fullmatch(value):
        raise BadResponse(f"{what} is not an id: {excerpt(json.dumps(value), None, 80)}")
    return value


# -- the journal ----------------------------------------------------------------------------------------


def entry_problem(key: Any, entry: Any) -> str | None:
    """Why journal ``entry`` (under ``key``) is not one rankkit writes, or None."""
    if not isinstance(key, str) or not re.fullmatch(r"[0-9a-f]{64}", key):
        return "the key is not a request key (64 hex digits)"
    if not isinstance(entry, dict):
        return f"the entry is {type(entry).__name__}, not an object"
    if entry.get("provider") not in ("openai", "anthropic"):
        return "provider is not openai or anthropic"
    if not isinstance(entry.get("custom_id"), str) or not CUSTOM_ID.fullmatch(entry["custom_id"]):
        return "custom_id is missing or not one rankkit writes"
    for field in ("created", "answered"):
        value = entry.get(field, 0)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
            return f"{field} is not a time"
    if "batch_id" in entry:
        if not isinstance(entry["batch_id"], str) or not SERVER_ID.fullmatch(entry["batch_id"]):
            return f"batch_id is not a batch id (letters, digits, _ and -): {excerpt(json.dumps(entry['batch_id']), None, 80)}"
    elif not isinstance(entry.get("tag"), str) or not TAG.fullmatch(entry["tag"]):
        return "an entry without a batch_id needs the tag of its batch"
    size = entry.get("size", 1)
    if isinstance(size, bool) or not isinstance(size, int) or size < 1:
        return "size is not a count of requests"
    if "answer" in entry and not isinstance(entry["answer"], dict):
        return "answer is not an object"
    return None


class BatchJournal:
    """Batch requests by request key in a JSON file, rewritten atomically under a file and a thread lock.

    Entries are checked when read (the file is untrusted; ids go into URLs): a bad one raises
    :class:`BatchJournalError` (exit 2) naming the file and the entry.
    """

    def __init__(self, path: str | Path = DEFAULT_JOURNAL):
        self.path = Path(path)
        self._lock = threading.Lock()

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        with self._lock:
            if fcntl is None:  # pragma: no cover - Windows
                yield
                return
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path.with_name(self.path.name + ".lock"), "a") as lock:
                fcntl.flock(lock, fcntl.LOCK_EX)
                try:
                    yield
                finally:
                    fcntl.flock(lock, fcntl.LOCK_UN)

    def _read(self) -> dict[str, Any]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return {}
        except (ValueError, UnicodeDecodeError) as err:
            raise BatchJournalError(
                f"batch journal {self.path} is not JSON ({err}); remove it to start afresh"
            ) from None
        if not isinstance(data, dict):
            raise BatchJournalError(f"batch journal {self.path} is not a JSON object; remove it to start afresh")
        for key, entry in data.items():
            problem = entry_problem(key, entry)
            if problem is not None:
                raise BatchJournalError(
                    f"batch journal {self.path}: entry {excerpt(key, None, 80)!r}: {problem}; remove the entry "
                    "(its requests are then asked again) or the file"
                )
        return data

    def _write(self, data: dict[str, Any]) -> None:
        cutoff = time.time() - ANSWER_RETENTION
        data = {key: entry for key, entry in data.items() if entry.get("answered", math.inf) > cutoff}
        self.path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=self.path.parent, prefix=".batches-", suffix=".json")
        with os.fdopen(handle, "w", encoding="utf-8") as out:
            json.dump(data, out, indent=1, sort_keys=True)
        os.replace(temporary, self.path)

    def get(self, key: str) -> dict[str, Any] | None:
        """The entry of ``key`` (a :func:`request_key`), or None."""
        return self.get_many([key])[0]

    def put(self, key: str, entry: dict[str, Any]) -> None:
        """Write ``entry`` for ``key`` (a :func:`request_key`)."""
        self.put_many({key: entry})

    def remove(self, key: str) -> None:
        """Remove the entry of ``key`` (if any)."""
        self.remove_many([key])

    def get_many(self, keys: Sequence[str]) -> list[dict[str, Any] | None]:
        """The entry of each key (None where there is none), read at once, in the order of ``keys``."""
        with self._locked():
            data = self._read()
            return [data.get(key) for key in keys]

    def put_many(self, entries: dict[str, dict[str, Any]]) -> None:
        """Write several entries (by request key) at once."""
        with self._locked():
            data = self._read()
            data.update(entries)
            self._write(data)

    def update_many(self, changes: dict[str, dict[str, Any]], tag: str | None = None) -> None:
        """Add ``changes[key]``'s fields to each key's entry still there (with ``tag``: only that batch's)."""
        with self._locked():
            data = self._read()
            for key, fields in changes.items():
                if key in data and (tag is None or data[key].get("tag") == tag):
                    data[key] = {**data[key], **fields}
            self._write(data)

    def remove_many(self, keys: Sequence[str] | set[str]) -> None:
        """Remove the entries of ``keys`` at once."""
        with self._locked():
            data = self._read()
            removed = [data.pop(key, None) for key in keys]
            if any(entry is not None for entry in removed):
                self._write(data)


def request_key(provider: str, base_url: str, body: dict[str, Any]) -> str:
    """The journal key (hex digest) of one request: a hash of provider, server and body."""
    text = json.dumps([provider, base_url, body], sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()
