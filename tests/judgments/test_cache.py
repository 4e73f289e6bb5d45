"""The SQLite judgment cache: persistence, keys, WAL, two processes, and the caches it refuses."""

from __future__ import annotations

import os
import re
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from rankkit.data.tasks import SAMPLE_DATA
from rankkit.judgments.cache import ELSEWHERE, WITHOUT, CacheError, JudgmentCache, NullCache


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
        from rankkit.judgments.cache import JudgmentCache
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


# -- results never depend on the cache (issue 11, item 1) ---------------------------------------

SHARED_DATASETS = [
    "usr_topicalchat",
    "wmt23_sxs_mqm_ende",
    "wmt21_mqm_ted_ende",
    "realsumm",
    "newsroom",
    "llmbar_natural",
    "llmbar_faireval",
    "llmbar_llmeval2",
    "arena_hard_v01_arena_elo",
]


def _decisions(result):
    return [
        (s.name, s.metrics, [(t.task_id, t.scores, t.ranking, [c.to_dict() for c in t.comparisons]) for t in s.tasks])
        for s in result.strategies
    ]


@pytest.mark.parametrize("name", SHARED_DATASETS)
def test_cold_warm_and_no_cache_runs_are_identical(name, tmp_path):
    from rankkit import load_tasks, make_judge, make_strategy, run
    from tests.conftest import shared_dataset

    tasks = load_tasks(shared_dataset(name), limit=12)
    strategies = [make_strategy(s) for s in ("bt", "individual", "knockout:order=both")]
    judge = make_judge("sim:preset=chatgpt")
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        cold = run(tasks, strategies, judge, cache, seed=3, progress=False)
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        warm = run(tasks, strategies, judge, cache, seed=3, progress=False)
    none = run(tasks, strategies, judge, None, seed=3, progress=False)
    assert _decisions(cold) == _decisions(warm) == _decisions(none)
    assert sum(s.cost.judge_calls for s in warm.strategies) == 0
    assert sum(s.cost.judge_calls for s in cold.strategies) == sum(s.cost.judge_calls for s in none.strategies)


def test_candidates_with_identical_texts_do_not_share_a_simulated_verdict(tmp_path):
    from rankkit import make_strategy, run
    from rankkit.data.tasks import Candidate, Task
    from rankkit.judges.simulated.sim import FixedAccuracyJudge

    # c1 and c2 say the same thing but humans scored them differently: the simulator's verdicts
    # depend on that, so a cached verdict for one must not be served for the other.
    candidates = (
        Candidate("c0", "alpha", human={"s": 1.0}),
        Candidate("c1", "same", human={"s": 5.0}),
        Candidate("c2", "same", human={"s": 0.0}),
        Candidate("c3", "omega", human={"s": 3.0}),
    )
    task = Task("t", "q", candidates, criterion="s", scale=(0.0, 5.0))
    judge = FixedAccuracyJudge(accuracy=0.9, noise=0.5)
    with JudgmentCache(tmp_path / "c.sqlite") as cache:
        cold = run([task], [make_strategy("bt"), make_strategy("individual")], judge, cache, progress=False)
        assert sum(s.cost.cache_hits for s in cold.strategies) == 0
        warm = run([task], [make_strategy("bt"), make_strategy("individual")], judge, cache, progress=False)
    assert _decisions(cold) == _decisions(warm)


# -- a cache that cannot be used fails at once, naming the path (issue 11, item 6) ----------------


class ReadOnlyCache(JudgmentCache):
    """Opens the file through SQLite's read-only URI: a read-only cache even for root, whom
    file permissions do not stop."""

    def _connect(self) -> sqlite3.Connection:
        return sqlite3.connect(f"file:{self.path}?mode=ro", uri=True, isolation_level=None)


def cache_error(path) -> CacheError:
    with pytest.raises(CacheError) as info:
        JudgmentCache(path)
    assert info.value.path == str(path) and str(path) in str(info.value)
    return info.value


def filled_cache(path):
    with JudgmentCache(path) as cache:
        for i in range(300):
            cache.put("fp", "pair", [str(i), "x" * 100], {"v": i})
    return path


def test_garbage_file_is_not_a_rankkit_cache(cache_path):
    cache_path.write_bytes(b"these are not the bytes of an SQLite database " * 50)
    assert f"delete it or {ELSEWHERE}" in str(cache_error(cache_path))


