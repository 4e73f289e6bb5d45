"""The ``rankkit`` command line: one click command per task a user runs.

Commands: ``compare`` (several strategies on one judge, with metrics), ``rank`` (one strategy,
per-candidate scores out), ``strategies`` (what is registered), ``judge-report``, ``record``,
``leaderboard`` (and ``leaderboard add``), ``analyze``, ``rejudge``, ``plot``, ``report`` and ``samples``. Each command is
thin: it parses options and calls one library function. What the commands share — options, the
mapping of errors to exit codes (2 bad input, 1 judge or server failure), the judging session —
is :mod:`rankkit.cli_support`. Heavy modules are imported inside commands, so ``rankkit --help``
stays fast and never loads torch.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import click

from rankkit.cli_support import (
    OUTPUT_FORMATS,
    allow_failures_option,
    check_judgment_count,
    check_parse_failures,
    config_option,
    current_columns,
    current_limits,
    data_options,
    dry_run_option,
    fail,
    given_limits,
    guarded,
    judge_caveat,
    judge_options,
    judging,
    judgment_limit,
    note_suspicious,
    prepare_output,
    print_dry_run,
    say,
    scale_options,
    size_limit_options,
    trust_file_judge_option,
)
from rankkit.formatting import inert_json, render
from rankkit.order import ORDERS

TABLE_METRICS = tuple(
    (name, name) for name in ("pearson", "spearman", "kendall", "task_spearman", "pairwise_accuracy", "top1_accuracy")
)
#: The columns of `rankkit compare`: what each strategy used (comparisons + grades), where each
#: judgment came from (judge_calls = new and paid for, cache_hits = the persistent cache, shared_hits
#: = reused inside this run), its time and its agreement with the humans.
COMPARE_COLUMNS = (
    ("name", "strategy"),
    ("comparisons", "comparisons"),
    ("grades", "grades"),
    ("judge_calls", "judge_calls"),
    ("cache_hits", "cache_hits"),
    ("shared_hits", "shared_hits"),
    ("seconds", "seconds"),
    *TABLE_METRICS,
)
#: Added after ``shared_hits`` when any strategy has judgments that failed to parse (counted as ties).
FAILURE_COLUMN = ("parse_failures", "parse_failures")
#: Added before ``seconds`` when the judge is priced: what the strategy's new judgments cost in USD.
USD_COLUMN = ("usd", "usd")
#: What the default table leaves out, first listed first, until it fits the terminal (``--format wide`` keeps all).
FOLDABLE_COLUMNS = ("kendall", "pearson", ("comparisons", "grades"), "top1_accuracy", "cache_hits", "task_spearman")
#: The columns of `rankkit rank`, in the order of its JSONL rows (``champion`` only for a strategy
#: that crowns one: see :func:`rank_columns`).
RANK_COLUMNS = tuple(
    (key, key) for key in ("task_id", "candidate_id", "system", "strategy", "score", "rank", "champion", "human")
)


def rank_columns(strategy_run: Any) -> tuple[tuple[str, str], ...]:
    """RANK_COLUMNS without ``champion`` for a strategy that crowns no champion (a column that is
    false everywhere would only suggest that no candidate won)."""
    if any(task.champion is not None for task in strategy_run.tasks):
        return RANK_COLUMNS
    return tuple(column for column in RANK_COLUMNS if column[0] != "champion")


def champion_note(strategy_run: Any) -> str:
    """A one-line note when a task's champion is not ranked first ("" otherwise).

    A tournament's scores are means over the rounds a candidate played (as in the paper), so the
    champion, who won its last match, can score below a candidate knocked out later with better
    grades; the ``champion`` column says who won.
    """
    tasks = [task for task in strategy_run.tasks if task.champion is not None]
    unranked = [task.task_id for task in tasks if task.ranking and task.ranking[0] != task.champion]
    if not unranked:
        return ""
    shown = ", ".join(unranked[:3]) + (", ..." if len(unranked) > 3 else "")
    return (
        f"note: in {len(unranked)} of {len(tasks)} tasks ({shown}) the {strategy_run.name} champion is not "
        f"ranked first: scores are means over the rounds played; the champion column marks the winner"
    )


def compare_rows(result: Any) -> list[dict[str, Any]]:
    """One row per strategy of a run, keyed as in COMPARE_COLUMNS; ``usd`` reads ``paid by <strategy>``
    where the strategy made no judgment and reused those of strategies before it."""
    from rankkit.bill import payers, usd_cell

    paid_by = payers(result)
    rows = []
    for s in result.strategies:
        row = {
            "name": s.name,
            "comparisons": s.cost.comparisons,
            "grades": s.cost.grades,
            "judge_calls": s.cost.judge_calls,
            "cache_hits": s.cost.cache_hits,
            "shared_hits": s.cost.shared_hits,
            "parse_failures": s.cost.parse_failures,
            "usd": usd_cell(s, paid_by.get(s.name, [])),
            "seconds": s.seconds,
        }
        row.update(s.metrics)
        rows.append(row)
    return rows


def total_row(total: dict[str, Any]) -> dict[str, Any]:
    """The row under the strategies: what the whole run paid, each judgment counted once
    (:func:`rankkit.bill.run_total`), its seconds the run's wall time."""
    return {
        "name": "total",
        "judge_calls": total["judge_calls"],
        "cache_hits": total["cache_hits"],
        "shared_hits": total["shared_hits"],
        "usd": round(total["usd"], 6),
        "seconds": total["wall_seconds"],
    }


