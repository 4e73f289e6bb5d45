"""The commands that read a results file of ``rankkit compare --out``: ``analyze``, ``rejudge``, ``plot`` and ``report``."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import click

from rankkit.cli.options import (
    OUTPUT_FORMATS,
    Budget,
    budget_options,
    cache_options,
    current_limits,
    executor_options,
    option_group,
    output_options,
    resamples_option,
    size_limit_options,
)
from rankkit.cli.support import echo_json, guarded, prepare_output, say, write_json

#: The results file every command of this module reads.
results_argument = click.argument("results_path", type=click.Path(dir_okay=False))


def resampling_options(bootstrap_help: str, seed_help: str = "Seeds the bootstrap.") -> Callable:
    """``--bootstrap`` (resamples of the tasks, 1000 by default) and ``--seed``, with the command's help texts."""
    return option_group(
        resamples_option(bootstrap_help),
        click.option("--seed", type=int, default=0, show_default=True, help=seed_help),
    )


def robustness_options(top_k_help: str, budget_help: str) -> Callable:
    """``--top-k`` and ``--robustness-budget`` of a robustness report, with the command's help texts."""
    return option_group(
        click.option("--top-k", type=click.IntRange(min=1), default=3, show_default=True, help=top_k_help),
        click.option(
            "--robustness-budget", type=click.IntRange(min=0), default=300, show_default=True, help=budget_help
        ),
    )


def _write_out(payload: object, out: str | None, what: str, output_format: str) -> None:
    """Write ``payload`` to ``out`` when given, and say so (on stderr when stdout is for a program)."""
    if out:
        write_json(payload, out)
        say(f"{what} written to {out}", err=output_format in ("json", "csv"))


def _print_text(text: str, output_format: str) -> None:
    """CSV exact, for a program; anything else for people (:func:`say`)."""
    if output_format == "csv":
        click.echo(text)
    else:
        say(text)


@click.command("analyze")
@results_argument
@click.option(
    "--by",
    "by",
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
    help="Comma-separated metrics of rankkit.stats.metrics to analyse.",
)
@resampling_options("Bootstrap resamples of the tasks (0: no intervals).")
@click.option(
    "--aggregate",
    type=click.Choice(["mean", "sum"]),
    default="mean",
    show_default=True,
    help="How scores are aggregated per system at the aggregate (exam) level.",
)
@click.option(
    "--exam-field",
    "unit_field",
    default=None,
    help="Meta field grouping tasks into exams for the aggregate level (default: one aggregate per system).",
)
@robustness_options(
    "The robustness report's top k (besides the #1).",
    "Recomputed rankings each robustness search may try exhaustively before it turns greedy "
    "(an upper bound, shown with <=); 0 leaves the robustness report out.",
)
@output_options(
    "Also write the analysis as JSON.",
    (*OUTPUT_FORMATS, "wide"),
    "table",
    "table (fitted to the terminal), wide (every column), json (the whole analysis), "
    "csv (all sections in one table, with a section column) or markdown.",
)
@click.option(
    "--pair-effects",
    is_flag=True,
    help="Also estimate the judge's pair-effect sd from the run's judgments (for active/swiss pair_sd=; docs/stopping.md).",
)
@guarded
def analyze_command(results_path, metric_names, out, output_format, **settings: Any) -> None:
    """Correlations with bootstrap intervals, elimination rounds, breakdowns, aggregate level,
    paired differences and robustness (fewest judgments whose flip or removal changes the #1 or
    top k) for a results file of `rankkit compare --out`."""
    from rankkit.data.specs import split_list
    from rankkit.runs.analysis import analyze, format_analysis, load_results, to_jsonable

    prepare_output(out)
    # settings: by, baseline, resamples, seed, aggregate, unit_field, top_k, robustness_budget, pair_effects (analyze's own names)
    report = analyze(load_results(results_path), metrics=split_list(metric_names), **settings)
    if output_format == "json":
        echo_json(to_jsonable(report))
    else:
        from rankkit.data.formatting import terminal_width

        fmt = "table" if output_format == "wide" else output_format  # wide: the table with every column
        _print_text(format_analysis(report, fmt, terminal_width() if output_format == "table" else None), fmt)
    _write_out(to_jsonable(report) if out else None, out, "analysis", output_format)


