"""``--human VOTES`` and ``--human-width`` of ``rankkit leaderboard``: a board corrected by human votes.

With ``--human`` the board's ``rating`` is the prediction-powered (PPI++) one; a second table and
the JSON's ``human`` block give, per system, the human-only and judge-only estimates, λ and the
effective number of votes; ``--human-width`` adds how many more votes would narrow each interval to
that width (``docs/human-labels.md``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import click

from rankkit.cli.options import grouped, option_group
from rankkit.cli.support import say
from rankkit.data.formatting import render


@dataclass(frozen=True)
class HumanOptions:
    """The VOTES file (None: no correction) and the interval width the planner aims at (None: not asked)."""

    votes_path: str | None
    width: float | None


#: The options of :class:`HumanOptions`; the command receives ``human_options``.
human_options = option_group(
    click.option(
        "--human",
        "votes_path",
        type=click.Path(dir_okay=False, exists=True),
        default=None,
        help="Human votes (.jsonl/.csv: task_id, a, b, winner — or task_id, candidate, score): the "
        "rating becomes the prediction-powered (PPI++) one. See docs/human-labels.md.",
    ),
    click.option(
        "--human-width",
        "width",
        type=click.FloatRange(min=0, min_open=True),
        default=None,
        help="With --human: print how many more human votes narrow each system's interval to this "
        "width (high - low, in the rating's units).",
    ),
    grouped(HumanOptions, "human_options"),
)

HUMAN_COLUMNS = [
    ("name", "system"),
    ("estimate", "estimate"),
    ("ppi", "ppi"),
    ("human_only", "human_only"),
    ("human_low", "human_low"),
    ("human_high", "human_high"),
    ("judge_only", "judge_only"),
    ("lam", "lam"),
    ("n_human", "n_human"),
    ("effective_n", "effective_n"),
]


def read_human(options: HumanOptions) -> Any:
    """The VOTES file's rows (None without --human), read and checked before anything is judged."""
    if options.width is not None and options.votes_path is None:
        raise click.UsageError("--human-width needs --human VOTES")
    if options.votes_path is None:
        return None
    from rankkit.leaderboard.human import read_votes

    return read_votes(options.votes_path)


def corrected(board: Any, inputs: Any, votes: Any, options: HumanOptions, progress: bool) -> tuple[Any, Any]:
    """``(board, correction)``: the board re-rated by ``votes`` (the voted pairs its tournament did not
    play judged first, through ``inputs``' judge and cache), or as it was with None without votes."""
    if votes is None:
        return board, None
    from rankkit.leaderboard.human_board import human_leaderboard, judge_voted_pairs

    board = judge_voted_pairs(board, inputs.tasks, votes, inputs.judge, inputs.cache, progress)
    return human_leaderboard(board, inputs.tasks, votes, width=options.width)


def print_correction(correction: Any, output_format: str) -> None:
    """The second table: what the votes did to each system (table and markdown formats)."""
    from rankkit.leaderboard.human_board import human_rows

    columns = HUMAN_COLUMNS + ([("votes_needed", "votes_needed")] if correction.width is not None else [])
    say(
        f"human votes: {correction.pair_votes} pairs, {correction.grade_votes} grades · rating = PPI++ "
        "(judge labels corrected by the votes)"
    )
    table = render(human_rows(correction), columns, output_format)
    say(("\n" + table + "\n") if output_format == "markdown" else table)


AGREEMENT_COLUMNS = [
    ("strategy", "strategy"),
    ("agreement", "agreement"),
    ("name", "system"),
    ("estimate", "estimate"),
    ("judge_only", "judge_only"),
    ("ppi", "ppi"),
    ("ci_low", "ci_low"),
    ("ci_high", "ci_high"),
    ("human_only", "human_only"),
    ("lam", "lam"),
    ("effective_n", "effective_n"),
]


def compare_block(result: Any, votes: Any, options: HumanOptions) -> Any:
    """The ``human`` block of ``compare``'s JSON, per strategy (None without --human), and its agreements."""
    if votes is None:
        return None, []
    from rankkit.leaderboard.human_compare import strategy_agreements

    agreements = strategy_agreements(result, votes)
    block = {
        "pair_votes": len(votes.pairs),
        "grade_votes": len(votes.grades),
        "width": options.width,
        "strategies": {item.strategy: item.to_dict(options.width) for item in agreements},
    }
    return block, agreements


def print_agreements(agreements: Any, width: float | None, output_format: str) -> None:
    """``compare``'s second table: each strategy's agreement with the votes and its PPI++ estimates."""
    if output_format not in ("table", "markdown"):
        return
    from rankkit.leaderboard.human_compare import agreement_rows

    say("human votes: each strategy's verdicts corrected by the votes (PPI++); agreement = 1 - |human - strategy|")
    columns = AGREEMENT_COLUMNS + ([("votes_needed", "votes_needed")] if width is not None else [])
    table = render(agreement_rows(agreements, width), columns, output_format)
    say(("\n" + table + "\n") if output_format == "markdown" else table)