def compare_columns(rows: list[dict[str, Any]], priced: bool = False) -> tuple[tuple[str, str], ...]:
    """COMPARE_COLUMNS, with the ``parse_failures`` column when any strategy has failed judgments
    and the ``usd`` column (before ``seconds``) when the judge is priced."""
    columns = COMPARE_COLUMNS
    if priced or any(isinstance(row.get("usd"), float) and row["usd"] for row in rows):
        at = [key for key, _ in columns].index("seconds")
        columns = (*columns[:at], USD_COLUMN, *columns[at:])
    if not any(row.get("parse_failures") for row in rows):
        return columns
    at = [key for key, _ in columns].index("shared_hits") + 1
    return (*columns[:at], FAILURE_COLUMN, *columns[at:])


def compare_table(result: Any, output_format: str, width: int) -> tuple[str, list[str]]:
    """The compare table in ``output_format`` and the lines to print under it.

    ``table`` drops :data:`FOLDABLE_COLUMNS` (first listed first) until it fits ``width``
    characters and says which; ``wide`` is the table with every column. Both, and ``markdown``,
    end with the total row; ``csv`` is one row per strategy, for programs.
    """
    from rankkit.bill import is_priced, price_note, run_total, total_line
    from rankkit.formatting import fit_columns

    rows = compare_rows(result)
    priced = is_priced(result)
    columns = compare_columns(rows, priced)
    if output_format == "csv":  # for programs: the USD as a number everywhere
        for row, strategy_run in zip(rows, result.strategies):
            row["usd"] = round(strategy_run.cost.usd, 6)
        return render(rows, columns, "csv"), []
    total = run_total(result)
    rows.append(total_row(total))
    notes = [total_line(total, priced)]
    if USD_COLUMN in columns and any(isinstance(row["usd"], str) for row in rows):
        notes.append("paid by X: every judgment the strategy used was made, and paid for, by X earlier in this run")
    if output_format == "table":
        columns, dropped = fit_columns(rows, columns, width, FOLDABLE_COLUMNS)
        if dropped:
            notes.append(f"not shown, to fit {width} columns: {', '.join(dropped)} (--format wide shows them)")
    note = price_note(result)
    if note:
        notes.append(note)
    return render(rows, columns, "markdown" if output_format == "markdown" else "table"), notes


# -- commands -------------------------------------------------------------------------------------


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rankkit")
def main() -> None:
    """Rank candidate answers with an LLM judge, and compare ranking strategies on the same judgments."""