def test_truncated_cache_is_reported(cache_path):
    data = filled_cache(cache_path).read_bytes()
    cache_path.write_bytes(data[: len(data) // 2])
    err = cache_error(cache_path)
    assert "damaged, or not a rankkit cache" in err.problem


def test_another_programs_database_is_refused_and_left_untouched(cache_path):
    db = sqlite3.connect(cache_path)
    db.execute("CREATE TABLE people (name TEXT)")
    db.commit()
    db.close()
    err = cache_error(cache_path)
    assert "not a rankkit cache" in err.problem and "delete" not in err.advice
    tables = sqlite3.connect(cache_path).execute("SELECT name FROM sqlite_master").fetchall()
    assert tables == [("people",)]


def test_read_only_cache_fails_at_construction(cache_path):
    filled_cache(cache_path)
    advice = f"make them writable, {ELSEWHERE}, or {WITHOUT}"
    with pytest.raises(CacheError, match=re.escape(f"read-only (the file or its folder); {advice}")):
        ReadOnlyCache(cache_path)


@pytest.mark.skipif(
    not hasattr(os, "geteuid") or os.geteuid() == 0,
    reason="root writes through file permissions; test_read_only_cache_fails_at_construction "
    "covers the read-only path with SQLite's mode=ro",
)
def test_read_only_file_and_folder_by_permissions(tmp_path):
    path = filled_cache(tmp_path / "ro" / "cache.sqlite")
    path.chmod(0o444)
    assert "read-only" in cache_error(path).problem
    folder = tmp_path / "locked"
    folder.mkdir()
    folder.chmod(0o555)
    try:
        assert "cannot open or create" in cache_error(folder / "cache.sqlite").problem
    finally:
        folder.chmod(0o755)


def test_folder_that_cannot_be_created(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("in the way")
    assert "cannot create its folder" in cache_error(blocker / "cache.sqlite").problem


def test_directory_given_as_the_cache(tmp_path):
    assert cache_error(tmp_path).problem == "is a directory"


def test_deleted_write_ahead_log_while_another_connection_is_open(cache_path):
    first = JudgmentCache(cache_path)
    try:
        first.put("fp", "pair", ["x"], {"v": 1})
        Path(f"{cache_path}-wal").unlink()
        assert "-wal or -shm file was deleted" in cache_error(cache_path).advice
    finally:
        first.close()


def test_writable_cache_passes_the_probe_and_keeps_nothing_of_it(cache_path):
    filled_cache(cache_path)
    with JudgmentCache(cache_path) as cache:
        assert len(cache) == 300


def test_errors_from_a_library_call_name_the_argument_as_well_as_the_flag(tmp_path):
    """A library user never typed --cache: the advice names cache= (and the flag, for the CLI)."""
    import rankkit

    with pytest.raises(CacheError) as raised:
        rankkit.compare(SAMPLE_DATA, strategies=["knockout"], judge="sim", cache=tmp_path)
    assert "cache=" in raised.value.advice and "--cache" in raised.value.advice
    assert "cache=None" in WITHOUT and "--no-cache" in WITHOUT


# -- a cache file is untrusted input (issue 37): nothing in it but rankkit's own tables and rows ------


def _sample_run(cache: Path, **kwargs):
    from rankkit import load_tasks, make_judge, make_strategy, run

    tasks = load_tasks(SAMPLE_DATA, limit=3)
    strategies = [make_strategy(s) for s in ("knockout", "bt")]
    with JudgmentCache(cache, **kwargs) as opened:
        return run(tasks, strategies, make_judge("sim:preset=gpt4"), opened, seed=0, progress=False)


def _plant(path: Path, *statements: str, params: tuple = ()) -> None:
    db = sqlite3.connect(path)
    for statement in statements:
        db.execute(statement, params if "?" in statement else ())
    db.commit()
    db.close()


@pytest.fixture
def honest_cache(tmp_path) -> Path:
    path = tmp_path / "honest.sqlite"
    _sample_run(path)
    return path


CRAFTED_OBJECTS = {
    "flip trigger": (
        "CREATE TRIGGER flip AFTER INSERT ON judgments BEGIN UPDATE judgments SET payload = "
        "replace(payload, '\"first\"', '\"second\"') WHERE key = NEW.key; END",
        "trigger 'flip' on 'judgments'",
    ),
    "drop trigger": (
        "CREATE TRIGGER drop_all BEFORE INSERT ON judgments BEGIN SELECT RAISE(IGNORE); END",
        "trigger 'drop_all'",
    ),
    "lease steal trigger": (
        "CREATE TRIGGER steal AFTER INSERT ON leases BEGIN UPDATE leases SET owner = 'far/1/x' "
        "WHERE key = NEW.key; END",
        "trigger 'steal'",
    ),
    "view": ("CREATE VIEW everything AS SELECT * FROM judgments", "view 'everything'"),
    "extra table": ("CREATE TABLE notes (x TEXT)", "table 'notes'"),
    "extra index": ("CREATE INDEX by_kind ON judgments (kind)", "index 'by_kind'"),
    "extra column": ("ALTER TABLE judgments ADD COLUMN note TEXT", "the table 'judgments' with other columns"),
}

#: Tables whose columns ``PRAGMA table_info`` reports as rankkit's, which differ only in a constraint
#: or a generated column: a CHECK makes every write of a paid answer fail after the judge was paid.
CRAFTED_TABLES = {
    "check constraint": "CHECK (instr(payload, 'first') = 0)",
    "generated column": "shadow TEXT GENERATED ALWAYS AS (payload) VIRTUAL",
}


@pytest.mark.parametrize("case", CRAFTED_TABLES)
def test_a_table_with_a_constraint_or_generated_column_rankkit_never_creates_is_refused(case, cache_path):
    _plant(
        cache_path,
        "CREATE TABLE judgments (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, kind TEXT NOT NULL, "
        f"payload TEXT NOT NULL, created REAL NOT NULL, {CRAFTED_TABLES[case]})",
    )
    err = cache_error(cache_path)
    assert err.exit_code == 2 and "the table 'judgments' with other columns or constraints" in err.problem


@pytest.mark.parametrize("case", CRAFTED_OBJECTS)
def test_a_cache_holding_what_rankkit_never_creates_is_refused_untouched(case, honest_cache):
    statement, named = CRAFTED_OBJECTS[case]
    _plant(honest_cache, statement)
    before = honest_cache.read_bytes()
    err = cache_error(honest_cache)
    assert err.exit_code == 2 and named in err.problem and "never creates" in err.problem
    assert honest_cache.read_bytes() == before  # refused before anything was written


def test_a_refused_cache_exits_2_on_the_command_line_without_a_traceback(honest_cache, tmp_path):
    _plant(honest_cache, CRAFTED_OBJECTS["flip trigger"][0])
    done = subprocess.run(
        [sys.executable, "-m", "rankkit", "compare", "--strategies", "knockout", "--judge", "sim:preset=gpt4",
         "--cache", str(honest_cache), "--quiet"],
        capture_output=True, text=True, cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert "trigger 'flip'" in done.stderr and str(honest_cache) in done.stderr


def test_connections_run_with_trusted_schema_off(cache_path):
    with JudgmentCache(cache_path) as cache:
        assert cache._db.execute("PRAGMA trusted_schema").fetchone()[0] == 0


def test_the_caches_rankkit_itself_made_are_accepted(honest_cache):
    first = _sample_run(honest_cache)
    assert sum(s.cost.judge_calls for s in first.strategies) == 0  # every judgment served from the file
    legacy = honest_cache.with_name("legacy.sqlite")  # 0.1's caches had no leases table
    _plant(legacy, "CREATE TABLE judgments (key TEXT PRIMARY KEY, fingerprint TEXT NOT NULL, kind TEXT NOT NULL, "
           "payload TEXT NOT NULL, created REAL NOT NULL)")  # fmt: skip
    JudgmentCache(legacy).close()


def _first_verdict_key(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT key FROM judgments WHERE kind = 'verdict' ORDER BY key LIMIT 1").fetchone()[0]


BAD_PAYLOADS = {
    "a number": ("5", "is a JSON int, not an object"),
    "a list": ("[]", "is a JSON list, not an object"),
    "a string": ('"x"', "is a JSON str, not an object"),
    "not JSON": ("{oops", "is not JSON"),
    "NaN": ('{"first_grade": NaN, "second_grade": 1, "winner": "first"}', "not finite (NaN)"),
    "1e999": ('{"first_grade": 1e999, "second_grade": 1, "winner": "first"}', "not finite (inf)"),
    "string grade": ('{"first_grade": "nine", "second_grade": 1, "winner": "first"}', "first_grade is 'nine'"),
    "boolean grade": ('{"first_grade": true, "second_grade": 1, "winner": "first"}', "first_grade is True"),
    "unknown winner": ('{"first_grade": 1, "second_grade": 1, "winner": "both"}', "'both' is not a valid Winner"),
    "missing field": ('{"second_grade": 1, "winner": "first"}', "missing field 'first_grade'"),
    "probability 2": ('{"first_grade": 1, "second_grade": 1, "winner": "first", "probability": 2}', "probability is 2"),
    "raw not text": ('{"first_grade": 1, "second_grade": 1, "winner": "first", "raw": 5}', "raw is 5, not text"),
}


@pytest.mark.parametrize("case", BAD_PAYLOADS)
def test_a_row_rankkit_cannot_have_written_is_an_error_naming_its_key(case, honest_cache):
    payload, problem = BAD_PAYLOADS[case]
    key = _first_verdict_key(honest_cache)
    _plant(honest_cache, "UPDATE judgments SET payload = ? WHERE key = ?", params=(payload, key))
    with pytest.raises(CacheError) as raised:
        _sample_run(honest_cache)
    assert raised.value.exit_code == 2 and key in str(raised.value) and problem in str(raised.value)


def test_a_payload_stored_as_a_number_is_named_too(honest_cache):
    key = _first_verdict_key(honest_cache)
    _plant(honest_cache, "UPDATE judgments SET payload = 5 WHERE key = ?", params=(key,))
    with pytest.raises(CacheError, match=f"row {key} cannot be read: its payload is a JSON int, not an object"):
        _sample_run(honest_cache)


def test_a_lease_no_run_can_have_written_is_taken_over_with_a_warning(honest_cache):
    with sqlite3.connect(honest_cache) as db:
        keys = [key for (key,) in db.execute("SELECT key FROM judgments")]
        db.execute("DELETE FROM judgments")
        db.executemany("INSERT INTO leases VALUES (?, 'elsewhere/1/x', 1.7e10)", [(key,) for key in keys])
    with pytest.warns(UserWarning, match="expires beyond any run's lease"):
        again = _sample_run(honest_cache, lease_seconds=5)
    assert sum(s.cost.judge_calls for s in again.strategies) == len(keys)  # asked, not waited on for ever
