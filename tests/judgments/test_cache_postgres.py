"""The judgment cache on PostgreSQL (issue 40): the SQLite cache's guarantees on a real throwaway
server, the cases that make sense run against both backends, and two processes sharing one memo.

Skipped, with the reason, where psycopg or the server binaries are missing or the server cannot start.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from rankkit.judgments.cache import CacheError, JudgmentCache, judgment_key
from rankkit.judgments.cache_postgres import CacheUnreachable, PostgresJudgmentCache, open_judgment_cache, redacted
from rankkit.judgments.memo import JudgmentMemo
from tests.postgres_server import fresh_database, throwaway_server, unavailable

FINGERPRINT = "pg-test-judge"
KIND = "verdict"
_databases = itertools.count()


@pytest.fixture(scope="module")
def server_url():
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    try:
        with throwaway_server() as url:
            yield url
    except RuntimeError as err:
        pytest.skip(str(err))


@pytest.fixture
def pg_url(server_url) -> str:
    """A fresh, empty database on the throwaway server."""
    return fresh_database(server_url, f"t{os.getpid()}_{next(_databases)}")


@pytest.fixture(params=["sqlite", "postgres"])
def location(request, tmp_path) -> str:
    """A fresh cache of each backend: a file path or a database URL."""
    if request.param == "sqlite":
        return str(tmp_path / "cache.sqlite")
    return request.getfixturevalue("pg_url")


def _raw(location: str, statement: str, params: tuple = ()) -> None:
    """Run ``statement`` on the cache's database as someone else would (``?`` placeholders)."""
    if location.startswith("postgresql://"):
        import psycopg

        with psycopg.connect(location, autocommit=True) as db:
            db.execute(statement.replace("?", "%s"), params)
    else:
        import sqlite3

        with sqlite3.connect(location) as db:
            db.execute(statement, params)


# -- the cases of the SQLite cache, on both backends --------------------------------------------------


def test_put_get_roundtrip_and_persistence(location):
    with open_judgment_cache(location) as cache:
        cache.put("fp", "pair", ["a", "b"], {"winner": 0, "p": 0.25})
        assert cache.get("fp", "pair", ["a", "b"]) == {"winner": 0, "p": 0.25}  # from the buffer
    with open_judgment_cache(location) as cache:
        assert cache.get("fp", "pair", ["a", "b"]) == {"winner": 0, "p": 0.25}
        assert cache.get("fp", "pair", ["b", "a"]) is None
        assert len(cache) == 1


def test_first_writer_wins_and_a_failure_is_replaced(location):
    with open_judgment_cache(location) as one, open_judgment_cache(location) as two:
        one.put("fp", "pair", ["x"], {"answer": 1})
        one.put("fp", "pair", ["y"], {"status": "failed"})
        one.flush()
        two.put("fp", "pair", ["x"], {"answer": 2})
        two.put("fp", "pair", ["y"], {"answer": 3})
        two.flush()
        assert one.get("fp", "pair", ["x"]) == {"answer": 1}
        assert one.get("fp", "pair", ["y"]) == {"answer": 3}


def test_leases_are_claimed_once_released_and_taken_over_from_dead_processes(location):
    with open_judgment_cache(location) as one, open_judgment_cache(location, lease_seconds=60) as two:
        assert one.claim_leases(["x", "y"]) == ["x", "y"]
        assert two.claim_leases(["x", "y", "z"]) == ["z"]
        one.put_key("x", FINGERPRINT, KIND, {"answer": "X"})
        one.flush()  # stores x and releases its lease in one transaction
        assert two.claim_leases(["x"]) == []
        one.release_leases(["y"])
        assert two.claim_leases(["y"]) == ["y"]
        dead = subprocess.Popen([sys.executable, "-c", "pass"])
        dead.wait()
        host = two.owner.rsplit("/", 2)[0]
        _raw(
            location,
            "INSERT INTO leases (key, owner, expires) VALUES (?, ?, ?)",
            ("orphan", f"{host}/{dead.pid}/f", time.time() + 60),
        )
        _raw(
            location,
            "INSERT INTO leases (key, owner, expires) VALUES (?, ?, ?)",
            ("live", "elsewhere/1/f", time.time() + 60),
        )
        assert two.claim_leases(["orphan", "live"]) == ["orphan"]
        _raw(
            location,
            "INSERT INTO leases (key, owner, expires) VALUES (?, ?, ?)",
            ("old", "elsewhere/1/f", time.time() - 1),
        )
        with pytest.warns(UserWarning, match="held past their expiry"):
            assert two.claim_leases(["old"]) == ["old"]
        _raw(location, "INSERT INTO leases (key, owner, expires) VALUES (?, ?, ?)", ("far", "elsewhere/1/f", 1e300))
        with pytest.warns(UserWarning, match="expires beyond any run's lease"):
            assert two.claim_leases(["far"]) == ["far"]


