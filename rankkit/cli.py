"""The ``rankkit`` command line (click).

Commands: ``compare`` (several strategies on one judge, with metrics), ``rank`` (one strategy,
per-candidate scores out), ``strategies`` (what is registered). Bad input or usage exits with code
2 and a message naming the file, line and field; a judge failure exits 1 after saying that every
judgment already received is cached. Heavy modules are imported inside commands, so
``rankkit --help`` stays fast and never loads torch.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

import click

from rankkit.specs import SpecError
from rankkit.tasks import SAMPLE_DATA, TaskFormatError

TABLE_METRICS = (("pearson", "pearson"), ("spearman", "spearman"), ("kendall", "kendall"),
                 ("task_spearman", "task_spear"), ("pairwise_accuracy", "pair_acc"), ("top1_accuracy", "top1"))


def fail(message: str, code: int = 2) -> None:
    click.echo(f"error: {message}", err=True)
    sys.exit(code)


def guarded(func: Callable) -> Callable:
    """Turn expected errors into a clean message and exit code (2 = bad input, 1 = judge failed)."""
    import functools

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return func(*args, **kwargs)
        except (TaskFormatError, SpecError) as err:
            fail(str(err), 2)
        except FileNotFoundError as err:
            fail(str(err), 2)
        except KeyboardInterrupt:
            fail("interrupted; every judgment received so far is in the cache, rerun to resume", 130)
        except Exception as err:  # a judge or backend failure: say what is safe
            from rankkit.judges.base import JudgeError
            if isinstance(err, (JudgeError, NotImplementedError, ConnectionError, TimeoutError, OSError)):
                fail(f"{type(err).__name__}: {err}\nevery judgment received before the failure is in the cache; "
                     f"rerun the same command to resume", 1)
            raise

    return wrapper


def format_table(rows: Sequence[dict[str, Any]], columns: Sequence[tuple[str, str]]) -> str:
    """A plain fixed-width table: ``columns`` are (key, header) pairs."""

    def cell(value: Any) -> str:
        if value is None or (isinstance(value, float) and math.isnan(value)):
            return "-"
        if isinstance(value, float):
            return f"{value:.3f}"
        return str(value)

    body = [[cell(row.get(key)) for key, _ in columns] for row in rows]
    widths = [max(len(header), *(len(r[i]) for r in body)) if body else len(header)
              for i, (_, header) in enumerate(columns)]
    lines = ["  ".join(h.ljust(w) if i == 0 else h.rjust(w) for i, ((_, h), w) in enumerate(zip(columns, widths)))]
    lines.append("  ".join("-" * w for w in widths))
    for r in body:
        lines.append("  ".join(v.ljust(w) if i == 0 else v.rjust(w) for i, (v, w) in enumerate(zip(r, widths))))
    return "\n".join(lines)


# -- shared options -------------------------------------------------------------------------------

def data_options(func: Callable) -> Callable:
    func = click.option("--data", "data_path", type=click.Path(dir_okay=False), default=None,
                        help="Tasks as .jsonl or long-form .csv (default: the bundled synthetic sample).")(func)
    func = click.option("--criterion", default=None, help="Human score to compare against (default meta.main_score).")(func)
    func = click.option("--limit", type=click.IntRange(min=1), default=None, help="Use only the first N tasks.")(func)
    return func


def judge_options(func: Callable) -> Callable:
    func = click.option("--judge", "judge_spec", default=None,
                        help="Judge spec, e.g. sim:preset=gpt4 or smollm2:mode=logprob (default: smollm2 when installed, else sim).")(func)
    func = click.option("--seed", type=int, default=0, show_default=True, help="Seeds every random choice.")(func)
    func = click.option("--cache", "cache_path", type=click.Path(dir_okay=False), default=None,
                        help="SQLite judgment cache (default .rankkit/cache.sqlite).")(func)
    func = click.option("--no-cache", is_flag=True, help="Do not read or write the persistent cache.")(func)
    func = click.option("--quiet", is_flag=True, help="No progress bar.")(func)
    return func


def load_run_inputs(data_path: str | None, criterion: str | None, limit: int | None,
                    judge_spec: str | None, cache_path: str | None, no_cache: bool):
    """Load tasks, build the judge and open the cache, as every running command does."""
    from rankkit.cache import DEFAULT_CACHE_PATH, JudgmentCache, NullCache
    from rankkit.judges import default_judge_spec, make_judge
    from rankkit.tasks import load_tasks

    path = Path(data_path) if data_path else SAMPLE_DATA
    tasks = load_tasks(path, criterion=criterion, limit=limit)
    spec = judge_spec or default_judge_spec()
    judge = make_judge(spec)
    cache = NullCache() if no_cache else JudgmentCache(cache_path or DEFAULT_CACHE_PATH)
    return path, tasks, spec, judge, cache


def announce_judge(judge: Any, spec: str) -> None:
    note = " — no LLM is called; verdicts derive from the human labels" if judge.simulated else ""
    click.echo(f"judge: {judge.description}{note}", err=True)


# -- commands -------------------------------------------------------------------------------------

@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rankkit")
def main() -> None:
    """Rank candidate answers with an LLM judge, and compare ranking strategies on the same judgments."""


@main.command()
@data_options
@judge_options
@click.option("--strategies", "strategy_specs", default="knockout,individual", show_default=True,
              help="Comma-separated strategy specs, e.g. knockout:debias=true,pairwise,individual.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full results as JSON.")
@click.option("--format", "output_format", type=click.Choice(["table", "json"]), default="table", show_default=True)
@guarded
def compare(data_path, criterion, limit, judge_spec, seed, cache_path, no_cache, quiet,
            strategy_specs, out, output_format) -> None:
    """Run several strategies on the same judge and print how each agrees with the humans."""
    from rankkit.runner import run
    from rankkit.specs import split_list
    from rankkit.strategies import make_strategy

    strategies = [make_strategy(s) for s in split_list(strategy_specs)]
    if not strategies:
        fail("no strategies given")
    path, tasks, spec, judge, cache = load_run_inputs(data_path, criterion, limit, judge_spec, cache_path, no_cache)
    announce_judge(judge, spec)
    try:
        result = run(tasks, strategies, judge, cache, seed=seed, progress=not quiet, judge_spec=spec, data=str(path))
    finally:
        cache.close()
        judge.close()
    payload = result.to_dict()
    if out:
        Path(out).write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    if output_format == "json":
        click.echo(json.dumps({k: v for k, v in payload.items() if k != "task_data"}, indent=1, ensure_ascii=False))
        return
    rows = []
    for s in result.strategies:
        row = {"name": s.name, "comparisons": s.cost.comparisons, "scores": s.cost.scores,
               "judge_calls": s.cost.judge_calls, "cache_hits": s.cost.cache_hits, "seconds": s.seconds}
        row.update(s.metrics)
        rows.append(row)
    columns = [("name", "strategy"), ("comparisons", "comparisons"), ("scores", "grades"),
               ("judge_calls", "judge_calls"), ("cache_hits", "cache_hits"), ("seconds", "seconds"),
               *TABLE_METRICS]
    criterion_name = tasks[0].criterion or "none"
    click.echo(f"{len(tasks)} tasks from {path} · criterion {criterion_name} · judge {judge.description} · seed {seed}")
    click.echo(format_table(rows, columns))
    if out:
        click.echo(f"results written to {out}")


@main.command()
@data_options
@judge_options
@click.option("--strategy", "strategy_spec", default="knockout", show_default=True, help="One strategy spec.")
@click.option("--out", type=click.Path(dir_okay=False), default=None,
              help="Write per-candidate scores as JSONL (default: print them).")
@guarded
def rank(data_path, criterion, limit, judge_spec, seed, cache_path, no_cache, quiet, strategy_spec, out) -> None:
    """Rank every task's candidates with one strategy and write per-candidate scores."""
    from rankkit.runner import run
    from rankkit.strategies import make_strategy

    strategy = make_strategy(strategy_spec)
    path, tasks, spec, judge, cache = load_run_inputs(data_path, criterion, limit, judge_spec, cache_path, no_cache)
    announce_judge(judge, spec)
    try:
        result = run(tasks, [strategy], judge, cache, seed=seed, progress=not quiet, judge_spec=spec, data=str(path))
    finally:
        cache.close()
        judge.close()
    by_id = {t.task_id: t for t in tasks}
    lines = []
    for task_result in result.strategies[0].tasks:
        task = by_id[task_result.task_id]
        human = task.human_scores()
        for position, cid in enumerate(task_result.ranking, start=1):
            row = {"task_id": task.task_id, "candidate_id": cid, "system": task.candidate(cid).system,
                   "strategy": strategy.label, "score": task_result.scores[cid], "rank": position,
                   "champion": cid == task_result.champion, "human": human.get(cid)}
            lines.append(json.dumps(row, ensure_ascii=False))
    text = "\n".join(lines) + "\n"
    if out:
        Path(out).write_text(text, encoding="utf-8")
        click.echo(f"{len(lines)} candidates ranked; written to {out}", err=True)
    else:
        click.echo(text, nl=False)


@main.command("strategies")
def list_strategies() -> None:
    """List the registered strategies with their parameters and defaults."""
    from rankkit.strategies import describe_parameters, strategy_classes

    for name, cls in strategy_classes().items():
        click.echo(f"{name:<12} {cls.description}")
        for param, type_name, default in describe_parameters(cls):
            shown = str(default).lower() if isinstance(default, bool) else default
            click.echo(f"{'':<14}{param}={shown}  ({type_name})")


if __name__ == "__main__":  # pragma: no cover
    main()