@main.command()
@data_options
@judge_options
@click.option(
    "--strategies",
    "strategy_specs",
    default="knockout,individual",
    show_default=True,
    help="Comma-separated strategy specs, e.g. knockout:order=both,pairwise,individual.",
)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full results as JSON.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice((*OUTPUT_FORMATS, "wide")),
    default="table",
    show_default=True,
    help="table (for people, fitted to the terminal), wide (the table with every column), "
    "json (the results without task texts), csv or markdown (the table).",
)
@dry_run_option
@scale_options
@allow_failures_option
@config_option
@guarded
def compare(
    data_path,
    criterion,
    limit,
    judge_spec,
    seed,
    cache_path,
    no_cache,
    quiet,
    strategy_specs,
    out,
    output_format,
    dry_run,
    max_judgments,
    yes,
    allow_failures,
) -> None:
    """Run several strategies on the same judge and print how each agrees with the humans."""
    from rankkit.api import compare as compare_strategies
    from rankkit.specs import split_list
    from rankkit.strategies import make_strategy

    strategies = [make_strategy(s) for s in split_list(strategy_specs)]
    if not strategies:
        fail("no strategies given")
    if dry_run:
        print_dry_run(data_path, criterion, limit, judge_spec, seed, cache_path, no_cache, strategies, output_format)
        return
    prepare_output(out)
    with judging(data_path, criterion, limit, judge_spec, cache_path, no_cache) as inputs:
        path, tasks, spec = inputs.path, inputs.tasks, inputs.spec
        most = judgment_limit(tasks, strategies, inputs.judge, yes, max_judgments)
        result = compare_strategies(
            tasks,
            strategies,
            inputs.judge,
            inputs.cache,
            seed=seed,
            progress=not quiet,
            data=str(path),
            max_judgments=most,
        )
    from rankkit.cache import DEFAULT_CACHE_PATH
    from rankkit.config import config_record

    result.config = config_record(
        data=data_path,
        criterion=tasks[0].criterion,
        limit=limit,
        columns=current_columns(),
        judge=spec,
        strategies=strategies,
        seed=seed,
        cache=None if no_cache else cache_path or DEFAULT_CACHE_PATH,
        size_limits=given_limits(),
    )
    # The results JSON holds every match (65 MB at 80k comparisons): build it only to write it.
    payload = result.to_dict() if out or output_format == "json" else None
    if out:
        Path(out).write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    if output_format == "json":
        click.echo(
            inert_json(json.dumps({k: v for k, v in payload.items() if k != "task_data"}, indent=1, ensure_ascii=False))
        )
        note_suspicious(result)
        check_parse_failures(result, allow_failures)
        return
    from rankkit.formatting import terminal_width

    table, notes = compare_table(result, output_format, terminal_width())
    if output_format == "csv":  # nothing but the table on stdout, for a program to read
        click.echo(table)
        if out:
            say(f"results written to {out}", err=True)
        note_suspicious(result)
        check_parse_failures(result, allow_failures)
        return
    criterion_name = tasks[0].criterion or "none"
    say(f"{len(tasks)} tasks from {path} · criterion {criterion_name} · judge {result.judge.description} · seed {seed}")
    caveat = judge_caveat(spec)
    if caveat:
        say(caveat)
    say(("\n" if output_format == "markdown" else "") + table)
    if notes and output_format == "markdown":
        say("")  # a line right under a Markdown table would be read as one of its rows
    for line in notes:
        say(line)
    if out:
        say(f"results written to {out}")
    note_suspicious(result)
    check_parse_failures(result, allow_failures)


@main.command()
@data_options
@judge_options
@click.option("--strategy", "strategy_spec", default="knockout", show_default=True, help="One strategy spec.")
@click.option(
    "--out",
    type=click.Path(dir_okay=False),
    default=None,
    help="Write per-candidate scores to this file instead of printing them.",
)
@click.option(
    "--format",
    "output_format",
    type=click.Choice(["jsonl", *OUTPUT_FORMATS]),
    default="jsonl",
    show_default=True,
    help="jsonl (one object per candidate), table, json (a list), csv or markdown.",
)
@dry_run_option
@scale_options
@allow_failures_option
@config_option
@guarded
def rank(
    data_path,
    criterion,
    limit,
    judge_spec,
    seed,
    cache_path,
    no_cache,
    quiet,
    strategy_spec,
    out,
    output_format,
    dry_run,
    max_judgments,
    yes,
    allow_failures,
) -> None:
    """Rank every task's candidates with one strategy and write per-candidate scores."""
    from rankkit.api import compare as compare_strategies
    from rankkit.strategies import make_strategy

    strategy = make_strategy(strategy_spec)
    if dry_run:
        print_dry_run(data_path, criterion, limit, judge_spec, seed, cache_path, no_cache, [strategy], output_format)
        return
    prepare_output(out)
    with judging(data_path, criterion, limit, judge_spec, cache_path, no_cache) as inputs:
        spec = inputs.spec
        most = judgment_limit(inputs.tasks, [strategy], inputs.judge, yes, max_judgments)
        result = compare_strategies(
            inputs.tasks,
            [strategy],
            inputs.judge,
            inputs.cache,
            seed=seed,
            progress=not quiet,
            data=str(inputs.path),
            max_judgments=most,
        )
    columns = rank_columns(result.strategies[0])
    rows = [{key: row[key] for key, _ in columns} for row in result.rows()]
    if output_format == "jsonl":
        text = "".join(inert_json(json.dumps(row, ensure_ascii=False)) + "\n" for row in rows)
    else:
        text = render(rows, columns, output_format) + "\n"
    for note in (judge_caveat(spec), champion_note(result.strategies[0])):
        if note:
            say(note, err=True)
    if out:
        Path(out).write_text(text, encoding="utf-8")
        say(f"{len(rows)} candidates ranked; written to {out}", err=True)
    else:
        click.echo(text, nl=False)
    note_suspicious(result)
    check_parse_failures(result, allow_failures)


