"""How fragile a leaderboard is: the fewest battles whose flip, or removal, changes its #1 or top k.

The ratings are refitted from the board's battles as it was built; the search is
:func:`rankkit.runs.analysis.robustness.ranking_robustness` (``docs/robustness.md``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rankkit.leaderboard.board import Leaderboard
from rankkit.leaderboard.rating import finite_or_lowest
from rankkit.runs.analysis.robustness import (
    CHANGES,
    DEFAULT_BUDGET,
    DEFAULT_TOP_K,
    RecomputedRanking,
    ranking_robustness,
)
from rankkit.stats.ratings import Outcome, bradley_terry, win_rates

#: The regularisation the leaderboards fit Bradley–Terry with (:func:`rankkit.leaderboard.arena`).
BOARD_ALPHA = 0.01


def board_order(board: Leaderboard, battles: Sequence[Outcome]) -> list[str]:
    """The board's systems refitted from ``battles`` as the board was rated, best first (equal ratings by name)."""
    names = board.names
    if board.scale == "win_rate":
        others = [name for name in names if name != board.anchor]
        ratings = win_rates(battles, others)
        ratings[board.anchor] = 0.5
    else:
        ratings = bradley_terry(battles, names, alpha=BOARD_ALPHA)
    return sorted(names, key=lambda name: (-finite_or_lowest(ratings.get(name)), name))


def leaderboard_robustness(board: Leaderboard, k: int = DEFAULT_TOP_K, budget: int = DEFAULT_BUDGET) -> dict[str, Any]:
    """The fewest battles whose flip (winner reversed) or removal changes the board's #1 and top k.

    Returns ``defined`` and the :func:`~rankkit.runs.analysis.robustness.ranking_robustness` figures
    (``judgments`` being battles), or ``reason``; ``note`` explains battles of an aggregated board.
    """
    battles = list(board.matches)
    if board.placement is not None:
        return {
            "defined": False,
            "reason": "a system placed by binary search has no rating to refit",
            "judgments": len(battles),
        }
    if not battles:
        return {"defined": False, "reason": "no battles", "judgments": 0}
    order = board_order(board, battles)
    if order != board.names:
        return {
            "defined": False,
            "reason": "refitting the battles does not reproduce the board",
            "judgments": len(battles),
        }

    def recompute(flips: frozenset[int], removals: frozenset[int]) -> RecomputedRanking:
        changed = [
            (a, b, 1.0 - outcome if i in flips else outcome)
            for i, (a, b, outcome) in enumerate(battles)
            if i not in removals
        ]
        refit = board_order(board, changed)
        return refit[0], tuple(refit)

    figures = ranking_robustness(battles, recompute, (order[0], order), used=len(battles), k=k, budget=budget)
    note = None
    if board.method not in ("arena", "anchored"):
        note = (
            f"the battles are the order {board.method}'s per-task scores put each two systems in, not single judgments"
        )
    return {"defined": True, **figures, "note": note}


def robustness_lines(figures: dict[str, Any]) -> list[str]:
    """What ``rankkit leaderboard`` prints about its robustness: one line, two with a note."""
    if not figures["defined"]:
        return [f"robustness: not defined ({figures['reason']})"]
    used, k = figures["judgments"], figures["k"]
    parts = []
    for target, name in (("top1", "#1"), ("top_k", f"top {k}")):
        if figures[target] is not None:
            flip, remove = (figures[target][change].text() for change in CHANGES)
            parts.append(f"{name} changes with {flip} flipped / {remove} removed")
    line = f"robustness over {used} battles: " + "; ".join(parts)
    if figures["fragile"]:
        line += f" · FRAGILE ({', '.join(figures['fragile'])}: at most 1% of the battles)"
    return [line] + ([f"  ({figures['note']})"] if figures.get("note") else [])
