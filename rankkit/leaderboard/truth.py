"""System-level truth: where it comes from (a truth file, else human scores) and a leaderboard's correlation with it."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from pathlib import Path

from rankkit.data.tasks import Task
from rankkit.leaderboard.board import Leaderboard, LeaderboardError


def human_system_scores(tasks: Sequence[Task]) -> dict[str, float]:
    """The mean human score of each system's candidates (systems without human scores left out)."""
    totals: dict[str, list[float]] = {}
    for task in tasks:
        human = task.human_scores()
        for cand in task.candidates:
            if cand.id in human and cand.system is not None:
                totals.setdefault(cand.system, []).append(human[cand.id])
    return {name: sum(values) / len(values) for name, values in totals.items()}


def load_truth(path: str | Path, field_name: str | None = None) -> dict[str, float]:
    """Read a system-level ground truth: JSONL with ``system`` and a numeric score per line.

    ``field_name`` defaults to ``rating`` if present, else the first numeric key in file order
    (``arena_elo_hard_en`` for Arena-Hard's ``systems.jsonl``). Lines without a numeric score are skipped.

    Raises
    ------
    LeaderboardError
        For a line without ``system``, or a file with no numeric score.
    """
    import json

    truth: dict[str, float] = {}
    with Path(path).open(encoding="utf-8") as handle:
        for number, text in enumerate(handle, start=1):
            if not text.strip():
                continue
            row = json.loads(text)
            if "system" not in row:
                raise LeaderboardError(f"{path}:{number}: no 'system' field")
            key = field_name
            if key is None:
                numeric = [k for k, v in row.items() if isinstance(v, (int, float)) and not isinstance(v, bool)]
                key = "rating" if "rating" in numeric else (numeric[0] if numeric else None)
            value = row.get(key) if key else None
            if isinstance(value, (int, float)) and not isinstance(value, bool):
                truth[str(row["system"])] = float(value)
    if not truth:
        raise LeaderboardError(f"{path}: no system with a numeric score")
    return truth


def find_truth_file(data_path: str | Path) -> Path | None:
    """``systems.jsonl`` beside the data file, or None."""
    candidate = Path(data_path).parent / "systems.jsonl"
    return candidate if candidate.exists() else None


def correlations(board: Leaderboard, truth: Mapping[str, float]) -> dict[str, float]:
    """Spearman and Kendall (tau-b) between the leaderboard and a truth over the systems both know, and ``systems``.

    Ratings are used when every such system has one, else ranks.
    """
    from rankkit.stats.metrics import correlation

    shared = [row for row in board.systems if row.name in truth]
    use_ratings = all(row.rating is not None and math.isfinite(row.rating) for row in shared)
    ours = [row.rating if use_ratings else -row.rank for row in shared]
    theirs = [truth[row.name] for row in shared]
    return {
        "spearman": correlation("spearman", ours, theirs),
        "kendall": correlation("kendall", ours, theirs),
        "systems": len(shared),
    }


def resolve_truth(
    tasks: Sequence[Task], data_path: str | Path | None = None, truth_path: str | Path | None = None
) -> tuple[str, dict[str, float]] | None:
    """``(source, system -> score)``: ``truth_path``, else ``systems.jsonl`` beside ``data_path``, else human scores.

    None with fewer than two systems with human scores.
    """
    if truth_path is not None:
        return str(truth_path), load_truth(truth_path)
    found = find_truth_file(data_path) if data_path is not None else None
    if found is not None:
        return str(found), load_truth(found)
    human = human_system_scores(tasks)
    return ("mean human score per system", human) if len(human) > 1 else None