@main.command("strategies")
def list_strategies() -> None:
    """List the registered strategies with their parameters and defaults."""
    from rankkit.strategies import describe_parameters, strategy_classes

    click.echo(
        "Specs are name:key=value,... A spec may also use the paper's spelling: debias=true for\n"
        "order=both, debias=false for the strategy's one-order setting.\n"
    )
    for name, cls in strategy_classes().items():
        click.echo(f"{name:<12} {cls.description}")
        for param, type_name, default in describe_parameters(cls):
            shown = str(default).lower() if isinstance(default, bool) else default
            click.echo(f"{'':<14}{param}={shown}  ({type_name})")


@main.command("judges")
def list_judges() -> None:
    """List the judge backends with their options: type, default and whether it is in the fingerprint."""
    from rankkit.judges.backends import backend, backend_names

    click.echo(
        "Specs are name[:ARGUMENT][,key=value,...]. Options marked * belong to the judge's identity:\n"
        "changing one changes its fingerprint, so judgments cached under the old value are not reused.\n"
    )
    for name in backend_names():
        descriptor = backend(name)
        argument = f":{descriptor.argument.name.upper().replace(' ', '_')}" if descriptor.argument else ""
        click.echo(f"{name + argument:<20} {descriptor.summary}")
        for option in descriptor.options:
            mark = "*" if option.identity else " "
            click.echo(f"{'':<2}{mark} {option.describe():<44} {option.help}")


@main.command("judge-report")
@data_options
@judge_options
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the full report as JSON.")
@click.option(
    "--pairs-per-task",
    type=click.IntRange(min=0),
    default=10,
    show_default=True,
    help="Candidate pairs sampled per task (seeded); 0 = every pair.",
)
@click.option(
    "--resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples over tasks for the 95% intervals (0 = none).",
)
@guarded
def judge_report_command(
    data_path, criterion, limit, judge_spec, seed, cache_path, no_cache, quiet, out, pairs_per_task, resamples
) -> None:
    """Measure a judge's slot and length biases, order consistency and accuracy (both orders per pair)."""
    from rankkit.judge_report import judge_report
    from rankkit.judge_report_text import format_report

    prepare_output(out)
    with judging(data_path, criterion, limit, judge_spec, cache_path, no_cache) as inputs:
        report = judge_report(
            inputs.tasks,
            inputs.judge,
            inputs.cache,
            pairs_per_task=pairs_per_task or None,
            seed=seed,
            resamples=resamples,
            progress=not quiet,
            judge_spec=inputs.spec,
            data=str(inputs.path),
        )
    say(format_report(report))
    if out:
        Path(out).write_text(json.dumps(report, indent=1, ensure_ascii=False), encoding="utf-8")
        say(f"report written to {out}")


@main.command("record")
@data_options
@judge_options
@click.option("--out", type=click.Path(dir_okay=False), required=True, help="The judgments.jsonl to write.")
@click.option("--label", default=None, help="The judge name written on every row (default: the judge spec).")
@click.option(
    "--method", "method_label", default="recorded", show_default=True, help="The method name written on every row."
)
@click.option(
    "--from-run",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Export the comparisons of a `rankkit compare --out` results file instead of judging.",
)
@guarded
def record(
    data_path, criterion, limit, judge_spec, seed, cache_path, no_cache, quiet, out, label, method_label, from_run
) -> None:
    """Judge every ordered pair of every task once and save it for `--judge replay:FILE`."""
    from rankkit.file_checks import read_json_file
    from rankkit.recording import record_grid, rows_from_results, write_judgments
    from rankkit.results import RunResult

    prepare_output(out)
    if from_run:
        run = RunResult.from_dict(read_json_file(from_run), where=from_run)
        rows = rows_from_results(run, label, method_label)
        count = write_judgments(rows, out)
        say(f"{count} recorded comparisons from {from_run} written to {out}", err=True)
        return
    with judging(data_path, criterion, limit, judge_spec, cache_path, no_cache) as inputs:
        tasks, spec = inputs.tasks, inputs.spec
        rows, cost = record_grid(tasks, inputs.judge, inputs.cache, label or spec, method_label, progress=not quiet)
    count = write_judgments(rows, out)
    say(
        f"{count} comparisons of {len(tasks)} tasks ({cost.judge_calls} new judge calls, "
        f"{cost.cache_hits} from the cache) written to {out}; replay with --judge replay:{out}",
        err=True,
    )


