"""What ``rankkit leaderboard`` shows: table rows, summary lines and the correlation with the truth."""

from __future__ import annotations

from typing import Any, Mapping

from rankkit.leaderboard.board import Leaderboard
from rankkit.leaderboard.truth import correlations


def leaderboard_rows(board: Leaderboard, truth: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """Rows for :func:`rankkit.formatting.render`: rank, system, rating, interval, matches (and truth)."""
    rows = []
    for row in board.systems:
        item = {"rank": row.rank, "name": row.name, "rating": row.rating, "ci_low": row.ci_low,
                "ci_high": row.ci_high, "matches": row.matches}
        if truth is not None:
            item["truth"] = truth.get(row.name)
        rows.append(item)
    return rows


def report(board: Leaderboard, truth: tuple[str, dict[str, float]] | None
           ) -> tuple[list[dict[str, Any]], list[str], dict[str, Any] | None]:
    """Table rows, summary lines and the truth block (also stored in the JSON) for a leaderboard."""
    rows = leaderboard_rows(board, truth[1] if truth else None)
    kind = "Bradley-Terry rating (Elo scale)" if board.scale == "elo" else f"win rate against {board.anchor}"
    lines = [f"{len(board.systems)} systems · {board.method} · {kind} · "
             f"judge_calls {board.cost.judge_calls} · comparisons {board.cost.comparisons}"]
    if board.placement:
        where = board.placement
        lines.append(f"added {where['system']} by {where['method']}: rank {where['position'] + 1}"
                     f"{' (tie)' if where.get('tie') else ''} after {where['matches']} matches "
                     f"({where['judge_calls']} new judge calls)")
        if where.get("rating_note"):
            lines.append(f"{where['system']}: {where['rating_note']}")
    block = None
    if truth is not None:
        block = {"source": truth[0], **correlations(board, truth[1])}
        lines.append(f"against {truth[0]} ({block['systems']} systems): "
                     f"Spearman {block['spearman']:.3f} · Kendall {block['kendall']:.3f}")
    return rows, lines, block
