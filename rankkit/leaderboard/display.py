"""What ``rankkit leaderboard`` shows: table rows, summary lines and the correlation with the truth."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rankkit.leaderboard.board import CEILING_MARGIN, Leaderboard
from rankkit.leaderboard.style import self_preference_systems
from rankkit.leaderboard.truth import correlations


def leaderboard_rows(board: Leaderboard, truth: Mapping[str, float] | None = None) -> list[dict[str, Any]]:
    """Rows for :func:`rankkit.data.formatting.render`, best first: rank, system, rating, interval, matches.

    ``truth`` (system -> human score) adds a ``truth`` column; ``unadjusted`` is shown on a style-controlled board.
    """
    rows = []
    for row in board.systems:
        item = {
            "rank": row.rank,
            "name": row.name,
            "rating": row.rating,
            "ci_low": row.ci_low,
            "ci_high": row.ci_high,
            "matches": row.matches,
        }
        if board.control:
            item["unadjusted"] = row.unadjusted
        if truth is not None:
            item["truth"] = truth.get(row.name)
        rows.append(item)
    return rows


def report(
    board: Leaderboard, truth: tuple[str, dict[str, float]] | None
) -> tuple[list[dict[str, Any]], list[str], dict[str, Any] | None]:
    """Table rows, summary lines and the truth block (``source`` and correlations; None without ``truth``)."""
    rows = leaderboard_rows(board, truth[1] if truth else None)
    kind = "Bradley-Terry rating (Elo scale)" if board.scale == "elo" else f"win rate against {board.anchor}"
    if board.weighting and board.weighting.get("ties") == "davidson":
        kind = "Davidson rating (Bradley-Terry with ties, Elo scale)"
    if board.weighting and board.weighting.get("ties") == "ordinal":
        kind = "ordinal rating (every verdict's level, ties and strong verdicts read, Elo scale)"
    if board.weighting and (
        board.weighting.get("strong_weight", 1) != 1 or board.weighting.get("length_margin") is not None
    ):
        kind += f" · strong verdicts x{board.weighting['strong_weight']}" + (
            f", length margin {board.weighting['length_margin']}"
            if board.weighting.get("length_margin") is not None
            else ""
        )
    if board.control:
        kind = (
            f"style-controlled ({','.join(board.control)}) {kind}"
            if board.scale == "elo"
            else f"length-controlled {kind}"
        )
    lines = [
        f"{len(board.systems)} systems · {board.method} · {kind} · "
        f"judge_calls {board.cost.judge_calls} · comparisons {board.cost.comparisons}"
    ]
    if board.placement:
        where = board.placement
        lines.append(
            f"added {where['system']} by {where['method']}: rank {where['position'] + 1}"
            f"{' (tie)' if where.get('tie') else ''} after {where['matches']} matches "
            f"({where['judge_calls']} new judge calls)"
        )
        if where.get("rating_note"):
            lines.append(f"{where['system']}: {where['rating_note']}")
    lines += style_lines(board)
    block = None
    if truth is not None:
        block = {"source": truth[0], **correlations(board, truth[1])}
        lines.append(
            f"against {truth[0]} ({block['systems']} systems): "
            f"Spearman {block['spearman']:.3f} · Kendall {block['kendall']:.3f}"
        )
    return rows, lines, block


def style_lines(board: Leaderboard) -> list[str]:
    """Summary lines on style: control coefficients, an anchor at the ceiling, self-preferred systems (may be empty)."""
    lines = []
    if board.style:
        parts = []
        for name, value in board.style["coefficients"].items():
            text = "-" if value["estimate"] is None else f"{value['estimate']:+.3f}"
            if value["ci_low"] is not None and value["ci_high"] is not None:
                text += f" [{value['ci_low']:+.3f}, {value['ci_high']:+.3f}]"
            parts.append(f"{name} {text}")
        lines.append(
            f"style coefficients ({board.style['unit']}): "
            + " · ".join(parts)
            + "; the 'unadjusted' column is the rating without the control"
        )
    ceiling = board.anchor_ceiling
    if ceiling is not None and ceiling.saturated:
        lines.append(
            f"anchor at the ceiling: {len(ceiling.at_ceiling)} of {len(board.systems) - 1} systems win or lose "
            f"at least {1 - CEILING_MARGIN:.0%} of their matches against {ceiling.anchor}, where the matches tell "
            f"little apart (the length-controlled win rate cannot either); an anchor of median answer length "
            f"spreads them: --anchor {ceiling.suggestion}"
        )
    flagged = self_preference_systems(board.judge, board.names)
    if flagged:
        lines.append(
            f"self-preference: {', '.join(flagged)} look(s) like the judge's own model (a name match); "
            f"judges tend to favour their own answers, so read their ratings with care"
        )
    return lines