def _print_leaderboard(
    board: Any, truth: Any, out: str | None, output_format: str, top_k: int = 3, robustness_budget: int = 300
) -> None:
    """Table (or JSON) of a system leaderboard, with its correlation against the truth and its
    robustness (the fewest battles whose flip or removal changes its #1 and top k)."""
    from rankkit.analysis.render import to_jsonable
    from rankkit.leaderboard import report
    from rankkit.leaderboard.robustness import leaderboard_robustness, robustness_lines

    rows, lines, truth_block = report(board, truth)
    payload = board.to_dict()
    payload["truth"] = truth_block
    if robustness_budget:
        figures = leaderboard_robustness(board, k=top_k, budget=robustness_budget)
        lines += robustness_lines(figures)
        payload["robustness"] = to_jsonable(figures)
    if out:
        Path(out).write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
    if output_format == "json":
        click.echo(
            inert_json(json.dumps({k: v for k, v in payload.items() if k != "matches"}, indent=1, ensure_ascii=False))
        )
        return
    columns = (
        [
            ("rank", "rank"),
            ("name", "system"),
            ("rating", "rating"),
            ("ci_low", "ci_low"),
            ("ci_high", "ci_high"),
            ("matches", "matches"),
        ]
        + ([("unadjusted", "unadjusted")] if board.control else [])
        + ([("truth", "truth")] if truth else [])
    )
    table = render(rows, [columns[1], columns[0], *columns[2:]], output_format)
    if output_format == "csv":
        click.echo(table)
        if out:
            say(f"leaderboard written to {out}", err=True)
        return
    say(lines[0])
    say(("\n" + table + "\n") if output_format == "markdown" else table)
    for line in lines[1:]:
        say(line)
    if out:
        say(f"leaderboard written to {out}")


def _leaderboard_common(func: Callable) -> Callable:
    func = click.option(
        "--truth",
        "truth_path",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="System-level truth JSONL (system + score); default systems.jsonl beside the data, "
        "else the mean human score per system.",
    )(func)
    func = click.option(
        "--bootstrap",
        "resamples",
        type=click.IntRange(min=0),
        default=200,
        show_default=True,
        help="Bootstrap resamples of the matches for 95% intervals (0 = none).",
    )(func)
    func = click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the leaderboard as JSON.")(
        func
    )
    func = click.option(
        "--top-k",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="The top k whose robustness is reported besides the #1.",
    )(func)
    func = click.option(
        "--robustness-budget",
        type=click.IntRange(min=0),
        default=300,
        show_default=True,
        help="Refits each robustness search may try exhaustively before its figure stays a "
        "greedy upper bound (<=); 0 leaves the robustness line out.",
    )(func)
    func = click.option(
        "--format",
        "output_format",
        type=click.Choice(OUTPUT_FORMATS),
        default="table",
        show_default=True,
        help="table, json (the leaderboard without its matches), csv or markdown.",
    )(func)
    func = click.option(
        "--control",
        default=None,
        help="Style control: length, format or length,format — rate by the strengths fitted jointly "
        "with the answers' style differences (contextual Bradley-Terry; on an anchored "
        "leaderboard: length, the length-controlled win rate). See docs/bias-control.md. "
        "`leaderboard add` defaults to the stored leaderboard's.",
    )(func)
    return func


