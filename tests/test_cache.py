"""The SQLite judgment cache: persistence, keys, WAL, two processes."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
import textwrap

from rankkit.cache import JudgmentCache, NullCache


def test_put_get_roundtrip_and_persistence(cache_path):
    with JudgmentCache(cache_path) as cache:
        cache.put("fp", "pair", ["q", None, "a", "b"], {"winner": "first"})
        assert cache.get("fp", "pair", ["q", None, "a", "b"]) == {"winner": "first"}
    with JudgmentCache(cache_path) as reopened:
        assert reopened.get("fp", "pair", ["q", None, "a", "b"]) == {"winner": "first"}
        assert len(reopened) == 1


def test_key_separates_judge_kind_order_and_none(cache_path):
    with JudgmentCache(cache_path) as cache:
        cache.put("fp", "pair", ["q", None, "a", "b"], {"v": 1})
        assert cache.get("fp2", "pair", ["q", None, "a", "b"]) is None
        assert cache.get("fp", "point", ["q", None, "a", "b"]) is None
        assert cache.get("fp", "pair", ["q", None, "b", "a"]) is None
        assert cache.get("fp", "pair", ["q", "", "a", "b"]) is None


def test_wal_mode(cache_path):
    JudgmentCache(cache_path).close()
    mode = sqlite3.connect(cache_path).execute("PRAGMA journal_mode").fetchone()[0]
    assert mode.lower() == "wal"


def test_two_processes_share_the_file(cache_path):
    script = textwrap.dedent(f"""
        from rankkit.cache import JudgmentCache
        import sys
        cache = JudgmentCache({str(cache_path)!r})
        for i in range(200):
            cache.put("fp", "point", [sys.argv[1], str(i)], {{"i": i}})
        cache.close()
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, name]) for name in ("one", "two")]
    assert [p.wait(timeout=120) for p in procs] == [0, 0]
    with JudgmentCache(cache_path) as cache:
        assert len(cache) == 400
        assert cache.get("fp", "point", ["two", "199"]) == {"i": 199}


def test_null_cache_remembers_nothing():
    cache = NullCache()
    cache.put("fp", "pair", ["x"], {"v": 1})
    assert cache.get("fp", "pair", ["x"]) is None and len(cache) == 0
