"""Crafted judgment caches against ``rankkit compare``: what a cache file from someone else can do.

Each case fills a cache with an honest run (knockout and bt on the bundled sample, ``sim:preset=gpt4``),
then changes the file the way a hostile or careless sender could, and reruns the same command on it:

* ``flip trigger``: an empty cache with an ``AFTER INSERT`` trigger swapping the winners of what
  the run writes (the rerun after it reads them);
* ``drop trigger``: a ``BEFORE INSERT ... RAISE(IGNORE)`` trigger, so nothing new is ever kept;
* ``lease steal``: a trigger handing every new lease to another host, far in the future;
* ``far lease``: a lease row of another host expiring in the year 2500 on a key the run needs;
* ``view`` / ``extra table`` / ``extra column``: objects rankkit never creates;
* bad payloads: ``5``, ``[]``, ``"x"``, text that is not JSON, a string grade, ``1e999``.

For each it prints the exit code, whether a traceback appeared, the rerun's judge calls and top-1
accuracy (or the first line of the error). ``--tree DIR`` runs another checkout (imported with
``PYTHONPATH=DIR``), e.g. rankkit 0.3.0, for the 'before'.

    python benchmarks/crafted_caches.py [--tree DIR] [--out benchmarks/results/crafted_caches.md]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
COMMAND = ["compare", "--strategies", "knockout,bt", "--judge", "sim:preset=gpt4", "--quiet", "--format", "json"]


def rankkit(tree: Path, cache: Path, timeout: float = 60.0) -> tuple[int | str, str, str]:
    env = {**os.environ, "PYTHONPATH": str(tree), "COLUMNS": "200"}
    try:
        done = subprocess.run(
            [sys.executable, "-m", "rankkit", *COMMAND, "--cache", str(cache)],
            capture_output=True,
            text=True,
            env=env,
            cwd=cache.parent,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return "hung", "", ""
    return done.returncode, done.stdout, done.stderr


def figures(stdout: str) -> tuple[str, str]:
    """The rerun's judge calls and each strategy's top-1 accuracy, from the results JSON."""
    try:
        strategies = json.loads(stdout)["strategies"]
    except (ValueError, KeyError, TypeError):
        return "-", ""
    calls = sum(int(s["judge_calls"]) for s in strategies)
    top1 = ", ".join(f"{s['name']} {float(s['metrics']['top1_accuracy']):.3f}" for s in strategies)
    return str(calls), top1


def _swap(column: str, pairs: list[tuple[str, str]]) -> str:
    """An SQL expression of ``column`` with each pair of strings swapped (through placeholders)."""
    expression = column
    for index, (a, b) in enumerate(pairs):
        hold = f"@{index}@"
        expression = f"replace(replace(replace({expression}, '{a}', '{hold}'), '{b}', '{a}'), '{hold}', '{b}')"
    return expression


def plant(path: Path, statements: list[str], params: list[tuple] | None = None) -> None:
    db = sqlite3.connect(path)
    for index, statement in enumerate(statements):
        db.execute(statement, params[index] if params else ())
    db.commit()
    db.close()


def first_key(path: Path) -> str:
    with sqlite3.connect(path) as db:
        return db.execute("SELECT key FROM judgments WHERE kind = 'verdict' ORDER BY key LIMIT 1").fetchone()[0]


CASES = {
    "flip trigger": lambda p: plant(
        p,
        [
            "DELETE FROM judgments",
            "CREATE TRIGGER flip AFTER INSERT ON judgments BEGIN UPDATE judgments SET payload = "
            + _swap("payload", [('"first"', '"second"'), ('"first_grade"', '"second_grade"')])
            + " WHERE key = NEW.key; END",
        ],
    ),
    "drop trigger": lambda p: plant(
        p,
        [
            "DELETE FROM judgments",
            "CREATE TRIGGER drop_all BEFORE INSERT ON judgments BEGIN SELECT RAISE(IGNORE); END",
        ],
    ),
    "lease steal": lambda p: plant(
        p,
        [
            "DELETE FROM judgments",
            "CREATE TRIGGER steal AFTER INSERT ON leases BEGIN UPDATE leases SET owner = 'elsewhere/1/x', "
            "expires = 1e12 WHERE key = NEW.key; END",
        ],
    ),
    "far lease": lambda p: _far_lease(p),
    "view": lambda p: plant(p, ["CREATE VIEW everything AS SELECT * FROM judgments"]),
    "extra table": lambda p: plant(p, ["CREATE TABLE notes (x TEXT)"]),
    "extra column": lambda p: plant(p, ["ALTER TABLE judgments ADD COLUMN note TEXT"]),
}


def _far_lease(path: Path) -> None:
    with sqlite3.connect(path) as db:
        keys = [key for (key,) in db.execute("SELECT key FROM judgments")]
        db.execute("DELETE FROM judgments")
        db.executemany("INSERT INTO leases VALUES (?, 'elsewhere/1/x', 1.7e10)", [(key,) for key in keys])


for name, payload in {
    "payload 5": "5",
    "payload []": "[]",
    'payload "x"': '"x"',
    "payload not JSON": "{oops",
    "string grade": '{"first_grade": "nine", "second_grade": 1, "winner": "first"}',
    "payload 1e999": '{"first_grade": 1e999, "second_grade": 1, "winner": "first"}',
}.items():
    CASES[name] = lambda p, payload=payload: plant(
        p, ["UPDATE judgments SET payload = ? WHERE key = ?"], [(payload, first_key(p))]
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--tree", type=Path, default=ROOT)
    parser.add_argument("--out", type=Path)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp())
    honest = work / "honest.sqlite"
    code, out, err = rankkit(args.tree, honest)
    calls, top1 = figures(out)
    commit = subprocess.run(
        ["git", "-C", str(args.tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True
    )
    lines = [
        f"# Crafted caches against `rankkit {' '.join(COMMAND)}` (commit {commit.stdout.strip() or '?'})",
        "",
        f"Honest cache filled: exit {code}, judge calls {calls}, top-1 {top1}.",
        "",
        "| case | exit | traceback | rerun judge calls | rerun top-1 / error |",
        "|---|---|---|---|---|",
    ]
    for name, craft in CASES.items():
        path = work / (re.sub(r"\W+", "_", name) + ".sqlite")
        shutil.copy(honest, path)
        craft(path)
        code, out, err = rankkit(args.tree, path)
        if code == 0:  # a second rerun shows what the first left behind (drop trigger: pays again)
            code, out, err = rankkit(args.tree, path)
        calls, top1 = figures(out)
        error = next((line for line in err.splitlines() if line.startswith("error")), "")
        error = error.replace(str(path), path.name)[:110]
        lines.append(f"| {name} | {code} | {'yes' if 'Traceback' in err else 'no'} | {calls} | {top1 or error} |")
    shutil.rmtree(work)
    print("\n".join(lines))
    if args.out:
        args.out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