@main.group("leaderboard", invoke_without_command=True)
@data_options
@judge_options
@_leaderboard_common
@click.option(
    "--strategy",
    "method",
    default="arena",
    show_default=True,
    help="arena (tournaments + Bradley-Terry), anchored (win rate vs --anchor), or any per-task "
    "strategy spec, whose per-task rankings are aggregated by Bradley-Terry.",
)
@click.option("--anchor", default=None, help="The anchor system of --strategy anchored.")
@click.option("--systems", "systems_text", default=None, help="Comma-separated systems to rank (default: all).")
@click.option(
    "--order",
    type=click.Choice(ORDERS),
    default=None,
    help="Which answer the judge sees first in arena and anchored matches (default: given for arena, "
    "random for anchored; both = every match in both orders, the paper's debiasing). A strategy "
    "spec names its own (knockout:order=both).",
)
@click.pass_context
@guarded
def leaderboard(
    ctx,
    data_path,
    criterion,
    limit,
    judge_spec,
    seed,
    cache_path,
    no_cache,
    quiet,
    truth_path,
    resamples,
    robustness_budget,
    top_k,
    out,
    output_format,
    control,
    method,
    anchor,
    systems_text,
    order,
) -> None:
    """Rank the systems that wrote the candidates (Arena-lite); `leaderboard add` inserts a new one."""
    if ctx.invoked_subcommand is not None:
        return
    from rankkit.leaderboard import build, resolve_truth

    prepare_output(out)
    systems = [s.strip() for s in systems_text.split(",") if s.strip()] if systems_text else None
    with judging(data_path, criterion, limit, judge_spec, cache_path, no_cache) as inputs:
        board = build(
            inputs.tasks,
            inputs.judge,
            method,
            anchor=anchor,
            cache=inputs.cache,
            seed=seed,
            order=order,
            resamples=resamples,
            systems=systems,
            progress=not quiet,
            judge_spec=inputs.spec,
            data=str(inputs.path),
            control=control,
        )
        truth = resolve_truth(inputs.tasks, inputs.path, truth_path)
    _print_leaderboard(board, truth, out, output_format, top_k, robustness_budget)


def _defaults_from_the_board(command: click.Command) -> click.Command:
    """`leaderboard add` takes --data and --judge from the stored leaderboard: say so in their help."""
    helps = {
        "data_path": "Tasks holding the new system's answers and the leaderboard's (default: the data the "
        "leaderboard was built on, as its JSON names it; the bundled synthetic sample if it names "
        "none).",
        "judge_spec": "Judge spec (default: the leaderboard's judge, as its JSON names it; smollm2 when "
        "installed, else sim, if it names none).",
    }
    for param in command.params:
        if param.name in helps:
            param.help = helps[param.name]
    return command


@_defaults_from_the_board
@leaderboard.command("add")
@data_options
@judge_options
@_leaderboard_common
@click.option(
    "--leaderboard",
    "board_path",
    type=click.Path(dir_okay=False, exists=True),
    required=True,
    help="A leaderboard JSON written by `rankkit leaderboard --out`.",
)
@click.option("--system", required=True, help="The system to add (its answers must be in --data).")
@trust_file_judge_option
@click.option(
    "--method",
    type=click.Choice(["binary", "anchored"]),
    default="binary",
    show_default=True,
    help="binary: binary search over the leaderboard (Arena-lite Algorithm 2); anchored: play the "
    "current top system on every task and convert the win rate to a rating.",
)
@guarded
def leaderboard_add(
    data_path,
    criterion,
    limit,
    judge_spec,
    seed,
    cache_path,
    no_cache,
    quiet,
    truth_path,
    resamples,
    robustness_budget,
    top_k,
    out,
    output_format,
    control,
    board_path,
    system,
    method,
) -> None:
    """Add a system to a stored leaderboard, paying only for matches never judged before.

    --data and --judge default to the ones the leaderboard was built with.
    """
    from rankkit.leaderboard import add_system, resolve_truth
    from rankkit.leaderboard.board import read_board

    prepare_output(out)
    board = read_board(board_path)
    # The board's judge is used only where a file may choose it (checked by judging()).
    judge_from = (board_path, "judge.spec") if not judge_spec and board.judge.get("spec") else None
    with judging(
        data_path or board.data or None,
        criterion,
        limit,
        judge_spec or board.judge.get("spec") or None,
        cache_path,
        no_cache,
        judge_from=judge_from,
    ) as inputs:
        judge = inputs.judge
        if board.judge.get("fingerprint") and board.judge["fingerprint"] != judge.fingerprint:
            say(
                f"warning: the leaderboard was judged by {board.judge.get('description')}, not by {judge.description}",
                err=True,
            )
        new_board = add_system(
            board,
            inputs.tasks,
            judge,
            system,
            method,
            cache=inputs.cache,
            seed=seed,
            resamples=resamples,
            judge_spec=inputs.spec,
            data=str(inputs.path),
            control=control,
        )
        truth = resolve_truth(inputs.tasks, inputs.path, truth_path)
    _print_leaderboard(new_board, truth, out, output_format, top_k, robustness_budget)


@main.command("analyze")
@click.argument("results_path", type=click.Path(dir_okay=False))
@click.option(
    "--by",
    "by_fields",
    multiple=True,
    help="Break down by 'system' (examinee) or a meta field such as difficulty or language; repeatable.",
)
@click.option(
    "--baseline", default=None, help="Strategy the others are compared with (default: individual, else the first)."
)
@click.option(
    "--metrics",
    "metric_names",
    default="pearson,spearman,task_spearman,pairwise_accuracy",
    show_default=True,
    help="Comma-separated metrics of rankkit.metrics to analyse.",
)
@click.option(
    "--bootstrap",
    "resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples of the tasks (0: no intervals).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the bootstrap.")
