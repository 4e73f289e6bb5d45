"""``rankkit leaderboard`` and ``rankkit leaderboard add``: the systems that wrote the candidates, ranked.

Both commands take the same options besides their own (:data:`board_options`: the truth, the
bootstrap, the robustness report and the output), and print the leaderboard the same way
(:func:`print_leaderboard`).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click

from rankkit.cli.generate import GenerationOptions, generation_options, run_generation
from rankkit.cli.human import HumanOptions, corrected, human_options, print_correction, read_human
from rankkit.cli.options import (
    OUTPUT_FORMATS,
    DataOptions,
    JudgeOptions,
    data_options,
    grouped,
    judge_options,
    option_group,
    resamples_option,
    trust_file_judge_option,
)
from rankkit.cli.support import echo_json, guarded, judging, open_cache, prepare_output, say, write_json
from rankkit.data.formatting import render
from rankkit.stats.graded import TIE_MODELS
from rankkit.strategies.order import ORDERS


@dataclass(frozen=True)
class BoardOptions:
    """What both leaderboard commands take besides the data and the judge: the truth to compare with,
    the bootstrap, the robustness report, the output and the style control."""

    truth_path: str | None
    resamples: int
    robustness_budget: int
    top_k: int
    out: str | None
    output_format: str
    control: str | None


#: The options of :class:`BoardOptions`; the command receives ``board_options``.
board_options = option_group(
    click.option(
        "--control",
        default=None,
        help="Style control: length, format or length,format — rate by the strengths fitted jointly "
        "with the answers' style differences (contextual Bradley-Terry; on an anchored "
        "leaderboard: length, the length-controlled win rate). See docs/bias-control.md. "
        "`leaderboard add` defaults to the stored leaderboard's.",
    ),
    click.option(
        "--format",
        "output_format",
        type=click.Choice(OUTPUT_FORMATS),
        default="table",
        show_default=True,
        help="table, json (the leaderboard without its matches), csv or markdown.",
    ),
    click.option(
        "--robustness-budget",
        type=click.IntRange(min=0),
        default=300,
        show_default=True,
        help="Refits each robustness search may try exhaustively before its figure stays a "
        "greedy upper bound (<=); 0 leaves the robustness line out.",
    ),
    click.option(
        "--top-k",
        type=click.IntRange(min=1),
        default=3,
        show_default=True,
        help="The top k whose robustness is reported besides the #1.",
    ),
    click.option("--out", type=click.Path(dir_okay=False), default=None, help="Write the leaderboard as JSON."),
    resamples_option("Bootstrap resamples of the matches for 95% intervals (0 = none).", default=200),
    click.option(
        "--truth",
        "truth_path",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="System-level truth JSONL (system + score); default systems.jsonl beside the data, "
        "else the mean human score per system.",
    ),
    grouped(BoardOptions, "board_options"),
)


def _leaderboard_columns(board: Any, truth: Any) -> list[tuple[str, str]]:
    """The table's columns, system first: ``unadjusted`` under style control, ``truth`` when there is one."""
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
    return [columns[1], columns[0], *columns[2:]]


def print_leaderboard(board: Any, truth: Any, shown: BoardOptions, human: Any = None) -> None:
    """Table (or JSON) of a system leaderboard, with its correlation against the truth and its
    robustness (the fewest battles whose flip or removal changes its #1 and top k); ``human`` (a
    :class:`~rankkit.leaderboard.human_board.HumanCorrection`) adds the ``human`` block and table."""
    from rankkit.leaderboard import report
    from rankkit.leaderboard.robustness import leaderboard_robustness, robustness_lines
    from rankkit.runs.analysis.render import to_jsonable

    rows, lines, truth_block = report(board, truth)
    payload = board.to_dict()
    payload["truth"] = truth_block
    if shown.robustness_budget:
        figures = leaderboard_robustness(board, k=shown.top_k, budget=shown.robustness_budget)
        lines += robustness_lines(figures)
        payload["robustness"] = to_jsonable(figures)
    if human is not None:
        payload["human"] = to_jsonable(human.to_dict())
    out, output_format = shown.out, shown.output_format
    if out:
        write_json(payload, out)
    if output_format == "json":
        echo_json({k: v for k, v in payload.items() if k != "matches"})
        return
    table = render(rows, _leaderboard_columns(board, truth), output_format)
    if output_format == "csv":
        click.echo(table)
        if out:
            say(f"leaderboard written to {out}", err=True)
        return
    say(lines[0])
    say(("\n" + table + "\n") if output_format == "markdown" else table)
    for line in lines[1:]:
        say(line)
    if human is not None:
        print_correction(human, output_format)
    if out:
        say(f"leaderboard written to {out}")


