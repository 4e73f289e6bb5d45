"""The option groups: declared once, shown in the order listed, handed to a command as one value."""

from __future__ import annotations

from dataclasses import dataclass

import click
from click.testing import CliRunner

from rankkit.cli import main
from rankkit.cli.options import DataOptions, JudgeOptions, data_options, grouped, judge_options, option_group


@dataclass(frozen=True)
class Pair:
    first: int
    second: str


pair_options = option_group(
    click.option("--second", default="b"),
    click.option("--first", type=int, default=1),
    grouped(Pair, "pair"),
)


@click.command()
@pair_options
@click.option("--own", default="x")
def toy(pair: Pair, own: str) -> None:
    click.echo(f"{pair!r} {own}")


def test_a_group_shows_its_options_in_the_order_listed_and_hands_them_over_as_one_value():
    help_text = CliRunner().invoke(toy, ["--help"]).output
    assert help_text.index("--second") < help_text.index("--first") < help_text.index("--own")
    result = CliRunner().invoke(toy, ["--first", "7", "--own", "y"])
    assert result.exit_code == 0, result.output
    assert result.output == "Pair(first=7, second='b') y\n"


def test_the_data_and_judge_groups_reach_a_command_as_their_values():
    seen = {}

    @click.command()
    @data_options
    @judge_options
    def probe(data: DataOptions, judge_options: JudgeOptions) -> None:
        seen.update(data=data, judge_options=judge_options)

    result = CliRunner().invoke(probe, ["--data", "t.jsonl", "--limit", "2", "--judge", "sim", "--no-cache", "-q"])
    assert result.exit_code == 0, result.output
    assert seen["data"] == DataOptions(data_path="t.jsonl", criterion=None, limit=2)
    assert seen["judge_options"] == JudgeOptions(judge_spec="sim", seed=0, cache_path=None, no_cache=True, quiet=True)


def test_leaderboard_and_leaderboard_add_take_the_same_shared_options():
    board = main.commands["leaderboard"]
    add = board.commands["add"]
    shared = [p.name for p in board.params if p.opts in [q.opts for q in add.params]]
    assert shared[:6] == ["max_prompt_chars", "max_candidate_chars", "limit", "criterion", "columns", "data_path"]
    assert {"judge_spec", "seed", "cache_path", "truth_path", "resamples", "top_k", "out", "control"} <= set(shared)
    # the only shared option whose help differs: add takes --data and --judge from the stored board
    differ = {p.name for p in board.params for q in add.params if p.opts == q.opts and p.help != q.help}
    assert differ == {"data_path", "judge_spec"}