@click.command("rejudge")
@results_argument
@click.option(
    "--judge",
    "judge_spec",
    required=True,
    help="The judge or panel to ask again, e.g. sim:preset=chatgpt (the results file's own judge is never used).",
)
@cache_options(
    "Judgment cache: an SQLite file (default .rankkit/cache.sqlite, or $RANKKIT_CACHE) or a postgresql:// "
    "URL; a rejudge that stops resumes from it."
)
@output_options(
    "Also write the report as JSON.",
    OUTPUT_FORMATS,
    "table",
    "table, json (the whole report), csv (both tables, with a section column) or markdown.",
)
@size_limit_options
@executor_options
@budget_options
@guarded
def rejudge_command(results_path, judge_spec, cache_path, no_cache, quiet, out, output_format, budget: Budget) -> None:
    """Re-ask every judgment of a `rankkit compare --out` run of another judge: agreement per
    judgment, rank correlation per task and the winners that change."""
    from rankkit.cli.support import check_judgment_count, checked_judge_spec, judge_session, open_cache
    from rankkit.data.formatting import render_sections
    from rankkit.data.tasks import SizeLimits, check_sizes
    from rankkit.runs.analysis.render import to_jsonable
    from rankkit.runs.rejudging import questions, rejudge
    from rankkit.runs.rejudging_tables import rejudge_tables
    from rankkit.runs.results import read_results

    prepare_output(out)
    results = read_results(results_path)
    # The same limits as a run of compare: no text a task file would refuse, no unconfirmed large run.
    check_sizes(results.tasks, results_path, SizeLimits(**current_limits()))
    check_judgment_count(sum(map(len, questions(results).values())), budget)
    spec = checked_judge_spec(judge_spec)  # given on the command line: the user's own
    cache = open_cache(cache_path, no_cache)
    with judge_session(spec, cache) as judge:
        report = rejudge(results, judge, cache, judge_spec=spec, progress=not quiet)
    payload = to_jsonable(report)
    if output_format == "json":
        echo_json(payload)
    else:
        preamble, tables = rejudge_tables(report)
        _print_text(render_sections(tables, output_format, preamble), output_format)
    _write_out(payload, out, "rejudge report", output_format)


@click.command("plot")
@results_argument
@click.option(
    "-o",
    "--out-dir",
    type=click.Path(file_okay=False),
    default="plots",
    show_default=True,
    help="Folder the PNG files are written to.",
)
@click.option("--metric", default="task_spearman", show_default=True, help="Accuracy axis of the cost-accuracy plot.")
@resampling_options(
    "Bootstrap resamples of the tasks for the intervals (0: none).", "Seeds the bootstrap and the scatter jitter."
)
@guarded
def plot_command(results_path, out_dir, metric, resamples, seed) -> None:
    """Draw correlations, cost vs accuracy, elimination rounds and judge-vs-human scatters as PNG."""
    from rankkit.reports.plots import plot_all
    from rankkit.runs.analysis import check_metrics, load_results

    results = load_results(results_path)
    paths = plot_all(results, out_dir, resamples=resamples, seed=seed, metric=check_metrics([metric])[0])
    for path in paths:
        click.echo(str(path))


@click.command("report")
@results_argument
@click.option(
    "-o",
    "--out",
    default="report.html",
    show_default=True,
    type=click.Path(dir_okay=False),
    help="The HTML file to write.",
)
@resampling_options("Bootstrap resamples for the leaderboard's intervals (0: none).")
@click.option(
    "--max-tasks",
    type=click.IntRange(min=1),
    default=None,
    help="Put only the first N tasks in the task and match views (smaller file for big runs).",
)
@robustness_options(
    "The robustness section's top k (besides the #1).",
    "Recomputed rankings each robustness search may try exhaustively (0 leaves the section out).",
)
@guarded
def report_command(results_path, out, **settings: Any) -> None:
    """Write one self-contained HTML file: leaderboard, tasks with knockout brackets, match browser, judge bias,
    robustness."""
    from rankkit.reports.report import write_report
    from rankkit.runs.analysis import load_results

    # settings: resamples, seed, max_tasks, top_k, robustness_budget (render_report's own names)
    path = write_report(load_results(results_path), out, **settings)
    size = path.stat().st_size
    click.echo(
        f"report written to {path} ({size / 1e6:.1f} MB)"
        if size >= 1e6
        else f"report written to {path} ({size / 1e3:.0f} kB)"
    )