@click.group("leaderboard", invoke_without_command=True)
@data_options
@judge_options
@board_options
@human_options
@click.option(
    "--strategy",
    "method",
    default="arena",
    show_default=True,
    help="arena (tournaments + Bradley-Terry), anchored (win rate vs --anchor), or any per-task "
    "strategy spec, whose per-task rankings are aggregated by Bradley-Terry.",
)
@click.option("--anchor", default=None, help="The anchor system of --strategy anchored.")
@generation_options
@click.option(
    "--answers",
    "answers_path",
    type=click.Path(dir_okay=False),
    default=None,
    help="With --questions: where the generated task file goes (default .rankkit/answers.jsonl); it becomes --data.",
)
@click.option("--systems", "systems_text", default=None, help="Comma-separated systems to rank (default: all).")
@click.option(
    "--order",
    type=click.Choice(ORDERS),
    default=None,
    help="Which answer the judge sees first in arena and anchored matches (default: given for arena, "
    "random for anchored; both = every match in both orders, the paper's debiasing). A strategy "
    "spec names its own (knockout:order=both).",
)
@click.option(
    "--ties",
    type=click.Choice(TIE_MODELS),
    default="half",
    show_default=True,
    help="arena: half = Bradley-Terry with a tie as half a win each way; davidson = the tie-aware "
    "Bradley-Terry (Davidson); ordinal = every verdict's level read (ties and strong verdicts as "
    "thresholds; needs verdicts=tie|graded). See docs/graded-verdicts.md.",
)
@click.option(
    "--strong-weight",
    type=click.IntRange(min=1),
    default=1,
    show_default=True,
    help="How many wins a strong verdict (A>>B, judges with verdicts=graded) counts as; arena-hard-auto uses 3.",
)
@click.option(
    "--length-margin",
    type=click.IntRange(min=0),
    default=None,
    help="WildBench's length rule: a slightly-better verdict (A>B) counts as a tie when its winner is "
    "longer by more than this many characters (judges with verdicts=tie|graded).",
)
@click.pass_context
@guarded
def leaderboard(
    ctx,
    data: DataOptions,
    judge_options: JudgeOptions,
    board_options: BoardOptions,
    human_options: HumanOptions,
    method,
    anchor,
    generation: GenerationOptions,
    answers_path,
    systems_text,
    order,
    ties,
    strong_weight,
    length_margin,
) -> None:
    """Rank the systems that wrote the candidates (Arena-lite); `leaderboard add` inserts a new one.

    With --questions and --models, the candidates are generated first (`rankkit generate`), and one
    bill covers generating and judging.
    """
    if ctx.invoked_subcommand is not None:
        return
    from rankkit.leaderboard import build, resolve_truth
    from rankkit.leaderboard.graded import VerdictWeighting

    weighting = VerdictWeighting(ties, strong_weight, length_margin)
    prepare_output(board_options.out)
    votes = read_human(human_options)
    bill = None
    if generation.questions_path or generation.models_text:
        data, bill = _generated_data(data, judge_options, generation, answers_path)
    systems = [s.strip() for s in systems_text.split(",") if s.strip()] if systems_text else None
    with judging(data, judge_options) as inputs:
        board = build(
            inputs.tasks,
            inputs.judge,
            method,
            anchor=anchor,
            cache=inputs.cache,
            seed=judge_options.seed,
            order=order,
            resamples=board_options.resamples,
            systems=systems,
            progress=not judge_options.quiet,
            judge_spec=inputs.spec,
            data=str(inputs.path),
            control=board_options.control,
            weighting=weighting,
        )
        truth = resolve_truth(inputs.tasks, inputs.path, board_options.truth_path)
        board, human = corrected(board, inputs, votes, human_options, not judge_options.quiet)
    print_leaderboard(board, truth, board_options, human)
    if bill is not None:
        say(bill.with_judging(board.cost), err=True)


def _generated_data(
    data: DataOptions, judge_options: JudgeOptions, generation: GenerationOptions, answers_path: str | None
) -> tuple[DataOptions, Any]:
    """Generate the candidates of ``--questions`` with ``--models`` into ``answers_path``: the data to
    judge then, and the generation's bill."""
    from dataclasses import replace

    if data.data_path:
        raise click.UsageError("--questions generates the data: give either --questions or --data")
    answers = answers_path or str(Path(".rankkit") / "answers.jsonl")
    cache = open_cache(judge_options.cache_path, judge_options.no_cache)
    try:
        bill = run_generation(generation, answers, cache, judge_options.seed, judge_options.quiet)
    finally:
        cache.close()
    return replace(data, data_path=answers), bill


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


def _with_board_defaults(
    board: Any, board_path: str, data: DataOptions, judge_options: JudgeOptions
) -> tuple[DataOptions, JudgeOptions, tuple[str, str] | None]:
    """The data and judge of ``leaderboard add``: those given, else the stored board's, and the
    ``(file, field)`` the judge spec came from when the board chose it (checked by judging())."""
    from dataclasses import replace

    judge_spec = judge_options.judge_spec or board.judge.get("spec") or None
    judge_from = (board_path, "judge.spec") if not judge_options.judge_spec and board.judge.get("spec") else None
    return (
        replace(data, data_path=data.data_path or board.data or None),
        replace(judge_options, judge_spec=judge_spec),
        judge_from,
    )


@_defaults_from_the_board
@leaderboard.command("add")
@data_options
@judge_options
@board_options
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
    data: DataOptions, judge_options: JudgeOptions, board_options: BoardOptions, board_path, system, method
) -> None:
    """Add a system to a stored leaderboard, paying only for matches never judged before.

    --data and --judge default to the ones the leaderboard was built with.
    """
    from rankkit.leaderboard import add_system, resolve_truth
    from rankkit.leaderboard.board import read_board

    prepare_output(board_options.out)
    board = read_board(board_path)
    data, judge_options, judge_from = _with_board_defaults(board, board_path, data, judge_options)
    with judging(data, judge_options, judge_from=judge_from) as inputs:
        if board.judge.get("fingerprint") and board.judge["fingerprint"] != inputs.judge.fingerprint:
            say(
                f"warning: the leaderboard was judged by {board.judge.get('description')}, "
                f"not by {inputs.judge.description}",
                err=True,
            )
        new_board = add_system(
            board,
            inputs.tasks,
            inputs.judge,
            system,
            method,
            cache=inputs.cache,
            seed=judge_options.seed,
            resamples=board_options.resamples,
            judge_spec=inputs.spec,
            data=str(inputs.path),
            control=board_options.control,
        )
        truth = resolve_truth(inputs.tasks, inputs.path, board_options.truth_path)
    print_leaderboard(new_board, truth, board_options)
