"""Leaderboard robustness: exact against a brute-force oracle over the battles, and where it is not defined."""

from __future__ import annotations

import random
from itertools import combinations

import pytest

from rankkit.leaderboard import Leaderboard, rate_bt, rate_win_rate
from rankkit.leaderboard.robustness import leaderboard_robustness, robustness_lines
from rankkit.stats.ratings import bradley_terry, win_rates


def random_board(seed: int, systems: int, battles: int, anchored: bool = False) -> Leaderboard:
    rng = random.Random(seed)
    names = [f"s{i}" for i in range(systems)]
    strength = {name: rng.gauss(0, 1) for name in names}
    outcomes = []
    for _ in range(battles):
        a, b = rng.sample(names, 2) if not anchored else (rng.choice(names[1:]), names[0])
        p = 1 / (1 + 2.718 ** (strength[b] - strength[a]))
        outcomes.append((a, b, rng.choice([1.0, 0.0, 0.5]) if rng.random() < 0.1 else float(rng.random() < p)))
    if anchored:
        return Leaderboard(
            method="anchored",
            systems=rate_win_rate(outcomes, names, names[0], 0, seed),
            matches=outcomes,
            scale="win_rate",
            anchor=names[0],
        )
    return Leaderboard(method="arena", systems=rate_bt(outcomes, names, 0, seed), matches=outcomes)


def brute_force(board: Leaderboard, target: str, change: str, k: int) -> int | None:
    names, battles = board.names, board.matches

    def order(sample):
        if board.scale == "win_rate":
            ratings = win_rates(sample, [n for n in names if n != board.anchor])
            ratings[board.anchor] = 0.5
            ratings = {n: (-1.0 if ratings[n] != ratings[n] else ratings[n]) for n in names}  # NaN last
        else:
            ratings = bradley_terry(sample, names, alpha=0.01)
        return sorted(names, key=lambda n: (-ratings[n], n))

    base = order(battles)
    pool = [i for i, (_, _, o) in enumerate(battles) if change == "remove" or o != 0.5]
    for size in range(1, len(pool) + 1):
        for subset in combinations(pool, size):
            if change == "flip":
                sample = [(a, b, 1.0 - o if i in subset else o) for i, (a, b, o) in enumerate(battles)]
            else:
                sample = [item for i, item in enumerate(battles) if i not in subset]
            got = order(sample)
            if (got[0] != base[0]) if target == "top1" else set(got[:k]) != set(base[:k]):
                return size
    return None


@pytest.mark.parametrize("seed", range(8))
def test_the_board_figure_equals_brute_force(seed):
    board = random_board(seed, systems=4 + seed % 2, battles=9 + seed % 4, anchored=seed % 4 == 3)
    figures = leaderboard_robustness(board, k=2, budget=10**6)
    assert figures["defined"], figures
    for target in ("top1", "top_k"):
        for change in ("flip", "remove"):
            found = figures[target][change]
            assert found.exact
            assert found.count == brute_force(board, target, change, 2), (seed, target, change)


def test_a_large_board_gets_an_upper_bound_and_the_fragile_flag():
    board = random_board(3, systems=6, battles=400)
    dominant = [(a, b, 1.0 if a == "s0" else 0.0 if b == "s0" else o) for a, b, o in board.matches]
    board = Leaderboard(method="arena", systems=rate_bt(dominant, board.names, 0, 0), matches=dominant)
    figures = leaderboard_robustness(board, k=3, budget=500)
    top1 = figures["top1"]["flip"]
    assert board.names[0] == "s0" and top1.count > 4  # s0 won every battle it played
    assert (top1.exact, top1.at_least, top1.text()) == (False, 2, f"≤ {top1.count}")  # pairs past the budget
    assert figures["judgments"] == 400
    line = robustness_lines(figures)[0]
    assert line.startswith("robustness over 400 battles: #1 changes with ")
    assert ("FRAGILE" in line) == bool(figures["fragile"])
    assert all(figures[t][c].count <= 4 for t, c in (f.split() for f in figures["fragile"]))  # 1% of 400


def test_a_placed_system_is_not_defined():
    board = random_board(1, 4, 10)
    board.placement = {"system": "s3", "method": "binary"}
    figures = leaderboard_robustness(board)
    assert not figures["defined"] and "binary search" in figures["reason"]
    assert robustness_lines(figures) == [f"robustness: not defined ({figures['reason']})"]


def test_rankkit_leaderboard_prints_and_writes_its_robustness(tmp_path):
    import json

    from click.testing import CliRunner

    from rankkit.cli import main
    from rankkit.data.samples import sample_path

    args = [
        "leaderboard",
        "--data",
        str(sample_path("leaderboard")),
        "--judge",
        "sim:preset=gpt4",
        "--no-cache",
        "--quiet",
        "--bootstrap",
        "0",
    ]
    out = tmp_path / "board.json"
    ran = CliRunner().invoke(main, [*args, "--top-k", "2", "--out", str(out)])
    assert ran.exit_code == 0, ran.output
    written = json.loads(out.read_text())
    figures = written["robustness"]
    assert figures["defined"] and figures["judgments"] == len(written["matches"]) and figures["k"] == 2
    flips = figures["top1"]["flip"]["text"]
    assert f"robustness over {len(written['matches'])} battles: #1 changes with {flips} flipped" in ran.output
    quiet = CliRunner().invoke(main, [*args, "--robustness-budget", "0", "--out", str(out)])
    assert "robustness" not in quiet.output and "robustness" not in json.loads(out.read_text())