@click.option(
    "--aggregate",
    type=click.Choice(["mean", "sum"]),
    default="mean",
    show_default=True,
    help="How scores are aggregated per system at the aggregate (exam) level.",
)
@click.option(
    "--exam-field",
    default=None,
    help="Meta field grouping tasks into exams for the aggregate level (default: one aggregate per system).",
)
@click.option(
    "--top-k",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="The robustness report's top k (besides the #1).",
)
@click.option(
    "--robustness-budget",
    type=click.IntRange(min=0),
    default=300,
    show_default=True,
    help="Recomputed rankings each robustness search may try exhaustively before it turns greedy "
    "(an upper bound, shown with <=); 0 leaves the robustness report out.",
)
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the analysis as JSON.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice((*OUTPUT_FORMATS, "wide")),
    default="table",
    show_default=True,
    help="table (fitted to the terminal), wide (every column), json (the whole analysis), "
    "csv (all sections in one table, with a section column) or markdown.",
)
@guarded
def analyze_command(
    results_path,
    by_fields,
    baseline,
    metric_names,
    resamples,
    seed,
    aggregate,
    exam_field,
    top_k,
    robustness_budget,
    out,
    output_format,
) -> None:
    """Correlations with bootstrap intervals, elimination rounds, breakdowns, aggregate level,
    paired differences and robustness (fewest judgments whose flip or removal changes the #1 or
    top k) for a results file of `rankkit compare --out`."""
    from rankkit.analysis import analyze, format_analysis, load_results, to_jsonable
    from rankkit.specs import split_list

    prepare_output(out)
    results = load_results(results_path)
    report = analyze(
        results,
        by=by_fields,
        baseline=baseline,
        metrics=split_list(metric_names),
        resamples=resamples,
        seed=seed,
        aggregate=aggregate,
        unit_field=exam_field,
        top_k=top_k,
        robustness_budget=robustness_budget,
    )
    if output_format == "json":
        click.echo(inert_json(json.dumps(to_jsonable(report), indent=1, ensure_ascii=False)))
    else:
        from rankkit.formatting import terminal_width

        fmt = "table" if output_format == "wide" else output_format  # wide: the table with every column
        text = format_analysis(report, fmt, terminal_width() if output_format == "table" else None)
        if output_format == "csv":  # for a program: the data exact
            click.echo(text)
        else:
            say(text)
    if out:
        Path(out).write_text(json.dumps(to_jsonable(report), indent=1, ensure_ascii=False), encoding="utf-8")
        say(f"analysis written to {out}", err=output_format in ("json", "csv"))


@main.command("rejudge")
@click.argument("results_path", type=click.Path(dir_okay=False))
@click.option(
    "--judge",
    "judge_spec",
    required=True,
    help="The judge or panel to ask again, e.g. sim:preset=chatgpt (the results file's own judge is never used).",
)
@click.option(
    "--cache",
    "cache_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="SQLite judgment cache (default .rankkit/cache.sqlite): a rejudge that stops resumes from it.",
)
@click.option("--no-cache", is_flag=True, help="Do not read or write the persistent cache.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--out", type=click.Path(dir_okay=False), default=None, help="Also write the report as JSON.")
@click.option(
    "--format",
    "output_format",
    type=click.Choice(OUTPUT_FORMATS),
    default="table",
    show_default=True,
    help="table, json (the whole report), csv (both tables, with a section column) or markdown.",
)
@size_limit_options
@scale_options
@guarded
def rejudge_command(
    results_path, judge_spec, cache_path, no_cache, quiet, out, output_format, max_judgments, yes
) -> None:
    """Re-ask every judgment of a `rankkit compare --out` run of another judge: agreement per
    judgment, rank correlation per task and the winners that change."""
    from rankkit.analysis.render import to_jsonable
    from rankkit.cache import DEFAULT_CACHE_PATH, JudgmentCache, NullCache
    from rankkit.cli_support import announce_judge, checked_judge_spec
    from rankkit.formatting import render_sections
    from rankkit.judges import make_judge
    from rankkit.rejudging import questions, rejudge
    from rankkit.rejudging_tables import rejudge_tables
    from rankkit.results import read_results
    from rankkit.tasks import SizeLimits, check_sizes

    prepare_output(out)
    results = read_results(results_path)
    # The same limits as a run of compare: no text a task file would refuse, no unconfirmed large run.
    check_sizes(results.tasks, results_path, SizeLimits(**current_limits()))
    check_judgment_count(sum(map(len, questions(results).values())), yes, max_judgments)
    spec = checked_judge_spec(judge_spec)  # given on the command line: the user's own
    cache = NullCache() if no_cache else JudgmentCache(cache_path or DEFAULT_CACHE_PATH)
    judge = None
    try:
        judge = make_judge(spec)
        announce_judge(judge, spec)
        report = rejudge(results, judge, cache, judge_spec=spec, progress=not quiet)
    finally:
        cache.close()
        if judge is not None:
            judge.close()
    payload = to_jsonable(report)
    if output_format == "json":
        click.echo(inert_json(json.dumps(payload, indent=1, ensure_ascii=False)))
    else:
        preamble, tables = rejudge_tables(report)
        text = render_sections(tables, output_format, preamble)
        if output_format == "csv":
            click.echo(text)
        else:
            say(text)
    if out:
        Path(out).write_text(json.dumps(payload, indent=1, ensure_ascii=False), encoding="utf-8")
        say(f"rejudge report written to {out}", err=output_format in ("json", "csv"))