@pytest.mark.parametrize(
    "payload, problem",
    [("not json", "not JSON"), ("[1, 2]", "JSON list"), ('{"p": NaN}', "not finite"), ('{"p": 1e999}', "not finite")],
)
def test_a_row_rankkit_cannot_have_written_is_an_error_naming_its_key(location, payload, problem):
    key = judgment_key("fp", "pair", ["a"])
    with open_judgment_cache(location):
        pass  # creates the tables
    _raw(
        location,
        "INSERT INTO judgments (key, fingerprint, kind, payload, created) VALUES (?, 'fp', 'pair', ?, 0)",
        (key, payload),
    )
    with open_judgment_cache(location) as cache, pytest.raises(CacheError, match=problem) as caught:
        cache.get("fp", "pair", ["a"])
    assert key in str(caught.value) and caught.value.exit_code == 2


def test_a_memo_over_either_backend_answers_from_the_cache_on_a_rerun(location):
    keys = [[name] for name in "abcdef"]
    paid: list[str] = []

    def ask(indices):
        for position, index in enumerate(indices):
            paid.append(keys[index][0])
            yield position, {"answer": keys[index][0].upper()}

    for _ in range(2):
        with open_judgment_cache(location) as cache:
            memo = JudgmentMemo(cache=cache)
            fetched = memo.fetch(FINGERPRINT, KIND, keys, ask, dict, dict)
            memo.flush()
        assert [answer for answer, _ in fetched] == [{"answer": name.upper()} for name in "abcdef"]
    assert paid == list("abcdef")  # the second run paid nothing


# -- PostgreSQL only: URLs, the server, foreign objects ------------------------------------------------


@pytest.mark.parametrize("url", ["postgresql://h:notaport/db", "postgresql://h/db#x", "postgresql://h/d b"])
def test_a_malformed_url_is_refused_with_exit_code_2(url):
    with pytest.raises(CacheError, match="not a valid PostgreSQL URL") as caught:
        PostgresJudgmentCache(url)
    assert caught.value.exit_code == 2


def test_an_unreachable_server_exits_1_without_showing_the_password(tmp_path):
    reason = unavailable()
    if reason:
        pytest.skip(reason)
    with socket_port() as port:
        url = f"postgresql://someone:s3cret-pw@127.0.0.1:{port}/db"
        with pytest.raises(CacheUnreachable, match="cannot connect") as caught:
            PostgresJudgmentCache(url)
    assert caught.value.exit_code == 1 and "s3cret-pw" not in str(caught.value)
    command = "compare --strategies knockout --judge simulated -q --cache".split() + [url]
    environment = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    result = subprocess.run(
        [sys.executable, "-m", "rankkit", *command],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=tmp_path,
        env=environment,
    )
    assert result.returncode == 1, result.stderr
    assert "cannot connect" in result.stderr and "s3cret-pw" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr


class socket_port:
    """A loopback port nothing listens on, while in use."""

    def __enter__(self) -> int:
        import socket

        self.socket = socket.socket()
        self.socket.bind(("127.0.0.1", 0))
        return self.socket.getsockname()[1]

    def __exit__(self, *exc: object) -> None:
        self.socket.close()


def test_without_psycopg_the_error_says_what_to_install(monkeypatch):
    monkeypatch.setitem(sys.modules, "psycopg", None)  # import psycopg now raises ImportError
    with pytest.raises(CacheError, match=r"rankkit\[postgres\]") as caught:
        PostgresJudgmentCache("postgresql://rankkit:pw@127.0.0.1/db")
    assert caught.value.exit_code == 2 and "pw@" not in str(caught.value)


def test_the_password_is_redacted_wherever_the_url_is_shown():
    assert redacted("postgresql://u:pw@h:5/db?password=pw2&sslmode=require") == (
        "postgresql://u:***@h:5/db?password=***&sslmode=require"
    )


@pytest.mark.parametrize(
    "statement, problem",
    [
        (
            "CREATE FUNCTION swap() RETURNS trigger AS $$ BEGIN RETURN NEW; END $$ LANGUAGE plpgsql; "
            "CREATE TRIGGER t BEFORE INSERT ON judgments FOR EACH ROW EXECUTE FUNCTION swap()",
            "has a trigger",
        ),
        ("CREATE RULE r AS ON INSERT TO judgments DO INSTEAD NOTHING", "has a rule"),
        ("ALTER TABLE judgments ADD CONSTRAINT c CHECK (length(payload) < 3)", "has a constraint"),
        ("ALTER TABLE leases ADD COLUMN extra TEXT", "has other columns"),
        ("ALTER TABLE judgments ENABLE ROW LEVEL SECURITY", "has row security"),
    ],
)
def test_a_database_carrying_what_rankkit_never_creates_is_refused(pg_url, statement, problem):
    with PostgresJudgmentCache(pg_url):
        pass
    _raw(pg_url, statement)
    with pytest.raises(CacheError, match=problem) as caught:
        PostgresJudgmentCache(pg_url)
    assert caught.value.exit_code == 2


