"""The ``rankkit`` command line: one click command per task a user runs.

Commands: ``compare`` (several strategies on one judge, with metrics), ``rank`` (one strategy,
per-candidate scores out), ``strategies`` (what is registered), ``judge-report``, ``record``,
``leaderboard`` (and ``leaderboard add``, :mod:`rankkit.cli.leaderboard`), ``analyze``,
``rejudge``, ``plot``, ``report`` (the commands that read a results file,
:mod:`rankkit.cli.results`) and ``samples``. Each command is thin: it parses options and calls
one library function. The options several commands take are declared once, as option groups
(:mod:`rankkit.cli.options`); what else the commands share — the mapping of errors to exit codes
(2 bad input, 1 judge or server failure), the judging session — is :mod:`rankkit.cli.support`.
Heavy modules are imported inside commands, so ``rankkit --help`` stays fast and never loads torch.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from rankkit.cli.generate import generate_command
from rankkit.cli.human import HumanOptions, compare_block, human_options, print_agreements, read_human
from rankkit.cli.judge_report import judge_report_command
from rankkit.cli.leaderboard import leaderboard
from rankkit.cli.merge import merge_command
from rankkit.cli.options import (
    OUTPUT_FORMATS,
    Budget,
    DataOptions,
    JudgeOptions,
    RunControls,
    current_columns,
    data_options,
    given_limits,
    judge_options,
    output_options,
    shard_option,
    strategy_run_options,
)
from rankkit.cli.results import analyze_command, plot_command, rejudge_command, report_command
from rankkit.cli.support import (
    RunInputs,
    check_parse_failures,
    echo_json,
    fail,
    guarded,
    judge_caveat,
    judging,
    judgment_limit,
    note_suspicious,
    prepare_output,
    print_dry_run,
    say,
    write_json,
)
from rankkit.cli.tables import champion_note, compare_table, rank_columns
from rankkit.data.formatting import inert_json, render


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(package_name="rankkit")
def main() -> None:
    """Rank candidate answers with an LLM judge, and compare ranking strategies on the same judgments."""


for command in (
    generate_command,
    leaderboard,
    judge_report_command,
    analyze_command,
    rejudge_command,
    plot_command,
    report_command,
    merge_command,
):
    main.add_command(command)


def run_strategies(
    data: DataOptions,
    judge_options: JudgeOptions,
    strategies: list[Any],
    budget: Budget,
    shard: Any = None,
    stream_judgments: str | None = None,
) -> tuple[Any, RunInputs]:
    """Run ``strategies`` on the data with the judge, after the size check: the run's result and its inputs
    (``shard``: only that part of the tasks; ``stream_judgments``: the results file whose sidecar takes
    the judgments as tasks finish)."""
    from rankkit.api import compare as compare_strategies

    with judging(data, judge_options) as inputs:
        mine = shard.select(inputs.tasks) if shard is not None else inputs.tasks
        most = judgment_limit(mine, strategies, inputs.judge, budget)
        result = compare_strategies(
            inputs.tasks,
            strategies,
            inputs.judge,
            inputs.cache,
            seed=judge_options.seed,
            progress=not judge_options.quiet,
            data=str(inputs.path),
            max_judgments=most,
            shard=shard,
            stream_judgments=stream_judgments,
        )
    return result, inputs


def compare_config(data: DataOptions, judge_options: JudgeOptions, inputs: RunInputs, strategies: list[Any]) -> Any:
    """The run's settings as a run file would give them (the results' ``config``, for ``--config`` to re-run)."""
    from rankkit.cli.config import config_record
    from rankkit.judgments.cache import DEFAULT_CACHE_PATH

    return config_record(
        data=data.data_path,
        criterion=inputs.tasks[0].criterion,
        limit=data.limit,
        columns=current_columns(),
        judge=inputs.spec,
        strategies=strategies,
        seed=judge_options.seed,
        cache=None if judge_options.no_cache else judge_options.cache_path or DEFAULT_CACHE_PATH,
        size_limits=given_limits(),
    )


def print_compare(
    result: Any, inputs: RunInputs, seed: int, out: str | None, output_format: str, human: Any = None
) -> None:
    """Write the results to ``out`` when given, and print the table (or JSON) with the lines that go with it;
    ``human`` is the ``--human`` block added to the JSON."""
    # The results JSON holds every match (65 MB at 80k comparisons): build it only to write it.
    payload = result.to_dict() if out or output_format == "json" else None
    if payload is not None and human is not None:
        payload["human"] = human
    if out:
        write_json(payload, out)
    if output_format == "json":
        echo_json({k: v for k, v in payload.items() if k != "task_data"})
        return
    from rankkit.data.formatting import terminal_width

    table, notes = compare_table(result, output_format, terminal_width())
    if output_format == "csv":  # nothing but the table on stdout, for a program to read
        click.echo(table)
        if out:
            say(f"results written to {out}", err=True)
        return
    tasks, criterion_name = inputs.tasks, inputs.tasks[0].criterion or "none"
    say(
        f"{len(tasks)} tasks from {inputs.path} · criterion {criterion_name} · judge {result.judge.description} "
        f"· seed {seed}"
    )
    caveat = judge_caveat(inputs.spec)
    if caveat:
        say(caveat)
    say(("\n" if output_format == "markdown" else "") + table)
    if notes and output_format == "markdown":
        say("")  # a line right under a Markdown table would be read as one of its rows
    for line in notes:
        say(line)
    if out:
        say(f"results written to {out}")


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
@output_options(
    "Write the full results as JSON.",
    (*OUTPUT_FORMATS, "wide"),
    "table",
    "table (for people, fitted to the terminal), wide (the table with every column), "
    "json (the results without task texts), csv or markdown (the table).",
)
@click.option(
    "--stream-judgments",
    is_flag=True,
    help="Write each task's judgments, as it finishes, to OUT's sidecar (RESULTS.judgments.jsonl) instead of "
    "into the results file, so memory stays flat on millions of judgments (needs --out). See docs/cli.md.",
)
@strategy_run_options
@shard_option
@human_options
@guarded
def compare(
    data: DataOptions,
    judge_options: JudgeOptions,
    strategy_specs,
    out,
    output_format,
    stream_judgments: bool,
    controls: RunControls,
    shard,
    human_options: HumanOptions,
) -> None:
    """Run several strategies on the same judge and print how each agrees with the humans."""
    from rankkit.data.specs import split_list
    from rankkit.strategies import make_strategy

    strategies = [make_strategy(s) for s in split_list(strategy_specs)]
    if not strategies:
        fail("no strategies given")
    if stream_judgments and not out:
        fail("--stream-judgments writes the judgments beside the results file: give --out FILE")
    if controls.dry_run:
        print_dry_run(data, judge_options, strategies, output_format, shard)
        return
    prepare_output(out)
    votes = read_human(human_options)
    result, inputs = run_strategies(
        data, judge_options, strategies, controls.budget, shard, out if stream_judgments else None
    )
    result.config = compare_config(data, judge_options, inputs, strategies)
    human, agreements = compare_block(result, votes, human_options)
    print_compare(result, inputs, judge_options.seed, out, output_format, human)
    if agreements:
        print_agreements(agreements, human_options.width, output_format)
    note_suspicious(result)
    check_parse_failures(result, controls.allow_failures)


@main.command()
@data_options
@judge_options
@click.option("--strategy", "strategy_spec", default="knockout", show_default=True, help="One strategy spec.")
@output_options(
    "Write per-candidate scores to this file instead of printing them.",
    ("jsonl", *OUTPUT_FORMATS),
    "jsonl",
    "jsonl (one object per candidate), table, json (a list), csv or markdown.",
)
@strategy_run_options
@guarded
def rank(
    data: DataOptions, judge_options: JudgeOptions, strategy_spec, out, output_format, controls: RunControls
) -> None:
    """Rank every task's candidates with one strategy and write per-candidate scores."""
    from rankkit.strategies import make_strategy

    strategy = make_strategy(strategy_spec)
    if controls.dry_run:
        print_dry_run(data, judge_options, [strategy], output_format)
        return
    prepare_output(out)
    result, inputs = run_strategies(data, judge_options, [strategy], controls.budget)
    columns = rank_columns(result.strategies[0])
    rows = [{key: row[key] for key, _ in columns} for row in result.rows()]
    if output_format == "jsonl":
        text = "".join(inert_json(json.dumps(row, ensure_ascii=False)) + "\n" for row in rows)
    else:
        text = render(rows, columns, output_format) + "\n"
    for note in (judge_caveat(inputs.spec), champion_note(result.strategies[0])):
        if note:
            say(note, err=True)
    if out:
        Path(out).write_text(text, encoding="utf-8")
        say(f"{len(rows)} candidates ranked; written to {out}", err=True)
    else:
        click.echo(text, nl=False)
    note_suspicious(result)
    check_parse_failures(result, controls.allow_failures)


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
@shard_option
@guarded
def record(data: DataOptions, judge_options: JudgeOptions, out, label, method_label, from_run, shard) -> None:
    """Judge every ordered pair of every task once and save it for `--judge replay:FILE`."""
    from rankkit.runs.recording import record_grid, rows_from_results, write_judgments
    from rankkit.runs.results import read_results

    if from_run and shard is not None:
        fail("--shard splits the tasks to judge; --from-run judges nothing (export the merged results instead)")
    prepare_output(out)
    if from_run:
        run = read_results(from_run)
        rows = rows_from_results(run, label, method_label)
        count = write_judgments(rows, out)
        say(f"{count} recorded comparisons from {from_run} written to {out}", err=True)
        return
    with judging(data, judge_options) as inputs:
        tasks, spec = inputs.tasks, inputs.spec
        rows, cost = record_grid(
            tasks, inputs.judge, inputs.cache, label or spec, method_label, not judge_options.quiet, shard
        )
        tasks = shard.select(tasks) if shard is not None else tasks
    count = write_judgments(rows, out)
    say(
        f"{count} comparisons of {len(tasks)} tasks ({cost.judge_calls} new judge calls, "
        f"{cost.cache_hits} from the cache) written to {out}; replay with --judge replay:{out}",
        err=True,
    )


@main.command("samples")
@click.argument("name", required=False)
def samples_command(name) -> None:
    """List the bundled sample files, or print the path of one (NAME) for --data or replay:.

    e.g. rankkit leaderboard --data "$(rankkit samples leaderboard)"
    """
    from rankkit.data.samples import SAMPLES, sample_path

    if name is None:
        for key, (_, what) in SAMPLES.items():
            click.echo(f"{key:<12} {sample_path(key)}\n{'':<13}{what}")
        return
    if name not in SAMPLES:
        fail(f"no bundled sample {name!r}; choose one of {', '.join(SAMPLES)}")
    click.echo(str(sample_path(name)))