@main.command("plot")
@click.argument("results_path", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--out-dir",
    type=click.Path(file_okay=False),
    default="plots",
    show_default=True,
    help="Folder the PNG files are written to.",
)
@click.option("--metric", default="task_spearman", show_default=True, help="Accuracy axis of the cost-accuracy plot.")
@click.option(
    "--bootstrap",
    "resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples of the tasks for the intervals (0: none).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the bootstrap and the scatter jitter.")
@guarded
def plot_command(results_path, out_dir, metric, resamples, seed) -> None:
    """Draw correlations, cost vs accuracy, elimination rounds and judge-vs-human scatters as PNG."""
    from rankkit.analysis import check_metrics, load_results
    from rankkit.plots import plot_all

    results = load_results(results_path)
    paths = plot_all(results, out_dir, resamples=resamples, seed=seed, metric=check_metrics([metric])[0])
    for path in paths:
        click.echo(str(path))


@main.command("report")
@click.argument("results_path", type=click.Path(dir_okay=False))
@click.option(
    "-o",
    "--out",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write.",
)
@click.option(
    "--bootstrap",
    "resamples",
    type=click.IntRange(min=0),
    default=1000,
    show_default=True,
    help="Bootstrap resamples for the leaderboard's intervals (0: none).",
)
@click.option("--seed", type=int, default=0, show_default=True, help="Seeds the bootstrap.")
@click.option(
    "--max-tasks",
    type=click.IntRange(min=1),
    default=None,
    help="Put only the first N tasks in the task and match views (smaller file for big runs).",
)
@click.option(
    "--top-k",
    type=click.IntRange(min=1),
    default=3,
    show_default=True,
    help="The robustness section's top k (besides the #1).",
)
@click.option(
    "--robustness-budget",
    type=click.IntRange(min=0),
    default=300,
    show_default=True,
    help="Recomputed rankings each robustness search may try exhaustively (0 leaves the section out).",
)
@guarded
def report_command(results_path, out, resamples, seed, max_tasks, top_k, robustness_budget) -> None:
    """Write one self-contained HTML file: leaderboard, tasks with knockout brackets, match browser, judge bias,
    robustness."""
    from rankkit.analysis import load_results
    from rankkit.report import write_report

    results = load_results(results_path)
    path = write_report(
        results,
        out,
        resamples=resamples,
        seed=seed,
        max_tasks=max_tasks,
        top_k=top_k,
        robustness_budget=robustness_budget,
    )
    size = path.stat().st_size
    click.echo(
        f"report written to {path} ({size / 1e6:.1f} MB)"
        if size >= 1e6
        else f"report written to {path} ({size / 1e3:.0f} kB)"
    )


@main.command("samples")
@click.argument("name", required=False)
def samples_command(name) -> None:
    """List the bundled sample files, or print the path of one (NAME) for --data or replay:.

    e.g. rankkit leaderboard --data "$(rankkit samples leaderboard)"
    """
    from rankkit.samples import SAMPLES, sample_path

    if name is None:
        for key, (_, what) in SAMPLES.items():
            click.echo(f"{key:<12} {sample_path(key)}\n{'':<13}{what}")
        return
    if name not in SAMPLES:
        fail(f"no bundled sample {name!r}; choose one of {', '.join(SAMPLES)}")
    click.echo(str(sample_path(name)))


if __name__ == "__main__":  # pragma: no cover
    main()