def test_psycopg_is_not_imported_by_rankkit_or_the_cli_start_up():
    code = "import sys, rankkit, rankkit.cli, rankkit.judgments.cache_postgres; print('psycopg' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "False"


# -- two processes, one memo; a killed worker ----------------------------------------------------------


def _ask_logging(keys: list[list[str]], calls: Path, seconds: float, stall_after: int | None = None):
    """An ``Ask`` that sleeps ``seconds`` per request and appends one line per request to ``calls``
    once the memo has taken its answer; with ``stall_after``, it hangs before answering more."""

    def ask(indices):
        for position, index in enumerate(indices):
            if stall_after is not None and len(_paid(calls)) >= stall_after:
                Path(f"{calls}.stalled").touch()
                time.sleep(3600)
            time.sleep(seconds)
            yield position, {"answer": keys[index][0].upper()}
            with open(calls, "a") as out:
                out.write(f"{os.getpid()} {keys[index][0]}\n")

    return ask


def _worker(url: str, calls: str, names: list[str], batch: int, seconds: float, stall_after: int | None = None):
    """Run in a spawned process: fetch ``names`` through a memo over the shared cache, ``batch`` keys per call."""
    with open_judgment_cache(url) as cache:
        memo = JudgmentMemo(cache=cache)
        for start in range(0, len(names), batch):
            keys = [[name] for name in names[start : start + batch]]
            memo.fetch(FINGERPRINT, KIND, keys, _ask_logging(keys, Path(calls), seconds, stall_after), dict, dict)
        memo.flush()


def _paid(calls: Path) -> list[str]:
    return [line.split()[1] for line in Path(calls).read_text().splitlines()] if Path(calls).exists() else []


def test_two_processes_sharing_one_postgres_memo_pay_each_judgment_once(pg_url, tmp_path):
    names = [f"k{i:02d}" for i in range(40)]
    calls = tmp_path / "calls.txt"
    context = multiprocessing.get_context("spawn")
    workers = [
        context.Process(target=_worker, args=(pg_url, str(calls), order, 4, 0.02)) for order in (names, names[::-1])
    ]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(180)
        assert worker.exitcode == 0
    paid = _paid(calls)
    assert len(paid) / len(set(paid)) <= 1.02 and sorted(set(paid)) == names
    with PostgresJudgmentCache(pg_url) as cache:
        assert len(cache) == len(names)
        assert cache._count() == len(names) and cache._db.execute("SELECT COUNT(*) FROM leases").fetchone()[0] == 0


def test_kill_9_of_a_worker_loses_nothing_it_paid_for(pg_url, tmp_path):
    names = [f"k{i:02d}" for i in range(12)]
    calls = tmp_path / "calls.txt"
    stalled = Path(f"{calls}.stalled")
    worker = multiprocessing.get_context("spawn").Process(target=_worker, args=(pg_url, str(calls), names, 8, 0.01, 5))
    worker.start()
    deadline = time.monotonic() + 120
    while not stalled.exists() and worker.is_alive() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert stalled.exists()
    # the answers it was paid for reach the memo while it still holds its leases (within LEASED_COMMIT_SECONDS)
    keys = [judgment_key(FINGERPRINT, KIND, [name]) for name in names]
    with PostgresJudgmentCache(pg_url) as cache:
        while sum(row is not None for row in cache.get_keys(keys)) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
    os.kill(worker.pid, signal.SIGKILL)
    worker.join(30)
    paid_before = _paid(calls)
    assert len(paid_before) == 5
    with PostgresJudgmentCache(pg_url) as cache:
        stored = dict(zip(names, cache.get_keys(keys)))
    assert all(stored[name] == {"answer": name.upper()} for name in paid_before)
    # a rerun on this host takes over the dead worker's leases at once and pays only the rest
    rerun_calls = tmp_path / "rerun.txt"
    _worker(pg_url, str(rerun_calls), names, 8, 0.0)
    assert sorted(_paid(rerun_calls)) == sorted(set(names) - set(paid_before))


def test_sqlite_and_postgres_caches_are_both_judgment_caches(pg_url, tmp_path):
    with open_judgment_cache(str(tmp_path / "c.sqlite")) as cache:
        assert type(cache) is JudgmentCache
    with open_judgment_cache(pg_url) as cache:
        assert isinstance(cache, PostgresJudgmentCache) and cache.path == pg_url
