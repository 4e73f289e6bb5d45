"""Batches bought by a killed-and-resumed batch run, and by a run whose batch creation reply is lost.

Against the test suite's loopback OpenAI and Anthropic stand-ins (``tests/hosted_servers.py``,
127.0.0.1 only), with explanations that vary from call to call (sampling, no seed), the CLI runs::

    rankkit rank --data TASKS --strategy knockout --judge PROVIDER:MODEL,base_url=...,batch=true,...

on one task of 4 answers (a fresh run buys one batch per step). Three scenarios per provider:

* fresh: the run alone; the batches it buys.
* resumed: a run killed (SIGKILL) once its second batch is created (that batch held in progress),
  then the same command again; the batches the resumed run buys. Nothing paid twice means
  resumed = fresh - 2.
* dropped: the reply to the first batch creation is dropped after the server accepted it; the
  batches created (goal: as many as fresh).

Usage: ``python benchmarks/batch_resume.py [--rankkit-tree DIR]`` (the tree whose ``rankkit`` the
CLI runs: measure a base commit with a worktree of it, and ``--out`` elsewhere). Figures are
printed and written to ``benchmarks/results/batch_resume.md`` (rankkit 0.3.0's: ``batch_resume_0.3.0.md``).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from rankkit.data.tasks import load_tasks  # noqa: E402
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, human_quality  # noqa: E402

KEY = "sk-ant-batch-bench"
SAMPLE = ROOT / "rankkit" / "data" / "sample" / "tasks.jsonl"


def four_answer_task(folder: Path) -> tuple[Path, list]:
    """The first 4-answer task of the bundled sample, as its own task file."""
    lines = [line for line in SAMPLE.read_text().splitlines() if line.strip()]
    chosen = next(line for line in lines if len(json.loads(line)["candidates"]) == 4)
    path = folder / "tasks.jsonl"
    path.write_text(chosen + "\n")
    return path, load_tasks(path)


def make_server(provider: str, tasks: list):
    server = (
        OpenAILikeServer(human_quality(tasks))
        if provider == "openai"
        else AnthropicLikeServer(human_quality(tasks), api_key=KEY)
    )
    server.vary_explanations = True
    server.server.handle_error = lambda *args: None  # a reply cut by the SIGKILL is expected, not news
    return server


def command(provider: str, server, folder: Path, tasks_path: Path) -> list[str]:
    model = "gpt-4.1,price_in=2,price_out=8" if provider == "openai" else "claude-sonnet-4-5,price_in=3,price_out=15"
    spec = (
        f"{provider}:{model},base_url={server.base_url},backoff=0.01,batch=true,batch_poll=0.01,"
        f"batch_journal={folder / 'batches.json'}"
    )
    return [sys.executable, "-m", "rankkit", "rank", "--data", str(tasks_path), "--strategy", "knockout"] + [
        "--judge",
        spec,
        "--cache",
        str(folder / "cache.sqlite"),
        "--quiet",
    ]


def run(args: list[str], tree: Path, kill_when=None) -> int:
    """Run the CLI from ``tree``; with ``kill_when``, SIGKILL it once ``kill_when()`` holds."""
    env = {**os.environ, "PYTHONPATH": str(tree), "ANTHROPIC_API_KEY": KEY}
    child = subprocess.Popen(args, env=env, cwd=tree, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    if kill_when is None:
        _, err = child.communicate(timeout=300)
        if child.returncode != 0:
            raise SystemExit(f"run failed ({child.returncode}): {err[-2000:]}")
        return child.returncode
    deadline = time.monotonic() + 120
    while not kill_when():
        if child.poll() is not None or time.monotonic() > deadline:
            raise SystemExit(f"the run ended before it could be killed: {child.stderr.read()[-2000:]}")
        time.sleep(0.01)
    child.send_signal(signal.SIGKILL)
    child.wait()
    return child.returncode


def scenario(provider: str, tree: Path, name: str) -> dict[str, int]:
    with tempfile.TemporaryDirectory() as temporary:
        folder = Path(temporary)
        tasks_path, tasks = four_answer_task(folder)
        with make_server(provider, tasks) as server:
            args = command(provider, server, folder, tasks_path)
            if name == "fresh":
                run(args, tree)
                return {"bought": server.batches_created}
            if name == "dropped":
                server.drop_creations = 1
                run(args, tree)
                return {"bought": server.batches_created}
            server.hold_from = 2  # the second batch stays in progress until the kill
            run(args, tree, kill_when=lambda: server.batches_created >= 2)
            before = server.batches_created
            server.hold_from = None
            run(args, tree)
            return {"killed run": before, "bought": server.batches_created - before}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rankkit-tree", type=Path, default=ROOT, help="the tree whose rankkit the CLI runs")
    parser.add_argument("--out", type=Path, default=ROOT / "benchmarks" / "results" / "batch_resume.md")
    args = parser.parse_args()
    tree = args.rankkit_tree.resolve()
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    rows = [
        f"# Batches bought (rankkit at {commit.stdout.strip()}, knockout, 1 task of 4 answers, varying explanations)",
        "",
        "| provider | fresh run | killed run (before SIGKILL) | resumed run | dropped creation reply |",
        "|---|---|---|---|---|",
    ]
    for provider in ("openai", "anthropic"):
        fresh = scenario(provider, tree, "fresh")["bought"]
        resumed = scenario(provider, tree, "resumed")
        dropped = scenario(provider, tree, "dropped")["bought"]
        rows.append(f"| {provider} | {fresh} | {resumed['killed run']} | {resumed['bought']} | {dropped} |")
        print(rows[-1], flush=True)
    text = "\n".join(rows) + "\n"
    print(text)
    args.out.write_text(text)


if __name__ == "__main__":
    main()
