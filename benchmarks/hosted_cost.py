"""USD per ranked task on hosted APIs: direct vs batch + prompt caching (goal P9).

``knockout:order=both`` ranks the bundled sample through the loopback stand-ins of api.openai.com
and the Messages API (``tests/hosted_servers.py``: strict fields, honest judge, usage with cached
tokens, batch lifecycle), priced with rankkit's built-in list prices (``rankkit.judges.hosted.prices``,
gpt-4.1 and claude-sonnet-4-5) from the token accounting of each response::

    python benchmarks/hosted_cost.py

Per provider, three settings:

* ``direct`` — one request at a time, no prompt caching (``prompt_cache=false`` on Anthropic);
* ``batch+cache`` — ``batch=true`` with the caching layout (Anthropic: ``cache_control`` on the
  prompt; OpenAI: automatic), the server caching as the providers do: prompts of at least 1024
  tokens only;
* ``batch+cache (any length)`` — the same with caching from the first token: what caching gives
  once prompts are long enough to be cached (long answers, references, many-shot templates).

**Goal P9**: ``batch+cache`` at most 40% of ``direct`` USD at identical rankings. The batch
discount alone is 50%; caching adds its share only where prompts reach the providers' minimum
cacheable length. Batch and cache discounts are taken to stack (Anthropic documents that they do;
for OpenAI this is an assumption). Writes ``benchmarks/results/hosted_cost.md``.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the loopback servers live in the tests package of this checkout

import rankkit  # noqa: E402
from rankkit.data.tasks import load_tasks  # noqa: E402
from tests.hosted_servers import AnthropicLikeServer, OpenAILikeServer, human_quality  # noqa: E402

SAMPLE = ROOT / "rankkit" / "data" / "sample" / "tasks.jsonl"
RESULTS = ROOT / "benchmarks" / "results" / "hosted_cost.md"
STRATEGY = "knockout:order=both"
KEY = "sk-ant-benchmark"
#: A shared dataset whose judge prompts are long enough to be cached (absent: that table is skipped).
LONG_DATA = ROOT.parent / "shared" / "data" / "newsroom" / "tasks.jsonl"
#: The providers' minimum cacheable prompt (OpenAI: 1024 tokens; Anthropic Sonnet/Opus: 1024).
PROVIDER_CACHE_MIN = 1024


def run_setting(provider: str, tasks, batch: bool, cache_min: int, journal: Path):
    quality = human_quality(tasks)
    if provider == "openai":
        server = OpenAILikeServer(quality, cache_min_tokens=cache_min)
        spec = "openai:gpt-4.1"
    else:
        server = AnthropicLikeServer(quality, api_key=KEY, cache_min_tokens=cache_min)
        spec = "anthropic:claude-sonnet-4-5" + ("" if batch else ",prompt_cache=false")
    spec += ",concurrency=8"
    if batch:
        spec += f",batch=true,batch_poll=0.01,batch_journal={journal}"
    with server:
        result = rankkit.compare(tasks, [STRATEGY], judge=f"{spec},base_url={server.base_url}")
        outside = server.direct_chats
    run = result.strategies[0]
    return run, outside


def table(tasks, scratch: Path) -> list[str]:
    """The P9 rows of one dataset: per provider, direct and the two batch+cache settings."""
    lines = [
        "| provider | setting | USD per task | vs direct | prompt tokens | per judgment | cached "
        "| requests outside batches | rankings as direct |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for provider in ("openai", "anthropic"):
        direct, _ = run_setting(provider, tasks, False, 10**9, scratch / "none.json")
        rows = [("direct", direct, None)]
        for name, minimum in (("batch+cache", PROVIDER_CACHE_MIN), ("batch+cache (any length)", 1)):
            run, outside = run_setting(provider, tasks, True, minimum, scratch / f"{provider}{minimum}.json")
            rows.append((name, run, outside))
        for name, run, outside in rows:
            same = [t.ranking for t in run.tasks] == [t.ranking for t in direct.tasks]
            lines.append(
                f"| {provider} | {name} | {run.cost.usd / len(tasks):.6f} | "
                f"{run.cost.usd / direct.cost.usd:.1%} | {run.cost.prompt_tokens} | "
                f"{run.cost.prompt_tokens / max(1, run.cost.comparisons):.0f} | "
                f"{run.cost.cached_tokens} | {'-' if outside is None else outside} | {same} |"
            )
        print("\n".join(lines[-3:]), flush=True)
    return lines


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--long-data",
        type=Path,
        default=LONG_DATA,
        help="a second task file whose prompts pass the providers' cache minimum (skipped when absent)",
    )
    parser.add_argument("--limit", type=int, default=10, help="tasks of --long-data")
    args = parser.parse_args(argv)
    os.environ["ANTHROPIC_API_KEY"] = KEY
    tasks = load_tasks(SAMPLE)
    lines = [
        "# P9: USD per ranked task, direct vs batch + prompt caching",
        "",
        f"`{STRATEGY}` through the loopback stand-ins of the hosted APIs with an honest judge, built-in "
        "list prices (`rankkit/judges/hosted/prices.py`). Produced by `python benchmarks/hosted_cost.py`.",
        "",
        f"## The bundled sample ({len(tasks)} tasks; its judge prompts are under the providers' "
        f"{PROVIDER_CACHE_MIN}-token cache minimum)",
        "",
    ]
    with tempfile.TemporaryDirectory() as scratch:
        lines += table(tasks, Path(scratch))
        if args.long_data.exists():
            long_tasks = load_tasks(args.long_data)[: args.limit]
            lines += [
                "",
                f"## {args.long_data.parent.name}, first {len(long_tasks)} tasks (shared data: a news article "
                f"and {len(long_tasks[0].candidates)} summaries per task; the article comes first in each "
                "judge prompt, which takes most prompts past the cache minimum)",
                "",
                *table(long_tasks, Path(scratch)),
            ]
    lines += [
        "",
        "Requests outside batches: the openai judge's one continuation probe (the Anthropic judge "
        "needs none). `vs direct` is the ratio of the strategy's `cost.usd`. `prompt tokens` and "
        "`cached` are the strategy's totals from the servers' usage.",
    ]
    text = "\n".join(lines) + "\n"
    RESULTS.write_text(text, encoding="utf-8")
    print(text)


if __name__ == "__main__":
    main()
